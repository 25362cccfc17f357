//! The request log: every request the server received, with secrets redacted, in arrival
//! order; waiting for the N-th request (async and blocking); and the optional append-only
//! record file (one JSON body per line, flushed per request).
//!
//! Bodies are kept as the bytes received and parsed into [`RecordedRequest::body`] only
//! when a test reads the log (once per request): an agent's every request carries its
//! whole history, and building a JSON tree of each one on arrival made the server, not
//! the client, the cost of long benchmark sessions.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use crate::cache::CacheBill;
use crate::error::TestkitError;

/// Header names whose values are never recorded (compared case-insensitively).
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    // AWS temporary credentials' session token (SigV4).
    "x-amz-security-token",
];

/// What a recorded secret header's value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Request path without the query, e.g. `/v1/messages`.
    pub path: String,
    /// The query string, without `?` (empty when there is none), e.g. `alt=sse`.
    pub query: String,
    /// Headers in arrival order, names lower-cased; values of `authorization`,
    /// `x-api-key` and other secret headers are replaced with [`REDACTED`].
    pub headers: Vec<(String, String)>,
    /// The JSON body; a body that is not JSON is kept as a JSON string of its (lossy UTF-8)
    /// text.
    pub body: Value,
    /// What the provider's prompt cache billed for the request's input, under
    /// [`crate::UsageMode::Cached`] (`None` in the other modes, and for requests refused,
    /// or answered with an HTTP error, before the model would have read them).
    pub cache: Option<CacheBill>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Whether the body asked for a streamed answer (`"stream": true`).
    pub fn is_streaming(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }
}

/// A request as stored on arrival: the body still raw.
#[derive(Debug)]
pub(crate) struct StoredRequest {
    /// HTTP method.
    pub method: String,
    /// Request path without the query.
    pub path: String,
    /// The query string, without `?`.
    pub query: String,
    /// Headers, secrets redacted.
    pub headers: Vec<(String, String)>,
    /// The body as received.
    pub body: Bytes,
    /// The prompt cache's bill, under the cached usage mode.
    pub cache: Option<CacheBill>,
    /// The body parsed, on first read.
    parsed: OnceLock<Value>,
}

impl StoredRequest {
    /// A stored request with its raw body.
    pub(crate) fn new(
        method: String,
        path: String,
        query: String,
        headers: Vec<(String, String)>,
        body: Bytes,
    ) -> StoredRequest {
        StoredRequest {
            method,
            path,
            query,
            headers,
            body,
            cache: None,
            parsed: OnceLock::new(),
        }
    }

    /// The same request with the prompt cache's bill.
    pub(crate) fn with_cache(mut self, cache: Option<CacheBill>) -> StoredRequest {
        self.cache = cache;
        self
    }

    /// The body as JSON; a body that is not JSON becomes a JSON string of its text.
    fn body_value(&self) -> &Value {
        self.parsed.get_or_init(|| {
            serde_json::from_slice(&self.body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.body).into_owned()))
        })
    }

    fn recorded(&self) -> RecordedRequest {
        RecordedRequest {
            method: self.method.clone(),
            path: self.path.clone(),
            query: self.query.clone(),
            headers: self.headers.clone(),
            body: self.body_value().clone(),
            cache: self.cache,
        }
    }

    /// The body as one line of the record file: the bytes received when they are one
    /// line of valid JSON, else the parsed value re-serialised.
    fn record_line(&self) -> String {
        let one_line = !self.body.contains(&b'\n');
        match std::str::from_utf8(&self.body) {
            Ok(text)
                if one_line
                    && serde_json::from_slice::<serde::de::IgnoredAny>(&self.body).is_ok() =>
            {
                format!("{text}\n")
            }
            _ => format!("{}\n", self.body_value()),
        }
    }
}

/// The value recorded for header `name`: [`REDACTED`] for secrets, else the value.
pub(crate) fn recorded_header_value(name: &str, value: &[u8]) -> String {
    if SECRET_HEADERS
        .iter()
        .any(|secret| secret.eq_ignore_ascii_case(name))
    {
        REDACTED.to_owned()
    } else {
        String::from_utf8_lossy(value).into_owned()
    }
}

/// The shared log of received requests.
pub(crate) struct RequestLog {
    requests: Mutex<Vec<StoredRequest>>,
    arrived: Condvar,
    count: tokio::sync::watch::Sender<usize>,
    record_file: Option<Mutex<File>>,
}

