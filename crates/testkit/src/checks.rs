//! What the real APIs refuse in what a client sends back, checked on every request of a
//! script that needs it ([`crate::Script::checks_requests`]) and answered with the
//! provider's own 400 — no turn is used:
//!
//! - **Anthropic**, with `thinking` enabled: `temperature` other than 1, a budget under
//!   1024 or not below `max_tokens`; a `thinking` block whose text or signature is not
//!   what the testkit sent ("Invalid `signature` in `thinking` block"), a
//!   `redacted_thinking` block with other data; and a tool loop whose last assistant
//!   message (answering with tool results) does not start with its thinking block.
//! - **Responses**: a `reasoning` input item with an `id` (nothing is stored with `store:
//!   false`) or with encrypted content the testkit never issued; a `function_call` of a
//!   reasoning turn sent back without that turn's reasoning item before it (the real API
//!   takes it and reasons worse; the testkit refuses so that tests see it).
//! - **Gemini**: a `thoughtSignature` the testkit never issued ("Corrupted thought
//!   signature."); and, in the current turn (the contents after the last user content
//!   with text), a `functionCall` of a reasoning turn whose first call part does not
//!   carry that turn's signature, as Gemini 3 refuses it.
//! - **Chat Completions**, with the script's `max_tokens_field`: the other cap field, as
//!   OpenAI refuses `max_tokens` for its reasoning models; and a `tool` message whose
//!   content carries an image (only user messages may).

use serde_json::Value;

use crate::protocol::Protocol;
use crate::script::Script;
use crate::wire::{encrypted_content, redacted_data, thinking_signature, ErrorKind};

/// The provider's 400 for `body`, or `Ok` when the real API would take it.
pub(crate) fn check(
    script: &Script,
    tool_call_ids: &[Vec<String>],
    body: &Value,
) -> Result<(), ErrorKind> {
    match script.protocol {
        Protocol::Anthropic => anthropic(script, tool_call_ids, body),
        Protocol::OpenAiResponses => responses(script, tool_call_ids, body),
        Protocol::OpenAiChat => chat(script, body),
        Protocol::Gemini => gemini(script, tool_call_ids, body),
        Protocol::Bedrock => bedrock(script, body),
    }
}

