//! The key → action mapping while pith is busy (a turn streams, `/compact` runs, or a
//! permission question waits), as a pure function of the key and the situation.
//!
//! This is the contract of docs/repl.md ("Keys"): **Esc** cancels only the
//! child compactor when an automatic compaction runs (the turn keeps streaming), cancels
//! a running `/compact`, and otherwise does nothing; **Ctrl+C** cancels the whole turn
//! (and any compaction under it). Other keys build the type-ahead line that runs after
//! the current job. Line editing at the prompt is reedline's, not this module's, except
//! Esc at the prompt: [`esc_at_prompt`] decides what Esc Esc does when nothing runs (it
//! opens `/rewind`, as in Claude Code; an Esc while busy is [`action_for`]'s and never
//! counts towards it).

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Two Esc presses at the prompt at most this far apart are an Esc Esc.
pub const DOUBLE_ESC_WINDOW: Duration = Duration::from_millis(500);

/// What an Esc at the idle prompt (no turn, no compaction, no question) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptEsc {
    /// A first press: remember when, and wait for a second.
    Wait,
    /// Esc Esc on an empty line: open `/rewind` (the list of turns).
    OpenRewind,
    /// Esc Esc on a line with text: clear it (reedline's undo brings it back).
    ClearLine,
}

/// Decides an Esc pressed at the prompt at `now`, the previous one (since the last
/// Esc Esc) having been at `previous`, with the input line empty or not.
pub fn esc_at_prompt(previous: Option<Instant>, now: Instant, line_empty: bool) -> PromptEsc {
    let double = previous
        .and_then(|previous| now.checked_duration_since(previous))
        .is_some_and(|gap| gap <= DOUBLE_ESC_WINDOW);
    match (double, line_empty) {
        (false, _) => PromptEsc::Wait,
        (true, true) => PromptEsc::OpenRewind,
        (true, false) => PromptEsc::ClearLine,
    }
}

/// What is going on when a key arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Situation {
    /// An automatic compaction is running inside the turn.
    pub auto_compaction_running: bool,
    /// The job is a manual `/compact` (not a turn).
    pub manual_compaction: bool,
    /// A permission question is on screen.
    pub approval_pending: bool,
}

/// The user's answer to a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalKey {
    /// Run this call.
    Once,
    /// Run this and every call of the same kind this session.
    Session,
    /// Refuse it.
    Deny,
}

/// What a key does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyAction {
    /// Cancel the child compaction token only; the turn keeps streaming.
    CancelCompactor,
    /// Cancel the running `/compact`.
    CancelManualCompaction,
    /// Cancel the turn (and any compaction under it).
    CancelTurn,
    /// Answer the permission question.
    Answer(ApprovalKey),
    /// Add a character to the type-ahead line.
    Type(char),
    /// Remove the last character of the type-ahead line.
    Backspace,
    /// Queue the type-ahead line as the next input.
    QueueLine,
    /// Nothing.
    Nothing,
}

