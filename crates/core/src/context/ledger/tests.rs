use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::context::prompts::TRUNCATION_NOTICE_PREFIX;
use crate::protocol::effect::{FileAction, FileEffect};
use crate::protocol::message::{Message, Part, Role, ToolCall, ToolResult};
use crate::{BpeCounter, Encoding, TokenCounter};

fn counter() -> BpeCounter {
    BpeCounter::new(Encoding::O200kBase)
}

fn big_budget() -> LedgerBudget {
    LedgerBudget {
        total_tokens: 20_000,
        user_messages_tokens: 8_000,
    }
}

fn bash_call(id: &str, command: &str) -> Message {
    Message::assistant_with_calls(
        "",
        vec![ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: json!({ "command": command }),
        }],
    )
}

fn run(ledger: &mut Ledger, id: &str, command: &str, output: &str, code: i32) {
    ledger.observe_message(&bash_call(id, command), None);
    let content = format!("{output}\n[exit code: {code}]");
    ledger.observe_message(&Message::tool_result(id, content, code != 0), None);
}

fn text(ledger: &Ledger) -> String {
    render(ledger, big_budget(), false, &counter(), None)
        .map(|r| r.text)
        .unwrap_or_default()
}

/// A disk with fixed fingerprints.
struct FakeDisk(Mutex<HashMap<String, String>>);

impl FileProbe for FakeDisk {
    fn fingerprint(&self, path: &str) -> Option<String> {
        self.0.lock().unwrap().get(path).cloned()
    }
    fn show(&self, path: &str, _offset: u64, _max_bytes: usize) -> Option<String> {
        self.fingerprint(path)
            .map(|f| format!("     1\tcontent of {path} ({f})"))
    }
}

#[test]
fn files_one_command_touched_together_come_in_path_order_newest_call_first() {
    let names = ["h", "a", "f", "c", "g", "b", "e", "d"];
    let together: Vec<String> = names.iter().map(|n| format!("src/{n}.py")).collect();
    let mut ledger = Ledger::new(None);
    run(&mut ledger, "a", "cat src/old.py", "x", 0);
    run(
        &mut ledger,
        "b",
        &format!("cat {}", together.join(" ")),
        "x",
        0,
    );
    let order: Vec<&str> = ledger.files().iter().map(|f| f.path.as_str()).collect();
    let mut expected: Vec<String> = together.clone();
    expected.sort();
    expected.push("src/old.py".to_owned());
    assert_eq!(order, expected);
    let recent: Vec<&str> = ledger
        .recent_files(3)
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(recent, ["src/a.py", "src/b.py", "src/c.py"]);
}

#[test]
fn user_messages_are_kept_verbatim_newest_first_and_repeats_once() {
    let mut ledger = Ledger::new(None);
    ledger.observe_user("never touch the public API");
    ledger.observe_user("continue");
    ledger.observe_user("continue");
    ledger.observe_user(&format!("{TRUNCATION_NOTICE_PREFIX}: cut"));
    ledger.observe_user("now fix the test");
    let out = text(&ledger);
    let api = out.find("never touch the public API").unwrap();
    let cont = out.find("continue").unwrap();
    let fix = out.find("now fix the test").unwrap();
    assert!(fix < cont && cont < api, "{out}");
    assert!(out.contains("(sent 2 times)"), "{out}");
    assert!(
        !out.contains("was cut off") && !out.contains(": cut"),
        "{out}"
    );
    let without_latest = render(&ledger, big_budget(), true, &counter(), None)
        .unwrap()
        .text;
    assert!(!without_latest.contains("now fix the test"));
    assert!(without_latest.contains("never touch the public API"));
}

