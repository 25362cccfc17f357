//! How one of pith's tool calls looks in an editor: its ACP kind, a title, the files it
//! touches (`locations`, absolute paths) and, for `write` and `edit`, the change as a
//! diff. Pure but for `write`, whose diff reads the file it replaces (at most
//! [`DIFF_OLD_TEXT_MAX_BYTES`]) before the call runs.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Diff, Terminal, TerminalId, ToolCall as AcpToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use pith_core::{ToolCall, ToolResult};
use serde_json::Value;

/// Largest file whose old content goes into a `write` call's diff.
pub const DIFF_OLD_TEXT_MAX_BYTES: u64 = 1024 * 1024;

/// Longest title, in characters (a command line can be long).
const TITLE_MAX_CHARS: usize = 160;

/// What an editor shows of a call before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Presentation {
    /// The ACP kind (the editor picks an icon and a grouping from it).
    pub kind: ToolKind,
    /// One line naming what the call does.
    pub title: String,
    /// Files the call reads or writes, absolute.
    pub locations: Vec<ToolCallLocation>,
    /// The change of a `write` or `edit`, as a diff.
    pub content: Vec<ToolCallContent>,
}

/// How `call` is shown; relative paths are taken from `cwd`. `live`: the call is about
/// to run, so a `write`'s diff may read the file it replaces (not so in a replay, where
/// the file holds what came after).
pub fn present(call: &ToolCall, cwd: &Path, live: bool) -> Presentation {
    let args = &call.arguments;
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let path = text("path");
    let located = |path: Option<&str>| {
        path.map(|p| vec![ToolCallLocation::new(absolute(cwd, p))])
            .unwrap_or_default()
    };
    let mut content = Vec::new();
    let (kind, title, locations) = match call.name.as_str() {
        "read" => {
            let line = args
                .get("offset")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok());
            let locations = path
                .map(|p| vec![ToolCallLocation::new(absolute(cwd, p)).line(line)])
                .unwrap_or_default();
            let title = match (path, line) {
                (Some(p), Some(n)) => format!("Read {p} (from line {n})"),
                (Some(p), None) => format!("Read {p}"),
                (None, _) => "Read".to_owned(),
            };
            (ToolKind::Read, title, locations)
        }
        "write" => {
            if let (Some(p), Some(new_text)) = (path, text("content")) {
                let target = absolute(cwd, p);
                let old_text = if live { old_text(&target) } else { None };
                content.push(ToolCallContent::from(
                    Diff::new(target, new_text).old_text(old_text),
                ));
            }
            (
                ToolKind::Edit,
                path.map_or("Write".to_owned(), |p| format!("Write {p}")),
                located(path),
            )
        }
        "edit" => {
            if let (Some(p), Some(old), Some(new)) = (path, text("old_string"), text("new_string"))
            {
                content.push(ToolCallContent::from(
                    Diff::new(absolute(cwd, p), new).old_text(old.to_owned()),
                ));
            }
            (
                ToolKind::Edit,
                path.map_or("Edit".to_owned(), |p| format!("Edit {p}")),
                located(path),
            )
        }
        "bash" => (
            ToolKind::Execute,
            text("command").map_or("Run a command".to_owned(), |c| format!("`{}`", one_line(c))),
            Vec::new(),
        ),
        "grep" => {
            let pattern = text("pattern").unwrap_or_default();
            let title = match path {
                Some(p) => format!("Search `{}` in {p}", one_line(pattern)),
                None => format!("Search `{}`", one_line(pattern)),
            };
            (ToolKind::Search, title, located(path))
        }
        "glob" => (
            ToolKind::Search,
            format!("Find `{}`", one_line(text("pattern").unwrap_or_default())),
            located(path),
        ),
        "ls" => (
            ToolKind::Read,
            format!("List {}", path.unwrap_or(".")),
            located(path.or(Some("."))),
        ),
        "task" => {
            let agent = text("agent").unwrap_or("explore");
            let title = match text("description") {
                Some(d) => format!("Task ({agent}): {}", one_line(d)),
                None => format!("Task ({agent})"),
            };
            (ToolKind::Think, title, Vec::new())
        }
        "load_mcp_tools" => (ToolKind::Other, "Load MCP tools".to_owned(), Vec::new()),
        name => match name.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
            Some((server, tool)) => (ToolKind::Other, format!("{server}: {tool}"), Vec::new()),
            None => (ToolKind::Other, name.to_owned(), Vec::new()),
        },
    };
    Presentation {
        kind,
        title: cut(&title),
        locations,
        content,
    }
}

/// The `tool_call` announcing `call` as running, with `id` as its ACP id (`live`: see
/// [`present`]).
pub fn started(id: &str, call: &ToolCall, cwd: &Path, live: bool) -> AcpToolCall {
    let shown = present(call, cwd, live);
    AcpToolCall::new(ToolCallId::new(id), shown.title)
        .kind(shown.kind)
        .status(ToolCallStatus::InProgress)
        .locations(shown.locations)
        .content(shown.content)
        .raw_input(call.arguments.clone())
}

