//! Tests of the spend guard.

use super::*;
use pith_core::{BpeCounter, Ceilings, Encoding, Message};
use serde_json::json;
use std::time::Duration;

const PRICES: Pricing = Pricing {
    input: 3.0,
    cached_input: 0.3,
    output: 15.0,
    cache_write: None,
};

/// Claude's prices: cache writes at 1.25× input.
const CLAUDE: Pricing = Pricing {
    cache_write: Some(3.75),
    ..PRICES
};

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: Arc::new(vec![Message::user(text)]),
        tools: Vec::new(),
        max_output_tokens: Some(1_000),
        temperature: None,
        reasoning: None,
        output: None,
        cache: Default::default(),
    }
}

/// A request with Claude Sonnet's cap of 64,000 output tokens.
fn sonnet(text: &str) -> ModelRequest {
    ModelRequest {
        max_output_tokens: Some(64_000),
        ..request(text)
    }
}

fn meter(max_cost: Option<f64>) -> Arc<SpendMeter> {
    Arc::new(SpendMeter::new(Ceilings {
        max_cost,
        max_duration: Some(Duration::from_secs(600)),
    }))
}

fn counter() -> Arc<dyn TokenCounter> {
    Arc::new(BpeCounter::new(Encoding::O200kBase))
}

fn guard(max_cost: Option<f64>, pricing: Option<Pricing>) -> Result<SpendGuard, String> {
    SpendGuard::new(meter(max_cost), pricing, counter())
}

/// pith's count of `request` and its margin, as the guard prices it.
fn input_tokens(request: &ModelRequest) -> u64 {
    priced_input_tokens(
        RequestEstimator::new(counter())
            .estimate(&request.system, &request.messages, &request.tools)
            .total as u64,
    )
}

fn usage(input_tokens: u64, cached: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        cached_input_tokens: cached,
        output_tokens,
        ..Usage::default()
    }
}

#[test]
fn prompts_are_priced_with_a_margin_over_pith_count() {
    assert_eq!(priced_input_tokens(0), 32);
    assert_eq!(priced_input_tokens(1_000), 1_032);
    assert_eq!(priced_input_tokens(100_000), 102_000);
    assert_eq!(priced_input_tokens(u64::MAX), u64::MAX);
}

#[test]
fn a_cost_ceiling_without_prices_is_an_error_at_start() {
    let error = guard(Some(1.0), None).unwrap_err();
    assert!(error.contains("pricing"), "{error}");
    assert!(guard(None, None).is_ok(), "a time ceiling needs no prices");
}

#[test]
fn the_output_cap_sent_is_what_the_rest_of_the_budget_pays_for() {
    let guard = guard(Some(0.05), Some(PRICES)).unwrap();
    let request = sonnet("hello");
    let input = input_tokens(&request);
    let admitted = guard.admit(&request, 67_200).unwrap();
    let expected = PRICES.output_tokens_for(
        0.05 - PRICES.input_cost(InputEstimate {
            tokens: input,
            likely_cached: 0,
        }),
    );
    assert!(expected > 3_000 && expected < 3_400, "{expected}");
    assert_eq!(admitted.output_cap, expected);
    assert!(admitted.clamped);
    assert_eq!(
        admitted.answer_cap,
        expected + 256,
        "pith cuts there too, with its margin"
    );
    assert!(admitted.estimate <= 0.05);
    let sent = admitted.request(&request).unwrap();
    assert_eq!(sent.max_output_tokens, Some(expected as u32));
    assert_eq!(sent.messages, request.messages);
    // The whole budget is held while it runs.
    assert!(guard.meter().remaining().unwrap() < 1e-4);
}

#[test]
fn every_encoder_sends_the_clamped_cap() {
    let guard = guard(Some(0.05), Some(PRICES)).unwrap();
    let request = sonnet("hello");
    let admitted = guard.admit(&request, 67_200).unwrap();
    let sent = admitted.request(&request).unwrap();
    let cap = json!(admitted.output_cap);
    use crate::wire::{anthropic, bedrock, gemini, openai_chat, openai_responses};
    assert_eq!(anthropic::encode::request_body(&sent)["max_tokens"], cap);
    assert_eq!(
        bedrock::encode::request_body(&sent)["inferenceConfig"]["maxTokens"],
        cap
    );
    assert_eq!(
        gemini::encode::request_body(&sent)["generationConfig"]["maxOutputTokens"],
        cap
    );
    assert_eq!(
        openai_responses::encode::request_body(&sent)["max_output_tokens"],
        cap
    );
    assert_eq!(openai_chat::encode::request_body(&sent)["max_tokens"], cap);
    let completion = serde_json::to_value(openai_chat::encode::wire_body(
        &sent,
        openai_chat::MaxTokensField::MaxCompletionTokens,
    ))
    .unwrap();
    assert_eq!(completion["max_completion_tokens"], cap);
}

