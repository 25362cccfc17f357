//! `/context`: where the next request's tokens go, as bars with numbers.
//!
//! The figures come from `pith_core` only: thresholds from [`ContextBudget`], the system,
//! tool and total figures from the loop's [`RequestEstimate`], and the per-role split of
//! the messages from `count_message` with the estimator's own counter (images by the
//! provider's formula, `count_image`; returned reasoning, `count_reasoning`). Nothing here
//! computes a threshold.

use pith_agent::{CompactionTotals, PinsView};
use pith_core::context::PauseReason;
use pith_core::thousands;
use pith_core::tokens::{count_image, count_message, count_reasoning};
use pith_core::{ContextBudget, Message, Part, RequestEstimate, Role, TokenCounter};

/// Width of a bar in cells.
pub const BAR_CELLS: usize = 30;

/// The figures `/context` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextFigures {
    /// Thresholds.
    pub budget: ContextBudget,
    /// The loop's estimate of the next request.
    pub estimate: RequestEstimate,
    /// Tokens of user messages (their images excluded).
    pub user: usize,
    /// Tokens of assistant messages (tool calls included, reasoning excluded).
    pub assistant: usize,
    /// Tokens of tool results (their images excluded).
    pub tool_results: usize,
    /// Tokens of MCP tool definitions (the loader and its catalog included), part of
    /// the estimate's tool figure but shown as their own row.
    pub mcp_definitions: usize,
    /// Tokens of the session ledger as the next compaction would carry it, and its
    /// budget (both 0 when the ledger is off). Not part of the next request.
    pub ledger: (usize, usize),
    /// Tokens of the images in any message, by the provider's formula.
    pub images: usize,
    /// Tokens of the reasoning that goes back to the provider (signed thinking,
    /// encrypted reasoning items).
    pub reasoning: usize,
    /// The subagents run in this conversation: what each used in its own context (not
    /// part of the next request; only their reports are).
    pub children: Vec<pith_core::ChildRun>,
    /// What compaction did and cost in this conversation, and that usage's cost in US
    /// dollars when prices are known.
    pub compaction: Option<(CompactionTotals, Option<f64>)>,
    /// The governor's state: paused (why, until), this turn's attempts and ceiling, and
    /// whether the server's usage is believed (and at what factor).
    pub governor: Option<GovernorView>,
    /// The compaction model summaries go to (`provider/model`), with that part of the
    /// summaries' cost when known.
    pub compaction_model: Option<(String, Option<f64>)>,
}

/// What `/context` says about the compaction governor.
#[derive(Debug, Clone, PartialEq)]
pub struct GovernorView {
    /// Paused: why, and the estimate automatic compaction waits for.
    pub paused: Option<(PauseReason, u64)>,
    /// Automatic compactions in the current turn, and the ceiling.
    pub attempts_this_turn: (u32, u32),
    /// Server tokens per counted token.
    pub factor: f64,
    /// The server's usage did not follow a rewrite: not believed.
    pub deaf: bool,
}

impl ContextFigures {
    /// Splits `history` by role with `counter`; images and returned reasoning get rows of
    /// their own.
    pub fn new(
        budget: ContextBudget,
        estimate: RequestEstimate,
        history: &[Message],
        counter: &dyn TokenCounter,
    ) -> Self {
        let (mut user, mut assistant, mut tool_results) = (0, 0, 0);
        let (mut images, mut reasoning) = (0, 0);
        for message in history {
            let (mut own_images, mut own_reasoning) = (0, 0);
            for part in &message.parts {
                match part {
                    Part::Image(image) => own_images += count_image(counter, image),
                    Part::Reasoning(part) => own_reasoning += count_reasoning(counter, part),
                    _ => {}
                }
            }
            images += own_images;
            reasoning += own_reasoning;
            let tokens = count_message(counter, message) - own_images - own_reasoning;
            match message.role {
                Role::User | Role::System => user += tokens,
                Role::Assistant => assistant += tokens,
                Role::Tool => tool_results += tokens,
            }
        }
        Self {
            budget,
            estimate,
            user,
            assistant,
            tool_results,
            mcp_definitions: 0,
            ledger: (0, 0),
            images,
            reasoning,
            children: Vec::new(),
            compaction: None,
            governor: None,
            compaction_model: None,
        }
    }

