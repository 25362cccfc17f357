//! `pith compress` prints the bytes the tools send the model (issue 21: it gave 50 KB
//! where the bash tool sent 100 KB). Checked on every tool output of the vendored corpus
//! sample and on a 1 MB `cat` of a CI log run by the real bash tool.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[path = "../crates/core/tests/support/ci_log.rs"]
mod ci_log;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pith_core::context::SquashConfig;
use pith_core::ToolCall;
use pith_tools::capture_reader;
use pith_tools::model_text;
use pith_tools::{Capture, SpillDir};
use pith_tools::{Limits, PermissionMode, ToolsConfig, Toolset};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// One tool result of a corpus session with its command and exit code.
struct Sample {
    command: String,
    exit_code: Option<i32>,
    content: String,
}

fn corpus_samples() -> Vec<Sample> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/tests/data/corpus-sample");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the vendored corpus sample exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut samples = Vec::new();
    for file in files {
        let mut commands = std::collections::HashMap::new();
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            for call in value["tool_calls"].as_array().into_iter().flatten() {
                commands.insert(
                    call["id"].as_str().unwrap_or_default().to_owned(),
                    call["arguments"]["command"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
            if value["role"] == "tool" {
                let id = value["tool_call_id"].as_str().unwrap_or_default();
                samples.push(Sample {
                    command: commands.get(id).cloned().unwrap_or_default(),
                    exit_code: value["exit_code"].as_i64().map(|c| c as i32),
                    content: value["content"].as_str().unwrap_or_default().to_owned(),
                });
            }
        }
    }
    samples
}

/// `pith compress` in a hermetic environment: no user or project config, spill files
/// under `tmp/pith-spill`.
fn compress(tmp: &Path, args: &[&str], input: &[u8]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_pith"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", tmp)
        .env("TMPDIR", tmp)
        .current_dir(tmp)
        .arg("compress")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("piped stdin");
            let bytes = input.to_vec();
            let writer = std::thread::spawn(move || stdin.write_all(&bytes));
            let output = child.wait_with_output();
            writer.join().expect("stdin writer").ok();
            output
        })
        .expect("pith compress runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// What the bash tool sends the model for `content` (without its `[exit code]` line),
/// spilling into `spill_dir` with path references as `pith compress` does.
async fn bash_tool_text(spill_dir: &Path, sample: &Sample) -> String {
    let limits = Limits::default();
    let spill = SpillDir::with_path_references(spill_dir);
    let capture = Capture::new(spill.clone(), SquashConfig::default())
        .with_whole_max_bytes(limits.squash_whole_max_bytes);
    let captured = capture_reader(
        sample.content.as_bytes(),
        limits.bash_memory_cap_bytes,
        limits.spill_cap_bytes,
        Box::new(move || spill.create()),
    )
    .await
    .unwrap();
    model_text(
        &capture,
        "call_1",
        Some(&sample.command),
        sample.exit_code,
        &captured,
        "",
    )
    .text
}

#[tokio::test]
async fn compress_prints_what_the_bash_tool_sends_for_every_corpus_output() {
    let samples = corpus_samples();
    assert!(samples.len() > 300, "{} samples", samples.len());
    let floor = SquashConfig::default().floor_bytes;
    let mut squashed = 0;
    // Every output above the floor, and a few below it.
    for (k, sample) in samples
        .iter()
        .enumerate()
        .filter(|(k, s)| s.content.len() > floor || k % 25 == 0)
    {
        let tmp = tempfile::tempdir().unwrap();
        let mut args = vec!["--command", sample.command.as_str()];
        let code = sample.exit_code.map(|c| c.to_string());
        if let Some(code) = &code {
            args.extend(["--exit-code", code.as_str()]);
        }
        let printed = compress(tmp.path(), &args, sample.content.as_bytes());
        let printed = String::from_utf8(printed.stdout).unwrap();
        // Both spill into the same directory, as the first file there.
        let spill_dir = tmp.path().join("pith-spill");
        if spill_dir.exists() {
            std::fs::remove_dir_all(&spill_dir).unwrap();
        }
        let sent = bash_tool_text(&spill_dir, sample).await;
        let sent = if sent.ends_with('\n') || sent.is_empty() {
            sent
        } else {
            format!("{sent}\n")
        };
        assert_eq!(
            printed, sent,
            "output {k} (`{}`): compress and the bash tool differ",
            sample.command
        );
        squashed += usize::from(printed.contains("\n[full output: "));
    }
    assert!(squashed > 50, "only {squashed} outputs were squashed");
}

#[tokio::test]
async fn compress_of_a_one_megabyte_log_matches_the_bash_tool_running_cat() {
    let log = ci_log::ci_log(1 << 20);
    // The real bash tool, `cat`ting the log in a workspace.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    std::fs::write(dir.path().join("root/big.log"), &log).unwrap();
    let toolset = Toolset::new(
        ToolsConfig::new(dir.path().join("root"), dir.path().join("spill"))
            .with_mode(PermissionMode::Full),
    )
    .unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "bash".into(),
        arguments: json!({"command": "cat big.log"}),
    };
    let result = toolset
        .registry()
        .execute(&call, &CancellationToken::new())
        .await;
    let sent = result
        .content
        .strip_suffix("\n[exit code: 0]\n[full output: $PITH_SPILL_DIR/1.txt]")
        .unwrap_or_else(|| panic!("status and spill marker last: {}", result.content));

    let tmp = tempfile::tempdir().unwrap();
    let printed = compress(
        tmp.path(),
        &["--command", "cat big.log", "--exit-code", "0"],
        log.as_bytes(),
    );
    let printed = String::from_utf8(printed.stdout).unwrap();
    let marker = format!(
        "\n[full output: {}]\n",
        tmp.path().join("pith-spill/1.txt").display()
    );
    let body = printed
        .strip_suffix(&marker)
        .unwrap_or_else(|| panic!("spill marker last: {printed}"));
    assert_eq!(
        body, sent,
        "compress and the bash tool differ on the 1 MB log"
    );
    ci_log::assert_keeps_everything(body, "pith compress --command 'cat big.log'");
    assert!(
        body.len() <= SquashConfig::default().view_budget_bytes,
        "{}",
        body.len()
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("pith-spill/1.txt")).unwrap(),
        log
    );
}
