//! Bounded capture of a command's output: what `bash` keeps in memory and what it streams
//! to the spill file.
//!
//! While the output fits in `memory_cap` bytes it is all held in memory. The first chunk
//! that would exceed the cap opens the spill file, which then receives everything (what
//! was held plus every later byte, up to `spill_cap`); memory keeps only the head (the
//! first ¾ of the cap) and a rolling tail (the last ¼). So memory stays at most
//! `memory_cap` bytes whatever the command prints, and the disk at most `spill_cap`.

use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;

use tokio::io::AsyncWriteExt;

/// Opens the spill file when output first overflows memory.
pub type SpillOpener = Box<dyn FnOnce() -> io::Result<(PathBuf, std::fs::File)> + Send>;

/// The spill file as it is being written.
struct SpillWriter {
    path: PathBuf,
    file: tokio::io::BufWriter<tokio::fs::File>,
    written: u64,
}

/// Where the spill went, once capture ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillSummary {
    /// The spill file.
    pub path: PathBuf,
    /// Bytes written to it.
    pub written: u64,
    /// Bytes of output not written because the spill cap was reached.
    pub discarded: u64,
}

/// Output captured from one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedOutput {
    /// The first bytes (all of them when nothing overflowed).
    pub head: Vec<u8>,
    /// The last bytes, when the output overflowed memory (else empty).
    pub tail: Vec<u8>,
    /// Total bytes the command printed.
    pub total_bytes: u64,
    /// Total newlines the command printed.
    pub total_lines: u64,
    /// Largest number of output bytes held in memory at any time.
    pub peak_memory_bytes: usize,
    /// The spill file, when the output overflowed memory.
    pub spill: Option<SpillSummary>,
    /// Why the spill file could not be written, if it could not.
    pub spill_error: Option<String>,
}

impl CapturedOutput {
    /// True when some output is neither in `head` nor in `tail`.
    pub fn overflowed(&self) -> bool {
        (self.head.len() + self.tail.len()) as u64 != self.total_bytes
    }
}

/// The capture of one command's output, fed chunk by chunk.
pub struct OutputBuffer {
    memory_cap: usize,
    spill_cap: u64,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    overflowed: bool,
    total_bytes: u64,
    total_lines: u64,
    peak_memory_bytes: usize,
    opener: Option<SpillOpener>,
    spill: Option<SpillWriter>,
    discarded: u64,
    spill_error: Option<String>,
}

impl OutputBuffer {
    /// A buffer holding at most `memory_cap` bytes (at least 2) and spilling at most
    /// `spill_cap` bytes through `opener`.
    pub fn new(memory_cap: usize, spill_cap: u64, opener: SpillOpener) -> Self {
        Self {
            memory_cap: memory_cap.max(2),
            spill_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            overflowed: false,
            total_bytes: 0,
            total_lines: 0,
            peak_memory_bytes: 0,
            opener: Some(opener),
            spill: None,
            discarded: 0,
            spill_error: None,
        }
    }

    fn tail_cap(&self) -> usize {
        self.memory_cap / 4
    }

    fn head_cap(&self) -> usize {
        self.memory_cap - self.tail_cap()
    }

    /// Bytes currently held in memory.
    pub fn memory_bytes(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Adds one chunk of output.
    pub async fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        self.total_lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if !self.overflowed && self.head.len() + chunk.len() <= self.memory_cap {
            self.head.extend_from_slice(chunk);
        } else {
            if !self.overflowed {
                self.overflowed = true;
                self.open_spill().await;
                let held = std::mem::take(&mut self.head);
                self.spill_bytes(&held).await;
                self.head = held;
                if self.head.len() > self.head_cap() {
                    let rest = self.head.split_off(self.head_cap());
                    self.tail.extend(rest);
                }
            }
            self.spill_bytes(chunk).await;
            let mut rest = chunk;
            if self.tail.is_empty() && self.head.len() < self.head_cap() {
                let take = (self.head_cap() - self.head.len()).min(rest.len());
                self.head.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
            }
            let tail_cap = self.tail_cap();
            let keep = rest.len().min(tail_cap);
            self.tail.extend(&rest[rest.len() - keep..]);
            let excess = self.tail.len().saturating_sub(tail_cap);
            self.tail.drain(..excess);
        }
        self.peak_memory_bytes = self.peak_memory_bytes.max(self.memory_bytes());
    }

    async fn open_spill(&mut self) {
        let Some(opener) = self.opener.take() else {
            return;
        };
        match opener() {
            Ok((path, file)) => {
                self.spill = Some(SpillWriter {
                    path,
                    file: tokio::io::BufWriter::with_capacity(
                        64 * 1024,
                        tokio::fs::File::from_std(file),
                    ),
                    written: 0,
                });
            }
            Err(err) => self.spill_error = Some(err.to_string()),
        }
    }

