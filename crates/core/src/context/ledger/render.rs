//! The ledger as the model reads it: one `<session_ledger>` block within a hard token
//! budget.
//!
//! Sections come in a stable order (User messages, Files, Commands, Tests, Spills),
//! entries newest first. When everything does not fit, the budget is shared out by
//! water-filling: every section that needs less than an equal share gets all it needs,
//! the others split the rest equally (user messages never more than their own cap).
//! Within its share a section keeps its newest entries; the User messages section also
//! keeps its oldest one, the session's first message, which usually states the task and
//! its constraints (the messages just after it are the ones left out). A user message
//! that does not fit whole keeps its head and tail around `[N tokens omitted]`; whatever
//! is left out is counted in a closing `[N older … omitted]` line, never dropped
//! silently.
//!
//! The Plan (the model's latest `update_plan`, see [`crate::protocol::plan`]) comes
//! first and is not shared out: it is carried verbatim, and the other sections share what
//! it leaves. Only a plan larger than half the whole budget ([`plan_block`]; possible only
//! with a tiny window, since the tool caps a plan at about 2,000 tokens) is cut: its done
//! steps are counted instead of listed, and what still does not fit keeps its head and
//! tail.
//!
//! Every render has two forms with the same cuts: the block a replacement carries, and
//! the one a summary request shows. The summary request's history already holds every
//! user message (verbatim, or in the previous compaction's ledger), so there the user
//! messages are listed by number with how the ledger keeps them (whole, or head and
//! tail) instead of being quoted a second time as uncached input.

use crate::context::summary::head_tail_tokens;
use crate::context::tokens::TokenCounter;
use crate::protocol::effect::FileAction;
use crate::protocol::plan::{step_line, Plan, PlanStatus};

use super::entries::{CommandEntry, FileEntry, FileProbe, UserEntry};
use super::fold::Ledger;
use super::reading::cut_chars;

/// Opening tag of the rendered ledger.
pub const LEDGER_OPEN: &str = "<session_ledger>";
/// Closing tag of the rendered ledger.
pub const LEDGER_CLOSE: &str = "</session_ledger>";
/// The line under the opening tag.
const LEDGER_INTRO: &str = "Facts pith recorded from the whole session, exact and \
newest first (not written by the model):";

/// Recent commands always listed (when they fit).
const RECENT_COMMANDS: usize = 10;
/// Older failing commands listed beyond the recent ones.
const OLDER_FAILING_COMMANDS: usize = 10;
/// Failing tests of one run shown with their error line; the rest by id only.
const TESTS_WITH_ERRORS: usize = 20;
/// Tokens kept for a section's closing `[N older … omitted]` line.
const OMITTED_LINE_TOKENS: usize = 12;
/// Smallest share worth cutting a user message into.
const MIN_CUT_TOKENS: usize = 80;
/// Fewest tokens a line of the Files section takes (`- a.rs: read (turn 1)`).
const MIN_FILE_LINE_TOKENS: usize = 8;

/// How many tokens the rendered ledger may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerBudget {
    /// The whole block.
    pub total_tokens: usize,
    /// The user messages section at most.
    pub user_messages_tokens: usize,
}

impl LedgerBudget {
    /// The budget for an input budget of `input_budget` tokens: `percent`% of it, and
    /// for user messages the smaller of `user_messages_max_tokens` and that.
    pub fn for_input_budget(input_budget: u64, percent: u8, user_messages_max_tokens: u64) -> Self {
        let total = input_budget.saturating_mul(u64::from(percent)) / 100;
        Self {
            total_tokens: usize::try_from(total).unwrap_or(usize::MAX),
            user_messages_tokens: usize::try_from(total.min(user_messages_max_tokens))
                .unwrap_or(usize::MAX),
        }
    }
}

/// A rendered ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedLedger {
    /// The `<session_ledger>` block.
    pub text: String,
    /// Its tokens.
    pub tokens: usize,
    /// Entries left out for the budget (over all sections).
    pub omitted: usize,
    /// The block as a summary request shows it: the same sections and cuts, the user
    /// messages listed by number and size rather than quoted (the request's history
    /// holds their text).
    pub summary_request_text: String,
}

