//! The exporting side: one tracer and one meter provider over OTLP/HTTP (protobuf), the
//! instruments, and the bounded flush when the conversation ends.
//!
//! Never blocking: ending a span or adding to a counter only queues it; the SDK's batch
//! span processor and periodic metric reader export from their own threads, with the
//! blocking HTTP client the OTLP exporter builds on its own thread. Spans past the queue's
//! bound are dropped rather than waited for. The final flush ([`Telemetry::shutdown`])
//! runs on a helper thread and is waited for at most `flush_timeout`: a collector that is
//! down or slow costs the process that long at exit, never more.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use crate::telemetry::config::{TelemetrySettings, DEFAULT_EXPORT_TIMEOUT};

/// Builds an OTLP/HTTP exporter of type `$exporter` to `$endpoint` with the settings'
/// timeout and headers, returning early with `cannot export $what: …` when it cannot be
/// built. A macro because the span and metric exporters share the builder's methods
/// but no trait.
macro_rules! otlp_http_exporter {
    ($exporter:path, $settings:expr, $endpoint:expr, $what:literal) => {
        <$exporter>::builder()
            .with_http()
            .with_endpoint($endpoint.clone())
            .with_timeout(DEFAULT_EXPORT_TIMEOUT)
            .with_headers($settings.headers.clone())
            .build()
            .map_err(|e| format!(concat!("cannot export ", $what, ": {}"), e))?
    };
}

/// Longest content attribute (prompt, answer, tool arguments or output), characters.
pub const MAX_CONTENT_CHARS: usize = 8_192;

/// The metric instruments pith records.
pub(crate) struct Instruments {
    /// `pith.tokens`: tokens of model requests, by `pith.token.type`.
    pub tokens: Counter<u64>,
    /// `pith.cost`: US dollars of model requests.
    pub cost: Counter<f64>,
    /// `pith.requests`: model requests, by purpose and outcome.
    pub requests: Counter<u64>,
    /// `pith.request.duration`: seconds per model request.
    pub request_duration: Histogram<f64>,
    /// `pith.compactions`: compactions, by trigger and outcome.
    pub compactions: Counter<u64>,
}

/// An exporting telemetry pipeline; see the module docs.
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    pub(crate) tracer: SdkTracer,
    pub(crate) instruments: Instruments,
    pub(crate) include_content: bool,
    flush_timeout: Duration,
    /// Values never exported: the credentials in the environment.
    secrets: Vec<String>,
    shut_down: AtomicBool,
}

pith_core::debug_fields!(Telemetry {
    include_content,
    flush_timeout
});

impl Telemetry {
    /// Starts exporting as `settings` say, for the session `session_id`. `secrets` are
    /// values that must never leave in an attribute (they are replaced).
    pub fn start(
        settings: &TelemetrySettings,
        session_id: &str,
        secrets: Vec<String>,
    ) -> Result<Self, String> {
        // The workspace's reqwest has no default crypto provider: install pith's (ring).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attributes([
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("session.id", session_id.to_owned()),
            ])
            .build();
        let mut tracer_builder = SdkTracerProvider::builder().with_resource(resource.clone());
        if !settings.traces_endpoint.is_empty() {
            let exporter = otlp_http_exporter!(
                opentelemetry_otlp::SpanExporter,
                settings,
                &settings.traces_endpoint,
                "traces"
            );
            tracer_builder = tracer_builder.with_batch_exporter(exporter);
        }
        let tracer_provider = tracer_builder.build();
        let mut meter_builder = SdkMeterProvider::builder().with_resource(resource);
        if !settings.metrics_endpoint.is_empty() {
            let exporter = otlp_http_exporter!(
                opentelemetry_otlp::MetricExporter,
                settings,
                &settings.metrics_endpoint,
                "metrics"
            );
            meter_builder = meter_builder.with_periodic_exporter(exporter);
        }
        let meter_provider = meter_builder.build();
        let tracer = tracer_provider.tracer("pith");
        let meter = meter_provider.meter("pith");
        let instruments = Instruments {
            tokens: meter
                .u64_counter("pith.tokens")
                .with_unit("{token}")
                .with_description(
                    "Tokens of model requests (input, cached_input, output, reasoning)",
                )
                .build(),
            cost: meter
                .f64_counter("pith.cost")
                .with_unit("USD")
                .with_description(
                    "What model requests cost (provider-reported, else the model's prices)",
                )
                .build(),
            requests: meter
                .u64_counter("pith.requests")
                .with_unit("{request}")
                .with_description("Model requests, by purpose and outcome")
                .build(),
            request_duration: meter
                .f64_histogram("pith.request.duration")
                .with_unit("s")
                .with_description("Wall time of a model request, retries included")
                .build(),
            compactions: meter
                .u64_counter("pith.compactions")
                .with_unit("{compaction}")
                .with_description("Compactions, by trigger and outcome")
                .build(),
        };
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 8).collect();
        secrets.extend(settings.headers.values().filter(|v| v.len() >= 8).cloned());
        Ok(Self {
            tracer_provider,
            meter_provider,
            tracer,
            instruments,
            include_content: settings.include_content,
            flush_timeout: settings.flush_timeout,
            secrets,
            shut_down: AtomicBool::new(false),
        })
    }

    /// `text` as it may be exported: credentials replaced, at most
    /// [`MAX_CONTENT_CHARS`] characters.
    pub fn clean(&self, text: &str) -> String {
        let mut cleaned: String = text.chars().take(MAX_CONTENT_CHARS).collect();
        for secret in &self.secrets {
            if cleaned.contains(secret.as_str()) {
                cleaned = cleaned.replace(secret.as_str(), "[redacted]");
            }
        }
        cleaned
    }

    /// Exports what is queued and stops, waiting at most the flush timeout. Later calls do
    /// nothing.
    pub fn shutdown(&self) {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let (done, finished) = std::sync::mpsc::channel();
        let traces = self.tracer_provider.clone();
        let metrics = self.meter_provider.clone();
        let timeout = self.flush_timeout;
        let spawned = std::thread::Builder::new()
            .name("pith-telemetry-flush".into())
            .spawn(move || {
                let _ = traces.shutdown_with_timeout(timeout);
                let _ = metrics.shutdown_with_timeout(timeout);
                let _ = done.send(());
            });
        if spawned.is_ok() && finished.recv_timeout(timeout).is_err() {
            tracing::warn!(
                ?timeout,
                "telemetry flush did not finish in time; leaving it"
            );
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}
