//! The protocol's own descriptors. `pith acp` speaks JSON-RPC on the stdin and stdout it
//! was started with, and nothing else may write there: before the connection starts,
//! the process's stdout is duplicated into a descriptor only the connection holds, fd 1
//! then points at stderr, and fd 0 at `/dev/null`. A stray `println!`, a hook, an MCP
//! server or a command that inherits the process's descriptors writes to stderr (which
//! editors log) and reads nothing, so no byte of theirs can reach the JSON-RPC stream.
//!
//! The two descriptors the connection holds are close-on-exec (`F_DUPFD_CLOEXEC`), so no
//! program pith starts inherits them; every child is also started with only 0, 1 and 2
//! (`pith_tools::isolate_process_group`), which covers descriptors the editor itself
//! left open. Last, the process is marked not dumpable (`PR_SET_DUMPABLE`): its
//! `/proc/PID/fd` then belongs to root, so a program running as the same user cannot
//! reopen the protocol's pipes through it (Landlock does not cover pipes).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;

/// The protocol's input (the original stdin) and output (the original stdout).
#[derive(Debug)]
pub struct ProtocolStdio {
    /// Where the client's messages arrive.
    pub input: File,
    /// Where pith's messages go, and nothing else.
    pub output: File,
}

/// Takes stdin and stdout for the protocol and points fd 0 at `/dev/null`, fd 1 at
/// stderr (see the module docs).
pub fn take() -> io::Result<ProtocolStdio> {
    // The lowest free descriptor from 3 up, close-on-exec: no child can inherit it.
    let output = rustix::io::fcntl_dupfd_cloexec(io::stdout().as_fd(), 3)?;
    let input = rustix::io::fcntl_dupfd_cloexec(io::stdin().as_fd(), 3)?;
    rustix::stdio::dup2_stdout(io::stderr().as_fd())?;
    let null = File::open("/dev/null")?;
    rustix::stdio::dup2_stdin(null.as_fd())?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    Ok(ProtocolStdio {
        input: File::from(input),
        output: File::from(output),
    })
}
