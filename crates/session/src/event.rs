//! The transcript's event schema and its line encoding.
//!
//! One record per line: `{"v":1,"seq":N,"ts":"RFC 3339","kind":"…",…}` where the fields
//! after `kind` are the event's own. Every field and kind name is fixed by an explicit
//! serde attribute and pinned by the exact-JSON tests below: the file format must never
//! change because a Rust identifier was renamed. A kind this version does not know is
//! kept verbatim as [`Event::Unknown`] (forward compatibility); a record with another
//! schema version `v` is refused, because its meaning may have changed.

use std::borrow::Cow;
use std::path::PathBuf;

use pith_core::{Message, ModelUsage, Usage};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, Rewind};
use crate::error::{Result, SessionError};
use crate::items::TranscriptItem;

/// The schema version this pith writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

pub use pith_core::CompactionTrigger;

pub(crate) fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum Event {
    /// First record of every transcript.
    #[serde(rename = "session_started")]
    SessionStarted {
        /// The session id (uuid v7).
        #[serde(rename = "session_id")]
        session_id: String,
        /// The working directory the session belongs to (canonical).
        #[serde(rename = "cwd")]
        cwd: PathBuf,
        /// Provider name, e.g. `openai`.
        #[serde(rename = "provider")]
        provider: String,
        /// Model id.
        #[serde(rename = "model")]
        model: String,
        /// Version of pith that started the session.
        #[serde(rename = "pith_version")]
        pith_version: String,
        /// For a subagent's session: the session whose `task` call started it.
        #[serde(
            rename = "parent_session",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        parent_session: Option<String>,
        /// For a fork (`session/fork` of `pith acp`): the session whose records it
        /// starts with.
        #[serde(
            rename = "forked_from",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        forked_from: Option<String>,
        /// For a fork taken at a point (`pith run --fork <session>@<turn>`): the `seq`
        /// of the source record the fork stops before (the records copied are those
        /// before it). Absent for a fork of every record.
        #[serde(
            rename = "forked_at_seq",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        forked_at_seq: Option<u64>,
        /// For a fork: the seq of the last record copied from the source (records up to
        /// it are the source's, spent by the source; [`crate::spend`]). Absent when
        /// nothing was copied, and in forks written before pith recorded it.
        #[serde(
            rename = "copied_through_seq",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        copied_through_seq: Option<u64>,
    },
    /// The conversation switched to another model (`/model`): the requests recorded
    /// after this record went to it.
    #[serde(rename = "model_switched")]
    ModelSwitched {
        /// Provider name, e.g. `anthropic`.
        #[serde(rename = "provider")]
        provider: String,
        /// Model id.
        #[serde(rename = "model")]
        model: String,
    },
    /// A message the user sent.
    #[serde(rename = "user_message")]
    UserMessage {
        /// The message (role `user`).
        #[serde(rename = "message")]
        message: Message,
    },
    /// The checkpoint of an assistant turn: what the model produced (including tool calls
    /// and tool results) and what the user saw. Written at the end of a turn, and before
    /// an automatic compaction for the output visible until then.
    #[serde(rename = "assistant_turn")]
    AssistantTurn {
        /// Assistant and tool messages of the turn (or of the part of it checkpointed).
        #[serde(rename = "messages")]
        messages: Vec<Message>,
        /// Visible transcript items.
        #[serde(rename = "items", default)]
        items: Vec<TranscriptItem>,
        /// Usage summed over the turn's requests, when reported.
        #[serde(rename = "usage", default)]
        usage: Option<Usage>,
        /// True when the user interrupted the turn.
        #[serde(rename = "interrupted", default)]
        interrupted: bool,
        /// The error that ended the turn, if any.
        #[serde(rename = "error", default)]
        error: Option<String>,
        /// Summaries sent to the compaction model and not applied: at its prices, apart.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compaction_model_usage: Option<ModelUsage>,
    },
    /// A compaction replaced the conversation history.
    #[serde(rename = "compaction_applied")]
    CompactionApplied {
        /// Manual `/compact` or automatic.
        #[serde(rename = "trigger")]
        trigger: CompactionTrigger,
        /// The replacement history, system messages excluded.
        #[serde(rename = "messages")]
        messages: Vec<Message>,
        /// The summary text (private for automatic compaction: never rendered live).
        #[serde(rename = "summary")]
        summary: String,
        /// Estimated input tokens before.
        #[serde(rename = "tokens_before")]
        tokens_before: u64,
        /// Estimated input tokens after.
        #[serde(rename = "tokens_after")]
        tokens_after: u64,
        /// Usage of the summary request, when reported.
        #[serde(rename = "usage", default)]
        usage: Option<Usage>,
        /// The compaction model `usage` went to (`provider/model`); absent: the session's.
        #[serde(rename = "model", default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The session ledger the replacement carries (also inside `messages`; kept here
        /// so replay can show it on its own).
        #[serde(rename = "ledger", default, skip_serializing_if = "Option::is_none")]
        ledger: Option<String>,
        /// Its tokens.
        #[serde(rename = "ledger_tokens", default, skip_serializing_if = "is_zero")]
        ledger_tokens: u64,
        /// Files re-attached to the replacement, read fresh from disk.
        #[serde(
            rename = "restored_files",
            default,
            skip_serializing_if = "Vec::is_empty"
        )]
        restored_files: Vec<String>,
    },
    /// A rule-based rewrite replaced the history: a micro-compaction (dedup + prune) or,
    /// with `reason: overflow`, an overflow fit.
    #[serde(rename = "micro_compaction_applied")]
    MicroCompactionApplied {
        /// Why (absent: `prune`).
        #[serde(rename = "reason", default, skip_serializing_if = "is_prune")]
        reason: pith_core::events::MicroReason,
        /// The full replacement history, system messages excluded.
        #[serde(rename = "messages")]
        messages: Vec<Message>,
        /// Estimated tokens reclaimed.
        #[serde(rename = "tokens_reclaimed")]
        tokens_reclaimed: u64,
        /// Estimated input tokens before.
        #[serde(rename = "tokens_before")]
        tokens_before: u64,
        /// Estimated input tokens after.
        #[serde(rename = "tokens_after")]
        tokens_after: u64,
    },
    /// A hook ran (docs/hooks.md): what it was, how it ended, what it printed (squashed).
    /// An audit record: projection into the model view skips it (what a hook added to
    /// the conversation is in the messages of the records around it).
    #[serde(rename = "hook_run")]
    HookRun(pith_core::HookRun),
    /// Workspace paths changed (by a tool call, or outside pith between turns), with the
    /// states the checkpoint store kept. A data record: projection into the model view
    /// skips it; [`crate::turns`] reads it.
    #[serde(rename = "checkpoint")]
    Checkpoint(Checkpoint),
    /// The session returned to the state just before a turn: its files, its
    /// conversation or both. A conversation rewind makes the model history what it was
    /// just before the record `to_seq` ([`crate::line`]).
    #[serde(rename = "rewind")]
    Rewind(Rewind),
    /// The user pinned something or removed a pin: a data record, skipped by projection
    /// (the next user message shows the model a new pin; [`crate::pin`]).
    #[serde(rename = "pin")]
    Pin(crate::pin::PinChange),
    /// A record of a kind this version does not know (written by a newer pith). Kept
    /// verbatim so nothing is lost; skipped by projection. Never written by `append`.
    #[serde(skip)]
    Unknown {
        /// The record's `kind`.
        kind: String,
        /// The whole line as read, without its newline.
        raw: String,
    },
}

