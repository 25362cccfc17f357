//! The real binary bills what the simulator predicts: a corpus session of the vendored
//! sample is replayed through `pith run` against pith-testkit's Anthropic server in its
//! cached usage mode (the prompt-cache model, docs/testkit.md), and the input cost pith
//! reports is compared with the simulator's figure for the same session under the same
//! policy (`pith`, its defaults) and prices (`--prices anthropic`).
//!
//! Each command of the session is replaced by `cat .replay/N.txt; exit CODE`, the file
//! holding the output the session recorded, so pith's bash tool returns the recorded
//! output with the recorded exit code; the simulator is given the same commands. What the
//! simulator cannot know — pith's own system prompt and tool definitions — is measured on
//! the first request the server received and given to it as a system prompt of that size.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use pith_core::message::{Message, Part, Role};
use pith_core::tokens::{count_message, estimate_request, REQUEST_FRAMING_TOKENS};
use pith_core::{BpeCounter, Encoding, TokenCounter};
use pith_testkit::{request_tokens, Script, TestServer, Turn};
use serde_json::{json, Value};

use super::policy::Policy;
use super::prices::PriceModel;
use super::replay::{replay_with, SimParams};
use crate::corpus::{read_sessions, CorpusSession};

/// The session replayed: every assistant message but the last calls one command, so the
/// script and the session stay in step.
const SESSION: &str = "sympy__sympy-16886";
/// The window both run with (`--context-window`; the working set applies, the session
/// stays under it).
const WINDOW: u64 = 200_000;
/// How far the two figures may differ.
const TOLERANCE: f64 = 0.05;

fn session() -> CorpusSession {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/core/tests/data/corpus-sample");
    read_sessions(&dir)
        .expect("the vendored sample is in the repository")
        .into_iter()
        .find(|s| s.name == SESSION)
        .expect("the session is in the vendored sample")
}

/// The session with every command replaced by `cat .replay/N.txt; exit CODE`, and the
/// files to write: (relative path, content).
fn with_replayed_commands(mut session: CorpusSession) -> (CorpusSession, Vec<(String, String)>) {
    let mut files = Vec::new();
    let mut outputs = std::collections::HashMap::new();
    for message in &session.messages {
        for part in &message.parts {
            if let Part::ToolResult(result) = part {
                outputs.insert(result.call_id.clone(), result.content.clone());
            }
        }
    }
    // A call the session never got a result for (its harness stopped there) is left
    // out: the model's last answer then ends the run, in pith as in the simulator.
    for message in &mut session.messages {
        message
            .parts
            .retain(|p| !matches!(p, Part::ToolCall(call) if !outputs.contains_key(&call.id)));
    }
    let mut n = 0;
    for message in &mut session.messages {
        for part in &mut message.parts {
            if let Part::ToolCall(call) = part {
                n += 1;
                let code = session.exit_codes.get(&call.id).copied().unwrap_or(0);
                let command = format!("cat .replay/{n}.txt; exit {code}");
                files.push((
                    format!(".replay/{n}.txt"),
                    outputs.get(&call.id).cloned().unwrap_or_default(),
                ));
                call.arguments = json!({ "command": command });
                session.commands.insert(call.id.clone(), command);
            }
        }
    }
    (session, files)
}

/// The script: each assistant message as the model's answer.
fn script(session: &CorpusSession) -> Script {
    let turns: Vec<Turn> = session
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| {
            let mut turn = Turn::text(m.text_content());
            for call in m.tool_calls() {
                turn = turn.with_tool_call("bash", call.arguments.clone());
            }
            turn
        })
        .collect();
    Script::anthropic(turns).with_prompt_cache()
}

/// A system prompt of `tokens` tokens as the simulator counts it.
fn system_of(counter: &dyn TokenCounter, tokens: usize) -> String {
    let (mut low, mut high) = (0usize, tokens * 2 + 16);
    let text = |k: usize| "pad ".repeat(k);
    while low < high {
        let mid = (low + high) / 2;
        if estimate_request(counter, &text(mid), &[], &[]).system < tokens {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    text(low)
}

#[test]
fn pith_run_bills_within_five_percent_of_the_simulator_on_a_corpus_session() {
    let (session, files) = with_replayed_commands(session());
    assert!(session.messages.len() > 30, "a session of some length");
    let root = tempfile::tempdir().expect("temp dir");
    let work = root.path().join("work");
    for (path, content) in &files {
        let path = work.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write a replayed output");
    }
    std::fs::create_dir_all(root.path().join("config")).expect("mkdir");
    let server = TestServer::start(script(&session)).expect("testkit starts");
    let prompt = session
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(Message::text_content)
        .expect("a user message");
    let window = WINDOW.to_string();
    let output = Command::new(crate::cargo::built_pith())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", root.path())
        .env("XDG_CONFIG_HOME", root.path().join("config"))
        .env("PITH_HOME", root.path().join("pith-home"))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .current_dir(&work)
        .args([
            "run",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "--approval",
            "full",
            "--context-window",
            &window,
            &prompt,
        ])
        .output()
        .expect("pith runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "pith run failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("a JSON result");
    let requests = server.requests();
    let agent_requests = session
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    assert_eq!(
        requests.len(),
        agent_requests,
        "one request per message: {result}"
    );

    // What pith billed: the reported cost less the answers' output.
    let prices = PriceModel::anthropic();
    let cost = result["cost"].as_f64().expect("cost in the result");
    let output_tokens = result["usage"]["output_tokens"]
        .as_u64()
        .expect("usage.output_tokens in the result");
    let billed = cost - output_tokens as f64 * prices.output / 1e6;

    // The simulator, given pith's system prompt and tools as a prompt of their size.
    let counter: Arc<dyn TokenCounter> = Arc::new(BpeCounter::new(Encoding::O200kBase));
    let first = request_tokens(&requests[0].body) as usize;
    let user = count_message(counter.as_ref(), &Message::user(prompt.clone()));
    let mut simulated_session = session.clone();
    simulated_session.system = system_of(
        counter.as_ref(),
        first.saturating_sub(user + REQUEST_FRAMING_TOKENS),
    );
    let params = SimParams::new(WINDOW, 2_000, prices, counter);
    let outcome = replay_with(&simulated_session, &Policy::pith_default(), &params, false);
    assert_eq!(outcome.llm_compactions + outcome.micro_compactions, 0);
    let simulated = outcome.ledger.cost_dollars;
    let served: u64 = requests
        .iter()
        .map(|r| r.cache.map_or(0, |c| c.cache_read_tokens))
        .sum();
    assert!(served > 0, "the server's cache served nothing");
    let gap = (billed - simulated).abs() / simulated;
    eprintln!(
        "pith billed ${billed:.5} for its input, the simulator ${simulated:.5} ({:.2}% apart)",
        gap * 100.0
    );
    assert!(
        gap <= TOLERANCE,
        "pith billed ${billed:.5} for its input, the simulator predicts ${simulated:.5} ({:.1}% apart; input {} vs {}, cached {} vs {})",
        gap * 100.0,
        result["usage"]["input_tokens"],
        outcome.ledger.input_tokens,
        served,
        outcome.ledger.cached_tokens,
    );
}
