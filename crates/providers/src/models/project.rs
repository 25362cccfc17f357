//! Reading what the system prompt needs from the machine: project instruction files,
//! the platform and today's date. Assembly itself is `pith_core::system_prompt`.

use std::path::Path;

use pith_core::system_prompt::{build_system_prompt, SystemPromptInputs};
use pith_core::thousands;
use pith_core::TokenCounter;

/// Project instruction files, read verbatim from the workspace root, in this order.
pub const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "PITH.md"];

/// Largest part of an instruction file read from disk: a file beyond it is cut whatever
/// the window (so a stray huge file is never read whole on every turn).
pub const MAX_INSTRUCTION_BYTES: usize = 4 * 1024 * 1024;

/// How many tokens of the project's instruction files the system prompt may carry, and
/// the counter that measures them (the `[context] instructions_percent` share of the
/// input budget).
#[derive(Clone, Copy)]
pub struct InstructionBudget<'a> {
    /// Most tokens of all instruction files together.
    pub max_tokens: usize,
    /// The model's token counter.
    pub counter: &'a dyn TokenCounter,
}

/// An instruction file cut to its share of the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutInstructions {
    /// `AGENTS.md` or `PITH.md`.
    pub name: String,
    /// Its size on disk.
    pub bytes: u64,
    /// Its tokens (estimated at 4 bytes a token beyond what was read).
    pub tokens: usize,
    /// The tokens the system prompt carries.
    pub kept_tokens: usize,
    /// The first line the system prompt leaves out (1-based), where `read` goes on.
    pub from_line: usize,
}

impl CutInstructions {
    /// The warning for the user: the file, its size, and the window it does not fit.
    pub fn warning(&self, input_budget: u64, window: u64) -> String {
        format!(
            "{} is {} bytes (about {} tokens), more than its share of this model's input budget ({} tokens of a {}-token window): the system prompt carries its first {} tokens and names the rest for the model to read (from line {}); [context] instructions_percent sets the share",
            self.name,
            thousands(self.bytes),
            thousands(self.tokens as u64),
            thousands(input_budget),
            thousands(window),
            thousands(self.kept_tokens as u64),
            self.from_line
        )
    }
}

/// The instruction files present in `root`, as (file name, content), each within what
/// is left of `budget` (the first file first). A file cut to fit ends with a note that
/// names it and the line to read on from. Unreadable files are reported in the content
/// rather than silently skipped.
pub fn load_project_instructions(
    root: &Path,
    budget: Option<InstructionBudget<'_>>,
) -> (Vec<(String, String)>, Vec<CutInstructions>) {
    let mut found = Vec::new();
    let mut cut = Vec::new();
    let mut left = budget.map(|b| b.max_tokens);
    for name in INSTRUCTION_FILES {
        let path = root.join(name);
        let bytes = match read_head(&path) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                found.push((
                    name.to_owned(),
                    format!("[{name} exists but could not be read: {err}]"),
                ));
                continue;
            }
        };
        let (head, size) = bytes;
        let text = String::from_utf8_lossy(&head).into_owned();
        let (Some(budget), Some(room)) = (budget, left) else {
            found.push((name.to_owned(), text));
            continue;
        };
        let read_tokens = budget.counter.count(&text);
        let unread = size.saturating_sub(head.len() as u64);
        let tokens = read_tokens + usize::try_from(unread.div_ceil(4)).unwrap_or(usize::MAX);
        if tokens <= room {
            left = Some(room - tokens);
            found.push((name.to_owned(), text));
            continue;
        }
        let kept = pith_core::summary::head_tokens(budget.counter, &text, room).unwrap_or_default();
        let kept_tokens = budget.counter.count(&kept);
        // The first line not kept whole: the next one when the cut fell on a line break.
        let whole_lines = kept.lines().count();
        let from_line = if text[kept.len()..].starts_with('\n') || kept.is_empty() {
            whole_lines + 1
        } else {
            whole_lines.max(1)
        };
        left = Some(0);
        found.push((
            name.to_owned(),
            format!(
                "{kept}\n\n[pith: {name} continues beyond its share of the context window: it is about {} tokens and only the first {} are here. Read the rest with the read tool: {} from line {from_line}.]",
                thousands(tokens as u64),
                thousands(kept_tokens as u64),
                path.display()
            ),
        ));
        cut.push(CutInstructions {
            name: name.to_owned(),
            bytes: size,
            tokens,
            kept_tokens,
            from_line,
        });
    }
    (found, cut)
}

/// The first [`MAX_INSTRUCTION_BYTES`] of `path` (cut at a line when it is cut), and the
/// file's size.
fn read_head(path: &Path) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut head = Vec::new();
    file.take(MAX_INSTRUCTION_BYTES as u64)
        .read_to_end(&mut head)?;
    if (head.len() as u64) < size {
        if let Some(line) = head.iter().rposition(|b| *b == b'\n') {
            head.truncate(line + 1);
        }
    }
    Ok((head, size))
}

