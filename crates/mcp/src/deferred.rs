//! Deferred definitions: when the MCP tools' schemas would cost more than their budget,
//! the model gets one built-in tool, [`LOAD_TOOL`], whose description is a one-line
//! catalog (name and first sentence of each MCP tool), and the tools themselves are
//! deferred in the registry (`pith_core::ToolRegistry::defer`). The model loads the ones
//! it needs; they join the end of the tool list for the rest of the session.
//!
//! The catalog is fixed when the tools are installed, so the load tool's definition never
//! changes and the cached prefix of the tool block survives every load.

use async_trait::async_trait;
use pith_core::{LoadOutcome, Message, Tool, ToolContext, ToolError, ToolLoader, ToolOutput};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::tool::{shorten, ToolSpec};

/// The loader tool's name.
pub const LOAD_TOOL: &str = "load_mcp_tools";

/// Longest catalog line summary, in characters.
const SUMMARY_CHARS: usize = 120;

/// The first sentence of `description`, at most [`SUMMARY_CHARS`] characters.
pub fn first_sentence(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or("").trim();
    let end = line
        .char_indices()
        .find(|(i, c)| {
            matches!(c, '.' | '!' | '?')
                && line[i + c.len_utf8()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        })
        .map_or(line.len(), |(i, c)| i + c.len_utf8());
    shorten(&line[..end], SUMMARY_CHARS)
}

/// The built-in tool that loads deferred MCP tools.
pub struct LoadTool {
    description: String,
    loader: ToolLoader,
}

impl std::fmt::Debug for LoadTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadTool").finish_non_exhaustive()
    }
}

impl LoadTool {
    /// A loader for `catalog` (the deferred tools, in advertisement order) that loads
    /// through `loader`.
    pub fn new(catalog: &[ToolSpec], loader: ToolLoader) -> Self {
        let mut description = String::from(
            "Load MCP tools before calling them. To save context, these tools are listed \
             here by name only; pass the names you need and their full definitions join \
             your tool list for the rest of the session.\n\nAvailable MCP tools:",
        );
        for spec in catalog {
            let summary = first_sentence(&spec.description);
            description.push_str(&format!("\n- {}", spec.name));
            if !summary.is_empty() {
                description.push_str(&format!(": {summary}"));
            }
        }
        Self {
            description,
            loader,
        }
    }
}

#[derive(Deserialize)]
struct LoadArgs {
    names: Vec<String>,
}

#[async_trait]
impl Tool for LoadTool {
    fn name(&self) -> &str {
        LOAD_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Names of MCP tools to load, as listed (mcp__SERVER__TOOL)."
                }
            },
            "required": ["names"]
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, arguments: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: LoadArgs = serde_json::from_value(arguments)
            .map_err(|e| ToolError::InvalidArguments(format!("{e}; pass {{\"names\": [...]}}")))?;
        if args.names.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`names` is empty; pass the MCP tools to load".into(),
            ));
        }
        let (mut loaded, mut already, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
        for name in &args.names {
            match self.loader.load(name) {
                LoadOutcome::Loaded => loaded.push(name.as_str()),
                LoadOutcome::AlreadyAdvertised => already.push(name.as_str()),
                LoadOutcome::Unknown => unknown.push(name.as_str()),
            }
        }
        let mut lines = Vec::new();
        if !loaded.is_empty() {
            lines.push(format!(
                "Loaded {}; call them like any other tool.",
                loaded.join(", ")
            ));
        }
        if !already.is_empty() {
            lines.push(format!("Already available: {}.", already.join(", ")));
        }
        if !unknown.is_empty() {
            lines.push(format!(
                "Unknown: {} (use the names listed in this tool's description).",
                unknown.join(", ")
            ));
        }
        let text = lines.join("\n");
        if loaded.is_empty() && already.is_empty() {
            Ok(ToolOutput::error(text))
        } else {
            Ok(ToolOutput::ok(text))
        }
    }
}

/// Loads again, in their original order, the deferred tools a resumed (or re-modelled)
/// conversation had loaded: those named in calls of [`LOAD_TOOL`] and those called
/// directly. Returns how many were loaded.
pub fn reload_from_history(loader: &ToolLoader, history: &[Message]) -> usize {
    let mut count = 0;
    for call in history.iter().flat_map(Message::tool_calls) {
        let names: Vec<String> = if call.name == LOAD_TOOL {
            serde_json::from_value::<LoadArgs>(call.arguments.clone())
                .map(|a| a.names)
                .unwrap_or_default()
        } else {
            vec![call.name.clone()]
        };
        for name in names {
            if loader.load(&name) == LoadOutcome::Loaded {
                count += 1;
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences_stop_at_the_first_full_stop_or_line() {
        assert_eq!(
            first_sentence("Get current time in a specific timezone. Uses IANA names."),
            "Get current time in a specific timezone."
        );
        assert_eq!(
            first_sentence("Echoes back the input\nmore"),
            "Echoes back the input"
        );
        assert_eq!(
            first_sentence("Version 1.2 is here. Yes"),
            "Version 1.2 is here."
        );
        assert_eq!(first_sentence(""), "");
        assert!(first_sentence(&"word ".repeat(100)).chars().count() <= SUMMARY_CHARS + 1);
    }
}
