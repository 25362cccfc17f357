//! One agent: its definition file in Claude Code's format (YAML front matter, then the
//! system prompt), and the built-in `explore` agent.
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a diff for bugs; use after an edit.
//! tools: Read, Grep, Glob        # or a YAML list; default: the read-only tools
//! model: anthropic/claude-haiku-4-5   # default (or `inherit`): the parent's model
//! max_turns: 12                  # most model requests of the child's turn
//! ---
//! You review code. Report each bug with its path and line.
//! ```
//!
//! Other front-matter keys (Claude Code's `color`, …) are ignored. Tool names are matched
//! without regard to case (`Read` is `read`, `MultiEdit` is `edit`); names pith has no
//! tool for are left out and reported.

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// The tools an agent gets when its file names none: the read-only ones.
pub const READ_ONLY_TOOLS: [&str; 4] = ["read", "grep", "glob", "ls"];

/// Every built-in tool a child may be given.
pub const CHILD_TOOLS: [&str; 7] = ["read", "grep", "glob", "ls", "write", "edit", "bash"];

/// The name of the built-in agent `task` runs when no agent is named.
pub const EXPLORE: &str = "explore";

const EXPLORE_DESCRIPTION: &str = "Read-only investigation of the workspace: finds where \
something is defined or used, how a feature works, which files matter. Answers with a \
concise report citing paths and line numbers.";

const EXPLORE_PROMPT: &str = "You are an exploration agent working for another agent. \
Your tools only read: use grep, glob, ls and read to investigate the workspace and answer \
the task you are given.

Work efficiently: search before reading, read only the parts of files you need, and stop \
as soon as you can answer.

Your final answer is the only thing the other agent sees, so make it a concise, \
self-contained report:
- answer the question first;
- cite every fact with its path and line numbers (`src/lib.rs:42-57`);
- quote only the few lines that matter;
- say what you could not find or verify.";

/// Where a definition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentOrigin {
    /// Built into pith.
    BuiltIn,
    /// A file of the user's (`~/.config/pith/agents/`).
    User(PathBuf),
    /// A file of the project's (`.pith/agents/`), used once trusted.
    Project(PathBuf),
}

/// An agent the `task` tool can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    /// What the model names it by.
    pub name: String,
    /// When to use it (shown to the model in the `task` tool's description).
    pub description: String,
    /// The tools the child gets (pith's names), in pith's order.
    pub tools: Vec<String>,
    /// `provider/model`; `None` runs the parent's model.
    pub model: Option<String>,
    /// Most model requests of the child's turn; `None` keeps the parent's limit.
    pub max_turns: Option<u32>,
    /// The child's system prompt.
    pub prompt: String,
    /// Where it came from.
    pub origin: AgentOrigin,
    /// Tool names of the file that pith has no tool for (left out).
    pub unknown_tools: Vec<String>,
}

impl AgentDefinition {
    /// The built-in `explore` agent: read-only tools, the parent's model.
    pub fn explore() -> Self {
        Self {
            name: EXPLORE.into(),
            description: EXPLORE_DESCRIPTION.into(),
            tools: READ_ONLY_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            model: None,
            max_turns: None,
            prompt: EXPLORE_PROMPT.into(),
            origin: AgentOrigin::BuiltIn,
            unknown_tools: Vec::new(),
        }
    }

