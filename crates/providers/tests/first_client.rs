//! An OpenAI adapter built as the very first HTTP client of a process must not panic.
//!
//! reqwest is built with `rustls-no-provider`; async-openai builds a default reqwest client
//! inside `Client::with_config`. Before the fix the adapters installed the ring provider
//! only after that call, so `pith --model openai/...` panicked on start. This binary holds
//! one test so nothing else installs the provider first.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use pith_providers::wire::openai_chat::OpenAiChat;
use pith_providers::wire::openai_responses::OpenAiResponses;

#[test]
fn an_openai_adapter_can_be_the_first_http_client_of_the_process() {
    OpenAiChat::new("http://127.0.0.1:9/v1", None).expect("the Chat adapter builds");
    OpenAiResponses::new("http://127.0.0.1:9/v1", None).expect("the Responses adapter builds");
}
