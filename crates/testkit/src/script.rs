//! The script: which protocol the server speaks and what each incoming request is answered
//! with. Owns the JSON format (serde), the Rust builders, validation, and the deterministic
//! tool-call ids, so the binary and in-process tests read one definition. The protocol is
//! in `protocol`, one turn in `turn`.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::TestkitError;
use crate::protocol::Protocol;
use crate::turn::{is_false, Turn};

/// How the server reports usage for a turn whose script gives none, so one script can
/// stand in for servers that report usage honestly, wrongly, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum UsageMode {
    /// The request's tokens as pith's tokenizer counts the wire body
    /// ([`crate::request_tokens`]) and about one output token per four characters of
    /// output: an honest server (the default).
    #[default]
    Honest,
    /// [`Usage::DEFAULT_INPUT_TOKENS`] input tokens whatever the request holds, and about
    /// one output token per four characters of output.
    Fixed,
    /// Every request is reported as this many input tokens, whatever it holds: a server
    /// (or proxy) that over- or under-reports.
    Constant(u64),
    /// The request's tokens as pith's tokenizer counts the wire body
    /// ([`crate::request_tokens`]), scaled by `1 + bias_percent / 100`: an honest server
    /// whose tokenizer counts differently (Claude's counts 10–30% more than o200k).
    Counted {
        /// Percent added to (or, negative, taken from) the count.
        bias_percent: i32,
    },
    /// No usage at all in the answer, as some OpenAI-compatible servers do.
    None,
    /// The request billed by the provider's prompt cache ([`crate::cache`]), as the real
    /// provider reports it: the request's tokens counted as [`UsageMode::Honest`] counts
    /// them, split into the part read from the cache, the part written to it (Anthropic,
    /// Bedrock) and the rest; one cache per model (and, for OpenAI, per
    /// `prompt_cache_key`), aged by the server's clock ([`crate::Turn::after_pause_s`]).
    /// Each request's bill is on [`crate::RecordedRequest::cache`].
    Cached,
}

/// A rule that answers every request whose last message contains a string with the same
/// turn, without using a scripted turn: how a script answers requests whose place in the
/// sequence is not known in advance, such as a client's compaction (summary) requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Responder {
    /// Matched against the request's last message (Chat / Anthropic / Bedrock
    /// `messages`, Responses `input`, Gemini `contents`), as its JSON text.
    pub when_last_message_contains: String,
    /// The answer. Its tool calls get ids `{prefix}rN` (N counts the calls every
    /// responder answered, from 1) unless they set their own.
    pub turn: Turn,
    /// Answers at most this many requests (unset: every matching one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

/// A whole script: the protocol and the turns answering requests 1, 2, 3… in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The wire protocol spoken.
    pub protocol: Protocol,
    /// One turn per incoming request, in order.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Rules checked before the next scripted turn is used, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responders: Vec<Responder>,
    /// How usage is reported for turns that script none.
    #[serde(default, skip_serializing_if = "is_honest")]
    pub usage_mode: UsageMode,
    /// Chat Completions: the one output-cap field the server accepts
    /// (`max_tokens` or `max_completion_tokens`). A request with the other one is
    /// rejected the way OpenAI rejects `max_tokens` for its reasoning models, and the cap
    /// is honoured (the answer is cut, `finish_reason: "length"`). Unset: both accepted,
    /// neither honoured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<String>,
    /// Gemini: `functionCall` parts carry no `id`, as the public Gemini API sends them
    /// (the client pairs calls and responses by order). Default: ids are sent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub omit_call_ids: bool,
}

impl Script {
    /// A script for `protocol` with `turns`.
    pub fn new(protocol: Protocol, turns: impl IntoIterator<Item = Turn>) -> Script {
        Script {
            protocol,
            turns: turns.into_iter().collect(),
            responders: Vec::new(),
            usage_mode: UsageMode::Honest,
            max_tokens_field: None,
            omit_call_ids: false,
        }
    }

    /// Answers every request whose last message contains `marker` with `turn` (see
    /// [`Responder`]).
    pub fn responding(mut self, marker: impl Into<String>, turn: Turn) -> Script {
        self.responders.push(Responder {
            when_last_message_contains: marker.into(),
            turn,
            times: None,
        });
        self
    }

    /// Answers the first `times` requests whose last message contains `marker` with
    /// `turn` (see [`Responder`]).
    pub fn responding_times(mut self, marker: impl Into<String>, turn: Turn, times: u32) -> Script {
        self.responders.push(Responder {
            when_last_message_contains: marker.into(),
            turn,
            times: Some(times),
        });
        self
    }

