//! End-to-end: checkpoints and rewind with the real `pith` binary against the testkit.
//! Three scripted sessions change the workspace (the `edit` and `write` tools; `bash`
//! with `sed -i` and `rm`; a subagent's `write`), and `pith rewind --code` must bring the
//! tree back byte for byte, checked against a copy taken before the session. A
//! conversation rewind continues from the history as it was, across a compaction;
//! `pith run --fork ID@TURN` branches from a turn.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use common::{json_lines, records, stderr, stdout, transcripts, Sandbox};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000
const SUMMARY: &str = "## Goal\nTidy the files.\n## Key Instructions\nNone.";

/// Every file under `root` (hidden ones too): its bytes and permission bits.
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                let mode = meta.permissions().mode() & 0o7777;
                files.insert(name, (std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    files
}

/// Every directory under `root`, relative.
fn dirs(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.push(path.strip_prefix(root).unwrap().display().to_string());
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

fn session_of(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    let result: Value = serde_json::from_str(stdout(output).trim()).unwrap();
    result["session_id"].as_str().unwrap().to_owned()
}

fn rewind(sandbox: &Sandbox, args: &[&str]) -> Output {
    sandbox
        .pith(None)
        .arg("rewind")
        .args(args)
        .output()
        .unwrap()
}

/// The text of every message of a provider request, joined.
fn request_text(body: &Value) -> String {
    body["messages"].to_string()
}

#[test]
fn edits_by_the_edit_and_write_tools_are_rewound_byte_for_byte_and_the_rewind_is_undoable() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::create_dir(cwd.join("docs")).unwrap();
    std::fs::write(cwd.join("docs/keep.md"), "# keep\n").unwrap();
    std::fs::set_permissions(cwd.join("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = tree(&cwd);
    let before_dirs = dirs(&cwd);
    let server = TestServer::start(Script::anthropic([
        Turn::text("Editing.")
            .with_tool_call(
                "edit",
                json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
            )
            .with_tool_call(
                "write",
                json!({"path": "new/deep/c.txt", "content": "fresh\n"}),
            ),
        Turn::text("Done."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "stream-json",
            "edit the files",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = json_lines(&output);
    let checkpoints: Vec<&Value> = lines.iter().filter(|l| l["type"] == "checkpoint").collect();
    assert!(
        !checkpoints.is_empty(),
        "stream-json shows checkpoints: {lines:#?}"
    );
    let files: Vec<&str> = checkpoints
        .iter()
        .flat_map(|c| c["files"].as_array().unwrap())
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"a.txt") && files.contains(&"new/deep/c.txt"),
        "{files:?}"
    );
    assert!(checkpoints[0]["store_bytes"].as_u64().unwrap() > 0);
    let session = lines
        .iter()
        .find_map(|l| l["session_id"].as_str())
        .unwrap()
        .to_owned();
    assert_ne!(tree(&cwd), before);

    // The turns, with the paths each changed (the directories `write` made too).
    let listed = rewind(&sandbox, &[&session, "--json"]);
    assert_eq!(listed.status.code(), Some(0), "stderr: {}", stderr(&listed));
    let listed: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(listed["turns"][0]["number"], json!(1));
    assert_eq!(
        listed["turns"][0]["files"],
        json!(["a.txt", "new/", "new/deep/", "new/deep/c.txt"])
    );

    // A dry run writes nothing.
    let dry = rewind(&sandbox, &[&session, "--to", "1", "--code", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "stderr: {}", stderr(&dry));
    assert!(stdout(&dry).contains("restore a.txt"), "{}", stdout(&dry));
    assert_ne!(tree(&cwd), before);

    let done = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(done.status.code(), Some(0), "stderr: {}", stderr(&done));
    assert_eq!(tree(&cwd), before, "byte for byte, with the mode");
    assert_eq!(
        dirs(&cwd),
        before_dirs,
        "the directories the turn made are gone"
    );

    // The rewind is recorded, shown by replay, and can itself be rewound (undo).
    let replay = sandbox
        .pith(None)
        .args(["replay", &session])
        .output()
        .unwrap();
    assert!(
        stdout(&replay).contains("rewound to turn 1"),
        "{}",
        stdout(&replay)
    );
    let kinds: Vec<String> = records(&sandbox.only_transcript())
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.contains(&"checkpoint".to_owned()) && kinds.last().unwrap() == "rewind");
}

#[test]
fn bash_sed_and_rm_are_rewound_and_the_conversation_continues_from_before_a_compaction() {
    let sandbox = Sandbox::new();
    sandbox.believe_scripted_usage();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("src.txt"), "one\ntwo\n").unwrap();
    std::fs::write(cwd.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(cwd.join(".gitignore"), "build/\n").unwrap();
    let before = tree(&cwd);
    let server = TestServer::start(Script::anthropic([
        // Turn 1.
        Turn::text("Fixing.").with_tool_call("bash", json!({"command": "sed -i s/one/ONE/ src.txt"})),
        Turn::text("First done."),
        // Turn 2: the request after the tool call reports usage over the threshold, so
        // the loop compacts before it goes on.
        Turn::text("Cleaning.")
            .with_tool_call(
                "bash",
                json!({"command": "rm gone.txt; echo made > made.txt; mkdir -p build && echo o > build/x.o"}),
            )
            .with_usage(180_000, 40),
        Turn::text(SUMMARY),
        Turn::text("Second done."),
        // After the rewind.
        Turn::text("Third answer."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "first task",
        ],
    );
    let session = session_of(&first);
    let second = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "--session",
            &session,
            "second task",
        ],
    );
    assert_eq!(session_of(&second), session);
    let kinds: Vec<String> = records(&sandbox.only_transcript())
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        kinds.contains(&"compaction_applied".to_owned()),
        "{kinds:?}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("src.txt")).unwrap(),
        "ONE\ntwo\n"
    );
    assert!(!cwd.join("gone.txt").exists());

    // The code of both turns back, byte for byte; the ignored build output is not pith's
    // to restore (it is left as it is).
    let code = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(code.status.code(), Some(0), "stderr: {}", stderr(&code));
    let mut after = tree(&cwd);
    assert!(after.remove("build/x.o").is_some());
    assert_eq!(after, before);

    // The conversation back to before turn 2: from the transcript, not the summary.
    let conversation = rewind(&sandbox, &[&session, "--to", "2", "--conversation"]);
    assert_eq!(
        conversation.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&conversation)
    );
    let third = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--session",
            &session,
            "third task",
        ],
    );
    assert_eq!(third.status.code(), Some(0), "stderr: {}", stderr(&third));
    assert_eq!(stdout(&third), "Third answer.\n");
    let requests = server.requests();
    let last = request_text(&requests.last().unwrap().body);
    assert!(
        last.contains("first task") && last.contains("sed -i s/one/ONE/"),
        "{last}"
    );
    assert!(!last.contains("second task"), "turn 2 was rewound: {last}");
    assert!(
        !last.contains("compacted_context"),
        "not the summary: {last}"
    );
    assert!(last.contains("third task"), "{last}");
    // The code rewind left the files alone this time.
    assert_eq!(
        std::fs::read_to_string(cwd.join("src.txt")).unwrap(),
        "one\ntwo\n"
    );
    // The listing counts the turns of the line: 1, then (after the rewind) the third.
    let listing = sandbox
        .pith(None)
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let listing: Value = serde_json::from_str(&stdout(&listing)).unwrap();
    assert_eq!(listing[0]["turns"], json!(2), "{listing}");
}

#[test]
fn a_subagent_s_write_is_rewound() {
    let sandbox = Sandbox::new();
    let agents = sandbox.root.path().join("config/pith/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("writer.md"),
        "---\nname: writer\ndescription: Writes files.\ntools: Write\n---\nYou write files.\n",
    )
    .unwrap();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("existing.txt"), "old\n").unwrap();
    let before = tree(&cwd);
    let server = TestServer::start(Script::anthropic([
        Turn::text("Delegating.").with_tool_call(
            "task",
            json!({"description": "write", "prompt": "write the files", "agent": "writer"}),
        ),
        Turn::text("Writing.")
            .with_tool_call(
                "write",
                json!({"path": "from-child.txt", "content": "child\n"}),
            )
            .with_tool_call("write", json!({"path": "existing.txt", "content": "new\n"})),
        Turn::text("Written."),
        Turn::text("Done."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "delegate",
        ],
    );
    let session = session_of(&output);
    assert_eq!(
        std::fs::read_to_string(cwd.join("from-child.txt")).unwrap(),
        "child\n"
    );
    let done = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(done.status.code(), Some(0), "stderr: {}", stderr(&done));
    assert_eq!(tree(&cwd), before);
}

#[test]
fn a_file_changed_outside_pith_is_named_and_kept_unless_forced_and_a_fork_branches_at_a_turn() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("notes.txt"), "v1\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.")
            .with_tool_call("write", json!({"path": "notes.txt", "content": "v2\n"})),
        Turn::text("First done."),
        Turn::text("Second done."),
        Turn::text("Forked answer."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "write v2",
        ],
    );
    let session = session_of(&first);
    let second = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "--session",
            &session,
            "just talk",
        ],
    );
    session_of(&second);
    // The user edits the file by hand after pith wrote it.
    std::fs::write(cwd.join("notes.txt"), "edited by hand\n").unwrap();
    let blocked = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(
        blocked.status.code(),
        Some(2),
        "stdout: {}",
        stdout(&blocked)
    );
    assert!(
        stdout(&blocked).contains("changed outside pith since: notes.txt"),
        "{}",
        stdout(&blocked)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "edited by hand\n"
    );
    let forced = rewind(&sandbox, &[&session, "--to", "1", "--code", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "stderr: {}", stderr(&forced));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "v1\n"
    );
    // The hand edit was kept in the store: rewinding the rewind (to turn 2, before it)
    // brings it back.
    let undo = rewind(&sandbox, &[&session, "--to", "2", "--code", "--force"]);
    assert_eq!(undo.status.code(), Some(0), "stderr: {}", stderr(&undo));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "edited by hand\n"
    );

    // A fork from before turn 2 has turn 1's history and goes its own way.
    let fork = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "--fork",
            &format!("{session}@2"),
            "other question",
        ],
    );
    let forked = session_of(&fork);
    assert_ne!(forked, session);
    let last = request_text(&server.requests().last().unwrap().body);
    assert!(
        last.contains("write v2") && !last.contains("just talk"),
        "{last}"
    );
    let bad = sandbox.run(
        &server,
        &["--model", MODEL, "--fork", &format!("{session}@9"), "x"],
    );
    assert_eq!(bad.status.code(), Some(2), "stderr: {}", stderr(&bad));
}

