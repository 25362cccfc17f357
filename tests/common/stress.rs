//! The compaction stress harness: a small-window model that always answers with one tool
//! call, against a testkit server that misreports usage (or reports none), run through
//! the real `pith` binary — as `pith run`, as the REPL fed by a pipe, or as a subagent of
//! a `pith run` job. Each run measures what the governor promises: how many LLM
//! compactions it spent and how many of them were wasted, the largest request as pith's
//! tokenizer counts it on the wire, whether the transcript holds what was sent, and
//! whether what it told the user came true.

use std::io::Write;
use std::process::{Output, Stdio};

use pith_core::ContextBudget;
use pith_testkit::{
    request_tokens, Protocol, RecordedRequest, Responder, Script, TestServer, Turn, UsageMode,
};
use serde_json::{json, Value};

use super::{records, stderr, stdout, transcripts, Sandbox};

/// The line every compaction prompt ends with: how a summary request is told apart.
pub const SUMMARY_REQUEST_MARKER: &str = "Write the summary now.";

/// A summary that keeps to the limit.
pub const SHORT_SUMMARY: &str = "## Goal\nRead the files.\n\n## Accomplished\nRead some.";

/// How the prompt reaches pith.
#[derive(Debug, Clone)]
pub enum Prompt {
    /// As the argument (`pith run`), or one line of input (the REPL).
    Arg(String),
    /// On stdin (`pith run -`).
    Stdin(String),
}

/// Which front-end runs the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    /// `pith run --format stream-json`.
    Run,
    /// The REPL, its input piped.
    Repl,
    /// A subagent: the `pith run` job's first call is `task`, whose child runs the
    /// scenario.
    Subagent,
}

/// What the model reads each tool turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// A different text file each turn (the history grows).
    DistinctFiles,
    /// The same file every turn (the model repeating itself).
    SameFile,
    /// A different 1,024 × 1,024 PNG each turn.
    Images,
}

/// One stress run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The protocol the server speaks.
    pub protocol: Protocol,
    /// How the server reports usage.
    pub usage: UsageMode,
    /// The model's window (`--context-window`).
    pub window: u64,
    /// Tool turns before the model's final answer.
    pub tool_turns: usize,
    /// Bytes of each text file the model reads.
    pub file_bytes: usize,
    /// What it reads.
    pub reads: Reads,
    /// The prompt.
    pub prompt: Prompt,
    /// The workspace's AGENTS.md, when it has one.
    pub agents_md: Option<String>,
    /// The user's config file, when the scenario needs one.
    pub config: Option<String>,
    /// What every summary request is answered with.
    pub summary: Turn,
    /// More responders, checked before the summary's.
    pub responders: Vec<Responder>,
    /// The front-end.
    pub front_end: FrontEnd,
    /// More arguments.
    pub args: Vec<String>,
    /// REPL lines typed after the prompt's turn (before `/exit`).
    pub then: Vec<String>,
}

impl Scenario {
    /// 30 tool turns of 4 KB reads on a 32,000-token window, an honest server, `pith run`.
    pub fn new(protocol: Protocol) -> Self {
        Self {
            protocol,
            usage: UsageMode::Honest,
            window: 32_000,
            tool_turns: 30,
            file_bytes: 4_000,
            reads: Reads::DistinctFiles,
            prompt: Prompt::Arg("Read the files one by one.".to_owned()),
            agents_md: None,
            config: None,
            summary: Turn::text(SHORT_SUMMARY),
            responders: Vec::new(),
            front_end: FrontEnd::Run,
            args: Vec::new(),
            then: Vec::new(),
        }
    }

    /// The budget of the scenario's window.
    pub fn budget(&self) -> ContextBudget {
        ContextBudget::for_window(self.window)
    }

