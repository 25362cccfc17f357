//! The session store seen from a front-end: create, append, batch, reopen, recover,
//! lock, list and locate.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use pith_core::Message;
use pith_session::{
    project_model, CompactionTrigger, Event, NewSession, ReadOptions, SessionError, SessionStore,
};

fn new_session(cwd: &Path) -> NewSession {
    NewSession {
        cwd: cwd.to_path_buf(),
        provider: "openai".into(),
        model: "gpt-4o".into(),
    }
}

fn turn(text: &str) -> Event {
    Event::AssistantTurn {
        messages: vec![Message::assistant(text)],
        items: vec![],
        usage: None,
        interrupted: false,
        error: None,
        compaction_model_usage: None,
    }
}

fn compaction(summary: &str) -> Event {
    Event::CompactionApplied {
        trigger: CompactionTrigger::Auto,
        messages: vec![Message::user(format!(
            "<compacted_context>{summary}</compacted_context>"
        ))],
        summary: summary.into(),
        tokens_before: 900,
        tokens_after: 90,
        usage: None,
        ledger: None,
        ledger_tokens: 0,
        restored_files: Vec::new(),
        model: None,
    }
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_new_session_starts_with_session_started_and_private_permissions() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path().join("sessions"));
    let session = store.create(new_session(cwd.path())).unwrap();
    assert_eq!(session.next_seq(), 2);
    assert_eq!(mode(session.dir()), 0o700, "session dir must be 0700");
    assert_eq!(
        mode(session.dir().parent().unwrap()),
        0o700,
        "project dir must be 0700"
    );
    assert_eq!(
        mode(session.transcript_path()),
        0o600,
        "transcript must be 0600"
    );
    let spill = session.spill_dir().unwrap();
    assert_eq!(mode(&spill), 0o700, "spill dir must be 0700");
    let transcript = session.read(ReadOptions::default()).unwrap();
    match &transcript.records[0].event {
        Event::SessionStarted {
            session_id, cwd: c, ..
        } => {
            assert_eq!(session_id, session.id());
            assert_eq!(c, &fs::canonicalize(cwd.path()).unwrap());
        }
        other => panic!("first record must be session_started, got {other:?}"),
    }
    assert!(
        uuid_is_v7(session.id()),
        "session ids are uuid v7: {}",
        session.id()
    );
}

fn uuid_is_v7(id: &str) -> bool {
    id.len() == 36 && id.as_bytes()[14] == b'7'
}

#[test]
fn reopening_continues_the_sequence_numbers() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let id = {
        let mut session = store.create(new_session(cwd.path())).unwrap();
        assert_eq!(session.append(Event::user_text("one")).unwrap(), 2);
        assert_eq!(session.append(turn("answer")).unwrap(), 3);
        session.id().to_owned()
    };
    let mut session = store.open(&id).unwrap();
    assert_eq!(session.append(Event::user_text("two")).unwrap(), 4);
    let seqs: Vec<u64> = session
        .read(ReadOptions::default())
        .unwrap()
        .records
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
}

#[test]
fn a_second_writer_is_refused_with_the_holders_pid() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let session = store.create(new_session(cwd.path())).unwrap();
    let err = store.open(session.id()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session {} is in use by pid {}",
            session.id(),
            std::process::id()
        )
    );
    assert!(err.is_usage());
    // Readers are never blocked by the writer lock.
    store
        .read(session.id(), ReadOptions::default())
        .expect("reading a session in use must work");
}

#[test]
fn a_batch_is_appended_whole_and_appends_continue_after_it() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let mut session = store.create(new_session(cwd.path())).unwrap();
    session.append(Event::user_text("q")).unwrap();
    let seqs = session
        .append_batch(vec![turn("checkpoint"), compaction("sum")])
        .unwrap();
    assert_eq!(seqs, vec![3, 4]);
    assert_eq!(
        session.append(turn("after")).unwrap(),
        5,
        "append after a batch must reach the renamed transcript"
    );
    assert_eq!(mode(session.transcript_path()), 0o600);
    let transcript = session.read(ReadOptions::default()).unwrap();
    assert_eq!(transcript.records.len(), 5);
    assert_eq!(
        project_model(&transcript.records),
        vec![
            Message::user("<compacted_context>sum</compacted_context>"),
            Message::assistant("after")
        ]
    );
    let leftovers: Vec<String> = fs::read_dir(session.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    assert_eq!(session.append_batch(vec![]).unwrap(), Vec::<u64>::new());
}

