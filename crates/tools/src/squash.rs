//! The seam to core's squash (`pith_core::context::squash`): the only place pith-tools
//! names it. Everything that squashes, marks a gap or names a spill file goes through
//! these items, so the rules and the marker format exist once, in core.
//!
//! STAND-IN until branch `context` lands: no compression and the marker format copied
//! from core's design; replaced by re-exports when merged.

/// Squash settings.
#[derive(Debug, Clone, Default)]
pub struct Config {}

/// The result of squashing one output.
#[derive(Debug, Clone)]
pub struct Squashed {
    /// Text for the model.
    pub text: String,
    /// True when something of the raw output is not in `text`.
    pub dropped_anything: bool,
}

/// Squashes one tool output.
pub fn apply(
    _tool: &str,
    _command: Option<&str>,
    _exit_code: Option<i32>,
    output: &str,
    _config: &Config,
) -> Squashed {
    Squashed {
        text: output.to_owned(),
        dropped_anything: false,
    }
}

/// Appends the spill marker naming `path`.
pub fn with_spill_marker(text: &str, path: &str) -> String {
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("[full output: {path}]"));
    out
}

/// The line marking a gap of `count` lines.
pub fn omitted_marker(count: usize) -> String {
    format!("[{count} lines omitted]")
}

/// The suffix appended to a line that was shortened.
pub fn chars_omitted_suffix(count: usize) -> String {
    format!("…[{count} chars omitted]")
}
