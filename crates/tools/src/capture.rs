//! Squash at capture: the last step of every tool result except `read`.
//!
//! A tool hands its raw text to [`Capture::finish`], which runs core's squash on it
//! (`pith_core::context::squash`); when squash dropped anything, or the tool already had
//! to stream its output to disk because it did not fit in memory, the raw output is kept
//! in the session's spill directory and the result ends with core's spill marker naming
//! the file, so the model can `read` it back: nothing is lost. The squash rules and the
//! marker format live in core; this module owns only the files.
//!
//! Spill files are created `0600` in a `0700` directory, named after the call id (made
//! file-name safe) and the tool, never overwriting an existing file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::squash;

/// The session's spill directory.
#[derive(Debug, Clone)]
pub struct SpillDir {
    dir: PathBuf,
}

impl SpillDir {
    /// Spill files go to `dir` (created `0700` on first use).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Creates a new, empty, `0600` spill file for `call_id`'s `tool` output.
    pub fn create(&self, call_id: &str, tool: &str) -> io::Result<(PathBuf, File)> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let stem = format!("{}.{}", file_safe(call_id), file_safe(tool));
        for attempt in 0..1000u32 {
            let name = if attempt == 0 {
                format!("{stem}.txt")
            } else {
                format!("{stem}-{attempt}.txt")
            };
            let path = self.dir.join(name);
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
            format!("too many spill files named {stem}-N.txt"),
        ))
    }

    /// Writes `bytes` to a new spill file and returns its path.
    pub fn write(&self, call_id: &str, tool: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let (path, mut file) = self.create(call_id, tool)?;
        file.write_all(bytes)?;
        file.flush()?;
        Ok(path)
    }
}

/// Keeps `[A-Za-z0-9_-]`, replaces the rest, and bounds the length, so a hostile call id
/// cannot produce `../` or an over-long file name.
fn file_safe(raw: &str) -> String {
    let cleaned: String = raw
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "call".to_owned()
    } else {
        cleaned
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

/// Squash + spill for one session.
#[derive(Debug, Clone)]
pub struct Capture {
    spill: SpillDir,
    squash: squash::Config,
}

impl Capture {
    /// Capture into `spill` with core's squash settings.
    pub fn new(spill: SpillDir, squash: squash::Config) -> Self {
        Self { spill, squash }
    }

    /// The spill directory.
    pub fn spill_dir(&self) -> &SpillDir {
        &self.spill
    }

    fn squash(&self, raw: &RawOutput<'_>, text: &str) -> squash::Squashed {
        squash::apply(raw.tool, raw.command, raw.exit_code, text, &self.squash)
    }

    /// The text the model sees for `raw`: squashed, then the trailer, then — when
    /// anything of the raw output is not shown — core's spill marker as the last line.
    /// A failure to write the spill file is reported in the text instead of the marker.
    pub fn finish(&self, call_id: &str, raw: RawOutput<'_>) -> String {
        let (mut text, spilled) = match raw.overflow {
            None => {
                let squashed = self.squash(&raw, raw.text);
                let spilled = squashed
                    .dropped_anything
                    .then(|| self.spill.write(call_id, raw.tool, raw.text.as_bytes()));
                (squashed.text, spilled)
            }
            Some(overflow) => {
                // Head and tail are squashed separately around one exact gap marker, so
                // every count in the result is true of the real output.
                let mut text = self.squash(&raw, raw.text).text;
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&squash::omitted_marker(overflow.omitted_lines));
                text.push('\n');
                text.push_str(&self.squash(&raw, overflow.tail).text);
                (text, overflow.spilled.map(|path| Ok(path.to_path_buf())))
            }
        };
        if !raw.trailer.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(raw.trailer);
        }
        match spilled {
            None => text,
            Some(Ok(path)) => squash::with_spill_marker(&text, &path.display().to_string()),
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn spill_files_are_private_unique_and_safely_named() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path().join("spill"));
        let first = spill.write("../../etc/passwd", "bash", b"one").unwrap();
        let second = spill.write("../../etc/passwd", "bash", b"two").unwrap();
        assert_ne!(first, second, "a repeated call id must not overwrite");
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
        assert_eq!(std::fs::read_to_string(path).unwrap(), raw);
        assert!(text.len() < raw.len());
    }
}