#[test]
fn a_torn_tail_is_quarantined_on_open_and_the_session_continues() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let (id, path) = {
        let mut session = store.create(new_session(cwd.path())).unwrap();
        session.append(Event::user_text("kept")).unwrap();
        (
            session.id().to_owned(),
            session.transcript_path().to_path_buf(),
        )
    };
    let torn = br#"{"v":1,"seq":3,"ts":"2026-11-29T13:1"#;
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(torn)
        .unwrap();
    let read = store.read(&id, ReadOptions::default()).unwrap();
    assert!(
        read.report.torn_tail.is_some(),
        "readers report the torn tail"
    );
    let mut session = store.open(&id).unwrap();
    let quarantine = session
        .quarantine()
        .cloned()
        .expect("the torn tail must be quarantined");
    assert_eq!(fs::read(&quarantine.path).unwrap(), torn.to_vec());
    assert!(quarantine
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("transcript.jsonl.corrupt-"));
    assert_eq!(mode(&quarantine.path), 0o600);
    assert!(quarantine.warning().contains("moved to"));
    assert_eq!(session.append(Event::user_text("next")).unwrap(), 3);
    let read = session.read(ReadOptions::default()).unwrap();
    assert_eq!(read.records.len(), 3);
    assert!(read.report.torn_tail.is_none());
}

#[test]
fn resume_recovers_first_then_returns_the_history_to_continue_from() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let (id, path) = {
        let mut session = store.create(new_session(cwd.path())).unwrap();
        session.append(Event::user_text("q")).unwrap();
        session
            .append_batch(vec![turn("checkpoint"), compaction("sum")])
            .unwrap();
        session.append(turn("after")).unwrap();
        (
            session.id().to_owned(),
            session.transcript_path().to_path_buf(),
        )
    };
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"v\":1,\"seq\":6")
        .unwrap();
    let resumed = store.resume(&id).unwrap();
    let mut session = resumed.session;
    assert!(session.quarantine().is_some());
    assert_eq!(
        resumed.warnings.len(),
        1,
        "only the quarantine is reported: {:?}",
        resumed.warnings
    );
    assert_eq!(
        resumed.history,
        vec![
            Message::user("<compacted_context>sum</compacted_context>"),
            Message::assistant("after")
        ]
    );
    assert_eq!(session.append(Event::user_text("next")).unwrap(), 6);
}

#[test]
fn stale_batch_temp_files_are_removed_on_open() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let (id, dir) = {
        let session = store.create(new_session(cwd.path())).unwrap();
        (session.id().to_owned(), session.dir().to_path_buf())
    };
    fs::write(dir.join(".transcript.abc123.tmp"), "half a batch").unwrap();
    let _session = store.open(&id).unwrap();
    assert!(!dir.join(".transcript.abc123.tmp").exists());
}

#[test]
fn a_transcript_from_a_newer_pith_is_not_continued() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let (id, path) = {
        let session = store.create(new_session(cwd.path())).unwrap();
        (
            session.id().to_owned(),
            session.transcript_path().to_path_buf(),
        )
    };
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(
        file,
        r#"{{"v":2,"seq":2,"ts":"2026-11-29T13:10:15.123Z","kind":"user_message"}}"#
    )
    .unwrap();
    let err = store.open(&id).unwrap_err().to_string();
    assert!(
        err.contains("cannot be continued") && err.contains("newer pith"),
        "{err}"
    );
}

#[test]
fn sessions_are_found_by_id_prefix_and_path() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let a = store.create(new_session(cwd.path())).unwrap();
    let b = store.create(new_session(cwd.path())).unwrap();
    assert_eq!(store.locate(a.id()).unwrap(), a.dir());
    let unique = a
        .id()
        .char_indices()
        .find(|(i, _)| a.id()[..*i] != b.id()[..*i])
        .map_or(a.id().len(), |(i, _)| i);
    assert_eq!(store.locate(&a.id()[..unique]).unwrap(), a.dir());
    let err = store.locate(&a.id()[..4]).unwrap_err();
    assert!(
        matches!(err, SessionError::Ambiguous { .. }),
        "a shared prefix is ambiguous: {err}"
    );
    assert!(matches!(
        store.locate("nope").unwrap_err(),
        SessionError::NotFound { .. }
    ));
    let path = a.transcript_path().to_string_lossy().into_owned();
    assert_eq!(store.locate_transcript(&path).unwrap(), a.transcript_path());
    let dir = a.dir().to_string_lossy().into_owned();
    assert_eq!(store.locate(&dir).unwrap(), a.dir());
}

