//! The `glob` tool: file paths matching a glob pattern (`**/*.rs`, `src/*.toml`), walked
//! with ripgrep's `ignore` (so `.gitignore`d files are not listed), in path order, capped
//! with a note. Patterns use real glob semantics: `*` stays within one directory, `**`
//! crosses directories.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use pith_core::{Tool, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use crate::capture::RawOutput;
use crate::config::ToolEnv;

/// `glob {pattern, path?}`.
pub struct GlobTool {
    env: Arc<ToolEnv>,
}

impl GlobTool {
    /// The tool over `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

/// Splits an absolute pattern (`/repo/src/**/*.rs`) into its literal directory and the
/// glob below it; relative patterns are returned unchanged with no directory.
fn split_absolute(pattern: &str) -> (Option<&str>, &str) {
    if !pattern.starts_with('/') {
        return (None, pattern);
    }
    let meta = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    match pattern[..meta].rfind('/') {
        Some(0) => (Some("/"), &pattern[1..]),
        Some(slash) => (Some(&pattern[..slash]), &pattern[slash + 1..]),
        None => (None, pattern),
    }
}

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "List files whose path matches a glob pattern, e.g. `**/*.rs` or `src/*.toml` \
         (`*` stays within a directory, `**` crosses directories). Honours .gitignore. \
         Paths are returned in sorted order."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, relative to `path`."},
                "path": {"type": "string", "description": "Directory to search from (default: the workspace root)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: GlobArgs = crate::parse_args(arguments)?;
        let (absolute_base, pattern) = split_absolute(&args.pattern);
        if pattern.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`pattern` must not be empty".into(),
            ));
        }
        let base = absolute_base.or(args.path.as_deref()).unwrap_or(".");
        let target = crate::authorize_read(&self.env, "glob", base, ctx).await?;
        if !target.path.is_dir() {
            return Err(ToolError::Failed(format!("`{base}` is not a directory")));
        }
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|err| ToolError::InvalidArguments(format!("invalid glob `{pattern}`: {err}")))?
            .compile_matcher();
        let env = self.env.clone();
        let cancel = ctx.cancel.child_token();
        let worker_cancel = cancel.clone();
        let _stop_worker = cancel.drop_guard();
        let root = target.path;
        let max = self.env.limits.glob_max_paths;
        let pattern_text = pattern.to_owned();
        let listed = tokio::task::spawn_blocking(move || {
            let mut out = String::new();
            let mut found = 0usize;
            for entry in crate::walk::walker(&root) {
                if worker_cancel.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                let Ok(entry) = entry else { continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let relative = entry.path().strip_prefix(&root).unwrap_or(Path::new(""));
                if !matcher.is_match(relative) {
                    continue;
                }
                if found == max {
                    out.push_str(&format!(
                        "[stopped after {max} paths; use a more specific pattern or path]\n"
                    ));
                    return Ok(out);
                }
                found += 1;
                out.push_str(&env.workspace.display(entry.path()));
                out.push('\n');
            }
            if found == 0 {
                out = format!(
                    "No files match `{pattern_text}` under {}",
                    env.workspace.display(&root)
                );
            }
            Ok(out)
        });
        let text = tokio::select! {
            listed = listed => listed.map_err(|err| ToolError::Failed(format!("glob failed: {err}")))??,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        Ok(ToolOutput::ok(
            self.env
                .capture
                .finish(&ctx.call_id, RawOutput::plain("glob", &text)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_patterns_are_split_at_the_first_wildcard() {
        assert_eq!(split_absolute("**/*.rs"), (None, "**/*.rs"));
        assert_eq!(
            split_absolute("/repo/src/**/*.rs"),
            (Some("/repo/src"), "**/*.rs")
        );
        assert_eq!(split_absolute("/*.txt"), (Some("/"), "*.txt"));
    }
}
