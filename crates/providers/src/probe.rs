//! Asking an OpenAI-compatible server what it serves and how large its context is.
//!
//! Local servers are where a wrong window hurts most (compaction never fires, or every
//! request fails), and they usually know their own context size: llama.cpp's server
//! reports `n_ctx` in `/props`, vLLM reports `max_model_len` and OpenRouter
//! `context_length` in `/v1/models`, Ollama reports the model's context length in
//! `/api/show`. pith asks, and only falls back to configuration when the server does not
//! say.

use std::time::Duration;

use serde_json::Value;

use crate::error::ProviderError;
use crate::http::http_client;

/// What a server reported about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// Model ids from `/v1/models`.
    pub models: Vec<String>,
    /// The context window, when the server reports it.
    pub context_window: Option<u64>,
}

/// Probes `base_url` (ending in `/v1`). Fails when `/models` does not answer 200 within
/// `timeout`; a missing window is not an error.
pub async fn probe_openai_compatible(
    base_url: &str,
    model: &str,
    timeout: Duration,
) -> Result<ServerInfo, ProviderError> {
    let client = http_client()?;
    let base = base_url.trim_end_matches('/');
    let origin = base.strip_suffix("/v1").unwrap_or(base);
    let models: Value = get_json(&client, &format!("{base}/models"), timeout).await?;
    let entries = models["data"].as_array().cloned().unwrap_or_default();
    let mut info = ServerInfo {
        models: entries
            .iter()
            .filter_map(|m| m["id"].as_str().map(str::to_owned))
            .collect(),
        context_window: None,
    };
    let entry = entries
        .iter()
        .find(|m| m["id"] == model)
        .or(entries.first());
    if let Some(entry) = entry {
        info.context_window = window_in_model_entry(entry);
    }
    if info.context_window.is_none() {
        if let Ok(props) = get_json(&client, &format!("{origin}/props"), timeout).await {
            info.context_window = window_in_props(&props);
        }
    }
    if info.context_window.is_none() {
        let name = entry.and_then(|e| e["id"].as_str()).unwrap_or(model);
        if let Ok(show) = post_json(
            &client,
            &format!("{origin}/api/show"),
            &serde_json::json!({"model": name}),
            timeout,
        )
        .await
        {
            info.context_window = window_in_ollama_show(&show);
        }
    }
    Ok(info)
}

async fn get_json(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<Value, ProviderError> {
    let response = client
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| ProviderError::Connection(format!("{url}: {e}")))?;
    if !response.status().is_success() {
        return Err(ProviderError::Http {
            status: response.status().as_u16(),
            message: format!("GET {url}"),
        });
    }
    response
        .json()
        .await
        .map_err(|e| ProviderError::Stream(format!("{url}: {e}")))
}

async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    timeout: Duration,
) -> Result<Value, ProviderError> {
    let response = client
        .post(url)
        .timeout(timeout)
        .json(body)
        .send()
        .await
        .map_err(|e| ProviderError::Connection(format!("{url}: {e}")))?;
    if !response.status().is_success() {
        return Err(ProviderError::Http {
            status: response.status().as_u16(),
            message: format!("POST {url}"),
        });
    }
    response
        .json()
        .await
        .map_err(|e| ProviderError::Stream(format!("{url}: {e}")))
}

fn positive(value: &Value) -> Option<u64> {
    value.as_u64().filter(|v| *v > 0)
}

/// vLLM `max_model_len`, OpenRouter `context_length`, llama.cpp `meta.n_ctx` (runtime,
/// when present; `n_ctx_train` is the training size, not the server's).
fn window_in_model_entry(entry: &Value) -> Option<u64> {
    positive(&entry["max_model_len"])
        .or_else(|| positive(&entry["context_length"]))
        .or_else(|| positive(&entry["context_window"]))
        .or_else(|| positive(&entry["n_ctx"]))
        .or_else(|| positive(&entry["meta"]["n_ctx"]))
}

/// llama.cpp server `/props`.
fn window_in_props(props: &Value) -> Option<u64> {
    positive(&props["default_generation_settings"]["n_ctx"]).or_else(|| positive(&props["n_ctx"]))
}

/// Ollama `/api/show`: `num_ctx` in the parameters wins (what the server runs with),
/// then `<arch>.context_length` from the model info.
fn window_in_ollama_show(show: &Value) -> Option<u64> {
    if let Some(parameters) = show["parameters"].as_str() {
        for line in parameters.lines() {
            let mut words = line.split_whitespace();
            if words.next() == Some("num_ctx") {
                if let Some(n) = words.next().and_then(|n| n.parse().ok()) {
                    return Some(n);
                }
            }
        }
    }
    show["model_info"]
        .as_object()?
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))
        .and_then(|(_, v)| positive(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_are_read_from_every_server_family() {
        assert_eq!(
            window_in_model_entry(&json!({"id": "m", "max_model_len": 32768})),
            Some(32768)
        );
        assert_eq!(
            window_in_model_entry(&json!({"id": "m", "context_length": 200000})),
            Some(200000)
        );
        assert_eq!(
            window_in_model_entry(&json!({"id": "m", "meta": {"n_ctx_train": 8192}})),
            None
        );
        assert_eq!(
            window_in_props(&json!({"default_generation_settings": {"n_ctx": 4096}})),
            Some(4096)
        );
        assert_eq!(
            window_in_ollama_show(
                &json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384", "model_info": {"llama.context_length": 131072}})
            ),
            Some(16384)
        );
        assert_eq!(
            window_in_ollama_show(&json!({"model_info": {"qwen2.context_length": 32768}})),
            Some(32768)
        );
    }
}