#[test]
fn a_file_over_the_cap_is_named_when_it_is_not_copied_and_a_rewind_needing_it_is_refused() {
    let sandbox = Sandbox::new();
    common::write_user_config(&sandbox, "[checkpoints]\nmax_file_mib = 1\n");
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("small.txt"), "small\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Big.").with_tool_call(
            "bash",
            json!({"command": "head -c 2000000 /dev/zero > big.bin; echo changed > small.txt"}),
        ),
        Turn::text("First done."),
        Turn::text("Bigger.").with_tool_call(
            "bash",
            json!({"command": "echo tail >> big.bin; echo again > small.txt"}),
        ),
        Turn::text("Second done."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "make it big",
        ],
    );
    let session = session_of(&first);
    assert!(
        stderr(&first).contains("not copied for rewind: big.bin (over the per-file cap"),
        "stderr: {}",
        stderr(&first)
    );
    let second = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "--session",
            &session,
            "more",
        ],
    );
    session_of(&second);
    let before = std::fs::read(cwd.join("big.bin")).unwrap();
    // Turn 2's start state of big.bin was never copied: refused, nothing written.
    let refused = rewind(&sandbox, &[&session, "--to", "2", "--code"]);
    assert_eq!(
        refused.status.code(),
        Some(1),
        "stdout: {}",
        stdout(&refused)
    );
    assert!(stderr(&refused).contains("big.bin"), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--skip-omitted restores the rest"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read(cwd.join("big.bin")).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(cwd.join("small.txt")).unwrap(),
        "again\n"
    );
    // --skip-omitted: the rest is restored, big.bin is named and left as it is.
    let skipped = rewind(
        &sandbox,
        &[&session, "--to", "2", "--code", "--skip-omitted"],
    );
    assert_eq!(
        skipped.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&skipped)
    );
    assert!(
        stdout(&skipped).contains("skipped, left as it is: big.bin"),
        "{}",
        stdout(&skipped)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("small.txt")).unwrap(),
        "changed\n"
    );
    assert_eq!(std::fs::read(cwd.join("big.bin")).unwrap(), before);
    // Turn 1's start state is known (big.bin absent), but removing big.bin now could
    // not be undone (its content is over the cap): refused too, and named.
    let unsafe_undo = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(
        unsafe_undo.status.code(),
        Some(1),
        "stdout: {}",
        stdout(&unsafe_undo)
    );
    assert!(
        stderr(&unsafe_undo).contains("big.bin (its current content cannot be saved"),
        "{}",
        stderr(&unsafe_undo)
    );
    assert!(cwd.join("big.bin").exists());
    // Once the user removes it, the rest is rewound (the removal is a change outside
    // pith: --force).
    std::fs::remove_file(cwd.join("big.bin")).unwrap();
    let done = rewind(&sandbox, &[&session, "--to", "1", "--code", "--force"]);
    assert_eq!(done.status.code(), Some(0), "stderr: {}", stderr(&done));
    assert!(!cwd.join("big.bin").exists());
    assert_eq!(
        std::fs::read_to_string(cwd.join("small.txt")).unwrap(),
        "small\n"
    );
}