#[test]
fn shell_commands_give_files_commands_and_spills() {
    let mut ledger = Ledger::new(Some("/work/repo/".into()));
    run(
        &mut ledger,
        "1",
        "nl -ba src/app.py | sed -n '10,40p'",
        "10\tx",
        0,
    );
    run(&mut ledger, "2", "sed -n '50,60p' src/app.py", "50\ty", 0);
    run(
        &mut ledger,
        "3",
        "sed -i 's/a/b/' /work/repo/src/app.py",
        "",
        0,
    );
    run(
        &mut ledger,
        "4",
        "cat <<'EOF' > repro.py\nimport app\nEOF",
        "",
        0,
    );
    run(
        &mut ledger,
        "5",
        "python repro.py",
        "Traceback (most recent call last):\n  File \"repro.py\", line 1\nValueError: bad input\n[full output: $PITH_SPILL_DIR/3.txt]",
        1,
    );
    run(
        &mut ledger,
        "6",
        "cat missing.py",
        "cat: missing.py: No such file",
        1,
    );
    let out = text(&ledger);
    assert!(
        out.contains("- src/app.py: edited (turn 3); read lines 10-40, 50-60"),
        "{out}"
    );
    assert!(out.contains("- repro.py: written (turn 4)"), "{out}");
    assert!(
        !out.contains("- missing.py"),
        "a failed read is no read: {out}"
    );
    assert!(
        out.contains("- `python repro.py` → exit 1 (turn 5)\n  last error: ValueError: bad input\n  full output: $PITH_SPILL_DIR/3.txt"),
        "{out}"
    );
    assert!(
        !out.contains("- $PITH_SPILL_DIR/3.txt ←"),
        "a spill named next to its command is not listed twice: {out}"
    );
    assert!(
        out.contains("`cat <<'EOF' > repro.py … (+2 lines)` → exit 0"),
        "{out}"
    );
}

#[test]
fn full_outputs_list_each_commands_newest_spill_once_and_count_the_rest() {
    let mut ledger = Ledger::new(None);
    let spilled = |n: u32| format!("FAILED test_{n}\n[full output: $PITH_SPILL_DIR/{n}.txt]");
    // Three runs of one test command, one of them with other spacing (the first two pass,
    // the last fails), then a user message and two `read` outputs that spilled.
    run(&mut ledger, "1", "pytest  tests/", &spilled(1), 0);
    run(&mut ledger, "2", "pytest tests/", &spilled(2), 0);
    run(&mut ledger, "3", "python repro.py", &spilled(3), 0);
    run(&mut ledger, "4", "pytest tests/", &spilled(4), 1);
    ledger.observe_user("long log\n[full output: $PITH_SPILL_DIR/5.txt]");
    ledger.observe_user("another log\n[full output: $PITH_SPILL_DIR/6.txt]");
    for (id, n) in [("7", 7), ("8", 8)] {
        ledger.observe_message(
            &Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: id.into(),
                    name: "read".into(),
                    arguments: json!({ "path": format!("big_{n}.log") }),
                }],
            ),
            None,
        );
        ledger.observe_message(
            &Message::tool_result(
                id,
                format!("x\n[full output: $PITH_SPILL_DIR/{n}.txt]"),
                false,
            ),
            None,
        );
    }
    // Ten newer commands push the test runs out of the Commands section's recent ten.
    for i in 0..10 {
        run(
            &mut ledger,
            &format!("c{i}"),
            &format!("ls dir_{i}"),
            "ok",
            0,
        );
    }
    let out = text(&ledger);
    let full = out
        .split("## Full outputs")
        .nth(1)
        .unwrap_or_else(|| panic!("no Full outputs section: {out}"));
    // The passing command pushed out of the Commands section, both user messages and
    // both reads.
    for n in [3, 5, 6, 7, 8] {
        assert!(
            full.contains(&format!("$PITH_SPILL_DIR/{n}.txt ←")),
            "{n}: {full}"
        );
    }
    // The earlier runs of `pytest tests/` are superseded, and counted.
    assert!(
        !full.contains("/1.txt") && !full.contains("/2.txt"),
        "{full}"
    );
    assert!(full.contains("[2 older spill files omitted]"), "{full}");
    // The latest failure stays in the Commands section with its file, and is not
    // listed a second time.
    assert!(out.contains("full output: $PITH_SPILL_DIR/4.txt"), "{out}");
    assert!(!full.contains("/4.txt"), "{full}");
    // An older failing run the Commands section still names is not counted as omitted.
    let mut named = Ledger::new(None);
    run(&mut named, "1", "pytest tests/", &spilled(1), 1);
    run(&mut named, "2", "pytest tests/", &spilled(2), 1);
    named.observe_user("a long log\n[full output: $PITH_SPILL_DIR/9.txt]");
    let out = text(&named);
    assert!(
        out.contains("- $PITH_SPILL_DIR/9.txt ← a user message"),
        "{out}"
    );
    assert!(out.contains("full output: $PITH_SPILL_DIR/1.txt"), "{out}");
    assert!(!out.contains("spill files omitted"), "{out}");
}