/// Kinds this version understands, as written in the `kind` field.
pub const KNOWN_KINDS: [&str; 10] = [
    "session_started",
    "model_switched",
    "user_message",
    "assistant_turn",
    "compaction_applied",
    "micro_compaction_applied",
    "hook_run",
    "checkpoint",
    "rewind",
    "pin",
];

impl Event {
    /// The event's `kind` as written on disk.
    pub fn kind(&self) -> &str {
        match self {
            Event::Unknown { kind, .. } => kind,
            known => static_kind(known),
        }
    }

    /// True for events that close a turn (the default fsync points). A `checkpoint`
    /// is not one (it becomes durable with the turn that made it: no fsync per tool
    /// call); a `rewind` is (the files were already written).
    pub fn ends_turn(&self) -> bool {
        !matches!(
            self,
            Event::UserMessage { .. }
                | Event::HookRun(_)
                | Event::Checkpoint(_)
                | Event::Unknown { .. }
        )
    }

    /// A `user_message` holding one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Event::UserMessage {
            message: Message::user(text),
        }
    }

    /// A `compaction_applied` record from a replacement as the loop installed it: system
    /// messages are removed here, so a persisted replacement can never carry the system
    /// prompt (it is rebuilt for every turn).
    pub fn compaction(
        trigger: CompactionTrigger,
        replacement: &[Message],
        summary: impl Into<String>,
        tokens_before: u64,
        tokens_after: u64,
        usage: Option<Usage>,
    ) -> Self {
        Event::CompactionApplied {
            trigger,
            messages: without_system(replacement),
            summary: summary.into(),
            tokens_before,
            tokens_after,
            usage,
            model: None,
            ledger: None,
            ledger_tokens: 0,
            restored_files: Vec::new(),
        }
    }

    /// The `compaction_applied` record of a compaction the loop is about to install,
    /// with the ledger and files it carries.
    pub fn from_compaction(compaction: &pith_core::Compaction) -> Self {
        Event::CompactionApplied {
            trigger: compaction.trigger,
            messages: without_system(&compaction.replacement),
            summary: compaction.summary.clone(),
            tokens_before: compaction.tokens_before,
            tokens_after: compaction.tokens_after,
            usage: compaction.usage,
            model: compaction.model.clone(),
            ledger: compaction.carried.ledger.clone(),
            ledger_tokens: compaction.carried.ledger_tokens,
            restored_files: compaction.carried.restored_files.clone(),
        }
    }

    /// A `micro_compaction_applied` record from the loop's report (system messages
    /// removed, as for [`Event::compaction`]).
    pub fn micro_compaction(step: &pith_core::events::MicroCompaction) -> Self {
        Event::MicroCompactionApplied {
            reason: step.reason,
            messages: without_system(&step.replacement),
            tokens_reclaimed: step.tokens_reclaimed,
            tokens_before: step.tokens_before,
            tokens_after: step.tokens_after,
        }
    }
}

