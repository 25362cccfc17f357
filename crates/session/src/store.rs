//! The session store: creating, locating and opening sessions, and the writer that
//! appends records durably.
//!
//! Layout: `<root>/<project-slug>/<uuid-v7>/transcript.jsonl`, plus `lock` (writer lock,
//! see `lock`), `spill/` (raw tool outputs, created on first use) and, after a crash,
//! `transcript.jsonl.corrupt-<ts>` (a quarantined torn tail). Directories are 0700, files
//! 0600.
//!
//! Write protocol:
//! - [`Session::append`]: one `write` of one complete line on an `O_APPEND` descriptor.
//!   A failed or partial write is truncated away, so the file never holds a torn line
//!   followed by a good one. fsync per [`Durability`] (default: at turn boundaries).
//! - [`Session::append_batch`]: the committed transcript plus the new lines go to a temp
//!   file in the session directory, which is fsynced, renamed over the transcript, and the
//!   directory fsynced: every record of the batch exists, or none does.
//! - Opening a session for writing takes the lock, removes temp files left by a killed
//!   batch, and moves a torn tail (bytes after the last newline) to
//!   `transcript.jsonl.corrupt-<ts>` before anything is appended.
//!
//! Sequence numbers are assigned here, consecutive from 1, and advance only when a write
//! succeeded.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Result, SessionError};
use crate::event::{decode_envelope, encode_line, now_ts, Event};
use crate::externalize::{encode_bounded, DEFAULT_MAX_RECORD_BYTES};
use crate::lock::WriterLock;
use crate::paths::{self, LOCK_FILE, SPILL_DIR, TRANSCRIPT_FILE};
use crate::read::{read_transcript, ReadOptions, Transcript};

/// Prefix and suffix of the temp files `append_batch` writes in the session directory.
const BATCH_TEMP_PREFIX: &str = ".transcript.";
const BATCH_TEMP_SUFFIX: &str = ".tmp";

/// When `append` fsyncs the transcript. Batches are always fsynced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// After every record.
    EveryAppend,
    /// After records that close a turn (`assistant_turn`, compactions, `session_started`);
    /// a `user_message` becomes durable with the turn that answers it.
    #[default]
    TurnBoundary,
    /// Only on [`Session::sync`] and when the handle is dropped.
    Manual,
}

/// What a new session records in its `session_started` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The project's working directory (canonicalised by the store).
    pub cwd: PathBuf,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// Where a new session comes from, as its `session_started` names it.
#[derive(Debug, Default)]
pub(crate) struct Lineage {
    /// A subagent's parent session.
    pub parent: Option<String>,
    /// A fork's source session.
    pub forked_from: Option<String>,
    /// A fork's point in its source.
    pub forked_at_seq: Option<u64>,
    /// The seq of the last record a fork copied.
    pub copied_through_seq: Option<u64>,
}

/// A torn tail moved aside when a session was opened for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    /// Where the bytes went.
    pub path: PathBuf,
    /// How many bytes.
    pub bytes: u64,
}

impl Quarantine {
    /// The warning a front-end prints.
    pub fn warning(&self) -> String {
        format!(
            "the transcript ended with an incomplete record ({} bytes, an interrupted write); moved to {}",
            self.bytes,
            self.path.display()
        )
    }
}

/// The sessions root and the operations that find sessions in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    root: PathBuf,
}

impl SessionStore {
    /// The store at the root named by the environment (see `paths`).
    pub fn from_env() -> Result<Self> {
        Ok(Self::at(paths::sessions_root()?))
    }

