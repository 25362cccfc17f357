//! Session listing for `pith sessions` and `/sessions`: one summary per session, newest
//! activity first. Listing reads each transcript's envelopes only (not its events), and a
//! session whose transcript cannot be read is listed with the problem instead of failing
//! the whole list.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Result;
use crate::event::{decode_envelope, decode_line, Event, Record};
use crate::paths::TRANSCRIPT_FILE;
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
    /// Number of user messages.
    #[serde(rename = "turns")]
    pub turns: u64,
    /// `ts` of the last committed record.
    #[serde(rename = "last_activity")]
    pub last_activity: Option<String>,
    /// Transcript size in bytes.
    #[serde(rename = "size_bytes")]
    pub size_bytes: u64,
    /// Why the transcript could not be summarised fully, if it could not.
    #[serde(rename = "problem", skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
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
        turns: 0,
        last_activity: None,
        size_bytes: 0,
        problem: None,
    };
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
            match decode_line(line) {
                Ok(record) => {
                    if let Event::SessionStarted {
                        cwd,
                        provider,
                        model,
                        parent_session,
                        ..
                    } = record.event
                    {
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
            continue;
        }
        match decode_envelope(line) {
            Ok((seq, ts, kind)) => {
                if kind == "user_message" {
                    turn_seqs.push(seq);
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
    summary
}
