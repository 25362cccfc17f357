//! The prompt cache's TTL in the loop, through the real adapters that place cache
//! breakpoints (Anthropic's `cache_control`, Bedrock's `cachePoint`): after a pause longer
//! than the TTL, the compaction the cold rule brings forward sends its summary request
//! without breakpoints in the messages (nothing would read what they write: the history
//! is about to be replaced), while the system prompt and the tools keep theirs.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use pith_providers::PromptCacheOptions;
use pith_testkit::{Protocol, Turn};
use serde_json::{json, Value};

/// A TTL the tests' pause outlasts.
const SHORT_TTL: Duration = Duration::from_millis(100);

/// A TTL no test outlasts, however loaded the machine.
const LONG_TTL: Duration = Duration::from_secs(3600);

/// Between the cold threshold (half the automatic one) and the mark where a summary is
/// prepared ahead: only a cold cache makes a compaction due at this size.
const BETWEEN_COLD_AND_AUTO: u64 = 100_000;

/// The message cache markers of a request's body, for the protocols that have them.
fn message_markers(wire: &Wire) -> usize {
    let messages = bytes(&wire.body()["messages"]);
    messages.matches("cache_control").count() + messages.matches("cachePoint").count()
}

/// The system prompt's and tools' cache markers.
fn prefix_markers(wire: &Wire) -> usize {
    let prefix = format!("{}{}", bytes(&wire.system()), bytes(&wire.tools()));
    prefix.matches("cache_control").count() + prefix.matches("cachePoint").count()
}

/// Two turns with `pause` between them, the provider's cache keeping a prefix for `ttl`;
/// returns the requests the server saw.
async fn two_turns_with_a_pause(protocol: Protocol, ttl: Duration, pause: Duration) -> Vec<Wire> {
    let mut options = fast_options();
    options.prompt_cache = PromptCacheOptions {
        ttl: Some(ttl),
        key: None,
    };
    let mut h = harness_with(
        protocol,
        vec![
            Turn::text("Let me look.").with_tool_call("read", json!({"path": "src/lib.rs"})),
            Turn::text("The parser is in src/lib.rs.").with_usage(BETWEEN_COLD_AND_AUTO, 40),
            Turn::text(SUMMARY),
            Turn::text("Fixed."),
        ],
        WINDOW,
        options,
    );
    h.turn("where is the parser?").await.outcome.unwrap();
    tokio::time::sleep(pause).await;
    let run = h.turn("now fix it").await;
    run.outcome.expect("the second turn completes");
    h.requests()
}

async fn after_a_pause_longer_than_the_ttl_the_summary_request_writes_no_message(
    protocol: Protocol,
) {
    let requests = two_turns_with_a_pause(protocol, SHORT_TTL, SHORT_TTL * 3).await;
    assert_eq!(
        requests.len(),
        4,
        "two requests, the summary the cold rule brought forward, the answer"
    );
    let (before, summary, after) = (&requests[1], &requests[2], &requests[3]);
    assert!(summary.is_auto_compaction(), "request 3 is the summary");
    assert_eq!(message_markers(summary), 0, "no breakpoint in its messages");
    // The system prompt and the tools are read again by the next request: they keep
    // their breakpoints, as before the pause.
    assert!(prefix_markers(summary) >= 1);
    assert_eq!(prefix_markers(summary), prefix_markers(before));
    // The agent's own requests are unchanged: their last message is marked.
    assert!(message_markers(before) >= 1);
    assert!(message_markers(after) >= 1);
    assert!(
        bytes(&Value::Array(after.conversation())).contains("Fix the parser."),
        "the next request carries the summary"
    );
}

async fn within_the_ttl_no_compaction_is_brought_forward(protocol: Protocol) {
    let requests = two_turns_with_a_pause(protocol, LONG_TTL, Duration::ZERO).await;
    assert_eq!(
        requests.len(),
        3,
        "no summary below the threshold while warm"
    );
    assert!(requests.iter().all(|r| !r.is_auto_compaction()));
    assert!(requests.iter().all(|r| message_markers(r) >= 1));
}

for_each_breakpoint_protocol!(
    after_a_pause_longer_than_the_ttl_the_summary_request_writes_no_message,
    within_the_ttl_no_compaction_is_brought_forward,
);