    async fn spill_bytes(&mut self, bytes: &[u8]) {
        let Some(spill) = self.spill.as_mut() else {
            self.discarded += bytes.len() as u64;
            return;
        };
        let room = self.spill_cap.saturating_sub(spill.written);
        let take = (bytes.len() as u64).min(room) as usize;
        if take > 0 {
            if let Err(err) = spill.file.write_all(&bytes[..take]).await {
                self.spill_error = Some(format!("{}: {err}", spill.path.display()));
                self.discarded += bytes.len() as u64;
                return;
            }
            spill.written += take as u64;
        }
        self.discarded += (bytes.len() - take) as u64;
    }

    /// Flushes the spill file and returns what was captured.
    pub async fn finish(mut self) -> CapturedOutput {
        let spill = match self.spill.take() {
            Some(mut spill) => {
                if let Err(err) = spill.file.flush().await {
                    self.spill_error = Some(format!("{}: {err}", spill.path.display()));
                }
                Some(SpillSummary {
                    path: spill.path,
                    written: spill.written,
                    discarded: self.discarded,
                })
            }
            None => None,
        };
        CapturedOutput {
            head: self.head,
            tail: self.tail.into_iter().collect(),
            total_bytes: self.total_bytes,
            total_lines: self.total_lines,
            peak_memory_bytes: self.peak_memory_bytes,
            spill,
            spill_error: self.spill_error,
        }
    }
}

/// Captures everything `reader` yields as [`OutputBuffer`] captures a command's output
/// (same memory cap, same spill file): how `pith compress` holds its input, so that it
/// squashes exactly what the bash tool would.
pub async fn capture_reader(
    mut reader: impl std::io::Read,
    memory_cap: usize,
    spill_cap: u64,
    opener: SpillOpener,
) -> io::Result<CapturedOutput> {
    let mut buffer = OutputBuffer::new(memory_cap, spill_cap, opener);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        buffer.push(&chunk[..n]).await;
    }
    Ok(buffer.finish().await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opener(dir: &std::path::Path) -> SpillOpener {
        let path = dir.join("spill.txt");
        Box::new(move || {
            let file = std::fs::File::create(&path)?;
            Ok((path, file))
        })
    }

    #[tokio::test]
    async fn small_output_stays_in_memory_without_a_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut buffer = OutputBuffer::new(100, 1000, opener(dir.path()));
        buffer.push(b"hello\n").await;
        buffer.push(b"world\n").await;
        let out = buffer.finish().await;
        assert_eq!(out.head, b"hello\nworld\n");
        assert!(!out.overflowed());
        assert!(out.spill.is_none());
        assert!(!dir.path().join("spill.txt").exists());
        assert_eq!(out.total_lines, 2);
    }

    #[tokio::test]
    async fn overflow_keeps_head_and_tail_in_memory_and_everything_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mut buffer = OutputBuffer::new(100, 1_000_000, opener(dir.path()));
        let mut all = Vec::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            all.extend_from_slice(line.as_bytes());
            buffer.push(line.as_bytes()).await;
            assert!(buffer.memory_bytes() <= 100, "memory cap exceeded");
        }
        let out = buffer.finish().await;
        assert!(out.overflowed());
        assert_eq!(out.head, &all[..75]);
        assert_eq!(out.tail, &all[all.len() - 25..]);
        assert!(out.peak_memory_bytes <= 100);
        let spill = out.spill.unwrap();
        assert_eq!(
            std::fs::read(&spill.path).unwrap(),
            all,
            "spill is the raw output"
        );
        assert_eq!(spill.discarded, 0);
    }

    #[tokio::test]
    async fn spill_cap_bounds_the_disk_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut buffer = OutputBuffer::new(10, 50, opener(dir.path()));
        for _ in 0..20 {
            buffer.push(b"0123456789").await;
        }
        let out = buffer.finish().await;
        let spill = out.spill.unwrap();
        assert_eq!(spill.written, 50);
        assert_eq!(spill.discarded, 150);
        assert_eq!(std::fs::metadata(&spill.path).unwrap().len(), 50);
    }

    #[tokio::test]
    async fn a_reader_is_captured_like_pushed_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let all: Vec<u8> = (0..5000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let read = capture_reader(&all[..], 1000, 1 << 20, opener(dir.path()))
            .await
            .unwrap();
        let other = tempfile::tempdir().unwrap();
        let mut buffer = OutputBuffer::new(1000, 1 << 20, opener(other.path()));
        for chunk in all.chunks(777) {
            buffer.push(chunk).await;
        }
        let pushed = buffer.finish().await;
        assert_eq!(read.head, pushed.head);
        assert_eq!(read.tail, pushed.tail);
        assert_eq!(read.total_lines, pushed.total_lines);
        assert_eq!(std::fs::read(read.spill.unwrap().path).unwrap(), all);
    }

    #[tokio::test]
    async fn a_single_huge_chunk_is_bounded_too() {
        let dir = tempfile::tempdir().unwrap();
        let mut buffer = OutputBuffer::new(64, 1 << 20, opener(dir.path()));
        buffer.push(&vec![b'y'; 10_000]).await;
        assert!(buffer.memory_bytes() <= 64);
        let out = buffer.finish().await;
        assert_eq!(out.total_bytes, 10_000);
        assert_eq!(out.spill.unwrap().written, 10_000);
    }
}
