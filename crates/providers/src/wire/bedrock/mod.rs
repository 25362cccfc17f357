//! AWS Bedrock's Converse streaming API (`POST {base}/model/{modelId}/converse-stream`)
//! over pith's transport, with the binary event-stream framing.
//!
//! One adapter for every model family Converse serves (Anthropic, Amazon, Meta, Mistral,
//! …): the request is Converse's own JSON (`encode`), signed with SigV4 (`sign`, the
//! official `aws-sigv4`) with credentials from a [`CredentialSource`] (`credentials`: the
//! standard AWS chain, or fixed ones in tests), and the answer is a stream of
//! `application/vnd.amazon.eventstream` messages (`wire::eventstream`, framing by
//! `aws-smithy-eventstream`) decoded by `decode`. Exceptions inside the stream and HTTP
//! error bodies map onto [`ProviderError`]'s classes (`decode::classify_exception`).
//!
//! The region comes from the adapter (`AWS_REGION` / `AWS_DEFAULT_REGION` resolved by the
//! config layer), else the credential source's configuration (the profile's `region`).
//! The base URL may hold `{region}`: the default is
//! `https://bedrock-runtime.{region}.amazonaws.com`.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;

use crate::wire::adapter::{decode_stream, ChunkStream, Decoded, ModelRequest, ProviderAdapter};
use crate::wire::error::ProviderError;
use crate::wire::http::{HttpFailure, HttpOptions, Transport};

pub mod credentials;
mod decode;
pub mod encode;
pub mod sign;

pub use self::credentials::{AwsChain, CredentialSource, FixedCredentials};
pub use self::decode::{classify_exception, classify_http};
pub use self::encode::{
    encode_body, request_body, supports_cache_points, DEFAULT_MAX_TOKENS, ORIGIN,
};

/// The public endpoint, `{region}` filled in per request.
pub const DEFAULT_BASE_URL: &str = "https://bedrock-runtime.{region}.amazonaws.com";

/// The Bedrock Converse adapter.
#[derive(Debug, Clone)]
pub struct Bedrock {
    transport: Transport,
    base_url: String,
    region: Option<String>,
    credentials: Arc<dyn CredentialSource>,
}

impl Bedrock {
    /// An adapter for `base_url` (may contain `{region}`), signing for `region` (else the
    /// credential source's) with `credentials`, with the default HTTP options.
    pub fn new(
        base_url: &str,
        region: Option<&str>,
        credentials: Arc<dyn CredentialSource>,
    ) -> Result<Self, ProviderError> {
        Self::with_options(base_url, region, credentials, HttpOptions::default())
    }

    /// An adapter with explicit HTTP options (limits, redirects).
    pub fn with_options(
        base_url: &str,
        region: Option<&str>,
        credentials: Arc<dyn CredentialSource>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Transport::new(options)?,
            base_url: base_url.trim_end_matches('/').to_owned(),
            region: region.filter(|r| !r.is_empty()).map(str::to_owned),
            credentials,
        })
    }

    async fn region(&self) -> Result<String, ProviderError> {
        if let Some(region) = &self.region {
            return Ok(region.clone());
        }
        self.credentials.region().await.ok_or_else(|| {
            ProviderError::InvalidRequest(
                "Bedrock needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or \
                 `region` in the profile of ~/.aws/config"
                    .to_owned(),
            )
        })
    }
}

/// `{base}/model/{model, percent-encoded}/converse-stream`, `{region}` in `base` filled in.
pub fn endpoint_url(base_url: &str, region: &str, model: &str) -> String {
    let base = base_url.trim_end_matches('/').replace("{region}", region);
    format!(
        "{base}/model/{}/converse-stream",
        encode_path_segment(model)
    )
}

/// Percent-encodes everything but RFC 3986's unreserved characters (a model id's `:`, an
/// ARN's `/`).
fn encode_path_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

fn classify(failure: HttpFailure) -> ProviderError {
    classify_http(
        failure.status,
        failure.error_type.as_deref(),
        failure.retry_after,
        &failure.body,
    )
}

