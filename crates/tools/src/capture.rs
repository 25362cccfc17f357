//! Squash at capture: the last step of every tool result except `read`.
//!
//! A tool hands its raw text to [`Capture::finish`], which runs core's squash on it
//! (`pith_core::context::squash`); when squash dropped anything, or the tool already had
//! to stream its output to disk because it did not fit in memory, the raw output is kept
//! in the session's spill directory and the result ends with core's spill marker naming
//! the file, so the model can `read` it back: nothing is lost. The squash rules and the
//! marker format live in core; this module owns only the files.
//!
//! An output that did not fit in memory is squashed whole, read back from its spill
//! file, when that file holds all of it and is at most [`Capture::whole_max_bytes`]
//! (16 MiB by default): a failure in the middle of a long log reaches the model. Larger
//! outputs are squashed as head and tail around one exact gap marker.
//!
//! `pith compress` runs this very code (through `bash::model_text`), so it prints the
//! bytes the bash tool would send the model, spill file name aside.
//!
//! Spill files are created `0600` in a `0700` directory and numbered `1.txt`, `2.txt`, …
//! per session, never overwriting an existing file. The number keeps the spill marker
//! short: the model pays for the path in every squashed result (a call-id name cost ~25
//! tokens more), and the transcript already links each call to its spill file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::squash;
use crate::workspace::SPILL_DIR_VAR;

/// The session's spill directory.
#[derive(Debug, Clone)]
pub struct SpillDir {
    dir: PathBuf,
    /// The next number to try; shared by clones so parallel calls rarely collide.
    next: Arc<AtomicU64>,
    /// Markers name files through `$PITH_SPILL_DIR` (else by their path).
    through_variable: bool,
}

impl SpillDir {
    /// Spill files go to `dir` (created `0700` on first use); markers name them
    /// `$PITH_SPILL_DIR/<n>.txt`, which the tools resolve.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            next: Arc::new(AtomicU64::new(0)),
            through_variable: true,
        }
    }

    /// Spill files go to `dir`, and markers name them by their path: for readers that
    /// do not know `$PITH_SPILL_DIR` (`pith compress`).
    pub fn with_path_references(dir: impl Into<PathBuf>) -> Self {
        Self {
            through_variable: false,
            ..Self::new(dir)
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Creates a new, empty, `0600` spill file with the next free number.
    pub fn create(&self) -> io::Result<(PathBuf, File)> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        if self.next.load(Ordering::Relaxed) == 0 {
            // A resumed session continues after the files it already has.
            let existing = std::fs::read_dir(&self.dir)?.count() as u64;
            let _ =
                self.next
                    .compare_exchange(0, existing + 1, Ordering::Relaxed, Ordering::Relaxed);
        }
        for _ in 0..10_000u32 {
            let number = self.next.fetch_add(1, Ordering::Relaxed);
            let path = self.dir.join(format!("{number}.txt"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => return Ok((path, file)),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(err),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("no free spill file name in {}", self.dir.display()),
        ))
    }

    /// How a spill marker names `path`: `$PITH_SPILL_DIR/<name>` for a file directly in
    /// this directory (the tools resolve the variable, the bash tool exports it), else —
    /// or for a directory made [`SpillDir::with_path_references`] — the path itself.
    pub fn reference(&self, path: &Path) -> String {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if self.through_variable && parent == self.dir => {
                format!("${SPILL_DIR_VAR}/{}", name.to_string_lossy())
            }
            _ => path.display().to_string(),
        }
    }

    /// Writes `bytes` to a new spill file and returns its path.
    pub fn write(&self, bytes: &[u8]) -> io::Result<PathBuf> {
        let (path, mut file) = self.create()?;
        file.write_all(bytes)?;
        file.flush()?;
        Ok(path)
    }
}

/// Output that did not fit in memory: the head is [`RawOutput::text`], this is the rest.
#[derive(Debug, Clone, Copy)]
pub struct Overflow<'a> {
    /// Lines neither in the head nor in the tail.
    pub omitted_lines: usize,
    /// The last part of the output (starting at a line boundary).
    pub tail: &'a str,
    /// The spill file holding the full raw output, when it could be written.
    pub spilled: Option<&'a Path>,
    /// True when the spill file holds the whole output (nothing beyond the spill cap
    /// was discarded, no write failed): then it may be squashed whole.
    pub complete: bool,
}

/// The raw result of one tool call, before squash.
#[derive(Debug, Clone, Copy)]
pub struct RawOutput<'a> {
    /// Tool name (selects core's compressor).
    pub tool: &'a str,
    /// The command line, for `bash`.
    pub command: Option<&'a str>,
    /// The exit code, for `bash`.
    pub exit_code: Option<i32>,
    /// The text as the tool produced it (only its head when `overflow` is set).
    pub text: &'a str,
    /// Set when the output was too large to hold (bash); it was streamed to disk.
    pub overflow: Option<Overflow<'a>>,
    /// Status lines appended after the squashed text, never squashed (exit code, notes).
    pub trailer: &'a str,
}

