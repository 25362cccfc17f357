//! macOS: the policy as a Seatbelt profile run through `/usr/bin/sandbox-exec -p`.
//!
//! **Untested**: pith's CI runs on Linux only. The profile is built from the same
//! [`Policy`] as the Linux rules and only with allow rules on a `(deny default)` base, so
//! rule order never matters: reads of `/` minus the denied paths, reads and writes of the
//! writable roots minus the denied paths inside them, the usual devices, and the network
//! only when allowed. The profile text is unit-tested on every platform; the process
//! wiring is compiled on macOS only.

use std::fmt::Write as _;
use std::path::Path;

use super::policy::Policy;

/// Where `sandbox-exec` lives on every macOS release that has it.
#[cfg(target_os = "macos")]
const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A path as an SBPL string literal.
fn quote(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `(require-all (subpath ROOT) (require-not (subpath DENIED))…)` for the denied paths
/// below `root`.
fn subpath_minus(root: &Path, deny: &[std::path::PathBuf]) -> String {
    let mut out = format!("(require-all (subpath {})", quote(root));
    for denied in deny
        .iter()
        .filter(|d| d.starts_with(root) && d.as_path() != root)
    {
        let _ = write!(out, " (require-not (subpath {}))", quote(denied));
    }
    out.push(')');
    out
}

/// The Seatbelt profile of `policy`.
pub fn profile(policy: &Policy, allow_network: bool) -> String {
    let mut p = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-exec process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow process-info* (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow mach-lookup)\n\
         (allow ipc-posix-sem ipc-posix-shm-read-data ipc-posix-shm-write-data ipc-posix-shm-read-metadata)\n\
         (allow pseudo-tty)\n\
         (allow file-read-metadata)\n",
    );
    let _ = writeln!(
        p,
        "(allow file-read* {})",
        subpath_minus(Path::new("/"), &policy.deny)
    );
    for dir in &policy.readable {
        let _ = writeln!(p, "(allow file-read* {})", subpath_minus(dir, &policy.deny));
    }
    for dir in &policy.writable {
        let _ = writeln!(
            p,
            "(allow file-read* file-write* {})",
            subpath_minus(dir, &policy.deny)
        );
    }
    p.push_str(
        "(allow file-read* file-write* file-ioctl (literal \"/dev/null\") (literal \"/dev/zero\") \
         (literal \"/dev/tty\") (literal \"/dev/ptmx\") (regex #\"^/dev/ttys[0-9]+$\"))\n",
    );
    if allow_network {
        p.push_str("(allow network*)\n(allow system-socket)\n");
    } else {
        p.push_str("(allow network* (remote unix-socket))\n");
    }
    p
}

/// `Ok` when `sandbox-exec` exists.
#[cfg(target_os = "macos")]
pub fn support() -> Result<(), String> {
    if Path::new(SANDBOX_EXEC).is_file() {
        Ok(())
    } else {
        Err(format!("{SANDBOX_EXEC} was not found"))
    }
}

/// The macOS sandbox state of a session: none (each command gets its profile).
#[cfg(target_os = "macos")]
#[derive(Debug, Default)]
pub struct SeatbeltSession;

#[cfg(target_os = "macos")]
impl SeatbeltSession {
    /// The confinement of one command under `policy`.
    pub fn confinement(
        &self,
        policy: &Policy,
        allow_network: bool,
    ) -> std::io::Result<SeatbeltConfinement> {
        Ok(SeatbeltConfinement::new(policy, allow_network))
    }
}

/// A command's Seatbelt profile.
#[cfg(target_os = "macos")]
#[derive(Debug, Clone)]
pub struct SeatbeltConfinement {
    profile: String,
}

#[cfg(target_os = "macos")]
impl SeatbeltConfinement {
    /// The profile for `policy`.
    pub fn new(policy: &Policy, allow_network: bool) -> Self {
        Self {
            profile: profile(policy, allow_network),
        }
    }

    /// `sandbox-exec -p PROFILE program args…`.
    pub fn command(&self, program: &str, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(SANDBOX_EXEC);
        command.arg("-p").arg(&self.profile).arg(program).args(args);
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_profile_allows_reads_minus_the_deny_list_and_writes_in_the_roots_only() {
        let policy = Policy {
            deny: vec![
                PathBuf::from("/Users/u/.ssh"),
                PathBuf::from("/Users/u/.local/share/pith"),
                PathBuf::from("/Users/u/proj/secret \"x\""),
            ],
            writable: vec![
                PathBuf::from("/Users/u/proj"),
                PathBuf::from("/Users/u/.local/share/pith/s/spill"),
            ],
            readable: vec![PathBuf::from("/Users/u/proj")],
        };
        let text = profile(&policy, false);
        assert!(text.starts_with("(version 1)\n(deny default)\n"));
        assert!(text.contains(
            "(allow file-read* (require-all (subpath \"/\") (require-not (subpath \"/Users/u/.ssh\")) \
             (require-not (subpath \"/Users/u/.local/share/pith\"))"
        ));
        assert!(text.contains(
            "(allow file-read* file-write* (require-all (subpath \"/Users/u/proj\") \
             (require-not (subpath \"/Users/u/proj/secret \\\"x\\\"\"))))"
        ));
        assert!(
            text.contains("(allow file-read* file-write* (require-all (subpath \"/Users/u/.local/share/pith/s/spill\")))"),
            "the spill dir is allowed although its parent is denied"
        );
        assert!(!text.contains("(allow network*)"));
        assert!(profile(&policy, true).contains("(allow network*)"));
    }
}
