//! The ledger's sections before budgeting: what each one lists (User messages, Files,
//! Commands, Tests, Spills), newest first, with what it needs of the budget and what it
//! is given before the budget is shared out. [`super::render`] shares the budget and
//! assembles the block.

use std::collections::HashSet;

use crate::context::tokens::TokenCounter;
use crate::protocol::effect::FileAction;

use super::entries::{CommandEntry, FileEntry, FileProbe, UserEntry};
use super::fold::Ledger;
use super::reading::cut_chars;

/// Recent commands always listed (when they fit).
const RECENT_COMMANDS: usize = 10;
/// Older failing commands listed beyond the recent ones.
const OLDER_FAILING_COMMANDS: usize = 10;
/// Failing tests of one run shown with their error line; the rest by id only.
const TESTS_WITH_ERRORS: usize = 20;
/// Fewest tokens a line of the Files section takes (`- a.rs: read (turn 1)`).
const MIN_FILE_LINE_TOKENS: usize = 8;
/// Tokens kept for a section's closing `[N older … omitted]` line.
pub(super) const OMITTED_LINE_TOKENS: usize = 12;
/// Smallest share worth cutting a user message into.
pub(super) const MIN_CUT_TOKENS: usize = 80;

/// An entry's tokens with its line break.
pub(super) fn line_cost(tokens: usize) -> usize {
    tokens + 1
}

/// One section before budgeting.
pub(super) struct Section {
    pub(super) heading: String,
    /// Entries newest first, with their tokens.
    pub(super) entries: Vec<(String, usize)>,
    /// What an omitted entry is called in the closing line (`older files`).
    pub(super) omitted_noun: &'static str,
    /// Whether an entry that does not fit may be cut (user messages).
    pub(super) cuttable: bool,
    /// Whether the oldest entry is kept when older ones must be left out (user
    /// messages: the first one usually states the task).
    pub(super) keep_oldest: bool,
    /// Most tokens this section may take.
    pub(super) cap: usize,
    /// Entries counted as omitted before budgeting.
    pub(super) omitted_before: usize,
    /// The heading in the summary request's form, when it differs (user messages).
    pub(super) listed_heading: Option<String>,
}

impl Section {
    /// A plain section: entries that are never cut, no cap of its own, nothing omitted
    /// before budgeting and one heading for both forms.
    fn plain(heading: &str, entries: Vec<(String, usize)>, omitted_noun: &'static str) -> Self {
        Self {
            heading: heading.to_owned(),
            entries,
            omitted_noun,
            cuttable: false,
            keep_oldest: false,
            cap: usize::MAX,
            omitted_before: 0,
            listed_heading: None,
        }
    }

    /// What the section is given before the budget is shared out: for the user messages
    /// (the section that keeps its oldest entry), the heading, the closing line and the
    /// first message's floor (whole up to [`MIN_CUT_TOKENS`], else its head and tail), so
    /// the session's first message, which usually states the task, survives any budget
    /// that can hold it. Nothing for the other sections.
    pub(super) fn reserve(&self, counter: &dyn TokenCounter) -> usize {
        let Some((_, oldest)) = self.entries.last().filter(|_| self.keep_oldest) else {
            return 0;
        };
        let floor = counter.count(&self.heading)
            + 1
            + OMITTED_LINE_TOKENS
            + line_cost((*oldest).min(MIN_CUT_TOKENS));
        floor.min(self.demand(counter))
    }

    pub(super) fn demand(&self, counter: &dyn TokenCounter) -> usize {
        let entries: usize = self.entries.iter().map(|(_, t)| t + 1).sum();
        // The heading, the entries and room for the closing `[N … omitted]` line.
        (counter.count(&self.heading) + 1 + entries + OMITTED_LINE_TOKENS).min(self.cap)
    }
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

/// The sections of `ledger`, in their rendered order: `total_tokens` is the whole
/// ledger's budget (it bounds the files worth checking on disk), `user_messages_tokens`
/// the user messages' cap; `exclude_latest_user` leaves out the message the replacement
/// quotes after the block.
pub(super) fn sections(
    ledger: &Ledger,
    total_tokens: usize,
    user_messages_tokens: usize,
    exclude_latest_user: bool,
    counter: &dyn TokenCounter,
    probe: Option<&dyn FileProbe>,
) -> Vec<Section> {
    let (chosen, older_failing) = chosen_commands(ledger);
    let shown: HashSet<&str> = chosen.iter().filter_map(|c| c.spill.as_deref()).collect();
    vec![
        user_section(ledger, user_messages_tokens, exclude_latest_user, counter),
        files_section(ledger, total_tokens, counter, probe),
        commands_section(ledger, &chosen, older_failing, counter),
        tests_section(ledger, counter),
        spills_section(ledger, &shown, counter),
    ]
}

fn user_section(
    ledger: &Ledger,
    cap: usize,
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
        cap,
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
    total_tokens: usize,
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
    let probed = total_tokens / MIN_FILE_LINE_TOKENS;
    let texts = changed
        .into_iter()
        .chain(read)
        .enumerate()
        .map(|(index, f)| describe_file(f, probe.filter(|_| index < probed)))
        .collect();
    Section::plain(
        "## Files (changed by the session first, then read; newest first)",
        entries(texts, counter),
        "older files",
    )
}

/// The commands the Commands section lists, newest first: the [`RECENT_COMMANDS`]
/// newest, the latest failure, and older failures until the same command passes (at most
/// [`OLDER_FAILING_COMMANDS`]); with how many older failures are among them.
fn chosen_commands(ledger: &Ledger) -> (Vec<&CommandEntry>, usize) {
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
    (chosen, older_failing)
}

fn commands_section(
    ledger: &Ledger,
    chosen: &[&CommandEntry],
    older_failing: usize,
    counter: &dyn TokenCounter,
) -> Section {
    let commands: Vec<&CommandEntry> = ledger.commands().collect();
    let texts = chosen
        .iter()
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
        omitted_before: commands
            .len()
            .saturating_sub(RECENT_COMMANDS + older_failing),
        ..Section::plain(
            "## Commands (newest first; failing ones stay until they pass, the latest failure always)",
            entries(texts, counter),
            "older commands",
        )
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
    Section::plain(
        "## Failing tests (latest failing run of each test command)",
        entries(texts, counter),
        "older test runs",
    )
}

/// The spill files, newest first, without the ones the Commands section already names
/// next to their command (`shown`), and with only the newest output of a command run
/// more than once: an earlier run's output is superseded by the later one's. Those left
/// out as superseded (and not named by the Commands section) are counted in the closing
/// line, so the model knows there are more files than the list shows; every file stays
/// on disk.
fn spills_section(ledger: &Ledger, shown: &HashSet<&str>, counter: &dyn TokenCounter) -> Section {
    let mut reruns: HashSet<&str> = HashSet::new();
    let mut superseded = 0;
    let mut texts = Vec::new();
    for spill in ledger.spills().iter().rev() {
        let newest_run = spill
            .rerun_key
            .as_deref()
            .is_none_or(|key| reruns.insert(key));
        if shown.contains(spill.path.as_str()) {
            continue;
        }
        if newest_run {
            texts.push(format!("- {} ← {}", spill.path, spill.origin));
        } else {
            superseded += 1;
        }
    }
    Section {
        omitted_before: superseded,
        ..Section::plain(
            "## Full outputs (seen squashed; read them for details)",
            entries(texts, counter),
            "older spill files",
        )
    }
}