    fn model(&self) -> &'static str {
        match self.protocol {
            Protocol::OpenAiChat => "openai-chat/testkit-model",
            Protocol::OpenAiResponses => "openai/testkit-model",
            Protocol::Anthropic => "anthropic/testkit-model",
            Protocol::Gemini => "gemini/testkit-model",
            Protocol::Bedrock => "bedrock/testkit-model",
        }
    }

    fn file(&self, i: usize) -> String {
        match self.reads {
            Reads::DistinctFiles => format!("f{i:03}.txt"),
            Reads::SameFile => "f000.txt".to_owned(),
            Reads::Images => format!("shot{i:03}.png"),
        }
    }

    fn script(&self) -> Script {
        let reads =
            (0..self.tool_turns).map(|i| Turn::tool_call("read", json!({ "path": self.file(i) })));
        let mut turns: Vec<Turn> = Vec::new();
        if self.front_end == FrontEnd::Subagent {
            turns.push(Turn::tool_call(
                "task",
                json!({"description": "read the files", "prompt": "Read the files one by one."}),
            ));
        }
        turns.extend(reads);
        turns.push(Turn::text("Done."));
        if self.front_end == FrontEnd::Subagent {
            turns.push(Turn::text("The child is done."));
        }
        let mut script = Script::new(self.protocol, turns).with_usage_mode(self.usage);
        script.responders = self.responders.clone();
        script
            .responding(SUMMARY_REQUEST_MARKER, self.summary.clone())
            // A summary request answered with tool calls is answered with their denial
            // and asked again: the same answer again.
            .responding(
                pith_core::prompts::TOOLS_DISABLED_DURING_COMPACTION,
                self.summary.clone(),
            )
    }

    fn write_workspace(&self, sandbox: &Sandbox) {
        let work = sandbox.workspace();
        for i in 0..self.tool_turns.max(1) {
            if self.reads == Reads::Images {
                let mut png = Vec::new();
                image::RgbImage::from_fn(1024, 1024, |x, y| {
                    image::Rgb([(x + i as u32) as u8, y as u8, 7])
                })
                .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                .unwrap();
                std::fs::write(work.join(self.file(i)), png).unwrap();
                continue;
            }
            let line = format!("file {i:03}: the quick brown fox jumps over the lazy dog\n");
            let text = line.repeat(self.file_bytes / line.len() + 1);
            std::fs::write(work.join(format!("f{i:03}.txt")), &text[..self.file_bytes]).unwrap();
        }
        if let Some(agents) = &self.agents_md {
            std::fs::write(work.join("AGENTS.md"), agents).unwrap();
        }
        if let Some(config) = &self.config {
            let dir = sandbox.root.path().join("config").join("pith");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("config.toml"), config).unwrap();
        }
    }

    /// Writes the workspace, runs the front-end, and measures.
    pub fn run(&self) -> Outcome {
        let sandbox = Sandbox::new();
        self.write_workspace(&sandbox);
        let server = TestServer::start(self.script()).unwrap();
        let window = self.window.to_string();
        let mut command = sandbox.pith(Some(&server));
        if self.front_end != FrontEnd::Repl {
            command.args(["run", "--format", "stream-json"]);
        }
        command.args(["--model", self.model(), "--context-window", &window]);
        if self.reads == Reads::Images {
            command.args(["--approval", "read-only"]);
        }
        command.args(&self.args);
        let then: String = self.then.iter().map(|line| format!("{line}\n")).collect();
        let input = match (&self.prompt, self.front_end) {
            (Prompt::Arg(text), FrontEnd::Repl) => Some(format!("{text}\n{then}/exit\n")),
            (Prompt::Stdin(text), FrontEnd::Repl) => {
                Some(format!("{}\n{then}/exit\n", text.replace('\n', " ")))
            }
            (Prompt::Arg(text), _) => {
                command.arg(text);
                None
            }
            (Prompt::Stdin(text), _) => {
                command.arg("-");
                Some(text.clone())
            }
        };
        let output = match input {
            None => command.output().expect("pith runs"),
            Some(input) => {
                let mut child = command
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("pith starts");
                let mut stdin = child.stdin.take().unwrap();
                let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
                let output = child.wait_with_output().expect("pith runs");
                let _ = writer.join();
                output
            }
        };
        Outcome::measure(self.clone(), sandbox, &server, output)
    }
}