impl<'a> RawOutput<'a> {
    /// A plain result of a non-bash tool.
    pub fn plain(tool: &'a str, text: &'a str) -> Self {
        Self {
            tool,
            command: None,
            exit_code: None,
            text,
            overflow: None,
            trailer: "",
        }
    }
}

/// Outputs up to this size that did not fit in memory are read back from their spill
/// file and squashed whole.
pub const DEFAULT_WHOLE_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Squash + spill for one session.
#[derive(Debug, Clone)]
pub struct Capture {
    spill: SpillDir,
    squash: squash::Config,
    whole_max_bytes: u64,
}

/// What [`Capture::finish_with_stats`] produced.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The text the model sees.
    pub text: String,
    /// What squash did (for an output squashed as head and tail: to the head).
    pub stats: squash::SquashStats,
}

impl Capture {
    /// Capture into `spill` with core's squash settings.
    pub fn new(spill: SpillDir, squash: squash::Config) -> Self {
        Self {
            spill,
            squash,
            whole_max_bytes: DEFAULT_WHOLE_MAX_BYTES,
        }
    }

    /// Sets the largest spilled output that is read back and squashed whole.
    pub fn with_whole_max_bytes(mut self, bytes: u64) -> Self {
        self.whole_max_bytes = bytes;
        self
    }

    /// The largest spilled output that is read back and squashed whole.
    pub fn whole_max_bytes(&self) -> u64 {
        self.whole_max_bytes
    }

    /// The spill directory.
    pub fn spill_dir(&self) -> &SpillDir {
        &self.spill
    }

    fn squash(&self, raw: &RawOutput<'_>, text: &str) -> squash::Squashed {
        squash::apply(raw.tool, raw.command, raw.exit_code, text, &self.squash)
    }

