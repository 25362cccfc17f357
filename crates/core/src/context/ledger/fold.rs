//! The ledger itself: a pure fold over the conversation's events (see [`super`]'s
//! docs), and what it answers about them.

use std::collections::{HashMap, VecDeque};

use super::entries::{
    CommandEntry, FileEntry, FileProbe, Observed, SpillEntry, TestRun, UserEntry,
};
use super::reading::{
    command_display, error_line, exit_code, first_line, shell_command, spill_path,
    without_hook_context,
};
use super::shell;
use crate::context::prompts::TRUNCATION_NOTICE_PREFIX;
use crate::context::shell::family::{command_family, CommandFamily};
use crate::context::squash::failing_tests;
use crate::protocol::effect::FileAction;
use crate::protocol::message::{Message, Part, Role, ToolCall, ToolResult};
use crate::protocol::plan::{Plan, PLAN_TOOL};

/// Files the ledger tracks at most (the least recently touched are forgotten first).
const MAX_FILES: usize = 500;
/// Commands remembered.
const MAX_COMMANDS: usize = 200;
/// Test commands remembered.
const MAX_TEST_COMMANDS: usize = 20;
/// Spill files remembered.
const MAX_SPILLS: usize = 200;
/// Distinct user messages remembered (older ones are counted, not kept).
const MAX_USER_MESSAGES: usize = 500;

/// One observation of a file: what [`Ledger::touch`] records.
struct FileTouch<'a> {
    /// The path as the tool or command named it.
    path: &'a str,
    /// What happened to the file.
    action: FileAction,
    /// The lines read (1-based, inclusive), when known.
    lines: Option<(u64, u64)>,
    /// Only an unknown part of the file was read.
    partial: bool,
    /// The file's fingerprint after the event, when known.
    seen: Option<String>,
}

/// The session ledger (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    root: Option<String>,
    order: u64,
    tool_turns: u64,
    users: Vec<UserEntry>,
    users_forgotten: u32,
    files: HashMap<String, FileEntry>,
    commands: VecDeque<CommandEntry>,
    tests: Vec<TestRun>,
    spills: Vec<SpillEntry>,
    plan: Plan,
    pending: HashMap<String, ToolCall>,
}

impl Ledger {
    /// An empty ledger; paths under `root` (the workspace) are shown relative to it.
    pub fn new(root: Option<String>) -> Self {
        Self {
            root: root.map(|r| r.trim_end_matches('/').to_owned()),
            ..Self::default()
        }
    }

    /// Forgets everything (`/clear`), keeping the workspace root.
    pub fn reset(&mut self) {
        *self = Self::new(self.root.take());
    }

    fn tick(&mut self) -> u64 {
        self.order += 1;
        self.order
    }

    /// A message the user sent. pith's own notes (`[pith] …`) are not user messages.
    pub fn observe_user(&mut self, text: &str) {
        let text = without_hook_context(text);
        let text = text.as_str();
        if text.trim().is_empty() || text.starts_with(TRUNCATION_NOTICE_PREFIX) {
            return;
        }
        let order = self.tick();
        // A message too large for the window was stored beside the transcript: its file
        // is a spill like a tool output's.
        if let Some(path) = spill_path(text) {
            self.add_spill(path, "a user message".to_owned(), None, order);
        }
        if let Some(entry) = self.users.iter_mut().find(|u| u.text == text) {
            entry.count += 1;
            entry.order = order;
            return;
        }
        if self.users.len() >= MAX_USER_MESSAGES {
            self.users.remove(0);
            self.users_forgotten += 1;
        }
        self.users.push(UserEntry {
            text: text.to_owned(),
            count: 1,
            order,
        });
    }

    /// An assistant or tool message appended to the history (user messages come through
    /// [`Ledger::observe_user`]: the history also holds pith's own notes in user
    /// messages).
    pub fn observe_message(&mut self, message: &Message, probe: Option<&dyn FileProbe>) {
        match message.role {
            Role::Assistant => {
                let mut calls = message.tool_calls().peekable();
                if calls.peek().is_some() {
                    self.tool_turns += 1;
                }
                for call in calls {
                    self.pending.insert(call.id.clone(), call.clone());
                }
            }
            Role::Tool => {
                for part in &message.parts {
                    if let Part::ToolResult(result) = part {
                        self.observe_result(result, probe);
                    }
                }
            }
            Role::User | Role::System => {}
        }
    }

