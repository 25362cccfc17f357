//! Reading what a hook did: its exit code, stdout and stderr become a [`HookRun`] (what
//! the user sees and the transcript records) and an [`Effect`] (what pith does).
//!
//! - exit 0: proceed. Stdout that is a JSON object is read for the documented fields
//!   (`decision`, `reason`, `hookSpecificOutput.permissionDecision`,
//!   `permissionDecisionReason`, `additionalContext`, `systemMessage`); other stdout is
//!   context where the event takes context. Stdout that starts like JSON but is not, or
//!   is not UTF-8 text, is an error: shown, otherwise ignored.
//! - exit 2: block; stderr is the reason (for the model where the event has one).
//! - anything else (another code, a signal, a program that cannot start): a non-blocking
//!   error, shown to the user. A timeout likewise.

use pith_core::context::squash::{self, SquashConfig};
use pith_core::{HookEvent, HookOutcome, HookRun};
use serde_json::Value;

use crate::config::HookSpec;
use crate::runner::{Captured, Ended};

/// Characters of a hook's context or reason kept after squash (a bound on what one hook
/// can add to a message).
pub const CONTEXT_MAX_CHARS: usize = 10_000;

/// What pith does because of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Nothing beyond proceeding.
    None,
    /// Context to add (to the prompt, the result, the replacement, the summary request).
    Context(String),
    /// Block (the prompt, the call, an automatic compaction) or, for `Stop`, continue
    /// the turn with this message.
    Block(String),
    /// `PreToolUse`: run the call without asking.
    Allow,
    /// `PreToolUse`: ask the user before running the call.
    Ask(String),
}

/// Output text as the model or the user may read it: squashed like a tool output,
/// control characters (escape sequences included) removed, bounded.
pub fn clean(text: &str, config: &SquashConfig) -> String {
    let squashed = squash::apply("hook", None, None, text, config).text;
    let mut cleaned = strip_controls(&squashed);
    if cleaned.chars().count() > CONTEXT_MAX_CHARS {
        let cut: String = cleaned.chars().take(CONTEXT_MAX_CHARS).collect();
        cleaned = format!("{cut}\n[… hook output cut at {CONTEXT_MAX_CHARS} characters]");
    }
    cleaned
}

/// `text` without terminal escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL`) and
/// other control characters; newlines and tabs stay.
fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or("")
}

fn takes_context(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::SessionStart
            | HookEvent::UserPromptSubmit
            | HookEvent::PostToolUse
            | HookEvent::PreCompact
            | HookEvent::PostCompact
    )
}

/// Reads one run of `spec`.
pub fn interpret(spec: &HookSpec, captured: &Captured, config: &SquashConfig) -> (HookRun, Effect) {
    let stdout_text = String::from_utf8_lossy(&captured.stdout);
    let mut stderr_text = String::from_utf8_lossy(&captured.stderr).into_owned();
    if captured.stderr_dropped > 0 {
        stderr_text.push_str(&format!(
            "\n[pith: {} more bytes of stderr were dropped]",
            captured.stderr_dropped
        ));
    }
    let mut run = HookRun {
        event: spec.event,
        matcher: spec.matcher.clone(),
        command: spec.command.clone(),
        outcome: HookOutcome::Proceed,
        exit_code: None,
        duration_ms: u64::try_from(captured.duration.as_millis()).unwrap_or(u64::MAX),
        decision: None,
        message: None,
        stdout: clean(&stdout_text, config),
        stderr: clean(&stderr_text, config),
    };
    let error = |run: &mut HookRun, message: String| {
        run.outcome = HookOutcome::Error;
        run.message = Some(message);
        Effect::None
    };
    let code = match &captured.ended {
        Ended::Exited(code) => *code,
        ended => {
            let (outcome, message) = not_exited(spec, ended);
            run.outcome = outcome;
            run.message = Some(message);
            return (run, Effect::None);
        }
    };
    run.exit_code = Some(code);
    if code == 2 {
        let reason = clean(stderr_text.trim(), config);
        let reason = if reason.trim().is_empty() {
            format!("blocked by the {} hook `{}`", spec.event, spec.command)
        } else {
            reason.trim().to_owned()
        };
        run.outcome = HookOutcome::Block;
        run.message = Some(reason.clone());
        return (run, Effect::Block(reason));
    }
    if code != 0 {
        let effect = error(&mut run, exit_message(code, &stderr_text, config));
        return (run, effect);
    }
    if let Some(problem) = stdout_problem(captured) {
        let effect = error(&mut run, problem);
        return (run, effect);
    }
    let trimmed = stdout_text.trim();
    if trimmed.starts_with('{') {
        return match serde_json::from_str::<Value>(trimmed) {
            Ok(Value::Object(object)) => {
                let effect = read_json(spec.event, &object, &mut run, config);
                (run, effect)
            }
            Ok(_) | Err(_) => {
                let effect = error(
                    &mut run,
                    "its output looks like JSON but is not a valid JSON object; ignored".into(),
                );
                (run, effect)
            }
        };
    }
    if trimmed.is_empty() || !takes_context(spec.event) {
        return (run, Effect::None);
    }
    let context = clean(trimmed, config);
    (run, Effect::Context(context))
}