impl RequestLog {
    /// An empty log; when `record_path` is given, bodies are also appended to that file.
    pub(crate) fn new(record_path: Option<&Path>) -> Result<RequestLog, TestkitError> {
        let record_file = match record_path {
            Some(path) => Some(Mutex::new(
                File::options()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| TestkitError::Io {
                        action: format!("open record file {}", path.display()),
                        source,
                    })?,
            )),
            None => None,
        };
        Ok(RequestLog {
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            count: tokio::sync::watch::Sender::new(0),
            record_file,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<StoredRequest>> {
        // A panic while holding the lock cannot leave the Vec half-updated (push only).
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends a request (and its body line to the record file), then wakes waiters.
    pub(crate) fn append(&self, request: StoredRequest) {
        if let Some(file) = &self.record_file {
            let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let line = request.record_line();
            if let Err(error) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
                // The HTTP answer must still go out; a test reading the file will notice.
                eprintln!("pith-testkit: could not append to the record file: {error}");
            }
        }
        let count = {
            let mut requests = self.lock();
            requests.push(request);
            requests.len()
        };
        self.arrived.notify_all();
        self.count.send_replace(count);
    }

    /// A copy of every request so far, bodies parsed.
    pub(crate) fn snapshot(&self) -> Vec<RecordedRequest> {
        self.lock().iter().map(StoredRequest::recorded).collect()
    }

    /// How many requests arrived so far.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Waits until at least `wanted` requests arrived, without blocking the thread.
    pub(crate) async fn wait_for(
        &self,
        wanted: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, TestkitError> {
        let mut count = self.count.subscribe();
        let reached = tokio::time::timeout(timeout, count.wait_for(|n| *n >= wanted)).await;
        match reached {
            Ok(Ok(_)) => Ok(self.snapshot()),
            _ => Err(TestkitError::WaitTimedOut {
                wanted,
                received: self.len(),
                waited: timeout,
            }),
        }
    }

    /// Waits until at least `wanted` requests arrived, blocking the calling thread.
    pub(crate) fn wait_for_blocking(
        &self,
        wanted: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, TestkitError> {
        let deadline = Instant::now() + timeout;
        let mut requests = self.lock();
        while requests.len() < wanted {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TestkitError::WaitTimedOut {
                    wanted,
                    received: requests.len(),
                    waited: timeout,
                });
            }
            requests = self
                .arrived
                .wait_timeout(requests, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        Ok(requests.iter().map(StoredRequest::recorded).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(n: u64) -> StoredRequest {
        StoredRequest::new(
            "POST".into(),
            "/v1/messages".into(),
            String::new(),
            vec![("x-api-key".into(), REDACTED.into())],
            Bytes::from(json!({"n": n}).to_string()),
        )
    }

    #[test]
    fn bodies_are_parsed_when_read_and_non_json_is_kept_as_text() {
        let log = RequestLog::new(None).unwrap();
        log.append(request(7));
        log.append(StoredRequest::new(
            "POST".into(),
            "/v1/messages".into(),
            String::new(),
            Vec::new(),
            Bytes::from_static(b"not json\n"),
        ));
        let requests = log.snapshot();
        assert_eq!(requests[0].body, json!({"n": 7}));
        assert_eq!(requests[1].body, json!("not json\n"));
        assert_eq!(log.snapshot(), requests, "a second read gives the same");
    }

    #[test]
    fn a_multi_line_body_is_recorded_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.jsonl");
        let log = RequestLog::new(Some(&path)).unwrap();
        log.append(StoredRequest::new(
            "POST".into(),
            "/v1/messages".into(),
            String::new(),
            Vec::new(),
            Bytes::from_static(b"{\n  \"a\": 1\n}"),
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
    }

    #[test]
    fn secret_headers_are_redacted_whatever_their_case() {
        assert_eq!(
            recorded_header_value("Authorization", b"Bearer sk-1"),
            REDACTED
        );
        assert_eq!(recorded_header_value("X-Api-Key", b"sk-ant-1"), REDACTED);
        assert_eq!(
            recorded_header_value("anthropic-version", b"2023-06-01"),
            "2023-06-01"
        );
    }

    #[test]
    fn record_file_gets_one_json_body_per_line_as_requests_arrive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.jsonl");
        let log = RequestLog::new(Some(&path)).unwrap();
        log.append(request(1));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":1}\n");
        log.append(request(2));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"n\":1}\n{\"n\":2}\n"
        );
    }

    #[test]
    fn blocking_wait_returns_once_enough_requests_arrived_and_times_out_otherwise() {
        let log = std::sync::Arc::new(RequestLog::new(None).unwrap());
        let writer = log.clone();
        let handle = std::thread::spawn(move || {
            writer.append(request(1));
            writer.append(request(2));
        });
        let requests = log.wait_for_blocking(2, Duration::from_secs(10)).unwrap();
        assert_eq!(requests.len(), 2);
        handle.join().unwrap();
        let error = log
            .wait_for_blocking(3, Duration::from_millis(10))
            .unwrap_err();
        assert!(error.to_string().contains("only 2 arrived"), "{error}");
    }
}
