//! Session listing for `pith sessions` and `/sessions`: one summary per session, newest
//! activity first. Listing reads each transcript's envelopes, and of the records that
//! spent something only the fields that say what ([`crate::spend`]), not their messages;
//! a session whose transcript cannot be read is listed with the problem instead of
//! failing the whole list.

use std::path::{Path, PathBuf};

use pith_core::{ChildRun, Usage};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::event::{decode_envelope, decode_line, Event, Record};
use crate::paths::TRANSCRIPT_FILE;
use crate::spend::{SessionSpend, SpendFold};
use crate::store::SessionStore;

/// What `pith sessions` shows about one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// Session id (the directory name).
    #[serde(rename = "id")]
    pub id: String,
    /// Session directory.
    #[serde(rename = "dir")]
    pub dir: PathBuf,
    /// `ts` of `session_started`.
    #[serde(rename = "started")]
    pub started: Option<String>,
    /// Working directory from `session_started`.
    #[serde(rename = "cwd")]
    pub cwd: Option<PathBuf>,
    /// Provider from `session_started`.
    #[serde(rename = "provider")]
    pub provider: Option<String>,
    /// Model from `session_started`.
    #[serde(rename = "model")]
    pub model: Option<String>,
    /// For a subagent's session: the session that started it.
    #[serde(rename = "parent_session", skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// The session's title: the first line of its first user message ([`title_of`]).
    #[serde(rename = "title", skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Number of user messages.
    #[serde(rename = "turns")]
    pub turns: u64,
    /// `ts` of the last committed record.
    #[serde(rename = "last_activity")]
    pub last_activity: Option<String>,
    /// Transcript size in bytes.
    #[serde(rename = "size_bytes")]
    pub size_bytes: u64,
    /// What the session's requests spent, by model ([`crate::spend`]); the listing's
    /// `usage` is its total.
    #[serde(skip)]
    pub spend: SessionSpend,
    /// Every request's usage, the subagents' included.
    #[serde(rename = "usage")]
    pub usage: Usage,
    /// Why the transcript could not be summarised fully, if it could not.
    #[serde(rename = "problem", skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The longest title, in characters.
pub const TITLE_CHARS: usize = 80;

/// A session's title from its first user message: the first line with text, cut to
/// [`TITLE_CHARS`] characters with `…`; `None` for a message without text.
pub fn title_of(message: &pith_core::Message) -> Option<String> {
    let text = message.text_content();
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(if line.chars().count() > TITLE_CHARS {
        let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        line.to_owned()
    })
}

/// The fields of an `assistant_turn` the listing reads: its usage and the subagents of
/// its `task` results.
#[derive(Deserialize)]
struct TurnSpend {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    compaction_model_usage: Option<pith_core::ModelUsage>,
    #[serde(default)]
    messages: Vec<MessageChildren>,
}

#[derive(Deserialize)]
struct MessageChildren {
    #[serde(default)]
    parts: Vec<PartChild>,
}

#[derive(Deserialize)]
struct PartChild {
    #[serde(default)]
    child_session: Option<ChildRun>,
}

/// The fields of a `compaction_applied` the listing reads.
#[derive(Deserialize)]
struct CompactionSpend {
    trigger: crate::event::CompactionTrigger,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    model: Option<String>,
}

/// The fields of a `model_switched`.
#[derive(Deserialize)]
struct Switch {
    provider: String,
    model: String,
}

