//! The `pin` record: the user pinned something, or removed a pin
//! ([`pith_core::context::pins`]). The pins of a session are the fold of these records on
//! the line of the conversation ([`crate::line::pins_on_line`]), so they follow it
//! through resume, fork and rewind.

use pith_core::context::pins::Pin;
use serde::{Deserialize, Serialize};

/// What a `pin` record did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinAction {
    /// The pin was made.
    Add,
    /// The pin was removed (`/unpin`).
    Remove,
}

/// One change to the session's pins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinChange {
    /// Made or removed.
    #[serde(rename = "action")]
    pub action: PinAction,
    /// The pin.
    #[serde(rename = "pin")]
    pub pin: Pin,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    #[test]
    fn a_pin_record_reads_back_as_written() {
        let event = Event::Pin(PinChange {
            action: PinAction::Add,
            pin: Pin::File {
                path: "spec.md".into(),
            },
        });
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "pin", "action": "add", "pin": {"type": "file", "path": "spec.md"}})
        );
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), event);
    }
}
