//! Shared helpers for the end-to-end tests: a hermetic `pith` command (its own config,
//! sessions and no real keys) pointed at a testkit server, and transcript readers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pith_testkit::{Protocol, TestServer};
use serde_json::Value;

/// A temporary home for one test: workspace, config dir and sessions root.
pub struct Sandbox {
    pub root: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(root.path().join("work")).unwrap();
        std::fs::create_dir_all(root.path().join("config")).unwrap();
        std::fs::create_dir_all(root.path().join("pith-home")).unwrap();
        Self { root }
    }

    pub fn workspace(&self) -> PathBuf {
        self.root.path().join("work")
    }

    pub fn pith_home(&self) -> PathBuf {
        self.root.path().join("pith-home")
    }

    /// `pith` with a clean environment: only PATH survives, keys point at `server`.
    pub fn pith(&self, server: Option<&TestServer>) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pith"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.root.path())
            .env("XDG_CONFIG_HOME", self.root.path().join("config"))
            .env("PITH_HOME", self.pith_home())
            .current_dir(self.workspace());
        if let Some(server) = server {
            match server.protocol() {
                Protocol::Anthropic => {
                    command
                        .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
                        .env("ANTHROPIC_BASE_URL", server.base_url());
                }
                Protocol::OpenAiChat | Protocol::OpenAiResponses => {
                    command
                        .env("OPENAI_API_KEY", "sk-test-key")
                        .env("OPENAI_BASE_URL", server.base_url());
                }
                Protocol::Gemini => {
                    command
                        .env("GEMINI_API_KEY", "gemini-test-key")
                        .env("GEMINI_BASE_URL", server.base_url());
                }
                // Fixed credentials through the real AWS chain's first link (environment
                // variables); no profile files exist and instance metadata is off, so the
                // chain can never reach past this machine.
                Protocol::Bedrock => {
                    command
                        .env("AWS_ACCESS_KEY_ID", "AKIDPITHTEST")
                        .env("AWS_SECRET_ACCESS_KEY", "pith-test-secret-key")
                        .env("AWS_REGION", "us-east-1")
                        .env("AWS_EC2_METADATA_DISABLED", "true")
                        .env("AWS_CONFIG_FILE", self.root.path().join("no-aws-config"))
                        .env(
                            "AWS_SHARED_CREDENTIALS_FILE",
                            self.root.path().join("no-aws-credentials"),
                        )
                        .env("BEDROCK_BASE_URL", server.base_url());
                }
            }
        }
        command
    }

    /// Makes `pith` believe every usage report, however far from its own count
    /// (`[context] usage_ratio_min = 0`, `usage_ratio_max = 1e12`, appended to the user's
    /// config). For tests that cross a threshold with scripted usage (180,000 input tokens
    /// for a request of a few thousand) because their subject is what a compaction does,
    /// not when the governor allows one; the governor's own tests keep the default band.
    /// Call it after writing the user's config file.
    pub fn believe_scripted_usage(&self) {
        use std::io::Write;
        let dir = self.root.path().join("config").join("pith");
        std::fs::create_dir_all(&dir).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("config.toml"))
            .unwrap();
        writeln!(
            file,
            "\n[context]\nusage_ratio_min = 0.0\nusage_ratio_max = 1e12"
        )
        .unwrap();
    }

    /// Runs `pith run` with `args` and returns its output.
    pub fn run(&self, server: &TestServer, args: &[&str]) -> Output {
        self.pith(Some(server))
            .arg("run")
            .args(args)
            .output()
            .expect("pith runs")
    }

    /// The transcript of the only session recorded so far.
    pub fn only_transcript(&self) -> PathBuf {
        let transcripts = transcripts(&self.pith_home());
        assert_eq!(
            transcripts.len(),
            1,
            "expected exactly one session, found {transcripts:?}"
        );
        transcripts.into_iter().next().unwrap()
    }
}

/// Every transcript.jsonl under `dir`.
pub fn transcripts(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(transcripts(&path));
        } else if path.file_name().is_some_and(|n| n == "transcript.jsonl") {
            found.push(path);
        }
    }
    found
}

/// The records of a transcript, parsed.
pub fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("transcript readable")
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect()
}

/// The `kind` of every record.
pub fn kinds(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or("?").to_owned())
        .collect()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `command` to completion while polling the child's peak resident set size
/// (`VmHWM` of its own `/proc/PID/status`, so nothing of the test process is counted);
/// returns its output and the peak in KiB.
pub fn run_measuring_peak_rss(mut command: Command) -> (Output, u64) {
    use std::io::Read;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the child starts");
    let status_path = format!("/proc/{}/status", child.id());
    let mut out = child.stdout.take().expect("stdout piped");
    let mut err = child.stderr.take().expect("stderr piped");
    let out_reader = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = out.read_to_end(&mut buffer);
        buffer
    });
    let err_reader = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = err.read_to_end(&mut buffer);
        buffer
    });
    let mut peak = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kib);
            }
        }
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    };
    (output, peak)
}
pub mod acp;

/// `value` without the prompt-cache markers pith adds (`cache_control`, Bedrock's
/// `cachePoint` blocks): what a message holds, whatever the cache was told.
pub fn without_cache_marks(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, value)| (key.clone(), without_cache_marks(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|item| item.get("cachePoint").is_none())
                .map(without_cache_marks)
                .collect(),
        ),
        other => other.clone(),
    }
}
pub mod stress;

/// A catalog model of each protocol (each has prices, a window and an output cap).
pub fn model_of(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "anthropic/claude-sonnet-4-5",
        Protocol::OpenAiChat => "openai-chat/gpt-4o",
        Protocol::OpenAiResponses => "openai/gpt-4o",
        Protocol::Gemini => "gemini/gemini-2.5-flash",
        Protocol::Bedrock => "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0",
    }
}

/// Writes the user's config file of `sandbox`.
pub fn write_user_config(sandbox: &Sandbox, text: &str) {
    let dir = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// The stream-json lines of `output`.
pub fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// Generates `mod $scenario { openai_chat, openai_responses, anthropic, gemini, bedrock }`,
/// each a `#[test]` running `$scenario(protocol)` against the real binary.
#[macro_export]
macro_rules! every_protocol {
    ($($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[test]
            fn openai_chat() {
                super::$scenario(pith_testkit::Protocol::OpenAiChat)
            }
            #[test]
            fn openai_responses() {
                super::$scenario(pith_testkit::Protocol::OpenAiResponses)
            }
            #[test]
            fn anthropic() {
                super::$scenario(pith_testkit::Protocol::Anthropic)
            }
            #[test]
            fn gemini() {
                super::$scenario(pith_testkit::Protocol::Gemini)
            }
            #[test]
            fn bedrock() {
                super::$scenario(pith_testkit::Protocol::Bedrock)
            }
        }
    )+};
}
