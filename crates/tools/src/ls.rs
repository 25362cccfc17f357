//! The `ls` tool: one directory's entries with their type and size, sorted by name,
//! hidden entries included, symlinks shown with their target, capped with a note.

use std::path::Path;

use async_trait::async_trait;
use pith_core::ToolError;
use serde::Deserialize;
use serde_json::json;

use crate::arguments::object_schema;
use crate::config::ToolEnv;
use crate::read_only::{blocking, Answer, Call, ReadOnly, ReadOnlyTool};
use crate::workspace::describe_io;

/// `ls {path?}`.
pub type LsTool = ReadOnly<Ls>;

/// What is ls's own (see [`crate::read_only`] for the rest).
pub struct Ls;

/// The arguments of `ls`.
#[derive(Deserialize)]
pub struct LsArgs {
    path: Option<String>,
}

/// One entry line: `dir  -  name/`, `file  1234  name`, `link  -  name -> target`.
fn entry_line(path: &Path, name: &str) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".to_owned());
            format!("link  {:>10}  {name} -> {target}", "-")
        }
        Ok(m) if m.is_dir() => format!("dir   {:>10}  {name}/", "-"),
        Ok(m) if m.is_file() => format!("file  {:>10}  {name}", m.len()),
        Ok(_) => format!("other {:>10}  {name}", "-"),
        Err(err) => format!("?     {:>10}  {name} ({})", "-", describe_io(&err)),
    }
}

fn list(dir: &Path, shown: &str, max: usize) -> Result<String, ToolError> {
    let metadata = std::fs::metadata(dir).map_err(|err| {
        ToolError::Failed(format!("cannot list `{shown}`: {}", describe_io(&err)))
    })?;
    if !metadata.is_dir() {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown.to_owned());
        return Ok(format!("{}\n", entry_line(dir, &name)));
    }
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|err| ToolError::Failed(format!("cannot list `{shown}`: {}", describe_io(&err))))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let total = names.len();
    let mut out = format!("{shown}/ ({total} entries)\n");
    for name in names.iter().take(max) {
        out.push_str(&entry_line(&dir.join(name), name));
        out.push('\n');
    }
    if total > max {
        out.push_str(&format!(
            "[showing the first {max} of {total} entries; use glob to find specific files]\n"
        ));
    }
    Ok(out)
}

#[async_trait]
impl ReadOnlyTool for Ls {
    const NAME: &'static str = "ls";
    const DESCRIPTION: &'static str =
        "List a directory: each entry's type (file, dir, link), size in bytes and name, \
         sorted by name, hidden entries included.";
    const ARGUMENTS_OPTIONAL: bool = true;
    type Args = LsArgs;

    fn parameters(_env: &ToolEnv) -> serde_json::Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "Directory to list (default: the workspace root)."}
            }),
            &[],
        )
    }

    fn path(args: &LsArgs) -> Result<&str, ToolError> {
        Ok(args.path.as_deref().unwrap_or("."))
    }

    async fn answer(call: Call<'_, LsArgs>) -> Result<Answer, ToolError> {
        let Call {
            env, target, ctx, ..
        } = call;
        let shown = env.workspace.display(&target.path);
        let max = env.limits.ls_max_entries;
        let dir = target.path;
        let text = blocking(Self::NAME, ctx, move |_| list(&dir, &shown, max)).await?;
        Ok(Answer::Captured(text))
    }
}
