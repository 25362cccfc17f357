//! The `grep` tool: regex search over the workspace with ripgrep's libraries
//! (`grep-regex`, `grep-searcher`, `ignore`), one `path:line:text` line per match, binary
//! files skipped, results capped with a note saying how to narrow the search.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::GlobMatcher;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use pith_core::ToolError;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::arguments::object_schema;
use crate::config::ToolEnv;
use crate::read_only::{blocking, Answer, Call, ReadOnly, ReadOnlyTool};
use crate::squash;
use crate::workspace::Workspace;

/// `grep {pattern, path?, glob?, case_insensitive?}`.
pub type GrepTool = ReadOnly<Grep>;

/// What is grep's own (see [`crate::read_only`] for the rest).
pub struct Grep;

/// The arguments of `grep`.
#[derive(Deserialize)]
pub struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

/// A file-name filter: a glob without `/` matches the file name at any depth, one with
/// `/` matches the path relative to the search root.
pub(crate) struct NameFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl NameFilter {
    pub(crate) fn new(glob: &str) -> Result<Self, ToolError> {
        let matcher = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|err| ToolError::InvalidArguments(format!("invalid glob `{glob}`: {err}")))?
            .compile_matcher();
        Ok(Self {
            matcher,
            whole_path: glob.contains('/'),
        })
    }

    pub(crate) fn matches(&self, base: &Path, path: &Path) -> bool {
        if self.whole_path {
            self.matcher
                .is_match(path.strip_prefix(base).unwrap_or(path))
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        }
    }
}

struct Search {
    base: PathBuf,
    pattern: String,
    filter: Option<NameFilter>,
    case_insensitive: bool,
    max_matches: usize,
    max_line_chars: usize,
}

fn search(
    search: Search,
    workspace: &Workspace,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(search.case_insensitive)
        .build(&search.pattern)
        .map_err(|err| {
            ToolError::InvalidArguments(format!("invalid regex `{}`: {err}", search.pattern))
        })?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut out = String::new();
    let mut matches = 0usize;
    let mut files_with_matches = 0usize;
    let mut capped = false;
    for entry in crate::walk::walker(&search.base) {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if let Some(filter) = &search.filter {
            if !filter.matches(&search.base, path) {
                continue;
            }
        }
        let shown = workspace.display(path);
        let before = matches;
        let result = searcher.search_path(
            &matcher,
            path,
            Lossy(|line_number, line| {
                if matches >= search.max_matches {
                    capped = true;
                    return Ok(false);
                }
                matches += 1;
                let line = line.trim_end_matches(['\n', '\r']);
                out.push_str(&shown);
                out.push(':');
                out.push_str(&line_number.to_string());
                out.push(':');
                match line.char_indices().nth(search.max_line_chars) {
                    None => out.push_str(line),
                    Some((cut, _)) => {
                        out.push_str(&line[..cut]);
                        out.push_str(&squash::chars_omitted_suffix(line[cut..].chars().count()));
                    }
                }
                out.push('\n');
                Ok(true)
            }),
        );
        // Unreadable files are skipped like ripgrep does; the search goes on.
        let _ = result;
        if matches > before {
            files_with_matches += 1;
        }
        if capped {
            break;
        }
    }
    if matches == 0 {
        return Ok(format!(
            "No matches for `{}` in {}",
            search.pattern,
            workspace.display(&search.base)
        ));
    }
    if capped {
        out.push_str(&format!(
            "[stopped after {matches} matches in {files_with_matches} files; narrow the \
             pattern, path or glob to see the rest]\n"
        ));
    }
    Ok(out)
}

#[async_trait]
impl ReadOnlyTool for Grep {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str =
        "Search file contents with a regular expression (ripgrep syntax), honouring \
         .gitignore and skipping binary files. Returns `path:line:text` for each matching \
         line, in path order.";
    type Args = GrepArgs;

    fn parameters(_env: &ToolEnv) -> serde_json::Value {
        object_schema(
            json!({
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: the workspace root)."},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs` (any depth) or `src/**/*.rs`."},
                "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."}
            }),
            &["pattern"],
        )
    }

    fn path(args: &GrepArgs) -> Result<&str, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`pattern` must not be empty".into(),
            ));
        }
        Ok(args.path.as_deref().unwrap_or("."))
    }

    async fn answer(call: Call<'_, GrepArgs>) -> Result<Answer, ToolError> {
        let (env, args) = (call.env, call.args);
        let filter = args.glob.as_deref().map(NameFilter::new).transpose()?;
        let spec = Search {
            base: call.target.path,
            pattern: args.pattern,
            filter,
            case_insensitive: args.case_insensitive,
            max_matches: env.limits.grep_max_matches,
            max_line_chars: env.limits.read_max_line_chars,
        };
        let env = env.clone();
        let text = blocking(Self::NAME, call.ctx, move |cancel| {
            search(spec, &env.workspace, &cancel)
        })
        .await?;
        Ok(Answer::Captured(text))
    }
}