#[test]
fn listing_shows_the_current_project_unless_all() {
    let home = tempfile::tempdir().unwrap();
    let here = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let mut mine = store.create(new_session(here.path())).unwrap();
    mine.append(Event::user_text("one")).unwrap();
    mine.append(turn("a")).unwrap();
    mine.append(Event::user_text("two")).unwrap();
    let _other = store.create(new_session(elsewhere.path())).unwrap();
    let here_canonical = fs::canonicalize(here.path()).unwrap();
    let listed = store.list_sessions(Some(&here_canonical)).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let summary = &listed[0];
    assert_eq!(summary.id, mine.id());
    assert_eq!(summary.turns, 2);
    assert_eq!(summary.model.as_deref(), Some("gpt-4o"));
    assert_eq!(summary.cwd.as_deref(), Some(here_canonical.as_path()));
    assert_eq!(
        summary.size_bytes,
        fs::metadata(mine.transcript_path()).unwrap().len()
    );
    assert!(summary.last_activity >= summary.started);
    assert!(summary.problem.is_none());
    assert_eq!(store.list_sessions(None).unwrap().len(), 2);
    let empty_root = SessionStore::at(home.path().join("missing"));
    assert!(empty_root.list_sessions(None).unwrap().is_empty());
}

#[test]
fn an_unencodable_event_is_refused_without_consuming_a_sequence_number() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let mut session = store.create(new_session(cwd.path())).unwrap();
    let err = session
        .append(Event::Unknown {
            kind: "x".into(),
            raw: "{}".into(),
        })
        .unwrap_err();
    assert!(matches!(err, SessionError::UnknownKind { .. }), "{err}");
    assert_eq!(session.append(Event::user_text("ok")).unwrap(), 2);
}