/// The `tool_call_update` ending the call `id` with `result`: what the model saw (a
/// `bash` output already squashed), failed when the tool failed or refused.
/// A `bash` call that ran in the editor's `terminal` keeps showing it, above that text.
pub fn finished(id: &str, result: &ToolResult, terminal: Option<String>) -> ToolCallUpdate {
    let status = if result.is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let mut fields = ToolCallUpdateFields::new().status(status);
    let mut content = Vec::new();
    if let Some(terminal) = terminal {
        content.push(ToolCallContent::Terminal(Terminal::new(TerminalId::new(
            terminal,
        ))));
    }
    if !result.content.is_empty() {
        content.push(ToolCallContent::from(result.content.clone()));
    }
    if !content.is_empty() {
        fields = fields.content(content);
    }
    ToolCallUpdate::new(ToolCallId::new(id), fields)
}

fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

/// The text a `write` replaces, when it is a small UTF-8 file.
fn old_text(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() || metadata.len() > DIFF_OLD_TEXT_MAX_BYTES {
        return None;
    }
    String::from_utf8(std::fs::read(path).ok()?).ok()
}

fn one_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default().trim();
    if text.trim().lines().nth(1).is_some() {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

fn cut(title: &str) -> String {
    match title.char_indices().nth(TITLE_MAX_CHARS) {
        Some((at, _)) => format!("{}…", &title[..at]),
        None => title.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn reads_name_the_file_and_its_line() {
        let shown = present(
            &call("read", json!({"path": "src/lib.rs", "offset": 40})),
            Path::new("/w"),
            true,
        );
        assert_eq!(shown.kind, ToolKind::Read);
        assert_eq!(shown.title, "Read src/lib.rs (from line 40)");
        assert_eq!(
            shown.locations,
            vec![ToolCallLocation::new("/w/src/lib.rs").line(40)]
        );
    }

    #[test]
    fn an_edit_is_a_diff_of_the_replaced_text() {
        let shown = present(
            &call(
                "edit",
                json!({"path": "/abs/a.rs", "old_string": "x", "new_string": "y"}),
            ),
            Path::new("/w"),
            true,
        );
        assert_eq!(shown.kind, ToolKind::Edit);
        assert_eq!(
            shown.content,
            vec![ToolCallContent::from(
                Diff::new("/abs/a.rs", "y").old_text("x".to_owned())
            )]
        );
    }

    #[test]
    fn a_write_diffs_against_the_file_it_replaces() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old.txt"), "before\n").unwrap();
        let replace = present(
            &call("write", json!({"path": "old.txt", "content": "after\n"})),
            dir.path(),
            true,
        );
        assert_eq!(
            replace.content,
            vec![ToolCallContent::from(
                Diff::new(dir.path().join("old.txt"), "after\n").old_text("before\n".to_owned())
            )]
        );
        let create = present(
            &call("write", json!({"path": "new.txt", "content": "fresh"})),
            dir.path(),
            true,
        );
        assert_eq!(
            create.content,
            vec![ToolCallContent::from(Diff::new(
                dir.path().join("new.txt"),
                "fresh"
            ))]
        );
    }

    #[test]
    fn commands_searches_tasks_and_mcp_tools_get_their_kinds() {
        let cwd = Path::new("/w");
        let bash = present(
            &call("bash", json!({"command": "cargo test\n--quiet"})),
            cwd,
            true,
        );
        assert_eq!(
            (bash.kind, bash.title.as_str()),
            (ToolKind::Execute, "`cargo test …`")
        );
        let grep = present(&call("grep", json!({"pattern": "fn main"})), cwd, true);
        assert_eq!(grep.kind, ToolKind::Search);
        let task = present(
            &call(
                "task",
                json!({"description": "map the crate", "prompt": "…"}),
            ),
            cwd,
            true,
        );
        assert_eq!(task.title, "Task (explore): map the crate");
        let mcp = present(&call("mcp__time__get_time", json!({})), cwd, true);
        assert_eq!(
            (mcp.kind, mcp.title.as_str()),
            (ToolKind::Other, "time: get_time")
        );
        let broken = present(&call("read", json!("{not json")), cwd, true);
        assert_eq!(broken.title, "Read");
    }

    #[test]
    fn a_failed_result_is_a_failed_update_with_what_the_model_saw() {
        let update = finished("c1", &ToolResult::new("c1", "denied", true), None);
        assert_eq!(update.fields.status, Some(ToolCallStatus::Failed));
        assert_eq!(
            update.fields.content,
            Some(vec![ToolCallContent::from("denied".to_owned())])
        );
    }

    #[test]
    fn long_titles_are_cut() {
        let command = "x".repeat(500);
        let shown = present(
            &call("bash", json!({"command": command})),
            Path::new("/"),
            true,
        );
        assert!(shown.title.chars().count() <= TITLE_MAX_CHARS + 1);
        assert!(shown.title.ends_with('…'));
    }
}
