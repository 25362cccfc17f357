//! What a turn did ([`TurnOutcome`]) and why it stopped early ([`TurnError`]), with the
//! exit code and telemetry class of each ending.

use pith_core::{ChildRun, RequestReport, Usage};
use pith_providers::{LoopError, TurnSummary};
use thiserror::Error;

use crate::exit::ExitCode;
use crate::output_schema::SchemaMismatch;
use crate::recording::{CompactionNote, CompactionTotals};

/// Why a turn did not complete.
#[derive(Debug, Clone, Error)]
pub enum TurnError {
    /// The loop stopped: provider failure, cancellation, `--max-turns`.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// The transcript could not be written: the user message (then nothing was sent) or
    /// the end of the turn.
    #[error("{0}")]
    Record(String),
    /// A `UserPromptSubmit` hook blocked the prompt: nothing was sent or recorded but the
    /// hook's run.
    #[error("a UserPromptSubmit hook blocked the prompt: {0}")]
    Blocked(String),
    /// The final answer did not match `--output-schema`, even after the one correction
    /// pith asked for.
    #[error("the final answer does not match the output schema, even after one correction: {0}")]
    SchemaNotMet(SchemaMismatch),
}

/// What a turn did.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// The answer: text before an automatic compaction plus text after it.
    pub text: String,
    /// Usage and counts.
    pub summary: TurnSummary,
    /// The part of `summary.usage` the turn's automatic compactions sent to the
    /// compaction model (`[context] compaction_model`), charged at its prices.
    pub compaction_model_usage: Usage,
    /// Compactions persisted during the turn.
    pub compactions: Vec<CompactionNote>,
    /// Why the turn stopped early, if it did.
    pub error: Option<TurnError>,
    /// The end of the turn could not be recorded (reported besides `error`).
    pub record_error: Option<String>,
    /// The child conversations the turn's `task` calls ran, in the order they ended.
    pub children: Vec<ChildRun>,
    /// What compaction did and cost in the turn.
    pub compaction: CompactionTotals,
    /// The final answer as JSON, when the conversation has an output schema and the
    /// answer validated against it.
    pub structured_output: Option<serde_json::Value>,
    /// The turn's model requests (its compactions' included; its subagents' are in their
    /// own outcomes), in order.
    pub requests: Vec<RequestReport>,
}

impl TurnOutcome {
    /// A turn that stopped with `error` before it did anything.
    pub(crate) fn failed(error: TurnError) -> Self {
        Self {
            error: Some(error),
            ..Self::default()
        }
    }

    /// Usage of the turn's own requests plus that of its children.
    pub fn total_usage(&self) -> Usage {
        let mut total = self.summary.usage;
        for child in &self.children {
            total += child.usage;
        }
        total
    }

    /// The ceiling that stopped the turn, if one did.
    pub fn ceiling(&self) -> Option<&pith_core::CeilingReached> {
        match &self.error {
            Some(TurnError::Loop(error)) => crate::ceilings::reached(error),
            _ => None,
        }
    }

    /// Adds what a follow-up turn of the same job did (the output schema's correction).
    pub(crate) fn absorb(&mut self, next: TurnOutcome) {
        if !self.text.is_empty() && !next.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&next.text);
        self.summary.usage += next.summary.usage;
        self.compaction_model_usage += next.compaction_model_usage;
        self.summary.requests += next.summary.requests;
        self.summary.tool_calls += next.summary.tool_calls;
        self.compactions.extend(next.compactions);
        self.compaction += next.compaction;
        self.children.extend(next.children);
        self.requests.extend(next.requests);
        self.error = next.error;
        self.record_error = next.record_error.or(self.record_error.take());
    }

    /// A short class of why the turn stopped early (`""` when it did not), as telemetry
    /// reports it.
    pub fn error_kind(&self) -> &'static str {
        match (self.ceiling(), &self.error) {
            (Some(pith_core::CeilingReached::Cost { .. }), _) => "cost_ceiling",
            (Some(pith_core::CeilingReached::Duration { .. }), _) => "time_ceiling",
            (None, Some(TurnError::Loop(LoopError::Cancelled))) => "interrupted",
            (None, Some(TurnError::Loop(LoopError::MaxRequests(_)))) => "max_turns",
            (None, Some(TurnError::Loop(LoopError::ContextTooLarge(_)))) => "context_too_large",
            (None, Some(TurnError::Loop(LoopError::RepeatedCall { .. }))) => "doom_loop",
            (None, Some(TurnError::Loop(_))) => "provider_error",
            (None, Some(TurnError::Record(_))) => "record",
            (None, Some(TurnError::Blocked(_))) => "blocked",
            (None, Some(TurnError::SchemaNotMet(_))) => "output_schema",
            (None, None) if self.record_error.is_some() => "record",
            (None, None) => "",
        }
    }

    /// The exit code of a process whose job was this turn.
    pub fn exit_code(&self) -> ExitCode {
        match self.ceiling() {
            Some(pith_core::CeilingReached::Cost { .. }) => return ExitCode::CostCeiling,
            Some(pith_core::CeilingReached::Duration { .. }) => return ExitCode::TimeCeiling,
            None => {}
        }
        match (&self.error, &self.record_error) {
            (Some(TurnError::Loop(LoopError::Cancelled)), _) => ExitCode::Interrupted,
            (Some(TurnError::Loop(LoopError::ContextTooLarge(_))), _)
            | (
                Some(TurnError::Loop(LoopError::Provider(
                    pith_providers::ProviderError::ContextLengthExceeded { .. },
                ))),
                _,
            ) => ExitCode::ContextTooLarge,
            (Some(TurnError::Loop(LoopError::RepeatedCall { .. })), _) => ExitCode::RepeatedCall,
            (Some(TurnError::SchemaNotMet(_)), _) => ExitCode::SchemaNotMet,
            (Some(_), _) | (None, Some(_)) => ExitCode::Failure,
            (None, None) => ExitCode::Ok,
        }
    }
}