#[test]
fn a_test_run_too_large_for_its_share_keeps_its_first_failing_tests() {
    let mut ledger = Ledger::new(None);
    let failures: String = (0..60)
        .map(|i| format!("FAILED tests/test_api.py::test_case_{i} - AssertionError: value {i} differs from the expected one\n"))
        .collect();
    run(&mut ledger, "1", "pytest tests/", &failures, 1);
    let budget = LedgerBudget {
        total_tokens: 600,
        user_messages_tokens: 600,
    };
    let out = render(&ledger, budget, false, &counter(), None).unwrap();
    assert!(out.tokens <= 600, "{}", out.tokens);
    let tests = out
        .text
        .split("## Failing tests")
        .nth(1)
        .unwrap_or_else(|| panic!("{}", out.text));
    // Not the whole run, but its first failing tests and a count of the rest.
    assert!(tests.contains("test_case_0"), "{}", out.text);
    assert!(!tests.contains("test_case_59"), "{}", out.text);
    assert!(tests.contains("more lines omitted]"), "{}", out.text);
}

#[test]
fn effects_win_over_arguments_and_read_arguments_are_understood() {
    let mut ledger = Ledger::new(None);
    let call = |id: &str, name: &str, args: serde_json::Value| {
        Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args,
            }],
        )
    };
    ledger.observe_message(
        &call(
            "a",
            "read",
            json!({"path": "lib.rs", "offset": 5, "limit": 10}),
        ),
        None,
    );
    ledger.observe_message(&Message::tool_result("a", "5\tx", false), None);
    ledger.observe_message(&call("b", "bash", json!({"command": "make"})), None);
    let mut result = ToolResult::new("b", "[exit code: 0]", false);
    result.effects.push(FileEffect {
        path: "gen/out.c".into(),
        action: FileAction::Changed,
        lines: None,
        fingerprint: None,
    });
    ledger.observe_message(
        &Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult(result)],
        },
        None,
    );
    ledger.observe_message(&call("c", "write", json!({"path": "x.txt"})), None);
    ledger.observe_message(&Message::tool_result("c", "refused", true), None);
    let out = text(&ledger);
    assert!(
        out.contains("- lib.rs: read (turn 1); read lines 5-14"),
        "{out}"
    );
    assert!(
        out.contains("- gen/out.c: changed by a command (turn 2)"),
        "{out}"
    );
    assert!(
        !out.contains("x.txt"),
        "a refused write changed nothing: {out}"
    );
}

#[test]
fn failing_tests_stay_until_the_same_command_passes() {
    let mut ledger = Ledger::new(None);
    let failing = "=== FAILURES ===\n___ test_a ___\nE   AssertionError: 1 != 2\n=== short test summary info ===\nFAILED tests/test_x.py::test_a - AssertionError: 1 != 2\n=== 1 failed in 0.1s ===";
    run(&mut ledger, "1", "pytest tests/test_x.py", failing, 1);
    run(&mut ledger, "2", "pytest tests/test_y.py", failing, 1);
    let out = text(&ledger);
    assert!(
        out.contains("- `pytest tests/test_x.py` (turn 1): 1 failing\n  - tests/test_x.py::test_a: AssertionError: 1 != 2"),
        "{out}"
    );
    run(
        &mut ledger,
        "3",
        "pytest  tests/test_x.py",
        "=== 3 passed in 0.1s ===",
        0,
    );
    let out = text(&ledger);
    assert!(!out.contains("`pytest tests/test_x.py` (turn"), "{out}");
    assert!(
        out.contains("`pytest tests/test_y.py` (turn 2): 1 failing"),
        "{out}"
    );
}

#[test]
fn failing_commands_outlive_passing_ones_until_they_pass() {
    let mut ledger = Ledger::new(None);
    run(
        &mut ledger,
        "f",
        "cargo build",
        "error[E0308]: mismatched types",
        101,
    );
    run(&mut ledger, "g", "make docs", "fatal: no docs", 2);
    for i in 0..30 {
        run(&mut ledger, &format!("ok{i}"), &format!("echo {i}"), "", 0);
    }
    let out = text(&ledger);
    assert!(out.contains("`cargo build` → exit 101"), "{out}");
    assert!(out.contains("error[E0308]: mismatched types"), "{out}");
    assert!(
        !out.contains("`echo 3` →"),
        "old passing commands go: {out}"
    );
    assert!(out.contains("[20 older commands omitted]"), "{out}");
    run(&mut ledger, "h", "cargo build", "Finished", 0);
    for i in 0..10 {
        run(
            &mut ledger,
            &format!("more{i}"),
            &format!("echo more {i}"),
            "",
            0,
        );
    }
    let out = text(&ledger);
    assert!(
        !out.contains("mismatched types"),
        "fixed failures go: {out}"
    );
    assert!(out.contains("`make docs` → exit 2"), "{out}");
    // The latest failure stays after it is fixed, saying so.
    run(&mut ledger, "i", "make docs", "built", 0);
    for i in 0..10 {
        run(
            &mut ledger,
            &format!("last{i}"),
            &format!("echo last {i}"),
            "",
            0,
        );
    }
    let out = text(&ledger);
    assert!(
        out.contains(
            "`make docs` → exit 2 (turn 2); a later run passed\n  last error: fatal: no docs"
        ),
        "{out}"
    );
}

