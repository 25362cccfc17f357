//! Session modes are pith's approval levels: `session/set_mode` with `read-only`, `ask`,
//! `auto-edit` or `full` changes what runs without asking, from the next tool call on.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeId, SessionModeState};
use pith_tools::PermissionMode;

/// The modes a session offers, in increasing autonomy, with `current` selected.
pub fn state(current: PermissionMode) -> SessionModeState {
    SessionModeState::new(
        id(current),
        PermissionMode::ALL
            .into_iter()
            .map(|mode| {
                let (name, description) = describe(mode);
                SessionMode::new(id(mode), name).description(description.to_owned())
            })
            .collect(),
    )
}

/// The mode id of `mode` (pith's own name for it).
pub fn id(mode: PermissionMode) -> SessionModeId {
    SessionModeId::new(mode.as_str())
}

/// The approval level a mode id names, if it names one.
pub fn parse(id: &SessionModeId) -> Option<PermissionMode> {
    id.0.parse().ok()
}

/// A mode's name and description, as editors show them.
pub fn describe(mode: PermissionMode) -> (&'static str, &'static str) {
    match mode {
        PermissionMode::ReadOnly => (
            "Read only",
            "Reading tools only: write, edit and commands are refused",
        ),
        PermissionMode::Ask => (
            "Ask",
            "Writes, edits, commands and reads outside the project ask first",
        ),
        PermissionMode::AutoEdit => (
            "Auto-edit",
            "Reads, writes and edits run; commands ask first",
        ),
        PermissionMode::Full => (
            "Full access",
            "Everything runs without asking (writes stay inside the project, commands in the sandbox)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_is_a_mode_and_back() {
        let offered = state(PermissionMode::AutoEdit);
        assert_eq!(offered.current_mode_id, SessionModeId::new("auto-edit"));
        assert_eq!(offered.available_modes.len(), 4);
        for mode in PermissionMode::ALL {
            assert_eq!(parse(&id(mode)), Some(mode));
        }
        assert_eq!(parse(&SessionModeId::new("yolo")), None);
    }
}