#[test]
fn listing_and_dry_runs_work_while_a_job_holds_the_session_and_a_rewind_that_writes_waits_its_turn()
{
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("notes.txt"), "v1\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.")
            .with_tool_call("write", json!({"path": "notes.txt", "content": "v2\n"})),
        Turn::text("Done."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "write v2",
        ],
    );
    let session = session_of(&first);
    // Another process holds the session's writer lock, as a running job does.
    let home = sandbox.pith_home();
    let store = pith_session::SessionStore::from_lookup(&|name: &str| {
        (name == "PITH_HOME").then(|| home.display().to_string())
    })
    .unwrap();
    let held = store.open(&session).unwrap();

    let listing = rewind(&sandbox, &[&session]);
    assert_eq!(
        listing.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&listing)
    );
    assert!(
        stdout(&listing).contains("write v2"),
        "{}",
        stdout(&listing)
    );
    let dry = rewind(&sandbox, &[&session, "--to", "1", "--code", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "stderr: {}", stderr(&dry));
    assert!(stdout(&dry).contains("notes.txt"), "{}", stdout(&dry));
    // A rewind that writes is refused while the job runs, and writes nothing.
    let refused = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_ne!(refused.status.code(), Some(0), "{}", stdout(&refused));
    assert!(stderr(&refused).contains("in use"), "{}", stderr(&refused));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "v2\n"
    );
    drop(held);
    let done = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(done.status.code(), Some(0), "stderr: {}", stderr(&done));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "v1\n"
    );
}