/// How the user messages appear in an assembled block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UserMessagesForm {
    /// Quoted (whole, or head and tail): the replacement's block.
    Quoted,
    /// One line each, saying how the replacement keeps it: the summary request's block.
    Listed,
}

/// One section before budgeting.
struct Section {
    heading: String,
    /// Entries newest first, with their tokens.
    entries: Vec<(String, usize)>,
    /// What an omitted entry is called in the closing line (`older files`).
    omitted_noun: &'static str,
    /// Whether an entry that does not fit may be cut (user messages).
    cuttable: bool,
    /// Whether the oldest entry is kept when older ones must be left out (user
    /// messages: the first one usually states the task).
    keep_oldest: bool,
    /// Most tokens this section may take.
    cap: usize,
    /// Entries counted as omitted before budgeting.
    omitted_before: usize,
    /// The heading in the summary request's form, when it differs (user messages).
    listed_heading: Option<String>,
}

impl Section {
    fn demand(&self, counter: &dyn TokenCounter) -> usize {
        let entries: usize = self.entries.iter().map(|(_, t)| t + 1).sum();
        // The heading, the entries and room for the closing `[N … omitted]` line.
        (counter.count(&self.heading) + 1 + entries + OMITTED_LINE_TOKENS).min(self.cap)
    }
}

/// Renders `ledger` within `budget`. `exclude_latest_user` leaves the latest user
/// message out (the replacement quotes it right after the ledger). `probe` tells which
/// files changed on disk since the model last saw them. `None` when there is nothing to
/// show or no budget.
pub fn render(
    ledger: &Ledger,
    budget: LedgerBudget,
    exclude_latest_user: bool,
    counter: &dyn TokenCounter,
    probe: Option<&dyn FileProbe>,
) -> Option<RenderedLedger> {
    if ledger.is_empty() || budget.total_tokens == 0 {
        return None;
    }
    let sections = sections(ledger, budget, exclude_latest_user, counter, probe);
    let plan = plan_block(ledger.plan(), budget.total_tokens / 2, counter);
    if sections.iter().all(|s| s.entries.is_empty()) && plan.is_empty() {
        return None;
    }
    let wrapper = format!("{LEDGER_OPEN}\n{LEDGER_INTRO}\n{plan}{LEDGER_CLOSE}");
    let available = budget
        .total_tokens
        .saturating_sub(counter.count(&wrapper) + 2);
    let mut shares = water_fill(&sections, available, counter);
    let assemble = |shares: &[usize], form| assemble(&plan, &sections, shares, counter, form);
    // Entry counts are summed per entry: the joined text can differ by a few tokens.
    // Shrink the largest share until the whole block fits.
    for _ in 0..32 {
        let (text, omitted) = assemble(&shares, UserMessagesForm::Quoted);
        let tokens = counter.count(&text);
        if tokens <= budget.total_tokens {
            let (summary_request_text, _) = assemble(&shares, UserMessagesForm::Listed);
            return Some(RenderedLedger {
                text,
                tokens,
                omitted,
                summary_request_text,
            });
        }
        let excess = tokens - budget.total_tokens;
        let Some(largest) = (0..shares.len()).max_by_key(|&i| shares[i]) else {
            break;
        };
        shares[largest] = shares[largest].saturating_sub(excess + 8);
    }
    // Still too large (a budget smaller than the headings): the block's head and tail.
    let (text, omitted) = assemble(&shares, UserMessagesForm::Quoted);
    let text = head_tail_tokens(counter, &text, budget.total_tokens.saturating_sub(8));
    let (listed, _) = assemble(&shares, UserMessagesForm::Listed);
    let summary_request_text =
        head_tail_tokens(counter, &listed, budget.total_tokens.saturating_sub(8));
    let tokens = counter.count(&text);
    Some(RenderedLedger {
        text,
        tokens,
        omitted,
        summary_request_text,
    })
}