    /// The ledger of a whole recorded conversation: `user_messages` and `turns` in the
    /// order they happened (see [`Observed`]).
    pub fn rebuild<'a>(
        root: Option<String>,
        observed: impl IntoIterator<Item = Observed<'a>>,
    ) -> Self {
        let mut ledger = Self::new(root);
        for item in observed {
            match item {
                Observed::User(text) => ledger.observe_user(text),
                Observed::Message(message) => ledger.observe_message(message, None),
            }
        }
        ledger
    }

    fn observe_result(&mut self, result: &ToolResult, probe: Option<&dyn FileProbe>) {
        let call = self.pending.remove(&result.call_id);
        if let Some(call) = call.as_ref().filter(|c| c.name == PLAN_TOOL) {
            // The tool checked these arguments with the same rule; a refused call
            // leaves the plan as it was.
            if !result.is_error {
                if let Ok(plan) = Plan::from_arguments(&call.arguments) {
                    self.plan = plan;
                }
            }
            return;
        }
        let tool = call.as_ref().map_or("tool", |c| c.name.as_str()).to_owned();
        let command = call.as_ref().and_then(shell_command);
        let exit_code = exit_code(&result.content);
        let order = self.tick();
        for effect in &result.effects {
            self.touch(
                FileTouch {
                    path: &effect.path,
                    action: effect.action,
                    lines: effect.lines,
                    partial: false,
                    seen: effect.fingerprint.clone(),
                },
                order,
            );
        }
        if let Some(command) = &command {
            // The tool's effects (bash: what the change tracker saw change) are exact; the
            // parse adds what they cannot see: reads, and writes outside a git work tree
            // or to ignored files.
            let effects = shell::file_effects(command);
            let reported: Vec<String> = result
                .effects
                .iter()
                .map(|e| self.display_path(&e.path))
                .collect();
            let ran = !(result.is_error && exit_code.is_none());
            if ran && exit_code.is_none_or(|code| code == 0) {
                for read in &effects.reads {
                    let seen = probe.and_then(|p| p.fingerprint(&read.path));
                    self.touch(
                        FileTouch {
                            path: &read.path,
                            action: FileAction::Read,
                            lines: read.lines,
                            partial: read.partial,
                            seen,
                        },
                        order,
                    );
                }
            }
            if ran {
                for write in &effects.writes {
                    if reported.contains(&self.display_path(&write.path)) {
                        continue;
                    }
                    let seen = probe.and_then(|p| p.fingerprint(&write.path));
                    self.touch(
                        FileTouch {
                            path: &write.path,
                            action: write.action,
                            lines: None,
                            partial: false,
                            seen,
                        },
                        order,
                    );
                }
            }
        } else if let Some(call) = call.as_ref().filter(|_| result.effects.is_empty()) {
            if !result.is_error {
                self.observe_file_tool(call, probe, order);
            }
        }
        let spill = spill_path(&result.content);
        if let Some(command) = &command {
            self.observe_command(command, result, exit_code, spill.clone(), order);
        }
        if let Some(path) = spill {
            let origin = match &command {
                Some(command) => format!("{tool} `{}`", first_line(command)),
                None => tool.clone(),
            };
            let rerun_key = command.as_deref().map(command_key);
            self.add_spill(path, origin, rerun_key, order);
        }
    }

    /// Records a spill file (the newest [`MAX_SPILLS`] are kept).
    fn add_spill(&mut self, path: String, origin: String, rerun_key: Option<String>, order: u64) {
        self.spills.retain(|s| s.path != path);
        if self.spills.len() >= MAX_SPILLS {
            self.spills.remove(0);
        }
        self.spills.push(SpillEntry {
            path,
            origin,
            rerun_key,
            order,
        });
    }

    /// File facts of a `read`, `write` or `edit` call that carried no effects (older
    /// transcripts, other agents' sessions).
    fn observe_file_tool(&mut self, call: &ToolCall, probe: Option<&dyn FileProbe>, order: u64) {
        let Some(path) = ["path", "file_path", "filePath", "file"]
            .iter()
            .find_map(|key| call.arguments.get(*key).and_then(|v| v.as_str()))
        else {
            return;
        };
        let action = match call.name.to_ascii_lowercase().as_str() {
            "read" | "view" | "read_file" | "cat" => FileAction::Read,
            "write" | "create" | "write_file" => FileAction::Written,
            "edit" | "multiedit" | "str_replace" | "edit_file" | "apply_patch" => {
                FileAction::Edited
            }
            _ => return,
        };
        let lines = (action == FileAction::Read)
            .then(|| {
                let offset = call.arguments.get("offset")?.as_u64()?.max(1);
                let limit = call.arguments.get("limit")?.as_u64()?.max(1);
                Some((offset, offset + limit - 1))
            })
            .flatten();
        let seen = probe.and_then(|p| p.fingerprint(path));
        self.touch(
            FileTouch {
                path,
                action,
                lines,
                partial: false,
                seen,
            },
            order,
        );
    }

    /// Records one observation of a file at `order`.
    fn touch(&mut self, touch: FileTouch<'_>, order: u64) {
        let FileTouch {
            path,
            action,
            lines,
            partial,
            seen,
        } = touch;
        let path = self.display_path(path);
        if path.is_empty() {
            return;
        }
        if !self.files.contains_key(&path) && self.files.len() >= MAX_FILES {
            if let Some(oldest) = self
                .files
                .values()
                .min_by_key(|f| f.order)
                .map(|f| f.path.clone())
            {
                self.files.remove(&oldest);
            }
        }
        let turn = self.tool_turns;
        let entry = self.files.entry(path.clone()).or_insert_with(|| FileEntry {
            path,
            last_action: action,
            changed: false,
            read_whole: false,
            ranges: Vec::new(),
            read_partly: false,
            seen: None,
            turn,
            order,
        });
        entry.last_action = action;
        entry.turn = turn;
        entry.order = order;
        entry.seen = seen;
        if action.changes_file() {
            entry.changed = true;
        } else {
            match lines {
                Some(range) => merge_range(&mut entry.ranges, range),
                None if partial => entry.read_partly = true,
                None => entry.read_whole = true,
            }
        }
    }

    /// `path` as the ledger shows it: relative to the workspace root when inside it,
    /// normalised.
    fn display_path(&self, path: &str) -> String {
        let path = path.trim();
        if let Some(root) = &self.root {
            if let Some(rest) = path.strip_prefix(root.as_str()) {
                if let Some(relative) = rest.strip_prefix('/') {
                    return shell::normalise(relative);
                }
            }
        }
        shell::normalise(path)
    }

    fn observe_command(
        &mut self,
        command: &str,
        result: &ToolResult,
        exit_code: Option<i32>,
        spill: Option<String>,
        order: u64,
    ) {
        let failed = result.is_error || exit_code.is_some_and(|code| code != 0);
        let key = command_key(command);
        let entry = CommandEntry {
            command: command_display(command),
            key: key.clone(),
            exit_code,
            failed,
            error_line: failed.then(|| error_line(&result.content)).flatten(),
            spill,
            turn: self.tool_turns,
            order,
        };
        if self.commands.len() >= MAX_COMMANDS {
            self.commands.pop_front();
        }
        self.commands.push_back(entry);

        let is_test = command_family(command) == CommandFamily::TestRunner
            || crate::context::squash::detect::looks_like_test_output(&result.content);
        if !is_test {
            return;
        }
        let failures = failing_tests(&result.content);
        if !failures.is_empty() {
            self.tests.retain(|t| t.key != key);
            if self.tests.len() >= MAX_TEST_COMMANDS {
                self.tests.remove(0);
            }
            self.tests.push(TestRun {
                command: command_display(command),
                key,
                failures,
                turn: self.tool_turns,
                order,
            });
        } else if exit_code == Some(0) {
            self.tests.retain(|t| t.key != key);
        }
    }

    /// Marks `path` as seen with `fingerprint` (its content was just shown to the model,
    /// e.g. re-attached after a compaction).
    pub fn mark_seen(&mut self, path: &str, fingerprint: Option<String>) {
        let path = self.display_path(path);
        if let Some(entry) = self.files.get_mut(&path) {
            entry.seen = fingerprint;
        }
    }

    /// The distinct user messages, oldest first.
    pub fn user_messages(&self) -> &[UserEntry] {
        &self.users
    }

    /// How many of the oldest distinct user messages were forgotten (past the
    /// [`MAX_USER_MESSAGES`] kept); they still count in the messages' numbering.
    pub fn users_forgotten(&self) -> u32 {
        self.users_forgotten
    }

    /// Every file, most recently touched first; files one call touched together in path
    /// order, so that the rendered ledger and the files re-attached never depend on the
    /// map's order.
    pub fn files(&self) -> Vec<&FileEntry> {
        let mut files: Vec<&FileEntry> = self.files.values().collect();
        files.sort_by(|a, b| b.order.cmp(&a.order).then_with(|| a.path.cmp(&b.path)));
        files
    }

    /// The commands remembered, oldest first.
    pub fn commands(&self) -> impl Iterator<Item = &CommandEntry> {
        self.commands.iter()
    }

    /// The failing test runs, oldest first.
    pub fn test_runs(&self) -> &[TestRun] {
        &self.tests
    }

    /// The spill files, oldest first.
    pub fn spills(&self) -> &[SpillEntry] {
        &self.spills
    }

    /// The current plan: the steps of the latest successful `update_plan` call (empty
    /// when none was made, or the latest cleared it).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Tool turns (assistant messages with tool calls) observed.
    pub fn tool_turns(&self) -> u64 {
        self.tool_turns
    }

    /// True when nothing was observed yet.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.files.is_empty()
            && self.commands.is_empty()
            && self.spills.is_empty()
            && self.plan.is_empty()
    }

    /// The files to re-attach after a compaction: the `limit` most recently edited or
    /// read ones that still exist (not deleted), most recent first.
    pub fn recent_files(&self, limit: usize) -> Vec<&FileEntry> {
        self.files()
            .into_iter()
            .filter(|f| f.last_action != FileAction::Deleted)
            .take(limit)
            .collect()
    }
}

/// A command with its whitespace normalised: two runs with the same key are the same
/// command.
fn command_key(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn merge_range(ranges: &mut Vec<(u64, u64)>, (first, last): (u64, u64)) {
    ranges.push((first.min(last), first.max(last)));
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    *ranges = merged;
}
