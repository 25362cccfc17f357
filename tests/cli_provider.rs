//! End-to-end provider realism through the real `pith run` binary and the testkit, which
//! refuses what the real APIs refuse: Anthropic thinking (`--reasoning`) round trips,
//! Responses encrypted reasoning for a reasoning model, reasoning tokens and their cost
//! in the JSON outputs, the output-cap field of the built-in `openai-chat`, OpenRouter's
//! headers, reported cost and error format, images through `read`, and the loud warning
//! for a model the catalog does not know.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{records, stderr, stdout, Sandbox};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

/// A 1×1 PNG.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

fn json_result(output: &std::process::Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    serde_json::from_str(stdout(output).trim()).expect("one JSON result")
}

/// The parts of every message of every `assistant_turn` record.
fn recorded_parts(sandbox: &Sandbox) -> Vec<Value> {
    records(&sandbox.only_transcript())
        .iter()
        .filter(|r| r["kind"] == "assistant_turn")
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn anthropic_thinking_goes_back_signed_and_stays_out_of_the_answer() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("read", json!({"path": "notes.txt"})).with_reasoning("Read the notes."),
        Turn::text("Done.").with_reasoning("They say x."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--reasoning",
            "8000",
            "--format",
            "json",
            "what do the notes say?",
        ],
    );
    let result = json_result(&output);
    assert_eq!(result["text"], "Done.");
    let requests = server.requests();
    assert_eq!(
        requests[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8000})
    );
    assert_eq!(
        requests[1].body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Read the notes.", "signature": "testkit-signature-1"})
    );
    let parts = recorded_parts(&sandbox);
    let reasoning: Vec<&Value> = parts.iter().filter(|p| p["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 2, "persisted in the transcript: {parts:?}");
    assert_eq!(reasoning[0]["signature"], "testkit-signature-1");
}

#[test]
fn a_bad_reasoning_value_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::text("never")])).unwrap();
    let output = sandbox.run(&server, &["--reasoning", "lots", "hi"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not a reasoning setting"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_reasoning_model_on_responses_gets_its_encrypted_reasoning_back_and_tokens_are_reported() {
    let sandbox = Sandbox::new();
    // The scripted 50,000-token answer anchors the next request's estimate above the
    // 32,000-token working set, which would compact; this test is about reasoning.
    common::write_user_config(&sandbox, "[context]\nworking_set_tokens = 0\n");
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::openai_responses([
        Turn::tool_call("read", json!({"path": "notes.txt"}))
            .with_reasoning("Read first.")
            .with_usage(1_000, 50_000)
            .with_reasoning_tokens(40_000),
        Turn::text("Done.").with_usage(10, 10),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "openai/gpt-5",
            "--format",
            "json",
            "read the notes",
        ],
    );
    let result = json_result(&output);
    assert_eq!(result["text"], "Done.", "reasoning is never answer text");
    let requests = server.requests();
    assert_eq!(
        requests[0].body["include"],
        json!(["reasoning.encrypted_content"]),
        "a reasoning model asks for it without --reasoning"
    );
    assert!(requests[0].body["reasoning"].is_null());
    let input = requests[1].body["input"].as_array().unwrap();
    assert!(input
        .iter()
        .any(|i| i["type"] == "reasoning" && i["encrypted_content"] == "testkit-encrypted-1"));
    assert_eq!(result["usage"]["reasoning_tokens"], 40_000);
    // gpt-5 output is $10 per million tokens: 40,000 reasoning tokens cost $0.40.
    let reasoning_cost = result["reasoning_cost"].as_f64().unwrap();
    assert!((reasoning_cost - 0.4).abs() < 1e-9, "{result}");
    let cost = result["cost"].as_f64().unwrap();
    assert!(cost > reasoning_cost, "{result}");
}

#[test]
fn the_built_in_openai_chat_caps_output_with_max_completion_tokens() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(
        Script::openai_chat([Turn::text("Fine.")]).accepting_only("max_completion_tokens"),
    )
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", "openai-chat/o4-mini", "--format", "json", "hi"],
    );
    let result = json_result(&output);
    assert_eq!(result["text"], "Fine.");
    assert!(server.requests()[0].body["max_tokens"].is_null());
}