#[async_trait]
impl ProviderAdapter for Bedrock {
    fn protocol_name(&self) -> &'static str {
        "bedrock"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let region = self.region().await?;
        let url = endpoint_url(&self.base_url, &region, &request.model);
        let body = encode_body(request);
        let credentials = self.credentials.credentials().await?;
        let signed = sign::signature_headers(
            &sign::Unsigned {
                method: "POST",
                url: &url,
                headers: &[("content-type", "application/json")],
                body: &body,
            },
            &credentials,
            &sign::Scope {
                region: &region,
                service: sign::SERVICE,
                time: SystemTime::now(),
            },
        )?;
        let headers: Vec<(&str, &str)> = signed
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let messages = self
            .transport
            .post_messages(&url, &headers, body, classify)
            .await?;
        let mut parser = decode::Parser::default();
        let stream = decode_stream(
            messages,
            *self.transport.limits(),
            move |message| match message {
                Some(message) => parser.message(&message).map(|chunks| Decoded {
                    chunks,
                    done: parser.done,
                }),
                None => parser.end().map(Decoded::last),
            },
        );
        Ok(match request.output.as_ref().filter(|o| o.force) {
            Some(output) => crate::wire::structured::forced_call_as_text(stream, output),
            None => stream,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{Message, Part, Reasoning, ToolCall, ToolDefinition};
    use serde_json::json;

    #[test]
    fn the_endpoint_encodes_model_ids_and_fills_the_region() {
        assert_eq!(
            endpoint_url(DEFAULT_BASE_URL, "eu-west-3", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
        );
        assert_eq!(
            endpoint_url("http://127.0.0.1:9/", "us-east-1", "arn:aws:bedrock:us-east-1:1:inference-profile/us.meta.llama3-3-70b-instruct-v1:0"),
            "http://127.0.0.1:9/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.meta.llama3-3-70b-instruct-v1%3A0/converse-stream"
        );
    }

    fn request(model: &str) -> ModelRequest {
        let mut assistant = Message::assistant_with_calls(
            "ok",
            vec![ToolCall {
                id: "t1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            }],
        );
        assistant.parts.insert(
            0,
            Part::Reasoning(Reasoning {
                origin: ORIGIN.into(),
                text: "thought".into(),
                signature: Some("sig".into()),
                ..Reasoning::default()
            }),
        );
        ModelRequest {
            model: model.into(),
            system: "sys".into(),
            messages: Arc::new(vec![
                Message::user("read it"),
                assistant,
                Message::tool_result("t1", "content", false),
                Message::user("and summarise"),
            ]),
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: None,
            temperature: Some(0.5),
            reasoning: None,
            output: None,
            cache: Default::default(),
        }
    }

    #[test]
    fn the_end_of_the_stable_prefix_gets_a_cache_point_of_its_own() {
        let mut anchored = request("anthropic.claude-sonnet-4-5-20250929-v1:0");
        anchored.cache.anchor = Some(1);
        let body = request_body(&anchored);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages[0]["content"],
            json!([{"text": "read it"}, {"cachePoint": {"type": "default"}}])
        );
        let points = body.to_string().matches("cachePoint").count();
        assert_eq!(
            points, 4,
            "system, tools, the anchor, the last message: {body}"
        );
        // A model without cache points gets none.
        let plain = request_body(&ModelRequest {
            model: "meta.llama3-3-70b-instruct-v1:0".into(),
            ..anchored
        });
        assert!(!plain.to_string().contains("cachePoint"));
    }

    #[test]
    fn a_claude_request_merges_roles_marks_cache_points_and_puts_tool_results_first() {
        let body = request_body(&request("us.anthropic.claude-sonnet-4-5-20250929-v1:0"));
        assert_eq!(
            body["system"],
            json!([{"text": "sys"}, {"cachePoint": {"type": "default"}}])
        );
        assert_eq!(
            body["toolConfig"]["tools"],
            json!([
                {"toolSpec": {"name": "read", "description": "Read", "inputSchema": {"json": {"type": "object"}}}},
                {"cachePoint": {"type": "default"}}
            ])
        );
        assert_eq!(
            body["inferenceConfig"],
            json!({"maxTokens": DEFAULT_MAX_TOKENS, "temperature": 0.5})
        );
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[1]["content"],
            json!([
                {"text": "ok"},
                {"toolUse": {"toolUseId": "t1", "name": "read", "input": {"path": "a"}}}
            ]),
            "reasoning goes back only when thinking is on"
        );
        assert_eq!(
            messages[2]["content"],
            json!([
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "content"}], "status": "success"}},
                {"text": "and summarise"},
                {"cachePoint": {"type": "default"}}
            ])
        );
        assert!(body.get("additionalModelRequestFields").is_none());
    }

    #[test]
    fn thinking_replays_signed_reasoning_and_drops_the_temperature_for_claude_only() {
        let mut claude = request("anthropic.claude-sonnet-4-5-20250929-v1:0");
        claude.reasoning = Some(crate::wire::ReasoningEffort::parse("high").unwrap());
        let body = request_body(&claude);
        let budget = body["additionalModelRequestFields"]["thinking"]["budget_tokens"]
            .as_u64()
            .unwrap();
        assert!(body["inferenceConfig"]["maxTokens"].as_u64().unwrap() > budget);
        assert!(body["inferenceConfig"].get("temperature").is_none());
        assert_eq!(
            body["messages"][1]["content"][0],
            json!({"reasoningContent": {"reasoningText": {"text": "thought", "signature": "sig"}}})
        );
        let mut llama = request("meta.llama3-3-70b-instruct-v1:0");
        llama.reasoning = claude.reasoning;
        let body = request_body(&llama);
        assert!(body.get("additionalModelRequestFields").is_none());
        assert_eq!(body["system"], json!([{"text": "sys"}]), "no cache points");
        assert_eq!(body["inferenceConfig"]["temperature"], json!(0.5));
    }

    #[test]
    fn blank_text_is_left_out_and_a_conversation_starts_with_the_user() {
        let request = ModelRequest {
            model: "mistral.mistral-large-2407-v1:0".into(),
            system: String::new(),
            messages: Arc::new(vec![
                Message::assistant("first"),
                Message::user("  "),
                Message::tool_result("t", "", true),
            ]),
            tools: Vec::new(),
            max_output_tokens: Some(100),
            temperature: None,
            reasoning: None,
            output: None,
            cache: Default::default(),
        };
        let body = request_body(&request);
        assert!(body.get("system").is_none());
        assert!(body.get("toolConfig").is_none());
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"text": "(conversation continues)"}]},
                {"role": "assistant", "content": [{"text": "first"}]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": [{"text": "(no output)"}], "status": "error"}}]}
            ])
        );
    }
}
