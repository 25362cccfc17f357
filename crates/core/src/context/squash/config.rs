//! The squash thresholds: the `[context]` keys the capture-time squashers read, with
//! their documented defaults. Part of [`crate::context::ContextConfig`].

use serde::{Deserialize, Serialize};

/// Thresholds of the capture-time squash (`[context]` keys; all optional).
///
/// Defaults (documented in `docs/context-pipeline.md`):
///
/// | key | default | meaning |
/// |---|---|---|
/// | `floor_bytes` | 1 500 | outputs at or under this size pass unchanged |
/// | `file_view_cap_bytes` | 50 000 | file views (`cat`, `sed -n`, `nl`, `head`, `tail`) are kept byte-exact up to this size |
/// | `view_budget_bytes` | 8 000 | a file view above the cap is squashed by its content to at most this size |
/// | `generic_budget_bytes` | 3 000 | byte budget of the generic fallback |
/// | `log_max_error_lines` | 20 | error lines a log keeps (highest score first) |
/// | `log_max_warning_lines` | 10 | warning lines a log keeps |
/// | `context_lines` | 2 | lines of context kept around each kept log line |
/// | `test_context_budget_bytes` | 300 | extra context a test-runner output may keep beyond its mandatory lines |
/// | `failure_block_max_lines` | 40 | lines kept of one failing test's block (header, details, last frames, captured output tail) |
/// | `failure_blocks_max` | 20 | failure blocks kept in detail; later ones keep their header (the test id) only |
/// | `grep_max_matches_per_file` | 5 | matches kept per file in grep output |
/// | `grep_max_matches_total` | 12 | matches kept over all files (each file keeps at least one) |
/// | `match_line_max_chars` | 160 | a kept grep match longer than this is cut (with a marker in the line) |
/// | `path_list_cap_bytes` | 16 000 | path lists (`find`, glob) are kept whole up to this size |
/// | `ls_max_entries_per_dir` | 25 | entries kept per directory in `ls -R` output |
/// | `json_array_keep` | 3 | array elements kept in full before the rest are summarised |
/// | `json_string_keep_chars` | 80 | a JSON string longer than this that is not identifier-like is elided |
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct SquashConfig {
    /// Outputs at or under this many bytes pass unchanged.
    pub floor_bytes: usize,
    /// File views are kept byte-exact up to this many bytes; larger ones are squashed by
    /// their content (log, test report, JSON, source outline) to `view_budget_bytes`.
    pub file_view_cap_bytes: usize,
    /// Most bytes a file view above `file_view_cap_bytes` is squashed to.
    pub view_budget_bytes: usize,
    /// Byte budget of the generic fallback compressor.
    pub generic_budget_bytes: usize,
    /// Most error lines a log/build output keeps (highest score first).
    pub log_max_error_lines: usize,
    /// Most warning lines a log/build output keeps.
    pub log_max_warning_lines: usize,
    /// Lines of context kept on each side of a kept log line.
    pub context_lines: usize,
    /// Extra bytes of context (traceback frames, source lines) a test-runner output may
    /// keep beyond its mandatory lines (failing ids, error lines, summaries).
    pub test_context_budget_bytes: usize,
    /// Lines kept of one failure block (a failing test's header, details, last frames
    /// and captured output); a block within this is kept whole.
    pub failure_block_max_lines: usize,
    /// Failure blocks kept in detail; later blocks keep only their header line.
    pub failure_blocks_max: usize,
    /// Most matches kept per file in grep output.
    pub grep_max_matches_per_file: usize,
    /// Matches kept over all files of a grep output; each file keeps at least one, so
    /// every distinct path stays.
    pub grep_max_matches_total: usize,
    /// Kept grep match lines longer than this many characters are shortened.
    pub match_line_max_chars: usize,
    /// Path lists (`find`, glob output) are kept whole up to this many bytes.
    pub path_list_cap_bytes: usize,
    /// Most entries kept per directory in `ls -R` style listings.
    pub ls_max_entries_per_dir: usize,
    /// JSON arrays keep this many leading elements in full.
    pub json_array_keep: usize,
    /// JSON strings longer than this that are not identifier-like are elided.
    pub json_string_keep_chars: usize,
}

impl Default for SquashConfig {
    fn default() -> Self {
        Self {
            floor_bytes: 1_500,
            file_view_cap_bytes: 50_000,
            view_budget_bytes: 8_000,
            generic_budget_bytes: 3_000,
            log_max_error_lines: 20,
            log_max_warning_lines: 10,
            context_lines: 2,
            test_context_budget_bytes: 300,
            failure_block_max_lines: 40,
            failure_blocks_max: 20,
            grep_max_matches_per_file: 5,
            grep_max_matches_total: 12,
            match_line_max_chars: 160,
            path_list_cap_bytes: 16_000,
            ls_max_entries_per_dir: 25,
            json_array_keep: 3,
            json_string_keep_chars: 80,
        }
    }
}
