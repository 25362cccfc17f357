//! What a session spent: the one definition of a session's usage and cost, read from its
//! records. Every front-end's figure — `usage_update.cost` of `pith acp` (live, and
//! after `session/load`), `/context`, `pith sessions`, the JSON result of `pith run` —
//! is this one, so they agree with each other and with what was billed.
//!
//! The rules (docs/session-format.md, "Usage"):
//!
//! - each record's usage counts its own requests, and no request is in two records:
//!   `compaction_applied.usage` the summary requests of that compaction (automatic or
//!   manual), `assistant_turn.usage` every other request of the part of the turn it
//!   closes (the conversation's requests, and the summaries of compactions that failed
//!   or were cancelled); transcripts of pith 0.1, whose `assistant_turn` after an
//!   automatic compaction also held that compaction's summary, are read by their rule
//!   (an automatic compaction's usage is not counted again);
//! - a subagent's requests are in its own session; the parent counts them once, from the
//!   `child_session` of the `task` call's result;
//! - each part is priced at the model it went to: the session's, from `session_started`,
//!   until a `model_switched` record, a child's own, and a compaction model's
//!   (`compaction_applied.model`, `assistant_turn.compaction_model_usage`: summaries
//!   sent to `[context] compaction_model`; a record without them is the session's model);
//! - every record counts, including turns a conversation rewind later left off the line
//!   (they were billed), except the records a fork copied from its source
//!   (`copied_through_seq`), which are the source's.

use std::collections::BTreeMap;

use pith_core::{usage_cost, ChildRun, ModelUsage, Pricing, Usage};

use crate::event::{CompactionTrigger, Event, Record};

/// A session's usage, by the model it went to (`provider/model`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSpend {
    by_model: BTreeMap<String, Usage>,
}

impl SessionSpend {
    /// The spend of the session whose records are `records` (in order).
    pub fn from_records(records: &[Record]) -> Self {
        let mut fold = SpendFold::default();
        for record in records {
            match &record.event {
                Event::SessionStarted {
                    provider,
                    model,
                    copied_through_seq,
                    pith_version,
                    ..
                } => fold.started(provider, model, *copied_through_seq, pith_version),
                Event::ModelSwitched { provider, model } => fold.switched(provider, model),
                Event::AssistantTurn {
                    usage,
                    messages,
                    compaction_model_usage,
                    ..
                } => {
                    let children = messages
                        .iter()
                        .flat_map(|message| message.tool_results())
                        .filter_map(|result| result.child_session.as_ref());
                    fold.turn(record.seq, *usage, children);
                    fold.compaction_model_usage(record.seq, compaction_model_usage.as_ref());
                }
                Event::CompactionApplied {
                    trigger,
                    usage,
                    model,
                    ..
                } => fold.compaction(record.seq, *trigger, *usage, model.as_deref()),
                _ => {}
            }
        }
        fold.finish()
    }

    /// Adds `usage` of requests sent to `model` (`provider/model`).
    pub fn add(&mut self, model: &str, usage: Usage) {
        if usage == Usage::default() {
            return;
        }
        *self.by_model.entry(model.to_owned()).or_default() += usage;
    }

    /// Adds everything `other` spent.
    pub fn add_all(&mut self, other: &SessionSpend) {
        for (model, usage) in &other.by_model {
            self.add(model, *usage);
        }
    }

    /// The usage by model, in model order.
    pub fn by_model(&self) -> impl Iterator<Item = (&str, &Usage)> {
        self.by_model
            .iter()
            .map(|(model, usage)| (model.as_str(), usage))
    }

    /// All the usage together.
    pub fn total(&self) -> Usage {
        let mut total = Usage::default();
        for usage in self.by_model.values() {
            total += *usage;
        }
        total
    }

    /// The cost in US dollars: each model's part at its price (`prices` of
    /// `provider/model`), or at the cost the provider reported. `None` when a part has
    /// neither; `Some(0.0)` when nothing was spent.
    pub fn cost(&self, prices: &dyn Fn(&str) -> Option<Pricing>) -> Option<f64> {
        self.by_model.iter().try_fold(0.0, |total, (model, usage)| {
            Some(total + usage_cost(usage, prices(model).as_ref())?)
        })
    }

    /// The share of input tokens served from the provider's prompt cache; `None` before
    /// any input.
    pub fn cache_hit_rate(&self) -> Option<f64> {
        let total = self.total();
        (total.input_tokens > 0).then(|| {
            total.cached_input_tokens.min(total.input_tokens) as f64 / total.input_tokens as f64
        })
    }
}

/// Builds a [`SessionSpend`] one record at a time, by the rules of the module docs: what
/// [`SessionSpend::from_records`] does with whole records, and what the session listing
/// does with the few fields it decodes of each line.
#[derive(Debug, Default)]
pub struct SpendFold {
    spend: SessionSpend,
    /// The model of the records now (`provider/model`).
    model: String,
    /// Records up to this seq were copied from a fork's source.
    copied_through: u64,
    /// A transcript of pith 0.1 (see the module docs).
    legacy: bool,
}