    /// Shows the compaction model summaries go to, and what they cost there.
    pub fn with_compaction_model(mut self, model: String, cost: Option<f64>) -> Self {
        self.compaction_model = Some((model, cost));
        self
    }

    /// Shows what compaction did and cost so far (`cost`: US dollars, when known).
    pub fn with_compactions(mut self, totals: CompactionTotals, cost: Option<f64>) -> Self {
        self.compaction = Some((totals, cost));
        self
    }

    /// Shows the governor's state.
    pub fn with_governor(mut self, governor: GovernorView) -> Self {
        self.governor = Some(governor);
        self
    }

    /// Lists the subagents run so far, each with the tokens it used in its own context.
    pub fn with_children(mut self, children: &[pith_core::ChildRun]) -> Self {
        self.children = children.to_vec();
        self
    }

    /// Shows the session ledger's size (`tokens` of `budget`) below the rows.
    pub fn with_ledger(mut self, tokens: usize, budget: usize) -> Self {
        self.ledger = (tokens, budget);
        self
    }

    /// Shows `tokens` of the tool definitions as the "MCP definitions" row.
    pub fn with_mcp_definitions(mut self, tokens: usize) -> Self {
        self.mcp_definitions = tokens.min(self.estimate.tools);
        self
    }

    /// The report, one line per entry.
    pub fn lines(&self) -> Vec<String> {
        let total = self.estimate.total as u64;
        let budget = &self.budget;
        let percent = (total * 100)
            .checked_div(budget.input_budget)
            .unwrap_or(100);
        let mut lines = vec![format!(
            "Context: {} / {} tokens of input budget ({percent}%), window {}",
            thousands(total),
            thousands(budget.input_budget),
            thousands(budget.window),
        )];
        let mcp = self.mcp_definitions.min(self.estimate.tools);
        let rows = [
            ("system prompt", self.estimate.system as u64),
            ("tool definitions", (self.estimate.tools - mcp) as u64),
            ("MCP definitions", mcp as u64),
            ("user messages", self.user as u64),
            ("assistant messages", self.assistant as u64),
            ("tool results", self.tool_results as u64),
            ("images", self.images as u64),
            ("returned reasoning", self.reasoning as u64),
        ];
        for (label, value) in rows {
            if label == "MCP definitions" && value == 0 {
                continue;
            }
            lines.push(self.row(label, value, '█'));
        }
        lines.push(self.row("free to auto-compact", budget.room_to_auto(total), '░'));
        lines.push(format!(
            "Automatic compaction at {} tokens (90% of the input budget); micro-compaction at {}.",
            thousands(budget.auto_threshold),
            thousands(budget.micro_threshold),
        ));
        let (ledger, ledger_budget) = self.ledger;
        if ledger_budget > 0 {
            lines.push(format!(
                "Session ledger: {} of {} tokens, carried verbatim by the next compaction (/ledger shows it).",
                thousands(ledger as u64),
                thousands(ledger_budget as u64),
            ));
        }
        if !self.children.is_empty() {
            let total: u64 = self
                .children
                .iter()
                .map(|c| c.usage.input_tokens + c.usage.output_tokens)
                .sum();
            lines.push(format!(
                "Subagents: {} run, {} tokens in their own contexts (only their reports are above):",
                self.children.len(),
                thousands(total)
            ));
            for child in &self.children {
                lines.push(format!(
                    "  {:<12} {:>9} tokens  {} tool calls  session {}",
                    child.agent,
                    thousands(child.usage.input_tokens + child.usage.output_tokens),
                    child.tool_calls,
                    child.session_id
                ));
            }
        }
        if let Some((totals, cost)) = &self.compaction {
            lines.push(compaction_line(totals, *cost));
            if let Some((model, cost)) = &self.compaction_model {
                lines.push(compaction_model_line(model, totals, *cost));
            }
        }
        if let Some(governor) = &self.governor {
            lines.extend(governor_lines(governor));
        }
        if self.estimate.anchored_on_reported_usage {
            lines.push(
                "The total is anchored on the usage the provider reported; the rows are local counts."
                    .to_owned(),
            );
        }
        lines
    }