#[test]
fn files_changed_on_disk_since_last_seen_are_flagged() {
    let disk = FakeDisk(Mutex::new(HashMap::from([
        ("a.rs".to_owned(), "1:aaaa".to_owned()),
        ("b.rs".to_owned(), "1:bbbb".to_owned()),
    ])));
    let mut ledger = Ledger::new(None);
    ledger.observe_message(&bash_call("1", "cat a.rs b.rs gone.rs"), Some(&disk));
    ledger.observe_message(
        &Message::tool_result("1", "x\n[exit code: 0]", false),
        Some(&disk),
    );
    disk.0
        .lock()
        .unwrap()
        .insert("a.rs".into(), "2:cccc".into());
    disk.0.lock().unwrap().remove("b.rs");
    let out = render(&ledger, big_budget(), false, &counter(), Some(&disk))
        .unwrap()
        .text;
    assert!(
        out.contains("- a.rs: read (turn 1); read whole; CHANGED ON DISK since last seen"),
        "{out}"
    );
    assert!(
        out.contains("- b.rs: read (turn 1); read whole; MISSING on disk now"),
        "{out}"
    );
    assert!(
        out.contains("- gone.rs: read (turn 1); read whole\n"),
        "never seen, no claim: {out}"
    );
    ledger.mark_seen("a.rs", Some("2:cccc".into()));
    let out = render(&ledger, big_budget(), false, &counter(), Some(&disk))
        .unwrap()
        .text;
    assert!(
        !out.contains("a.rs: read (turn 1); read whole; CHANGED"),
        "{out}"
    );
}

#[test]
fn the_rendered_ledger_never_exceeds_its_budget_and_says_what_it_left_out() {
    let counter = counter();
    let mut ledger = Ledger::new(None);
    ledger.observe_user(&format!(
        "START {} END",
        "the task in detail ".repeat(3_000)
    ));
    for i in 0..40 {
        ledger.observe_user(&format!("instruction number {i}: keep going"));
    }
    for i in 0..300 {
        run(
            &mut ledger,
            &format!("c{i}"),
            &format!("sed -i 's/x/y/' src/file_{i}.py && cat src/other_{i}.py"),
            "boom error here",
            i % 3,
        );
    }
    for total in [0, 40, 200, 1_000, 2_790, 8_000] {
        let budget = LedgerBudget {
            total_tokens: total,
            user_messages_tokens: total.min(8_000),
        };
        let Some(rendered) = render(&ledger, budget, true, &counter, None) else {
            assert_eq!(total, 0);
            continue;
        };
        assert!(
            rendered.tokens <= total && counter.count(&rendered.text) == rendered.tokens,
            "{} > {total}",
            rendered.tokens
        );
        assert!(rendered.omitted > 0);
        if total >= 1_000 {
            let text = &rendered.text;
            // The long first message is either cut around a marker or counted as left out.
            assert!(
                text.contains("older user messages omitted]") || text.contains("tokens omitted]"),
                "{text}"
            );
            assert!(text.contains("older files omitted]"), "{text}");
            assert!(
                text.contains("src/file_299.py: edited"),
                "newest first: {text}"
            );
            assert!(text.starts_with(render::LEDGER_OPEN) && text.ends_with(render::LEDGER_CLOSE));
        }
    }
    // A message longer than its share keeps head and tail around the marker.
    let mut one = Ledger::new(None);
    one.observe_user(&format!(
        "START {} END",
        "the task in detail ".repeat(3_000)
    ));
    let budget = LedgerBudget {
        total_tokens: 1_000,
        user_messages_tokens: 1_000,
    };
    let text = render(&one, budget, false, &counter, None).unwrap().text;
    assert!(
        text.contains("START") && text.contains("END") && text.contains("tokens omitted]"),
        "{text}"
    );
}

