//! Text and JSON rendering of sessions, shared by `pith replay`, `pith sessions` and the
//! REPL's `/resume` and `/sessions`.
//!
//! Text is plain (no colour, no terminal control), so it can be piped and diffed. Long
//! tool results are cut to [`RESULT_PREVIEW_LINES`] lines with a count of what was left
//! out; `--format json` always carries everything.

mod checkpoints;

use std::io::{self, Write};

use pith_core::thousands;
use pith_core::{Message, Part, Role, Usage};
use serde::Serialize;

use crate::event::CompactionTrigger;
use crate::items::{summarize_arguments, TranscriptItem};
use crate::listing::SessionSummary;
use crate::projection::{CompactionEntry, MicroCompactionEntry, UiEntry};
use crate::read::ReadReport;
use pith_core::human_bytes;

/// Lines of a tool result shown in text replay.
pub const RESULT_PREVIEW_LINES: usize = 40;

/// Writes the UI view as text. A subagent's transcript shows as one line under the
/// `task` result that ran it (see [`ui_text_nested`] to show it in full).
pub fn ui_text(entries: &[UiEntry], out: &mut dyn Write) -> io::Result<()> {
    ui_text_nested(entries, out, &|_| None)
}

/// Loads a subagent's UI entries by session id for [`ui_text_nested`]: `None` leaves the
/// subagent collapsed, `Some(Err)` says why it cannot be shown.
pub type ChildEntries<'a> = &'a dyn Fn(&str) -> Option<Result<Vec<UiEntry>, String>>;

/// [`ui_text`], with each subagent `children` loads shown nested (indented with `  │ `)
/// under the `task` result that ran it; the others collapsed to one line.
pub fn ui_text_nested(
    entries: &[UiEntry],
    out: &mut dyn Write,
    children: ChildEntries<'_>,
) -> io::Result<()> {
    ui_text_at(entries, out, children, 0)
}

/// Levels of subagents shown nested; deeper ones stay collapsed (a transcript that names
/// itself as its child must not recurse forever).
pub const MAX_NESTING: usize = 8;

fn ui_text_at(
    entries: &[UiEntry],
    out: &mut dyn Write,
    children: ChildEntries<'_>,
    depth: usize,
) -> io::Result<()> {
    for entry in entries {
        match entry {
            UiEntry::SessionStarted(header) => {
                writeln!(out, "session {}", header.session_id)?;
                writeln!(out, "  started {} in {}", header.ts, header.cwd.display())?;
                writeln!(out, "  model {}/{}", header.provider, header.model)?;
            }
            UiEntry::User { text, ts, .. } => {
                writeln!(out)?;
                writeln!(out, "> user  [{ts}]")?;
                write_indented(out, text, "  ", usize::MAX)?;
            }
            UiEntry::Assistant {
                items,
                usage,
                interrupted,
                error,
                ..
            } => {
                writeln!(out)?;
                writeln!(out, "< assistant")?;
                for item in items {
                    write_item(out, item)?;
                    if let TranscriptItem::ToolResult {
                        child_session: Some(child),
                        ..
                    } = item
                    {
                        write_child(out, child, children, depth)?;
                    }
                }
                if *interrupted {
                    writeln!(out, "  [interrupted by the user]")?;
                }
                if let Some(error) = error {
                    writeln!(out, "  [error: {error}]")?;
                }
                if let Some(usage) = usage {
                    writeln!(out, "  ({})", usage_text(usage))?;
                }
            }
            UiEntry::Compaction(entry) => write_compaction(out, entry)?,
            UiEntry::MicroCompaction(entry) => write_micro_compaction(out, entry)?,
            UiEntry::ModelSwitched {
                provider, model, ..
            } => writeln!(out, "  -- model switched to {provider}/{model}")?,
            UiEntry::Hook(entry) => write_hook(out, &entry.run)?,
            UiEntry::Checkpoint(entry) => checkpoints::write_checkpoint(out, entry)?,
            UiEntry::Rewind(entry) => checkpoints::write_rewind(out, entry)?,
            UiEntry::Pin { change, .. } => match change.action {
                crate::pin::PinAction::Add => writeln!(out, "  -- pinned {}", change.pin.label())?,
                crate::pin::PinAction::Remove => {
                    writeln!(out, "  -- unpinned {}", change.pin.label())?
                }
            },
        }
    }
    Ok(())
}