    /// The whole output of an overflow, read back from its spill file and squashed,
    /// when the file is complete, small enough, readable, and the squash is no longer
    /// than the head and tail held in memory.
    fn squash_whole(
        &self,
        raw: &RawOutput<'_>,
        overflow: &Overflow<'_>,
    ) -> Option<squash::Squashed> {
        let path = overflow.spilled.filter(|_| overflow.complete)?;
        let size = std::fs::metadata(path).ok()?.len();
        if size > self.whole_max_bytes {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        let whole = String::from_utf8_lossy(&bytes);
        let squashed = self.squash(raw, &whole);
        (squashed.text.len() <= raw.text.len() + overflow.tail.len()).then_some(squashed)
    }

    /// The text the model sees for `raw`: squashed, then the trailer, then — when
    /// anything of the raw output is not shown — core's spill marker as the last line.
    /// A failure to write the spill file is reported in the text instead of the marker.
    pub fn finish(&self, call_id: &str, raw: RawOutput<'_>) -> String {
        self.finish_with_stats(call_id, raw).text
    }

    /// [`Capture::finish`], with what squash did.
    pub fn finish_with_stats(&self, call_id: &str, raw: RawOutput<'_>) -> Finished {
        let (mut text, stats, spilled) = match raw.overflow {
            None => {
                let squashed = self.squash(&raw, raw.text);
                let spilled = squashed
                    .dropped_anything
                    .then(|| self.spill.write(raw.text.as_bytes()));
                (squashed.text, squashed.stats, spilled)
            }
            Some(overflow) => {
                let spilled = overflow.spilled.map(|path| Ok(path.to_path_buf()));
                match self.squash_whole(&raw, &overflow) {
                    Some(squashed) => (squashed.text, squashed.stats, spilled),
                    None => {
                        // Head and tail are squashed separately around one exact gap
                        // marker, so every count in the result is true of the real output.
                        let head = self.squash(&raw, raw.text);
                        let mut text = head.text;
                        if !text.is_empty() && !text.ends_with('\n') {
                            text.push('\n');
                        }
                        text.push_str(&squash::omitted_marker(overflow.omitted_lines));
                        text.push('\n');
                        text.push_str(&self.squash(&raw, overflow.tail).text);
                        (text, head.stats, spilled)
                    }
                }
            }
        };
        if !raw.trailer.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(raw.trailer);
        }
        let text = match spilled {
            None => text,
            Some(Ok(path)) => {
                tracing::debug!(call_id, path = %path.display(), "raw tool output spilled");
                squash::with_spill_marker(&text, &self.spill.reference(&path))
            }
            Some(Err(err)) => {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "[the full output could not be saved to {}: {err}]",
                    self.spill.path().display()
                ));
                text
            }
        };
        Finished { text, stats }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn spill_files_are_private_unique_and_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path().join("spill"));
        let first = spill.write(b"one").unwrap();
        let second = spill.clone().write(b"two").unwrap();
        assert_ne!(first, second, "a second spill must not overwrite the first");
        assert_eq!(first.file_name().unwrap(), "1.txt");
        assert_eq!(second.file_name().unwrap(), "2.txt");
        // A resumed session (a new SpillDir on the same directory) continues the numbering.
        let third = SpillDir::new(dir.path().join("spill"))
            .write(b"three")
            .unwrap();
        assert_eq!(third.file_name().unwrap(), "3.txt");
        // A name taken behind our back is skipped, not overwritten.
        std::fs::write(dir.path().join("spill/4.txt"), b"foreign").unwrap();
        let fifth = spill.write(b"five").unwrap();
        assert_eq!(fifth.file_name().unwrap(), "5.txt");
        assert_eq!(
            std::fs::read(dir.path().join("spill/4.txt")).unwrap(),
            b"foreign"
        );
        for path in [&first, &second] {
            assert_eq!(path.parent().unwrap(), dir.path().join("spill"));
            let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "spill file {path:?} must be private");
        }
        let dir_mode = std::fs::metadata(dir.path().join("spill"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(std::fs::read(&first).unwrap(), b"one");
        assert_eq!(spill.reference(&first), "$PITH_SPILL_DIR/1.txt");
        let elsewhere = dir.path().join("elsewhere.txt");
        assert_eq!(spill.reference(&elsewhere), elsewhere.display().to_string());
    }

    #[test]
    fn small_output_passes_without_a_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let capture = Capture::new(SpillDir::new(dir.path().join("s")), Default::default());
        let text = capture.finish(
            "c1",
            RawOutput {
                command: Some("echo hi"),
                exit_code: Some(0),
                trailer: "[exit code: 0]",
                ..RawOutput::plain("bash", "hi\n")
            },
        );
        assert_eq!(text, "hi\n[exit code: 0]");
        assert!(!dir.path().join("s").exists(), "no spill dir for nothing");
    }

    #[test]
    fn overflowed_output_keeps_head_and_tail_around_an_exact_gap_and_ends_with_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        let capture = Capture::new(SpillDir::new(dir.path().join("s")), Default::default());
        let spilled = dir.path().join("already.txt");
        let text = capture.finish(
            "c1",
            RawOutput {
                command: Some("yes"),
                overflow: Some(Overflow {
                    omitted_lines: 1_000_000,
                    tail: "y\ny\n",
                    spilled: Some(&spilled),
                    complete: false,
                }),
                trailer: "[timed out]",
                ..RawOutput::plain("bash", "y\ny\n")
            },
        );
        assert_eq!(
            text,
            format!(
                "y\ny\n[1000000 lines omitted]\ny\ny\n[timed out]\n[full output: {}]",
                spilled.display()
            )
        );
    }

    #[test]
    fn a_complete_overflow_is_squashed_whole_from_its_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let capture = Capture::new(SpillDir::new(dir.path().join("s")), Default::default());
        let mut raw = String::new();
        for i in 0..20_000 {
            raw.push_str(&format!("2026-11-29T10:00:00Z INFO step {i} done\n"));
            if i == 10_000 {
                raw.push_str("Traceback (most recent call last):\n  File \"job.py\", line 3, in run\n    go()\nKeyError: 'user_id'\n");
            }
        }
        let spilled = dir.path().join("all.txt");
        std::fs::write(&spilled, &raw).unwrap();
        // What memory held: the first and the last lines only.
        let head = &raw[..raw[..4_000].rfind('\n').unwrap() + 1];
        let tail_start = raw.len() - 2_000;
        let tail = &raw[tail_start + raw[tail_start..].find('\n').unwrap() + 1..];
        let overflow = |complete| RawOutput {
            command: Some("python job.py"),
            exit_code: Some(1),
            overflow: Some(Overflow {
                omitted_lines: 19_000,
                tail,
                spilled: Some(&spilled),
                complete,
            }),
            ..RawOutput::plain("bash", head)
        };
        let whole = capture.finish("c1", overflow(true));
        assert!(whole.contains("KeyError: 'user_id'"), "{whole}");
        assert!(whole.ends_with(&format!("[full output: {}]", spilled.display())));
        // A spill file that lost part of the output is not trusted whole.
        let halves = capture.finish("c2", overflow(false));
        assert!(!halves.contains("KeyError"), "{halves}");
        assert!(halves.contains("[19000 lines omitted]"), "{halves}");
        // Nor is one above the read-back cap.
        let capped = capture
            .clone()
            .with_whole_max_bytes(1_000)
            .finish("c3", overflow(true));
        assert!(!capped.contains("KeyError"), "{capped}");
    }

    #[test]
    fn squashed_output_is_spilled_raw_and_named_last() {
        let dir = tempfile::tempdir().unwrap();
        let capture = Capture::new(SpillDir::new(dir.path().join("s")), Default::default());
        let raw: String = (0..5000).map(|i| format!("{i}\n")).collect();
        let text = capture.finish("c9", RawOutput::plain("bash", &raw));
        let last = text.lines().last().unwrap();
        let path = last
            .strip_prefix("[full output: ")
            .and_then(|l| l.strip_suffix(']'))
            .expect("the spill marker is the last line");
        let name = path
            .strip_prefix("$PITH_SPILL_DIR/")
            .expect("files in the spill dir are named through the variable");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("s").join(name)).unwrap(),
            raw
        );
        assert!(text.len() < raw.len());
    }
}