impl SessionStore {
    /// Summaries of the sessions of the project at `project` (canonical cwd), or of all
    /// projects, most recent activity first.
    pub fn list_sessions(&self, project: Option<&Path>) -> Result<Vec<SessionSummary>> {
        let mut summaries: Vec<SessionSummary> = self
            .session_dirs(project)?
            .into_iter()
            .filter(|dir| dir.join(TRANSCRIPT_FILE).is_file())
            .map(|dir| summarize(&dir))
            .collect();
        summaries.sort_by(|a, b| {
            b.last_activity
                .cmp(&a.last_activity)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(summaries)
    }
}

/// Summarises one session directory.
pub fn summarize(dir: &Path) -> SessionSummary {
    let mut summary = SessionSummary {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        dir: dir.to_path_buf(),
        started: None,
        cwd: None,
        provider: None,
        model: None,
        parent_session: None,
        title: None,
        turns: 0,
        last_activity: None,
        size_bytes: 0,
        spend: SessionSpend::default(),
        usage: Usage::default(),
        problem: None,
    };
    let mut fold = SpendFold::default();
    let path = dir.join(TRANSCRIPT_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) => {
            summary.problem = Some(format!("cannot read {}: {err}", path.display()));
            return summary;
        }
    };
    summary.size_bytes = bytes.len() as u64;
    let mut lines = bytes.split(|b| *b == b'\n').peekable();
    let mut line_no = 0usize;
    let mut turn_seqs: Vec<u64> = Vec::new();
    while let Some(raw) = lines.next() {
        line_no += 1;
        if lines.peek().is_none() {
            break; // bytes after the last newline: a torn tail, not committed
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            summary
                .problem
                .get_or_insert(format!("line {line_no} is not UTF-8"));
            continue;
        };
        if line_no == 1 {
            read_header(line, &mut summary, &mut fold);
            continue;
        }
        match decode_envelope(line) {
            Ok((seq, ts, kind)) => {
                read_record(line, seq, &kind, &mut summary, &mut fold, &mut turn_seqs);
                summary.last_activity = Some(ts.into_owned());
            }
            Err(problem) => {
                summary
                    .problem
                    .get_or_insert(format!("line {line_no}: {problem}"));
            }
        }
    }
    summary.turns = turn_seqs.len() as u64;
    summary.spend = fold.finish();
    summary.usage = summary.spend.total();
    summary
}

/// The first line of a transcript: the session's start (who, where, with what model).
fn read_header(line: &str, summary: &mut SessionSummary, fold: &mut SpendFold) {
    match decode_line(line) {
        Ok(record) => {
            if let Event::SessionStarted {
                cwd,
                provider,
                model,
                parent_session,
                copied_through_seq,
                pith_version,
                ..
            } = record.event
            {
                fold.started(&provider, &model, copied_through_seq, &pith_version);
                summary.started = Some(record.ts.clone());
                summary.cwd = Some(cwd);
                summary.provider = Some(provider);
                summary.model = Some(model);
                summary.parent_session = parent_session;
            }
            summary.last_activity = Some(record.ts);
        }
        Err(problem) => {
            summary.problem = Some(format!("line 1: {problem}"));
        }
    }
}

/// One later record, of `kind`: a turn counted (and a conversation rewind's abandoned
/// ones dropped), the title from the first user message, and what it spent.
fn read_record(
    line: &str,
    seq: u64,
    kind: &str,
    summary: &mut SessionSummary,
    fold: &mut SpendFold,
    turn_seqs: &mut Vec<u64>,
) {
    if kind == "user_message" {
        turn_seqs.push(seq);
        if summary.title.is_none() {
            if let Ok(Record {
                event: Event::UserMessage { message },
                ..
            }) = decode_line(line)
            {
                summary.title = title_of(&message);
            }
        }
    } else if kind == "assistant_turn" {
        if let Ok(turn) = serde_json::from_str::<TurnSpend>(line) {
            let children = turn
                .messages
                .iter()
                .flat_map(|m| &m.parts)
                .filter_map(|p| p.child_session.as_ref());
            fold.turn(seq, turn.usage, children);
            fold.compaction_model_usage(seq, turn.compaction_model_usage.as_ref());
        }
    } else if kind == "compaction_applied" {
        if let Ok(compaction) = serde_json::from_str::<CompactionSpend>(line) {
            fold.compaction(
                seq,
                compaction.trigger,
                compaction.usage,
                compaction.model.as_deref(),
            );
        }
    } else if kind == "model_switched" {
        if let Ok(switch) = serde_json::from_str::<Switch>(line) {
            fold.switched(&switch.provider, &switch.model);
        }
    } else if kind == "rewind" {
        // A conversation rewind drops the turns from its target on (the
        // exact line is `crate::line`'s; a listing only counts).
        if let Ok(Record {
            event: Event::Rewind(rewind),
            ..
        }) = decode_line(line)
        {
            if rewind.mode.rewinds_conversation() {
                turn_seqs.retain(|s| *s < rewind.to_seq);
            }
        }
    }
}
