//! `pith compress`: squashes a tool output exactly as pith does before the model sees it.
//!
//! The squashed text goes to stdout and one stats line (bytes and tokens before / after)
//! to stderr. There is no session here, so when squash dropped anything the raw input is
//! written to a private spill file (`$TMPDIR/pith-spill/<random>.txt`, mode 0600, in a
//! 0700 directory) and the output ends with the `[full output: <path>]` marker: nothing
//! is lost. The spill file is not deleted by pith.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use pith_core::context::squash::{self, SquashConfig};
use pith_core::{BpeCounter, Encoding, TokenCounter};

use crate::cli::CompressArgs;
use crate::commands::tokens::read_input;

/// Reads the input, squashes it, spills the raw input if needed and prints the result.
pub fn run(args: CompressArgs) -> Result<()> {
    let bytes = read_input(args.file.as_deref())?;
    let input = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            eprintln!("pith: warning: input is not valid UTF-8; invalid bytes became U+FFFD");
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    };
    let config = SquashConfig::default();
    let squashed = squash::apply(
        &args.tool,
        args.command.as_deref(),
        args.exit_code,
        &input,
        &config,
    );
    let text = if squashed.dropped_anything {
        let path = spill(&input)?;
        squash::with_spill_marker(&squashed.text, &path.to_string_lossy())
    } else {
        squashed.text
    };
    let counter = BpeCounter::new(Encoding::O200kBase);
    let tokens_before = counter.count(&input);
    let tokens_after = counter.count(&text);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| {
            if text.ends_with('\n') || text.is_empty() {
                Ok(())
            } else {
                stdout.write_all(b"\n")
            }
        })
        .and_then(|()| stdout.flush())
        .context("writing to standard output")?;
    let saved = if tokens_before == 0 {
        0.0
    } else {
        100.0 - tokens_after as f64 * 100.0 / tokens_before as f64
    };
    eprintln!(
        "pith compress: {} bytes -> {} bytes, {} tokens -> {} tokens ({saved:.1}% saved, {})",
        input.len(),
        text.len(),
        tokens_before,
        tokens_after,
        squashed.stats.family.as_str()
    );
    Ok(())
}

/// Writes `raw` to a new private file under `$TMPDIR/pith-spill/` and returns its path.
fn spill(raw: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join("pith-spill");
    create_private_dir(&dir)?;
    let mut file = tempfile::Builder::new()
        .prefix("")
        .suffix(".txt")
        .tempfile_in(&dir)
        .with_context(|| format!("creating a spill file in {}", dir.display()))?;
    file.write_all(raw.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("writing the spill file {}", file.path().display()))?;
    let (_, path) = file
        .keep()
        .with_context(|| format!("keeping the spill file in {}", dir.display()))?;
    Ok(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err).with_context(|| format!("creating {}", dir.display())),
    }
}

#[cfg(not(unix))]
fn create_private_dir(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}
