//! Which provider wire protocol the server speaks, and which request paths are its
//! endpoint (Gemini and Bedrock name the model in the path).

use serde::{Deserialize, Serialize};

/// Which provider wire protocol the server speaks, and so which endpoint it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// OpenAI Responses: `POST /v1/responses`.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages: `POST /v1/messages`.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Google Gemini: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (and
    /// `:generateContent`), the model named in the path.
    #[serde(rename = "gemini")]
    Gemini,
    /// AWS Bedrock Converse: `POST /model/{modelId}/converse-stream` (binary event
    /// stream; `/model/{modelId}/converse` for a JSON answer), any model id.
    #[serde(rename = "bedrock")]
    Bedrock,
}

/// The path prefix of Gemini's model endpoints.
const GEMINI_MODELS_PATH: &str = "/v1beta/models/";

/// What a request path asks of the protocol's endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The model named in the path (Gemini, Bedrock), else `None` (it is in the body).
    pub model: Option<String>,
    /// The path itself says whether the answer is streamed (Gemini's
    /// `:streamGenerateContent`, Bedrock's `/converse-stream`); `None`: the body's
    /// `stream` says.
    pub streaming: Option<bool>,
}

impl Protocol {
    /// The request path this protocol answers (`/v1/chat/completions`, `/v1/responses`,
    /// `/v1/messages`); for Gemini, whose path names the model, the streaming path of
    /// the model `testkit-model` (any model's is answered, see [`Protocol::endpoint`]).
    pub fn endpoint_path(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "/v1/chat/completions",
            Protocol::OpenAiResponses => "/v1/responses",
            Protocol::Anthropic => "/v1/messages",
            Protocol::Gemini => "/v1beta/models/testkit-model:streamGenerateContent",
            Protocol::Bedrock => "/model/{modelId}/converse-stream",
        }
    }

    /// Whether `path` is this protocol's endpoint, and what it says (Gemini and Bedrock:
    /// the model and whether the answer streams). The others answer
    /// [`Protocol::endpoint_path`] exactly.
    pub(crate) fn endpoint(self, path: &str) -> Option<Endpoint> {
        match self {
            Protocol::Gemini => {
                let rest = path.strip_prefix(GEMINI_MODELS_PATH)?;
                let (model, method) = rest.rsplit_once(':')?;
                let streaming = match method {
                    "streamGenerateContent" => true,
                    "generateContent" => false,
                    _ => return None,
                };
                (!model.is_empty() && !model.contains('/')).then(|| Endpoint {
                    model: Some(model.to_owned()),
                    streaming: Some(streaming),
                })
            }
            Protocol::Bedrock => {
                let (model, streaming) = bedrock_model_of_path(path)?;
                Some(Endpoint {
                    model: Some(model),
                    streaming: Some(streaming),
                })
            }
            _ => (path == self.endpoint_path()).then_some(Endpoint {
                model: None,
                streaming: None,
            }),
        }
    }

    /// The script spelling: `openai-chat`, `openai-responses` or `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "openai-chat",
            Protocol::OpenAiResponses => "openai-responses",
            Protocol::Anthropic => "anthropic",
            Protocol::Gemini => "gemini",
            Protocol::Bedrock => "bedrock",
        }
    }

    /// Prefix of generated tool-call ids: `call_` for both OpenAI kinds, `toolu_` for
    /// Anthropic, `fc_` for Gemini (sent as `functionCall.id`).
    pub fn tool_call_id_prefix(self) -> &'static str {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => "call_",
            Protocol::Anthropic => "toolu_",
            Protocol::Gemini => "fc_",
            Protocol::Bedrock => "tooluse_",
        }
    }
}

/// The model id of a Converse path, `/model/{modelId}/converse-stream` (or `/converse`),
/// percent-decoded; `None` for any other path.
fn bedrock_model_of_path(path: &str) -> Option<(String, bool)> {
    let rest = path.strip_prefix("/model/")?;
    let (model, streaming) = if let Some(model) = rest.strip_suffix("/converse-stream") {
        (model, true)
    } else {
        (rest.strip_suffix("/converse")?, false)
    };
    if model.is_empty() || model.contains('/') {
        return None;
    }
    Some((percent_decode(model), streaming))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converse_paths_name_their_model() {
        assert_eq!(
            bedrock_model_of_path(
                "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
            ),
            Some(("anthropic.claude-sonnet-4-5-20250929-v1:0".to_owned(), true))
        );
        assert_eq!(
            bedrock_model_of_path("/model/m/converse"),
            Some(("m".to_owned(), false))
        );
        assert_eq!(bedrock_model_of_path("/v1/messages"), None);
        assert_eq!(bedrock_model_of_path("/model//converse-stream"), None);
    }
}
