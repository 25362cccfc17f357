//! Pins through a conversation (`/pin PATH`, `/pin "text"`, `/unpin`, `pith run --pin`):
//! each change is recorded in the transcript before it applies, a pin is tried against
//! the budget before it is made, and the next user message shows the model the new ones
//! ([`pith_core::context::pins`]).

use pith_core::context::pins::{LeftOutReason, Pin, RenderedPins};
use pith_core::{EventSink, LoopEvent, Message, Part};
use pith_session::{Event, PinAction, PinChange};

use crate::conversation::state::Conversation;
use crate::error::ConversationError;

/// One pin as `/context` and `/pin` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRow {
    /// Its number in the list (from 1): what `/unpin N` takes.
    pub number: usize,
    /// The pin.
    pub pin: Pin,
    /// Its tokens now (`None`: a file that cannot be read now).
    pub tokens: Option<usize>,
    /// True when the next compaction carries it (it fits the budget, in order).
    pub carried: bool,
}

/// The session's pins against their budget.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PinsView {
    /// The pins, oldest first.
    pub rows: Vec<PinRow>,
    /// Tokens of the block a replacement would carry now.
    pub tokens: usize,
    /// The budget (`[context] pins_percent` of the input budget; 0: pins are off).
    pub budget_tokens: usize,
}

impl Conversation {
    /// Pins `pin` for the rest of the session: a file must be a text file inside the
    /// workspace, and it must fit what the other pins leave of the budget (else nothing
    /// is pinned and the error says why). Recorded before it applies.
    pub fn pin(&mut self, pin: Pin) -> Result<PinRow, ConversationError> {
        let budget = self.agent.pins_budget_tokens();
        if budget == 0 {
            return Err(ConversationError::Usage(
                "pins are off ([context] pins_percent = 0)".to_owned(),
            ));
        }
        let pin = self.normalized(pin)?;
        let mut trial = self.agent.pins().clone();
        if !trial.add(pin.clone()) {
            return Err(ConversationError::Usage(format!(
                "{} is pinned already",
                pin.label()
            )));
        }
        let rendered = self.agent.render_pin_set(&trial);
        if let Some(left_out) = rendered.left_out.iter().find(|l| l.pin == pin) {
            return Err(ConversationError::Usage(match left_out.reason {
                LeftOutReason::Unreadable => format!(
                    "cannot pin {}: it is not a text file inside the workspace",
                    pin.label()
                ),
                LeftOutReason::OverBudget { .. } => {
                    format!("not pinned: {}", left_out.describe())
                }
            }));
        }
        let tokens = rendered
            .carried
            .iter()
            .find(|carried| carried.pin == pin)
            .map(|carried| carried.tokens);
        self.record_pin(PinAction::Add, &pin)?;
        self.agent.pins_mut().add(pin.clone());
        Ok(PinRow {
            number: self.agent.pins().len(),
            pin,
            tokens,
            carried: true,
        })
    }

    /// Removes the pin `target` names (its number, path or note), or every pin when
    /// `target` is `all`; the removed pins, oldest first. Each removal is recorded.
    pub fn unpin(&mut self, target: &str) -> Result<Vec<Pin>, ConversationError> {
        let target = target.trim();
        let chosen: Vec<Pin> = if target == "all" {
            self.agent.pins().iter().cloned().collect()
        } else {
            match self.agent.pins().find(target) {
                Some(pin) => vec![pin.clone()],
                None => {
                    return Err(ConversationError::Usage(format!(
                        "nothing pinned is named {target:?} (/context lists the pins)"
                    )))
                }
            }
        };
        for pin in &chosen {
            self.record_pin(PinAction::Remove, pin)?;
            self.agent.pins_mut().remove_pin(pin);
        }
        Ok(chosen)
    }

    /// The pins with their tokens now, against the budget.
    pub fn pins_view(&self) -> PinsView {
        let rendered = self.agent.render_pins();
        let rows = self
            .agent
            .pins()
            .iter()
            .enumerate()
            .map(|(index, pin)| {
                let carried = rendered.carried.iter().find(|c| c.pin == *pin);
                let tokens = carried.map(|c| c.tokens).or_else(|| {
                    rendered
                        .left_out
                        .iter()
                        .find(|l| l.pin == *pin)
                        .and_then(|l| match l.reason {
                            LeftOutReason::OverBudget { tokens, .. } => Some(tokens),
                            LeftOutReason::Unreadable => None,
                        })
                });
                PinRow {
                    number: index + 1,
                    pin: pin.clone(),
                    tokens,
                    carried: carried.is_some(),
                }
            })
            .collect();
        PinsView {
            rows,
            tokens: rendered.tokens,
            budget_tokens: self.agent.pins_budget_tokens(),
        }
    }

    /// `user` with the pins the model has not been shown yet, as a text part of its own
    /// (the user's words stay apart); each one left out is named to `sink`.
    pub(super) fn with_unshown_pins(&self, mut user: Message, sink: &mut dyn EventSink) -> Message {
        let RenderedPins { text, left_out, .. } = self.agent.render_unshown_pins();
        for left_out in left_out {
            sink.emit(LoopEvent::Notice(left_out.describe()));
        }
        if !text.is_empty() {
            user.parts.push(Part::Text { text });
        }
        user
    }

    /// A file pin's path as the workspace names it (relative when inside it); a note
    /// trimmed, and not empty.
    fn normalized(&self, pin: Pin) -> Result<Pin, ConversationError> {
        match pin {
            Pin::Note { text } => {
                let text = text.trim().trim_matches('"').trim().to_owned();
                if text.is_empty() {
                    return Err(ConversationError::Usage(
                        "an empty note cannot be pinned".to_owned(),
                    ));
                }
                Ok(Pin::Note { text })
            }
            Pin::File { path } => {
                let path = path.trim();
                if path.is_empty() {
                    return Err(ConversationError::Usage(
                        "name a file to pin: /pin PATH, or a note: /pin \"text\"".to_owned(),
                    ));
                }
                let relative = std::path::Path::new(path)
                    .strip_prefix(self.cwd())
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| path.trim_start_matches("./").to_owned());
                Ok(Pin::File { path: relative })
            }
        }
    }

    fn record_pin(&mut self, action: PinAction, pin: &Pin) -> Result<(), ConversationError> {
        self.session
            .append(Event::Pin(PinChange {
                action,
                pin: pin.clone(),
            }))
            .map_err(|error| {
                ConversationError::failure(format!(
                    "cannot record the pin, so nothing changed: {error}"
                ))
            })?;
        self.unused = false;
        Ok(())
    }
}

/// What `/pin ARG` asks for: a note when the argument is quoted, else a file.
pub fn pin_of_argument(argument: &str) -> Pin {
    let argument = argument.trim();
    let quoted = argument.len() >= 2
        && ((argument.starts_with('"') && argument.ends_with('"'))
            || (argument.starts_with('\'') && argument.ends_with('\'')));
    if quoted {
        Pin::Note {
            text: argument[1..argument.len() - 1].to_owned(),
        }
    } else {
        Pin::File {
            path: argument.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_argument_is_a_note_else_a_file() {
        assert_eq!(
            pin_of_argument("\"keep the API\""),
            Pin::Note {
                text: "keep the API".into()
            }
        );
        assert_eq!(pin_of_argument(" 'x' "), Pin::Note { text: "x".into() });
        assert_eq!(
            pin_of_argument("docs/spec.md"),
            Pin::File {
                path: "docs/spec.md".into()
            }
        );
        assert_eq!(pin_of_argument("\""), Pin::File { path: "\"".into() });
    }
}
