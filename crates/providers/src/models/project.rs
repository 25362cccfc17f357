//! Reading what the system prompt needs from the machine: project instruction files,
//! the platform and today's date. Assembly itself is `pith_core::system_prompt`.

use std::path::Path;

use pith_core::system_prompt::{build_system_prompt, SystemPromptInputs};

/// Project instruction files, read verbatim from the workspace root, in this order.
pub const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "PITH.md"];

/// Largest instruction file read (bigger ones are cut with a note, so a stray huge file
/// cannot fill the window on every request).
pub const MAX_INSTRUCTION_BYTES: usize = 64 * 1024;

/// The instruction files present in `root`, as (file name, content). Unreadable files
/// are reported in the content rather than silently skipped.
pub fn load_project_instructions(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for name in INSTRUCTION_FILES {
        let path = root.join(name);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                if text.len() > MAX_INSTRUCTION_BYTES {
                    let mut end = MAX_INSTRUCTION_BYTES;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                    text.push_str(&format!(
                        "\n[{name} was cut at {MAX_INSTRUCTION_BYTES} bytes]"
                    ));
                }
                found.push((name.to_owned(), text));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => found.push((
                name.to_owned(),
                format!("[{name} exists but could not be read: {err}]"),
            )),
        }
    }
    found
}

/// The system prompt for a session rooted at `root`.
pub fn system_prompt_for(root: &Path, concise_output: bool) -> String {
    build_system_prompt(&inputs_for(root, concise_output))
}

/// The system prompt of a subagent running `agent_prompt` in a session rooted at `root`.
pub fn agent_system_prompt_for(root: &Path, agent_prompt: &str, concise_output: bool) -> String {
    pith_core::system_prompt::build_agent_system_prompt(
        agent_prompt,
        &inputs_for(root, concise_output),
    )
}

fn inputs_for(root: &Path, concise_output: bool) -> SystemPromptInputs {
    let today = time::OffsetDateTime::now_utc().date();
    SystemPromptInputs {
        cwd: root.display().to_string(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        date: format!(
            "{:04}-{:02}-{:02}",
            today.year(),
            u8::from(today.month()),
            today.day()
        ),
        project_instructions: load_project_instructions(root),
        concise_output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_files_are_read_verbatim_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("PITH.md"), "pith rules").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agent rules\n").unwrap();
        let found = load_project_instructions(dir.path());
        assert_eq!(
            found,
            vec![
                ("AGENTS.md".to_owned(), "agent rules\n".to_owned()),
                ("PITH.md".to_owned(), "pith rules".to_owned())
            ]
        );
        let prompt = system_prompt_for(dir.path(), false);
        assert!(prompt.contains("agent rules") && prompt.contains("pith rules"));
    }

    #[test]
    fn huge_instruction_files_are_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("AGENTS.md"),
            "x".repeat(MAX_INSTRUCTION_BYTES + 10),
        )
        .unwrap();
        let found = load_project_instructions(dir.path());
        assert!(found[0].1.ends_with("bytes]"));
        assert!(found[0].1.len() < MAX_INSTRUCTION_BYTES + 100);
    }
}