    /// Reports usage this way for turns that script none (see [`UsageMode`]).
    pub fn with_usage_mode(mut self, mode: UsageMode) -> Script {
        self.usage_mode = mode;
        self
    }

    /// Reports usage as the provider's prompt cache bills each request
    /// ([`UsageMode::Cached`]).
    pub fn with_prompt_cache(self) -> Script {
        self.with_usage_mode(UsageMode::Cached)
    }

    /// True when answering needs the whole request body: a responder matches on it, or
    /// the usage is counted from it.
    pub(crate) fn reads_bodies(&self) -> bool {
        !self.responders.is_empty()
            || matches!(
                self.usage_mode,
                UsageMode::Counted { .. } | UsageMode::Honest | UsageMode::Cached
            )
    }

    /// Gemini: send `functionCall` parts without their `id`.
    pub fn without_call_ids(mut self) -> Script {
        self.omit_call_ids = true;
        self
    }

    /// Chat Completions: accept and honour only `field` as the output cap.
    pub fn accepting_only(mut self, field: impl Into<String>) -> Script {
        self.max_tokens_field = Some(field.into());
        self
    }

    /// True when the server must read whole request bodies to check what the client
    /// sends back (reasoning to return, an output-cap field to enforce; for Gemini
    /// always: any thought signature sent must be one the server issued).
    pub fn checks_requests(&self) -> bool {
        self.max_tokens_field.is_some()
            || self.protocol == Protocol::Gemini
            || self
                .turns
                .iter()
                .any(|t| t.reasoning.is_some() || t.redacted_thinking)
    }