/// Equal shares, where a section needing less than its share gives the rest to others.
fn water_fill(sections: &[Section], available: usize, counter: &dyn TokenCounter) -> Vec<usize> {
    let demands: Vec<usize> = sections.iter().map(|s| s.demand(counter)).collect();
    let mut order: Vec<usize> = (0..sections.len())
        .filter(|&i| !sections[i].entries.is_empty())
        .collect();
    order.sort_by_key(|&i| demands[i]);
    let mut shares = vec![0; sections.len()];
    let mut left = available;
    let mut remaining = order.len();
    for i in order {
        let share = left / remaining.max(1);
        shares[i] = demands[i].min(share);
        left -= shares[i];
        remaining -= 1;
    }
    shares
}

/// Heading of the Plan section.
pub const PLAN_HEADING: &str =
    "## Plan (your latest update_plan, verbatim; [x] done, [~] in progress, [ ] pending)";

/// The Plan section (heading, one line per step, a closing line break), empty without a
/// plan. Whole when it takes at most `max_tokens`; else its done steps are counted
/// instead of listed, and what still does not fit keeps its head and tail.
pub fn plan_block(plan: &Plan, max_tokens: usize, counter: &dyn TokenCounter) -> String {
    if plan.is_empty() {
        return String::new();
    }
    let whole = format!("{PLAN_HEADING}\n{}\n", plan.checklist());
    if counter.count(&whole) <= max_tokens {
        return whole;
    }
    let done = plan.count(PlanStatus::Done);
    let open: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.status != PlanStatus::Done)
        .map(step_line)
        .collect();
    let cut = format!(
        "{PLAN_HEADING}\n[{done} done steps omitted]\n{}\n",
        open.join("\n")
    );
    if counter.count(&cut) <= max_tokens {
        return cut;
    }
    format!(
        "{}\n",
        head_tail_tokens(counter, cut.trim_end(), max_tokens.saturating_sub(8))
    )
}

/// The block with the plan, then each section cut to its share, and the number of
/// entries left out.
fn assemble(
    plan: &str,
    sections: &[Section],
    shares: &[usize],
    counter: &dyn TokenCounter,
    form: UserMessagesForm,
) -> (String, usize) {
    let mut out = format!("{LEDGER_OPEN}\n{LEDGER_INTRO}\n{plan}");
    let mut omitted_total = 0;
    for (section, &share) in sections.iter().zip(shares) {
        if section.entries.is_empty() {
            continue;
        }
        let heading_tokens = counter.count(&section.heading) + 1;
        if share < heading_tokens + 8 {
            omitted_total += section.entries.len() + section.omitted_before;
            out.push_str(&format!(
                "{}\n[{} {} omitted]\n",
                section.heading,
                section.entries.len() + section.omitted_before,
                section.omitted_noun
            ));
            continue;
        }
        // Room for the closing `[N … omitted]` line.
        let left = share.saturating_sub(heading_tokens + OMITTED_LINE_TOKENS);
        let mut oldest_kept = false;
        let (body, shown) = if section.cuttable {
            let allotted = fair_allotments(&section.entries, left, section.keep_oldest);
            oldest_kept = section.keep_oldest && allotted.last().is_some_and(|&a| a > 0);
            match form {
                UserMessagesForm::Quoted => fair_cut(&section.entries, &allotted, counter),
                UserMessagesForm::Listed => listed(&section.entries, &allotted),
            }
        } else {
            newest_whole(&section.entries, left)
        };
        let omitted = section.entries.len() - shown + section.omitted_before;
        match (&section.listed_heading, form) {
            (Some(listed), UserMessagesForm::Listed) => out.push_str(listed),
            _ => out.push_str(&section.heading),
        }
        out.push('\n');
        out.push_str(&body);
        if omitted > 0 {
            // With the oldest entry kept, the ones left out came after it.
            let noun = if oldest_kept && section.omitted_before == 0 {
                "user messages after the first"
            } else {
                section.omitted_noun
            };
            out.push_str(&format!("[{omitted} {noun} omitted]\n"));
        }
        omitted_total += section.entries.len() - shown;
    }
    out.push_str(LEDGER_CLOSE);
    (out, omitted_total)
}

