//! Where telemetry goes, resolved from `[telemetry]` (the user's config file only) and the
//! standard `OTEL_*` variables. Off unless an endpoint is configured.
//!
//! Endpoints: `[telemetry] otlp_endpoint` is the OTLP/HTTP base URL of both signals
//! (`…/v1/traces`, `…/v1/metrics`); without it, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `…_METRICS_ENDPOINT` (used as they are) and `OTEL_EXPORTER_OTLP_ENDPOINT` (the base
//! URL), as the OpenTelemetry specification reads them. `enabled = false` or
//! `OTEL_SDK_DISABLED=true` turn it off; a protocol other than `http/protobuf` in
//! `OTEL_EXPORTER_OTLP_PROTOCOL` turns it off with a notice (pith speaks only that one).

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;

/// The default bound on the final flush when the conversation closes.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_millis(2_000);

/// The default bound on one export request.
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `[telemetry]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct TelemetryTable {
    enabled: Option<bool>,
    otlp_endpoint: Option<String>,
    #[serde(default)]
    headers: HashMap<String, String>,
    #[serde(default)]
    include_content: bool,
    flush_timeout_ms: Option<u64>,
    service_name: Option<String>,
}

/// Telemetry that is on: where it goes and what it carries.
#[derive(Clone, PartialEq)]
pub struct TelemetrySettings {
    /// The traces endpoint (`…/v1/traces`).
    pub traces_endpoint: String,
    /// The metrics endpoint (`…/v1/metrics`).
    pub metrics_endpoint: String,
    /// Headers of every export request (`[telemetry] headers`; the exporter adds
    /// `OTEL_EXPORTER_OTLP_HEADERS` itself). Never logged: they often hold a key.
    pub headers: HashMap<String, String>,
    /// Prompt text, answers, tool arguments and output and hook commands go into spans.
    pub include_content: bool,
    /// Bound on the final flush.
    pub flush_timeout: Duration,
    /// The `service.name` resource attribute.
    pub service_name: String,
}

pith_core::debug_fields!(TelemetrySettings |this| {
    traces_endpoint: this.traces_endpoint,
    metrics_endpoint: this.metrics_endpoint,
    headers: this.headers.keys().collect::<Vec<_>>(),
    include_content: this.include_content,
    flush_timeout: this.flush_timeout,
});

/// The resolved settings (`None`: off) and what the user should be told.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolved {
    /// The settings, when telemetry is on.
    pub settings: Option<TelemetrySettings>,
    /// Notices (a protocol pith does not speak, a project's table ignored).
    pub notices: Vec<String>,
}

/// Resolves `table` (the user's `[telemetry]`) with `env`.
pub fn resolve(
    table: &toml::Table,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, String> {
    let parsed: TelemetryTable = toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| format!("invalid [telemetry]: {e}"))?;
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let off = Ok(Resolved::default());
    if parsed.enabled == Some(false)
        || set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return off;
    }
    let (traces, metrics) = match parsed.otlp_endpoint.as_deref().filter(|e| !e.is_empty()) {
        Some(base) => (signal_url(base, "traces"), signal_url(base, "metrics")),
        None => {
            let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
            let traces = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .or_else(|| base.as_deref().map(|b| signal_url(b, "traces")));
            let metrics = set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
                .or_else(|| base.as_deref().map(|b| signal_url(b, "metrics")));
            match (traces, metrics) {
                (None, None) if parsed.enabled == Some(true) => {
                    return Err(
                        "[telemetry] enabled = true needs otlp_endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)"
                            .into(),
                    )
                }
                (None, None) => return off,
                (traces, metrics) => (
                    traces.unwrap_or_default(),
                    metrics.unwrap_or_default(),
                ),
            }
        }
    };
    for url in [&traces, &metrics].into_iter().filter(|u| !u.is_empty()) {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "telemetry endpoint `{url}` is not an http:// or https:// URL"
            ));
        }
    }
    for variable in [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    ] {
        if let Some(protocol) = set(variable).filter(|p| p.trim() != "http/protobuf") {
            return Ok(Resolved {
                settings: None,
                notices: vec![format!(
                    "telemetry is off: {variable}={protocol}, but pith exports OTLP over http/protobuf only"
                )],
            });
        }
    }
    Ok(Resolved {
        settings: Some(TelemetrySettings {
            traces_endpoint: traces,
            metrics_endpoint: metrics,
            headers: parsed.headers,
            include_content: parsed.include_content,
            flush_timeout: parsed
                .flush_timeout_ms
                .map_or(DEFAULT_FLUSH_TIMEOUT, Duration::from_millis),
            service_name: parsed
                .service_name
                .or_else(|| set("OTEL_SERVICE_NAME"))
                .unwrap_or_else(|| "pith".to_owned()),
        }),
        notices: Vec::new(),
    })
}

/// `base` + `/v1/<signal>`, as the specification builds a signal's URL from the base.
fn signal_url(base: &str, signal: &str) -> String {
    format!("{}/v1/{signal}", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn off_by_default_and_on_with_an_endpoint() {
        let none = resolve(&toml::Table::new(), &env(&[])).unwrap();
        assert_eq!(none, Resolved::default());
        let on = resolve(
            &table("otlp_endpoint = \"http://collector:4318/\"\ninclude_content = true"),
            &env(&[]),
        )
        .unwrap()
        .settings
        .unwrap();
        assert_eq!(on.traces_endpoint, "http://collector:4318/v1/traces");
        assert_eq!(on.metrics_endpoint, "http://collector:4318/v1/metrics");
        assert!(on.include_content);
        assert_eq!(on.flush_timeout, DEFAULT_FLUSH_TIMEOUT);
        assert_eq!(on.service_name, "pith");
    }

    #[test]
    fn the_standard_variables_turn_it_on_and_off() {
        let from_env = resolve(
            &toml::Table::new(),
            &env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9/t"),
                ("OTEL_SERVICE_NAME", "ci-agent"),
            ]),
        )
        .unwrap()
        .settings
        .unwrap();
        assert_eq!(from_env.traces_endpoint, "http://traces:9/t");
        assert_eq!(
            from_env.metrics_endpoint,
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(from_env.service_name, "ci-agent");
        let disabled = resolve(
            &table("otlp_endpoint = \"http://c:4318\""),
            &env(&[("OTEL_SDK_DISABLED", "true")]),
        )
        .unwrap();
        assert!(disabled.settings.is_none());
        let grpc = resolve(
            &table("otlp_endpoint = \"http://c:4317\""),
            &env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]),
        )
        .unwrap();
        assert!(grpc.settings.is_none());
        assert!(grpc.notices[0].contains("http/protobuf"), "{grpc:?}");
        let off = resolve(
            &table("enabled = false\notlp_endpoint = \"http://c:4318\""),
            &env(&[]),
        )
        .unwrap();
        assert!(off.settings.is_none());
    }

    #[test]
    fn mistakes_are_errors_and_headers_are_never_shown() {
        assert!(resolve(&table("otlp_endpont = \"x\""), &env(&[])).is_err());
        assert!(resolve(&table("otlp_endpoint = \"collector:4318\""), &env(&[])).is_err());
        assert!(resolve(&table("enabled = true"), &env(&[])).is_err());
        let settings = resolve(
            &table(
                "otlp_endpoint = \"https://c\"\nheaders = { authorization = \"Bearer s3cret\" }",
            ),
            &env(&[]),
        )
        .unwrap()
        .settings
        .unwrap();
        assert!(!format!("{settings:?}").contains("s3cret"));
    }
}
