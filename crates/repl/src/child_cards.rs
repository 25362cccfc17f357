//! Live cards of running subagents: one line per child the turn's `task` calls run —
//! its agent, the tool it is running (or what it is doing), the tokens it has used —
//! drawn in the live region above the loader and removed when the child ends.

use pith_core::thousands;
use pith_core::{LoopEvent, SubagentEvent};

use crate::cards::{argument_summary, shorten};

/// Characters of a card's tool summary.
const TOOL_CHARS: usize = 60;

/// One running child.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Card {
    call_id: String,
    agent: String,
    doing: String,
    tokens: u64,
}

/// The running children of a turn, in the order they started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildCards {
    cards: Vec<Card>,
}

impl ChildCards {
    /// Follows one event of a child. Returns true when the cards changed.
    pub fn on_event(&mut self, child: &SubagentEvent) -> bool {
        let index = match self.cards.iter().position(|c| c.call_id == child.call_id) {
            Some(index) => index,
            None => {
                self.cards.push(Card {
                    call_id: child.call_id.clone(),
                    agent: child.agent.clone(),
                    doing: "starting".into(),
                    tokens: 0,
                });
                self.cards.len() - 1
            }
        };
        let card = &mut self.cards[index];
        match child.event.as_ref() {
            LoopEvent::RequestStarted { .. } => card.doing = "thinking".into(),
            LoopEvent::ToolCallStarted(call) => {
                card.doing = shorten(
                    &format!("{} {}", call.name, argument_summary(call)),
                    TOOL_CHARS,
                )
            }
            LoopEvent::AutoCompaction(pith_core::AutoCompaction::Started { .. }) => {
                card.doing = "compacting".into()
            }
            LoopEvent::Usage(usage) => card.tokens += usage.input_tokens + usage.output_tokens,
            LoopEvent::TurnFinished { .. } => {
                self.cards.remove(index);
            }
            _ => return false,
        }
        true
    }

    /// The task call `call_id` ended (its result is shown): its card goes.
    pub fn finished(&mut self, call_id: &str) -> bool {
        let before = self.cards.len();
        self.cards.retain(|c| c.call_id != call_id);
        before != self.cards.len()
    }

    /// One line per running child: `◆ explore · grep handle_1 · 12,345 tokens`.
    pub fn lines(&self) -> Vec<String> {
        self.cards
            .iter()
            .map(|card| {
                format!(
                    "◆ {} · {} · {} tokens",
                    card.agent,
                    card.doing,
                    thousands(card.tokens)
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{ToolCall, Usage};
    use serde_json::json;

    fn event(call_id: &str, event: LoopEvent) -> SubagentEvent {
        SubagentEvent {
            call_id: call_id.into(),
            agent: "explore".into(),
            session_id: "s".into(),
            event: Box::new(event),
        }
    }

    #[test]
    fn a_card_follows_its_child_from_start_to_end() {
        let mut cards = ChildCards::default();
        assert!(cards.on_event(&event("a", LoopEvent::RequestStarted { attempt: 1 })));
        assert!(cards.on_event(&event("b", LoopEvent::RequestStarted { attempt: 1 })));
        cards.on_event(&event(
            "a",
            LoopEvent::Usage(Usage {
                input_tokens: 12_000,
                output_tokens: 345,
                ..Usage::default()
            }),
        ));
        cards.on_event(&event(
            "a",
            LoopEvent::ToolCallStarted(ToolCall {
                id: "x".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "alpha"}),
            }),
        ));
        let lines = cards.lines();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("◆ explore · grep "), "{lines:?}");
        assert!(lines[0].ends_with("· 12,345 tokens"), "{lines:?}");
        assert_eq!(lines[1], "◆ explore · thinking · 0 tokens");
        assert!(!cards.on_event(&event("a", LoopEvent::TextDelta("x".into()))));
        cards.on_event(&event(
            "a",
            LoopEvent::TurnFinished {
                usage: Usage::default(),
            },
        ));
        assert_eq!(cards.lines().len(), 1);
        assert!(cards.finished("b"));
        assert!(!cards.finished("b"));
        assert!(cards.lines().is_empty());
    }
}
