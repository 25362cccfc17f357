//! A turn's events as spans and metrics: [`TurnTrace`] sits between the conversation and
//! the front-end's [`EventSink`], passes every event on unchanged, and records:
//!
//! | span | from | attributes |
//! |---|---|---|
//! | `turn` (root) | the turn's start to its end | `session.id`, `gen_ai.request.model`, `pith.turn.requests`, `pith.turn.tool_calls`, `gen_ai.usage.*`, `pith.cost_usd`, `pith.exit_code`, `error.type`; content: `pith.prompt`, `pith.answer` |
//! | `chat {model}` | each `RequestFinished` (its duration) | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens` / `output_tokens`, `pith.usage.cached_input_tokens` / `reasoning_tokens`, `pith.request.id` / `purpose` / `retries`, `error.type` |
//! | `execute_tool {name}` | `ToolCallStarted` → `ToolCallFinished` | `gen_ai.tool.name`, `gen_ai.tool.call.id`, `pith.tool.is_error`, `pith.tool.output_bytes`, `pith.subagent.session_id`; content: `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result` |
//! | `compaction {trigger}` | `AutoCompaction::Started` → its end; a micro-compaction (its duration) | `pith.compaction.trigger`, `pith.compaction.tokens_before` / `tokens_after` / `ledger_tokens`, `pith.compaction.outcome` (`applied`, `cancelled`, `failed`), `pith.compaction.reason` |
//! | `hook {event}` | each hook run (its duration) | `pith.hook.event`, `pith.hook.matcher`, `pith.hook.outcome`, `pith.hook.exit_code`; content: `pith.hook.command`, `pith.hook.message` |
//! | `invoke_agent {agent}` | a subagent's first event → its `task` call's end, under that call's span; the child's own spans under it | `gen_ai.agent.name`, `pith.subagent.session_id` |
//!
//! A compaction's summary request is a child of its compaction span. Notices and cut
//! answers are span events. Metrics: `pith.tokens`, `pith.cost`, `pith.requests`,
//! `pith.request.duration`, `pith.compactions`. Content attributes only with
//! `[telemetry] include_content = true`, and never a credential (see
//! [`Telemetry::clean`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use pith_core::{
    usage_cost, AutoCompaction, EventSink, HookOutcome, HookRun, LoopEvent, Pricing,
    RequestPurpose, RequestReport, ToolCall, ToolResult,
};

use crate::telemetry::export::Telemetry;

/// The model a turn runs: its id (requests of other models are subagents') and prices.
#[derive(Debug, Clone)]
pub struct TracedModel {
    /// `provider/model`.
    pub spec: String,
    /// The id sent to the provider.
    pub id: String,
    /// Its prices, when known.
    pub pricing: Option<Pricing>,
}

/// Open spans of one conversation in the turn: the turn's own, or a subagent's.
#[derive(Default)]
struct Scope {
    /// The scope's own span (the turn, or the subagent's `invoke_agent`).
    cx: Context,
    /// Running tool calls, by call id.
    tools: HashMap<String, Context>,
    /// The running automatic compaction.
    compaction: Option<Context>,
}

/// A turn being traced; see the module docs.
pub struct TurnTrace<'a> {
    telemetry: Arc<Telemetry>,
    inner: &'a mut dyn EventSink,
    model: TracedModel,
    /// Scopes by path: `""` for the turn, `"/call"` for a child, `"/call/call2"` below.
    scopes: HashMap<String, Scope>,
}