/// How a run that did not exit ended, and the message for the user: a crash, a spawn
/// failure, a timeout (its process group killed) or the turn's cancellation.
fn not_exited(spec: &HookSpec, ended: &Ended) -> (HookOutcome, String) {
    match ended {
        Ended::Exited(code) => (HookOutcome::Proceed, format!("exit {code}")),
        Ended::Signalled(signal) => (
            HookOutcome::Error,
            format!("it crashed (signal {signal}); ignored"),
        ),
        Ended::SpawnFailed(message) => (
            HookOutcome::Error,
            format!("it could not run: {message}; ignored"),
        ),
        Ended::TimedOut => (
            HookOutcome::Timeout,
            format!(
                "timed out after {} s; its process group was killed; ignored",
                spec.timeout.as_secs()
            ),
        ),
        Ended::Cancelled => (HookOutcome::Error, "cancelled with the turn".into()),
    }
}

/// The message of a run that exited with `code`, neither 0 nor 2 (an error, ignored):
/// its first line of stderr; `sh -c` reports a program a signal ended as 128 + the
/// signal.
fn exit_message(code: i32, stderr_text: &str, config: &SquashConfig) -> String {
    let detail = first_line(stderr_text);
    let what = if (129..=128 + 64).contains(&code) {
        format!("it crashed (signal {}, exit {code})", code - 128)
    } else {
        format!("exit {code}")
    };
    if detail.is_empty() {
        format!("{what}; ignored")
    } else {
        format!("{what}: {}; ignored", clean(detail, config))
    }
}

/// Why a run's stdout cannot be read, if it cannot: not UTF-8, or too large.
fn stdout_problem(captured: &Captured) -> Option<String> {
    if std::str::from_utf8(&captured.stdout).is_err() {
        return Some(format!(
            "its output is not UTF-8 text ({} bytes); ignored",
            captured.stdout.len()
        ));
    }
    (captured.stdout_dropped > 0).then(|| {
        format!(
            "its output was too large ({} bytes); ignored",
            captured.stdout.len() as u64 + captured.stdout_dropped
        )
    })
}