#[test]
fn openrouter_sends_its_headers_retries_its_upstream_errors_and_reports_its_cost() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::openai_chat([
        Turn::fault(Fault::ProviderReturnedError),
        Turn::text("Hello.").with_cost(0.0123),
    ]))
    .unwrap();
    let output = sandbox
        .pith(None)
        .env("OPENROUTER_API_KEY", "sk-or-test-key")
        .env("OPENROUTER_BASE_URL", server.base_url())
        .args([
            "run",
            "--model",
            "openrouter/anthropic/claude-sonnet-4.5",
            "--format",
            "json",
            "hi",
        ])
        .output()
        .unwrap();
    let result = json_result(&output);
    assert_eq!(result["text"], "Hello.");
    assert!(
        !stderr(&output).contains("unknown model"),
        "the catalog knows it: {}",
        stderr(&output)
    );
    assert!(
        (result["cost"].as_f64().unwrap() - 0.0123).abs() < 1e-12,
        "{result}"
    );
    assert_eq!(result["usage"]["provider_cost_nanousd"], 12_300_000);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the 502 was retried");
    assert_eq!(requests[1].header("x-title"), Some("pith"));
    assert_eq!(
        requests[1].body["max_tokens"],
        Value::Null,
        "no cap configured"
    );
}

#[test]
fn openrouter_names_the_upstream_when_it_fails_for_good() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::openai_chat(
        (0..5).map(|_| Turn::fault(Fault::ProviderReturnedError)),
    ))
    .unwrap();
    let config = sandbox.root.path().join("config/pith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[providers.openrouter]\nheaders = { \"HTTP-Referer\" = \"https://example.test/app\" }\n",
    )
    .unwrap();
    let output = sandbox
        .pith(None)
        .env("OPENROUTER_API_KEY", "sk-or-test-key")
        .env("OPENROUTER_BASE_URL", server.base_url())
        .args([
            "run",
            "--model",
            "openrouter/anthropic/claude-sonnet-4.5",
            "hi",
        ])
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    let err = stderr(&output);
    assert!(
        err.contains("Provider returned error (Testkit Upstream: "),
        "{err}"
    );
    let request = &server.requests()[0];
    assert_eq!(
        request.header("http-referer"),
        Some("https://example.test/app")
    );
    assert_eq!(request.header("x-title"), Some("pith"));
}

#[test]
fn read_sends_an_image_to_a_model_that_takes_images_and_refuses_it_otherwise() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("shot.png"), PNG_1X1).unwrap();
    let script = || {
        Script::anthropic([
            Turn::tool_call("read", json!({"path": "shot.png"})),
            Turn::text("A pixel."),
        ])
    };
    let server = TestServer::start(script()).unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "look at shot.png",
        ],
    );
    json_result(&output);
    let result = &server.requests()[1].body["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/png");
    assert!(recorded_parts(&sandbox)
        .iter()
        .any(|p| p["type"] == "image"));

    // The same model configured as taking no images: a refusal in words.
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("shot.png"), PNG_1X1).unwrap();
    let config = sandbox.root.path().join("config/pith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[models.\"anthropic/claude-sonnet-4-5\"]\nimages = false\n",
    )
    .unwrap();
    let server = TestServer::start(script()).unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "look at shot.png",
        ],
    );
    json_result(&output);
    let result = &server.requests()[1].body["messages"][2]["content"][0];
    assert_eq!(result["is_error"], true);
    assert!(result["content"]
        .as_str()
        .unwrap()
        .contains("does not accept images"));
}

#[test]
fn an_unknown_model_warns_loudly_and_says_where_to_set_its_window() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::text("Hi.")])).unwrap();
    let output = sandbox.run(&server, &["--model", "anthropic/claude-opus-9", "hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("unknown model `anthropic/claude-opus-9`"),
        "{err}"
    );
    assert!(
        err.contains("[models.\"anthropic/claude-opus-9\"] context_window"),
        "{err}"
    );
    assert!(err.contains("~/.config/pith/config.toml"), "{err}");
}

