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

use crate::wire::error::ProviderError;
use crate::wire::http::{HttpOptions, Transport};

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
    let client = Transport::new(HttpOptions::default())?;
    let base = base_url.trim_end_matches('/');
    let origin = base.strip_suffix("/v1").unwrap_or(base);
    let models: Value = client.get_json(&format!("{base}/models"), timeout).await?;
    let entries = models["data"].as_array().cloned().unwrap_or_default();
    let mut info = ServerInfo {
        models: entries
            .iter()
            .filter_map(|m| m["id"].as_str().map(str::to_owned))
            .collect(),
        context_window: None,
    };
    // Only the requested model's own entry speaks for its window: a list without it
    // means the window is unknown (never another model's).
    let Some(entry) = entries.iter().find(|m| m["id"] == model) else {
        tracing::debug!(base_url, model, listed = ?info.models, "the server does not list the model; its window is unknown");
        return Ok(info);
    };
    info.context_window = window_in_model_entry(entry);
    if info.context_window.is_none() {
        if let Ok(props) = client.get_json(&format!("{origin}/props"), timeout).await {
            info.context_window = window_in_props(&props);
        }
    }
    if info.context_window.is_none() {
        if let Ok(show) = client
            .post_json(
                &format!("{origin}/api/show"),
                &serde_json::json!({"model": model}),
                timeout,
            )
            .await
        {
            info.context_window = window_in_ollama_show(&show);
        }
    }
    tracing::debug!(base_url, model, window = ?info.context_window, "server probe");
    Ok(info)
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

    /// A tiny HTTP server answering `GET /v1/models` with `models` and `GET /props` with
    /// an `n_ctx` of 4096 (a llama.cpp server), for `requests` connections.
    async fn serve(models: serde_json::Value) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let models = models.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 4096];
                    let read = stream.read(&mut buffer).await.unwrap_or(0);
                    let request = String::from_utf8_lossy(&buffer[..read]).into_owned();
                    let body = if request.starts_with("GET /v1/models") {
                        models.to_string()
                    } else if request.starts_with("GET /props") {
                        json!({"default_generation_settings": {"n_ctx": 4096}}).to_string()
                    } else {
                        String::new()
                    };
                    let status = if body.is_empty() {
                        "404 Not Found"
                    } else {
                        "200 OK"
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        format!("http://{address}/v1")
    }

    #[tokio::test]
    async fn the_window_of_the_listed_model_is_used_and_no_other_models() {
        let base = serve(json!({"data": [
            {"id": "big", "max_model_len": 131072},
            {"id": "small"}
        ]}))
        .await;
        let timeout = Duration::from_secs(5);
        let big = probe_openai_compatible(&base, "big", timeout)
            .await
            .unwrap();
        assert_eq!(big.context_window, Some(131072));
        // Listed without a window of its own: the single-model server's /props answers.
        let small = probe_openai_compatible(&base, "small", timeout)
            .await
            .unwrap();
        assert_eq!(small.context_window, Some(4096));
        // Not listed: unknown, never the first entry's 131072 nor /props' 4096.
        let other = probe_openai_compatible(&base, "other", timeout)
            .await
            .unwrap();
        assert_eq!(other.context_window, None);
        assert_eq!(other.models, vec!["big".to_owned(), "small".to_owned()]);
    }
}