#[test]
fn a_model_cap_below_what_the_budget_pays_is_sent_unchanged() {
    let guard = guard(Some(10.0), Some(PRICES)).unwrap();
    let request = request("hello");
    let admitted = guard.admit(&request, 1_300).unwrap();
    assert_eq!(admitted.output_cap, 1_000);
    assert!(!admitted.clamped);
    assert!(admitted.request(&request).is_none(), "sent as it is");
    // pith's own cut is the loop's: the model's cap and its margin.
    assert_eq!(admitted.answer_cap, 1_256);
    // The most it may cost: its input (with pith's margin) and 1,000 of answer.
    let most = PRICES.input_cost(InputEstimate {
        tokens: input_tokens(&request),
        likely_cached: 0,
    }) + PRICES.output_cost(1_000);
    assert!(
        (admitted.estimate - most).abs() < 1e-12,
        "{}",
        admitted.estimate
    );
    // A request naming no cap is estimated at pith's own cut.
    let open = ModelRequest {
        max_output_tokens: None,
        ..request
    };
    let admitted = guard.admit(&open, 1_300).unwrap();
    assert_eq!(admitted.output_cap, 1_300);
    assert!(admitted.request(&open).is_none());
}

#[test]
fn a_request_is_refused_only_when_its_input_and_the_smallest_useful_answer_do_not_fit() {
    let request = sonnet("hello");
    let input = PRICES.input_cost(InputEstimate {
        tokens: input_tokens(&request),
        likely_cached: 0,
    });
    let minimum = PRICES.output_cost(MIN_USEFUL_OUTPUT_TOKENS);
    // Just enough: sent with a cap of the minimum.
    let guard_at = |max: f64| guard(Some(max), Some(PRICES)).unwrap();
    let enough = guard_at(input + minimum + 1e-9);
    let admitted = enough.admit(&request, 67_200).unwrap();
    assert_eq!(admitted.output_cap, MIN_USEFUL_OUTPUT_TOKENS);
    // A little less: refused, the estimate naming the input and the minimum.
    let short = guard_at(input + minimum - 1e-6);
    let refused = short.admit(&request, 67_200).unwrap_err();
    let CeilingReached::Cost { estimate, .. } = refused else {
        panic!("{refused}")
    };
    assert!((estimate - (input + minimum)).abs() < 1e-12);
    // A model whose cap is below the minimum needs only its cap.
    let small = ModelRequest {
        max_output_tokens: Some(500),
        ..request.clone()
    };
    let admitted = short.admit(&small, 67_200).unwrap();
    assert_eq!(admitted.output_cap, 500);
    assert!(!admitted.clamped);
}

#[test]
fn thinking_is_fitted_under_the_clamped_cap_never_raised_above_it() {
    // Room for the budget and the smallest answer: unchanged.
    let medium = Some(ReasoningEffort::Medium);
    assert_eq!(fit_thinking(medium, 11_024), medium);
    // Less: the budget shrinks to leave the smallest answer room.
    assert_eq!(
        fit_thinking(medium, 5_000),
        Some(ReasoningEffort::Budget(3_976))
    );
    // Too little for Anthropic's smallest budget: no thinking.
    assert_eq!(fit_thinking(medium, 2_047), Some(ReasoningEffort::Off));
    assert_eq!(
        fit_thinking(medium, 2_048),
        Some(ReasoningEffort::Budget(1_024))
    );
    // Nothing to fit.
    assert_eq!(fit_thinking(None, 1_500), None);
    assert_eq!(
        fit_thinking(Some(ReasoningEffort::Off), 1_500),
        Some(ReasoningEffort::Off)
    );

    // End to end: a $0.10 budget pays for about 6,600 tokens, less than the 10,000
    // of medium thinking; Anthropic's encoder must not raise max_tokens past it.
    let guard = guard(Some(0.1), Some(CLAUDE)).unwrap();
    let request = ModelRequest {
        reasoning: medium,
        ..sonnet("hello")
    };
    let admitted = guard.admit(&request, 67_200).unwrap();
    let cap = admitted.output_cap;
    assert!(cap > 6_000 && cap < 6_700, "{cap}");
    let sent = admitted.request(&request).unwrap();
    let budget = u32::try_from(cap - MIN_USEFUL_OUTPUT_TOKENS).unwrap();
    assert_eq!(sent.reasoning, Some(ReasoningEffort::Budget(budget)));
    let body = crate::wire::anthropic::encode::request_body(&sent);
    assert_eq!(body["max_tokens"], json!(cap));
    assert_eq!(body["thinking"]["budget_tokens"], json!(budget));
    // Bedrock's Claude alike.
    let bedrock = ModelRequest {
        model: "anthropic.claude-sonnet-4-5-20250929-v1:0".into(),
        ..sent.clone()
    };
    let body = crate::wire::bedrock::encode::request_body(&bedrock);
    assert_eq!(body["inferenceConfig"]["maxTokens"], json!(cap));
    assert_eq!(
        body["additionalModelRequestFields"]["thinking"]["budget_tokens"],
        json!(budget)
    );
    // Without a cost ceiling nothing is touched.
    let free = super::tests::guard(None, Some(CLAUDE)).unwrap();
    assert!(free
        .admit(&request, 67_200)
        .unwrap()
        .request(&request)
        .is_none());
}