/// What one run did.
pub struct Outcome {
    /// The scenario.
    pub scenario: Scenario,
    /// The process's output.
    pub output: Output,
    /// Every stream-json line (none for the REPL).
    pub events: Vec<Value>,
    /// Every model request the server received.
    pub requests: Vec<RecordedRequest>,
    /// The sandbox, kept so its files outlive the run.
    pub sandbox: Sandbox,
}

impl Outcome {
    fn measure(scenario: Scenario, sandbox: Sandbox, server: &TestServer, output: Output) -> Self {
        let events = match scenario.front_end {
            FrontEnd::Repl => Vec::new(),
            _ => stdout(&output)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
                .collect(),
        };
        Self {
            scenario,
            output,
            events,
            // Model requests only (not the window probe's `GET /v1/models`).
            requests: server
                .requests()
                .into_iter()
                .filter(|r| r.method == "POST")
                .collect(),
            sandbox,
        }
    }

    /// The requests that started or continued a summary.
    fn is_summary(request: &RecordedRequest) -> bool {
        pith_testkit::last_message(&request.body)
            .is_some_and(|m| m.to_string().contains(SUMMARY_REQUEST_MARKER))
    }

    /// LLM compaction attempts: summary requests (a model that calls tools during a
    /// summary is answered and asked again: those rounds count as one attempt).
    pub fn compaction_attempts(&self) -> usize {
        self.requests
            .iter()
            .filter(|r| Self::is_summary(r))
            .count()
            .saturating_sub(self.unused_prepared())
    }