#[test]
fn a_writer_in_another_process_blocks_a_second_writer_with_its_pid() {
    use std::io::{BufRead, BufReader};
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let root = home.path().join("sessions");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pith-crash-writer"))
        .arg(&root)
        .arg(cwd.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first_line = String::new();
    // Keep the pipe open while checking: a closed pipe would make the writer exit.
    let mut child_stdout = BufReader::new(child.stdout.take().unwrap());
    child_stdout.read_line(&mut first_line).unwrap();
    let id = first_line
        .trim()
        .strip_prefix("session ")
        .unwrap()
        .to_owned();
    let store = SessionStore::at(&root);
    let err = store.open(&id).unwrap_err();
    let expected = format!("session {id} is in use by pid {}", child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    drop(child_stdout);
    assert_eq!(err.to_string(), expected);
    store
        .open(&id)
        .expect("the lock of a killed writer must be free at once");
}

#[test]
fn a_session_whose_creation_was_interrupted_is_not_continued() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let (id, path) = {
        let session = store.create(new_session(cwd.path())).unwrap();
        (
            session.id().to_owned(),
            session.transcript_path().to_path_buf(),
        )
    };
    fs::write(&path, "").unwrap();
    let err = store.open(&id).unwrap_err().to_string();
    assert!(err.contains("no committed record"), "{err}");
}

/// Name of the test below, which re-executes itself as a child with a file-size limit.
const FULL_DISK_TEST: &str = "a_write_that_fails_midway_leaves_no_torn_line_and_loses_nothing";

#[test]
fn a_write_that_fails_midway_leaves_no_torn_line_and_loses_nothing() {
    if let Ok(dir) = std::env::var("PITH_FSIZE_CHILD") {
        write_past_a_file_size_limit(Path::new(&dir));
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let dir = {
        let mut session = store.create(new_session(cwd.path())).unwrap();
        session
            .append(Event::user_text("before the disk filled"))
            .unwrap();
        session.dir().to_path_buf()
    };
    // The limit is per process: apply it in a child so no other test is affected.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", FULL_DISK_TEST, "--nocapture", "--test-threads=1"])
        .env("PITH_FSIZE_CHILD", &dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let transcript =
        pith_session::read_transcript(&dir.join("transcript.jsonl"), ReadOptions::default())
            .expect("the transcript must read strictly after failed writes");
    assert_eq!(
        transcript.report,
        Default::default(),
        "no torn line left behind"
    );
    let texts: Vec<String> = transcript
        .records
        .iter()
        .filter_map(|r| match &r.event {
            Event::UserMessage { message } => Some(message.text_content()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["before the disk filled", "after space came back"]);
    let temp_files = fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count();
    assert_eq!(temp_files, 0, "a failed batch must not leave its temp file");
}

/// Child side: writes fail with EFBIG past a soft RLIMIT_FSIZE just above the current
/// transcript, as they would on a full disk.
#[allow(unsafe_code)] // setrlimit / signal: the test's stand-in for a full disk
fn write_past_a_file_size_limit(dir: &Path) {
    let mut session = pith_session::Session::open_dir(dir).unwrap();
    let len = fs::metadata(session.transcript_path()).unwrap().len();
    // SAFETY: plain libc calls with valid pointers to a local struct; ignoring SIGXFSZ
    // turns the signal into an EFBIG error from write.
    let hard = unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let mut limit = std::mem::zeroed::<libc::rlimit>();
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit), 0);
        let hard = limit.rlim_max;
        limit.rlim_cur = len + 64;
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        hard
    };
    let big = "x".repeat(4096);
    let err = session.append(Event::user_text(big.clone())).unwrap_err();
    assert!(err.to_string().contains("cannot append"), "{err}");
    let err = session
        .append_batch(vec![turn(&big), compaction("s")])
        .unwrap_err();
    assert!(err.to_string().contains("batch"), "{err}");
    unsafe {
        let limit = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    assert_eq!(
        session
            .append(Event::user_text("after space came back"))
            .unwrap(),
        3,
        "failed writes must not consume sequence numbers"
    );
}

#[test]
fn no_record_exceeds_the_bound_and_large_payloads_read_back_whole() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::at(root.path().join("sessions"));
    let mut session = store.create(new_session(root.path())).unwrap();
    session.set_max_record_bytes(64 * 1024);
    let pasted = "a huge paste ".repeat(40_000); // ≈ 520 KB
    let results: Vec<Message> = (0..6)
        .map(|i| Message::tool_result(format!("c{i}"), format!("{i}").repeat(30_000), false))
        .collect();
    session.append(Event::user_text(pasted.clone())).unwrap();
    session
        .append_batch(vec![Event::AssistantTurn {
            messages: results.clone(),
            items: Vec::new(),
            usage: None,
            interrupted: false,
            error: None,
            compaction_model_usage: None,
        }])
        .unwrap();
    let raw = fs::read_to_string(session.transcript_path()).unwrap();
    for line in raw.lines() {
        assert!(line.len() <= 64 * 1024, "a line of {} bytes", line.len());
    }
    let stored = session.dir().join("spill").join("records");
    assert!(
        fs::read_dir(&stored).unwrap().count() >= 2,
        "payloads stored beside it"
    );
    let id = session.id().to_owned();
    drop(session);
    let transcript = store.read(&id, ReadOptions::default()).unwrap();
    let history = project_model(&transcript.records);
    assert_eq!(history[0], Message::user(pasted));
    assert_eq!(&history[1..], &results[..], "every payload read back whole");
}

#[test]
fn a_line_too_long_to_hold_is_a_corrupt_line_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let mut file = fs::File::create(&path).unwrap();
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..=pith_session::MAX_LINE_BYTES / chunk.len() {
        file.write_all(&chunk).unwrap();
    }
    file.write_all(b"\n").unwrap();
    drop(file);
    let error = pith_session::read_transcript(&path, ReadOptions::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("more than the 67108864 a reader accepts"),
        "{error}"
    );
}

#[test]
fn delete_removes_a_session_and_its_subagents_and_refuses_one_in_use() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::at(root.path().join("sessions"));
    let other = store.create(new_session(root.path())).unwrap();
    let parent = store.create(new_session(root.path())).unwrap();
    let parent_id = parent.id().to_owned();
    let child = store
        .create_child(new_session(root.path()), &parent_id)
        .unwrap();
    let child_dir = child.dir().to_path_buf();
    drop(child);
    // Open here: refused, nothing deleted.
    match store.delete(&parent_id) {
        Err(SessionError::InUse { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(parent.dir().exists() && child_dir.exists());
    let parent_dir = parent.dir().to_path_buf();
    drop(parent);
    assert!(store.delete(&parent_id).unwrap());
    assert!(!parent_dir.exists() && !child_dir.exists());
    assert!(other.dir().exists(), "another session stays");
    // Gone, or never there: nothing to do.
    assert!(!store.delete(&parent_id).unwrap());
    assert!(!store.delete("not-a-session").unwrap());
    // An id prefix is not enough to delete.
    assert!(!store.delete(&other.id()[..8]).unwrap());
}
