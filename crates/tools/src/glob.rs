//! The `glob` tool: file paths matching a glob pattern (`**/*.rs`, `src/*.toml`), walked
//! with ripgrep's `ignore` (so `.gitignore`d files are not listed), in path order, capped
//! with a note. Patterns use real glob semantics: `*` stays within one directory, `**`
//! crosses directories.

use std::path::Path;

use async_trait::async_trait;
use pith_core::ToolError;
use serde::Deserialize;
use serde_json::json;

use crate::arguments::object_schema;
use crate::config::ToolEnv;
use crate::read_only::{blocking, Answer, Call, ReadOnly, ReadOnlyTool};

/// `glob {pattern, path?}`.
pub type GlobTool = ReadOnly<Glob>;

/// What is glob's own (see [`crate::read_only`] for the rest).
pub struct Glob;

/// The arguments of `glob`.
#[derive(Deserialize)]
pub struct GlobArgs {
    pattern: String,
    path: Option<String>,
}

impl GlobArgs {
    /// The directory to search from and the glob below it (an absolute pattern names its
    /// own directory).
    fn split(&self) -> (&str, &str) {
        let (absolute_base, pattern) = split_absolute(&self.pattern);
        let base = absolute_base.or(self.path.as_deref()).unwrap_or(".");
        (base, pattern)
    }
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
impl ReadOnlyTool for Glob {
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str =
        "List files whose path matches a glob pattern, e.g. `**/*.rs` or `src/*.toml` \
         (`*` stays within a directory, `**` crosses directories). Honours .gitignore. \
         Paths are returned in sorted order.";
    type Args = GlobArgs;

    fn parameters(_env: &ToolEnv) -> serde_json::Value {
        object_schema(
            json!({
                "pattern": {"type": "string", "description": "Glob pattern, relative to `path`."},
                "path": {"type": "string", "description": "Directory to search from (default: the workspace root)."}
            }),
            &["pattern"],
        )
    }

    fn path(args: &GlobArgs) -> Result<&str, ToolError> {
        let (base, pattern) = args.split();
        if pattern.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`pattern` must not be empty".into(),
            ));
        }
        Ok(base)
    }

    async fn answer(call: Call<'_, GlobArgs>) -> Result<Answer, ToolError> {
        let (base, pattern) = call.args.split();
        if !call.target.path.is_dir() {
            return Err(ToolError::Failed(format!("`{base}` is not a directory")));
        }
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|err| ToolError::InvalidArguments(format!("invalid glob `{pattern}`: {err}")))?
            .compile_matcher();
        let env = call.env.clone();
        let root = call.target.path;
        let max = env.limits.glob_max_paths;
        let pattern_text = pattern.to_owned();
        let text = blocking(Self::NAME, call.ctx, move |cancel| {
            let mut out = String::new();
            let mut found = 0usize;
            for entry in crate::walk::walker(&root) {
                if cancel.is_cancelled() {
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
        })
        .await?;
        Ok(Answer::Captured(text))
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