impl<'a> TurnTrace<'a> {
    /// Starts the `name` root span (`turn`, or `compaction manual`) in front of `inner`.
    pub fn start(
        telemetry: &Arc<Telemetry>,
        inner: &'a mut dyn EventSink,
        name: &'static str,
        model: TracedModel,
        session_id: &str,
        prompt: Option<&str>,
    ) -> Self {
        let mut attributes = vec![
            KeyValue::new("session.id", session_id.to_owned()),
            KeyValue::new("gen_ai.request.model", model.spec.clone()),
        ];
        if let (Some(prompt), true) = (prompt, telemetry.include_content) {
            attributes.push(KeyValue::new("pith.prompt", telemetry.clean(prompt)));
        }
        let span = telemetry
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&telemetry.tracer, &Context::new());
        let mut scopes = HashMap::new();
        scopes.insert(
            String::new(),
            Scope {
                cx: Context::new().with_span(span),
                ..Scope::default()
            },
        );
        Self {
            telemetry: Arc::clone(telemetry),
            inner,
            model,
            scopes,
        }
    }

    /// Ends the root span with what the turn did; every span still open is ended first.
    pub fn finish(mut self, summary: TurnFacts<'_>) {
        let open: Vec<String> = self.scopes.keys().cloned().collect();
        for key in open.iter().filter(|k| !k.is_empty()) {
            if let Some(scope) = self.scopes.remove(key) {
                end_scope(scope, "the turn ended first");
            }
        }
        let Some(root) = self.scopes.remove("") else {
            return;
        };
        let span = root.cx.span();
        span.set_attributes([
            KeyValue::new("pith.turn.requests", i64::from(summary.requests)),
            KeyValue::new("pith.turn.tool_calls", i64::from(summary.tool_calls)),
            KeyValue::new(
                "gen_ai.usage.input_tokens",
                to_i64(summary.usage.input_tokens),
            ),
            KeyValue::new(
                "gen_ai.usage.output_tokens",
                to_i64(summary.usage.output_tokens),
            ),
            KeyValue::new("pith.exit_code", i64::from(summary.exit_code)),
        ]);
        if let Some(cost) = summary.cost {
            span.set_attribute(KeyValue::new("pith.cost_usd", cost));
        }
        if let (Some(answer), true) = (summary.answer, self.telemetry.include_content) {
            span.set_attribute(KeyValue::new("pith.answer", self.telemetry.clean(answer)));
        }
        if let Some(error) = summary.error {
            span.set_attribute(KeyValue::new("error.type", summary.error_type.to_owned()));
            span.set_status(Status::error(error.to_owned()));
        }
        end_scope(root, "");
    }

    /// Ends the root span of a manual compaction (`/compact`) with its outcome.
    pub fn finish_manual_compaction(
        mut self,
        result: &Result<pith_providers::ManualCompaction, pith_providers::LoopError>,
    ) {
        let Some(root) = self.scopes.remove("") else {
            return;
        };
        let span = root.cx.span();
        span.set_attribute(KeyValue::new("pith.compaction.trigger", "manual"));
        let outcome = match result {
            Ok(done) => {
                span.set_attributes([
                    KeyValue::new("pith.compaction.tokens_before", to_i64(done.tokens_before)),
                    KeyValue::new("pith.compaction.tokens_after", to_i64(done.tokens_after)),
                    KeyValue::new("pith.compaction.ledger_tokens", to_i64(done.ledger_tokens)),
                    KeyValue::new("pith.compaction.outcome", "applied"),
                ]);
                "applied"
            }
            Err(pith_providers::LoopError::Cancelled) => {
                span.set_attribute(KeyValue::new("pith.compaction.outcome", "cancelled"));
                "cancelled"
            }
            Err(error) => {
                span.set_attribute(KeyValue::new("pith.compaction.outcome", "failed"));
                span.set_status(Status::error(error.to_string()));
                "failed"
            }
        };
        self.count_compaction("manual", outcome);
        end_scope(root, "");
    }

    fn now() -> SystemTime {
        SystemTime::now()
    }

    fn scope(&mut self, key: &str) -> &mut Scope {
        self.scopes.entry(key.to_owned()).or_default()
    }

    fn child_span(
        &self,
        parent: &Context,
        name: String,
        start: SystemTime,
        attributes: Vec<KeyValue>,
    ) -> Context {
        let tracer = &self.telemetry.tracer;
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(tracer, parent);
        parent.with_span(span)
    }

    fn observe(&mut self, key: &str, event: &LoopEvent) {
        match event {
            LoopEvent::RequestFinished(report) => self.request(key, report),
            LoopEvent::ToolCallStarted(call) => self.tool_started(key, call),
            LoopEvent::ToolCallFinished { call, result } => self.tool_finished(key, call, result),
            LoopEvent::AutoCompaction(event) => self.auto_compaction(key, event),
            LoopEvent::MicroCompaction(step) => {
                let parent = self.scope(key).cx.clone();
                let start = Self::now() - Duration::from_millis(step.duration_ms);
                let cx = self.child_span(
                    &parent,
                    "compaction micro".into(),
                    start,
                    vec![
                        KeyValue::new("pith.compaction.trigger", "micro"),
                        KeyValue::new("pith.compaction.tokens_before", to_i64(step.tokens_before)),
                        KeyValue::new("pith.compaction.tokens_after", to_i64(step.tokens_after)),
                        KeyValue::new("pith.compaction.duration_ms", to_i64(step.duration_ms)),
                        KeyValue::new("pith.compaction.outcome", "applied"),
                    ],
                );
                cx.span().end();
                self.count_compaction("micro", "applied");
            }
            LoopEvent::Hook(run) => self.hook(key, run),
            LoopEvent::Subagent(child) => {
                let child_key = format!("{key}/{}", child.call_id);
                if !self.scopes.contains_key(&child_key) {
                    let parent = {
                        let scope = self.scope(key);
                        scope
                            .tools
                            .get(&child.call_id)
                            .cloned()
                            .unwrap_or_else(|| scope.cx.clone())
                    };
                    let cx = self.child_span(
                        &parent,
                        format!("invoke_agent {}", child.agent),
                        Self::now(),
                        vec![
                            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                            KeyValue::new("gen_ai.agent.name", child.agent.clone()),
                            KeyValue::new("pith.subagent.session_id", child.session_id.clone()),
                        ],
                    );
                    self.scopes.insert(
                        child_key.clone(),
                        Scope {
                            cx,
                            ..Scope::default()
                        },
                    );
                }
                self.observe(&child_key, &child.event);
            }
            LoopEvent::Notice(text) => {
                let text = text.clone();
                self.scope(key)
                    .cx
                    .span()
                    .add_event("notice", vec![KeyValue::new("message", text)]);
            }
            LoopEvent::OutputTruncated { reason } => {
                let reason = reason.clone();
                self.scope(key)
                    .cx
                    .span()
                    .add_event("output_truncated", vec![KeyValue::new("reason", reason)]);
            }
            _ => {}
        }
    }

    /// A tool call's span opens under the turn's.
    fn tool_started(&mut self, key: &str, call: &ToolCall) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.id.clone()),
        ];
        if self.telemetry.include_content {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                self.telemetry.clean(&call.arguments.to_string()),
            ));
        }
        let parent = self.scope(key).cx.clone();
        let cx = self.child_span(
            &parent,
            format!("execute_tool {}", call.name),
            Self::now(),
            attributes,
        );
        self.scope(key).tools.insert(call.id.clone(), cx);
    }

    /// A tool call's span ends with its outcome (and a subagent's scope under it).
    fn tool_finished(&mut self, key: &str, call: &ToolCall, result: &ToolResult) {
        let child_key = format!("{key}/{}", call.id);
        if let Some(child) = self.scopes.remove(&child_key) {
            end_scope(child, "");
        }
        let Some(cx) = self.scope(key).tools.remove(&call.id) else {
            return;
        };
        let span = cx.span();
        span.set_attributes([
            KeyValue::new("pith.tool.is_error", result.is_error),
            KeyValue::new(
                "pith.tool.output_bytes",
                to_i64(result.content.len() as u64),
            ),
        ]);
        if let Some(child) = &result.child_session {
            span.set_attribute(KeyValue::new(
                "pith.subagent.session_id",
                child.session_id.clone(),
            ));
        }
        if self.telemetry.include_content {
            span.set_attribute(KeyValue::new(
                "gen_ai.tool.call.result",
                self.telemetry.clean(&result.content),
            ));
        }
        if result.is_error {
            span.set_status(Status::error("the tool reported an error"));
        }
        span.end();
    }

    /// An automatic compaction's span: opened at its start, ended with its outcome.
    fn auto_compaction(&mut self, key: &str, event: &AutoCompaction) {
        match event {
            AutoCompaction::Started {
                tokens_before,
                background,
                ..
            } => {
                let parent = self.scope(key).cx.clone();
                let cx = self.child_span(
                    &parent,
                    "compaction auto".into(),
                    Self::now(),
                    vec![
                        KeyValue::new("pith.compaction.trigger", "auto"),
                        KeyValue::new("pith.compaction.tokens_before", to_i64(*tokens_before)),
                        KeyValue::new("pith.compaction.background", *background),
                    ],
                );
                self.scope(key).compaction = Some(cx);
            }
            AutoCompaction::Applied { figures, .. } => {
                let cx = self.compaction_span(key, figures.tokens_before, figures.duration_ms);
                let span = cx.span();
                span.set_attributes([
                    KeyValue::new("pith.compaction.tokens_after", to_i64(figures.tokens_after)),
                    KeyValue::new(
                        "pith.compaction.ledger_tokens",
                        to_i64(figures.ledger_tokens),
                    ),
                    KeyValue::new("pith.compaction.duration_ms", to_i64(figures.duration_ms)),
                    KeyValue::new("pith.compaction.waited_ms", to_i64(figures.waited_ms)),
                    KeyValue::new("pith.compaction.outcome", "applied"),
                ]);
                span.end();
                self.count_compaction("auto", "applied");
            }
            AutoCompaction::Unused { reason, .. } => {
                if let Some(cx) = self.scope(key).compaction.take() {
                    cx.span().set_attributes([
                        KeyValue::new("pith.compaction.outcome", "unused"),
                        KeyValue::new("pith.compaction.reason", reason.clone()),
                    ]);
                    cx.span().end();
                }
                self.count_compaction("auto", "unused");
            }
            AutoCompaction::Cancelled => {
                if let Some(cx) = self.scope(key).compaction.take() {
                    cx.span()
                        .set_attribute(KeyValue::new("pith.compaction.outcome", "cancelled"));
                    cx.span().end();
                }
                self.count_compaction("auto", "cancelled");
            }
            AutoCompaction::Failed { reason } => {
                let cx = self.compaction_span(key, 0, 0);
                let span = cx.span();
                span.set_attributes([
                    KeyValue::new("pith.compaction.outcome", "failed"),
                    KeyValue::new("pith.compaction.reason", reason.clone()),
                ]);
                span.set_status(Status::error(reason.clone()));
                span.end();
                self.count_compaction("auto", "failed");
            }
        }
    }

    /// The open compaction span of `key`, or one made now for a compaction that ended
    /// without a start seen (`duration_ms` back).
    fn compaction_span(&mut self, key: &str, tokens_before: u64, duration_ms: u64) -> Context {
        if let Some(cx) = self.scope(key).compaction.take() {
            return cx;
        }
        let parent = self.scope(key).cx.clone();
        self.child_span(
            &parent,
            "compaction auto".into(),
            Self::now() - Duration::from_millis(duration_ms),
            vec![
                KeyValue::new("pith.compaction.trigger", "auto"),
                KeyValue::new("pith.compaction.tokens_before", to_i64(tokens_before)),
            ],
        )
    }

    fn count_compaction(&self, trigger: &'static str, outcome: &'static str) {
        self.telemetry.instruments.compactions.add(
            1,
            &[
                KeyValue::new("pith.compaction.trigger", trigger),
                KeyValue::new("pith.compaction.outcome", outcome),
            ],
        );
    }

    fn request(&mut self, key: &str, report: &RequestReport) {
        let purpose = match report.purpose {
            RequestPurpose::Turn => "turn",
            RequestPurpose::Compaction => "compaction",
        };
        let parent = {
            let scope = self.scope(key);
            match (&scope.compaction, report.purpose) {
                (Some(compaction), RequestPurpose::Compaction) => compaction.clone(),
                _ => scope.cx.clone(),
            }
        };
        let usage = report.usage;
        let start = Self::now() - Duration::from_millis(report.duration_ms);
        let cx = self.child_span(
            &parent,
            format!("chat {}", report.model),
            start,
            vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", report.protocol.clone()),
                KeyValue::new("gen_ai.request.model", report.model.clone()),
                KeyValue::new("gen_ai.usage.input_tokens", to_i64(usage.input_tokens)),
                KeyValue::new("gen_ai.usage.output_tokens", to_i64(usage.output_tokens)),
                KeyValue::new(
                    "pith.usage.cached_input_tokens",
                    to_i64(usage.cached_input_tokens),
                ),
                KeyValue::new(
                    "pith.usage.reasoning_tokens",
                    to_i64(usage.reasoning_tokens),
                ),
                KeyValue::new("pith.usage.reported", report.usage_reported),
                KeyValue::new("pith.request.id", to_i64(report.id)),
                KeyValue::new("pith.request.purpose", purpose),
                KeyValue::new("pith.request.retries", i64::from(report.retries)),
            ],
        );
        let span = cx.span();
        let outcome = match &report.error {
            Some(error) => {
                span.set_attribute(KeyValue::new("error.type", error_type(error)));
                span.set_status(Status::error(error.clone()));
                "error"
            }
            None => "ok",
        };
        span.end();
        let instruments = &self.telemetry.instruments;
        let model = KeyValue::new("gen_ai.request.model", report.model.clone());
        let purpose_kv = KeyValue::new("pith.request.purpose", purpose);
        for (kind, count) in [
            ("input", usage.input_tokens),
            ("cached_input", usage.cached_input_tokens),
            ("output", usage.output_tokens),
            ("reasoning", usage.reasoning_tokens),
        ] {
            if count > 0 {
                instruments.tokens.add(
                    count,
                    &[
                        KeyValue::new("pith.token.type", kind),
                        model.clone(),
                        purpose_kv.clone(),
                    ],
                );
            }
        }
        let pricing = (report.model == self.model.id)
            .then_some(self.model.pricing.as_ref())
            .flatten();
        if let Some(dollars) = usage_cost(&usage, pricing).filter(|d| *d > 0.0) {
            instruments.cost.add(dollars, std::slice::from_ref(&model));
        }
        instruments.requests.add(
            1,
            &[
                model.clone(),
                purpose_kv.clone(),
                KeyValue::new("pith.request.outcome", outcome),
            ],
        );
        instruments
            .request_duration
            .record(report.duration_ms as f64 / 1_000.0, &[model, purpose_kv]);
    }

    fn hook(&mut self, key: &str, run: &HookRun) {
        let parent = self.scope(key).cx.clone();
        let outcome = match run.outcome {
            HookOutcome::Proceed => "proceed",
            HookOutcome::Block => "block",
            HookOutcome::Error => "error",
            HookOutcome::Timeout => "timeout",
        };
        let mut attributes = vec![
            KeyValue::new("pith.hook.event", run.event.to_string()),
            KeyValue::new("pith.hook.outcome", outcome),
            KeyValue::new("pith.hook.duration_ms", to_i64(run.duration_ms)),
        ];
        if let Some(matcher) = &run.matcher {
            attributes.push(KeyValue::new("pith.hook.matcher", matcher.clone()));
        }
        if let Some(code) = run.exit_code {
            attributes.push(KeyValue::new("pith.hook.exit_code", i64::from(code)));
        }
        if self.telemetry.include_content {
            attributes.push(KeyValue::new(
                "pith.hook.command",
                self.telemetry.clean(&run.command),
            ));
            if let Some(message) = &run.message {
                attributes.push(KeyValue::new(
                    "pith.hook.message",
                    self.telemetry.clean(message),
                ));
            }
        }
        let start = Self::now() - Duration::from_millis(run.duration_ms);
        let cx = self.child_span(&parent, format!("hook {}", run.event), start, attributes);
        if matches!(run.outcome, HookOutcome::Error | HookOutcome::Timeout) {
            cx.span().set_status(Status::error(outcome));
        }
        cx.span().end();
    }
}