/// The newest entries that fit whole within `budget` tokens; returns the text and how
/// many entries it shows.
fn newest_whole(entries: &[(String, usize)], budget: usize) -> (String, usize) {
    let mut left = budget;
    let mut out = String::new();
    let mut shown = 0;
    for (text, tokens) in entries {
        if *tokens >= left {
            break;
        }
        out.push_str(text);
        out.push('\n');
        left -= tokens + 1;
        shown += 1;
    }
    (out, shown)
}

/// How many tokens each entry gets within `budget`, sharing it fairly: every entry shown
/// gets at least [`MIN_CUT_TOKENS`], small entries are shown whole, and the large ones
/// share what is left equally. The newest entries are shown first; with `keep_oldest`
/// the oldest one (the session's first user message, which usually states the task and
/// its constraints) is kept too, and the entries left out are the ones just after it.
/// One allotment per entry, newest first, 0 for an entry left out; each counts its line
/// break.
fn fair_allotments(entries: &[(String, usize)], budget: usize, keep_oldest: bool) -> Vec<usize> {
    let floor = |tokens: usize| line_cost(tokens.min(MIN_CUT_TOKENS));
    let oldest = entries.len().saturating_sub(1);
    let reserve = match entries.last() {
        Some((_, tokens)) if keep_oldest && entries.len() > 1 && floor(*tokens) <= budget => {
            floor(*tokens)
        }
        _ => 0,
    };
    let candidates = if reserve > 0 {
        &entries[..oldest]
    } else {
        entries
    };
    // The newest entries whose floors fit beside the oldest one's.
    let mut floors = reserve;
    let mut shown: Vec<usize> = (0..candidates
        .iter()
        .take_while(|(_, tokens)| {
            floors += floor(*tokens);
            floors <= budget
        })
        .count())
        .collect();
    if reserve > 0 {
        shown.push(oldest);
    }
    // Water-filling: the smallest entries first, each at most an equal share of the rest.
    shown.sort_by_key(|&i| entries[i].1);
    let mut allot = vec![0; entries.len()];
    let mut left = budget;
    let mut remaining = shown.len();
    for i in shown {
        let share = left / remaining.max(1);
        allot[i] = line_cost(entries[i].1).min(share.max(line_cost(MIN_CUT_TOKENS)));
        left = left.saturating_sub(allot[i]);
        remaining -= 1;
    }
    allot
}

/// An entry's tokens with its line break.
fn line_cost(tokens: usize) -> usize {
    tokens + 1
}

/// The entries [`fair_allotments`] gave room to, each whole or cut to its head and tail.
/// Returns the text and how many entries it shows.
fn fair_cut(
    entries: &[(String, usize)],
    allotted: &[usize],
    counter: &dyn TokenCounter,
) -> (String, usize) {
    let mut out = String::new();
    for ((text, tokens), &allot) in entries.iter().zip(allotted).filter(|(_, &a)| a > 0) {
        if line_cost(*tokens) <= allot {
            out.push_str(text);
        } else {
            out.push_str(&head_tail_tokens(counter, text, allot.saturating_sub(5)));
        }
        out.push('\n');
    }
    (out, allotted.iter().filter(|&&a| a > 0).count())
}

/// The entries [`fair_allotments`] gave room to, one line each: the entry's first line
/// (`--- message 3`), its size and whether the quoted form keeps it whole.
fn listed(entries: &[(String, usize)], allotted: &[usize]) -> (String, usize) {
    let mut out = String::new();
    for ((text, tokens), &allot) in entries.iter().zip(allotted).filter(|(_, &a)| a > 0) {
        let header = text.lines().next().unwrap_or_default();
        if line_cost(*tokens) <= allot {
            out.push_str(&format!("{header}: {tokens} tokens, attached whole\n"));
        } else {
            out.push_str(&format!(
                "{header}: {tokens} tokens, attached cut to its head and tail (about {} \
                 tokens): keep what still matters from its middle\n",
                allot.saturating_sub(5)
            ));
        }
    }
    (out, allotted.iter().filter(|&&a| a > 0).count())
}

fn entries(texts: Vec<String>, counter: &dyn TokenCounter) -> Vec<(String, usize)> {
    texts
        .into_iter()
        .map(|text| {
            let tokens = counter.count(&text);
            (text, tokens)
        })
        .collect()
}

