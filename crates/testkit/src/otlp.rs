//! An OTLP/HTTP receiver for tests: the collector's two endpoints pith exports to,
//! `POST /v1/traces` and `POST /v1/metrics`, with `application/x-protobuf` bodies decoded
//! by `opentelemetry-proto` (the protocol's own generated types), kept for the test to
//! inspect as plain [`ReceivedSpan`]s and [`ReceivedMetric`]s.
//!
//! It answers as a collector does: 200 with an empty protobuf response; 415 for another
//! content type, 400 for a body that does not decode, 404 for another path. Like
//! [`crate::TestServer`] it runs on its own thread and stops when dropped.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric;
use prost::Message;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use crate::TestkitError;

/// One span as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The span's name.
    pub name: String,
    /// Trace id, hex.
    pub trace_id: String,
    /// Span id, hex.
    pub span_id: String,
    /// The parent's span id, hex; empty for a root span.
    pub parent_span_id: String,
    /// Start, nanoseconds since the Unix epoch.
    pub start_unix_nano: u64,
    /// End, nanoseconds since the Unix epoch.
    pub end_unix_nano: u64,
    /// The span's attributes as JSON values.
    pub attributes: Map<String, Value>,
    /// The attributes of the resource that sent it.
    pub resource: Map<String, Value>,
    /// The status code: 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    /// The status message.
    pub status_message: String,
}

impl ReceivedSpan {
    /// The attribute `key`, or `Value::Null`.
    pub fn attribute(&self, key: &str) -> &Value {
        self.attributes.get(key).unwrap_or(&Value::Null)
    }

    /// Wall time in milliseconds.
    pub fn duration_ms(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano) / 1_000_000
    }
}

/// One data point of a metric as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedMetric {
    /// The metric's name.
    pub name: String,
    /// The point's value (sums and gauges; a histogram's sum).
    pub value: f64,
    /// The point's attributes.
    pub attributes: Map<String, Value>,
    /// The attributes of the resource that sent it.
    pub resource: Map<String, Value>,
}

#[derive(Default)]
struct Received {
    spans: Vec<ReceivedSpan>,
    metrics: Vec<ReceivedMetric>,
    /// Requests by path, and content types seen.
    requests: Vec<(String, String)>,
}

