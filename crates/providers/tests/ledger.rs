//! The session ledger through the real adapters against the testkit server: what an
//! automatic and a manual compaction carry besides the model's summary (the user's
//! messages verbatim, the files, the re-attached file contents when asked for), that it survives a
//! second compaction, and that it stays within its budget.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::*;
use pith_core::context::ledger::FileProbe;
use pith_core::prompts::{LEDGER_IN_SUMMARY_REQUEST, LEDGER_SUMMARY_WORDS};
use pith_core::{AutoCompaction, InMemory, LoopEvent};
use pith_providers::LoopOptions;
use pith_testkit::{Protocol, Turn};
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

for_each_protocol!(
    an_automatic_compaction_carries_the_ledger_and_the_files_worked_on,
    the_first_instruction_survives_two_compactions_verbatim,
    a_manual_compaction_carries_the_ledger_too,
    by_default_a_compaction_names_the_files_without_re_attaching_them,
    a_file_changed_on_disk_since_it_was_read_is_flagged,
    the_plan_survives_two_automatic_compactions_verbatim,
);

/// A disk held in memory: path → content.
#[derive(Default)]
struct MemoryDisk {
    files: Mutex<HashMap<String, String>>,
}

impl MemoryDisk {
    fn with(files: &[(&str, &str)]) -> Arc<Self> {
        let disk = Self::default();
        for (path, content) in files {
            disk.write(path, content);
        }
        Arc::new(disk)
    }

    fn write(&self, path: &str, content: &str) {
        self.files
            .lock()
            .unwrap()
            .insert(path.to_owned(), content.to_owned());
    }
}

impl FileProbe for MemoryDisk {
    fn fingerprint(&self, path: &str) -> Option<String> {
        let files = self.files.lock().unwrap();
        files
            .get(path)
            .map(|content| pith_core::effect::fingerprint(content.as_bytes()))
    }

    fn show(&self, path: &str, offset: u64, max_bytes: usize) -> Option<String> {
        let files = self.files.lock().unwrap();
        let content = files.get(path)?;
        let shown: String = content
            .lines()
            .enumerate()
            .skip(offset.saturating_sub(1) as usize)
            .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
            .collect();
        Some(shown.chars().take(max_bytes).collect())
    }
}

/// A harness with the default ledger options (on, no file re-attached) and a small
/// window, so the ledger's budget binds.
fn ledger_harness(protocol: Protocol, turns: Vec<Turn>, disk: Arc<MemoryDisk>) -> Harness {
    harness_with_ledger(
        protocol,
        turns,
        disk,
        pith_providers::LedgerOptions::default(),
    )
}

/// [`ledger_harness`] with re-attached files turned on as `restore_files = 3` does.
fn restoring_harness(protocol: Protocol, turns: Vec<Turn>, disk: Arc<MemoryDisk>) -> Harness {
    let ledger = pith_providers::LedgerOptions {
        restore_files: 3,
        ..pith_providers::LedgerOptions::default()
    };
    harness_with_ledger(protocol, turns, disk, ledger)
}

fn harness_with_ledger(
    protocol: Protocol,
    turns: Vec<Turn>,
    disk: Arc<MemoryDisk>,
    ledger: pith_providers::LedgerOptions,
) -> Harness {
    let options = LoopOptions {
        ledger,
        ..fast_options()
    };
    let mut h = harness_with(protocol, turns, WINDOW, options);
    h.agent.set_file_probe(disk);
    h
}

/// The ledger tokens of every applied automatic compaction.
fn applied_ledger_tokens(events: &[LoopEvent]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::AutoCompaction(AutoCompaction::Applied { figures, .. }) => {
                Some(figures.ledger_tokens)
            }
            _ => None,
        })
        .collect()
}