#[test]
fn a_provider_setting_chooses_the_cap_field_and_the_configured_cap_goes_in_it() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(
        Script::openai_chat([Turn::text(
            "one two three four five six seven eight nine ten",
        )])
        .accepting_only("max_completion_tokens"),
    )
    .unwrap();
    let config = sandbox.root.path().join("config/pith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[providers.gateway]\nkind = \"openai-chat\"\nbase_url = \"{}\"\ncontext_window = 32000\nmax_tokens_field = \"max_completion_tokens\"\n\n[models.\"gateway/some-model\"]\nmax_output_tokens = 4\n",
            server.base_url()
        ),
    )
    .unwrap();
    let output = sandbox
        .pith(None)
        .args([
            "run",
            "--model",
            "gateway/some-model",
            "--format",
            "stream-json",
            "count to ten",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let body = &server.requests()[0].body;
    assert_eq!(body["max_completion_tokens"], 4);
    assert!(body["max_tokens"].is_null(), "{body}");
    // The testkit honours the cap as a server does: it stops with `length`.
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let truncated = lines
        .iter()
        .find(|l| l["type"] == "truncated")
        .unwrap_or_else(|| panic!("no truncated event: {lines:?}"));
    assert_eq!(
        truncated["reason"], "the provider's output limit (length)",
        "{truncated}"
    );

    // Without the setting a custom provider sends `max_tokens`, which this server refuses
    // as OpenAI refuses it for its reasoning models.
    let sandbox = Sandbox::new();
    let server = TestServer::start(
        Script::openai_chat([Turn::text("never")]).accepting_only("max_completion_tokens"),
    )
    .unwrap();
    let config = sandbox.root.path().join("config/pith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[providers.gateway]\nkind = \"openai-chat\"\nbase_url = \"{}\"\ncontext_window = 32000\n\n[models.\"gateway/some-model\"]\nmax_output_tokens = 4\n",
            server.base_url()
        ),
    )
    .unwrap();
    let output = sandbox
        .pith(None)
        .args(["run", "--model", "gateway/some-model", "count to ten"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("max_tokens"),
        "{}",
        stderr(&output)
    );
}

/// `pith run` on the built-in `local` provider against the real llama.cpp server
/// (`cargo xtask local-llm`): the configured cap reaches the server, which stops there.
#[test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
fn the_built_in_local_provider_caps_output_on_the_real_server() {
    let url = std::env::var("PITH_LOCAL_LLM_URL").expect(
        "PITH_LOCAL_LLM_URL is not set: start the server with `cargo xtask local-llm` and export PITH_LOCAL_LLM_URL=http://127.0.0.1:8077/v1",
    );
    let sandbox = Sandbox::new();
    let config = sandbox.root.path().join("config/pith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[models.\"local/smollm2\"]\nmax_output_tokens = 8\n",
    )
    .unwrap();
    let output = sandbox
        .pith(None)
        .env("PITH_LOCAL_BASE_URL", &url)
        .args([
            "run",
            "--model",
            "local/smollm2",
            "--format",
            "stream-json",
            "Write a long story about a lighthouse keeper, at least 300 words.",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let truncated = lines
        .iter()
        .find(|l| l["type"] == "truncated")
        .unwrap_or_else(|| panic!("the server did not stop at the cap: {lines:?}"));
    // The server stopped (`finish_reason: "length"`), not pith's own guard (cap + 256).
    assert_eq!(truncated["reason"], "the provider's output limit (length)");
    let result = lines.last().unwrap();
    let text = result["text"].as_str().unwrap();
    // SmolLM2's 8 tokens are a handful of words; uncapped it writes hundreds.
    let words = text.split_whitespace().count();
    assert!((1..=12).contains(&words), "{words} words: {text:?}");
}

/// A `width` × `height` PNG with some structure (a gradient), as a screenshot has.
fn screenshot(width: u32, height: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            (x % 256) as u8,
            (y % 256) as u8,
            ((x / 7 + y / 5) % 256) as u8,
        ])
    });
    let mut bytes = Vec::new();
    picture
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

