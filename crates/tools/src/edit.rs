//! The `edit` tool: exact string replacement in an existing text file. `old_string` must
//! match exactly once unless `replace_all`; failures say why (not found, found N times
//! at which lines, CRLF mismatch, binary or non-UTF-8 file) and change nothing. The
//! text is read and the replacement written through [`crate::files`]: the disk
//! (atomically), or the editor's buffer when the front-end offers one.

use std::sync::Arc;

use async_trait::async_trait;
use pith_core::{FileAction, FileEffect, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use crate::arguments::object_schema;
use crate::capture::RawOutput;
use crate::config::ToolEnv;
use crate::diff::short_diff;
use crate::files::Files;
use crate::permission::Action;
use crate::typed::TypedTool;
use crate::workspace::describe_io;

/// Largest file edit loads into memory.
const EDIT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// `edit {path, old_string, new_string, replace_all?}`.
pub struct EditTool {
    env: Arc<ToolEnv>,
}

impl EditTool {
    /// The tool over `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

/// The arguments of `edit`.
#[derive(Deserialize)]
pub struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Line numbers (1-based) where `needle` starts in `haystack`, at most `max` of them.
fn match_lines(haystack: &str, needle: &str, max: usize) -> Vec<usize> {
    haystack
        .match_indices(needle)
        .take(max)
        .map(|(at, _)| haystack[..at].matches('\n').count() + 1)
        .collect()
}

/// Reads `path` as UTF-8 text for editing, from the editor's buffer or the disk.
async fn read_text(
    files: Files<'_>,
    path: &std::path::Path,
    shown: &str,
) -> Result<String, ToolError> {
    match files.read(path).await {
        Ok(Some(text)) if text.contains('\0') => Err(ToolError::Failed(format!(
            "`{shown}` is a binary file; edit works on text files only"
        ))),
        Ok(Some(text)) => Ok(text),
        Err(err) if crate::files::is_cancelled(&err) => Err(ToolError::Cancelled),
        Ok(None) => Err(ToolError::Failed(format!(
            "`{shown}` does not exist; use write to create it"
        ))),
        Err(err) if err.kind() == std::io::ErrorKind::InvalidData => {
            Err(ToolError::Failed(format!(
                "`{shown}` is not valid UTF-8, so an exact match cannot be guaranteed; nothing \
             was changed (use write to replace the whole file if needed)"
            )))
        }
        Err(err) => Err(ToolError::Failed(format!(
            "cannot read `{shown}`: {}",
            describe_io(&err)
        ))),
    }
}

/// Applies the replacement, or explains why it cannot be applied.
fn replace(
    text: &str,
    shown: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), ToolError> {
    let count = text.matches(old).count();
    if count == 0 {
        let mut message = format!(
            "`old_string` was not found in `{shown}`; nothing was changed. It must match the \
             file exactly, including whitespace and indentation: read the file again and \
             copy the text."
        );
        if text.contains("\r\n") && !old.contains("\r\n") && old.contains('\n') {
            message.push_str(" Note: this file uses CRLF (\\r\\n) line endings.");
        }
        return Err(ToolError::Failed(message));
    }
    if count > 1 && !replace_all {
        let lines = match_lines(text, old, 10)
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ToolError::Failed(format!(
            "`old_string` occurs {count} times in `{shown}` (starting at lines {lines}); \
             nothing was changed. Include more surrounding lines to make it unique, or set \
             replace_all to true to change every occurrence."
        )));
    }
    let updated = if replace_all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    Ok((updated, count))
}

#[async_trait]
impl TypedTool for EditTool {
    const NAME: &'static str = "edit";
    type Args = EditArgs;

    fn description(&self) -> &str {
        "Replace exact text in an existing file inside the workspace. `old_string` must \
         match the file exactly (whitespace included) and occur exactly once, unless \
         replace_all is true. Returns a short diff of the change."
    }

    fn parameters(&self) -> serde_json::Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "File path inside the workspace."},
                "old_string": {"type": "string", "description": "Exact text to replace."},
                "new_string": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
            }),
            &["path", "old_string", "new_string"],
        )
    }

    async fn call(&self, args: EditArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.old_string.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`old_string` must not be empty; use write to create a file".into(),
            ));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::InvalidArguments(
                "`old_string` and `new_string` are identical; there is nothing to change".into(),
            ));
        }
        let target = self.env.workspace.resolve_write(&args.path)?;
        let shown = self.env.workspace.display(&target);
        match std::fs::metadata(&target) {
            Ok(m) if m.is_file() && m.len() > EDIT_MAX_BYTES => {
                return Err(ToolError::Failed(format!(
                    "`{shown}` is {} bytes, more than edit handles ({EDIT_MAX_BYTES}); use \
                     bash (e.g. sed) for files this large",
                    m.len()
                )))
            }
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(ToolError::Failed(format!(
                    "`{shown}` is not a regular file"
                )))
            }
            // Not on disk: maybe an editor's unsaved new buffer (read_text says).
            Err(_) => {}
        }
        let files = Files::new(self.env.files.as_deref(), &ctx.cancel);
        let before = read_text(files, &target, &shown).await?;
        let (after, count) = replace(
            &before,
            &shown,
            &args.old_string,
            &args.new_string,
            args.replace_all,
        )?;
        let diff = short_diff(&shown, &before, &after, self.env.limits.diff_max_lines);
        self.env
            .permissions
            .authorize_call(
                Action::Edit {
                    tool: "edit".into(),
                    summary: format!(
                        "edit {shown}: replace {count} occurrence{}",
                        if count == 1 { "" } else { "s" }
                    ),
                    preview: Some(diff.clone()),
                },
                ctx,
            )
            .await?;
        // The user may have taken a while: refuse to clobber a file that changed meanwhile.
        if read_text(files, &target, &shown).await? != before {
            return Err(ToolError::Failed(format!(
                "`{shown}` changed while waiting for approval; nothing was changed. Read it \
                 again and retry."
            )));
        }
        let effect = FileEffect {
            path: shown.clone(),
            action: FileAction::Edited,
            lines: None,
            fingerprint: Some(pith_core::effect::fingerprint(after.as_bytes())),
        };
        files.replace(&target, after, &shown).await?;
        let report = format!(
            "Edited {shown}: replaced {count} occurrence{}\n{}",
            if count == 1 { "" } else { "s" },
            diff
        );
        Ok(ToolOutput::ok(
            self.env
                .capture
                .finish(&ctx.call_id, RawOutput::plain("edit", &report)),
        )
        .with_effect(effect))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_match_names_the_lines_and_changes_nothing() {
        let err = replace("a\nx\nb\nx\n", "f", "x", "y", false).unwrap_err();
        assert!(err.to_string().contains("occurs 2 times"), "{err}");
        assert!(err.to_string().contains("lines 2, 4"), "{err}");
        let (text, count) = replace("a\nx\nb\nx\n", "f", "x", "y", true).unwrap();
        assert_eq!((text.as_str(), count), ("a\ny\nb\ny\n", 2));
    }

    #[test]
    fn missing_text_mentions_crlf_when_that_is_the_likely_cause() {
        let err = replace("a\r\nb\r\n", "f", "a\nb", "c", false).unwrap_err();
        assert!(err.to_string().contains("CRLF"), "{err}");
    }
}
