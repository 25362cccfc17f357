//! Running cargo from xtask, and where the workspace is.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The workspace's root directory (xtask's parent).
pub fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// Runs `cargo ARGS`, failing when it fails.
pub fn cargo(args: &[&str]) -> Result<()> {
    cargo_with_env(args, &[])
}

/// Runs `cargo ARGS` with `envs` set, failing when it fails.
pub fn cargo_with_env(args: &[&str], envs: &[(&str, String)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .status()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// The `pith` binary of this build: `cargo test --workspace` has built it next to this
/// test's own executable; `cargo build` makes sure of it when only xtask's tests run.
#[cfg(test)]
pub fn built_pith() -> PathBuf {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--package", "pith", "--bin", "pith"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build -p pith failed");
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let pith = dir.join("pith");
    assert!(pith.is_file(), "no pith binary at {}", pith.display());
    pith
}
