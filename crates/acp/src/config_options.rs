//! A session's configuration options (`configOptions`, the pickers editors show) and
//! `session/set_config_option`: the model, the approval mode and the reasoning level.
//!
//! | id | category | values |
//! |---|---|---|
//! | `model` | `model` | the session's model, then the models of the providers whose key is set and the configured ones (`Conversation::model_choices`) |
//! | `mode` | `mode` | `read-only`, `ask`, `auto-edit`, `full` (the same as `session/set_mode`) |
//! | `reasoning` | `thought_level` | `off`, `low`, `medium`, `high` (and a configured token budget, shown as such) |
//!
//! The answer to a change, and `config_option_update`, always carry the whole list.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
};
use pith_agent::ReasoningEffort;
use pith_tools::PermissionMode;

/// The model option's id.
pub const MODEL: &str = "model";
/// The approval mode option's id.
pub const MODE: &str = "mode";
/// The reasoning option's id.
pub const REASONING: &str = "reasoning";

/// What the options show: the values in force and the models one may pick.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    /// The session's model (`provider/model`).
    pub model: String,
    /// The models offered (the current one first).
    pub models: Vec<String>,
    /// The approval mode.
    pub mode: PermissionMode,
    /// The reasoning setting (`None`: the provider's default, which is none).
    pub reasoning: Option<ReasoningEffort>,
}

/// One change an editor asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Switch the model (`provider/model`).
    Model(String),
    /// Another approval mode.
    Mode(PermissionMode),
    /// Another reasoning level.
    Reasoning(ReasoningEffort),
}

impl Current {
    /// The options, in the order editors show them.
    pub fn options(&self) -> Vec<SessionConfigOption> {
        let models = self
            .models
            .iter()
            .map(|spec| SessionConfigSelectOption::new(spec.clone(), spec.clone()))
            .collect::<Vec<_>>();
        let modes = PermissionMode::ALL
            .into_iter()
            .map(|mode| {
                let (name, description) = crate::modes::describe(mode);
                SessionConfigSelectOption::new(mode.as_str(), name).description(description)
            })
            .collect::<Vec<_>>();
        let mut levels: Vec<SessionConfigSelectOption> = ["off", "low", "medium", "high"]
            .into_iter()
            .map(|level| SessionConfigSelectOption::new(level, capitalised(level)))
            .collect();
        let current_level = match self.reasoning {
            None | Some(ReasoningEffort::Off) => "off".to_owned(),
            Some(ReasoningEffort::Low) => "low".to_owned(),
            Some(ReasoningEffort::Medium) => "medium".to_owned(),
            Some(ReasoningEffort::High) => "high".to_owned(),
            Some(ReasoningEffort::Budget(tokens)) => {
                levels.push(SessionConfigSelectOption::new(
                    tokens.to_string(),
                    format!("{tokens} thinking tokens"),
                ));
                tokens.to_string()
            }
        };
        vec![
            SessionConfigOption::select(MODEL, "Model", self.model.clone(), models)
                .category(SessionConfigOptionCategory::Model)
                .description("The model the session's requests go to".to_owned()),
            SessionConfigOption::select(MODE, "Approval", self.mode.as_str(), modes)
                .category(SessionConfigOptionCategory::Mode)
                .description("What runs without asking".to_owned()),
            SessionConfigOption::select(REASONING, "Reasoning", current_level, levels)
                .category(SessionConfigOptionCategory::ThoughtLevel)
                .description(
                    "How much the model reasons before answering (a thinking budget, or OpenAI's effort)"
                        .to_owned(),
                ),
        ]
    }

    /// The change `value` of option `id` asks for; an unknown option or value is a
    /// `-32602` naming the field.
    pub fn change(&self, id: &str, value: &str) -> Result<Change, agent_client_protocol::Error> {
        let invalid =
            |message: String| agent_client_protocol::Error::invalid_params().data(message);
        match id {
            MODEL => {
                if self.models.iter().any(|m| m == value) {
                    Ok(Change::Model(value.to_owned()))
                } else {
                    Err(invalid(format!(
                        "value: `{value}` is not one of the models offered for `model`"
                    )))
                }
            }
            MODE => value
                .parse::<PermissionMode>()
                .map(Change::Mode)
                .map_err(|_| {
                    invalid(format!(
                        "value: `{value}` is not a mode (read-only, ask, auto-edit or full)"
                    ))
                }),
            REASONING => ReasoningEffort::parse(value)
                .map(Change::Reasoning)
                .map_err(|error| invalid(format!("value: {error}"))),
            other => Err(invalid(format!(
                "configId: `{other}` is not an option of this session (model, mode, reasoning)"
            ))),
        }
    }

    /// `self` with `change` applied (what the options show next).
    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::Model(spec) => {
                self.model = spec.clone();
                if let Some(at) = self.models.iter().position(|m| m == spec) {
                    let spec = self.models.remove(at);
                    self.models.insert(0, spec);
                }
            }
            Change::Mode(mode) => self.mode = *mode,
            Change::Reasoning(level) => self.reasoning = Some(*level),
        }
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn current() -> Current {
        Current {
            model: "anthropic/claude-sonnet-4-5".into(),
            models: vec![
                "anthropic/claude-sonnet-4-5".into(),
                "anthropic/claude-haiku-4-5".into(),
            ],
            mode: PermissionMode::Ask,
            reasoning: None,
        }
    }

    #[test]
    fn the_options_are_model_mode_and_thought_level_with_their_current_values() {
        let options: Value = serde_json::to_value(current().options()).unwrap();
        assert_eq!(options[0]["id"], json!("model"));
        assert_eq!(options[0]["category"], json!("model"));
        assert_eq!(options[0]["type"], json!("select"));
        assert_eq!(
            options[0]["currentValue"],
            json!("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(options[0]["options"].as_array().unwrap().len(), 2);
        assert_eq!(options[1]["category"], json!("mode"));
        assert_eq!(options[1]["currentValue"], json!("ask"));
        assert_eq!(options[1]["options"].as_array().unwrap().len(), 4);
        assert_eq!(options[2]["category"], json!("thought_level"));
        assert_eq!(options[2]["currentValue"], json!("off"));
    }

    #[test]
    fn changes_are_checked_against_what_is_offered() {
        let mut current = current();
        let change = current.change(MODEL, "anthropic/claude-haiku-4-5").unwrap();
        current.apply(&change);
        assert_eq!(current.model, "anthropic/claude-haiku-4-5");
        assert_eq!(current.models[0], "anthropic/claude-haiku-4-5");
        assert_eq!(
            current.change(MODE, "full").unwrap(),
            Change::Mode(PermissionMode::Full)
        );
        assert_eq!(
            current.change(REASONING, "high").unwrap(),
            Change::Reasoning(ReasoningEffort::High)
        );
        for (id, value) in [
            (MODEL, "openai/unknown"),
            (MODE, "yolo"),
            (REASONING, "lots"),
            ("theme", "dark"),
        ] {
            let error = current.change(id, value).unwrap_err();
            assert_eq!(
                error.code,
                agent_client_protocol::ErrorCode::INVALID_PARAMS,
                "{id}"
            );
        }
    }

    #[test]
    fn a_configured_budget_is_shown_as_its_own_level() {
        let budgeted = Current {
            reasoning: Some(ReasoningEffort::Budget(8_000)),
            ..current()
        };
        let options: Value = serde_json::to_value(budgeted.options()).unwrap();
        assert_eq!(options[2]["currentValue"], json!("8000"));
        assert_eq!(options[2]["options"].as_array().unwrap().len(), 5);
    }
}