#[test]
fn a_code_rewind_of_the_last_turn_is_undone_and_redone_by_one_command() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("notes.txt"), "v1\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.")
            .with_tool_call("write", json!({"path": "notes.txt", "content": "v2\n"})),
        Turn::text("First done."),
        Turn::text("Writing again.")
            .with_tool_call("write", json!({"path": "notes.txt", "content": "v3\n"})),
        Turn::text("Second done."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "write v2",
        ],
    );
    let session = session_of(&first);
    let second = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "--session",
            &session,
            "write v3",
        ],
    );
    session_of(&second);
    let read = || std::fs::read_to_string(cwd.join("notes.txt")).unwrap();
    let nothing = rewind(&sandbox, &[&session, "--undo"]);
    assert_ne!(nothing.status.code(), Some(0));
    assert!(
        stderr(&nothing).contains("no rewind of the files to undo"),
        "{}",
        stderr(&nothing)
    );

    // The last turn, rewound.
    let back = rewind(&sandbox, &[&session, "--to", "2", "--code"]);
    assert_eq!(back.status.code(), Some(0), "stderr: {}", stderr(&back));
    assert!(stdout(&back).contains("each re-read"), "{}", stdout(&back));
    assert!(
        stdout(&back).contains("--undo` undoes it"),
        "{}",
        stdout(&back)
    );
    assert_eq!(read(), "v2\n");
    // Undo: the file as the rewind found it; a dry run first writes nothing.
    let dry = rewind(&sandbox, &[&session, "--undo", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "stderr: {}", stderr(&dry));
    assert!(
        stdout(&dry).contains("Undo of the latest rewind"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(read(), "v2\n");
    let undo = rewind(&sandbox, &[&session, "--undo"]);
    assert_eq!(undo.status.code(), Some(0), "stderr: {}", stderr(&undo));
    assert!(
        stdout(&undo).contains("restore notes.txt"),
        "{}",
        stdout(&undo)
    );
    assert_eq!(read(), "v3\n");
    // Undoing the undo redoes the rewind.
    let redo = rewind(&sandbox, &[&session, "--undo", "--json"]);
    assert_eq!(redo.status.code(), Some(0), "stderr: {}", stderr(&redo));
    let value: Value = serde_json::from_str(stdout(&redo).trim()).unwrap();
    assert_eq!(value["done"], json!(true));
    assert_eq!(value["not_as_planned"], json!([]));
    assert_eq!(read(), "v2\n");
}

#[test]
fn a_first_edit_in_a_large_workspace_waits_for_the_snapshot_so_its_rewind_restores_the_file() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    // 20,000 files: the background snapshot takes long enough that an edit sent at once
    // would reach `a.txt` before it (the trial's case 1).
    for dir in 0..100 {
        let dir_path = cwd.join(format!("d{dir:03}"));
        std::fs::create_dir(&dir_path).unwrap();
        for file in 0..200 {
            std::fs::write(
                dir_path.join(format!("f{file:03}.txt")),
                format!("{dir} {file}\n"),
            )
            .unwrap();
        }
    }
    std::fs::write(cwd.join("a.txt"), "alpha\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Editing.").with_tool_call(
            "edit",
            json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        ),
        Turn::text("Edited."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "shout",
        ],
    );
    let session = session_of(&first);
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "ALPHA\n"
    );
    let back = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(back.status.code(), Some(0), "stderr: {}", stderr(&back));
    assert!(
        stdout(&back).contains("Done: 1 file(s) restored"),
        "{}",
        stdout(&back)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "alpha\n"
    );
}