/// True for the default reason (`prune`), which records and entries leave out.
pub(crate) fn is_prune(reason: &pith_core::events::MicroReason) -> bool {
    *reason == pith_core::events::MicroReason::Prune
}

fn without_system(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .filter(|m| !m.is_system())
        .cloned()
        .collect()
}

/// One line of a transcript: the envelope plus its event.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Sequence number, consecutive from 1, assigned by the store.
    pub seq: u64,
    /// When the record was written (RFC 3339, UTC, millisecond precision).
    pub ts: String,
    /// The event.
    pub event: Event,
}

/// The current time as written in `ts`: fixed width, so string order is time order.
pub fn now_ts() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.millisecond()
    )
}

/// Serialises one record as a line, newline included.
pub fn encode_line(seq: u64, ts: &str, event: &Event) -> Result<String> {
    if let Event::Unknown { kind, .. } = event {
        return Err(SessionError::UnknownKind { kind: kind.clone() });
    }
    let body = serde_json::to_string(event).map_err(|source| SessionError::Encode {
        kind: static_kind(event),
        source,
    })?;
    // `body` is `{"kind":…,…}`: splice the envelope in front of its fields.
    let fields = body.strip_prefix('{').unwrap_or(&body);
    let mut line = String::with_capacity(body.len() + ts.len() + 48);
    line.push_str("{\"v\":");
    line.push_str(&SCHEMA_VERSION.to_string());
    line.push_str(",\"seq\":");
    line.push_str(&seq.to_string());
    line.push_str(",\"ts\":");
    line.push_str(&serde_json::Value::from(ts).to_string());
    line.push(',');
    line.push_str(fields);
    line.push('\n');
    Ok(line)
}