#[test]
fn rebuilding_from_the_record_gives_the_live_ledger() {
    let messages = vec![
        bash_call("1", "cat a.py"),
        Message::tool_result("1", "x\n[exit code: 0]", false),
        bash_call("2", "pytest"),
        Message::tool_result(
            "2",
            "FAILED t.py::test_a - AssertionError\n=== 1 failed ===\n[exit code: 1]",
            true,
        ),
    ];
    let mut live = Ledger::new(None);
    live.observe_user("do it");
    for message in &messages {
        live.observe_message(message, None);
    }
    let observed =
        std::iter::once(Observed::User("do it")).chain(messages.iter().map(Observed::Message));
    assert_eq!(Ledger::rebuild(None, observed), live);
    let mut cleared = live.clone();
    cleared.reset();
    assert!(cleared.is_empty());
}

#[test]
fn exit_codes_spills_and_error_lines_are_read_from_pith_output() {
    assert_eq!(exit_code("a\n[exit code: 2]"), Some(2));
    assert_eq!(exit_code("no code"), None);
    assert_eq!(
        spill_path("x\n[full output: $PITH_SPILL_DIR/7.txt]\n[exit code: 0]").as_deref(),
        Some("$PITH_SPILL_DIR/7.txt")
    );
    assert_eq!(
        error_line("ok\nerror: linking failed\nsummary line\n[exit code: 1]").as_deref(),
        Some("error: linking failed")
    );
    assert_eq!(
        error_line("just output\nlast\n[exit code: 3]").as_deref(),
        Some("last")
    );
    assert_eq!(error_line("(no output)\n[exit code: 1]"), None);
    let argv = ToolCall {
        id: "x".into(),
        name: "shell".into(),
        arguments: json!({"command": ["bash", "-lc", "cat a.txt"]}),
    };
    assert_eq!(shell_command(&argv).as_deref(), Some("cat a.txt"));
}

#[test]
fn a_bash_call_with_git_effects_still_records_what_the_parse_sees() {
    let mut ledger = Ledger::new(Some("/repo".into()));
    ledger.observe_message(
        &bash_call(
            "a",
            "cat src/main.rs && sed -i 's/a/b/' src/lib.rs && echo x > /tmp/notes.txt",
        ),
        None,
    );
    let mut result = ToolResult::new("a", "fn main() {}\n[exit code: 0]", false);
    result.effects.push(FileEffect {
        path: "src/lib.rs".into(),
        action: FileAction::Changed,
        lines: None,
        fingerprint: Some("7:abc".into()),
    });
    ledger.observe_message(
        &Message {
            role: Role::Tool,
            parts: vec![Part::ToolResult(result)],
        },
        None,
    );
    let files: Vec<(String, FileAction)> = ledger
        .files()
        .iter()
        .map(|f| (f.path.clone(), f.last_action))
        .collect();
    assert!(
        files.contains(&("src/main.rs".into(), FileAction::Read)),
        "{files:?}"
    );
    assert!(
        files.contains(&("src/lib.rs".into(), FileAction::Changed)),
        "git's effect wins over the parse for the same file: {files:?}"
    );
    assert!(
        files
            .iter()
            .any(|(p, a)| p == "/tmp/notes.txt" && a.changes_file()),
        "a write git cannot see comes from the parse: {files:?}"
    );
    assert_eq!(files.len(), 3, "{files:?}");
}

#[test]
fn long_user_messages_share_the_budget_and_each_keeps_its_head_and_tail() {
    let mut ledger = Ledger::new(None);
    for i in 0..6 {
        let body: String = (0..150).map(|w| format!("word{i}x{w} ")).collect();
        ledger.observe_user(&format!("REQUEST-{i}-START {body} REQUEST-{i}-END"));
    }
    let budget = LedgerBudget {
        total_tokens: 2_000,
        user_messages_tokens: 2_000,
    };
    let rendered = render(&ledger, budget, false, &counter(), None).unwrap();
    assert!(rendered.tokens <= 2_000, "{}", rendered.tokens);
    for i in 0..6 {
        assert!(
            rendered.text.contains(&format!("REQUEST-{i}-START"))
                && rendered.text.contains(&format!("REQUEST-{i}-END")),
            "message {i} keeps its head and tail: {}",
            rendered.text
        );
    }
    assert_eq!(rendered.text.matches("tokens omitted]").count(), 6);
    // Far too small for all: the newest and the first stay, the ones between are counted.
    let tiny = LedgerBudget {
        total_tokens: 300,
        user_messages_tokens: 300,
    };
    let rendered = render(&ledger, tiny, false, &counter(), None).unwrap();
    assert!(rendered.tokens <= 300, "{}", rendered.tokens);
    assert!(
        rendered.text.contains("REQUEST-5-START") && rendered.text.contains("REQUEST-0-START"),
        "{}",
        rendered.text
    );
    assert!(
        rendered
            .text
            .contains("user messages after the first omitted]"),
        "{}",
        rendered.text
    );
}

