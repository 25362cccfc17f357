//! Recognising a command the sandbox stopped, so the model is told plainly and stops
//! retrying variants, and so `ask` can offer to run it once without the sandbox.
//!
//! The rule (heuristic — the kernel does not report denials to the parent): a run is a
//! sandbox denial when it ran sandboxed and a line of its output (stdout and stderr
//! interleaved, before squash) contains, ignoring case,
//! - `permission denied`, `operation not permitted` or `invalid cross-device link`
//!   (EACCES, EPERM, EXDEV: how Landlock refuses a file access, and a link or rename
//!   that would move a file to where it grants more), or
//! - with the network off, one of [`NETWORK_MARKERS`] (how a refused connection or name
//!   lookup reads inside a network namespace with only a private loopback).
//!
//! Whatever the exit code. False positives are possible (a plain permission problem
//! inside a sandboxed run reads the same); false negatives too (a program that hides its
//! errors, or words them differently).

use super::SandboxMode;

/// File access refusals, as `strerror` and most runtimes word EACCES, EPERM and EXDEV.
pub const FILE_MARKERS: [&str; 3] = [
    "permission denied",
    "operation not permitted",
    "invalid cross-device link",
];

/// Network failures in a namespace without network (only looked for with the network
/// off).
pub const NETWORK_MARKERS: [&str; 9] = [
    "network is unreachable",
    "connection refused",
    "temporary failure in name resolution",
    "could not resolve host",
    "couldn't resolve host",
    "name or service not known",
    "failed to lookup address",
    "no address associated with hostname",
    "dns error",
];

/// Lines quoted as evidence, at most.
const MAX_EVIDENCE: usize = 3;
/// Characters of one quoted line, at most.
const MAX_LINE_CHARS: usize = 200;

/// A sandboxed run that looks denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The mode it ran in.
    pub mode: SandboxMode,
    /// Whether it had the network.
    pub network: bool,
    /// The output lines that show the denial (at most 3, shortened).
    pub evidence: Vec<String>,
}

/// The denial in `output` of a run in `mode` (with `network` or not), if any.
pub fn detect(output: &str, mode: SandboxMode, network: bool) -> Option<Denial> {
    if !mode.is_sandboxed() {
        return None;
    }
    let evidence: Vec<String> = output
        .lines()
        .filter(|line| {
            let lower = line.to_lowercase();
            FILE_MARKERS.iter().any(|m| lower.contains(m))
                || (!network && NETWORK_MARKERS.iter().any(|m| lower.contains(m)))
        })
        .take(MAX_EVIDENCE)
        .map(shorten)
        .collect();
    (!evidence.is_empty()).then_some(Denial {
        mode,
        network,
        evidence,
    })
}

fn shorten(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

impl Denial {
    /// What the sandbox allows, in one sentence fragment.
    pub fn limits(&self) -> String {
        let writes = match self.mode {
            SandboxMode::ReadOnly => "no writes except in $TMPDIR",
            _ => "writes only inside the workspace and $TMPDIR",
        };
        let network = if self.network {
            "network allowed"
        } else {
            "no network: on 127.0.0.1 only servers started by this session's commands are \
             reachable, not the host's"
        };
        format!(
            "`{}`: {writes}; no reading of ~/.ssh, ~/.aws, other credentials or pith's own \
             files; {network}",
            self.mode
        )
    }

    /// The evidence lines, indented, one per line.
    pub fn quoted(&self) -> String {
        self.evidence
            .iter()
            .map(|line| format!("  {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The note appended to the result the model sees.
    pub fn note(&self) -> String {
        format!(
            "[the sandbox denied this command ({}). Seen in the output:\n{}\nDo not retry \
             variants of this command: the sandbox denies them the same way. Put temporary \
             files in $TMPDIR. If the command is needed as it is, ask the user to run it \
             themselves or to allow it without the sandbox.]",
            self.limits(),
            self.quoted()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_of_a_sandboxed_run_are_denials() {
        let out = "start\ncat: /home/u/.ssh/id_rsa: Permission denied\nend\n";
        let denial = detect(out, SandboxMode::WorkspaceWrite, false).unwrap();
        assert_eq!(
            denial.evidence,
            ["cat: /home/u/.ssh/id_rsa: Permission denied"]
        );
        let note = denial.note();
        assert!(
            note.starts_with("[the sandbox denied this command"),
            "{note}"
        );
        assert!(note.contains("do not retry") || note.contains("Do not retry"));
        assert!(detect(
            "PermissionError: [Errno 1] Operation not permitted",
            SandboxMode::ReadOnly,
            true
        )
        .is_some());
    }

    #[test]
    fn unsandboxed_runs_and_clean_outputs_are_not_denials() {
        let out = "touch: cannot touch '/x': Permission denied";
        assert!(detect(out, SandboxMode::Off, false).is_none());
        assert!(detect("all good\n", SandboxMode::WorkspaceWrite, false).is_none());
    }

    #[test]
    fn network_failures_count_only_with_the_network_off() {
        let out = "curl: (6) Could not resolve host: example.com";
        assert!(detect(out, SandboxMode::WorkspaceWrite, false).is_some());
        assert!(detect(out, SandboxMode::WorkspaceWrite, true).is_none());
        let refused = "ConnectionRefusedError: [Errno 111] Connection refused";
        assert!(detect(refused, SandboxMode::WorkspaceWrite, false).is_some());
    }

    #[test]
    fn evidence_is_bounded() {
        let long = format!("{}: Permission denied", "é".repeat(500));
        let out = format!("{long}\n{long}\n{long}\n{long}\n");
        let denial = detect(&out, SandboxMode::WorkspaceWrite, false).unwrap();
        assert_eq!(denial.evidence.len(), 3);
        assert!(denial.evidence[0].chars().count() <= 201);
    }
}
