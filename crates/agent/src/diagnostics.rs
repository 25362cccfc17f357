//! Diagnostics: `PITH_LOG=debug` (or any `RUST_LOG` filter) writes `tracing` output to
//! `$PITH_HOME/logs/pith.log` (pith's data directory, see `pith_session::paths`), never
//! to stdout or stderr, so `--format stream-json` stays clean and the REPL's screen is
//! not disturbed. Without either variable nothing is set up and logging costs nothing.
//!
//! What is logged: retries, spills, server probes, compaction decisions with their facts,
//! tool timings, and rewrites that could not be persisted.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The log file under pith's data directory.
pub fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("logs").join("pith.log")
}

/// Installs the file logger when `PITH_LOG` or `RUST_LOG` asks for it (`PITH_LOG` wins).
/// Returns the log file's path when logging is on. A log that cannot be opened is
/// reported as an error; pith itself still runs.
pub fn init(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<PathBuf>, String> {
    let Some(filter) = env("PITH_LOG")
        .or_else(|| env("RUST_LOG"))
        .filter(|value| !value.trim().is_empty())
    else {
        return Ok(None);
    };
    let filter = EnvFilter::try_new(&filter)
        .map_err(|e| format!("PITH_LOG/RUST_LOG `{filter}` is not a valid filter: {e}"))?;
    let data_dir = pith_session::paths::data_dir().map_err(|e| e.to_string())?;
    let path = log_path(&data_dir);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("cannot open the log {}: {e}", path.display()))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))?;
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "pith started");
    Ok(Some(path))
}