    /// An OpenAI Chat Completions script.
    pub fn openai_chat(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::OpenAiChat, turns)
    }

    /// An OpenAI Responses script.
    pub fn openai_responses(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::OpenAiResponses, turns)
    }

    /// An Anthropic Messages script.
    pub fn anthropic(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::Anthropic, turns)
    }

    /// A Google Gemini script.
    pub fn gemini(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::Gemini, turns)
    }

    /// An AWS Bedrock Converse script.
    pub fn bedrock(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::Bedrock, turns)
    }

    /// Appends a turn.
    pub fn then(mut self, turn: Turn) -> Script {
        self.turns.push(turn);
        self
    }

    /// Parses the JSON script format and validates it.
    pub fn from_json(json: &str) -> Result<Script, TestkitError> {
        let script: Script =
            serde_json::from_str(json).map_err(|source| TestkitError::ScriptSyntax {
                origin: "script".to_owned(),
                source,
            })?;
        script.validate()?;
        Ok(script)
    }

    /// Reads, parses and validates a script file.
    pub fn from_file(path: &Path) -> Result<Script, TestkitError> {
        let json = std::fs::read_to_string(path).map_err(|source| TestkitError::Io {
            action: format!("read script {}", path.display()),
            source,
        })?;
        let script: Script =
            serde_json::from_str(&json).map_err(|source| TestkitError::ScriptSyntax {
                origin: path.display().to_string(),
                source,
            })?;
        script.validate()?;
        Ok(script)
    }

    /// The script as pretty JSON (e.g. to write a file for the binary).
    pub fn to_json_pretty(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks what serde cannot: non-empty tool names and unique tool-call ids (explicit and
    /// generated together).
    pub fn validate(&self) -> Result<(), TestkitError> {
        if let Some(empty) = self
            .responders
            .iter()
            .position(|r| r.when_last_message_contains.is_empty())
        {
            return Err(TestkitError::InvalidScript(format!(
                "responder {} has an empty when_last_message_contains: it would answer every request",
                empty + 1
            )));
        }
        for (turn_index, turn) in self.turns.iter().enumerate() {
            if let Some(call) = turn.tool_calls.iter().find(|c| c.name.trim().is_empty()) {
                return Err(TestkitError::InvalidScript(format!(
                    "turn {} has a tool call with an empty name (arguments {})",
                    turn_index + 1,
                    call.arguments
                )));
            }
        }
        if let Some(field) = &self.max_tokens_field {
            if field != "max_tokens" && field != "max_completion_tokens" {
                return Err(TestkitError::InvalidScript(format!(
                    "max_tokens_field is {field:?}: use \"max_tokens\" or \"max_completion_tokens\""
                )));
            }
        }
        let mut first_turn_of: HashMap<String, usize> = HashMap::new();
        for (turn_index, ids) in self.tool_call_ids().into_iter().enumerate() {
            for id in ids {
                if let Some(first) = first_turn_of.insert(id.clone(), turn_index + 1) {
                    return Err(TestkitError::InvalidScript(format!(
                        "tool call id {id:?} is used twice (turns {first} and {}); ids must \
                         be unique across the script, and generated ids are {}K for the \
                         K-th tool call",
                        turn_index + 1,
                        self.protocol.tool_call_id_prefix()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The id every tool call is sent with, per turn: the explicit id, or the generated
    /// `call_K` / `toolu_K` where K is the call's 1-based position among all tool calls of
    /// the script.
    pub fn tool_call_ids(&self) -> Vec<Vec<String>> {
        let prefix = self.protocol.tool_call_id_prefix();
        let mut position = 0usize;
        self.turns
            .iter()
            .map(|turn| {
                turn.tool_calls
                    .iter()
                    .map(|call| {
                        position += 1;
                        call.id
                            .clone()
                            .unwrap_or_else(|| format!("{prefix}{position}"))
                    })
                    .collect()
            })
            .collect()
    }
}

fn is_honest(mode: &UsageMode) -> bool {
    *mode == UsageMode::Honest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::{Fault, ToolCall};
    use serde_json::json;

    #[test]
    fn issue_example_script_parses_with_every_field() {
        let script = Script::from_json(
            r###"{"protocol": "openai-chat",
                "turns": [
                  {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "src/lib.rs"}}],
                   "usage": {"input_tokens": 120000, "output_tokens": 40}},
                  {"text": "## Goal\n...", "chunk_delay_ms": 50},
                  {"fault": "http_429", "retry_after_s": 1},
                  {"text": "Done.", "reasoning": "think", "usage": {"input_tokens": 10, "output_tokens": 2, "cached_input_tokens": 8}}
                ]}"###,
        )
        .unwrap();
        let built = Script::openai_chat([
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "src/lib.rs"}))
                .with_usage(120_000, 40),
            Turn::text("## Goal\n...").with_chunk_delay_ms(50),
            Turn::fault(Fault::Http429).with_retry_after_s(1),
            Turn::text("Done.")
                .with_reasoning("think")
                .with_usage(10, 2)
                .with_cached_input(8),
        ]);
        assert_eq!(
            script, built,
            "JSON and builders must describe the same script"
        );
        let round_trip = Script::from_json(&built.to_json_pretty()).unwrap();
        assert_eq!(round_trip, built, "to_json_pretty must round-trip");
    }

    #[test]
    fn unknown_fields_and_faults_are_rejected_with_a_reason() {
        let typo = Script::from_json(r#"{"protocol":"anthropic","turns":[{"txt":"hi"}]}"#);
        assert!(
            typo.unwrap_err().to_string().contains("txt"),
            "a misspelt field must be named in the error"
        );
        let bad_fault =
            Script::from_json(r#"{"protocol":"anthropic","turns":[{"fault":"http_418"}]}"#);
        assert!(bad_fault.unwrap_err().to_string().contains("http_418"));
        let bad_protocol = Script::from_json(r#"{"protocol":"cohere","turns":[]}"#);
        assert!(bad_protocol.is_err());
    }

    #[test]
    fn generated_tool_call_ids_count_calls_across_the_whole_script() {
        let script = Script::anthropic([
            Turn::tool_call("read", json!({})).with_tool_call("grep", json!({})),
            Turn::text("no calls"),
            Turn::default()
                .with_call(ToolCall::new("edit", json!({})).with_id("mine"))
                .with_tool_call("bash", json!({})),
        ]);
        assert_eq!(
            script.tool_call_ids(),
            vec![
                vec!["toolu_1".to_owned(), "toolu_2".to_owned()],
                vec![],
                vec!["mine".to_owned(), "toolu_4".to_owned()],
            ]
        );
        assert!(script.validate().is_ok());
    }

    #[test]
    fn an_explicit_id_colliding_with_a_generated_one_is_an_error() {
        let script = Script::openai_chat([
            Turn::tool_call("read", json!({})),
            Turn::default().with_call(ToolCall::new("read", json!({})).with_id("call_1")),
        ]);
        let error = script.validate().unwrap_err().to_string();
        assert!(
            error.contains("call_1") && error.contains("twice"),
            "{error}"
        );
    }
}
