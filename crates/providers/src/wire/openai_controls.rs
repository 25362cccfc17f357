//! The two fields both OpenAI protocols (Chat Completions and Responses) end their request
//! body with, filled the same way from the request.

use serde::Serialize;

use crate::wire::adapter::ModelRequest;

/// `tool_choice` and `prompt_cache_key`, flattened into each OpenAI body.
#[derive(Debug, Serialize)]
pub(crate) struct OpenAiControls<'a> {
    /// `"none"` for the forced structured answer (see `wire::structured`).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    /// The session's key, so OpenAI routes its requests to the same prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

impl<'a> OpenAiControls<'a> {
    /// The controls of `request`: `tool_choice: "none"` only when the answer is forced and
    /// tools are offered.
    pub(crate) fn of(request: &'a ModelRequest) -> Self {
        Self {
            tool_choice: request
                .output
                .as_ref()
                .filter(|o| o.force && !request.tools.is_empty())
                .map(|_| "none"),
            prompt_cache_key: request.cache.key.as_deref(),
        }
    }
}