/// A guard on a ceiling of `extra` dollars beyond what its first request cost: that
/// request (thinking at medium) reported 20,000 input tokens, 18,000 of them read
/// from the cache. Returns it with the next request, which extends the first, and
/// pith's count of that request.
fn after_a_cached_request(extra: f64) -> (SpendGuard, ModelRequest, u64) {
    let reported = usage(20_000, 18_000, 100);
    let guard = guard(Some(PRICES.cost(&reported) + extra), Some(PRICES)).unwrap();
    let first = ModelRequest {
        reasoning: Some(ReasoningEffort::Medium),
        ..sonnet("hello")
    };
    let admitted = guard.admit(&first, 67_200).unwrap();
    guard.charge(&first, admitted, Some(&reported), true, 0);
    let next = ModelRequest {
        messages: Arc::new(vec![
            Message::user("hello"),
            Message::assistant("Hi."),
            Message::user("more"),
        ]),
        ..first.clone()
    };
    let tokens = priced_input_tokens(
        guard
            .estimator
            .lock()
            .unwrap()
            .estimate(&next.system, &next.messages, &next.tools)
            .total as u64,
    );
    (guard, next, tokens)
}

#[test]
fn a_prompt_the_last_request_left_in_the_cache_is_priced_as_read() {
    let cached = |tokens| {
        PRICES.input_cost(InputEstimate {
            tokens,
            likely_cached: 20_000,
        })
    };
    // Room for the prompt (mostly read from the cache) and 12,000 tokens of answer,
    // which holds the 10,000 of medium thinking: thinking is unchanged.
    let (probe, _, tokens) = after_a_cached_request(1.0);
    drop(probe);
    let (guard, next, _) = after_a_cached_request(cached(tokens) + PRICES.output_cost(12_000));
    let admitted = guard.admit(&next, 67_200).unwrap();
    assert!(
        (11_999..=12_000).contains(&admitted.output_cap),
        "{}",
        admitted.output_cap
    );
    assert_eq!(admitted.reasoning, Some(ReasoningEffort::Medium));
    // A rewritten history as long (a compaction's) is not in the cache: priced as
    // new, the same budget pays for thousands of tokens less.
    let rewritten = ModelRequest {
        messages: Arc::new(vec![Message::user("summary ".repeat(20_000))]),
        ..next.clone()
    };
    drop(admitted);
    let admitted = guard.admit(&rewritten, 67_200).unwrap();
    assert!(admitted.output_cap < 9_000, "{}", admitted.output_cap);
}

