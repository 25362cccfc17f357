//! Diagnostics: `PITH_LOG=debug` (or any `RUST_LOG` filter) writes `tracing` output to
//! `$PITH_HOME/logs/pith.log` (pith's data directory, see `pith_session::paths`), never
//! to stdout or stderr, so `--format stream-json` stays clean and the REPL's screen is
//! not disturbed. Without either variable nothing is set up and logging costs nothing.
//!
//! What is logged: retries, spills, server probes, compaction decisions with their facts,
//! tool timings, and rewrites that could not be persisted. Never credentials: the AWS
//! signer's own trace output (its canonical request holds a session token) is always off,
//! whatever the filter says.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The log file under pith's data directory.
pub fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("logs").join("pith.log")
}

/// Targets whose output may hold a credential, silenced after the user's filter.
const SECRET_TARGETS: &[&str] = &["aws_sigv4=off"];

/// The user's filter, with [`SECRET_TARGETS`] turned off.
fn filter_of(text: &str) -> Result<EnvFilter, String> {
    let mut filter = EnvFilter::try_new(text)
        .map_err(|e| format!("PITH_LOG/RUST_LOG `{text}` is not a valid filter: {e}"))?;
    for directive in SECRET_TARGETS {
        let directive = directive
            .parse()
            .map_err(|e| format!("the built-in filter `{directive}` is invalid: {e}"))?;
        filter = filter.add_directive(directive);
    }
    Ok(filter)
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
    let filter = filter_of(&filter)?;
    let data_dir = pith_session::data_dir().map_err(|e| e.to_string())?;
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

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn the_aws_signer_is_silenced_whatever_the_filter_asks() {
        for asked in ["trace", "aws_sigv4=trace", "debug,aws_sigv4=trace"] {
            let filter = filter_of(asked).unwrap().to_string();
            assert!(filter.contains("aws_sigv4=off"), "{asked}: {filter}");
            assert!(!filter.contains("aws_sigv4=trace"), "{asked}: {filter}");
        }
        assert!(filter_of("not a filter[").is_err());
    }

    /// A log buffer for the test subscriber.
    #[derive(Clone, Default)]
    struct Buffer(std::sync::Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut buffer) = self.0.lock() {
                buffer.extend_from_slice(bytes);
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn signing_a_bedrock_request_leaves_no_session_token_in_a_trace_log() {
        use pith_providers::wire::bedrock::{sign, CredentialSource, FixedCredentials};
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter_of("trace").unwrap())
            .with_writer(move || writer.clone())
            .finish();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let credentials = runtime
            .block_on(
                FixedCredentials::new("AKIDLOG", "secret-key-not-logged", Some("token-not-logged"))
                    .credentials(),
            )
            .unwrap();
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!("before signing");
            let headers = sign::signature_headers(
                &sign::Unsigned {
                    method: "POST",
                    url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
                    headers: &[("content-type", "application/json")],
                    body: b"{}",
                },
                &credentials,
                &sign::Scope {
                    region: "us-east-1",
                    service: sign::SERVICE,
                    time: std::time::SystemTime::now(),
                },
            )
            .unwrap();
            assert!(headers.iter().any(|(_, v)| v == "token-not-logged"));
        });
        let log = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert!(log.contains("before signing"), "the trace log works: {log}");
        assert!(!log.contains("token-not-logged"), "{log}");
        assert!(!log.contains("secret-key-not-logged"), "{log}");
    }
}