/// Maps `key` in `situation` to its action.
pub fn action_for(key: &KeyEvent, situation: Situation) -> KeyAction {
    if key.kind == KeyEventKind::Release {
        return KeyAction::Nothing;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c') if ctrl => {
            if situation.manual_compaction {
                KeyAction::CancelManualCompaction
            } else {
                KeyAction::CancelTurn
            }
        }
        KeyCode::Esc if situation.approval_pending => KeyAction::Answer(ApprovalKey::Deny),
        KeyCode::Esc if situation.manual_compaction => KeyAction::CancelManualCompaction,
        KeyCode::Esc if situation.auto_compaction_running => KeyAction::CancelCompactor,
        KeyCode::Esc => KeyAction::Nothing,
        KeyCode::Char(c) if situation.approval_pending && !ctrl => match c {
            'y' | 'Y' => KeyAction::Answer(ApprovalKey::Once),
            'a' | 'A' => KeyAction::Answer(ApprovalKey::Session),
            'n' | 'N' => KeyAction::Answer(ApprovalKey::Deny),
            _ => KeyAction::Nothing,
        },
        _ if situation.approval_pending => KeyAction::Nothing,
        KeyCode::Char(_) if ctrl => KeyAction::Nothing,
        KeyCode::Char(c) => KeyAction::Type(c),
        KeyCode::Backspace => KeyAction::Backspace,
        KeyCode::Enter => KeyAction::QueueLine,
        _ => KeyAction::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    const STREAMING: Situation = Situation {
        auto_compaction_running: false,
        manual_compaction: false,
        approval_pending: false,
    };
    const AUTO: Situation = Situation {
        auto_compaction_running: true,
        ..STREAMING
    };
    const MANUAL: Situation = Situation {
        manual_compaction: true,
        ..STREAMING
    };
    const ASKING: Situation = Situation {
        approval_pending: true,
        ..STREAMING
    };

    #[test]
    fn esc_cancels_only_the_compactor_during_an_automatic_compaction() {
        assert_eq!(
            action_for(&key(KeyCode::Esc), AUTO),
            KeyAction::CancelCompactor
        );
    }

    #[test]
    fn esc_does_nothing_while_a_plain_turn_streams() {
        assert_eq!(
            action_for(&key(KeyCode::Esc), STREAMING),
            KeyAction::Nothing
        );
    }

    #[test]
    fn esc_cancels_a_manual_compaction() {
        assert_eq!(
            action_for(&key(KeyCode::Esc), MANUAL),
            KeyAction::CancelManualCompaction
        );
    }

    #[test]
    fn ctrl_c_cancels_the_turn_even_while_the_compactor_runs() {
        assert_eq!(action_for(&ctrl('c'), STREAMING), KeyAction::CancelTurn);
        assert_eq!(action_for(&ctrl('c'), AUTO), KeyAction::CancelTurn);
        assert_eq!(action_for(&ctrl('c'), ASKING), KeyAction::CancelTurn);
        assert_eq!(
            action_for(&ctrl('c'), MANUAL),
            KeyAction::CancelManualCompaction
        );
    }

    #[test]
    fn permission_questions_take_y_a_n_and_esc_denies() {
        assert_eq!(
            action_for(&key(KeyCode::Char('y')), ASKING),
            KeyAction::Answer(ApprovalKey::Once)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('a')), ASKING),
            KeyAction::Answer(ApprovalKey::Session)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('n')), ASKING),
            KeyAction::Answer(ApprovalKey::Deny)
        );
        assert_eq!(
            action_for(&key(KeyCode::Esc), ASKING),
            KeyAction::Answer(ApprovalKey::Deny)
        );
        assert_eq!(
            action_for(&key(KeyCode::Char('x')), ASKING),
            KeyAction::Nothing,
            "other letters must not answer or leak into the type-ahead"
        );
        assert_eq!(action_for(&key(KeyCode::Enter), ASKING), KeyAction::Nothing);
    }

    #[test]
    fn typing_while_busy_builds_a_queued_line() {
        assert_eq!(
            action_for(&key(KeyCode::Char('h')), MANUAL),
            KeyAction::Type('h')
        );
        assert_eq!(
            action_for(&key(KeyCode::Backspace), STREAMING),
            KeyAction::Backspace
        );
        assert_eq!(
            action_for(&key(KeyCode::Enter), MANUAL),
            KeyAction::QueueLine
        );
        assert_eq!(action_for(&ctrl('d'), STREAMING), KeyAction::Nothing);
    }

    #[test]
    fn esc_esc_at_an_empty_prompt_opens_rewind_within_half_a_second() {
        let first = Instant::now();
        assert_eq!(esc_at_prompt(None, first, true), PromptEsc::Wait);
        assert_eq!(
            esc_at_prompt(Some(first), first + Duration::from_millis(300), true),
            PromptEsc::OpenRewind
        );
        assert_eq!(
            esc_at_prompt(Some(first), first + DOUBLE_ESC_WINDOW, true),
            PromptEsc::OpenRewind
        );
    }

    #[test]
    fn a_slow_second_esc_starts_over_and_text_is_cleared_not_lost_to_a_rewind() {
        let first = Instant::now();
        assert_eq!(
            esc_at_prompt(Some(first), first + Duration::from_millis(501), true),
            PromptEsc::Wait
        );
        assert_eq!(
            esc_at_prompt(Some(first), first + Duration::from_millis(200), false),
            PromptEsc::ClearLine
        );
        // A clock that went backwards is not a double press.
        assert_eq!(
            esc_at_prompt(Some(first + Duration::from_secs(1)), first, true),
            PromptEsc::Wait
        );
    }

    #[test]
    fn esc_while_busy_never_opens_rewind() {
        // Esc while busy is `action_for`'s: it cancels a compaction or does nothing,
        // and nothing in its actions opens anything.
        for situation in [STREAMING, AUTO, MANUAL, ASKING] {
            assert!(matches!(
                action_for(&key(KeyCode::Esc), situation),
                KeyAction::Nothing
                    | KeyAction::CancelCompactor
                    | KeyAction::CancelManualCompaction
                    | KeyAction::Answer(ApprovalKey::Deny)
            ));
        }
    }

    #[test]
    fn key_releases_are_ignored() {
        let mut release = key(KeyCode::Esc);
        release.kind = KeyEventKind::Release;
        assert_eq!(action_for(&release, AUTO), KeyAction::Nothing);
    }
}
