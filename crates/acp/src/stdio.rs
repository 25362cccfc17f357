//! The protocol's own descriptors. `pith acp` speaks JSON-RPC on the stdin and stdout it
//! was started with, and nothing else may write there: before the connection starts,
//! the process's stdout is duplicated into a descriptor only the connection holds, fd 1
//! then points at stderr, and fd 0 at `/dev/null`. A stray `println!`, a hook, an MCP
//! server or a command that inherits the process's descriptors writes to stderr (which
//! editors log) and reads nothing, so no byte of theirs can reach the JSON-RPC stream.

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
    let output = rustix::io::dup(io::stdout().as_fd())?;
    let input = rustix::io::dup(io::stdin().as_fd())?;
    rustix::stdio::dup2_stdout(io::stderr().as_fd())?;
    let null = File::open("/dev/null")?;
    rustix::stdio::dup2_stdin(null.as_fd())?;
    Ok(ProtocolStdio {
        input: File::from(input),
        output: File::from(output),
    })
}
