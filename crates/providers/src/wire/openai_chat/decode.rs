//! Decoding the response stream.

use crate::wire::adapter::{parse_arguments, StreamChunk};
use crate::wire::error::ProviderError;
use pith_core::{Reasoning, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct Chunk {
    pub(super) choices: Vec<Choice>,
    pub(super) usage: Option<ChunkUsage>,
    pub(super) error: Option<ErrorObject>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct Choice {
    pub(super) delta: Option<Delta>,
    pub(super) message: Option<Delta>,
    pub(super) finish_reason: Option<String>,
    pub(super) usage: Option<ChunkUsage>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct Delta {
    pub(super) content: Option<String>,
    pub(super) reasoning_content: Option<String>,
    pub(super) reasoning: Option<String>,
    pub(super) tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct ToolCallDelta {
    pub(super) index: Option<usize>,
    pub(super) id: Option<String>,
    pub(super) function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct FunctionDelta {
    pub(super) name: Option<String>,
    pub(super) arguments: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct ChunkUsage {
    pub(super) prompt_tokens: u64,
    pub(super) completion_tokens: u64,
    pub(super) prompt_tokens_details: Option<PromptDetails>,
    pub(super) completion_tokens_details: Option<CompletionDetails>,
    /// OpenRouter's usage accounting: what the request cost, in US dollars.
    pub(super) cost: Option<f64>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct CompletionDetails {
    pub(super) reasoning_tokens: Option<u64>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct PromptDetails {
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(super) struct ErrorObject {
    pub(super) message: String,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) code: Option<Value>,
}

/// Reassembles streamed tool calls (by `index`, falling back to `id`, then to the last
/// call) and tracks the end of the response.
#[derive(Debug, Default)]
pub(super) struct Assembler {
    pub(super) calls: Vec<(Option<usize>, String, String, String)>,
    pub(super) finish_reason: Option<String>,
    pub(super) usage: Option<Usage>,
    pub(super) generated_ids: usize,
    /// Reasoning text of the answer so far (DeepSeek / vLLM `reasoning_content`,
    /// OpenRouter `reasoning`), kept with the answer once its text or calls begin.
    pub(super) reasoning: String,
}

impl Assembler {
    /// Takes one tool-call delta; returns the progress to report (the call's slot and the
    /// argument bytes added).
    pub(super) fn tool_delta(&mut self, delta: ToolCallDelta) -> StreamChunk {
        let slot = match (delta.index, &delta.id) {
            (Some(index), _) => self.calls.iter().position(|c| c.0 == Some(index)),
            (None, Some(id)) => self.calls.iter().position(|c| &c.1 == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let slot = match slot {
            Some(slot) => slot,
            None => {
                self.calls
                    .push((delta.index, String::new(), String::new(), String::new()));
                self.calls.len() - 1
            }
        };
        let entry = &mut self.calls[slot];
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            entry.1 = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                // Most servers send the name once; llama-cpp-python repeats the whole
                // name in every delta. Append only what is genuinely new.
                if entry.2.is_empty() || (name != entry.2 && !entry.2.ends_with(&name)) {
                    entry.2.push_str(&name);
                }
            }
            if let Some(arguments) = function.arguments {
                entry.3.push_str(&arguments);
                return StreamChunk::ArgumentBytes {
                    call: slot,
                    bytes: arguments.len(),
                };
            }
        }
        StreamChunk::ArgumentBytes {
            call: slot,
            bytes: 0,
        }
    }

    /// The reasoning so far as a complete part (for the transcript; Chat servers are
    /// never sent it back), once.
    pub(super) fn take_reasoning(&mut self) -> Option<StreamChunk> {
        if self.reasoning.is_empty() {
            return None;
        }
        Some(StreamChunk::ReasoningPart(Reasoning {
            origin: "openai-chat".to_owned(),
            text: std::mem::take(&mut self.reasoning),
            ..Reasoning::default()
        }))
    }

    pub(super) fn finish(&mut self) -> Vec<StreamChunk> {
        let mut out: Vec<StreamChunk> = self.take_reasoning().into_iter().collect();
        for (_, id, name, arguments) in std::mem::take(&mut self.calls) {
            let id = if id.is_empty() {
                self.generated_ids += 1;
                format!("call_pith_{}", self.generated_ids)
            } else {
                id
            };
            out.push(StreamChunk::ToolCall(ToolCall {
                id,
                name,
                arguments: parse_arguments(&arguments),
            }));
        }
        if let Some(usage) = self.usage {
            out.push(StreamChunk::Usage(usage));
        }
        out.push(StreamChunk::Done {
            stop_reason: self.finish_reason.clone(),
        });
        out
    }
}

pub(super) fn usage_of(usage: ChunkUsage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens,
        cached_input_tokens: usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        cache_write_tokens: 0,
        output_tokens: usage.completion_tokens,
        reasoning_tokens: usage
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
        provider_cost_nanousd: usage
            .cost
            .filter(|cost| cost.is_finite() && *cost > 0.0)
            .map_or(0, |cost| (cost * 1e9).round() as u64),
    }
}

/// Turns one parsed chunk into stream chunks (text and reasoning deltas immediately; tool
/// calls and usage are held until the end).
pub(super) fn absorb(
    chunk: Chunk,
    assembler: &mut Assembler,
) -> Result<Vec<StreamChunk>, ProviderError> {
    if let Some(error) = chunk.error {
        let code = error.code.as_ref().map(|c| {
            c.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| c.to_string())
        });
        return Err(ProviderError::from_stream_error(
            error.kind.as_deref(),
            code.as_deref(),
            &error.message,
        ));
    }
    let mut out = Vec::new();
    if let Some(usage) = chunk.usage {
        assembler.usage = Some(usage_of(usage));
    }
    for choice in chunk.choices {
        if let Some(usage) = choice.usage {
            assembler.usage = Some(usage_of(usage));
        }
        if let Some(delta) = choice.delta.or(choice.message) {
            if let Some(reasoning) = delta
                .reasoning_content
                .or(delta.reasoning)
                .filter(|r| !r.is_empty())
            {
                assembler.reasoning.push_str(&reasoning);
                out.push(StreamChunk::Reasoning(reasoning));
            }
            let content = delta.content.filter(|c| !c.is_empty());
            let calls = delta.tool_calls.unwrap_or_default();
            if content.is_some() || !calls.is_empty() {
                out.extend(assembler.take_reasoning());
            }
            if let Some(content) = content {
                out.push(StreamChunk::Text(content));
            }
            for call in calls {
                out.push(assembler.tool_delta(call));
            }
        }
        if let Some(reason) = choice.finish_reason {
            assembler.finish_reason = Some(reason);
        }
    }
    Ok(out)
}
