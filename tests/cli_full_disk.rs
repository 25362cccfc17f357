//! End-to-end: a transcript on a full file system. The compaction's atomic batch write
//! fails for want of space; `pith run` must finish its turn with the full history, say
//! that the compaction failed and why, and `pith replay` must show exactly what the model
//! was sent.
//!
//! A small tmpfs plays the full disk, mounted in a private user + mount namespace
//! (`unshare --user --map-root-user --mount`), so the test needs no privileges of its own
//! but does need `unshare` and `mount`: it is ignored by default and `.ci/run` runs it.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::process::Command;
use std::sync::Arc;

use common::Sandbox;
use pith_core::Message;
use pith_providers::wire::anthropic::request_body;
use pith_providers::ModelRequest;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

#[test]
#[ignore = "needs unshare and mount: a small tmpfs plays the full disk"]
fn on_a_full_disk_the_turn_finishes_without_its_compaction_and_replay_shows_what_was_sent() {
    let sandbox = Sandbox::new();
    let work = sandbox.workspace();
    let big: String = (0..1500)
        .map(|i| format!("line {i:04}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(work.join("big.txt"), big).unwrap();
    std::fs::write(work.join("small.txt"), "small\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        // Job 1, on the ordinary disk: a large transcript.
        Turn::text("").with_tool_call("read", json!({"path": "big.txt"})),
        Turn::text("Read."),
        // Job 2, on the tmpfs: crosses the threshold, so it compacts.
        Turn::text("")
            .with_tool_call("read", json!({"path": "small.txt"}))
            .with_usage(180_000, 40),
        Turn::text("## Goal\nFix it."),
        Turn::text("Done."),
    ]))
    .unwrap();

    // The compaction is driven by scripted usage (180,000 input tokens for a small request),
    // not by the working set: job 1's large read must stay in the transcript uncompacted.
    // (What `believe_scripted_usage` writes, in the same `[context]` table.)
    common::write_user_config(
        &sandbox,
        "[context]\nworking_set_tokens = 0\nusage_ratio_min = 0.0\nusage_ratio_max = 1e12\n",
    );
    let root = sandbox.root.path();
    let pith = env!("CARGO_BIN_EXE_pith");
    // Job 1 writes the session on the disk; it is copied onto a tmpfs with room for the
    // transcript and a quarter of it again: appending fits, the batch's full copy does not.
    let script = format!(
        r#"set -e
disk={root}/pith-home; full={root}/full; mkdir -p "$full"
"{pith}" run --model {MODEL} --format json "read big.txt" > {root}/job1.json
used=$(du -sb "$disk" | cut -f1)
mount -t tmpfs -o size=$((used + used / 4 + 16384)) tmpfs "$full"
cp -a "$disk/." "$full/"
id=$(sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p' {root}/job1.json)
set +e
PITH_HOME="$full" "{pith}" run --session "$id" "fix it" > {root}/job2.out 2> {root}/job2.err
echo $? > {root}/job2.code
PITH_HOME="$full" "{pith}" replay "$id" --view model --format json > {root}/replay.json
cp "$full"/sessions/*/*/transcript.jsonl {root}/transcript.jsonl
"#,
        root = root.display(),
    );
    // The same hermetic environment as every other end-to-end test.
    let template = sandbox.pith(Some(&server));
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
        .env_clear()
        .current_dir(&work);
    for (key, value) in template.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let output = command.output().expect("unshare runs");
    assert!(
        output.status.success(),
        "the script failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap();
    assert_eq!(
        read("job2.code").trim(),
        "0",
        "stderr: {}",
        read("job2.err")
    );
    assert_eq!(read("job2.out"), "Done.\n");
    let said = read("job2.err");
    assert!(
        said.contains("automatic compaction failed") && said.contains("No space left on device"),
        "pith says the compaction failed and why: {said}"
    );
    let kinds: Vec<String> = read("transcript.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(
        !kinds.iter().any(|k| k == "compaction_applied"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("assistant_turn"));

    // What the model was sent last is exactly the replayed history before its answer.
    let replay: Value = serde_json::from_str(&read("replay.json")).unwrap();
    let mut history: Vec<Message> = serde_json::from_value(replay["messages"].clone()).unwrap();
    assert_eq!(history.pop(), Some(Message::assistant("Done.")));
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        5,
        "job 1: 2 requests; job 2: parent, summary, parent"
    );
    let sent = &requests[4].body;
    let replayed = request_body(&ModelRequest {
        model: sent["model"].as_str().unwrap().to_owned(),
        system: sent["system"][0]["text"].as_str().unwrap().to_owned(),
        messages: Arc::new(history),
        tools: Vec::new(),
        max_output_tokens: None,
        temperature: None,
        reasoning: None,
        output: None,
        cache: Default::default(),
    });
    assert_eq!(
        common::without_cache_marks(&replayed["messages"]),
        common::without_cache_marks(&sent["messages"])
    );
}