    /// The store under the sessions root that `lookup`'s variables name (`PITH_HOME`,
    /// `XDG_DATA_HOME`, `HOME`), for callers that pass their environment explicitly.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let var = |name: &str| lookup(name).map(std::ffi::OsString::from);
        Ok(Self::at(paths::sessions_root_from(
            var("PITH_HOME").as_deref(),
            var("XDG_DATA_HOME").as_deref(),
            var("HOME").as_deref(),
        )?))
    }

    /// The store whose sessions root is `root` (the directory holding project slugs).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The sessions root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding the sessions of the project at `cwd` (which should be
    /// canonical).
    pub fn project_dir(&self, cwd: &Path) -> PathBuf {
        self.root.join(paths::project_slug(cwd))
    }

    /// Creates a session (uuid v7) for `new.cwd`, takes its writer lock and writes its
    /// `session_started` record (seq 1, fsynced).
    pub fn create(&self, new: NewSession) -> Result<Session> {
        self.create_with_parent(new, Lineage::default())
    }

    /// [`SessionStore::create`] for a subagent's session: `session_started` names the
    /// `parent` session, and [`SessionStore::latest_session_id`] never picks it.
    pub fn create_child(&self, new: NewSession, parent: &str) -> Result<Session> {
        let lineage = Lineage {
            parent: Some(parent.to_owned()),
            ..Lineage::default()
        };
        self.create_with_parent(new, lineage)
    }

    pub(crate) fn create_with_parent(&self, new: NewSession, lineage: Lineage) -> Result<Session> {
        let cwd = fs::canonicalize(&new.cwd)
            .map_err(|e| SessionError::io("cannot resolve the working directory", &new.cwd, e))?;
        let id = uuid::Uuid::now_v7().to_string();
        let project = self.project_dir(&cwd);
        let dir = project.join(&id);
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| SessionError::io("cannot create session directory", &dir, e))?;
        sync_dir(&project)?;
        sync_dir(&self.root)?;
        let lock = WriterLock::acquire(&dir.join(LOCK_FILE), &id)?;
        let transcript_path = dir.join(TRANSCRIPT_FILE);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&transcript_path)
            .map_err(|e| SessionError::io("cannot create transcript", &transcript_path, e))?;
        sync_dir(&dir)?;
        let mut session = Session {
            id: id.clone(),
            dir,
            transcript_path,
            file,
            len: 0,
            next_seq: 1,
            durability: Durability::default(),
            unsynced: false,
            poisoned: None,
            quarantine: None,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            _lock: lock,
        };
        session.append(Event::SessionStarted {
            session_id: id,
            cwd: PathBuf::from(cwd.to_string_lossy().into_owned()),
            provider: new.provider,
            model: new.model,
            pith_version: env!("CARGO_PKG_VERSION").to_owned(),
            parent_session: lineage.parent,
            forked_from: lineage.forked_from,
            forked_at_seq: lineage.forked_at_seq,
            copied_through_seq: lineage.copied_through_seq,
        })?;
        Ok(session)
    }

    /// The session directory for `query`: a session id, a unique prefix of one, a
    /// session directory or a `transcript.jsonl` path.
    pub fn locate(&self, query: &str) -> Result<PathBuf> {
        let as_path = Path::new(query);
        if query.contains('/') || as_path.exists() {
            if as_path.is_dir() && as_path.join(TRANSCRIPT_FILE).is_file() {
                return Ok(as_path.to_path_buf());
            }
            if as_path.is_file() {
                if let Some(parent) = as_path.parent() {
                    return Ok(if parent.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        parent.to_path_buf()
                    });
                }
            }
            return Err(SessionError::NotFound {
                query: query.to_owned(),
            });
        }
        let mut exact = None;
        let mut by_prefix = Vec::new();
        for dir in self.session_dirs(None)? {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if name == query {
                exact = Some(dir.clone());
            } else if !query.is_empty() && name.starts_with(query) {
                by_prefix.push(dir.clone());
            }
        }
        if let Some(dir) = exact {
            return Ok(dir);
        }
        match by_prefix.len() {
            0 => Err(SessionError::NotFound {
                query: query.to_owned(),
            }),
            1 => Ok(by_prefix.remove(0)),
            _ => Err(SessionError::Ambiguous {
                query: query.to_owned(),
                candidates: by_prefix
                    .iter()
                    .filter_map(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect(),
            }),
        }
    }

    /// The transcript file for `query` (see [`SessionStore::locate`]); a path to any file
    /// is taken as the transcript itself.
    pub fn locate_transcript(&self, query: &str) -> Result<PathBuf> {
        let as_path = Path::new(query);
        if as_path.is_file() {
            return Ok(as_path.to_path_buf());
        }
        Ok(self.locate(query)?.join(TRANSCRIPT_FILE))
    }

    /// Reads a session's transcript without taking the writer lock (safe while another
    /// process writes it: a half-written last line is reported as a torn tail).
    pub fn read(&self, query: &str, options: ReadOptions) -> Result<Transcript> {
        read_transcript(&self.locate_transcript(query)?, options)
    }

    /// Opens an existing session for writing, continuing its sequence numbers. Takes the
    /// writer lock, removes temp files of a killed `append_batch` and quarantines a torn
    /// tail (see [`Session::quarantine`]).
    pub fn open(&self, query: &str) -> Result<Session> {
        Session::open_dir(&self.locate(query)?)
    }

    /// Session directories, of one project or of all.
    pub(crate) fn session_dirs(&self, project: Option<&Path>) -> Result<Vec<PathBuf>> {
        let project_dirs = match project {
            Some(cwd) => vec![self.project_dir(cwd)],
            None => list_dirs(&self.root)?,
        };
        let mut sessions = Vec::new();
        for project_dir in project_dirs {
            sessions.extend(list_dirs(&project_dir)?);
        }
        Ok(sessions)
    }
}