/// Standard base64, as the APIs carry images.
fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut buffer, mut bits) = (0u32, 0);
    for byte in text.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET.iter().position(|a| *a == byte).expect("base64") as u32;
        buffer = (buffer << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

/// The size of the image `data` (base64) decodes to.
fn decoded_size(data: &str) -> (u32, u32) {
    let bytes = base64_decode(data);
    let picture = image::load_from_memory(&bytes).expect("a valid image was sent");
    (picture.width(), picture.height())
}

#[test]
fn a_large_screenshot_is_scaled_to_each_providers_limits() {
    // Anthropic: at most 1568 px on the long edge and about 1.15 megapixels.
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("big.png"), screenshot(4000, 3000)).unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("read", json!({"path": "big.png"})),
        Turn::text("A gradient."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "what is in big.png?",
        ],
    );
    json_result(&output);
    let result = &server.requests()[1].body["messages"][2]["content"][0];
    let (w, h) = decoded_size(result["content"][1]["source"]["data"].as_str().unwrap());
    assert!(
        w <= 1568 && u64::from(w) * u64::from(h) <= 1092 * 1092,
        "{w}×{h}"
    );
    assert!(w >= 1200, "scaled no further than needed: {w}×{h}");
    assert!((w * 3).abs_diff(h * 4) <= 4, "aspect kept: {w}×{h}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(&format!("{w}×{h}")), "{text}");

    // OpenAI: within 2048 × 2048, short side at most 768.
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("big.png"), screenshot(4000, 3000)).unwrap();
    let server = TestServer::start(Script::openai_responses([
        Turn::tool_call("read", json!({"path": "big.png"})),
        Turn::text("A gradient."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "openai/gpt-4.1",
            "--format",
            "json",
            "what is in big.png?",
        ],
    );
    json_result(&output);
    let input = server.requests()[1].body["input"].clone();
    let output_item = input
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap()
        .clone();
    let url = output_item["output"][1]["image_url"].as_str().unwrap();
    let data = url.strip_prefix("data:image/png;base64,").expect(url);
    assert_eq!(decoded_size(data), (1024, 768));
}

#[test]
fn a_session_full_of_screenshots_is_compacted_with_placeholders() {
    let sandbox = Sandbox::new();
    for i in 1..=3 {
        std::fs::write(
            sandbox.workspace().join(format!("shot{i}.png")),
            screenshot(1200, 900),
        )
        .unwrap();
    }
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("read", json!({"path": "shot1.png"}))
            .with_tool_call("read", json!({"path": "shot2.png"}))
            .with_tool_call("read", json!({"path": "shot3.png"}))
            .with_usage(46_000, 50),
        Turn::text("## Goal\nExplain the three screenshots."),
        Turn::text("They show a login form."),
    ]))
    .unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--context-window",
            "50000",
            "--format",
            "json",
            "explain shot1.png to shot3.png",
        ],
    );
    let result = json_result(&output);
    assert_eq!(result["text"], "They show a login form.");
    assert_eq!(result["compactions"][0]["trigger"], "auto", "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The summary request sends each image as its placeholder, never the image data.
    // Anthropic's formula: 1200 × 900 is within its limits, 1200 × 900 / 750 = 1,440.
    let summary = requests[1].body.to_string();
    assert!(!summary.contains("\"type\":\"image\""), "{summary}");
    for i in 1..=3 {
        let placeholder =
            format!("[image: shot{i}.png, 1200×900, ~1440 tokens — read it again to see it]");
        assert!(summary.contains(&placeholder), "{placeholder}: {summary}");
    }
    // After the compaction the images are gone from the history.
    assert!(!requests[2].body.to_string().contains("\"type\":\"image\""));
}