    fn row(&self, label: &str, value: u64, fill: char) -> String {
        format!(
            "  {label:<22}{} {:>9}",
            bar(value, self.budget.input_budget, fill),
            thousands(value)
        )
    }
}

/// `checkpoints: …` — the size of this project's checkpoint store, or that it is off.
pub fn checkpoints_line(store_bytes: Option<u64>) -> String {
    match store_bytes {
        Some(bytes) => format!(
            "checkpoints: {} for this project (/rewind lists the turns)",
            pith_core::human_bytes(bytes)
        ),
        None => "checkpoints: off ([checkpoints] enabled = false)".to_owned(),
    }
}

/// `pins: …` and one line per pin with its tokens, or that pins are off; what `/pin`
/// without an argument and `/context` show.
pub fn pins_lines(view: &PinsView) -> Vec<String> {
    if view.budget_tokens == 0 {
        return vec!["pins: off ([context] pins_percent = 0)".to_owned()];
    }
    if view.rows.is_empty() {
        return vec![format!(
            "pins: none (budget {} tokens; /pin PATH or /pin \"text\" keeps one whole through every compaction)",
            thousands(view.budget_tokens as u64)
        )];
    }
    let mut lines = vec![format!(
        "pins: {} of {} tokens",
        thousands(view.tokens as u64),
        thousands(view.budget_tokens as u64)
    )];
    for row in &view.rows {
        let size = row.tokens.map_or_else(
            || "unreadable".to_owned(),
            |t| format!("{} tokens", thousands(t as u64)),
        );
        let status = if row.carried {
            ""
        } else {
            "  NOT CARRIED (over the budget or unreadable)"
        };
        lines.push(format!(
            "  {}. {}  {size}{status}",
            row.number,
            row.pin.label()
        ));
    }
    lines
}

/// `Compactions: …` — what compaction did and cost.
fn compaction_line(totals: &CompactionTotals, cost: Option<f64>) -> String {
    let cost = cost.map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}"));
    // Summaries prepared in the background: how many, and how many were never used.
    let prepared = if totals.prepared > 0 {
        format!(
            "; {} prepared in the background, {} never used",
            totals.prepared, totals.unused
        )
    } else {
        String::new()
    };
    format!(
        "Compactions: {} automatic ({} applied, {} failed, {} cancelled{prepared}), {} micro, {} fitted to the window; {} summary requests, {} tokens in / {} out, {cost}.",
        totals.llm_attempts,
        totals.applied,
        totals.failed,
        totals.cancelled,
        totals.micro,
        totals.overflow_fits,
        totals.summary_requests,
        thousands(totals.usage.input_tokens),
        thousands(totals.usage.output_tokens),
    )
}

/// `Summaries go to …` — the compaction model's part of the summaries.
fn compaction_model_line(model: &str, totals: &CompactionTotals, cost: Option<f64>) -> String {
    let cost = cost.map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}"));
    let usage = &totals.compaction_model_usage;
    format!(
        "Summaries go to {model} ([context] compaction_model; no prompt cache there): {} tokens in / {} out of the above, {cost}.",
        thousands(usage.input_tokens),
        thousands(usage.output_tokens),
    )
}

/// The governor's lines: paused or not, this turn's ceiling, the server's usage.
fn governor_lines(governor: &GovernorView) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some((reason, until)) = &governor.paused {
        lines.push(format!(
            "Automatic compaction is paused ({}) until the context reaches {} tokens: {}.",
            reason.label(),
            thousands(*until),
            reason.describe()
        ));
    }
    let (attempts, ceiling) = governor.attempts_this_turn;
    lines.push(format!(
        "This turn: {attempts} of at most {ceiling} automatic compactions (max_auto_compactions_per_turn)."
    ));
    lines.push(if governor.deaf {
        "The server's usage reports are not believed (they did not follow a compaction): the figures are pith's own count.".to_owned()
    } else {
        format!(
            "The server's tokens are taken as {:.2}× pith's count (from its usage reports within 0.5×–2×).",
            governor.factor
        )
    });
    lines
}