/// The `kind` of a known event (`unknown` for [`Event::Unknown`], whose own kind is not
/// static).
fn static_kind(event: &Event) -> &'static str {
    match event {
        Event::SessionStarted { .. } => "session_started",
        Event::ModelSwitched { .. } => "model_switched",
        Event::UserMessage { .. } => "user_message",
        Event::AssistantTurn { .. } => "assistant_turn",
        Event::CompactionApplied { .. } => "compaction_applied",
        Event::MicroCompactionApplied { .. } => "micro_compaction_applied",
        Event::HookRun(_) => "hook_run",
        Event::Checkpoint(_) => "checkpoint",
        Event::Rewind(_) => "rewind",
        Event::Pin(_) => "pin",
        Event::Unknown { .. } => "unknown",
    }
}

/// The envelope fields of a line, read without materialising the event.
#[derive(Debug, Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(rename = "v")]
    pub v: Option<u64>,
    #[serde(rename = "seq")]
    pub seq: Option<u64>,
    #[serde(rename = "ts", borrow)]
    pub ts: Option<Cow<'a, str>>,
    #[serde(rename = "kind", borrow)]
    pub kind: Option<Cow<'a, str>>,
}

/// Why one line could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineProblem {
    /// Not JSON, not an object, a missing envelope field, or an event that does not match
    /// its kind's schema.
    Malformed(String),
    /// A schema version other than [`SCHEMA_VERSION`].
    UnsupportedVersion(u64),
}

impl std::fmt::Display for LineProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineProblem::Malformed(reason) => f.write_str(reason),
            LineProblem::UnsupportedVersion(v) if *v > u64::from(SCHEMA_VERSION) => write!(
                f,
                "schema version {v} was written by a newer pith (this pith reads version {SCHEMA_VERSION}); upgrade pith to read it"
            ),
            LineProblem::UnsupportedVersion(v) => write!(
                f,
                "schema version {v} is not supported (this pith reads version {SCHEMA_VERSION})"
            ),
        }
    }
}

/// Parses the envelope of a line (`v`, `seq`, `ts`, `kind`), checking the version.
pub(crate) fn decode_envelope(
    line: &str,
) -> Result<(u64, Cow<'_, str>, Cow<'_, str>), LineProblem> {
    let envelope: Envelope<'_> =
        serde_json::from_str(line).map_err(|err| LineProblem::Malformed(err.to_string()))?;
    let v = envelope
        .v
        .ok_or_else(|| LineProblem::Malformed("missing schema version \"v\"".into()))?;
    if v != u64::from(SCHEMA_VERSION) {
        return Err(LineProblem::UnsupportedVersion(v));
    }
    let seq = envelope
        .seq
        .ok_or_else(|| LineProblem::Malformed("missing sequence number \"seq\"".into()))?;
    let ts = envelope
        .ts
        .ok_or_else(|| LineProblem::Malformed("missing timestamp \"ts\"".into()))?;
    let kind = envelope
        .kind
        .ok_or_else(|| LineProblem::Malformed("missing \"kind\"".into()))?;
    Ok((seq, ts, kind))
}

/// Decodes one complete line (without its newline) into a record.
pub fn decode_line(line: &str) -> Result<Record, LineProblem> {
    let (seq, ts, kind) = decode_envelope(line)?;
    let event = if KNOWN_KINDS.contains(&kind.as_ref()) {
        serde_json::from_str::<Event>(line)
            .map_err(|err| LineProblem::Malformed(format!("invalid {kind} record: {err}")))?
    } else {
        Event::Unknown {
            kind: kind.into_owned(),
            raw: line.to_owned(),
        }
    };
    Ok(Record {
        seq,
        ts: ts.into_owned(),
        event,
    })
}

#[cfg(test)]
mod tests;