#[test]
fn files_a_new_ignore_rule_hides_are_still_recorded_and_rewound() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::create_dir_all(cwd.join("data")).unwrap();
    std::fs::write(cwd.join("data/keep.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(cwd.join(".gitignore"), "target/\n").unwrap();
    let before = tree(&cwd);
    let server = TestServer::start(Script::anthropic([
        Turn::text("Ignoring and removing.").with_tool_call(
            "bash",
            json!({"command": "echo data/ >> .gitignore && rm -rf data"}),
        ),
        Turn::text("Done."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "drop the data",
        ],
    );
    let session = session_of(&first);
    assert!(!cwd.join("data").exists());
    let back = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(back.status.code(), Some(0), "stderr: {}", stderr(&back));
    assert!(
        stdout(&back).contains("restore data/keep.csv"),
        "{}",
        stdout(&back)
    );
    assert_eq!(tree(&cwd), before, "the file and the rules are back");
}

#[test]
fn a_hand_edit_between_two_jobs_is_recorded_as_changed_outside_pith_when_the_session_continues() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::write(cwd.join("notes.txt"), "v1\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.")
            .with_tool_call("write", json!({"path": "notes.txt", "content": "v2\n"})),
        Turn::text("First done."),
        Turn::text("Just talking."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "write v2",
        ],
    );
    let session = session_of(&first);
    // Between the two jobs, the user edits the file by hand.
    std::fs::write(cwd.join("notes.txt"), "by hand\n").unwrap();
    let second = sandbox.run(
        &server,
        &["--format", "json", "--session", &session, "just talk"],
    );
    session_of(&second);
    // The second job recorded the edit before its message, as the REPL does at a turn's
    // start.
    let records = common::records(&sandbox.only_transcript());
    let outside: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "checkpoint" && r["outside"] == json!(true))
        .collect();
    assert_eq!(outside.len(), 1, "{records:?}");
    assert_eq!(outside[0]["changes"][0]["path"], "notes.txt");
    let message_seq = records
        .iter()
        .rev()
        .find(|r| r["kind"] == "user_message")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    assert!(outside[0]["seq"].as_u64().unwrap() < message_seq);
    // So a rewind to turn 2 keeps the hand edit, and one to turn 1 (asked about nothing:
    // pith knows the edit) goes back to v1; --undo brings the hand edit back.
    let turn2 = rewind(&sandbox, &[&session, "--to", "2", "--code"]);
    assert_eq!(turn2.status.code(), Some(0), "stderr: {}", stderr(&turn2));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "by hand\n"
    );
    let turn1 = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(turn1.status.code(), Some(0), "stderr: {}", stderr(&turn1));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "v1\n"
    );
    let undo = rewind(&sandbox, &[&session, "--undo"]);
    assert_eq!(undo.status.code(), Some(0), "stderr: {}", stderr(&undo));
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "by hand\n"
    );
}

/// Every path under `root` with its kind, mode, content (length and hash), and for a file
/// with other hard links the sorted names of its inode: the state a rewind must put back.
fn manifest(root: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::MetadataExt;
    let mut by_inode: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let state = if meta.is_dir() {
                stack.push(path.clone());
                format!("dir {mode:o}")
            } else if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else {
                if meta.nlink() > 1 {
                    by_inode.entry(meta.ino()).or_default().push(name.clone());
                }
                let bytes = std::fs::read(&path).unwrap();
                let mut hasher = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&bytes, &mut hasher);
                let digest = std::hash::Hasher::finish(&hasher);
                format!("file {mode:o} {} bytes {digest:016x}", bytes.len())
            };
            out.insert(name, state);
        }
    }
    for mut names in by_inode.into_values() {
        names.sort();
        for name in &names {
            let linked = format!(" linked with {}", names.join(" "));
            out.get_mut(name).unwrap().push_str(&linked);
        }
    }
    out
}