#[test]
fn the_summary_request_form_lists_user_messages_with_the_replacements_cuts() {
    let mut ledger = Ledger::new(None);
    ledger.observe_user("short rule: keep the API");
    let body: String = (0..900).map(|w| format!("word{w} ")).collect();
    ledger.observe_user(&format!("LONG-START {body} LONG-END"));
    run(&mut ledger, "c1", "cargo test", "error: boom", 1);
    let budget = LedgerBudget {
        total_tokens: 800,
        user_messages_tokens: 600,
    };
    let rendered = render(&ledger, budget, false, &counter(), None).unwrap();
    // The replacement quotes both, the long one cut to its head and tail.
    assert!(rendered.text.contains("short rule: keep the API"));
    assert!(rendered.text.contains("LONG-START") && rendered.text.contains("LONG-END"));
    assert!(rendered.text.contains("tokens omitted]"));
    // The summary request lists them, saying which one the replacement cuts, and shows
    // the other sections exactly as the replacement does.
    let listed = &rendered.summary_request_text;
    assert!(
        !listed.contains("short rule") && !listed.contains("LONG-START"),
        "{listed}"
    );
    assert!(listed.contains("--- message 2: "), "{listed}");
    assert!(
        listed.contains("attached cut to its head and tail"),
        "{listed}"
    );
    assert!(listed.contains("--- message 1: "), "{listed}");
    assert!(listed.contains("tokens, attached whole"), "{listed}");
    let commands = |t: &str| t[t.find("## Commands").expect("commands")..].to_owned();
    assert_eq!(commands(listed), commands(&rendered.text));
    assert!(counter().count(listed) < rendered.tokens / 2);
}

#[test]
fn hook_context_appended_to_a_user_message_is_not_the_users_words() {
    let mut ledger = Ledger::new(None);
    let text = format!(
        "fix the bug{}{}",
        crate::protocol::hooks::context_block(crate::HookEvent::SessionStart, "branch: main"),
        crate::protocol::hooks::context_block(crate::HookEvent::UserPromptSubmit, "ticket 42")
    );
    ledger.observe_user(&text);
    ledger.observe_user("fix the bug");
    assert_eq!(ledger.user_messages().len(), 1);
    assert_eq!(ledger.user_messages()[0].text, "fix the bug");
    assert_eq!(ledger.user_messages()[0].count, 2);
}

#[test]
fn only_files_that_could_be_shown_are_checked_on_disk() {
    /// Counts fingerprint calls.
    struct CountingDisk(std::sync::atomic::AtomicUsize);
    impl FileProbe for CountingDisk {
        fn fingerprint(&self, _path: &str) -> Option<String> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some("same".into())
        }
        fn show(&self, _path: &str, _offset: u64, _max_bytes: usize) -> Option<String> {
            None
        }
    }
    let mut ledger = Ledger::new(None);
    for i in 0..400 {
        let call = Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: json!({ "path": format!("src/file_{i}.rs") }),
            }],
        );
        ledger.observe_message(&call, None);
        let mut result = ToolResult::new(format!("c{i}"), "x", false);
        result.effects.push(FileEffect {
            path: format!("src/file_{i}.rs"),
            action: FileAction::Read,
            lines: None,
            fingerprint: Some("same".into()),
        });
        ledger.observe_message(
            &Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult(result)],
            },
            None,
        );
    }
    let disk = CountingDisk(std::sync::atomic::AtomicUsize::new(0));
    let budget = LedgerBudget {
        total_tokens: 800,
        user_messages_tokens: 800,
    };
    let rendered = render(&ledger, budget, false, &counter(), Some(&disk)).unwrap();
    assert!(rendered.tokens <= 800);
    let probed = disk.0.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        probed <= 100,
        "{probed} fingerprints for an 800-token ledger"
    );
    assert!(probed >= 20, "the shown files are still checked: {probed}");
}

