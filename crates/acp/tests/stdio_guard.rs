//! `pith_acp::take_stdio` in a real process: after it, only the protocol's descriptor
//! reaches the original stdout; a print, a child process inheriting fd 1, and the test
//! harness itself write to stderr, and a child reading fd 0 reads nothing.
//!
//! The test runs itself again as a child process (selected by an environment variable),
//! so the descriptors it moves are the child's, never the harness's.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const CHILD: &str = "PITH_ACP_STDIO_GUARD_CHILD";

#[test]
fn only_the_protocol_reaches_stdout_after_take() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "only_the_protocol_reaches_stdout_after_take",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n")?;
            child.wait_with_output()
        })
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // What the harness printed before `take` is on stdout; after it, only the protocol.
    let after: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("PROTOCOL"))
        .collect();
    assert_eq!(
        after,
        [
            "PROTOCOL ready",
            "PROTOCOL echo {\"jsonrpc\":\"2.0\",\"method\":\"ping\"}",
            "PROTOCOL child read 0 bytes"
        ],
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(!stdout.contains("STRAY"), "stdout: {stdout}");
    assert!(stderr.contains("STRAY print"), "stderr: {stderr}");
    assert!(stderr.contains("STRAY child"), "stderr: {stderr}");
}

/// The child: takes the descriptors, then writes through every path.
fn child() {
    let stdio = pith_acp::take_stdio().expect("take stdin and stdout");
    let mut protocol = stdio.output;
    writeln!(protocol, "PROTOCOL ready").unwrap();
    #[allow(clippy::print_stdout)] // the stray print this test is about
    {
        println!("STRAY print");
    }
    std::io::stdout().flush().unwrap();
    // A command inheriting the process's descriptors, as a hook or a server might.
    let status = Command::new("sh")
        .args(["-c", "echo STRAY child"])
        .status()
        .expect("sh runs");
    assert!(status.success());
    // What a command inheriting fd 0 can read of the editor's messages: nothing.
    let counted = Command::new("wc")
        .arg("-c")
        .stdin(Stdio::inherit())
        .output()
        .expect("wc runs");
    let read: u64 = String::from_utf8_lossy(&counted.stdout)
        .trim()
        .parse()
        .expect("wc prints a count");
    let mut line = String::new();
    BufReader::new(stdio.input).read_line(&mut line).unwrap();
    writeln!(protocol, "PROTOCOL echo {}", line.trim_end()).unwrap();
    writeln!(protocol, "PROTOCOL child read {read} bytes").unwrap();
}
