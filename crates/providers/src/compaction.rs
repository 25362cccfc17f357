//! The compaction requests: the private automatic summary and the visible manual one.
//!
//! Both reuse the parent's adapter, system prompt, history and tool definitions (so the
//! provider's prompt cache can reuse the whole prefix) and append the compaction prompt as
//! the last user message. Tool calls the model attempts are answered by the denying
//! registry with the tool-error text and the request is repeated, a bounded number of
//! times; the summary is the text of the last response, i.e. the text after the last
//! tool activity. Nothing here touches the loop's history: the caller installs the
//! replacement only once a valid summary exists (transactional compaction).

use pith_core::summary::{auto_prompt, validate_summary};
use pith_core::{LoopEvent, Message, TokenCounter, ToolDefinition, ToolRegistry, Usage};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::adapter::{ModelRequest, ProviderAdapter};
use crate::agent_loop::{execute_calls, LoopOptions};
use crate::error::ProviderError;
use crate::overflow;
use crate::request::{send_with_retries, Visibility};

/// How a compaction request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PrivateOutcome {
    /// A valid (non-empty, trimmed) summary.
    Summary {
        /// The summary text.
        summary: String,
        /// Usage of the compaction requests.
        usage: Usage,
    },
    /// The compaction's token was cancelled.
    Cancelled {
        /// Usage spent before the cancellation.
        usage: Usage,
    },
    /// The request failed or the summary was invalid.
    Failed {
        /// Why.
        reason: String,
        /// Usage spent.
        usage: Usage,
    },
}

impl PrivateOutcome {
    /// Usage spent, whatever the outcome.
    pub fn usage(&self) -> Usage {
        match self {
            Self::Summary { usage, .. }
            | Self::Cancelled { usage }
            | Self::Failed { usage, .. } => *usage,
        }
    }
}

/// The messages of the automatic compaction request: the current history plus the
/// automatic prompt. When that request would not fit the input budget, the history part
/// is fitted first (tool results capped, oldest turns dropped) — the summary request must
/// be sendable even when the conversation is already full.
pub fn auto_request_messages(
    counter: &dyn TokenCounter,
    system: &str,
    history: &[Message],
    tools: &[ToolDefinition],
    input_budget: u64,
) -> Vec<Message> {
    let mut messages = history.to_vec();
    messages.push(Message::user(auto_prompt()));
    let estimate = pith_core::tokens::estimate_request(counter, system, &messages, tools);
    if (estimate.total as u64) <= input_budget {
        return messages;
    }
    overflow::fit_to_budget(counter, system, &messages, tools, input_budget).messages
}

/// Runs the automatic compaction request privately: nothing is forwarded to the front-end.
pub async fn run_private(
    adapter: &dyn ProviderAdapter,
    request: ModelRequest,
    denying: &ToolRegistry,
    options: &LoopOptions,
    cancel: &CancellationToken,
) -> PrivateOutcome {
    run(adapter, request, denying, options, None, cancel).await
}

/// Runs the manual compaction request visibly: text and the rejected tool calls are
/// forwarded as events.
pub async fn run_visible(
    adapter: &dyn ProviderAdapter,
    request: ModelRequest,
    denying: &ToolRegistry,
    options: &LoopOptions,
    events: &UnboundedSender<LoopEvent>,
    cancel: &CancellationToken,
) -> PrivateOutcome {
    run(adapter, request, denying, options, Some(events), cancel).await
}

async fn run(
    adapter: &dyn ProviderAdapter,
    mut request: ModelRequest,
    denying: &ToolRegistry,
    options: &LoopOptions,
    events: Option<&UnboundedSender<LoopEvent>>,
    cancel: &CancellationToken,
) -> PrivateOutcome {
    let mut usage = Usage::default();
    // A sink for the denial cards of the private path: they are never shown.
    let (private_sink, _private_drain) = tokio::sync::mpsc::unbounded_channel();
    let card_sink = events.unwrap_or(&private_sink);
    let visibility = match events {
        Some(sender) => Visibility::Visible(sender),
        None => Visibility::Private,
    };
    let mut rounds = 0;
    loop {
        let response = match send_with_retries(
            adapter,
            &request,
            &options.retry,
            &options.timeouts,
            visibility,
            cancel,
        )
        .await
        {
            Ok(response) => response,
            Err(failure) => {
                return match failure.error {
                    ProviderError::Cancelled => PrivateOutcome::Cancelled { usage },
                    error => PrivateOutcome::Failed {
                        reason: error.to_string(),
                        usage,
                    },
                }
            }
        };
        usage += response.usage;
        if response.tool_calls.is_empty() {
            return match validate_summary(&response.text) {
                Ok(summary) => PrivateOutcome::Summary {
                    summary: summary.to_owned(),
                    usage,
                },
                Err(error) => PrivateOutcome::Failed {
                    reason: error.to_string(),
                    usage,
                },
            };
        }
        if rounds >= options.compaction_tool_rounds {
            return PrivateOutcome::Failed {
                reason: "the model kept calling tools instead of writing the summary".to_owned(),
                usage,
            };
        }
        rounds += 1;
        let results = execute_calls(denying, &response.tool_calls, card_sink, cancel).await;
        if cancel.is_cancelled() {
            return PrivateOutcome::Cancelled { usage };
        }
        std::sync::Arc::make_mut(&mut request.messages).push(Message::assistant_with_calls(
            response.text,
            response.tool_calls,
        ));
        for result in results {
            std::sync::Arc::make_mut(&mut request.messages).push(Message {
                role: pith_core::Role::Tool,
                parts: vec![pith_core::Part::ToolResult(result)],
            });
        }
    }
}
