//! Tests of the simulator on hand-made sessions and on the corpus sample vendored in
//! pith-core (`crates/core/tests/data/corpus-sample`), so `cargo test` covers it without
//! /work/shared.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use pith_core::message::{Message, Role};
use pith_core::{BpeCounter, ContextBudget, Encoding};

use super::policy::{Policy, DEFAULT_POLICIES};
use super::prices::PriceModel;
use super::replay::{replay, replay_with, SessionOutcome, SimParams};
use super::{simulate, SimOptions};
use crate::corpus::{parse_session, read_sessions, CorpusSession};
use crate::fidelity::view_text;

fn params(window: u64) -> SimParams {
    SimParams::new(
        window,
        500,
        PriceModel::anthropic(),
        Arc::new(BpeCounter::new(Encoding::O200kBase)),
    )
}

/// A session of `turns` tool turns, each `cat`-ing a distinct file of `lines` lines.
fn session(turns: usize, lines: usize) -> CorpusSession {
    session_then(turns, lines, None)
}

/// [`session`], then one more command (`last`) before the final answer.
fn session_then(turns: usize, lines: usize, last: Option<&str>) -> CorpusSession {
    let mut jsonl = String::new();
    jsonl.push_str(r#"{"role":"system","content":"You are a coding agent."}"#);
    jsonl.push('\n');
    jsonl.push_str(r#"{"role":"user","content":"Fix the parser bug."}"#);
    jsonl.push('\n');
    for t in 0..turns {
        let id = format!("call_{t}");
        let command = format!("cat src/module_{t}.py");
        let assistant = serde_json::json!({
            "role": "assistant",
            "content": format!("THOUGHT: read module {t}"),
            "tool_calls": [{"id": id, "name": "bash", "arguments": {"command": command}}],
        });
        let body: String = (0..lines)
            .map(|i| format!("def function_{t}_{i}(value): return value * {i}\n"))
            .collect();
        let tool = serde_json::json!({
            "role": "tool", "tool_call_id": id, "exit_code": 0, "content": body,
        });
        jsonl.push_str(&format!("{assistant}\n{tool}\n"));
    }
    if let Some(command) = last {
        let assistant = serde_json::json!({
            "role": "assistant", "content": "THOUGHT: fix it",
            "tool_calls": [{"id": "call_last", "name": "bash", "arguments": {"command": command}}],
        });
        let tool = serde_json::json!({
            "role": "tool", "tool_call_id": "call_last", "exit_code": 0, "content": "",
        });
        jsonl.push_str(&format!("{assistant}\n{tool}\n"));
    }
    jsonl.push_str(r#"{"role":"assistant","content":"Done."}"#);
    jsonl.push('\n');
    parse_session(&jsonl)
}

#[test]
fn below_every_threshold_no_policy_rewrites_anything_and_the_prefix_stays_cached() {
    // Above the 1,024 tokens a prompt needs to be cached at all.
    let s = session(6, 100);
    let p = params(128_000);
    for policy in DEFAULT_POLICIES.iter().chain(&["zesdex"]) {
        let out = replay(&s, &Policy::parse(policy).unwrap(), &p);
        assert_eq!(
            (out.llm_compactions, out.micro_compactions, out.rereads),
            (0, 0, 0),
            "{policy} rewrote a tiny session"
        );
        assert_eq!(
            out.ledger.requests, 7,
            "{policy}: one request per assistant message"
        );
        // Every request extends the previous one: only the first request and the
        // appended tail of each later one are uncached.
        assert!(
            out.ledger.cached_tokens * 2 > out.ledger.input_tokens,
            "{policy}: append-only history should be mostly cached: {:?}",
            out.ledger
        );
        assert!(out.ledger.cost_dollars > 0.0 && out.ledger.answer_dollars > 0.0);
    }
}

#[test]
fn keen_compacts_at_ninety_percent_and_stays_under_the_input_budget() {
    let s = session(40, 30);
    let p = params(16_384);
    let budget = ContextBudget::for_window(16_384);
    let keen = replay(&s, &Policy::Keen, &p);
    assert!(
        keen.llm_compactions >= 1,
        "40 turns of ~600 tokens must cross 90% of {}: {keen:?}",
        budget.input_budget
    );
    assert!(
        keen.peak_context <= budget.input_budget,
        "keen overflowed: {keen:?}"
    );
    assert_eq!(keen.micro_compactions, 0, "keen never micro-compacts");
    assert_eq!(
        keen.ledger.summary_output_tokens,
        keen.llm_compactions * p.summary_tokens,
        "each compaction outputs one stand-in summary"
    );
    // A compaction adds a summary request to the agent's 41 requests.
    assert_eq!(keen.ledger.requests, 41 + keen.llm_compactions);
}

#[test]
fn a_compaction_next_to_the_ledger_outputs_the_shorter_stand_in_summary() {
    let s = session(40, 30);
    let p = SimParams::new(
        16_384,
        2_000,
        PriceModel::anthropic(),
        Arc::new(BpeCounter::new(Encoding::O200kBase)),
    );
    // The ledger's summary is asked for within 750 words: 1,000 tokens by default.
    assert!(
        p.ledger_summary_tokens.abs_diff(1_000) <= 20,
        "{}",
        p.ledger_summary_tokens
    );
    let with = replay(&s, &Policy::parse("pith").unwrap(), &p);
    let without = replay(&s, &Policy::parse("pith:carry=keen").unwrap(), &p);
    assert!(with.llm_compactions >= 1 && without.llm_compactions >= 1);
    // Every summary request pith made outputs the shorter stand-in, including one
    // prepared ahead and never applied.
    assert_eq!(
        with.ledger.summary_output_tokens,
        (with.llm_compactions + with.unused) * p.ledger_summary_tokens
    );
    assert_eq!(
        without.ledger.summary_output_tokens,
        without.llm_compactions * p.summary_tokens
    );
    // Never longer than the full summary, and settable.
    let small = SimParams::new(
        16_384,
        500,
        PriceModel::anthropic(),
        Arc::new(BpeCounter::new(Encoding::O200kBase)),
    );
    assert_eq!(small.ledger_summary_tokens, small.summary_tokens);
    let set = small.with_ledger_summary_tokens(300);
    assert!(set.ledger_summary_tokens.abs_diff(300) <= 20);
}

#[test]
fn replay_is_deterministic() {
    let s = session(40, 30);
    let p = params(16_384);
    for policy in DEFAULT_POLICIES.iter().chain(&["zesdex"]) {
        let policy = Policy::parse(policy).unwrap();
        let a: SessionOutcome = replay(&s, &policy, &p);
        let b = replay(&s, &policy, &p);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}

#[test]
fn zesdex_shapes_earlier_than_keen_compacts() {
    // zesdex's first shaping is at 85% of the input budget, keen's compaction at 90%:
    // on the same growing history zesdex acts at least as often.
    let s = session(40, 30);
    let p = params(16_384);
    let keen = replay(&s, &Policy::Keen, &p);
    let zesdex = replay(&s, &Policy::Zesdex, &p);
    assert!(
        zesdex.llm_compactions >= keen.llm_compactions,
        "zesdex {zesdex:?} vs keen {keen:?}"
    );
}

#[test]
fn masking_hides_all_but_the_last_observations_and_pays_to_read_a_hidden_file_again() {
    // 15 files printed, then an edit of the first: masking (keep 10) hid it, keen did not.
    let s = session_then(15, 20, Some("sed -i 's/value/v/' src/module_0.py"));
    let p = params(1_000_000);
    let masking = replay(&s, &Policy::parse("masking").unwrap(), &p);
    assert!(masking.micro_compactions >= 5, "{masking:?}");
    assert_eq!(masking.rereads, 1, "{masking:?}");
    assert!(masking.reread_tokens > 100, "{masking:?}");
    // The re-read is one more request.
    assert_eq!(masking.ledger.requests, 17 + 1);
    let keen = replay(&s, &Policy::Keen, &p);
    assert_eq!((keen.rereads, keen.reread_tokens), (0, 0), "{keen:?}");
    // Printing the file again is the session's own re-read, not the policy's.
    let s = session_then(15, 20, Some("cat src/module_0.py"));
    assert_eq!(
        replay(&s, &Policy::parse("masking").unwrap(), &p).rereads,
        0
    );
}

#[test]
fn re_attached_files_are_counted_with_the_re_reads_they_saved() {
    let p = params(16_384);
    let restoring = Policy::parse("pith:restore=3,prepare=0").unwrap();
    // The default re-attaches nothing; with files, every compaction does.
    let plain = replay(&session(60, 30), &Policy::parse("pith").unwrap(), &p);
    assert!(plain.llm_compactions >= 1, "{plain:?}");
    assert_eq!((plain.restored_files, plain.restored_tokens), (0, 0));
    let with = replay(&session(60, 30), &restoring, &p);
    assert!(with.restored_files >= with.llm_compactions, "{with:?}");
    assert!(with.restored_tokens > 0 && with.restored_used <= with.restored_files);
    // An edit of the file read last: where a compaction fell between the read and the
    // edit, the file was re-attached and no re-read is charged, while without files the
    // same session pays one.
    let saved = (20..60).find_map(|turns| {
        let s = session_then(
            turns,
            30,
            Some(&format!("sed -i 's/v/w/' src/module_{}.py", turns - 1)),
        );
        let with = replay(&s, &restoring, &p);
        (with.restored_used == 1).then(|| {
            (
                with,
                replay(&s, &Policy::parse("pith:prepare=0").unwrap(), &p),
            )
        })
    });
    let (with, without) = saved.expect("some session compacts between the read and the edit");
    assert_eq!(with.rereads, 0, "{with:?}");
    assert_eq!(
        (without.rereads, without.restored_used),
        (1, 0),
        "{without:?}"
    );
}

#[test]
fn claude_code_re_attaches_its_newest_files_within_its_budget_and_saves_their_re_reads() {
    let p = params(16_384);
    let claude = Policy::parse("claude-code").unwrap();
    let out = replay(&session(60, 30), &claude, &p);
    assert!(out.llm_compactions >= 1, "{out:?}");
    // Five files after every compaction (each read file is ~450 tokens), and never more
    // than a quarter of the window.
    assert_eq!(out.restored_files, 5 * out.llm_compactions, "{out:?}");
    assert!(
        out.restored_tokens <= 4_096 * out.llm_compactions,
        "{out:?}"
    );
    // The view after a compaction holds the newest files read, not the oldest.
    let viewed = replay_with(&session(60, 30), &claude, &p, true);
    let first = viewed.views.first().expect("a compaction view");
    let text = view_text(&first.messages);
    let newest = first.after_message / 2 - 1;
    assert!(text.contains(&format!("src/module_{newest}.py")), "{text}");
    assert!(!text.contains("src/module_0.py"), "{text}");
    // An edit of the file read last, with a compaction between the read and the edit: the
    // file was re-attached, so no re-read; without files, a session where a compaction
    // falls there pays one.
    let edit_after = |turns: usize| {
        session_then(
            turns,
            30,
            Some(&format!("sed -i 's/v/w/' src/module_{}.py", turns - 1)),
        )
    };
    let with = (20..60)
        .map(|turns| replay(&edit_after(turns), &claude, &p))
        .find(|out| out.restored_used == 1)
        .expect("a compaction between the read and the edit");
    assert_eq!(with.rereads, 0, "{with:?}");
    let none = Policy::parse("claude-code:files=0").unwrap();
    let without = (20..60)
        .map(|turns| replay(&edit_after(turns), &none, &p))
        .find(|out| out.rereads > 0)
        .expect("without files, a compaction between the read and the edit costs a re-read");
    assert_eq!(
        (without.rereads, without.restored_files),
        (1, 0),
        "{without:?}"
    );
}

#[test]
fn an_llm_free_compaction_sends_no_summary_request_and_keeps_its_tail_verbatim() {
    let p = params(16_384);
    let with_summary = replay(&session(60, 30), &Policy::parse("pith").unwrap(), &p);
    assert!(
        with_summary.ledger.summary_output_tokens > 0,
        "{with_summary:?}"
    );
    for tail in [0, 20] {
        let policy = Policy::parse(&format!("pith:tail={tail}")).unwrap();
        let out = replay_with(&session(60, 30), &policy, &p, true);
        assert!(out.llm_compactions >= 1, "{out:?}");
        assert_eq!(out.ledger.summary_output_tokens, 0, "{out:?}");
        assert!(out.ledger.cost_dollars < with_summary.ledger.cost_dollars);
        for view in &out.views {
            // The ledger replaces the summary; a kept tail never starts with a result
            // whose call was cut off.
            let text = view_text(&view.messages);
            assert!(text.contains("No summary was written"), "{text:.300}");
            assert!(text.contains("<session_ledger>"), "{text:.300}");
            assert_ne!(
                view.messages[1..].first().map(|m| m.role),
                Some(pith_core::message::Role::Tool)
            );
            let newest = view.after_message / 2 - 1;
            let newest_kept = text.contains(&format!("def function_{newest}_29("));
            assert_eq!(newest_kept, tail > 0, "tail={tail}: {text:.300}");
        }
    }
}

#[test]
fn every_squashed_output_gets_a_spill_file_of_its_own_as_the_ledger_lists_them() {
    // Each turn runs a script whose long log squash cuts, so each has a spill file.
    let mut jsonl = String::from(
        "{\"role\":\"system\",\"content\":\"You are a coding agent.\"}\n\
         {\"role\":\"user\",\"content\":\"Fix the parser bug.\"}\n",
    );
    for t in 0..120 {
        let id = format!("call_{t}");
        let assistant = serde_json::json!({
            "role": "assistant", "content": format!("THOUGHT: run step {t}"),
            "tool_calls": [{"id": id, "name": "bash",
                "arguments": {"command": format!("python step_{t}.py")}}],
        });
        let body: String = (0..200)
            .map(|i| format!("step {t} record {i}: value={}\n", i * 7 + t))
            .collect();
        let tool = serde_json::json!({
            "role": "tool", "tool_call_id": id, "exit_code": 0, "content": body,
        });
        jsonl.push_str(&format!("{assistant}\n{tool}\n"));
    }
    jsonl.push_str("{\"role\":\"assistant\",\"content\":\"Done.\"}\n");
    let s = parse_session(&jsonl);
    let out = replay_with(&s, &Policy::parse("pith").unwrap(), &params(16_384), true);
    let view = out
        .views
        .last()
        .unwrap_or_else(|| panic!("the session compacts: {out:?}"));
    let text = view_text(&view.messages);
    let listed: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("- $PITH_SPILL_DIR/"))
        .filter_map(|rest| rest.split(' ').next())
        .collect();
    // One line per spill file in the ledger's Full outputs section, as a real session's.
    assert!(listed.len() >= 5, "{listed:?}\n{text}");
}

#[test]
fn the_ledger_share_bounds_what_every_compaction_carries() {
    let s = session(60, 30);
    let p = params(16_384);
    let largest = |policy: &str| {
        let out = replay_with(&s, &Policy::parse(policy).unwrap(), &p, true);
        assert!(out.llm_compactions >= 1, "{policy}: {out:?}");
        out.views.iter().map(|v| v.ledger_tokens).max().unwrap_or(0)
    };
    let budget = ContextBudget::for_window(16_384).input_budget;
    let small = largest("pith:ledger=2");
    let large = largest("pith:ledger=20");
    assert!(small > 0 && small <= budget * 2 / 100, "{small}");
    assert!(
        large > small && large <= budget * 20 / 100,
        "{large} vs {small}"
    );
}

#[test]
fn the_peers_compact_at_their_own_thresholds() {
    let s = session(90, 30);
    // 32k: Claude Code at max(32768 - 8192 - 13000, 16384) = 16384 tokens, Codex at 90%
    // of the window, opencode at 32768 - 8192.
    let p = params(32_768);
    let claude = replay(&s, &Policy::parse("claude-code").unwrap(), &p);
    let codex = replay(&s, &Policy::Codex, &p);
    let opencode = replay(&s, &Policy::OpenCode, &p);
    assert!(
        claude.llm_compactions > codex.llm_compactions,
        "{claude:?} {codex:?}"
    );
    assert!(claude.peak_context <= 16_384 + 1_000, "{claude:?}");
    assert!(opencode.llm_compactions >= codex.llm_compactions);
    for out in [&claude, &codex, &opencode] {
        assert!(out.llm_compactions >= 1, "{out:?}");
    }
    for out in [&claude, &opencode] {
        assert_eq!(out.overflowing_requests, 0, "{out:?}");
    }
    // 90% of a 32k window is above its input budget (window - 4096): Codex's threshold
    // lets requests over it through, and the simulator counts them.
    assert!(codex.overflowing_requests >= 1, "{codex:?}");
    // gemini-cli compresses at half the window.
    let gemini = replay(&s, &Policy::GeminiCli, &p);
    assert!(gemini.llm_compactions >= 1 && gemini.peak_context <= 16_384 + 1_000);
}

#[test]
fn gemini_cli_masks_outputs_beyond_its_protected_50k_in_batches() {
    let s = session(120, 60);
    let p = params(1_000_000);
    let gemini = replay(&s, &Policy::GeminiCli, &p);
    assert_eq!(
        gemini.llm_compactions, 0,
        "far below half of 1M: {gemini:?}"
    );
    assert!(gemini.micro_compactions >= 1, "{gemini:?}");
    // Batches of at least 30k: far fewer maskings than turns.
    assert!(gemini.micro_compactions <= 10, "{gemini:?}");
}

#[test]
fn days_join_tasks_into_sessions_with_pauses_that_expire_the_cache() {
    let sessions = vendored_sample();
    let one = SimOptions {
        windows: vec![1_000_000],
        policies: vec!["keen".into()],
        summary_tokens: 2_000,
        ledger_summary_tokens: None,
        prices: PriceModel::anthropic(),
        day: 1,
        fidelity: false,
    };
    let day = SimOptions {
        day: 3,
        ..one.clone()
    };
    let singles = simulate(&sessions, &one).unwrap();
    let days = simulate(&sessions, &day).unwrap();
    let count = |rows: &[super::PolicyRow]| rows.iter().map(|r| r.sessions).sum::<u64>();
    assert_eq!(count(&singles), sessions.len() as u64);
    assert!(count(&days) * 3 >= sessions.len() as u64 && count(&days) < sessions.len() as u64);
    // Joined, the later tasks carry the earlier ones: more input in all.
    let input = |rows: &[super::PolicyRow]| rows.iter().map(|r| r.input_tokens).sum::<u64>();
    assert!(input(&days) > input(&singles));
}

#[test]
fn the_user_pauses_before_each_task_and_never_before_the_harness_s_own_messages() {
    // Each task: the user's message, an answer the harness rejects, its format error (a
    // user-role message sent at once), then the agent's tool turns.
    let task = |name: &str| {
        let mut s = session_then(3, 20, None);
        s.messages.insert(1, Message::assistant("two actions"));
        s.messages.insert(
            2,
            Message::user("Please always provide EXACTLY ONE action in triple backticks."),
        );
        s.task_starts = vec![0];
        s.name = name.to_owned();
        s
    };
    let (a, b, c) = (task("repo__a"), task("repo__b"), task("repo__c"));
    let day = super::day::join(&[&a, &b, &c]);
    let users = day.messages.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(users, 6);
    let out = replay(&day, &Policy::parse("pith").unwrap(), &params(200_000));
    assert_eq!(out.pauses, 2, "one pause before each task but the first");
    let alone = replay(&a, &Policy::parse("pith").unwrap(), &params(200_000));
    assert_eq!(alone.pauses, 0, "a single task has no pause at all");
    // On the corpus: a day of N tasks has N - 1 pauses.
    let sessions = vendored_sample();
    for day in super::day::days(&sessions, 3) {
        let tasks = day.name.split('+').count() as u64;
        let out = replay(&day, &Policy::Keen, &params(1_000_000));
        assert_eq!(out.pauses, tasks - 1, "{}", day.name);
    }
}

fn vendored_sample() -> Vec<CorpusSession> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/core/tests/data/corpus-sample");
    read_sessions(&dir).expect("the vendored sample is in the repository")
}

#[test]
fn on_the_vendored_sample_pith_keeps_every_probe_and_never_overflows() {
    let sessions = vendored_sample();
    let options = SimOptions {
        windows: vec![32_768, 200_000],
        policies: DEFAULT_POLICIES.iter().map(|p| (*p).to_owned()).collect(),
        summary_tokens: 2_000,
        ledger_summary_tokens: None,
        prices: PriceModel::anthropic(),
        day: 3,
        fidelity: true,
    };
    let rows = simulate(&sessions, &options).unwrap();
    assert_eq!(
        rows.len(),
        2 * 2 * DEFAULT_POLICIES.len(),
        "windows x halves x policies"
    );
    for row in rows.iter().filter(|r| r.policy == "pith") {
        assert_eq!(row.over_budget_requests, 0, "{row:?}");
        assert!(
            row.views > 0,
            "pith made no view to probe at {}: {row:?}",
            row.window
        );
        assert!(row.fidelity.a == 1.0 && row.fidelity.b == 1.0, "{row:?}");
        let peer = super::vs_cheapest_peer(&rows, row).expect("peers to compare");
        // At 200k the working set holds pith's context far below the peers'; at 32k it
        // does not apply and the cheapest peer forgets (docs/benchmarks.md).
        if row.window == 200_000 {
            assert!(peer < 0.7, "pith at 200k: {peer:.3} of the cheapest peer");
        }
    }
    let json = serde_json::to_value(&rows[0]).unwrap();
    for key in [
        "window",
        "policy",
        "prices",
        "cost_dollars",
        "cache_hit_rate",
        "input_tokens",
        "peak_context",
        "mean_context",
        "llm_compactions",
        "masking_events",
        "reread_tokens",
        "restored_files",
        "restored_tokens",
        "restored_used",
        "over_budget_requests",
        "fidelity",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    for probe in ["a", "b", "c", "d", "e"] {
        assert!(json["fidelity"].get(probe).is_some());
    }
    for row in &rows {
        let parts = row.cost_parts;
        assert!(
            (parts.total() - row.cost_dollars).abs() < 1e-9 && parts.cache_read > 0.0,
            "{}: the parts {parts:?} do not add up to {}",
            row.policy,
            row.cost_dollars
        );
    }
    for part in ["input", "cache_read", "cache_write", "output"] {
        assert!(json["cost_parts"].get(part).is_some(), "{part} missing");
    }
}

fn pith_preparing(percent: u8) -> Policy {
    Policy::parse(&format!("pith:prepare={percent}")).unwrap()
}

#[test]
fn a_summary_prepared_at_the_mark_waits_less_than_one_in_place_and_is_sent_once() {
    let s = session(40, 30);
    let p = params(16_384);
    let in_place = replay(&s, &pith_preparing(0), &p);
    let ahead = replay(&s, &pith_preparing(75), &p);
    assert!(in_place.llm_compactions >= 1, "{in_place:?}");
    assert_eq!((in_place.prepared, in_place.unused), (0, 0));
    assert!(ahead.prepared >= 1, "{ahead:?}");
    assert!(
        ahead.compaction_wait_s < in_place.compaction_wait_s,
        "prepared ahead the agent waits less: {} s against {} s",
        ahead.compaction_wait_s,
        in_place.compaction_wait_s
    );
    // Every summary request is one compaction applied (in place or prepared) or one
    // prepared and never used: none is sent twice, none is free.
    assert_eq!(
        ahead.ledger.summary_output_tokens,
        (ahead.llm_compactions + ahead.unused) * p.ledger_summary_tokens
    );
    assert!(ahead.peak_context <= ContextBudget::for_window(16_384).input_budget);
}

#[test]
fn a_session_that_ends_between_the_mark_and_the_threshold_pays_for_its_unused_summary() {
    let p = params(16_384);
    let ended_in_the_band = (4..40).find_map(|turns| {
        let s = session(turns, 30);
        let in_place = replay(&s, &pith_preparing(0), &p);
        let ahead = replay(&s, &pith_preparing(75), &p);
        (in_place.llm_compactions == 0 && ahead.prepared == 1).then_some((in_place, ahead))
    });
    let (in_place, ahead) = ended_in_the_band.expect("some length ends between mark and threshold");
    assert_eq!(ahead.unused, 1);
    assert!(ahead.unused_dollars > 0.0);
    let extra = ahead.ledger.cost_dollars - in_place.ledger.cost_dollars;
    // It costs more by at most what the unused summary cost: its request also wrote the
    // prompt cache that the next agent request reads.
    assert!(
        extra > 0.0 && extra <= ahead.unused_dollars + 1e-9,
        "the unused summary is what it costs more: {extra} vs {}",
        ahead.unused_dollars
    );
}

#[test]
fn summaries_on_another_model_pay_full_input_at_its_price_and_keep_the_same_compactions() {
    let s = session(40, 30);
    let p = params(16_384);
    let main = replay(&s, &Policy::parse("pith:prepare=0").unwrap(), &p);
    let same_price = replay(&s, &Policy::parse("pith:prepare=0,summary=1").unwrap(), &p);
    let tenth = replay(
        &s,
        &Policy::parse("pith:prepare=0,summary=0.1").unwrap(),
        &p,
    );
    assert!(main.llm_compactions >= 1, "{main:?}");
    // The same decisions: only who writes the summary, and its bill, change.
    for other in [&same_price, &tenth] {
        assert_eq!(other.llm_compactions, main.llm_compactions);
        assert_eq!(other.ledger.requests, main.ledger.requests);
        assert_eq!(
            other.ledger.summary_output_tokens,
            main.ledger.summary_output_tokens
        );
    }
    // At the same price, a model without the conversation's cache costs more; at a
    // tenth of it, less; and no cache is read for a summary.
    assert!(
        same_price.ledger.cost_dollars > main.ledger.cost_dollars,
        "{} vs {}",
        same_price.ledger.cost_dollars,
        main.ledger.cost_dollars
    );
    assert!(same_price.ledger.cached_tokens < main.ledger.cached_tokens);
    assert!(tenth.ledger.cost_dollars < main.ledger.cost_dollars);
    // What the summary requests cost is counted apart, and is the whole difference
    // between two summary models: the agent's requests are the same under both.
    let agent = |o: &SessionOutcome| o.ledger.cost_dollars - o.summary_dollars;
    assert!(
        (agent(&same_price) - agent(&tenth)).abs() < 1e-9,
        "{} vs {}",
        agent(&same_price),
        agent(&tenth)
    );
    assert!(tenth.summary_dollars < same_price.summary_dollars / 5.0);
    assert!(main.summary_dollars > 0.0 && main.summary_dollars < main.ledger.cost_dollars);
}

/// The tokens a compaction wrote to the cache on a history of `tool_turns` outputs, the
/// compaction sent `after_s` seconds after the last request.
fn written_by_compaction(policy: &str, tool_turns: usize, after_s: f64) -> (u64, usize) {
    let p = params(200_000);
    let policy = Policy::parse(policy).unwrap();
    // Above Anthropic's 1,024-token minimum, so that the system prompt is cached.
    let system = "You are a coding agent. Read before you edit. ".repeat(200);
    let mut replay =
        super::engine::Replay::new(&p, &system, ContextBudget::for_window(200_000), &policy);
    let s = session(tool_turns, 40);
    for message in &s.messages[1..] {
        replay.push(message.clone());
    }
    replay.agent_request(10);
    replay.now += after_s;
    let before = replay.ledger.totals().written_tokens;
    replay.llm_compaction();
    (
        replay.ledger.totals().written_tokens - before,
        replay.system_tokens,
    )
}

#[test]
fn on_a_cold_cache_pith_s_summary_request_writes_nothing_of_the_history_it_replaces() {
    let ttl = PriceModel::anthropic().ttl_s();
    // Cold: only the system prompt is written again (the next request reads it); the
    // history is sent as plain input, not written at 1.25× to be thrown away.
    let (cold, system) = written_by_compaction("pith", 12, ttl + 1.0);
    assert!(system > 1_024);
    assert_eq!(cold, system as u64);
    // pith's loop does so whatever its replacement carries.
    let (other_carry, _) = written_by_compaction("pith:carry=keen", 12, ttl + 1.0);
    assert_eq!(other_carry, system as u64);
    // With the system prompt on the 1-hour cache (`pith:hour=1`) it is still cached after
    // the pause: nothing is written at all.
    let (hour, _) = written_by_compaction("pith:hour=1", 12, ttl + 1.0);
    assert_eq!(hour, 0);
    // A peer's summary request (the same history, breakpoints kept) writes all of it.
    // (12 outputs of 40 lines: about 7,000 tokens.)
    let (peer_cold, _) = written_by_compaction("keen", 12, ttl + 1.0);
    assert!(peer_cold > system as u64 + 6_000, "{peer_cold}");
    // Warm, pith's summary request reads the cached prefix and writes nothing new: the
    // history was sent, as it is, by the request before.
    let (warm, _) = written_by_compaction("pith", 12, 1.0);
    assert_eq!(warm, 0);
}