/// A compaction: how it ran, the tokens before and after, a manual one's summary, the
/// ledger it carried and the files it re-attached.
fn write_compaction(out: &mut dyn Write, entry: &CompactionEntry) -> io::Result<()> {
    writeln!(out)?;
    let how = match entry.trigger {
        CompactionTrigger::Manual => "manually",
        CompactionTrigger::Auto => "automatically",
    };
    writeln!(
        out,
        "== context compacted {how}: {} -> {} tokens ==",
        thousands(entry.tokens_before),
        thousands(entry.tokens_after)
    )?;
    if let Some(summary) = &entry.visible_summary {
        write_indented(out, summary, "  ", usize::MAX)?;
    }
    if entry.ledger_tokens > 0 {
        writeln!(
            out,
            "  [session ledger carried: {} tokens]",
            thousands(entry.ledger_tokens)
        )?;
    }
    if let Some(ledger) = &entry.ledger {
        write_indented(out, ledger, "  ", usize::MAX)?;
    }
    if !entry.restored_files.is_empty() {
        writeln!(out, "  [re-attached: {}]", entry.restored_files.join(", "))?;
    }
    Ok(())
}

/// A micro-compaction or an overflow fitting, and the tokens it reclaimed.
fn write_micro_compaction(out: &mut dyn Write, entry: &MicroCompactionEntry) -> io::Result<()> {
    let what = match entry.reason {
        pith_core::events::MicroReason::Prune => "old tool output pruned",
        pith_core::events::MicroReason::Overflow => {
            "fitted to the window (oldest messages dropped behind the ledger, largest outputs cut)"
        }
    };
    writeln!(out)?;
    writeln!(
        out,
        "== {what}: {} tokens reclaimed ({} -> {}) ==",
        thousands(entry.tokens_reclaimed),
        thousands(entry.tokens_before),
        thousands(entry.tokens_after)
    )?;
    Ok(())
}

/// A subagent's session under the result of the call that ran it: nested when
/// `children` loads it, else one line.
fn write_child(
    out: &mut dyn Write,
    child: &str,
    children: ChildEntries<'_>,
    depth: usize,
) -> io::Result<()> {
    let loaded = if depth < MAX_NESTING {
        children(child)
    } else {
        None
    };
    match loaded {
        None => writeln!(
            out,
            "    ↳ subagent session {child} (collapsed; --expand shows it)"
        ),
        Some(Err(error)) => writeln!(out, "    ↳ subagent session {child}: {error}"),
        Some(Ok(entries)) => {
            writeln!(out, "    ↳ subagent session {child}:")?;
            let mut nested = Vec::new();
            ui_text_at(&entries, &mut nested, children, depth + 1)?;
            let text = String::from_utf8_lossy(&nested);
            for line in text.lines() {
                if line.is_empty() {
                    writeln!(out, "    │")?;
                } else {
                    writeln!(out, "    │ {line}")?;
                }
            }
            Ok(())
        }
    }
}

/// One line per hook run (`-- hook PreToolUse [bash] `cmd`: block (exit 2, 12 ms)`), then
/// its message, when it has one.
fn write_hook(out: &mut dyn Write, run: &pith_core::HookRun) -> io::Result<()> {
    let matcher = run
        .matcher
        .as_deref()
        .map(|m| format!(" [{m}]"))
        .unwrap_or_default();
    let exit = run
        .exit_code
        .map(|code| format!("exit {code}, "))
        .unwrap_or_default();
    writeln!(
        out,
        "  -- hook {}{matcher} `{}`: {} ({exit}{} ms)",
        run.event,
        run.command,
        run.outcome.as_str(),
        thousands(run.duration_ms)
    )?;
    if let Some(message) = run.message.as_deref().filter(|m| !m.is_empty()) {
        write_indented(out, message, "     ", RESULT_PREVIEW_LINES)?;
    }
    Ok(())
}