/// Subdirectories of `dir`; a missing `dir` has none.
fn list_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::io("cannot list", dir, e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| SessionError::io("cannot list", dir, e))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// An open session holding the writer lock. Dropping it fsyncs pending records
/// (best effort) and releases the lock.
#[derive(Debug)]
pub struct Session {
    id: String,
    dir: PathBuf,
    transcript_path: PathBuf,
    file: File,
    /// Committed length of the transcript in bytes.
    len: u64,
    next_seq: u64,
    durability: Durability,
    unsynced: bool,
    poisoned: Option<String>,
    quarantine: Option<Quarantine>,
    /// Largest record line written (see `externalize`).
    max_record_bytes: usize,
    _lock: WriterLock,
}

impl Session {
    /// Opens the session in `dir` for writing (see [`SessionStore::open`]).
    pub fn open_dir(dir: &Path) -> Result<Session> {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string());
        let transcript_path = dir.join(TRANSCRIPT_FILE);
        if !transcript_path.is_file() {
            return Err(SessionError::NotFound {
                query: dir.display().to_string(),
            });
        }
        let lock = WriterLock::acquire(&dir.join(LOCK_FILE), &id)?;
        remove_stale_batch_files(dir)?;
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&transcript_path)
            .map_err(|e| SessionError::io("cannot open transcript", &transcript_path, e))?;
        let tail = scan_tail(&mut file)
            .map_err(|e| SessionError::io("cannot read transcript", &transcript_path, e))?;
        let quarantine = if tail.torn_bytes > 0 {
            Some(quarantine_tail(dir, &transcript_path, &mut file, &tail)?)
        } else {
            None
        };
        let next_seq = match &tail.last_line {
            None => {
                return Err(SessionError::NotContinuable {
                    id,
                    reason: "it has no committed record (its creation was interrupted)".into(),
                })
            }
            Some(line) => {
                let (seq, _, _) =
                    decode_envelope(line).map_err(|problem| SessionError::NotContinuable {
                        id: id.clone(),
                        reason: format!("its last record is unreadable: {problem}"),
                    })?;
                seq + 1
            }
        };
        Ok(Session {
            id,
            dir: dir.to_path_buf(),
            transcript_path,
            file,
            len: tail.committed_len,
            next_seq,
            durability: Durability::default(),
            unsynced: false,
            poisoned: None,
            quarantine,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            _lock: lock,
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The transcript file.
    pub fn transcript_path(&self) -> &Path {
        &self.transcript_path
    }

    /// The directory for raw tool outputs, created (0700) on first call.
    pub fn spill_dir(&self) -> Result<PathBuf> {
        let spill = self.dir.join(SPILL_DIR);
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&spill)
            .map_err(|e| SessionError::io("cannot create spill directory", &spill, e))?;
        Ok(spill)
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The torn tail moved aside when this session was opened, if there was one: the
    /// front-end shows [`Quarantine::warning`].
    pub fn quarantine(&self) -> Option<&Quarantine> {
        self.quarantine.as_ref()
    }

    /// Sets the largest record line written (at most [`crate::read::MAX_LINE_BYTES`]):
    /// larger records store their largest payloads beside the transcript.
    pub fn set_max_record_bytes(&mut self, bytes: usize) {
        self.max_record_bytes = bytes.clamp(64 * 1024, crate::read::MAX_LINE_BYTES);
    }

    /// The line of `event` as record `seq`, within the record bound.
    fn encode(&self, seq: u64, ts: &str, event: &Event) -> Result<String> {
        encode_bounded(event, seq, &self.dir, self.max_record_bytes, |event| {
            encode_line(seq, ts, event)
        })
    }

    /// Changes when `append` fsyncs.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// Reads this session's transcript back.
    pub fn read(&self, options: ReadOptions) -> Result<Transcript> {
        read_transcript(&self.transcript_path, options)
    }

    /// Appends one record with one write; returns its sequence number. On error nothing
    /// was appended and the sequence number is not used.
    pub fn append(&mut self, event: Event) -> Result<u64> {
        self.check_writable()?;
        let seq = self.next_seq;
        let line = self.encode(seq, &now_ts(), &event)?;
        if let Err(source) = self.file.write_all(line.as_bytes()) {
            // Roll a partial write back so no later record lands after a torn line.
            if let Err(truncate) = self.file.set_len(self.len) {
                self.poisoned = Some(format!(
                    "a failed append could not be rolled back ({truncate})"
                ));
            }
            return Err(SessionError::io(
                "cannot append to",
                &self.transcript_path,
                source,
            ));
        }
        self.len += line.len() as u64;
        self.next_seq += 1;
        self.unsynced = true;
        let sync_now = match self.durability {
            Durability::EveryAppend => true,
            Durability::TurnBoundary => event.ends_turn(),
            Durability::Manual => false,
        };
        if sync_now {
            self.sync()?;
        }
        Ok(seq)
    }

    /// Appends several records atomically (e.g. a checkpoint and its
    /// `compaction_applied`): after a crash at any instant either all of them are in the
    /// transcript or none is. Returns their sequence numbers. Cost is a copy of the
    /// transcript (in-kernel where the file system allows).
    pub fn append_batch(&mut self, events: Vec<Event>) -> Result<Vec<u64>> {
        self.check_writable()?;
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let ts = now_ts();
        let first = self.next_seq;
        let mut lines = String::new();
        for (offset, event) in events.iter().enumerate() {
            lines.push_str(&self.encode(first + offset as u64, &ts, event)?);
        }
        let mut temp = tempfile::Builder::new()
            .prefix(BATCH_TEMP_PREFIX)
            .suffix(BATCH_TEMP_SUFFIX)
            .tempfile_in(&self.dir)
            .map_err(|e| SessionError::io("cannot create a temp file in", &self.dir, e))?;
        let temp_path = temp.path().to_path_buf();
        let write = |temp: &mut tempfile::NamedTempFile| -> io::Result<()> {
            let mut committed = File::open(&self.transcript_path)?.take(self.len);
            let copied = io::copy(&mut committed, temp.as_file_mut())?;
            if copied != self.len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "transcript shrank while copying ({copied} of {} bytes)",
                        self.len
                    ),
                ));
            }
            temp.as_file_mut().write_all(lines.as_bytes())?;
            temp.as_file().sync_all()
        };
        write(&mut temp)
            .map_err(|e| SessionError::io("cannot write batch temp file", &temp_path, e))?;
        temp.persist(&self.transcript_path).map_err(|e| {
            SessionError::io("cannot rename batch over", &self.transcript_path, e.error)
        })?;
        // Committed: the rename is visible to every reader from here on.
        self.len += lines.len() as u64;
        self.next_seq += events.len() as u64;
        self.unsynced = false;
        let reopened = OpenOptions::new().append(true).open(&self.transcript_path);
        match reopened {
            Ok(file) => self.file = file,
            Err(e) => {
                self.poisoned = Some(format!("the transcript could not be reopened ({e})"));
            }
        }
        if let Err(e) = sync_dir(&self.dir) {
            self.poisoned = Some(format!("the session directory could not be synced ({e})"));
            return Err(e);
        }
        Ok((first..self.next_seq).collect())
    }

    /// fsyncs records appended since the last sync.
    pub fn sync(&mut self) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        if let Err(e) = self.file.sync_data() {
            // After a failed fsync the page cache state is unknown: stop writing.
            self.poisoned = Some(format!("fsync failed ({e})"));
            return Err(SessionError::io("cannot fsync", &self.transcript_path, e));
        }
        self.unsynced = false;
        Ok(())
    }

    fn check_writable(&self) -> Result<()> {
        match &self.poisoned {
            Some(reason) => Err(SessionError::Poisoned {
                id: self.id.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.unsynced {
            let _ = self.file.sync_data();
        }
    }
}

/// What the end of a transcript looks like.
struct Tail {
    /// Length up to and including the last newline.
    committed_len: u64,
    /// Bytes after the last newline.
    torn_bytes: u64,
    /// The last complete line, without its newline.
    last_line: Option<String>,
}

/// Finds the last newline and the last complete line by reading backwards, so opening a
/// large transcript costs the size of its last record, not of the file.
fn scan_tail(file: &mut File) -> io::Result<Tail> {
    let file_len = file.metadata()?.len();
    let Some(last_newline) = rfind_newline(file, file_len)? else {
        return Ok(Tail {
            committed_len: 0,
            torn_bytes: file_len,
            last_line: None,
        });
    };
    let committed_len = last_newline + 1;
    let line_start = rfind_newline(file, last_newline)?.map_or(0, |pos| pos + 1);
    let mut line = vec![0u8; (last_newline - line_start) as usize];
    file.seek(SeekFrom::Start(line_start))?;
    file.read_exact(&mut line)?;
    Ok(Tail {
        committed_len,
        torn_bytes: file_len - committed_len,
        last_line: Some(String::from_utf8_lossy(&line).into_owned()),
    })
}

/// Position of the last `\n` before byte `end`.
fn rfind_newline(file: &mut File, end: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 64 * 1024;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut chunk_end = end;
    while chunk_end > 0 {
        let chunk_start = chunk_end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(chunk_end - chunk_start) as usize];
        file.seek(SeekFrom::Start(chunk_start))?;
        file.read_exact(chunk)?;
        if let Some(pos) = chunk.iter().rposition(|b| *b == b'\n') {
            return Ok(Some(chunk_start + pos as u64));
        }
        chunk_end = chunk_start;
    }
    Ok(None)
}

/// Moves the torn tail to `transcript.jsonl.corrupt-<ts>` (written and fsynced first),
/// then truncates the transcript to its committed length.
fn quarantine_tail(
    dir: &Path,
    transcript: &Path,
    file: &mut File,
    tail: &Tail,
) -> Result<Quarantine> {
    let mut bytes = Vec::with_capacity(tail.torn_bytes as usize);
    file.seek(SeekFrom::Start(tail.committed_len))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| SessionError::io("cannot read the torn tail of", transcript, e))?;
    let stamp: String = now_ts()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let mut attempt = 0u32;
    let (path, mut out) = loop {
        let name = match attempt {
            0 => format!("{TRANSCRIPT_FILE}.corrupt-{stamp}"),
            n => format!("{TRANSCRIPT_FILE}.corrupt-{stamp}-{n}"),
        };
        let path = dir.join(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(out) => break (path, out),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 1000 => attempt += 1,
            Err(e) => return Err(SessionError::io("cannot create quarantine file", &path, e)),
        }
    };
    out.write_all(&bytes)
        .and_then(|()| out.sync_all())
        .map_err(|e| SessionError::io("cannot write quarantine file", &path, e))?;
    sync_dir(dir)?;
    file.set_len(tail.committed_len)
        .and_then(|()| file.sync_all())
        .map_err(|e| SessionError::io("cannot truncate the torn tail of", transcript, e))?;
    Ok(Quarantine {
        path,
        bytes: bytes.len() as u64,
    })
}

/// Removes temp files of an `append_batch` that never reached its rename. Only called
/// with the writer lock held, so no live batch can be affected.
fn remove_stale_batch_files(dir: &Path) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| SessionError::io("cannot list", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(BATCH_TEMP_PREFIX) && name.ends_with(BATCH_TEMP_SUFFIX) {
            let path = entry.path();
            fs::remove_file(&path)
                .map_err(|e| SessionError::io("cannot remove stale temp file", &path, e))?;
        }
    }
    Ok(())
}

/// fsyncs a directory so a rename or a new entry in it survives a power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SessionError::io("cannot fsync directory", dir, e))
}
