//! Which squasher an output gets: from the tool, then the command (its
//! [`CommandFamily`], see [`crate::context::shell::family`]), then the content.

use serde::Serialize;

use crate::context::shell::family::{command_family, CommandFamily};

/// The squasher chosen for one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Family {
    /// Output of `read`: never altered.
    #[serde(rename = "read")]
    Read,
    /// At or under the floor: passed unchanged.
    #[serde(rename = "small")]
    Small,
    /// A file view: byte-exact up to the cap.
    #[serde(rename = "file_view")]
    FileView,
    /// Valid JSON.
    #[serde(rename = "json")]
    Json,
    /// Test-runner output.
    #[serde(rename = "test_runner")]
    TestRunner,
    /// Log or build output with several error/warning lines.
    #[serde(rename = "log")]
    Log,
    /// `path:line:text` search output.
    #[serde(rename = "grep")]
    Grep,
    /// A list of paths (`find`, glob).
    #[serde(rename = "path_list")]
    PathList,
    /// A directory listing (`ls`, `ls -R`, `tree`).
    #[serde(rename = "ls")]
    Ls,
    /// Anything else: head + tail + important lines.
    #[serde(rename = "generic")]
    Generic,
    /// Several steps (CI script, make, tox): each squashed by its own family.
    #[serde(rename = "multi_step")]
    MultiStep,
    /// A source-code view above the cap: head, tail and an outline of definitions.
    #[serde(rename = "source_outline")]
    SourceOutline,
}

impl Family {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Small => "small",
            Self::FileView => "file_view",
            Self::Json => "json",
            Self::TestRunner => "test_runner",
            Self::Log => "log",
            Self::Grep => "grep",
            Self::PathList => "path_list",
            Self::Ls => "ls",
            Self::Generic => "generic",
            Self::MultiStep => "multi_step",
            Self::SourceOutline => "source_outline",
        }
    }
}
/// Content signatures of test-runner output, searched in one pass.
static TEST_SIGNATURES: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"test session starts|short test summary info|tests finished:",
        r"|\nRan \d+ tests? in |\ntest result: |\n--- FAIL: |\nFAIL: test|\nERROR: test",
        r"|\nTest Suites: |\n=== RUN "
    ))
    .expect("constant pattern compiles")
});

/// True when the content carries a test runner's signature.
pub(crate) fn looks_like_test_output(text: &str) -> bool {
    TEST_SIGNATURES.is_match(text)
}

/// True for a line shaped like grep output with a file name: `path:12:text`,
/// `path-12-text` (context) or `path:text` where `path` looks like a file.
pub(crate) fn grep_path_prefix(line: &str) -> Option<&str> {
    let colon = line.find(':')?;
    let path = &line[..colon];
    if path.is_empty() || path.contains(char::is_whitespace) || path.len() > 300 {
        return None;
    }
    let looks_like_file = path.contains('/')
        || path.rsplit_once('.').is_some_and(|(a, e)| {
            !a.is_empty()
                && !e.is_empty()
                && e.len() <= 8
                && e.chars().all(|c| c.is_ascii_alphanumeric())
        });
    if !looks_like_file || !path.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(path)
}

/// True for a line that is a bare path (find / glob output).
pub(crate) fn looks_like_path(line: &str) -> bool {
    let t = line.trim_end();
    !t.is_empty()
        && !t.contains(char::is_whitespace)
        && (t.contains('/') || t.contains('.'))
        && t.chars().any(|c| c.is_ascii_alphabetic())
}

/// The squasher for an output above the floor.
pub(crate) fn detect(
    tool: &str,
    command: Option<&str>,
    exit_code: Option<i32>,
    output: &str,
    error_lines: usize,
) -> Family {
    match tool {
        "grep" | "search" | "rg" => return Family::Grep,
        "glob" | "find" => return Family::PathList,
        "ls" | "list" => return Family::Ls,
        _ => {}
    }
    if let Some(cmd) = command {
        match command_family(cmd) {
            CommandFamily::TestRunner => return Family::TestRunner,
            CommandFamily::FileView => return Family::FileView,
            CommandFamily::Grep => return Family::Grep,
            CommandFamily::Find => return Family::PathList,
            CommandFamily::Ls => return Family::Ls,
            CommandFamily::Other => {}
        }
    }
    detect_from_content(tool, exit_code, output, error_lines)
}

/// The squasher judged from the content alone.
pub(crate) fn detect_from_content(
    tool: &str,
    exit_code: Option<i32>,
    output: &str,
    error_lines: usize,
) -> Family {
    let trimmed = output.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(output).is_ok()
    {
        return Family::Json;
    }
    if looks_like_test_output(output) {
        return Family::TestRunner;
    }
    let mut total = 0usize;
    let mut grep_like = 0usize;
    let mut path_like = 0usize;
    for line in output.lines().take(400) {
        if line.trim().is_empty() || line == "--" {
            continue;
        }
        total += 1;
        if grep_path_prefix(line).is_some() {
            grep_like += 1;
        }
        if looks_like_path(line) {
            path_like += 1;
        }
    }
    if total >= 5 && path_like * 10 >= total * 8 {
        return Family::PathList;
    }
    if total >= 5 && grep_like * 10 >= total * 6 {
        return Family::Grep;
    }
    let is_shell = matches!(tool, "bash" | "shell" | "sh" | "exec");
    if is_shell && (error_lines >= 3 || (error_lines >= 1 && exit_code.is_some_and(|c| c != 0))) {
        return Family::Log;
    }
    Family::Generic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_detection_recognises_grep_and_paths() {
        let grep: String = (0..20)
            .map(|i| format!("src/a{i}.rs:{i}:fn main() {{}}\n"))
            .collect();
        assert_eq!(detect("bash", None, None, &grep, 0), Family::Grep);
        let paths: String = (0..20).map(|i| format!("./src/mod{i}/file.py\n")).collect();
        assert_eq!(detect("bash", None, None, &paths, 0), Family::PathList);
        assert_eq!(
            detect("bash", None, None, "{\"a\": [1, 2]}", 0),
            Family::Json
        );
    }
}
