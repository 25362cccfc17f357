//! The ledger as the model reads it: one `<session_ledger>` block within a hard token
//! budget.
//!
//! Sections come in a stable order (User messages, Files, Commands, Tests, Spills),
//! entries newest first. The session's first user message is reserved for before
//! anything else (whole up to 80 tokens, else its head and tail): a tight budget is not
//! spent on the plan and the commands while the task goes. When everything does not fit,
//! the rest is shared out by water-filling: every section that needs less than an equal
//! share gets all it needs, the others split the rest equally (user messages never more
//! than their own cap). Within its share a section keeps its newest entries; the User
//! messages section also keeps its oldest one, the session's first message, which
//! usually states the task and its constraints (the messages just after it are the ones
//! left out). A user message that does not fit whole keeps its head and tail around
//! `[N tokens omitted]`; whatever is left out is counted in a closing `[N older …
//! omitted]` line, never dropped silently.
//!
//! The Plan (the model's latest `update_plan`, see [`crate::protocol::plan`]) comes
//! first and is not shared out: it is carried verbatim, and the other sections share what
//! it leaves. Only a plan larger than half of what the first message's reserve leaves
//! ([`plan_block`]; possible only with a tiny window, since the tool caps a plan at about
//! 2,000 tokens) is cut: its done steps are counted instead of listed, and what still
//! does not fit keeps its head and tail.
//!
//! Every render has two forms with the same cuts: the block a replacement carries, and
//! the one a summary request shows. The summary request's history already holds every
//! user message (verbatim, or in the previous compaction's ledger), so there the user
//! messages are listed by number with how the ledger keeps them (whole, or head and
//! tail) instead of being quoted a second time as uncached input.

use crate::context::summary::head_tail_tokens;
use crate::context::tokens::TokenCounter;
use crate::protocol::plan::{step_line, Plan, PlanStatus};

use super::entries::FileProbe;
use super::fold::Ledger;
use super::sections::{line_cost, sections, Section, MIN_CUT_TOKENS, OMITTED_LINE_TOKENS};

/// Opening tag of the rendered ledger.
pub const LEDGER_OPEN: &str = "<session_ledger>";
/// Closing tag of the rendered ledger.
pub const LEDGER_CLOSE: &str = "</session_ledger>";
/// The line under the opening tag.
const LEDGER_INTRO: &str = "Facts pith recorded from the whole session, exact and \
newest first (not written by the model):";

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
    let sections = sections(
        ledger,
        budget.total_tokens,
        budget.user_messages_tokens,
        exclude_latest_user,
        counter,
        probe,
    );
    // The session's first message is reserved for before anything is shared out, the plan
    // included: a tight budget must not spend it all on the plan and the commands.
    let reserved: Vec<usize> = sections.iter().map(|s| s.reserve(counter)).collect();
    let reserve: usize = reserved.iter().sum();
    let plan = plan_block(
        ledger.plan(),
        budget.total_tokens.saturating_sub(reserve) / 2,
        counter,
    );
    if sections.iter().all(|s| s.entries.is_empty()) && plan.is_empty() {
        return None;
    }
    let wrapper = format!("{LEDGER_OPEN}\n{LEDGER_INTRO}\n{plan}{LEDGER_CLOSE}");
    let available = budget
        .total_tokens
        .saturating_sub(counter.count(&wrapper) + 2);
    let mut shares = water_fill(&sections, &reserved, available, counter);
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
        // The share with the most above its reserve gives first; only when every share
        // is down to its reserve does a reserve give way.
        let Some(largest) =
            (0..shares.len()).max_by_key(|&i| (shares[i].saturating_sub(reserved[i]), shares[i]))
        else {
            break;
        };
        let above = shares[largest].saturating_sub(reserved[largest]);
        let cut = if above > 0 {
            (excess + 8).min(above)
        } else {
            excess + 8
        };
        shares[largest] = shares[largest].saturating_sub(cut);
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

/// Each section's reserve first (as much of it as `available` holds), then equal shares
/// of the rest, where a section needing less than its share gives the rest to others.
fn water_fill(
    sections: &[Section],
    reserved: &[usize],
    available: usize,
    counter: &dyn TokenCounter,
) -> Vec<usize> {
    let mut shares = vec![0; sections.len()];
    let mut left = available;
    for (share, &reserve) in shares.iter_mut().zip(reserved) {
        *share = reserve.min(left);
        left -= *share;
    }
    let demands: Vec<usize> = sections
        .iter()
        .zip(&shares)
        .map(|(s, &share)| s.demand(counter).saturating_sub(share))
        .collect();
    let mut order: Vec<usize> = (0..sections.len())
        .filter(|&i| !sections[i].entries.is_empty())
        .collect();
    order.sort_by_key(|&i| demands[i]);
    let mut remaining = order.len();
    for i in order {
        let share = left / remaining.max(1);
        let extra = demands[i].min(share);
        shares[i] += extra;
        left -= extra;
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
            newest_whole(&section.entries, left, counter)
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
/// many entries it shows. When not even the newest one fits whole (a test run with many
/// failing tests), its first lines that fit are shown with a count of the lines left
/// out, rather than nothing of the section.
fn newest_whole(
    entries: &[(String, usize)],
    budget: usize,
    counter: &dyn TokenCounter,
) -> (String, usize) {
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
    if shown == 0 {
        if let Some((text, _)) = entries.first() {
            if let Some(head) = first_lines(text, budget, counter) {
                return (head, 1);
            }
        }
    }
    (out, shown)
}

/// Tokens kept for the `[N more lines omitted]` line of an entry cut by lines.
const MORE_LINES_TOKENS: usize = 10;

/// The first lines of `text` that fit `budget` tokens with a closing `[N more lines
/// omitted]`; `None` when not even its first line fits.
fn first_lines(text: &str, budget: usize, counter: &dyn TokenCounter) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut left = budget.checked_sub(MORE_LINES_TOKENS)?;
    let mut out = String::new();
    let mut kept = 0;
    for line in &lines {
        let tokens = counter.count(line) + 1;
        if tokens > left {
            break;
        }
        out.push_str(line);
        out.push('\n');
        left -= tokens;
        kept += 1;
    }
    if kept == 0 {
        return None;
    }
    out.push_str(&format!("  [{} more lines omitted]\n", lines.len() - kept));
    Some(out)
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
