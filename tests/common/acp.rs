//! The editor's side of `pith acp` in the end-to-end tests: the binary driven over
//! JSON-RPC on its stdin/stdout, the checks every stdout line must pass, and an editor's
//! terminal that is a real process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

/// `pith acp` with its stdout read line by line on a thread.
pub struct Agent {
    pub child: Child,
    pub stdin: ChildStdin,
    pub lines: Receiver<String>,
    pub seen: Vec<String>,
}

impl Agent {
    pub fn start(mut command: Command) -> Agent {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pith acp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Agent {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// Writes `bytes` as they are (a line of them should end with `\n`).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin
            .write_all(bytes)
            .expect("pith acp reads its stdin");
        self.stdin.flush().unwrap();
    }

    pub fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("pith acp reads its stdin");
        self.stdin.flush().unwrap();
    }

    /// Messages until the response whose id is `id` (that response last).
    pub fn until_response(&mut self, id: Value) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no response {id} in 60 s; seen: {:#?}", self.seen));
            self.seen.push(line.clone());
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            let done = message.get("method").is_none() && message["id"] == id;
            messages.push(message);
            if done {
                return messages;
            }
        }
    }

    /// Like [`Agent::until_response`], answering each request pith sends (a permission
    /// question) with `answer`'s result (an object whose only key is `error`: that error).
    pub fn until_response_answering(
        &mut self,
        id: Value,
        mut answer: impl FnMut(&Value) -> Value,
    ) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let message = self.until_next();
            if message.get("method").is_some() && message.get("id").is_some() {
                let result = answer(&message);
                match result
                    .as_object()
                    .filter(|o| o.len() == 1)
                    .and_then(|o| o.get("error"))
                {
                    Some(error) => {
                        self.send(&json!({"jsonrpc": "2.0", "id": message["id"], "error": error}))
                    }
                    None => {
                        self.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": result}))
                    }
                }
            }
            let done = message.get("method").is_none() && message["id"] == id;
            messages.push(message);
            if done {
                return messages;
            }
        }
    }

    /// The next message, if one comes within `wait`.
    pub fn next_within(&mut self, wait: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(wait).ok()?;
        self.seen.push(line.clone());
        Some(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}")),
        )
    }

    /// The next message.
    pub fn until_next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no message in 60 s; seen: {:#?}", self.seen));
        self.seen.push(line.clone());
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"))
    }

    /// Closes stdin and waits for the exit; the rest of stdout and stderr.
    pub fn finish(mut self) -> (Option<i32>, Vec<String>, String) {
        drop(self.stdin);
        let status = self.child.wait().expect("pith acp exits");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
        }
        (status.code(), self.seen, stderr)
    }
}

/// Every line is one JSON-RPC 2.0 message: a request, a notification or a response.
pub fn assert_json_rpc(lines: &[String]) {
    assert!(!lines.is_empty());
    for line in lines {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], json!("2.0"), "{line}");
        let request_or_notification = message["method"].is_string();
        let response = message.get("id").is_some()
            && (message.get("result").is_some() ^ message.get("error").is_some());
        assert!(
            request_or_notification ^ response,
            "not a JSON-RPC message: {line}"
        );
    }
}

pub fn updates(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == json!("session/update"))
        .map(|m| &m["params"]["update"])
        .collect()
}

/// An editor's terminal in the test: the process it started and what it printed.
pub struct EditorTerminal {
    pub child: Child,
    pub output: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    pub readers: Vec<std::thread::JoinHandle<()>>,
}

impl EditorTerminal {
    /// Starts `terminal/create`'s command as an editor would: its own environment (with a
    /// secret in it), the cwd asked for, stdout and stderr captured together.
    pub fn create(params: &Value) -> EditorTerminal {
        let args: Vec<String> = params["args"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default();
        let mut command = Command::new(params["command"].as_str().unwrap());
        command.args(&args);
        Self::start(command, params)
    }

    /// Like [`EditorTerminal::create`], by a careless editor: the command inherits one of
    /// the editor's descriptors (fd 9, appending to `leaked`).
    pub fn create_leaking(params: &Value, leaked: &std::path::Path) -> EditorTerminal {
        std::fs::write(leaked, "").unwrap();
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg("exec 9>>\"$0\"; exec \"$@\"")
            .arg(leaked)
            .arg(params["command"].as_str().unwrap());
        for arg in params["args"].as_array().into_iter().flatten() {
            command.arg(arg.as_str().unwrap());
        }
        Self::start(command, params)
    }

    fn start(mut command: Command, params: &Value) -> EditorTerminal {
        let mut child = command
            .current_dir(params["cwd"].as_str().unwrap())
            .env("PITH_TEST_EDITOR_API_TOKEN", "hunter2")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the editor starts the terminal's command");
        let output = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        let pipes: [Box<dyn std::io::Read + Send>; 2] = [
            Box::new(child.stdout.take().unwrap()),
            Box::new(child.stderr.take().unwrap()),
        ];
        for mut pipe in pipes {
            let output = output.clone();
            readers.push(std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(n) = std::io::Read::read(&mut pipe, &mut buffer) {
                    if n == 0 {
                        break;
                    }
                    output.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            }));
        }
        EditorTerminal {
            child,
            output,
            readers,
        }
    }

    pub fn exit_status(&mut self) -> Option<Value> {
        use std::os::unix::process::ExitStatusExt;
        let status = self.child.try_wait().unwrap()?;
        for reader in self.readers.drain(..) {
            reader.join().unwrap();
        }
        Some(match status.code() {
            Some(code) => json!({"exitCode": code, "signal": null}),
            None => json!({"exitCode": null, "signal": format!("{}", status.signal().unwrap())}),
        })
    }
}