    /// Parses the definition file `text` (read from `path`, named in errors).
    pub fn parse(text: &str, origin: AgentOrigin) -> Result<Self, String> {
        let (front, body) = split_front_matter(text)
            .ok_or("it does not start with a `---` front matter block closed by `---`")?;
        let docs = YamlLoader::load_from_str(front)
            .map_err(|e| format!("its front matter is not valid YAML: {e}"))?;
        let fields = match docs.into_iter().next() {
            Some(Yaml::Hash(hash)) => hash,
            Some(Yaml::Null) | None => Default::default(),
            Some(_) => return Err("its front matter is not a mapping of keys".into()),
        };
        let get = |key: &str| fields.get(&Yaml::String(key.to_owned()));
        let name = match get("name") {
            Some(Yaml::String(name)) => name.trim().to_owned(),
            Some(_) => return Err("`name` must be a string".into()),
            None => return Err("`name` is missing".into()),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "`name` {name:?} must be letters, digits, `-` or `_`"
            ));
        }
        let description = match get("description") {
            Some(Yaml::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
            Some(_) => return Err("`description` must be a non-empty string".into()),
            None => return Err("`description` is missing".into()),
        };
        let listed = match get("tools") {
            None | Some(Yaml::Null) => None,
            Some(Yaml::String(list)) => Some(
                list.split(',')
                    .map(|t| t.trim().to_owned())
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>(),
            ),
            Some(Yaml::Array(items)) => Some(
                items
                    .iter()
                    .map(|item| match item {
                        Yaml::String(t) => Ok(t.trim().to_owned()),
                        _ => Err("`tools` must list tool names".to_owned()),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => return Err("`tools` must be a comma-separated string or a list".into()),
        };
        let (tools, unknown_tools) = match listed {
            None => (
                READ_ONLY_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
                Vec::new(),
            ),
            Some(names) => pith_tools_for(&names),
        };
        let model = match get("model") {
            None | Some(Yaml::Null) => None,
            Some(Yaml::String(model)) if model.trim() == "inherit" => None,
            Some(Yaml::String(model)) if !model.trim().is_empty() => Some(model.trim().to_owned()),
            Some(_) => return Err("`model` must be `provider/model` or `inherit`".into()),
        };
        let max_turns = match get("max_turns") {
            None | Some(Yaml::Null) => None,
            Some(Yaml::Integer(n)) if *n > 0 && *n <= i64::from(u32::MAX) => Some(*n as u32),
            Some(_) => return Err("`max_turns` must be a positive integer".into()),
        };
        let prompt = body.trim().to_owned();
        if prompt.is_empty() {
            return Err("its body (the agent's system prompt) is empty".into());
        }
        Ok(Self {
            name,
            description,
            tools,
            model,
            max_turns,
            prompt,
            origin,
            unknown_tools,
        })
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &Path, origin: AgentOrigin) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        Self::parse(&text, origin)
    }

    /// True when every tool of the agent only reads.
    pub fn read_only(&self) -> bool {
        self.tools
            .iter()
            .all(|tool| READ_ONLY_TOOLS.contains(&tool.as_str()))
    }
}

/// The front matter and the body of `text`, or `None` without a front matter block.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// pith's tools for the names of a definition file, in pith's order, and the names pith
/// has no tool for.
fn pith_tools_for(names: &[String]) -> (Vec<String>, Vec<String>) {
    let mut wanted = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        let lower = name.to_ascii_lowercase();
        let tool = match lower.as_str() {
            "multiedit" => "edit",
            other => other,
        };
        match CHILD_TOOLS.iter().find(|t| **t == tool) {
            Some(tool) => wanted.push(*tool),
            None => unknown.push(name.clone()),
        }
    }
    let tools = CHILD_TOOLS
        .iter()
        .filter(|t| wanted.contains(t))
        .map(|t| (*t).to_owned())
        .collect();
    (tools, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentDefinition, String> {
        AgentDefinition::parse(text, AgentOrigin::BuiltIn)
    }

    #[test]
    fn a_claude_code_agent_file_parses() {
        let agent = parse(
            "---\nname: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep, MultiEdit, WebFetch\nmodel: openai/gpt-5\nmax_turns: 7\ncolor: blue\n---\nYou review code.\n",
        )
        .unwrap();
        assert_eq!(agent.name, "reviewer");
        assert_eq!(agent.description, "Reviews diffs.");
        assert_eq!(agent.tools, ["read", "grep", "edit"]);
        assert_eq!(agent.unknown_tools, ["WebFetch"]);
        assert_eq!(agent.model.as_deref(), Some("openai/gpt-5"));
        assert_eq!(agent.max_turns, Some(7));
        assert_eq!(agent.prompt, "You review code.");
        assert!(!agent.read_only());
    }

    #[test]
    fn tools_may_be_a_list_and_default_to_the_read_only_ones() {
        let listed =
            parse("---\nname: a\ndescription: d\ntools:\n  - bash\n  - Read\n---\nP").unwrap();
        assert_eq!(listed.tools, ["read", "bash"]);
        let default = parse("---\nname: a\ndescription: d\nmodel: inherit\n---\nP").unwrap();
        assert_eq!(default.tools, READ_ONLY_TOOLS);
        assert!(default.read_only());
        assert_eq!(default.model, None);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases = [
            ("no front matter", "name: a\n", "front matter"),
            ("unclosed", "---\nname: a\n", "front matter"),
            (
                "no name",
                "---\ndescription: d\n---\nP",
                "`name` is missing",
            ),
            (
                "bad name",
                "---\nname: a b\ndescription: d\n---\nP",
                "`name`",
            ),
            ("no description", "---\nname: a\n---\nP", "`description`"),
            (
                "empty body",
                "---\nname: a\ndescription: d\n---\n  \n",
                "body",
            ),
            (
                "bad turns",
                "---\nname: a\ndescription: d\nmax_turns: -1\n---\nP",
                "max_turns",
            ),
            ("bad yaml", "---\nname: [a\n---\nP", "YAML"),
            (
                "bad tools",
                "---\nname: a\ndescription: d\ntools: 3\n---\nP",
                "`tools`",
            ),
        ];
        for (what, text, expected) in cases {
            let error = parse(text).expect_err(what);
            assert!(error.contains(expected), "{what}: {error}");
        }
    }

    #[test]
    fn explore_is_read_only_and_asks_for_paths_and_lines() {
        let explore = AgentDefinition::explore();
        assert!(explore.read_only());
        assert!(explore.prompt.contains("path and line numbers"));
    }
}