fn text_field<'a>(object: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a str> {
    object
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// The documented JSON output fields (a subset of Claude Code's).
fn read_json(
    event: HookEvent,
    object: &serde_json::Map<String, Value>,
    run: &mut HookRun,
    config: &SquashConfig,
) -> Effect {
    let specific = object
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(message) = text_field(object, "systemMessage") {
        run.message = Some(clean(message, config));
    }
    let context = text_field(&specific, "additionalContext")
        .or_else(|| text_field(object, "additionalContext"))
        .map(|c| clean(c, config));
    let reason = text_field(&specific, "permissionDecisionReason")
        .or_else(|| text_field(object, "reason"))
        .map(|r| clean(r, config));
    let decision = text_field(&specific, "permissionDecision")
        .or_else(|| text_field(object, "decision"))
        .map(str::to_owned);
    run.decision = decision.clone();
    let blocked = |run: &mut HookRun, reason: Option<String>| {
        let reason =
            reason.unwrap_or_else(|| format!("blocked by the {event} hook `{}`", run.command));
        run.outcome = HookOutcome::Block;
        run.message.get_or_insert_with(|| reason.clone());
        Effect::Block(reason)
    };
    match (event, decision.as_deref()) {
        (HookEvent::PreToolUse, Some("allow" | "approve")) => Effect::Allow,
        (HookEvent::PreToolUse, Some("ask")) => {
            Effect::Ask(reason.unwrap_or_else(|| "a hook asks you to confirm".into()))
        }
        (_, Some("deny" | "block")) => blocked(run, reason),
        (_, Some(other)) if !matches!(other, "allow" | "approve" | "ask") => {
            run.outcome = HookOutcome::Error;
            run.message = Some(format!("unknown decision `{other}`; ignored"));
            Effect::None
        }
        _ => match context {
            Some(context) if takes_context(event) => Effect::Context(context),
            _ => Effect::None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HookOrigin, HooksConfig};
    use std::time::Duration;

    fn spec(event: &str) -> HookSpec {
        let table: toml::Table =
            toml::from_str(&format!("[[{event}]]\ncommand = \"hook.sh\"")).unwrap();
        let mut config = HooksConfig::default();
        config.add_table(&table, HookOrigin::User).unwrap();
        let spec = config.all().next().unwrap().clone();
        spec
    }

    fn captured(ended: Ended, stdout: &[u8], stderr: &str) -> Captured {
        Captured {
            ended,
            stdout: stdout.to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            stdout_dropped: 0,
            stderr_dropped: 0,
            duration: Duration::from_millis(3),
        }
    }

    fn read(event: &str, ended: Ended, stdout: &[u8], stderr: &str) -> (HookRun, Effect) {
        interpret(
            &spec(event),
            &captured(ended, stdout, stderr),
            &SquashConfig::default(),
        )
    }

    #[test]
    fn stderr_cut_at_its_cap_says_how_much_was_dropped() {
        let mut cut = captured(Ended::Exited(2), b"", "no rm -rf /");
        cut.stderr_dropped = 4_096;
        let (run, effect) = interpret(&spec("PreToolUse"), &cut, &SquashConfig::default());
        assert!(
            run.stderr
                .contains("4096 more bytes of stderr were dropped"),
            "{}",
            run.stderr
        );
        assert!(
            matches!(&effect, Effect::Block(reason) if reason.starts_with("no rm -rf /")),
            "{effect:?}"
        );
    }

    #[test]
    fn exit_codes_proceed_block_or_fail() {
        let (run, effect) = read("UserPromptSubmit", Ended::Exited(0), b"house rules\n", "");
        assert_eq!(run.outcome, HookOutcome::Proceed);
        assert_eq!(effect, Effect::Context("house rules".into()));
        let (run, effect) = read("PreToolUse", Ended::Exited(0), b"chatter", "");
        assert_eq!(
            (run.outcome, effect),
            (HookOutcome::Proceed, Effect::None),
            "plain stdout of PreToolUse is not context"
        );
        let (run, effect) = read("PreToolUse", Ended::Exited(2), b"", "no rm -rf /\n");
        assert_eq!(run.outcome, HookOutcome::Block);
        assert_eq!(effect, Effect::Block("no rm -rf /".into()));
        let (run, effect) = read("PreToolUse", Ended::Exited(1), b"", "boom\nmore");
        assert_eq!(run.outcome, HookOutcome::Error);
        assert_eq!(effect, Effect::None);
        assert_eq!(run.message.as_deref(), Some("exit 1: boom; ignored"));
        let (run, _) = read("Stop", Ended::Signalled(11), b"", "");
        assert!(run.message.unwrap().contains("crashed (signal 11)"));
        let (run, effect) = read("Stop", Ended::TimedOut, b"", "");
        assert_eq!((run.outcome, effect), (HookOutcome::Timeout, Effect::None));
    }

    #[test]
    fn json_output_decides_and_garbage_is_an_error() {
        let (run, effect) = read(
            "PreToolUse",
            Ended::Exited(0),
            br#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "not here"}}"#,
            "",
        );
        assert_eq!(effect, Effect::Block("not here".into()));
        assert_eq!(run.decision.as_deref(), Some("deny"));
        let (_, effect) = read(
            "PreToolUse",
            Ended::Exited(0),
            br#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#,
            "",
        );
        assert_eq!(effect, Effect::Allow);
        let (_, effect) = read(
            "PreToolUse",
            Ended::Exited(0),
            br#"{"decision": "ask"}"#,
            "",
        );
        assert!(matches!(effect, Effect::Ask(_)));
        let (run, effect) = read(
            "PostToolUse",
            Ended::Exited(0),
            br#"{"additionalContext": "formatted", "systemMessage": "ran fmt"}"#,
            "",
        );
        assert_eq!(effect, Effect::Context("formatted".into()));
        assert_eq!(run.message.as_deref(), Some("ran fmt"));
        let (_, effect) = read(
            "Stop",
            Ended::Exited(0),
            br#"{"decision": "block", "reason": "run the tests first"}"#,
            "",
        );
        assert_eq!(effect, Effect::Block("run the tests first".into()));

        let (run, effect) = read("PostToolUse", Ended::Exited(0), b"{not json", "");
        assert_eq!((run.outcome, effect), (HookOutcome::Error, Effect::None));
        let (run, effect) = read("PostToolUse", Ended::Exited(0), b"\xff\xfe\x00garbage", "");
        assert_eq!((run.outcome, effect), (HookOutcome::Error, Effect::None));
        assert!(run.message.unwrap().contains("not UTF-8"));
        let (run, effect) = read(
            "PostToolUse",
            Ended::Exited(0),
            br#"{"decision": "maybe"}"#,
            "",
        );
        assert_eq!((run.outcome, effect), (HookOutcome::Error, Effect::None));
    }

    #[test]
    fn escape_sequences_never_reach_the_model() {
        let (_, effect) = read(
            "SessionStart",
            Ended::Exited(0),
            b"\x1b[31mred\x1b[0m rules\x07",
            "",
        );
        assert_eq!(effect, Effect::Context("red rules".into()));
        assert_eq!(
            strip_controls("a\x1b]0;title\x07b\x1b]8;;x\x1b\\c\r\n"),
            "abc\n"
        );
    }
}