#[test]
fn a_cap_too_small_for_thinking_drops_it_and_prices_the_prompt_as_new() {
    let (probe, _, tokens) = after_a_cached_request(1.0);
    drop(probe);
    let cached = PRICES.input_cost(InputEstimate {
        tokens,
        likely_cached: 20_000,
    });
    let new = PRICES.input_cost(InputEstimate {
        tokens,
        likely_cached: 0,
    });
    // 1,500 tokens of answer after the cached prompt: too few for thinking, and
    // turning it off throws the provider's cache of the messages away; priced as
    // new, the prompt alone is past the budget. Refused.
    let (guard, next, _) = after_a_cached_request(cached + PRICES.output_cost(1_500));
    let refused = guard.admit(&next, 67_200).unwrap_err();
    assert!(matches!(refused, CeilingReached::Cost { .. }), "{refused}");
    // With room for the prompt priced as new, it is sent without thinking.
    let (guard, next, _) = after_a_cached_request(new + PRICES.output_cost(1_500));
    let admitted = guard.admit(&next, 67_200).unwrap();
    assert!(
        (1_499..=1_500).contains(&admitted.output_cap),
        "{}",
        admitted.output_cap
    );
    let sent = admitted.request(&next).unwrap();
    assert_eq!(sent.reasoning, Some(ReasoningEffort::Off));
    let body = crate::wire::anthropic::encode::request_body(&sent);
    assert_eq!(body["max_tokens"], json!(admitted.output_cap));
    assert!(body.get("thinking").is_none(), "{body}");
}

#[test]
fn cache_writes_are_priced_at_the_write_price() {
    let request = sonnet("hello ".repeat(2_000).as_str());
    let tokens = input_tokens(&request);
    let budget = 0.05;
    let plain = guard(Some(budget), Some(PRICES)).unwrap();
    let written = guard(Some(budget), Some(CLAUDE)).unwrap();
    let plain_cap = plain.admit(&request, 67_200).unwrap().output_cap;
    let written_cap = written.admit(&request, 67_200).unwrap().output_cap;
    // The prompt may be written at $3.75/M rather than read at $3/M.
    let difference = PRICES.output_tokens_for(tokens as f64 * 0.75 / 1e6);
    assert!(
        plain_cap - written_cap >= difference && plain_cap - written_cap <= difference + 1,
        "{plain_cap} {written_cap} {difference}"
    );
}

#[test]
fn requests_are_charged_their_reported_cost_and_refused_past_the_ceiling() {
    let guard = guard(Some(0.02), Some(PRICES)).unwrap();
    let request = request("hello");
    let admitted = guard.admit(&request, 32_000).unwrap();
    guard.charge(&request, admitted, Some(&usage(1_000, 0, 1_000)), true, 0);
    assert!((guard.meter().spent() - 0.018).abs() < 1e-9);
    assert!((guard.meter().remaining().unwrap() - 0.002).abs() < 1e-9);
    let refused = guard.admit(&request, 32_000).unwrap_err();
    assert!(matches!(refused, CeilingReached::Cost { .. }), "{refused}");
}

#[test]
fn a_request_without_reported_usage_is_charged_its_input_and_counted_answer() {
    let guard = guard(Some(10.0), Some(PRICES)).unwrap();
    let request = request("hello");
    let input = PRICES.input_cost(InputEstimate {
        tokens: input_tokens(&request),
        likely_cached: 0,
    });
    let admitted = guard.admit(&request, 32_000).unwrap();
    guard.charge(&request, admitted, None, false, 0);
    assert_eq!(
        guard.meter().spent(),
        0.0,
        "a refused connection costs nothing"
    );
    let admitted = guard.admit(&request, 32_000).unwrap();
    guard.charge(&request, admitted, None, true, 400);
    let charged = input + PRICES.output_cost(400);
    assert!((guard.meter().spent() - charged).abs() < 1e-12);
    // Never more than the cap it was sent with.
    let admitted = guard.admit(&request, 32_000).unwrap();
    guard.charge(&request, admitted, None, true, 5_000);
    let capped = input + PRICES.output_cost(1_000);
    assert!((guard.meter().spent() - charged - capped).abs() < 1e-12);
}

#[test]
fn loops_on_one_meter_share_the_budget_while_their_requests_run() {
    let shared = meter(Some(0.05));
    let parent = SpendGuard::new(Arc::clone(&shared), Some(PRICES), counter()).unwrap();
    let child = SpendGuard::new(Arc::clone(&shared), Some(PRICES), counter()).unwrap();
    let request = sonnet("hello");
    let running = parent.admit(&request, 67_200).unwrap();
    // The parent's request holds all of the budget: the child's is refused.
    let refused = child.admit(&request, 67_200).unwrap_err();
    assert!(matches!(refused, CeilingReached::Cost { in_flight, .. } if in_flight > 0.04));
    // It answered with 1,000 tokens: the child gets what is left.
    parent.charge(&request, running, Some(&usage(10, 0, 1_000)), true, 0);
    let admitted = child.admit(&request, 67_200).unwrap();
    assert!(admitted.estimate <= 0.05 - 0.015 && admitted.clamped);
}
