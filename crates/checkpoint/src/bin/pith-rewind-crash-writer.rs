//! Test helper for the rewind crash trials (tests/crash.rs): plans and applies one rewind
//! and prints `planned` when it starts writing, `done` at the end. Usage: `pith-rewind-crash-writer ROOT STORE_DIR TARGETS_JSON`, where
//! TARGETS_JSON holds a map of workspace path → `Target`. The test kills it with SIGKILL at
//! random moments and checks that no file is torn.
#![forbid(unsafe_code)]
// A test helper: it talks to its test on stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use pith_checkpoint::{apply, plan, Store, StoreConfig, Target};

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("done");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("pith-rewind-crash-writer: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, store_dir, targets] = args.as_slice() else {
        return Err("usage: pith-rewind-crash-writer ROOT STORE_DIR TARGETS_JSON".into());
    };
    let store = Store::open(&PathBuf::from(store_dir), StoreConfig::default())?;
    let targets: BTreeMap<String, Target> = serde_json::from_slice(&std::fs::read(targets)?)?;
    let rewind = plan(&PathBuf::from(root), &store, &targets)?;
    println!("planned");
    std::io::Write::flush(&mut std::io::stdout())?;
    apply(&rewind, &store)?;
    Ok(())
}
