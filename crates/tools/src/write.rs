//! The `write` tool: create or replace a whole file. On the disk the replacement is
//! atomic ([`write_atomically`]); with an editor's buffers ([`crate::files`]) the old
//! text for the diff comes from the editor, and the new text goes to it.

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

/// Largest old file whose content is diffed against the new one.
const DIFF_MAX_BYTES: u64 = 1024 * 1024;

/// `write {path, content}`.
pub struct WriteTool {
    env: Arc<ToolEnv>,
}

impl WriteTool {
    /// The tool over `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

/// The arguments of `write`.
#[derive(Deserialize)]
pub struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait]
impl TypedTool for WriteTool {
    const NAME: &'static str = "write";
    type Args = WriteArgs;

    fn description(&self) -> &str {
        "Create a file, or replace a file's whole content, inside the workspace. Missing \
         parent directories are created. Prefer edit for changing part of an existing \
         file. Returns what changed as a short diff."
    }

    fn parameters(&self) -> serde_json::Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "File path inside the workspace (relative to its root, or absolute)."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            }),
            &["path", "content"],
        )
    }

    async fn call(&self, args: WriteArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let target = self.env.workspace.resolve_write(&args.path)?;
        let shown = self.env.workspace.display(&target);
        let metadata = std::fs::metadata(&target).ok();
        if metadata.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(ToolError::Failed(format!(
                "`{shown}` is a directory; give a file path"
            )));
        }
        let files = Files::new(self.env.files.as_deref(), &ctx.cancel);
        let too_big = metadata.as_ref().is_some_and(|m| m.len() > DIFF_MAX_BYTES);
        // The editor's buffer is read whatever the disk says: it may exist before the
        // file does on disk.
        let old = if files.reader().is_some() || !too_big {
            match files.read(&target).await {
                Ok(old) => old,
                Err(err) if crate::files::is_cancelled(&err) => return Err(ToolError::Cancelled),
                Err(_) => None,
            }
        } else {
            None
        };
        let exists = metadata.is_some() || old.is_some();
        let diff = match (&old, exists) {
            (Some(old), _) => Some(short_diff(
                &shown,
                old,
                &args.content,
                self.env.limits.diff_max_lines,
            )),
            (None, false) => Some(short_diff(
                &shown,
                "",
                &args.content,
                self.env.limits.diff_max_lines,
            )),
            (None, true) => None,
        };
        self.env
            .permissions
            .authorize_call(
                Action::Edit {
                    tool: "write".into(),
                    summary: format!(
                        "{} {shown} ({} bytes)",
                        if exists { "overwrite" } else { "create" },
                        args.content.len()
                    ),
                    preview: diff.clone(),
                },
                ctx,
            )
            .await?;
        let path = target.clone();
        let content = args.content;
        let new_len = content.len();
        let effect = FileEffect {
            path: shown.clone(),
            action: if exists {
                FileAction::Written
            } else {
                FileAction::Created
            },
            lines: None,
            fingerprint: Some(pith_core::effect::fingerprint(content.as_bytes())),
        };
        files.replace(&path, content.clone(), &shown).await?;
        let report = match (exists, old) {
            (false, _) => format!(
                "Created {shown} ({} lines, {new_len} bytes)",
                content.lines().count()
            ),
            (true, Some(old)) if old == content => {
                format!("Wrote {shown}: content unchanged ({new_len} bytes)")
            }
            (true, Some(_)) => format!("Updated {shown}\n{}", diff.unwrap_or_default()),
            (true, None) => format!("Replaced {shown} ({new_len} bytes; old content not shown)"),
        };
        Ok(ToolOutput::ok(
            self.env
                .capture
                .finish(&ctx.call_id, RawOutput::plain("write", &report)),
        )
        .with_effect(effect))
    }
}

#[cfg(test)]
mod tests {
    use crate::files::write_atomically;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_keeps_existing_permissions_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751, "an executable script must stay executable");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file left behind");
    }

    #[test]
    fn new_files_are_not_private_and_parents_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/new.txt");
        write_atomically(&path, b"x").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_ne!(
            mode & 0o044,
            0,
            "new file {mode:o} should be readable by others, like an editor's"
        );
    }
}
