//! A recording HTTP proxy between pith and the demo's model server.
//!
//! The demo shows what the model *received* after each compaction, not what pith meant to
//! send, so it puts this proxy in front of llama.cpp: every request's JSON body is kept in
//! order, and every byte is forwarded unchanged both ways (responses, streamed or not, are
//! copied raw). Requests must carry a `Content-Length` (reqwest sends one for JSON bodies);
//! a chunked request ends its connection with an error the demo reports.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The running proxy: where pith should point, and what it has seen.
pub struct Recorder {
    /// `http://127.0.0.1:PORT/v1`, the proxy's address for pith.
    pub base_url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// Starts a proxy on a free local port that forwards to 127.0.0.1:`upstream_port`.
    pub fn start(upstream_port: u16) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding the demo's proxy")?;
        let port = listener.local_addr()?.port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let (kept, failed) = (Arc::clone(&bodies), Arc::clone(&errors));
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (kept, failed) = (Arc::clone(&kept), Arc::clone(&failed));
                thread::spawn(move || {
                    if let Err(error) = relay(client, upstream_port, &kept) {
                        lock(&failed).push(format!("{error:#}"));
                    }
                });
            }
        });
        Ok(Self {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            bodies,
            errors,
        })
    }

    /// The JSON bodies of the requests seen so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.bodies).clone()
    }

    /// Connections the proxy could not relay (empty when all went well).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.errors).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Relays one client connection: requests are read whole (head and body), recorded and
/// written upstream; the responses flow back on a thread of their own.
fn relay(client: TcpStream, upstream_port: u16, kept: &Mutex<Vec<Value>>) -> Result<()> {
    let mut upstream = TcpStream::connect(("127.0.0.1", upstream_port))
        .context("connecting to the model server")?;
    let mut back = upstream.try_clone()?;
    let mut client_out = client.try_clone()?;
    let responses = thread::spawn(move || {
        let _ = std::io::copy(&mut back, &mut client_out);
        let _ = client_out.shutdown(Shutdown::Write);
    });
    let mut reader = BufReader::new(client);
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line)? == 0 {
                let _ = upstream.shutdown(Shutdown::Write);
                let _ = responses.join();
                return Ok(());
            }
            let end = line == b"\r\n" || line == b"\n";
            head.extend_from_slice(&line);
            if end {
                break;
            }
        }
        let text = String::from_utf8_lossy(&head).into_owned();
        if text
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            bail!("a chunked request body: the demo's proxy needs Content-Length");
        }
        let length = content_length(&text);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
            lock(kept).push(value);
        }
        upstream.write_all(&head)?;
        upstream.write_all(&body)?;
        upstream.flush()?;
    }
}

/// The `Content-Length` of a request head (0 when it has none).
fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_length_is_read_case_blind_and_defaults_to_zero() {
        assert_eq!(
            content_length("POST /v1/chat HTTP/1.1\r\ncontent-LENGTH: 42\r\n\r\n"),
            42
        );
        assert_eq!(content_length("GET /v1/models HTTP/1.1\r\n\r\n"), 0);
    }

    #[test]
    fn requests_are_recorded_in_order_and_answers_relayed_unchanged() {
        // A one-shot upstream that answers each request with a fixed body.
        let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream_port = upstream.local_addr().unwrap().port();
        thread::spawn(move || {
            let (stream, _) = upstream.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut out = stream;
            for _ in 0..2 {
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line == "\r\n" {
                        break;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .unwrap();
            }
        });
        let recorder = Recorder::start(upstream_port).unwrap();
        let port: u16 = recorder
            .base_url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/v1")
            .parse()
            .unwrap();
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        for body in [r#"{"n":1}"#, r#"{"n":2}"#] {
            write!(
                client,
                "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = [0u8; 40];
            client.read_exact(&mut answer).unwrap();
            assert!(answer.ends_with(b"ok"));
        }
        let seen: Vec<i64> = recorder
            .requests()
            .iter()
            .map(|v| v["n"].as_i64().unwrap())
            .collect();
        assert_eq!(seen, [1, 2]);
        assert!(recorder.errors().is_empty());
    }
}
