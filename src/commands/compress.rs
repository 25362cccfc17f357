//! `pith compress`: squashes a tool output exactly as pith does before the model sees it.
//!
//! One code path with the tools: the input is held the way the bash tool holds a
//! command's output (`pith_tools::capture_reader`: the same memory cap,
//! the rest streamed to a spill file) and turned into text by the bash tool's own
//! `pith_tools::model_text` (other `--tool`s by `Capture::finish`, as those tools
//! do), with the `[context]` settings of the configuration `pith run` would load here.
//! So the printed bytes are the ones the tool would send the model, except the spill
//! file's name: there is no session, so when anything was dropped the raw input is kept
//! in `$TMPDIR/pith-spill/<n>.txt` (mode 0600, in a 0700 directory, never deleted by
//! pith) and the marker names that path. The bash tool's status line (`[exit code: N]`)
//! is not printed. One stats line (bytes and tokens before / after) goes to stderr.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use pith_core::context::ContextConfig;
use pith_core::{BpeCounter, Encoding, TokenCounter};
use pith_tools::capture_reader;
use pith_tools::model_text;
use pith_tools::Limits;
use pith_tools::{Capture, Finished, RawOutput, SpillDir};

use crate::cli::CompressArgs;
use crate::exit::ExitError;

/// Reads the input, squashes it as the tool would, and prints the result.
pub fn run(args: CompressArgs) -> Result<()> {
    let context = context_config()?;
    let limits = Limits::default();
    let spill = SpillDir::with_path_references(std::env::temp_dir().join("pith-spill"));
    let capture =
        Capture::new(spill, context.squash).with_whole_max_bytes(limits.squash_whole_max_bytes);
    let input: Box<dyn Read> = match args.file.as_deref() {
        Some(path) if path != Path::new("-") => {
            Box::new(std::fs::File::open(path).map_err(|err| {
                ExitError::usage(format!("cannot read {}: {err}", path.display()))
            })?)
        }
        _ => Box::new(std::io::stdin().lock()),
    };
    let (finished, raw_bytes) = if args.tool == "bash" {
        compress_bash(&capture, &limits, input, &args)?
    } else {
        compress_other(&capture, input, &args)?
    };
    let text = finished.text;
    let counter = BpeCounter::new(Encoding::O200kBase);
    let tokens_before = counter.count(&raw_bytes.text);
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
        raw_bytes.len,
        text.len(),
        tokens_before,
        tokens_after,
        finished.stats.family.as_str()
    );
    Ok(())
}

/// The raw input, for the stats line.
struct RawInput {
    /// Its text (invalid UTF-8 as U+FFFD).
    text: String,
    /// Its size in bytes.
    len: usize,
}

/// The `[context]` section `pith run` would use in the current directory.
fn context_config() -> Result<ContextConfig> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let workspace = pith_agent::Workspace::open(&cwd, &|name| std::env::var(name).ok())
        .map_err(|err| ExitError::usage(err.to_string()))?;
    Ok(workspace
        .context()
        .map_err(|err| ExitError::usage(err.to_string()))?)
}

/// The bash tool's path: bounded capture, then the tool's own text.
fn compress_bash(
    capture: &Capture,
    limits: &Limits,
    input: Box<dyn Read>,
    args: &CompressArgs,
) -> Result<(Finished, RawInput)> {
    let spill = capture.spill_dir().clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the I/O runtime")?;
    let captured = runtime
        .block_on(capture_reader(
            input,
            limits.bash_memory_cap_bytes,
            limits.spill_cap_bytes,
            Box::new(move || spill.create()),
        ))
        .map_err(|err| ExitError::usage(format!("cannot read the input: {err}")))?;
    let raw = match &captured.spill {
        // The whole input is in the spill file; read it back for the token count.
        Some(spill) if captured.overflowed() => std::fs::read(&spill.path)
            .with_context(|| format!("reading {}", spill.path.display()))?,
        _ => captured.head.clone(),
    };
    if std::str::from_utf8(&raw).is_err() {
        eprintln!("pith: warning: input is not valid UTF-8; invalid bytes became U+FFFD");
    }
    let finished = model_text(
        capture,
        "compress",
        args.command.as_deref(),
        args.exit_code,
        &captured,
        "",
    );
    let len = usize::try_from(captured.total_bytes).unwrap_or(usize::MAX);
    let text = String::from_utf8_lossy(&raw).into_owned();
    Ok((finished, RawInput { text, len }))
}

/// Any other tool: its whole text through [`Capture::finish_with_stats`].
fn compress_other(
    capture: &Capture,
    mut input: Box<dyn Read>,
    args: &CompressArgs,
) -> Result<(Finished, RawInput)> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|err| ExitError::usage(format!("cannot read the input: {err}")))?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            eprintln!("pith: warning: input is not valid UTF-8; invalid bytes became U+FFFD");
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    };
    let finished = capture.finish_with_stats(
        "compress",
        RawOutput {
            tool: &args.tool,
            command: args.command.as_deref(),
            exit_code: args.exit_code,
            text: &text,
            overflow: None,
            trailer: "",
        },
    );
    let len = text.len();
    Ok((finished, RawInput { text, len }))
}