#[test]
fn a_user_message_stored_beside_the_transcript_is_listed_with_the_spills() {
    let mut ledger = Ledger::default();
    ledger.observe_user(
        "Find the failure.\n[pith: about 50,000 tokens of this message are left out here]\nend\n[full output: $PITH_SPILL_DIR/4.txt]",
    );
    assert_eq!(ledger.spills().len(), 1);
    assert_eq!(ledger.spills()[0].path, "$PITH_SPILL_DIR/4.txt");
    assert_eq!(ledger.spills()[0].origin, "a user message");
}

fn plan_call(id: &str, steps: serde_json::Value) -> Message {
    Message::assistant_with_calls(
        "",
        vec![ToolCall {
            id: id.into(),
            name: crate::PLAN_TOOL.into(),
            arguments: json!({ "steps": steps }),
        }],
    )
}

fn set_plan(ledger: &mut Ledger, id: &str, steps: serde_json::Value, refused: bool) {
    ledger.observe_message(&plan_call(id, steps), None);
    let content = if refused {
        "invalid arguments: no"
    } else {
        "Plan updated."
    };
    ledger.observe_message(&Message::tool_result(id, content, refused), None);
}

#[test]
fn the_latest_accepted_plan_is_rendered_first_and_verbatim() {
    let mut ledger = Ledger::new(None);
    assert!(render(&ledger, big_budget(), false, &counter(), None).is_none());
    set_plan(
        &mut ledger,
        "p1",
        json!([{"step": "old step", "status": "pending"}]),
        false,
    );
    // A plan alone is worth a ledger.
    assert!(text(&ledger).contains("[ ] old step"));
    ledger.observe_user("refactor the parser");
    set_plan(
        &mut ledger,
        "p2",
        json!([
            {"step": "read src/parser.rs", "status": "done", "note": "depth is global"},
            {"step": "thread depth through", "status": "in_progress"},
            {"step": "run cargo test", "status": "pending"}
        ]),
        false,
    );
    // A refused call leaves the plan as it was.
    set_plan(
        &mut ledger,
        "p3",
        json!([{"step": "x", "status": "bogus"}]),
        true,
    );
    let out = text(&ledger);
    let expected = format!(
        "{}\n[x] read src/parser.rs — depth is global\n[~] thread depth through\n\
         [ ] run cargo test\n",
        render::PLAN_HEADING
    );
    assert!(out.contains(&expected), "{out}");
    assert!(!out.contains("old step"), "{out}");
    assert!(out.find("## Plan").unwrap() < out.find("## User messages").unwrap());
    // The summary request shows the same plan.
    let rendered = render(&ledger, big_budget(), false, &counter(), None).unwrap();
    assert!(rendered.summary_request_text.contains(&expected));
    // No file, command or spill came from the plan calls.
    assert!(ledger.files().is_empty() && ledger.spills().is_empty());
    assert_eq!(ledger.commands().count(), 0);
    // The rebuild of the same record has the same plan; /clear forgets it.
    let rebuilt = Ledger::rebuild(
        None,
        [
            Observed::Message(&plan_call(
                "p9",
                json!([{"step": "again", "status": "done"}]),
            )),
            Observed::Message(&Message::tool_result("p9", "Plan updated.", false)),
        ],
    );
    assert_eq!(rebuilt.plan().checklist(), "[x] again");
    ledger.reset();
    assert!(ledger.plan().is_empty());
}

#[test]
fn the_plan_stays_whole_when_other_sections_are_cut_and_a_huge_one_is_cut_by_rule() {
    let mut ledger = Ledger::new(None);
    let steps: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            let status = if i < 30 { "done" } else { "pending" };
            json!({"step": format!("step number {i} of the migration"), "status": status})
        })
        .collect();
    set_plan(&mut ledger, "p1", serde_json::Value::from(steps), false);
    for i in 0..200 {
        run(
            &mut ledger,
            &format!("c{i}"),
            &format!("cat src/file{i}.rs"),
            "x",
            0,
        );
    }
    let checklist = ledger.plan().checklist();
    let plan_tokens = counter().count(&checklist);
    // A budget where files must be cut but the plan fits in half of it.
    let budget = LedgerBudget {
        total_tokens: plan_tokens * 2 + 200,
        user_messages_tokens: 100,
    };
    let rendered = render(&ledger, budget, false, &counter(), None).unwrap();
    assert!(rendered.tokens <= budget.total_tokens);
    assert!(rendered.text.contains(&checklist), "{}", rendered.text);
    assert!(rendered.omitted > 0, "the files were cut, not the plan");
    // Over half the budget: the done steps are counted, the open ones kept.
    let small = LedgerBudget {
        total_tokens: plan_tokens,
        user_messages_tokens: 100,
    };
    let rendered = render(&ledger, small, false, &counter(), None).unwrap();
    assert!(rendered.tokens <= small.total_tokens, "{}", rendered.tokens);
    assert!(
        rendered.text.contains("[30 done steps omitted]"),
        "{}",
        rendered.text
    );
    assert!(rendered
        .text
        .contains("[ ] step number 39 of the migration"));
    assert!(!rendered.text.contains("[x] step number 0 "));
}

