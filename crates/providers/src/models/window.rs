//! The window a resolved model gets from its own server: an OpenAI-compatible server
//! (the `local` provider, or a custom one whose model nothing configured) is asked
//! ([`crate::models::probe`]), and a `local` server that does not answer is a clear error
//! saying how to start one or use a hosted model instead.

use crate::models::error::ModelError;
use crate::models::resolve::{ResolvedModel, WindowSource, CONFIG_FILE_HINT};
use crate::models::tables::ProtocolKind;
use crate::wire::error::ProviderError;

/// Window assumed for a local server that does not report its context size and has no
/// configured window (a small, safe size; a wrong large one would never compact).
pub const LOCAL_FALLBACK_WINDOW: u64 = 4096;

/// Asks an OpenAI-compatible server for its context window when nothing configured it
/// (the `local` provider, or a custom provider whose model the catalog does not know),
/// and fails clearly when the `local` server does not answer at all.
///
/// Order of authority for the window: config, the server's own report, the catalog; a
/// model none of them knows keeps the loudly-warned default. (`--context-window` beats
/// them all; the settings layer applies it.)
pub async fn apply_server_window(resolved: &mut ResolvedModel) -> Result<(), ModelError> {
    if !needs_server_probe(resolved) {
        return Ok(());
    }
    let is_local = resolved.provider == "local";
    let probe = crate::models::probe::probe_openai_compatible(
        &resolved.base_url,
        &resolved.model,
        std::time::Duration::from_secs(3),
    )
    .await;
    match probe {
        Ok(info) => {
            let replaceable = matches!(
                resolved.window_source,
                WindowSource::Default | WindowSource::Catalog
            );
            if let (true, Some(window)) = (replaceable, info.context_window) {
                resolved.context_window = window;
                resolved.window_source = WindowSource::Server;
                resolved.window_warning = None;
            } else if is_local && resolved.window_source == WindowSource::Default {
                resolved.context_window = LOCAL_FALLBACK_WINDOW;
                resolved.window_warning = Some(format!(
                    "warning: the local server at {} does not report the context size of `{}`; assuming {LOCAL_FALLBACK_WINDOW} tokens. Set [models.\"{}\"] context_window in {} or pass --context-window if it differs",
                    resolved.base_url,
                    resolved.model,
                    resolved.spec(),
                    CONFIG_FILE_HINT,
                ));
            }
            Ok(())
        }
        Err(error) if is_local => Err(ModelError::Model(no_local_server(
            &resolved.base_url,
            &error,
        ))),
        // A remote server that cannot be probed keeps its configured or default window.
        Err(_) => Ok(()),
    }
}

/// The message for a `local` model whose server does not answer: how to use a hosted
/// model instead, or how to start a local OpenAI-compatible server and point pith at it.
/// It names no developer command: an installed pith has no source checkout.
fn no_local_server(base_url: &str, error: &ProviderError) -> String {
    format!(
        "no local model server answers at {base_url} ({error}).
pith needs a model. Either use a hosted one: set ANTHROPIC_API_KEY, OPENAI_API_KEY, \
OPENROUTER_API_KEY or GEMINI_API_KEY (or pass --model provider/model);
or start a local OpenAI-compatible server, for example:
  llama.cpp         llama-server -m model.gguf --port 8077
  llama-cpp-python  python -m llama_cpp.server --model model.gguf --port 8077
  Ollama            ollama serve   (it listens on http://127.0.0.1:11434/v1)
and point the `local` provider at it: PITH_LOCAL_BASE_URL=http://127.0.0.1:11434/v1, or \
base_url under [providers.local] in {CONFIG_FILE_HINT}. Pick the model with \
--model local/<name as the server lists it>."
    )
}

/// True for the `local` provider and for OpenAI-compatible models whose window nothing
/// configured.
fn needs_server_probe(resolved: &ResolvedModel) -> bool {
    resolved.provider == "local"
        || (resolved.kind == ProtocolKind::OpenAiChat
            && resolved.window_source == WindowSource::Default)
}

/// [`apply_server_window`] for synchronous callers (front-end start-up): the probe runs
/// on its own thread and runtime, so it is safe inside or outside a tokio runtime. Does
/// nothing (and costs nothing) when no probe is needed.
pub fn apply_server_window_blocking(resolved: &mut ResolvedModel) -> Result<(), ModelError> {
    if !needs_server_probe(resolved) {
        return Ok(());
    }
    let mut probed = resolved.clone();
    let worker = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ModelError::Model(format!("cannot start the probe runtime: {e}")))?;
        runtime.block_on(apply_server_window(&mut probed))?;
        Ok::<ResolvedModel, ModelError>(probed)
    });
    *resolved = worker
        .join()
        .map_err(|_| ModelError::Model("the server probe panicked".to_owned()))??;
    Ok(())
}