/// The receiver; see the module docs.
pub struct OtlpReceiver {
    origin: String,
    received: Arc<Mutex<Received>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OtlpReceiver {
    /// Starts a receiver on a free port of 127.0.0.1.
    pub fn start() -> Result<OtlpReceiver, TestkitError> {
        let io_error = |action: &str| {
            let action = action.to_owned();
            move |source| TestkitError::Io { action, source }
        };
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .map_err(io_error("bind the OTLP receiver"))?;
        listener
            .set_nonblocking(true)
            .map_err(io_error("make the listener non-blocking"))?;
        let port = listener
            .local_addr()
            .map_err(io_error("read the bound address"))?
            .port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io_error("start the receiver runtime"))?;
        let received = Arc::new(Mutex::new(Received::default()));
        let (shutdown, mut stop) = oneshot::channel::<()>();
        let state = Arc::clone(&received);
        let thread = std::thread::Builder::new()
            .name(format!("otlp-receiver-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    loop {
                        tokio::select! {
                            _ = &mut stop => break,
                            accepted = listener.accept() => {
                                let Ok((stream, _)) = accepted else { continue };
                                let state = Arc::clone(&state);
                                tokio::spawn(async move {
                                    let service = service_fn(move |request| {
                                        receive(Arc::clone(&state), request)
                                    });
                                    let _ = http1::Builder::new()
                                        .serve_connection(TokioIo::new(stream), service)
                                        .await;
                                });
                            }
                        }
                    }
                });
            })
            .map_err(io_error("spawn the receiver thread"))?;
        Ok(OtlpReceiver {
            origin: format!("http://127.0.0.1:{port}"),
            received,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`: the OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn endpoint(&self) -> &str {
        &self.origin
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Received> {
        self.received.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.state().spans.clone()
    }

    /// Every metric data point received so far.
    pub fn metrics(&self) -> Vec<ReceivedMetric> {
        self.state().metrics.clone()
    }

    /// `(path, content-type)` of every request received so far.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.state().requests.clone()
    }

    /// Waits until `done(spans)` holds, or `timeout` passes; returns the spans either way.
    pub fn wait_for_spans(
        &self,
        timeout: Duration,
        done: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) || Instant::now() >= deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

type Body = Full<Bytes>;

fn answer(status: StatusCode, body: Vec<u8>, content_type: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

async fn receive(
    state: Arc<Mutex<Received>>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = request.uri().path().to_owned();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) => {
            return Ok(answer(
                StatusCode::BAD_REQUEST,
                error.to_string().into_bytes(),
                "text/plain",
            ))
        }
    };
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    state.requests.push((path.clone(), content_type.clone()));
    if content_type != "application/x-protobuf" {
        return Ok(answer(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            b"only application/x-protobuf".to_vec(),
            "text/plain",
        ));
    }
    let decoded = match path.as_str() {
        "/v1/traces" => ExportTraceServiceRequest::decode(body)
            .map(|request| state.spans.extend(spans_of(request))),
        "/v1/metrics" => ExportMetricsServiceRequest::decode(body)
            .map(|request| state.metrics.extend(metrics_of(request))),
        _ => {
            return Ok(answer(
                StatusCode::NOT_FOUND,
                b"OTLP/HTTP: /v1/traces or /v1/metrics".to_vec(),
                "text/plain",
            ))
        }
    };
    Ok(match decoded {
        // An empty Export*ServiceResponse encodes as no bytes.
        Ok(()) => answer(StatusCode::OK, Vec::new(), "application/x-protobuf"),
        Err(error) => answer(
            StatusCode::BAD_REQUEST,
            error.to_string().into_bytes(),
            "text/plain",
        ),
    })
}

fn spans_of(request: ExportTraceServiceRequest) -> Vec<ReceivedSpan> {
    let mut out = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = attributes(
            resource_spans
                .resource
                .map(|r| r.attributes)
                .unwrap_or_default(),
        );
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                let status = span.status.unwrap_or_default();
                out.push(ReceivedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    start_unix_nano: span.start_time_unix_nano,
                    end_unix_nano: span.end_time_unix_nano,
                    attributes: attributes(span.attributes),
                    resource: resource.clone(),
                    status_code: status.code,
                    status_message: status.message,
                });
            }
        }
    }
    out
}

fn metrics_of(request: ExportMetricsServiceRequest) -> Vec<ReceivedMetric> {
    let mut out = Vec::new();
    for resource_metrics in request.resource_metrics {
        let resource = attributes(
            resource_metrics
                .resource
                .map(|r| r.attributes)
                .unwrap_or_default(),
        );
        for scope in resource_metrics.scope_metrics {
            for metric in scope.metrics {
                let points: Vec<(f64, Vec<KeyValue>)> = match metric.data {
                    Some(metric::Data::Sum(sum)) => sum
                        .data_points
                        .into_iter()
                        .map(|p| (number(p.value), p.attributes))
                        .collect(),
                    Some(metric::Data::Gauge(gauge)) => gauge
                        .data_points
                        .into_iter()
                        .map(|p| (number(p.value), p.attributes))
                        .collect(),
                    Some(metric::Data::Histogram(histogram)) => histogram
                        .data_points
                        .into_iter()
                        .map(|p| (p.sum.unwrap_or(0.0), p.attributes))
                        .collect(),
                    _ => Vec::new(),
                };
                for (value, point_attributes) in points {
                    out.push(ReceivedMetric {
                        name: metric.name.clone(),
                        value,
                        attributes: attributes(point_attributes),
                        resource: resource.clone(),
                    });
                }
            }
        }
    }
    out
}

fn number(value: Option<opentelemetry_proto::tonic::metrics::v1::number_data_point::Value>) -> f64 {
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
    match value {
        Some(Number::AsDouble(v)) => v,
        Some(Number::AsInt(v)) => v as f64,
        None => 0.0,
    }
}

fn attributes(list: Vec<KeyValue>) -> Map<String, Value> {
    let sorted: BTreeMap<String, Value> = list
        .into_iter()
        .map(|kv| (kv.key, json_of(kv.value)))
        .collect();
    sorted.into_iter().collect()
}

fn json_of(value: Option<AnyValue>) -> Value {
    match value.and_then(|v| v.value) {
        Some(any_value::Value::StringValue(s)) => Value::from(s),
        Some(any_value::Value::BoolValue(b)) => Value::from(b),
        Some(any_value::Value::IntValue(i)) => Value::from(i),
        Some(any_value::Value::DoubleValue(d)) => Value::from(d),
        Some(any_value::Value::ArrayValue(array)) => {
            Value::Array(array.values.into_iter().map(|v| json_of(Some(v))).collect())
        }
        Some(any_value::Value::KvlistValue(list)) => Value::Object(attributes(list.values)),
        Some(any_value::Value::BytesValue(bytes)) => Value::from(hex(&bytes)),
        // A string-table index (profiles only): never sent for spans or metrics.
        Some(other) => Value::from(format!("{other:?}")),
        None => Value::Null,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