/// What the root span is told when the turn ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnFacts<'a> {
    /// Model requests of the turn.
    pub requests: u32,
    /// Tool calls run.
    pub tool_calls: u32,
    /// Usage, subagents included.
    pub usage: pith_core::Usage,
    /// Dollars, when known.
    pub cost: Option<f64>,
    /// The process exit code this outcome maps to.
    pub exit_code: i32,
    /// The answer (exported only with `include_content`).
    pub answer: Option<&'a str>,
    /// Why the turn stopped early.
    pub error: Option<&'a str>,
    /// A short class of that error (`cost_ceiling`, `interrupted`, …).
    pub error_type: &'a str,
}

impl EventSink for TurnTrace<'_> {
    fn emit(&mut self, event: LoopEvent) {
        self.observe("", &event);
        self.inner.emit(event);
    }
}

/// Ends a scope: its tool and compaction spans, then its own.
fn end_scope(scope: Scope, unfinished: &'static str) {
    for (_, cx) in scope.tools {
        cx.span().set_status(Status::error("unfinished"));
        cx.span().end();
    }
    if let Some(cx) = scope.compaction {
        cx.span().end();
    }
    if !unfinished.is_empty() {
        scope.cx.span().add_event(unfinished, Vec::new());
    }
    scope.cx.span().end();
}

/// A short class of a request's error, for `error.type`.
fn error_type(error: &str) -> &'static str {
    let lower = error.to_ascii_lowercase();
    if lower.contains("ceiling") {
        "ceiling"
    } else if lower == "cancelled" {
        "cancelled"
    } else if lower.contains("429") || lower.contains("rate limit") {
        "rate_limited"
    } else if lower.contains("context length") {
        "context_length"
    } else {
        "provider_error"
    }
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