fn sections(
    ledger: &Ledger,
    budget: LedgerBudget,
    exclude_latest_user: bool,
    counter: &dyn TokenCounter,
    probe: Option<&dyn FileProbe>,
) -> Vec<Section> {
    vec![
        user_section(ledger, budget, exclude_latest_user, counter),
        files_section(ledger, budget, counter, probe),
        commands_section(ledger, counter),
        tests_section(ledger, counter),
        spills_section(ledger, counter),
    ]
}

fn user_section(
    ledger: &Ledger,
    budget: LedgerBudget,
    exclude_latest_user: bool,
    counter: &dyn TokenCounter,
) -> Section {
    let users = ledger.user_messages();
    let latest = users.iter().map(|u| u.order).max();
    let mut numbered: Vec<(usize, &UserEntry)> = users.iter().enumerate().collect();
    numbered.sort_by_key(|entry| std::cmp::Reverse(entry.1.order));
    let texts = numbered
        .into_iter()
        .filter(|(_, u)| !(exclude_latest_user && Some(u.order) == latest))
        .map(|(index, user)| {
            let repeats = if user.count > 1 {
                format!(" (sent {} times)", user.count)
            } else {
                String::new()
            };
            format!(
                "--- message {}{repeats}\n{}",
                index + 1 + ledger.users_forgotten() as usize,
                user.text
            )
        })
        .collect();
    let heading = if exclude_latest_user {
        "## User messages (the latest one is quoted after this block)"
    } else {
        "## User messages"
    };
    Section {
        heading: heading.to_owned(),
        entries: entries(texts, counter),
        omitted_noun: "older user messages",
        cuttable: true,
        keep_oldest: true,
        cap: budget.user_messages_tokens,
        omitted_before: ledger.users_forgotten() as usize,
        listed_heading: Some(
            "## User messages (listed, not quoted: their text is in the conversation above)"
                .to_owned(),
        ),
    }
}

fn describe_file(file: &FileEntry, probe: Option<&dyn FileProbe>) -> String {
    let mut parts = vec![format!(
        "{} (turn {})",
        action_word(file.last_action),
        file.turn
    )];
    if file.read_whole {
        parts.push("read whole".to_owned());
    } else if !file.ranges.is_empty() {
        let ranges: Vec<String> = file
            .ranges
            .iter()
            .take(12)
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        let more = file.ranges.len().saturating_sub(12);
        let more = if more > 0 {
            format!(" and {more} more ranges")
        } else {
            String::new()
        };
        parts.push(format!("read lines {}{more}", ranges.join(", ")));
    } else if file.read_partly {
        parts.push("read in part".to_owned());
    }
    if let (Some(seen), Some(probe)) = (&file.seen, probe) {
        match probe.fingerprint(&file.path) {
            Some(now) if &now != seen => parts.push("CHANGED ON DISK since last seen".to_owned()),
            None if file.last_action != FileAction::Deleted => {
                parts.push("MISSING on disk now".to_owned())
            }
            _ => {}
        }
    }
    format!("- {}: {}", file.path, parts.join("; "))
}

fn action_word(action: FileAction) -> &'static str {
    action.word()
}

fn files_section(
    ledger: &Ledger,
    budget: LedgerBudget,
    counter: &dyn TokenCounter,
    probe: Option<&dyn FileProbe>,
) -> Section {
    let files = ledger.files();
    // Files the session changed first, then files it only read; each newest first.
    let (changed, read): (Vec<&FileEntry>, Vec<&FileEntry>) =
        files.into_iter().partition(|f| f.changed);
    // Only files that could be shown are checked on disk: a file line takes at least
    // MIN_FILE_LINE_TOKENS, so later ones cannot fit the budget, and fingerprinting them
    // would read (hash) up to 500 files on every render.
    let probed = budget.total_tokens / MIN_FILE_LINE_TOKENS;
    let texts = changed
        .into_iter()
        .chain(read)
        .enumerate()
        .map(|(index, f)| describe_file(f, probe.filter(|_| index < probed)))
        .collect();
    Section {
        heading: "## Files (changed by the session first, then read; newest first)".to_owned(),
        entries: entries(texts, counter),
        omitted_noun: "older files",
        cuttable: false,
        keep_oldest: false,
        cap: usize::MAX,
        omitted_before: 0,
        listed_heading: None,
    }
}