    /// Summaries prepared in the background and never applied (a job that ended between
    /// the mark and the threshold): requests sent, but no attempt of the governor's.
    pub fn unused_prepared(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e["type"] == "compaction_unused")
            .count()
    }

    /// Summary requests of attempts that did not leave a compaction that helped: failed,
    /// not applied, or applied but reported still over the threshold by the next request.
    pub fn wasted_attempts(&self) -> usize {
        let applied = self.applied_compactions();
        let did_not_help = self
            .governor("paused")
            .iter()
            .filter(|e| e["reason"] == "still_over_threshold" || e["reason"] == "freed_too_little")
            .count();
        self.compaction_attempts()
            .saturating_sub(applied)
            .saturating_add(did_not_help)
    }

    /// Automatic LLM compactions applied.
    pub fn applied_compactions(&self) -> usize {
        match self.scenario.front_end {
            FrontEnd::Repl => self
                .main_records()
                .iter()
                .filter(|r| r["kind"] == "compaction_applied" && r["trigger"] == "auto")
                .count(),
            _ => self
                .of_type("compaction")
                .iter()
                .filter(|e| e["trigger"] == "auto")
                .count(),
        }
    }

    /// The server's tokens per counted token: its bias, when it has one.
    pub fn bias(&self) -> f64 {
        match self.scenario.usage {
            UsageMode::Counted { bias_percent } => 1.0 + f64::from(bias_percent) / 100.0,
            _ => 1.0,
        }
    }

    /// The largest request as the server counts it, as a share of the window.
    pub fn largest_request_share(&self) -> f64 {
        self.max_request_tokens() as f64 * self.bias() / self.scenario.window as f64
    }

    /// Tool calls the scenario's model ran (a subagent's, for that front-end).
    pub fn tool_turns(&self) -> usize {
        match self.scenario.front_end {
            FrontEnd::Run => self
                .of_type("tool_result")
                .iter()
                .filter(|e| e.get("parent").is_none())
                .count(),
            FrontEnd::Subagent => self
                .of_type("tool_result")
                .iter()
                .filter(|e| e.get("parent").is_some())
                .count(),
            FrontEnd::Repl => self
                .main_records()
                .iter()
                .filter(|r| r["kind"] == "assistant_turn")
                .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
                .filter(|m| m["role"] == "tool")
                .count(),
        }
    }

    /// LLM compaction attempts per 100 tool turns.
    pub fn attempts_per_100_tool_turns(&self) -> f64 {
        self.compaction_attempts() as f64 * 100.0 / self.tool_turns().max(1) as f64
    }

    /// The largest request pith's tokenizer counts on the wire.
    pub fn max_request_tokens(&self) -> u64 {
        self.requests
            .iter()
            .map(|r| request_tokens(&r.body))
            .max()
            .unwrap_or(0)
    }

    /// The stream-json events of `kind`.
    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    /// The governor events of `event` (`paused`, `ceiling_reached`, `usage_implausible`).
    pub fn governor(&self, event: &str) -> Vec<&Value> {
        self.of_type("governor")
            .into_iter()
            .filter(|e| e["event"] == event)
            .collect()
    }

    /// The notices' texts (stream-json `notice` and `governor` lines; the REPL's stdout).
    pub fn notices(&self) -> Vec<String> {
        if self.scenario.front_end == FrontEnd::Repl {
            return stdout(&self.output).lines().map(str::to_owned).collect();
        }
        self.events
            .iter()
            .filter(|e| e["type"] == "notice" || e["type"] == "governor")
            .filter_map(|e| e["text"].as_str().map(str::to_owned))
            .collect()
    }

    /// The transcript of the session the scenario ran in (the child's, for a subagent).
    pub fn main_records(&self) -> Vec<Value> {
        let all = transcripts(&self.sandbox.pith_home());
        let mut sessions: Vec<Vec<Value>> = all.iter().map(|t| records(t)).collect();
        let is_child = |records: &Vec<Value>| {
            records
                .first()
                .is_some_and(|r| r.get("parent_session").is_some_and(|p| !p.is_null()))
        };
        let wanted_child = self.scenario.front_end == FrontEnd::Subagent;
        sessions.retain(|s| is_child(s) == wanted_child);
        sessions.pop().unwrap_or_default()
    }

    /// One line for a failing assertion.
    pub fn describe(&self) -> String {
        format!(
            "exit {:?}; {} tool turns, {} summary requests ({} wasted), {} requests; largest request {} tokens ({:.2}× the window); notices: {:#?}; stderr: {}",
            self.output.status.code(),
            self.tool_turns(),
            self.compaction_attempts(),
            self.wasted_attempts(),
            self.requests.len(),
            self.max_request_tokens(),
            self.max_request_tokens() as f64 / self.scenario.window as f64,
            self.notices(),
            stderr(&self.output)
        )
    }

    /// No request larger than the input budget, as the server counts it: pith's
    /// tokenizer on the wire, times the server's bias when it has one.
    pub fn assert_within_budget(&self) {
        let bias = self.bias();
        let budget = self.scenario.budget().input_budget;
        for (index, request) in self.requests.iter().enumerate() {
            let counted = (request_tokens(&request.body) as f64 * bias) as u64;
            assert!(
                counted <= budget,
                "request {index} holds {counted} tokens, over the input budget {budget}: {}",
                self.describe()
            );
        }
    }

    /// Every notice came true: after "paused … until N" and "ceiling … until N", no
    /// automatic compaction starts below N; the implausible-usage notice comes at most
    /// once (the stream-json front-ends, where each notice and each start is a line).
    pub fn assert_truthful(&self) {
        let mut floor = std::collections::HashMap::<String, u64>::new();
        let mut implausible = std::collections::HashMap::<String, u32>::new();
        for event in &self.events {
            // Each conversation (the job's, a subagent's) has its own governor.
            let session = event["parent"]["session_id"]
                .as_str()
                .unwrap_or("job")
                .to_owned();
            let floor = floor.entry(session.clone()).or_default();
            match (event["type"].as_str(), event["event"].as_str()) {
                (Some("governor"), Some("paused" | "ceiling_reached")) => {
                    let until = event["until_tokens"].as_u64().expect("until_tokens");
                    assert!(
                        event["text"]
                            .as_str()
                            .unwrap()
                            .contains(&pith_core::thousands(until)),
                        "the text names what the decision keeps to: {event}"
                    );
                    *floor = (*floor).max(until);
                }
                (Some("governor"), Some("usage_implausible")) => {
                    *implausible.entry(session).or_default() += 1
                }
                (Some("compaction_started"), _) => {
                    let before = event["tokens_before"].as_u64().unwrap();
                    assert!(
                        before >= *floor,
                        "a compaction started at {before} tokens after a notice said none would before {}: {}",
                        *floor,
                        self.describe()
                    );
                    // The notice's promise was kept: the context reached its figure and
                    // the ceiling or breaker was released there.
                    *floor = 0;
                }
                _ => {}
            }
        }
        assert!(
            implausible.values().all(|told| *told <= 1),
            "told more than once a conversation: {}",
            self.describe()
        );
    }

    /// The transcript holds what was sent: the last request's messages are the
    /// transcript's model view, encoded as the protocol sends it.
    pub fn assert_transcript_is_what_was_sent(&self) {
        let records = self.main_records();
        let session = records
            .first()
            .and_then(|r| r["session_id"].as_str())
            .expect("a session_started record")
            .to_owned();
        let replay = self
            .sandbox
            .pith(None)
            .args(["replay", &session, "--view", "model", "--format", "json"])
            .output()
            .expect("pith replay runs");
        assert!(replay.status.success(), "{}", stderr(&replay));
        let view: Value = serde_json::from_str(&stdout(&replay)).expect("replay JSON");
        let mut history: Vec<pith_core::Message> =
            serde_json::from_value(view["messages"].clone()).expect("messages");
        // The final answer came after the last request.
        let answer = history.pop().expect("the final answer");
        assert_eq!(answer.role, pith_core::Role::Assistant);
        let last = self
            .requests
            .iter()
            .rev()
            // Not a summary round either: a prepared summary abandoned at the end of the
            // job may be the last request, its rounds after a denied tool call included.
            .find(|r| !r.body.to_string().contains(SUMMARY_REQUEST_MARKER))
            .expect("a turn request");
        let sent = &last.body;
        let encoded = encode(self.scenario.protocol, sent, history);
        let key = match self.scenario.protocol {
            Protocol::OpenAiResponses => "input",
            Protocol::Gemini => "contents",
            _ => "messages",
        };
        assert_eq!(
            super::without_cache_marks(&encoded[key]),
            super::without_cache_marks(&sent[key]),
            "the transcript's model view is not what was sent last"
        );
    }
}

/// `history` as `protocol` sends it, with the sent request's system prompt.
fn encode(protocol: Protocol, sent: &Value, history: Vec<pith_core::Message>) -> Value {
    use pith_providers::ModelRequest;
    use std::sync::Arc;
    let system = match protocol {
        Protocol::Anthropic => sent["system"][0]["text"].as_str(),
        _ => sent["messages"][0]["content"].as_str(),
    };
    let request = ModelRequest {
        model: sent["model"].as_str().unwrap_or("testkit-model").to_owned(),
        system: system.unwrap_or_default().to_owned(),
        messages: Arc::new(history),
        tools: Vec::new(),
        max_output_tokens: None,
        temperature: None,
        reasoning: None,
        output: None,
        cache: Default::default(),
    };
    match protocol {
        Protocol::Anthropic => pith_providers::wire::anthropic::request_body(&request),
        Protocol::OpenAiChat => pith_providers::wire::openai_chat::request_body(&request),
        other => panic!("no encoder wired for {other:?} in the stress harness"),
    }
}