fn write_item(out: &mut dyn Write, item: &TranscriptItem) -> io::Result<()> {
    match item {
        TranscriptItem::AssistantText { text } => write_indented(out, text, "  ", usize::MAX),
        TranscriptItem::ToolCall {
            name, arguments, ..
        } => {
            // One line, except a plan: its checklist under it.
            let mut lines = arguments.lines();
            writeln!(out, "  * {name} {}", lines.next().unwrap_or_default())?;
            lines.try_for_each(|line| writeln!(out, "      {line}"))
        }
        TranscriptItem::ToolResult {
            content,
            is_error,
            spill,
            ..
        } => {
            let prefix = if *is_error { "    ! " } else { "    | " };
            write_indented(out, content, prefix, RESULT_PREVIEW_LINES)?;
            if let Some(spill) = spill {
                writeln!(out, "    (raw output: {spill})")?;
            }
            Ok(())
        }
        TranscriptItem::Notice { text } => writeln!(out, "  -- {text}"),
    }
}

/// Writes `text` line by line with `prefix`, at most `max_lines` lines.
fn write_indented(
    out: &mut dyn Write,
    text: &str,
    prefix: &str,
    max_lines: usize,
) -> io::Result<()> {
    let total = text.lines().count();
    for line in text.lines().take(max_lines) {
        writeln!(out, "{prefix}{line}")?;
    }
    if total > max_lines {
        writeln!(
            out,
            "{prefix}[{} more lines; see --format json]",
            total - max_lines
        )?;
    }
    Ok(())
}

/// Writes the model view (projected history) as text.
pub fn model_text(messages: &[Message], out: &mut dyn Write) -> io::Result<()> {
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        writeln!(out, "[{role}]")?;
        for part in &message.parts {
            match part {
                Part::Text { text } => write_indented(out, text, "  ", usize::MAX)?,
                Part::ToolCall(call) => writeln!(
                    out,
                    "  tool_call {} {} {}",
                    call.id,
                    call.name,
                    summarize_arguments(&call.arguments)
                )?,
                Part::ToolResult(result) => {
                    let flag = if result.is_error { " (error)" } else { "" };
                    writeln!(out, "  tool_result {}{flag}", result.call_id)?;
                    write_indented(out, &result.content, "    ", usize::MAX)?;
                }
                Part::Reasoning(reasoning) => {
                    let sealed = if reasoning.is_replayable() {
                        ", signed"
                    } else {
                        ""
                    };
                    writeln!(out, "  reasoning ({}{sealed})", reasoning.origin)?;
                    write_indented(out, &reasoning.text, "    ", usize::MAX)?;
                }
                Part::Image(image) => writeln!(
                    out,
                    "  image {} {} {}\u{d7}{}",
                    image.path, image.media_type, image.width, image.height
                )?,
            }
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct UiDocument<'a> {
    #[serde(rename = "view")]
    view: &'static str,
    #[serde(rename = "entries")]
    entries: &'a [UiEntry],
    #[serde(rename = "report")]
    report: &'a ReadReport,
}

#[derive(Serialize)]
struct ModelDocument<'a> {
    #[serde(rename = "view")]
    view: &'static str,
    #[serde(rename = "messages")]
    messages: &'a [Message],
    #[serde(rename = "report")]
    report: &'a ReadReport,
}

/// Writes the UI view as one JSON document `{"view":"ui","entries":[…],"report":{…}}`.
pub fn ui_json(entries: &[UiEntry], report: &ReadReport, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(
        &mut *out,
        &UiDocument {
            view: "ui",
            entries,
            report,
        },
    )?;
    writeln!(out)
}

/// Writes the model view as one JSON document `{"view":"model","messages":[…],…}`.
pub fn model_json(
    messages: &[Message],
    report: &ReadReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    serde_json::to_writer_pretty(
        &mut *out,
        &ModelDocument {
            view: "model",
            messages,
            report,
        },
    )?;
    writeln!(out)
}

