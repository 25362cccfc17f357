//! What the fidelity probes share: a view as the text they search, how they are
//! counted, and the stand-in summary's size.

use std::fmt::Write as _;

use std::sync::Arc;

use pith_core::message::{Message, Part, Role};
use pith_core::BpeCounter;
use serde::Serialize;

use crate::simulate::prices::PriceModel;
use crate::simulate::replay::SimParams;

/// Tokens of the stand-in summary (as `simulate`'s default).
pub const SUMMARY_TOKENS: usize = 2_000;

/// The replay parameters every probe runs with at `window` tokens: a summary of
/// [`SUMMARY_TOKENS`], Anthropic's prices and `counter`'s counts.
pub fn probe_params(window: u64, counter: &Arc<BpeCounter>) -> SimParams {
    SimParams::new(
        window,
        SUMMARY_TOKENS,
        PriceModel::anthropic(),
        counter.clone(),
    )
}

/// Probes asked and kept.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Tally {
    /// Probes asked.
    pub asked: u64,
    /// Probes whose answer was in the view.
    pub kept: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, kept: bool) {
        self.asked += 1;
        self.kept += u64::from(kept);
    }

    pub(crate) fn merge(&mut self, other: Tally) {
        self.asked += other.asked;
        self.kept += other.kept;
    }

    /// Percent kept (100 when nothing was asked).
    pub fn percent(&self) -> f64 {
        if self.asked == 0 {
            100.0
        } else {
            self.kept as f64 * 100.0 / self.asked as f64
        }
    }
}

/// A view as text: every message's text, each tool call as its name and arguments JSON,
/// each tool result's content (the `--dump` format after its first line).
pub fn view_text(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let _ = writeln!(out, "[{role}]");
        for part in &message.parts {
            match part {
                Part::Text { text } => {
                    out.push_str(text);
                    out.push('\n');
                }
                Part::ToolCall(call) => {
                    let _ = writeln!(out, "tool call {} {}", call.name, call.arguments);
                }
                Part::ToolResult(result) => {
                    out.push_str(&result.content);
                    out.push('\n');
                }
                // Reasoning and images say nothing the probes ask about.
                _ => {}
            }
        }
    }
    out
}