/// A bar of [`BAR_CELLS`] cells, `value / scale` of it filled (any non-zero value shows at
/// least one cell).
pub fn bar(value: u64, scale: u64, fill: char) -> String {
    let cells = BAR_CELLS as u64;
    let filled = if scale == 0 {
        cells
    } else {
        (value.saturating_mul(cells).div_ceil(scale)).min(cells)
    } as usize;
    let mut out: String = std::iter::repeat_n(fill, filled).collect();
    out.extend(std::iter::repeat_n('·', BAR_CELLS - filled));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_line_gives_the_store_size_or_says_off() {
        assert_eq!(
            checkpoints_line(Some(12_900_000)),
            "checkpoints: 12.3 MiB for this project (/rewind lists the turns)"
        );
        assert!(checkpoints_line(None).starts_with("checkpoints: off"));
    }
    use pith_core::{BpeCounter, Encoding};

    #[test]
    fn bars_scale_to_the_input_budget() {
        assert_eq!(bar(0, 100, '█'), "·".repeat(BAR_CELLS));
        assert_eq!(bar(100, 100, '█'), "█".repeat(BAR_CELLS));
        assert_eq!(
            bar(1, 1_000_000, '█').chars().filter(|c| *c == '█').count(),
            1
        );
        assert_eq!(
            bar(500, 100, '█'),
            "█".repeat(BAR_CELLS),
            "overflow is capped"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }

    #[test]
    fn the_report_splits_messages_by_role_and_uses_the_budget_thresholds() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let history = vec![
            Message::user("please read the file"),
            Message::assistant("reading"),
            Message::tool_result("c1", "lorem ipsum ".repeat(50), false),
        ];
        let budget = ContextBudget::for_window(32_768);
        let estimate = RequestEstimate {
            system: 100,
            tools: 200,
            messages: 900,
            total: 1_210,
            anchored_on_reported_usage: false,
            counted: 1_210,
            upper_bound: false,
        };
        let figures = ContextFigures::new(budget, estimate, &history, &counter);
        assert!(!figures.lines().join("\n").contains("Session ledger"));
        let figures = figures.with_ledger(321, 2_867);
        assert!(figures.tool_results > figures.user, "{figures:?}");
        assert!(figures.user > 0 && figures.assistant > 0);
        let report = figures.lines().join("\n");
        assert!(report.contains("1,210 / 28,672"), "{report}");
        assert!(
            report.contains("Session ledger: 321 of 2,867 tokens"),
            "{report}"
        );
        assert!(report.contains("system prompt"), "{report}");
        assert!(report.contains("tool definitions"), "{report}");
        assert!(report.contains("tool results"), "{report}");
        assert!(!report.contains("MCP definitions"), "no row without MCP");
        let with_mcp = figures.clone().with_mcp_definitions(150).lines().join("\n");
        let row = |label: &str| {
            with_mcp
                .lines()
                .find(|l| l.trim_start().starts_with(label))
                .map(|l| l.rsplit(' ').next().unwrap_or("").to_owned())
        };
        assert_eq!(row("MCP definitions").as_deref(), Some("150"), "{with_mcp}");
        assert_eq!(row("tool definitions").as_deref(), Some("50"), "{with_mcp}");
        let free = thousands(budget.room_to_auto(1_210));
        let free_row = report
            .lines()
            .find(|line| line.trim_start().starts_with("free to auto-compact"))
            .expect("a free-space row");
        assert!(
            free_row.ends_with(&free),
            "the free space must be the budget's room to the threshold: {free_row}"
        );
        assert!(
            report.contains(&thousands(budget.auto_threshold)),
            "{report}"
        );
        assert!(
            !report.contains("Subagents"),
            "no subagent lines without one"
        );
        let child = pith_core::ChildRun {
            session_id: "0193-kid".into(),
            agent: "explore".into(),
            model: "p/m".into(),
            usage: pith_core::Usage {
                input_tokens: 20_000,
                output_tokens: 500,
                ..Default::default()
            },
            requests: 21,
            tool_calls: 20,
        };
        let with_children = figures.with_children(&[child]).lines().join("\n");
        assert!(
            with_children.contains("Subagents: 1 run, 20,500 tokens in their own contexts"),
            "{with_children}"
        );
        assert!(
            with_children
                .contains("explore         20,500 tokens  20 tool calls  session 0193-kid"),
            "{with_children}"
        );
    }

    #[test]
    fn images_count_by_the_provider_formula_in_a_row_of_their_own() {
        use pith_core::{Image, ImageFormula};
        let counter =
            BpeCounter::new(Encoding::O200kBase).with_image_formula(ImageFormula::Anthropic);
        let mut message = Message::user("what is in @shot.png?");
        let text_only = count_message(&counter, &message);
        message.parts.push(Part::Image(Image {
            path: "shot.png".into(),
            media_type: "image/png".into(),
            width: 1092,
            height: 1092,
            data: String::new(),
        }));
        let budget = ContextBudget::for_window(200_000);
        let estimate = RequestEstimate {
            system: 0,
            tools: 0,
            messages: 0,
            total: 0,
            anchored_on_reported_usage: false,
            counted: 0,
            upper_bound: false,
        };
        let figures = ContextFigures::new(budget, estimate, &[message], &counter);
        // Anthropic: 1092 × 1092 / 750 = 1,590 tokens, plus the part's framing.
        assert_eq!(
            figures.images,
            1_590 + pith_core::tokens::TOOL_PART_FRAMING_TOKENS
        );
        assert_eq!(figures.user, text_only, "the image is not counted twice");
        let report = figures.lines().join("\n");
        let row = report
            .lines()
            .find(|line| line.trim_start().starts_with("images"))
            .expect("an images row");
        assert!(row.ends_with("1,598"), "{row}");
    }

    #[test]
    fn the_compactions_their_cost_and_the_governor_are_shown() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let budget = ContextBudget::for_window(32_000);
        let figures = ContextFigures::new(budget, RequestEstimate::default(), &[], &counter)
            .with_compactions(
                CompactionTotals {
                    llm_attempts: 3,
                    applied: 2,
                    failed: 1,
                    overflow_fits: 1,
                    summary_requests: 3,
                    usage: pith_core::Usage {
                        input_tokens: 61_000,
                        output_tokens: 2_400,
                        ..Default::default()
                    },
                    ..Default::default()
                },
                Some(0.2191),
            )
            .with_governor(GovernorView {
                paused: Some((PauseReason::FreedTooLittle { freed: 900 }, 24_500)),
                attempts_this_turn: (1, 2),
                factor: 1.18,
                deaf: false,
            });
        let report = figures.lines().join("\n");
        assert!(
            report.contains("Compactions: 3 automatic (2 applied, 1 failed, 0 cancelled), 0 micro, 1 fitted to the window; 3 summary requests, 61,000 tokens in / 2,400 out, $0.2191."),
            "{report}"
        );
        let prepared = ContextFigures::new(budget, RequestEstimate::default(), &[], &counter)
            .with_compactions(
                CompactionTotals {
                    llm_attempts: 2,
                    applied: 1,
                    prepared: 2,
                    unused: 1,
                    summary_requests: 2,
                    ..Default::default()
                },
                None,
            )
            .lines()
            .join("\n");
        assert!(
            prepared.contains(
                "Compactions: 2 automatic (1 applied, 0 failed, 0 cancelled; 2 prepared in the background, 1 never used), 0 micro"
            ),
            "{prepared}"
        );
        assert!(!report.contains("Summaries go to"), "{report}");
        let elsewhere = figures
            .clone()
            .with_compactions(
                CompactionTotals {
                    compaction_model_usage: pith_core::Usage {
                        input_tokens: 40_000,
                        output_tokens: 1_500,
                        ..Default::default()
                    },
                    ..Default::default()
                },
                None,
            )
            .with_compaction_model("openai/gpt-5-mini".into(), Some(0.013))
            .lines()
            .join("\n");
        assert!(
            elsewhere.contains("Summaries go to openai/gpt-5-mini ([context] compaction_model; no prompt cache there): 40,000 tokens in / 1,500 out of the above, $0.0130."),
            "{elsewhere}"
        );
        assert!(
            report.contains("Automatic compaction is paused (freed too little) until the context reaches 24,500 tokens"),
            "{report}"
        );
        assert!(report.contains("This turn: 1 of at most 2 automatic compactions"));
        assert!(report.contains("taken as 1.18× pith's count"), "{report}");
        let deaf = figures.with_governor(GovernorView {
            paused: None,
            attempts_this_turn: (0, 2),
            factor: 1.0,
            deaf: true,
        });
        let report = deaf.lines().join("\n");
        assert!(report.contains("are not believed"), "{report}");
        assert!(!report.contains("is paused"));
    }
}