/// The system prompt for a session rooted at `root`, and the instruction files cut to
/// fit `budget`.
pub fn system_prompt_for(
    root: &Path,
    concise_output: bool,
    budget: Option<InstructionBudget<'_>>,
) -> (String, Vec<CutInstructions>) {
    let (inputs, cut) = inputs_for(root, concise_output, budget);
    (build_system_prompt(&inputs), cut)
}

/// The system prompt of a subagent running `agent_prompt` in a session rooted at `root`.
pub fn agent_system_prompt_for(
    root: &Path,
    agent_prompt: &str,
    concise_output: bool,
    budget: Option<InstructionBudget<'_>>,
) -> String {
    let (inputs, _) = inputs_for(root, concise_output, budget);
    pith_core::system_prompt::build_agent_system_prompt(agent_prompt, &inputs)
}

fn inputs_for(
    root: &Path,
    concise_output: bool,
    budget: Option<InstructionBudget<'_>>,
) -> (SystemPromptInputs, Vec<CutInstructions>) {
    let today = time::OffsetDateTime::now_utc().date();
    let (project_instructions, cut) = load_project_instructions(root, budget);
    let inputs = SystemPromptInputs {
        cwd: root.display().to_string(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        date: format!(
            "{:04}-{:02}-{:02}",
            today.year(),
            u8::from(today.month()),
            today.day()
        ),
        project_instructions,
        concise_output,
    };
    (inputs, cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{BpeCounter, Encoding};

    #[test]
    fn instruction_files_are_read_verbatim_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("PITH.md"), "pith rules").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agent rules\n").unwrap();
        let (found, cut) = load_project_instructions(dir.path(), None);
        assert_eq!(
            found,
            vec![
                ("AGENTS.md".to_owned(), "agent rules\n".to_owned()),
                ("PITH.md".to_owned(), "pith rules".to_owned())
            ]
        );
        assert!(cut.is_empty());
        let (prompt, _) = system_prompt_for(dir.path(), false, None);
        assert!(prompt.contains("agent rules") && prompt.contains("pith rules"));
    }

    #[test]
    fn files_beyond_their_share_are_cut_with_a_note_that_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let agents: String = (1..=20_000)
            .map(|i| format!("Rule {i}: keep the build green.\n"))
            .collect();
        std::fs::write(dir.path().join("AGENTS.md"), &agents).unwrap();
        std::fs::write(dir.path().join("PITH.md"), "pith rules").unwrap();
        let counter = BpeCounter::new(Encoding::O200kBase);
        let budget = InstructionBudget {
            max_tokens: 2_000,
            counter: &counter,
        };
        let (found, cut) = load_project_instructions(dir.path(), Some(budget));
        assert_eq!(
            cut.len(),
            2,
            "AGENTS.md takes the whole share: PITH.md is cut too"
        );
        assert_eq!(cut[1].name, "PITH.md");
        let cut = &cut[0];
        assert_eq!(cut.name, "AGENTS.md");
        assert_eq!(cut.bytes, agents.len() as u64);
        assert!(cut.tokens > 100_000, "{cut:?}");
        assert!(
            cut.kept_tokens <= 2_000 && cut.kept_tokens > 1_500,
            "{cut:?}"
        );
        let (_, text) = &found[0];
        assert!(text.starts_with("Rule 1: keep"));
        let next = format!("Rule {}: keep", cut.from_line);
        assert!(
            !text.contains(&next),
            "line {} is the first left out",
            cut.from_line
        );
        assert!(agents
            .lines()
            .nth(cut.from_line - 1)
            .unwrap()
            .starts_with(&next));
        assert!(text.contains(&format!("from line {}", cut.from_line)));
        assert!(text.contains(&dir.path().join("AGENTS.md").display().to_string()));
        // Nothing is left for PITH.md: it is cut to nothing but its note.
        assert!(found[1].1.contains("PITH.md continues"), "{:?}", found[1]);
        let warning = cut.warning(28_672, 32_000);
        assert!(warning.contains("AGENTS.md") && warning.contains("32,000-token window"));
    }

    #[test]
    fn a_huge_file_is_never_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let line = "x".repeat(99) + "\n";
        std::fs::write(
            dir.path().join("AGENTS.md"),
            line.repeat(MAX_INSTRUCTION_BYTES / 100 + 1000),
        )
        .unwrap();
        let (found, _) = load_project_instructions(dir.path(), None);
        assert!(found[0].1.len() <= MAX_INSTRUCTION_BYTES);
        assert!(found[0].1.ends_with('\n'));
    }
}
