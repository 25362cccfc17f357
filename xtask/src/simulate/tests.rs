//! Tests of the simulator on hand-made sessions and on the corpus sample vendored in
//! pith-core (`crates/core/tests/data/corpus-sample`), so `cargo test` covers it without
//! /work/shared.

use std::path::PathBuf;
use std::sync::Arc;

use pith_core::{BpeCounter, ContextBudget, Encoding};

use super::ledger::Prices;
use super::policy::Policy;
use super::replay::{replay, SessionOutcome, SimParams};
use super::{simulate, SimOptions};
use crate::corpus::{parse_session, read_sessions, CorpusSession};

fn params(window: u64) -> SimParams {
    SimParams::new(
        window,
        500,
        Prices::default(),
        Arc::new(BpeCounter::new(Encoding::O200kBase)),
    )
}

/// A session of `turns` tool turns, each `cat`-ing a distinct file of `lines` lines.
fn session(turns: usize, lines: usize) -> CorpusSession {
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
    jsonl.push_str(r#"{"role":"assistant","content":"Done."}"#);
    jsonl.push('\n');
    parse_session(&jsonl)
}

#[test]
fn below_every_threshold_no_policy_rewrites_anything_and_the_prefix_stays_cached() {
    let s = session(3, 20);
    let p = params(128_000);
    for policy in ["keen", "zesdex", "tiered"] {
        let out = replay(&s, &Policy::parse(policy).unwrap(), &p);
        assert_eq!(
            (out.llm_compactions, out.micro_compactions),
            (0, 0),
            "{policy} compacted a tiny session"
        );
        assert_eq!(
            out.ledger.requests, 4,
            "{policy}: one request per assistant message"
        );
        // Every request extends the previous one: only the first request and the
        // appended tail of each later one are uncached.
        assert!(
            out.ledger.cached_tokens * 2 > out.ledger.input_tokens,
            "{policy}: append-only history should be mostly cached: {:?}",
            out.ledger
        );
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
        Prices::default(),
        Arc::new(BpeCounter::new(Encoding::O200kBase)),
    );
    // The ledger's summary is asked for within 750 words: 1,000 tokens by default.
    assert!(
        p.ledger_summary_tokens.abs_diff(1_000) <= 20,
        "{}",
        p.ledger_summary_tokens
    );
    let with = replay(&s, &Policy::parse("tiered").unwrap(), &p);
    let without = replay(&s, &Policy::parse("tiered:carry=keen").unwrap(), &p);
    assert!(with.llm_compactions >= 1 && without.llm_compactions >= 1);
    assert_eq!(
        with.ledger.summary_output_tokens,
        with.llm_compactions * p.ledger_summary_tokens
    );
    assert_eq!(
        without.ledger.summary_output_tokens,
        without.llm_compactions * p.summary_tokens
    );
    // Never longer than the full summary, and settable.
    let small = SimParams::new(
        16_384,
        500,
        Prices::default(),
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
    for policy in ["keen", "zesdex", "tiered"] {
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

fn vendored_sample() -> Option<Vec<CorpusSession>> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/core/tests/data/corpus-sample");
    if !dir.is_dir() {
        eprintln!("skipping: no vendored corpus sample at {}", dir.display());
        return None;
    }
    Some(read_sessions(&dir).expect("the vendored sample is readable"))
}

#[test]
fn on_the_vendored_sample_tiered_is_cheapest_at_32k_with_no_more_llm_compactions_than_keen() {
    let Some(sessions) = vendored_sample() else {
        return;
    };
    let options = SimOptions {
        windows: vec![32_768],
        policies: vec!["keen".into(), "zesdex".into(), "tiered".into()],
        summary_tokens: 2_000,
        ledger_summary_tokens: None,
        prices: Prices::default(),
    };
    let rows = simulate(&sessions, &options).unwrap();
    let [keen, zesdex, tiered] = &rows[..] else {
        panic!("three rows expected, got {rows:?}")
    };
    assert!(
        keen.llm_compactions > 0,
        "the sample must exercise compaction at 32k"
    );
    assert!(
        tiered.llm_compactions <= keen.llm_compactions,
        "tiered made more LLM compactions than keen: {tiered:?} vs {keen:?}"
    );
    assert!(
        tiered.cost_dollars < keen.cost_dollars && tiered.cost_dollars < zesdex.cost_dollars,
        "tiered is not the cheapest: keen ${:.2}, zesdex ${:.2}, tiered ${:.2}",
        keen.cost_dollars,
        zesdex.cost_dollars,
        tiered.cost_dollars
    );
    let budget = ContextBudget::for_window(32_768);
    assert_eq!(
        tiered.overflowing_requests, 0,
        "tiered sent requests over the input budget {}",
        budget.input_budget
    );
}