/// Cases 6, 7 and 8 of the rewind trial: an empty directory the turn filled stays, a
/// removed 0700 tree comes back with its mode and its empty subdirectory, a directory's
/// mode goes back, a directory the turn made goes, and a hard-linked pair written through
/// one name is one file again with the old content.
#[test]
fn empty_directories_directory_modes_and_hard_links_are_rewound() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    let mode = |path: &str, bits: u32| {
        std::fs::set_permissions(cwd.join(path), std::fs::Permissions::from_mode(bits)).unwrap()
    };
    std::fs::create_dir_all(cwd.join("logs")).unwrap();
    std::fs::create_dir_all(cwd.join("private/empty")).unwrap();
    std::fs::write(cwd.join("private/key"), "secret\n").unwrap();
    mode("private/key", 0o600);
    mode("private", 0o700);
    std::fs::create_dir_all(cwd.join("docs")).unwrap();
    mode("docs", 0o755);
    std::fs::create_dir_all(cwd.join("sub")).unwrap();
    std::fs::write(cwd.join("a.txt"), "v0\n").unwrap();
    std::fs::hard_link(cwd.join("a.txt"), cwd.join("sub/b.txt")).unwrap();
    let before = manifest(&cwd);
    let server = TestServer::start(Script::anthropic([
        Turn::text("Changing the tree.").with_tool_call(
            "bash",
            json!({"command": "touch logs/run.log && rm -rf private && chmod 700 docs \
                              && echo v1 >> a.txt && mkdir -p made/inner"}),
        ),
        Turn::text("Done."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "change the tree",
        ],
    );
    let session = session_of(&first);
    let after = manifest(&cwd);
    assert_eq!(
        std::fs::read_to_string(cwd.join("sub/b.txt")).unwrap(),
        "v0\nv1\n"
    );
    let back = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(back.status.code(), Some(0), "stderr: {}", stderr(&back));
    for shown in [
        "restore private/",
        "restore private/empty/",
        "restore docs/",
    ] {
        assert!(stdout(&back).contains(shown), "{shown}: {}", stdout(&back));
    }
    assert_eq!(
        manifest(&cwd),
        before,
        "contents, modes, empty directories and the hard link are back"
    );
    // And the undo brings the turn's tree back, directories included.
    let undo = rewind(&sandbox, &[&session, "--undo"]);
    assert_eq!(undo.status.code(), Some(0), "stderr: {}", stderr(&undo));
    assert_eq!(manifest(&cwd), after);
}

/// Every regular file below `dir`: (count, bytes).
fn files_below(dir: &Path) -> (usize, u64) {
    let mut found = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                found.0 += 1;
                found.1 += meta.len();
            }
        }
    }
    found
}

fn git(cwd: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// In a git repository the first snapshot does not copy the tree: the committed files'
/// bytes stay in git until one changes, and the rewind still brings every change back
/// byte for byte. `.git` is left as it was.
#[test]
fn in_a_git_repository_the_first_snapshot_copies_only_what_changes_and_the_rewind_is_exact() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    for i in 0..300 {
        let body = format!("pub fn f{i}() -> u32 {{ {i} }}\n").repeat(20);
        std::fs::write(cwd.join(format!("src/m{i}.rs")), body).unwrap();
    }
    // git's index is written after the files' mtimes (racily clean files are copied).
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(&cwd, &["init", "-q"]);
    git(&cwd, &["add", "."]);
    git(&cwd, &["commit", "-q", "-m", "seed"]);
    let before = tree(&cwd);
    let git_before = files_below(&cwd.join(".git"));
    let server = TestServer::start(Script::anthropic([
        Turn::text("Editing.").with_tool_call(
            "bash",
            json!({"command": "sed -i 's/u32/u64/' src/m7.rs && rm src/m8.rs && echo new > src/new.rs"}),
        ),
        Turn::text("Done."),
    ]))
    .unwrap();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "edit the sources",
        ],
    );
    let session = session_of(&first);
    let (blobs, bytes) = files_below(&sandbox.pith_home().join("checkpoints"));
    let tree_bytes: u64 = before
        .values()
        .map(|(content, _)| content.len() as u64)
        .sum();
    assert!(
        bytes < tree_bytes / 10,
        "the store holds {bytes} bytes in {blobs} files for a {tree_bytes}-byte tree: it copied the tree"
    );
    let back = rewind(&sandbox, &[&session, "--to", "1", "--code"]);
    assert_eq!(back.status.code(), Some(0), "stderr: {}", stderr(&back));
    let mut now = tree(&cwd);
    now.retain(|path, _| !path.starts_with(".git/"));
    let mut expected = before.clone();
    expected.retain(|path, _| !path.starts_with(".git/"));
    assert_eq!(now, expected, "every change rewound byte for byte");
    assert_eq!(files_below(&cwd.join(".git")), git_before, ".git untouched");
}

/// The manifest of the workspace without what a rewind never restores (`.git`, the
/// ignored `target/`) and without `keep` (a file a rewind was told to skip).
fn restorable(cwd: &Path, skip: &[&str]) -> BTreeMap<String, String> {
    let mut shown = manifest(cwd);
    shown.retain(|path, _| {
        !path.starts_with(".git/")
            && path != ".git"
            && !path.starts_with("target/")
            && path != "target"
            && !skip.contains(&path.as_str())
    });
    shown
}