impl SpendFold {
    /// `session_started`.
    pub fn started(
        &mut self,
        provider: &str,
        model: &str,
        copied_through_seq: Option<u64>,
        pith_version: &str,
    ) {
        self.model = spec(provider, model);
        self.copied_through = copied_through_seq.unwrap_or(0);
        self.legacy = pith_version.starts_with("0.1.");
    }

    /// `model_switched`.
    pub fn switched(&mut self, provider: &str, model: &str) {
        self.model = spec(provider, model);
    }

    /// `assistant_turn` number `seq`: its usage, and the subagents its `task` results
    /// name.
    pub fn turn<'a>(
        &mut self,
        seq: u64,
        usage: Option<Usage>,
        children: impl Iterator<Item = &'a ChildRun>,
    ) {
        if seq <= self.copied_through {
            return;
        }
        if let Some(usage) = usage {
            self.spend.add(&self.model, usage);
        }
        for child in children {
            self.spend.add(&child.model, child.usage);
        }
    }

    /// The `compaction_model_usage` of `assistant_turn` number `seq`.
    pub fn compaction_model_usage(&mut self, seq: u64, spent: Option<&ModelUsage>) {
        if let Some(spent) = spent.filter(|_| seq > self.copied_through) {
            self.spend.add(&spent.model, spent.usage);
        }
    }

    /// `compaction_applied` number `seq`, whose summary went to `model` (a compaction
    /// model's `provider/model`; `None`: the session's model).
    pub fn compaction(
        &mut self,
        seq: u64,
        trigger: CompactionTrigger,
        usage: Option<Usage>,
        model: Option<&str>,
    ) {
        if seq <= self.copied_through || (self.legacy && trigger == CompactionTrigger::Auto) {
            return;
        }
        if let Some(usage) = usage {
            self.spend.add(model.unwrap_or(&self.model), usage);
        }
    }

    /// The spend of the records seen.
    pub fn finish(self) -> SessionSpend {
        self.spend
    }
}