#[test]
fn the_first_user_message_is_kept_when_older_ones_must_be_left_out() {
    let mut ledger = Ledger::new(None);
    ledger.observe_user("THE TASK: use SQLite in WAL mode; keep raw events for 90 days.");
    for i in 0..40 {
        ledger.observe_user(&format!(
            "follow-up {i}: write the next paragraph of the design"
        ));
    }
    let budget = LedgerBudget {
        total_tokens: 300,
        user_messages_tokens: 300,
    };
    for exclude_latest in [false, true] {
        let rendered = render(&ledger, budget, exclude_latest, &counter(), None).unwrap();
        let text = &rendered.text;
        assert!(rendered.tokens <= 300, "{}", rendered.tokens);
        assert!(text.contains("THE TASK: use SQLite in WAL mode"), "{text}");
        assert!(text.contains("follow-up 38"), "the newest stay: {text}");
        assert!(
            !text.contains("follow-up 0:"),
            "the ones after the first go: {text}"
        );
        assert!(
            text.contains("user messages after the first omitted]"),
            "{text}"
        );
        // Newest first, the first message last; every message is either shown or counted.
        assert!(text.find("follow-up 38").unwrap() < text.find("THE TASK").unwrap());
        let shown = text.matches("--- message").count();
        assert_eq!(
            shown + rendered.omitted,
            41 - usize::from(exclude_latest),
            "{text}"
        );
    }
    // A budget too small for even the first message's floor keeps the newest, as before.
    let tiny = LedgerBudget {
        total_tokens: 60,
        user_messages_tokens: 60,
    };
    if let Some(rendered) = render(&ledger, tiny, false, &counter(), None) {
        assert!(rendered.tokens <= 60, "{}", rendered.tokens);
    }
}

#[test]
fn a_tight_budget_keeps_the_first_user_message_before_the_plan_and_the_commands() {
    // What a 6k window's smallest compaction plan sees after a small model called tools:
    // a plan, commands and ten user messages in about 150 tokens. The plan and the
    // commands once took it all and every user message went, the task with them.
    let mut ledger = Ledger::new(None);
    ledger.observe_user(
        "Part 1, the decisions:\n- We chose SQLite in WAL mode because the team already \
         operates it.\n- Raw events are kept for 90 days.",
    );
    for part in 2..=10 {
        ledger.observe_user(&format!(
            "Part {part} of the design: {} Acknowledge in one short sentence.",
            "a paragraph of the design document that the model is asked to acknowledge. ".repeat(3)
        ));
        run(
            &mut ledger,
            &format!("c{part}"),
            &format!("ls -la part{part}"),
            "x",
            0,
        );
    }
    let steps: Vec<serde_json::Value> = (0..6)
        .map(|i| json!({"step": format!("write part {i} of the design document with every decision"), "status": "pending"}))
        .collect();
    set_plan(&mut ledger, "p1", serde_json::Value::from(steps), false);
    for total in [150, 200, 300] {
        let budget = LedgerBudget {
            total_tokens: total,
            user_messages_tokens: total,
        };
        for exclude_latest in [false, true] {
            let rendered = render(&ledger, budget, exclude_latest, &counter(), None).unwrap();
            let text = &rendered.text;
            assert!(rendered.tokens <= total, "{} > {total}", rendered.tokens);
            assert!(
                text.contains("SQLite in WAL mode") && text.contains("90 days"),
                "the first message went at {total}: {text}"
            );
            assert!(
                text.contains("## Plan"),
                "the plan stays at {total}: {text}"
            );
            // The summary request's form keeps the same cut: message 1 attached whole.
            assert!(
                rendered.summary_request_text.contains("--- message 1: "),
                "{}",
                rendered.summary_request_text
            );
        }
    }
}