async fn an_automatic_compaction_carries_the_ledger_and_the_files_worked_on(protocol: Protocol) {
    let disk = MemoryDisk::with(&[
        ("src/lib.rs", "pub fn parse() {}\n"),
        ("tests/parser.rs", "#[test]\nfn parses() {}\n"),
    ]);
    let mut h = restoring_harness(
        protocol,
        vec![
            Turn::text("Let me look.").with_tool_call("read", json!({"path": "src/lib.rs"})),
            Turn::text("And the tests.")
                .with_tool_call("read", json!({"path": "tests/parser.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
        disk,
    );
    let run = h.turn("fix the parser; never rename pub items").await;
    run.outcome.expect("the turn completes");
    let tokens = applied_ledger_tokens(&run.events);
    assert_eq!(tokens.len(), 1, "one compaction");
    let budget = h.agent.budget().input_budget / 10;
    assert!(
        tokens[0] > 0 && tokens[0] <= budget,
        "ledger tokens {} within 10% of the input budget ({budget})",
        tokens[0]
    );

    let requests = h.requests();
    assert_eq!(requests.len(), 4);
    // The summary request shows the model the ledger it need not repeat.
    let prompt = requests[2].last_user_text();
    assert!(prompt.contains(LEDGER_IN_SUMMARY_REQUEST), "{prompt}");
    assert!(prompt.contains("<session_ledger>"));

    // The next parent request starts from the replacement: summary, ledger, files, and
    // the latest user message last.
    let replacement = &requests[3].user_texts()[0];
    assert!(replacement.starts_with(&format!("<compacted_context>{SUMMARY}")));
    let ledger_at = replacement.find("<session_ledger>").expect("ledger");
    let files_at = replacement
        .find("<restored_file path=\"tests/parser.rs\">")
        .expect("the latest file is re-attached");
    let last_at = replacement
        .find("<last_user_message>fix the parser; never rename pub items</last_user_message>")
        .expect("the latest user message closes it");
    assert!(ledger_at < files_at && files_at < last_at, "{replacement}");
    let ledger = &replacement[ledger_at..files_at];
    assert!(ledger.contains("- src/lib.rs: read"), "{ledger}");
    assert!(ledger.contains("- tests/parser.rs: read"), "{ledger}");
    assert!(
        replacement.contains("     2\tfn parses() {}"),
        "the file as read shows it: {replacement}"
    );
    // The latest user message is quoted once, after the ledger, not in it.
    assert_eq!(replacement.matches("never rename pub items").count(), 1);
    // The loop's history is what the next request carried.
    assert_eq!(h.agent.history()[0].text_content(), *replacement);
}

async fn the_first_instruction_survives_two_compactions_verbatim(protocol: Protocol) {
    let disk = MemoryDisk::with(&[("a.rs", "a\n"), ("b.rs", "b\n")]);
    let instruction = "Use tabs, not spaces, in every file you touch.";
    let mut h = ledger_harness(
        protocol,
        vec![
            Turn::text("Noted."),
            Turn::text("Looking.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            // A summary that forgot the instruction.
            Turn::text("## Goal\nWork on a.rs."),
            // The first report after the compaction verifies it: under the threshold.
            Turn::text("Next.").with_tool_call("read", json!({"path": "b.rs"})),
            Turn::text("Again.")
                .with_tool_call("read", json!({"path": "b.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text("## Goal\nWork on b.rs."),
            Turn::text("Done."),
        ],
        disk,
    );
    h.turn(instruction).await.outcome.expect("first turn");
    let run = h.turn("now look at the files").await;
    run.outcome.expect("second turn");
    assert_eq!(
        applied_ledger_tokens(&run.events).len(),
        2,
        "two compactions"
    );
    let requests = h.requests();
    let last = requests.last().unwrap().user_texts()[0].clone();
    assert!(last.contains("<compacted_context>## Goal\nWork on b.rs."));
    assert!(
        last.contains(&format!("- {instruction}")) || last.contains(instruction),
        "the first instruction is carried verbatim by the ledger: {last}"
    );
    // Both files are still in the ledger after the second compaction.
    assert!(
        last.contains("- a.rs: read") && last.contains("- b.rs: read"),
        "{last}"
    );
    // The previous ledger is not nested inside the new one.
    assert_eq!(last.matches("<session_ledger>").count(), 1, "{last}");
}

/// A turn that reads notes.md (holding "remember") with `prompt`, then a manual
/// compaction; `harness` builds the loop (its ledger options are what differs).
async fn read_notes_then_compact(
    protocol: Protocol,
    harness: fn(Protocol, Vec<Turn>, Arc<MemoryDisk>) -> Harness,
    prompt: &str,
) -> (Harness, pith_providers::ManualCompaction) {
    let disk = MemoryDisk::with(&[("notes.md", "remember\n")]);
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Reading.").with_tool_call("read", json!({"path": "notes.md"})),
            Turn::text("Read it."),
            Turn::text(SUMMARY),
        ],
        disk,
    );
    h.turn(prompt).await.outcome.expect("first turn");
    let (tx, _rx) = unbounded_channel();
    let result = h
        .agent
        .compact(None, &mut InMemory::new(tx), &CancellationToken::new())
        .await
        .expect("the manual compaction succeeds");
    (h, result)
}

async fn by_default_a_compaction_names_the_files_without_re_attaching_them(protocol: Protocol) {
    let (h, result) = read_notes_then_compact(protocol, ledger_harness, "read notes.md").await;
    assert!(
        result.restored_files.is_empty(),
        "{:?}",
        result.restored_files
    );
    let text = h.agent.history()[0].text_content();
    assert!(!text.contains("<restored_file"), "{text}");
    assert!(
        !text.contains("remember"),
        "the content stays on disk: {text}"
    );
    assert!(
        text.contains("- notes.md: read"),
        "the ledger names it: {text}"
    );
}

async fn a_manual_compaction_carries_the_ledger_too(protocol: Protocol) {
    let (h, result) = read_notes_then_compact(
        protocol,
        restoring_harness,
        "read notes.md and keep the API stable",
    )
    .await;
    assert!(result.ledger_tokens > 0);
    assert_eq!(result.restored_files, vec!["notes.md".to_owned()]);
    let history = h.agent.history();
    assert_eq!(history.len(), 1);
    let text = history[0].text_content();
    assert!(text.starts_with(&format!("<compacted_context>{SUMMARY}</compacted_context>")));
    assert!(
        text.contains("read notes.md and keep the API stable"),
        "{text}"
    );
    assert!(text.contains("<restored_file path=\"notes.md\">"), "{text}");
    let prompt = h.requests()[2].last_user_text();
    assert!(prompt.contains(LEDGER_IN_SUMMARY_REQUEST));
    // The summary request lists the user's message (its text is in the history above)
    // and asks for the short schema; the replacement quotes the message.
    assert!(
        prompt.contains("--- message 1: ") && prompt.contains("tokens, attached whole"),
        "{prompt}"
    );
    assert!(!prompt.contains("keep the API stable"), "{prompt}");
    assert!(prompt.contains(&format!("under about {LEDGER_SUMMARY_WORDS} words")));
    assert!(!prompt.contains("## Relevant Files"), "{prompt}");
}

async fn a_file_changed_on_disk_since_it_was_read_is_flagged(protocol: Protocol) {
    let disk = MemoryDisk::with(&[("config.toml", "x = 1\n"), ("other.rs", "fn f() {}\n")]);
    let mut h = ledger_harness(
        protocol,
        vec![
            Turn::text("Reading.").with_tool_call("read", json!({"path": "config.toml"})),
            Turn::text("Read it."),
            Turn::text("Other.")
                .with_tool_call("read", json!({"path": "other.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
        disk.clone(),
    );
    h.turn("read the config").await.outcome.expect("first turn");
    // Someone else edits the file between turns.
    disk.write("config.toml", "x = 2\n");
    h.turn("now other.rs").await.outcome.expect("second turn");
    let requests = h.requests();
    let replacement = requests.last().unwrap().user_texts()[0].clone();
    let line = replacement
        .lines()
        .find(|l| l.starts_with("- config.toml"))
        .unwrap_or_else(|| panic!("config.toml in the ledger: {replacement}"));
    assert!(line.contains("CHANGED ON DISK since last seen"), "{line}");
    let other = replacement
        .lines()
        .find(|l| l.starts_with("- other.rs"))
        .expect("other.rs in the ledger");
    assert!(!other.contains("CHANGED"), "{other}");
}

async fn the_plan_survives_two_automatic_compactions_verbatim(protocol: Protocol) {
    let disk = MemoryDisk::with(&[("a.rs", "a\n"), ("b.rs", "b\n")]);
    let steps = json!([
        {"step": "read a.rs and b.rs", "status": "done", "note": "b.rs has the bug"},
        {"step": "fix the off-by-one in b.rs", "status": "in_progress"},
        {"step": "run the tests", "status": "pending"}
    ]);
    let mut h = ledger_harness(
        protocol,
        vec![
            Turn::text("Planning.").with_tool_call("update_plan", json!({ "steps": steps })),
            Turn::text("Looking.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            // A summary that forgot the plan.
            Turn::text("## Goal\nWork on a.rs."),
            // The first report after the compaction verifies it: under the threshold.
            Turn::text("Noted."),
            Turn::text("Again.")
                .with_tool_call("read", json!({"path": "b.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text("## Goal\nWork on b.rs."),
            Turn::text("Done."),
        ],
        disk,
    );
    h.agent.tools().register(Arc::new(pith_tools::PlanTool));
    let first = h.turn("fix the bug").await;
    first.outcome.expect("first turn");
    let plan = pith_core::Plan::from_arguments(&json!({ "steps": steps })).unwrap();
    let sent: Vec<&pith_core::Plan> = first
        .events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::PlanUpdated(plan) => Some(plan),
            _ => None,
        })
        .collect();
    assert_eq!(sent, vec![&plan], "the event carries every step");
    let second = h.turn("go on").await;
    second.outcome.expect("second turn");
    assert_eq!(applied_ledger_tokens(&first.events).len(), 1);
    assert_eq!(applied_ledger_tokens(&second.events).len(), 1);
    let expected = format!(
        "{}\n[x] read a.rs and b.rs — b.rs has the bug\n[~] fix the off-by-one in b.rs\n\
         [ ] run the tests\n",
        pith_core::context::ledger::render::PLAN_HEADING
    );
    let requests = h.requests();
    // The request right after each compaction carries the plan verbatim.
    let after: Vec<String> = requests
        .iter()
        .map(|r| r.user_texts().first().cloned().unwrap_or_default())
        .filter(|first| first.starts_with("<compacted_context>"))
        .collect();
    assert!(
        after.len() >= 2,
        "{} requests after compactions",
        after.len()
    );
    for replacement in &after {
        assert_eq!(replacement.matches(&expected).count(), 1, "{replacement}");
    }
    // So does the loop's history now.
    assert!(h.agent.history()[0].text_content().contains(&expected));
}