/// The rewind trial through the binary: a committed git workspace with the tricky kinds of
/// file (binary, modes 755/444/600, a symlink and a dangling one, a hard-linked pair, CRLF
/// without a final newline, spaced and unicode names, an empty directory, a 20 MB file
/// over the per-file cap, an ignored `target/`, an untracked file), changed by `edit`,
/// `write` and `bash` over four jobs with a compaction in the third. A rewind to before
/// each turn must give the manifest taken before it, byte for byte with modes, links and
/// directories; each is undone back to the last manifest; the rewind that needs the 20 MB
/// file's old content is refused and writes nothing, and `--skip-omitted` restores the rest.
#[test]
fn the_rewind_trial_restores_every_turn_against_its_manifest() {
    let sandbox = Sandbox::new();
    sandbox.believe_scripted_usage();
    let cwd = sandbox.workspace();
    let write = |path: &str, bytes: &[u8], mode: u32| {
        let full = cwd.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, bytes).unwrap();
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let binary: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    write("bin.dat", &binary, 0o644);
    write("run.sh", b"#!/bin/sh\necho run\n", 0o755);
    write("ro.txt", b"read only\n", 0o444);
    write("secret.env", b"KEY=1\n", 0o600);
    write("crlf.txt", b"one\r\ntwo", 0o644);
    write("spaced name.txt", b"spaces\n", 0o644);
    write("ünïcode.txt", b"unicode\n", 0o644);
    write("a.txt", b"v0\n", 0o644);
    write("big.bin", &vec![7u8; 20 << 20], 0o644);
    write(".gitignore", b"target/\n", 0o644);
    write("target/out.o", b"object\n", 0o644);
    std::fs::create_dir_all(cwd.join("sub")).unwrap();
    std::fs::hard_link(cwd.join("a.txt"), cwd.join("sub/b.txt")).unwrap();
    std::fs::create_dir_all(cwd.join("empty")).unwrap();
    std::os::unix::fs::symlink("ro.txt", cwd.join("link")).unwrap();
    std::os::unix::fs::symlink("nowhere", cwd.join("dangling")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(&cwd, &["init", "-q"]);
    git(&cwd, &["add", "."]);
    git(&cwd, &["commit", "-q", "-m", "seed"]);
    write("untracked.txt", b"u1\n", 0o644);

    let server = TestServer::start(Script::anthropic([
        // Turn 1: the edit and write tools.
        Turn::text("Editing.")
            .with_tool_call(
                "edit",
                json!({"path": "crlf.txt", "old_string": "two", "new_string": "TWO"}),
            )
            .with_tool_call(
                "write",
                json!({"path": "ünïcode.txt", "content": "rewritten\n"}),
            ),
        Turn::text("One."),
        // Turn 2: bash on modes, links, directories and names.
        Turn::text("Reshaping.").with_tool_call(
            "bash",
            json!({"command": "chmod 755 ro.txt && echo v1 >> a.txt && touch empty/x \
                              && ln -sfn bin.dat link && rm dangling && echo t > target/new.o \
                              && mv 'spaced name.txt' 'spaced renamed.txt' && chmod 700 sub"}),
        ),
        Turn::text("Two."),
        // Turn 3: more bash, and the request after it is over the threshold: a compaction.
        Turn::text("Cleaning.")
            .with_tool_call(
                "bash",
                json!({"command": "printf '\\000\\001' >> bin.dat && rm secret.env run.sh \
                                  && mkdir -p deep/er && echo d > deep/er/f.txt"}),
            )
            .with_usage(180_000, 40),
        Turn::text(SUMMARY),
        Turn::text("Three."),
        // Turn 4: the 20 MB file and the untracked one.
        Turn::text("Growing.").with_tool_call(
            "bash",
            json!({"command": "echo more >> big.bin && echo u2 >> untracked.txt"}),
        ),
        Turn::text("Four."),
    ]))
    .unwrap();
    let mut manifests = vec![restorable(&cwd, &[])];
    let mut session: Option<String> = None;
    for task in ["turn one", "turn two", "turn three", "turn four"] {
        let mut args = vec!["--model", MODEL, "--approval", "full", "--format", "json"];
        if let Some(id) = &session {
            args.extend(["--session", id.as_str()]);
        }
        args.push(task);
        let output = sandbox.run(&server, &args);
        session = Some(session_of(&output));
        manifests.push(restorable(&cwd, &[]));
    }
    let session = session.unwrap();
    assert!(
        records(&sandbox.only_transcript())
            .iter()
            .any(|r| r["kind"] == "compaction_applied"),
        "the third job compacted"
    );
    for turn in 1..manifests.len() {
        assert_ne!(
            manifests[turn],
            manifests[turn - 1],
            "turn {turn} changed the tree"
        );
    }
    let last = manifests.last().unwrap().clone();

    // The rewind that needs the 20 MB file's old content is refused, and writes nothing.
    let refused = rewind(&sandbox, &[&session, "--to", "4", "--code"]);
    assert_ne!(refused.status.code(), Some(0), "{}", stdout(&refused));
    assert!(
        format!("{}{}", stdout(&refused), stderr(&refused)).contains("big.bin"),
        "the refusal names the file: {}{}",
        stdout(&refused),
        stderr(&refused)
    );
    assert_eq!(
        restorable(&cwd, &[]),
        last,
        "a refused rewind writes nothing"
    );

    // Every turn, rewound (the 20 MB file skipped), then undone.
    for turn in (1..=4).rev() {
        let to = turn.to_string();
        let back = rewind(
            &sandbox,
            &[&session, "--to", &to, "--code", "--skip-omitted"],
        );
        assert_eq!(
            back.status.code(),
            Some(0),
            "turn {turn}: {}",
            stderr(&back)
        );
        assert_eq!(
            restorable(&cwd, &["big.bin"]),
            {
                let mut expected = manifests[turn - 1].clone();
                expected.remove("big.bin");
                expected
            },
            "before turn {turn}, byte for byte"
        );
        let undo = rewind(&sandbox, &[&session, "--undo"]);
        assert_eq!(
            undo.status.code(),
            Some(0),
            "undo of turn {turn}: {}",
            stderr(&undo)
        );
        assert_eq!(restorable(&cwd, &[]), last, "the undo of turn {turn}");
    }
}

/// A rewind of session B while session C runs in the same workspace is not charged to
/// C's checkpoint: C records it apart (`rewind_elsewhere`), and a later rewind of C leaves
/// B's rewind alone while it restores C's own changes.
#[test]
fn a_rewind_of_another_session_is_not_charged_to_the_running_one() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    // C's bash call says when it runs with a file no checkpoint records (ignored).
    std::fs::write(cwd.join(".gitignore"), "*.flag\n").unwrap();
    let b_server = TestServer::start(Script::anthropic([
        Turn::text("Writing.")
            .with_tool_call("write", json!({"path": "b.txt", "content": "from B\n"})),
        Turn::text("B done."),
    ]))
    .unwrap();
    let b = session_of(&sandbox.run(
        &b_server,
        &[
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "session B",
        ],
    ));
    assert!(cwd.join("b.txt").exists());
    // Session C's bash call runs for a while; B is rewound meanwhile, from outside.
    let c_server = TestServer::start(Script::anthropic([
        Turn::text("Working.").with_tool_call(
            "bash",
            json!({"command": "touch running.flag && sleep 5 && echo c > c.txt"}),
        ),
        Turn::text("C done."),
    ]))
    .unwrap();
    let c_job = sandbox
        .pith(Some(&c_server))
        .args([
            "run",
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "json",
            "session C",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while !cwd.join("running.flag").exists() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(60),
            "C's bash call never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let rewound_b = rewind(&sandbox, &[&b, "--to", "1", "--code"]);
    assert_eq!(
        rewound_b.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&rewound_b)
    );
    assert!(!cwd.join("b.txt").exists(), "B's rewind removed its file");
    let c_output = c_job.wait_with_output().unwrap();
    let c = session_of(&c_output);
    assert!(cwd.join("c.txt").exists());

    let transcript = transcripts(&sandbox.pith_home())
        .into_iter()
        .find(|path| path.to_string_lossy().contains(&c))
        .unwrap();
    let checkpoints: Vec<Value> = records(&transcript)
        .into_iter()
        .filter(|r| r["kind"] == "checkpoint")
        .collect();
    let paths_of = |record: &Value| -> Vec<String> {
        record["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let bash = checkpoints
        .iter()
        .find(|r| r["tool"] == "bash")
        .expect("a checkpoint of C's bash call");
    assert_eq!(
        paths_of(bash),
        ["c.txt"],
        "B's rewind is not C's bash call's"
    );
    let elsewhere = checkpoints
        .iter()
        .find(|r| r["rewind_elsewhere"] == true)
        .expect("B's rewind recorded apart");
    assert_eq!(paths_of(elsewhere), ["b.txt"]);

    // C's rewind restores C's change and leaves B's rewind as it is.
    let rewound_c = rewind(&sandbox, &[&c, "--to", "1", "--code"]);
    assert_eq!(
        rewound_c.status.code(),
        Some(0),
        "stderr: {}",
        stderr(&rewound_c)
    );
    assert!(!cwd.join("c.txt").exists());
    assert!(
        !cwd.join("b.txt").exists(),
        "B's rewind is not undone by C's"
    );
}
