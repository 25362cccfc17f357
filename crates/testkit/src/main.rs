//! The `pith-testkit` binary: serves a script file until SIGTERM/SIGINT, for end-to-end tests
//! that drive the real `pith` binary. Prints `listening on http://127.0.0.1:PORT` on stdout
//! once the port accepts connections.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use pith_testkit::{Script, TestServer};

/// Serve a scripted provider conversation on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "pith-testkit", version)]
struct Arguments {
    /// The script (JSON: {"protocol": ..., "turns": [...]}; see docs/testkit.md).
    #[arg(long, value_name = "FILE")]
    script: PathBuf,
    /// Port to listen on (default: a free port chosen by the OS).
    #[arg(long, value_name = "N", default_value_t = 0)]
    port: u16,
    /// Append every request body received to FILE, one JSON per line.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let arguments = Arguments::parse();
    let script = Script::from_file(&arguments.script)?;
    // Handlers go in before the listening line, so a signal sent right after it is caught.
    let termination = TerminationSignals::install()?;
    let mut builder = TestServer::builder(script).port(arguments.port);
    if let Some(record) = &arguments.record {
        builder = builder.record_to(record);
    }
    let server = builder.start()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", server.origin()).context("write to stdout")?;
    stdout.flush().context("flush stdout")?;
    drop(stdout);

    termination.received().await;
    drop(server);
    Ok(())
}

/// SIGTERM and SIGINT, listened to from installation on.
#[cfg(unix)]
struct TerminationSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl TerminationSignals {
    fn install() -> anyhow::Result<TerminationSignals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(TerminationSignals {
            terminate: signal(SignalKind::terminate()).context("listen for SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("listen for SIGINT")?,
        })
    }

    /// Returns when either signal arrives.
    async fn received(mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

/// Ctrl+C, where there are no Unix signals.
#[cfg(not(unix))]
struct TerminationSignals;

#[cfg(not(unix))]
impl TerminationSignals {
    fn install() -> anyhow::Result<TerminationSignals> {
        Ok(TerminationSignals)
    }

    /// Returns on Ctrl+C (or when it cannot be listened for).
    async fn received(self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