/// What a session list prices its sessions with: `provider/model` → prices.
pub type PriceLookup<'a> = &'a dyn Fn(&str) -> Option<pith_core::Pricing>;

/// Writes a session list as an aligned table; `prices` gives each session's cost.
pub fn sessions_table(
    sessions: &[SessionSummary],
    prices: PriceLookup<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "{:<36}  {:<19}  {:<19}  {:>5}  {:>9}  {:>8}  {:>5}  {:<24}  CWD",
        "ID", "STARTED", "LAST ACTIVITY", "TURNS", "SIZE", "COST", "CACHE", "MODEL"
    )?;
    for s in sessions {
        let model = match (&s.provider, &s.model) {
            (Some(p), Some(m)) => format!("{p}/{m}"),
            _ => "?".to_owned(),
        };
        let cost = match s.spend.cost(prices) {
            Some(cost) => format!("${cost:.2}"),
            None => "?".to_owned(),
        };
        let cache = match s.spend.cache_hit_rate() {
            Some(rate) => format!("{:.0}%", rate * 100.0),
            None => "-".to_owned(),
        };
        writeln!(
            out,
            "{:<36}  {:<19}  {:<19}  {:>5}  {:>9}  {:>8}  {:>5}  {:<24}  {}",
            s.id,
            short_ts(s.started.as_deref()),
            short_ts(s.last_activity.as_deref()),
            s.turns,
            human_bytes(s.size_bytes),
            cost,
            cache,
            model,
            s.cwd
                .as_ref()
                .map_or_else(|| "?".to_owned(), |c| c.display().to_string())
        )?;
        if let Some(problem) = &s.problem {
            writeln!(out, "  warning: {problem}")?;
        }
    }
    Ok(())
}

/// One session of the JSON list: its summary, its cost and cache-hit rate.
#[derive(Serialize)]
struct ListedSession<'a> {
    #[serde(flatten)]
    summary: &'a SessionSummary,
    cost: Option<f64>,
    cache_hit_rate: Option<f64>,
}