/// `provider/model`.
fn spec(provider: &str, model: &str) -> String {
    format!("{provider}/{model}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{Message, Part, ToolResult};

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            ts: String::new(),
            event,
        }
    }

    fn started(copied_through_seq: Option<u64>) -> Event {
        started_by("0.2.0", copied_through_seq)
    }

    fn started_by(version: &str, copied_through_seq: Option<u64>) -> Event {
        Event::SessionStarted {
            session_id: "s".into(),
            cwd: "/w".into(),
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            pith_version: version.into(),
            parent_session: None,
            forked_from: None,
            forked_at_seq: None,
            copied_through_seq,
        }
    }

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            cached_input_tokens: cached,
            output_tokens: output,
            ..Usage::default()
        }
    }

    fn turn(usage: Option<Usage>, messages: Vec<Message>) -> Event {
        Event::AssistantTurn {
            messages,
            items: Vec::new(),
            usage,
            interrupted: false,
            error: None,
            compaction_model_usage: None,
        }
    }

    fn compaction(trigger: CompactionTrigger, spent: Usage) -> Event {
        Event::compaction(trigger, &[], "summary", 100, 10, Some(spent))
    }

    fn child_result(model: &str, spent: Usage) -> Message {
        let mut result = ToolResult::new("call_1", "report", false);
        result.child_session = Some(ChildRun {
            session_id: "child".into(),
            agent: "explore".into(),
            model: model.into(),
            usage: spent,
            requests: 1,
            tool_calls: 0,
        });
        Message {
            role: pith_core::Role::Tool,
            parts: vec![Part::ToolResult(result)],
        }
    }

    fn prices(model: &str) -> Option<Pricing> {
        match model {
            "anthropic/claude-sonnet-4-5" => Some(Pricing {
                input: 3.0,
                cached_input: 0.3,
                output: 15.0,
                cache_write: None,
            }),
            "anthropic/claude-haiku-4-5" => Some(Pricing {
                input: 1.0,
                cached_input: 0.1,
                output: 5.0,
                cache_write: None,
            }),
            _ => None,
        }
    }

    #[test]
    fn turns_manual_compactions_and_children_count_once_each_at_their_model() {
        let records = vec![
            record(1, started(None)),
            record(2, Event::user_text("go")),
            // The turn's checkpoint before an automatic compaction, then the compaction
            // with its own summary request.
            record(3, turn(Some(usage(100, 0, 50)), Vec::new())),
            record(4, compaction(CompactionTrigger::Auto, usage(900, 0, 50))),
            record(
                5,
                turn(
                    Some(usage(2_000, 1_000, 10)),
                    vec![child_result(
                        "anthropic/claude-haiku-4-5",
                        usage(500, 0, 20),
                    )],
                ),
            ),
            record(6, compaction(CompactionTrigger::Manual, usage(300, 0, 30))),
            record(
                7,
                Event::ModelSwitched {
                    provider: "anthropic".into(),
                    model: "claude-haiku-4-5".into(),
                },
            ),
            record(8, turn(Some(usage(100, 0, 1)), Vec::new())),
        ];
        let spend = SessionSpend::from_records(&records);
        let by_model: Vec<(&str, &Usage)> = spend.by_model().collect();
        assert_eq!(
            by_model,
            vec![
                ("anthropic/claude-haiku-4-5", &usage(600, 0, 21)),
                ("anthropic/claude-sonnet-4-5", &usage(3_300, 1_000, 140)),
            ]
        );
        // Sonnet: 2,300 uncached at $3 + 1,000 cached at $0.3 + 140 out at $15 (per M);
        // Haiku: 600 at $1 + 21 at $5.
        let expected = (2_300.0 * 3.0 + 1_000.0 * 0.3 + 140.0 * 15.0 + 600.0 + 21.0 * 5.0) / 1e6;
        let cost = spend.cost(&prices).unwrap();
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
        assert_eq!(spend.cache_hit_rate(), Some(1_000.0 / 3_900.0));
    }

    #[test]
    fn a_compaction_models_summaries_are_priced_at_its_model_and_older_records_at_the_sessions() {
        let haiku = "anthropic/claude-haiku-4-5";
        let mut applied = compaction(CompactionTrigger::Auto, usage(10_000, 0, 500));
        if let Event::CompactionApplied { model, .. } = &mut applied {
            *model = Some(haiku.to_owned());
        }
        let mut unused = turn(Some(usage(1_000, 800, 10)), Vec::new());
        if let Event::AssistantTurn {
            compaction_model_usage,
            ..
        } = &mut unused
        {
            *compaction_model_usage = Some(ModelUsage {
                model: haiku.to_owned(),
                usage: usage(9_000, 0, 400),
            });
        }
        let records = vec![
            record(1, started(None)),
            record(2, Event::user_text("go")),
            record(3, turn(Some(usage(100, 0, 50)), Vec::new())),
            record(4, applied),
            record(5, unused),
            // A record without the field (an older pith): the session's model.
            record(6, compaction(CompactionTrigger::Manual, usage(300, 0, 30))),
        ];
        let spend = SessionSpend::from_records(&records);
        let by_model: Vec<(&str, &Usage)> = spend.by_model().collect();
        assert_eq!(
            by_model,
            vec![
                (haiku, &usage(19_000, 0, 900)),
                ("anthropic/claude-sonnet-4-5", &usage(1_400, 800, 90)),
            ]
        );
        let expected = (19_000.0 + 900.0 * 5.0 + 600.0 * 3.0 + 800.0 * 0.3 + 90.0 * 15.0) / 1e6;
        let cost = spend.cost(&prices).unwrap();
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    }

    #[test]
    fn a_transcript_of_pith_0_1_counts_an_automatic_compaction_once() {
        // 0.1 wrote the summary's usage on the compaction record and again in the
        // assistant_turn after it.
        let records = vec![
            record(1, started_by("0.1.0", None)),
            record(2, Event::user_text("go")),
            record(3, turn(Some(usage(100, 0, 50)), Vec::new())),
            record(4, compaction(CompactionTrigger::Auto, usage(900, 0, 50))),
            record(5, turn(Some(usage(1_900, 0, 60)), Vec::new())),
            record(6, compaction(CompactionTrigger::Manual, usage(300, 0, 30))),
        ];
        assert_eq!(
            SessionSpend::from_records(&records).total(),
            usage(2_300, 0, 140)
        );
    }

    #[test]
    fn a_fork_does_not_count_what_it_copied_from_its_source() {
        let records = vec![
            record(1, started(Some(3))),
            record(2, Event::user_text("copied")),
            record(3, turn(Some(usage(1_000, 0, 100)), Vec::new())),
            record(4, Event::user_text("the fork's own")),
            record(5, turn(Some(usage(10, 0, 1)), Vec::new())),
        ];
        assert_eq!(
            SessionSpend::from_records(&records).total(),
            usage(10, 0, 1)
        );
    }

    #[test]
    fn a_model_without_prices_makes_the_cost_unknown_unless_the_provider_reported_it() {
        let mut spend = SessionSpend::default();
        spend.add("local/smol", usage(10, 0, 1));
        assert_eq!(spend.cost(&prices), None);
        let mut reported = SessionSpend::default();
        reported.add(
            "openrouter/x",
            Usage {
                provider_cost_nanousd: 2_500_000,
                ..usage(10, 0, 1)
            },
        );
        assert_eq!(reported.cost(&prices), Some(0.0025));
        assert_eq!(SessionSpend::default().cost(&prices), Some(0.0));
        assert_eq!(SessionSpend::default().cache_hit_rate(), None);
    }
}