fn commands_section(ledger: &Ledger, counter: &dyn TokenCounter) -> Section {
    let commands: Vec<&CommandEntry> = ledger.commands().collect();
    // The latest failure always stays: it is what the session last ran into, even when
    // a later run of the same command passed.
    let latest_failure = commands.iter().rev().find(|c| c.failed).map(|c| c.order);
    let mut chosen = Vec::new();
    let mut older_failing = 0;
    for (age, command) in commands.iter().rev().enumerate() {
        if age < RECENT_COMMANDS {
            chosen.push(*command);
            continue;
        }
        if Some(command.order) == latest_failure {
            chosen.push(*command);
            older_failing += 1;
            continue;
        }
        // An older failure stays until a later run of the same command passes.
        let fixed = commands
            .iter()
            .any(|later| later.order > command.order && later.key == command.key && !later.failed);
        if command.failed && !fixed && older_failing < OLDER_FAILING_COMMANDS {
            chosen.push(*command);
            older_failing += 1;
        }
    }
    let texts = chosen
        .into_iter()
        .map(|c| {
            let status = match (c.exit_code, c.failed) {
                (Some(code), _) => format!("exit {code}"),
                (None, true) => "failed".to_owned(),
                (None, false) => "done".to_owned(),
            };
            let mut line = format!("- `{}` → {status} (turn {})", c.command, c.turn);
            let passed_later = c.failed
                && commands
                    .iter()
                    .any(|later| later.order > c.order && later.key == c.key && !later.failed);
            if passed_later {
                line.push_str("; a later run passed");
            }
            if let Some(error) = &c.error_line {
                line.push_str(&format!("\n  last error: {error}"));
            }
            if let Some(spill) = &c.spill {
                line.push_str(&format!("\n  full output: {spill}"));
            }
            line
        })
        .collect();
    Section {
        heading: "## Commands (newest first; failing ones stay until they pass, the latest failure always)"
            .to_owned(),
        entries: entries(texts, counter),
        omitted_noun: "older commands",
        cuttable: false,
        keep_oldest: false,
        cap: usize::MAX,
        omitted_before: commands
            .len()
            .saturating_sub(RECENT_COMMANDS + older_failing),
        listed_heading: None,
    }
}

fn tests_section(ledger: &Ledger, counter: &dyn TokenCounter) -> Section {
    let texts = ledger
        .test_runs()
        .iter()
        .rev()
        .map(|run| {
            let mut text = format!(
                "- `{}` (turn {}): {} failing",
                run.command,
                run.turn,
                run.failures.len()
            );
            for test in run.failures.iter().take(TESTS_WITH_ERRORS) {
                text.push_str(&format!("\n  - {}", test.id));
                if let Some(error) = &test.error {
                    text.push_str(&format!(": {}", cut_chars(error, 200)));
                }
            }
            let rest: Vec<&str> = run
                .failures
                .iter()
                .skip(TESTS_WITH_ERRORS)
                .map(|t| t.id.as_str())
                .collect();
            if !rest.is_empty() {
                text.push_str(&format!("\n  - also failing: {}", rest.join(", ")));
            }
            text
        })
        .collect();
    Section {
        heading: "## Failing tests (latest failing run of each test command)".to_owned(),
        entries: entries(texts, counter),
        omitted_noun: "older test runs",
        cuttable: false,
        keep_oldest: false,
        cap: usize::MAX,
        omitted_before: 0,
        listed_heading: None,
    }
}

fn spills_section(ledger: &Ledger, counter: &dyn TokenCounter) -> Section {
    let texts = ledger
        .spills()
        .iter()
        .rev()
        .map(|s| format!("- {} ← {}", s.path, s.origin))
        .collect();
    Section {
        heading: "## Full outputs (seen squashed; read them for details)".to_owned(),
        entries: entries(texts, counter),
        omitted_noun: "older spill files",
        cuttable: false,
        keep_oldest: false,
        cap: usize::MAX,
        omitted_before: 0,
        listed_heading: None,
    }
}