/// Writes a session list as a JSON array; `prices` gives each session's cost.
pub fn sessions_json(
    sessions: &[SessionSummary],
    prices: PriceLookup<'_>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let listed: Vec<ListedSession<'_>> = sessions
        .iter()
        .map(|summary| ListedSession {
            summary,
            cost: summary.spend.cost(prices),
            cache_hit_rate: summary.spend.cache_hit_rate(),
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &listed)?;
    writeln!(out)
}

/// `2026-11-29T13:10:15.123Z` → `2026-11-29 13:10:15`.
fn short_ts(ts: Option<&str>) -> String {
    match ts {
        Some(ts) if ts.len() >= 19 => ts[..19].replacen('T', " ", 1),
        Some(ts) => ts.to_owned(),
        None => "?".to_owned(),
    }
}

fn usage_text(usage: &Usage) -> String {
    format!(
        "usage: {} input ({} cached), {} output tokens",
        thousands(usage.input_tokens),
        thousands(usage.cached_input_tokens),
        thousands(usage.output_tokens)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(entries: &[UiEntry]) -> String {
        let mut out = Vec::new();
        ui_text(entries, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn task_turn(child: &str, answer: &str) -> UiEntry {
        UiEntry::Assistant {
            seq: 3,
            ts: "t".into(),
            items: vec![
                TranscriptItem::ToolCall {
                    call_id: "c".into(),
                    name: "task".into(),
                    arguments: "{}".into(),
                },
                TranscriptItem::ToolResult {
                    call_id: "c".into(),
                    content: answer.into(),
                    is_error: false,
                    spill: None,
                    child_session: Some(child.into()),
                },
            ],
            usage: None,
            interrupted: false,
            error: None,
        }
    }

    #[test]
    fn subagents_are_collapsed_unless_loaded_and_nested_when_they_are() {
        let parent = [task_turn("kid", "the report")];
        let collapsed = render(&parent);
        assert!(
            collapsed.contains(
                "    | the report\n    ↳ subagent session kid (collapsed; --expand shows it)\n"
            ),
            "{collapsed}"
        );
        let children = |id: &str| -> Option<Result<Vec<UiEntry>, String>> {
            match id {
                "kid" => Some(Ok(vec![UiEntry::Assistant {
                    seq: 3,
                    ts: "t".into(),
                    items: vec![TranscriptItem::AssistantText {
                        text: "grepped around".into(),
                    }],
                    usage: None,
                    interrupted: false,
                    error: None,
                }])),
                // A transcript that names itself stops at the nesting limit.
                "loop" => Some(Ok(vec![task_turn("loop", "again")])),
                _ => Some(Err("cannot read it: gone".into())),
            }
        };
        let mut out = Vec::new();
        ui_text_nested(&parent, &mut out, &children).unwrap();
        let nested = String::from_utf8(out).unwrap();
        assert!(
            nested.contains(
                "    ↳ subagent session kid:\n    │\n    │ < assistant\n    │   grepped around\n"
            ),
            "{nested}"
        );
        let mut out = Vec::new();
        ui_text_nested(&[task_turn("gone", "x")], &mut out, &children).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("subagent session gone: cannot read it: gone"));
        let mut out = Vec::new();
        ui_text_nested(&[task_turn("loop", "x")], &mut out, &children).unwrap();
        let looped = String::from_utf8(out).unwrap();
        assert_eq!(
            looped.matches("↳ subagent session loop:").count(),
            MAX_NESTING
        );
        assert!(looped.contains("(collapsed; --expand shows it)"));
    }

    #[test]
    fn compaction_markers_show_tokens_before_and_after() {
        let text = render(&[UiEntry::Compaction(CompactionEntry {
            seq: 5,
            ts: "t".into(),
            trigger: CompactionTrigger::Auto,
            tokens_before: 182_344,
            tokens_after: 12_003,
            visible_summary: None,
            ledger: None,
            ledger_tokens: 0,
            restored_files: Vec::new(),
        })]);
        assert!(
            text.contains("context compacted automatically: 182,344 -> 12,003 tokens"),
            "{text}"
        );
        assert!(!text.contains("ledger"), "{text}");
        let text = render(&[UiEntry::Compaction(CompactionEntry {
            seq: 5,
            ts: "t".into(),
            trigger: CompactionTrigger::Auto,
            tokens_before: 182_344,
            tokens_after: 12_003,
            visible_summary: None,
            ledger: Some(
                "<session_ledger>\n## User messages\n--- message 1\nfix it\n</session_ledger>"
                    .into(),
            ),
            ledger_tokens: 1_834,
            restored_files: vec!["src/lib.rs".into(), "tests/a.rs".into()],
        })]);
        assert!(
            text.contains("[session ledger carried: 1,834 tokens]"),
            "{text}"
        );
        assert!(
            text.contains("[re-attached: src/lib.rs, tests/a.rs]"),
            "{text}"
        );
    }

    #[test]
    fn long_tool_results_are_cut_with_a_count() {
        let content = (1..=100).map(|i| format!("line {i}\n")).collect::<String>();
        let text = render(&[UiEntry::Assistant {
            seq: 3,
            ts: "t".into(),
            items: vec![
                TranscriptItem::ToolCall {
                    call_id: "c".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"seq 100"}"#.into(),
                },
                TranscriptItem::ToolResult {
                    call_id: "c".into(),
                    content,
                    is_error: false,
                    spill: None,
                    child_session: None,
                },
            ],
            usage: None,
            interrupted: false,
            error: None,
        }]);
        assert!(text.contains(r#"* bash {"command":"seq 100"}"#), "{text}");
        assert!(text.contains("| line 40\n"), "{text}");
        assert!(!text.contains("line 41\n"), "{text}");
        assert!(text.contains("[60 more lines"), "{text}");
    }

    #[test]
    fn numbers_and_sizes_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(
            short_ts(Some("2026-11-29T13:10:15.123Z")),
            "2026-11-29 13:10:15"
        );
    }
}