/// Bedrock (Claude through Converse), with thinking on: `temperature` other than 1; a
/// `reasoningText` whose text or signature is not what the testkit sent, a
/// `redactedContent` with other data (Bedrock passes Anthropic's refusals on).
fn bedrock(script: &Script, body: &Value) -> Result<(), ErrorKind> {
    let thinking = body["additionalModelRequestFields"]["thinking"]["type"] == "enabled";
    if thinking
        && body["inferenceConfig"]["temperature"]
            .as_f64()
            .is_some_and(|t| t != 1.0)
    {
        return Err(invalid(
            "The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled.",
            None,
        ));
    }
    let empty = Vec::new();
    for (i, message) in body["messages"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .enumerate()
    {
        for (j, block) in message["content"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .enumerate()
        {
            let Some(reasoning) = block.get("reasoningContent") else {
                continue;
            };
            let genuine = script.turns.iter().enumerate().any(|(n, turn)| {
                match (
                    reasoning.get("reasoningText"),
                    reasoning.get("redactedContent"),
                ) {
                    (Some(text), _) => {
                        text["signature"] == thinking_signature(n + 1).as_str()
                            && turn.reasoning.as_deref() == text["text"].as_str()
                    }
                    (None, Some(data)) => {
                        turn.redacted_thinking && *data == redacted_data(n + 1).as_str()
                    }
                    (None, None) => false,
                }
            });
            if !genuine {
                return Err(invalid(
                    format!(
                        "The model returned the following errors: messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                    ),
                    None,
                ));
            }
        }
    }
    Ok(())
}

fn invalid(message: impl Into<String>, param: Option<&str>) -> ErrorKind {
    ErrorKind::InvalidRequest {
        message: message.into(),
        param: param.map(str::to_owned),
    }
}

/// The 1-based number of the turn that made tool call `id`.
fn turn_of_call(tool_call_ids: &[Vec<String>], id: &str) -> Option<usize> {
    tool_call_ids
        .iter()
        .position(|ids| ids.iter().any(|i| i == id))
        .map(|index| index + 1)
}

fn anthropic(
    script: &Script,
    tool_call_ids: &[Vec<String>],
    body: &Value,
) -> Result<(), ErrorKind> {
    let thinking = body["thinking"]["type"] == "enabled";
    if thinking {
        let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
        let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
        if body["temperature"].as_f64().is_some_and(|t| t != 1.0) {
            return Err(invalid(
                "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility",
                None,
            ));
        }
        if budget < 1024 {
            return Err(invalid(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                None,
            ));
        }
        if budget >= max_tokens {
            return Err(invalid(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
                None,
            ));
        }
    }
    let empty = Vec::new();
    let messages = body["messages"].as_array().unwrap_or(&empty);
    for (i, message) in messages.iter().enumerate() {
        if message["role"] != "assistant" {
            continue;
        }
        for (j, block) in message["content"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .enumerate()
        {
            match block["type"].as_str() {
                Some("thinking") => {
                    let genuine = script.turns.iter().enumerate().any(|(n, turn)| {
                        block["signature"] == thinking_signature(n + 1).as_str()
                            && turn.reasoning.as_deref() == block["thinking"].as_str()
                    });
                    if !genuine {
                        return Err(invalid(
                            format!(
                                "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                            ),
                            None,
                        ));
                    }
                }
                Some("redacted_thinking") => {
                    let genuine = script.turns.iter().enumerate().any(|(n, turn)| {
                        turn.redacted_thinking && block["data"] == redacted_data(n + 1).as_str()
                    });
                    if !genuine {
                        return Err(invalid(
                            format!("messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"),
                            None,
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    if !thinking {
        return Ok(());
    }
    // The tool loop in progress: the last assistant message, answered by tool results.
    let Some(last) = messages.iter().rposition(|m| m["role"] == "assistant") else {
        return Ok(());
    };
    let answered = messages[last + 1..].iter().any(|m| {
        m["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
    });
    let content = messages[last]["content"].as_array().unwrap_or(&empty);
    let thought = content.iter().find_map(|b| {
        (b["type"] == "tool_use")
            .then(|| {
                b["id"]
                    .as_str()
                    .and_then(|id| turn_of_call(tool_call_ids, id))
            })
            .flatten()
            .and_then(|n| script.turns.get(n - 1))
            .filter(|turn| turn.reasoning.is_some() || turn.redacted_thinking)
    });
    let first = content
        .first()
        .and_then(|b| b["type"].as_str())
        .unwrap_or("nothing");
    if answered && thought.is_some() && first != "thinking" && first != "redacted_thinking" {
        return Err(invalid(
            format!("messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"),
            None,
        ));
    }
    Ok(())
}

fn responses(
    script: &Script,
    tool_call_ids: &[Vec<String>],
    body: &Value,
) -> Result<(), ErrorKind> {
    let empty = Vec::new();
    let input = body["input"].as_array().unwrap_or(&empty);
    let encrypted_asked = body["include"]
        .as_array()
        .is_some_and(|i| i.iter().any(|v| v == "reasoning.encrypted_content"));
    for (index, item) in input.iter().enumerate() {
        match item["type"].as_str() {
            Some("reasoning") => {
                if let Some(id) = item["id"].as_str() {
                    return Err(invalid(
                        format!("Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."),
                        Some("input"),
                    ));
                }
                let genuine = item["encrypted_content"].as_str().is_some_and(|content| {
                    (1..=script.turns.len()).any(|n| encrypted_content(n) == content)
                });
                if !genuine {
                    return Err(invalid(
                        format!("The encrypted content of input[{index}] could not be verified."),
                        Some("input"),
                    ));
                }
            }
            Some("function_call") if encrypted_asked => {
                let Some(n) = item["call_id"]
                    .as_str()
                    .and_then(|id| turn_of_call(tool_call_ids, id))
                else {
                    continue;
                };
                let reasoned = script
                    .turns
                    .get(n - 1)
                    .is_some_and(|t| t.reasoning.is_some());
                let expected = encrypted_content(n);
                let returned = input[..index].iter().any(|i| {
                    i["type"] == "reasoning" && i["encrypted_content"] == expected.as_str()
                });
                if reasoned && !returned {
                    return Err(invalid(
                        format!("pith-testkit: input[{index}] (function_call {}) comes back without the reasoning item that preceded it in the answer (encrypted content {expected}); a reasoning model needs it between tool calls", item["call_id"]),
                        Some("input"),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn gemini(script: &Script, tool_call_ids: &[Vec<String>], body: &Value) -> Result<(), ErrorKind> {
    let empty = Vec::new();
    let contents = body["contents"].as_array().unwrap_or(&empty);
    let issued = |signature: &str| {
        script
            .turns
            .iter()
            .enumerate()
            .any(|(n, turn)| turn.reasoning.is_some() && thinking_signature(n + 1) == signature)
    };
    for (i, content) in contents.iter().enumerate() {
        for (j, part) in content["parts"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .enumerate()
        {
            if let Some(signature) = part.get("thoughtSignature") {
                if !signature.as_str().is_some_and(issued) {
                    return Err(invalid(
                        format!("Corrupted thought signature. (contents[{i}].parts[{j}])"),
                        None,
                    ));
                }
            }
        }
    }
    // The current turn starts after the last user content with text (not only results).
    let current = contents
        .iter()
        .rposition(|c| {
            c["role"] == "user"
                && c["parts"]
                    .as_array()
                    .is_some_and(|parts| parts.iter().any(|p| p.get("text").is_some()))
        })
        .map_or(0, |at| at + 1);
    for (i, content) in contents.iter().enumerate().skip(current) {
        let parts = content["parts"].as_array().unwrap_or(&empty);
        let Some((j, first_call)) = parts
            .iter()
            .enumerate()
            .find(|(_, p)| p.get("functionCall").is_some())
        else {
            continue;
        };
        // The turn that made the call: by its id, else (ids omitted) by name and arguments.
        let call = &first_call["functionCall"];
        let by_content = || {
            script.turns.iter().position(|turn| {
                turn.tool_calls.first().is_some_and(|c| {
                    c.name == call["name"].as_str().unwrap_or_default()
                        && crate::wire::gemini::args(&c.arguments) == call["args"]
                })
            })
        };
        let Some(n) = call["id"]
            .as_str()
            .and_then(|id| turn_of_call(tool_call_ids, id))
            .or_else(|| by_content().map(|index| index + 1))
        else {
            continue;
        };
        let reasoned = script
            .turns
            .get(n - 1)
            .is_some_and(|t| t.reasoning.is_some());
        if reasoned && first_call["thoughtSignature"] != thinking_signature(n).as_str() {
            let name = first_call["functionCall"]["name"].as_str().unwrap_or("?");
            return Err(invalid(
                format!("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{name}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details. (contents[{i}].parts[{j}])", i + 1),
                None,
            ));
        }
    }
    Ok(())
}

fn chat(script: &Script, body: &Value) -> Result<(), ErrorKind> {
    if let Some(field) = script.max_tokens_field.as_deref() {
        let other = if field == "max_tokens" {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        if !body[other].is_null() {
            return Err(invalid(
                format!("Unsupported parameter: '{other}' is not supported with this model. Use '{field}' instead."),
                Some(other),
            ));
        }
    }
    let empty = Vec::new();
    for (i, message) in body["messages"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .enumerate()
    {
        if message["role"] == "tool" && !message["content"].is_string() {
            return Err(invalid(
                format!("Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL."),
                Some(&format!("messages[{i}]")),
            ));
        }
    }
    Ok(())
}
