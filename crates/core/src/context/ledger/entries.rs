//! What the ledger records: one entry type per section, the disk as it needs to see
//! it ([`FileProbe`]), and what a recorded conversation is replayed as ([`Observed`]).

use crate::context::squash::FailingTest;
use crate::protocol::effect::FileAction;
use crate::protocol::message::Message;

/// The disk as the ledger needs to see it: what a file's content is now, and the file as
/// the `read` tool shows it (for the files re-attached after a compaction). Implemented
/// by the agent over the workspace; simulations have none.
pub trait FileProbe: Send + Sync {
    /// The fingerprint ([`crate::protocol::effect::fingerprint`]) of `path` now; `None` when it
    /// does not exist or cannot be read.
    fn fingerprint(&self, path: &str) -> Option<String>;

    /// `path` as the `read` tool shows it from line `offset` (1-based), at most
    /// `max_bytes`; `None` when it cannot be read as text.
    fn show(&self, path: &str, offset: u64, max_bytes: usize) -> Option<String>;
}

/// One distinct user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    /// The text, verbatim.
    pub text: String,
    /// How many times it was sent.
    pub count: u32,
    /// Observation order of its latest sending.
    pub order: u64,
}

/// What the session did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// The path, relative to the workspace when inside it.
    pub path: String,
    /// The latest action.
    pub last_action: FileAction,
    /// True when the session changed the file at some point.
    pub changed: bool,
    /// True when the model read all of it at some point.
    pub read_whole: bool,
    /// Line ranges read (merged, sorted).
    pub ranges: Vec<(u64, u64)>,
    /// True when the model read an unknown part of it (`tail`, `awk`).
    pub read_partly: bool,
    /// Fingerprint of the content the model last saw or wrote, when known.
    pub seen: Option<String>,
    /// Tool turn of the latest action.
    pub turn: u64,
    /// Observation order of the latest action.
    pub order: u64,
}

/// One shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandEntry {
    /// The command (its first line and a count of the others when it has several).
    pub command: String,
    /// The command as run, for comparing runs.
    pub key: String,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// True when it failed (non-zero exit, signal, timeout, or a tool error).
    pub failed: bool,
    /// The last error line of a failing command's output.
    pub error_line: Option<String>,
    /// The spill file of its full output.
    pub spill: Option<String>,
    /// Tool turn.
    pub turn: u64,
    /// Observation order.
    pub order: u64,
}

/// The failing tests of one test command's latest failing run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// The command as shown.
    pub command: String,
    /// The command as run (the key a later run is matched by).
    pub key: String,
    /// The failing tests, in the runner's order.
    pub failures: Vec<FailingTest>,
    /// Tool turn.
    pub turn: u64,
    /// Observation order.
    pub order: u64,
}

/// One spill file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillEntry {
    /// The path as the marker names it.
    pub path: String,
    /// What produced it: the tool, and the command for shells.
    pub origin: String,
    /// For a shell command's output, the command with its whitespace normalised (as
    /// [`CommandEntry::key`]): a later spill with the same key is a newer run of the same
    /// command, whose output supersedes this one in the rendered ledger.
    pub rerun_key: Option<String>,
    /// Observation order.
    pub order: u64,
}

/// One recorded event, for [`Ledger::rebuild`].
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    /// A message the user sent.
    User(&'a str),
    /// An assistant or tool message.
    Message(&'a Message),
}
