//! The editor's terminals for `bash`: when the client declares `terminal`, each command
//! runs in a terminal the editor creates (`terminal/create`) and shows inside the tool
//! call, live. What the editor runs is `pith sandbox-exec` (this very binary), which
//! applies the session's sandbox and secret filter before it starts `bash -c`; pith waits
//! for the exit (`terminal/wait_for_exit`), ends the command at its timeout or when the
//! turn is cancelled (`terminal/kill`), reads the output back (`terminal/output`), squashes
//! it for the model as always, and releases the terminal (`terminal/release`).

use std::io;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    SessionNotification, SessionUpdate, Terminal, TerminalExitStatus, TerminalId,
    TerminalOutputRequest, ToolCallContent, ToolCallId, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest,
};
use async_trait::async_trait;
use pith_tools::Termination;
use pith_tools::{CommandTerminal, TerminalOutcome, TerminalRequest};
use tokio_util::sync::CancellationToken;

use crate::editor::{editor_error, Editor};
use crate::running::RunningCalls;

/// Runs `bash` commands in the editor's terminals, for one ACP session.
#[derive(Debug)]
pub struct ClientTerminal {
    editor: Editor,
    /// The `pith` binary the editor runs (`pith sandbox-exec`).
    program: PathBuf,
    /// The session's running calls: which tool call a terminal belongs to.
    running: RunningCalls,
}

impl ClientTerminal {
    /// `editor`'s terminals, running `program` (this binary).
    pub fn new(editor: Editor, program: PathBuf, running: RunningCalls) -> Self {
        Self {
            editor,
            program,
            running,
        }
    }

    /// Shows the terminal inside the running `bash` call, live.
    fn show_in_call(&self, terminal: &TerminalId) {
        let Some(call) = self.running.latest("bash") else {
            return;
        };
        self.running.attach_terminal(&call.id, &terminal.0);
        let fields = ToolCallUpdateFields::new().content(vec![ToolCallContent::Terminal(
            Terminal::new(terminal.clone()),
        )]);
        let update = ToolCallUpdate::new(ToolCallId::new(call.id.as_str()), fields);
        let notification =
            SessionNotification::new(call.session, SessionUpdate::ToolCallUpdate(update));
        if let Err(error) = self.editor.connection.send_notification(notification) {
            tracing::debug!(%error, "the terminal was not shown in its call");
        }
    }

    /// Ends the command, reads what it printed, and lets the editor free the terminal.
    async fn finish(
        &self,
        session: &SessionId,
        terminal: &TerminalId,
        ended: Option<Termination>,
    ) -> io::Result<TerminalOutcome> {
        if ended.is_some() {
            let kill = KillTerminalRequest::new(session.clone(), terminal.clone());
            if let Err(error) = self.editor.ask(kill).await {
                tracing::debug!(%error, "terminal/kill failed");
            }
        }
        let asked = TerminalOutputRequest::new(session.clone(), terminal.clone());
        let output = self.editor.ask(asked).await;
        let release = ReleaseTerminalRequest::new(session.clone(), terminal.clone());
        if let Err(error) = self.editor.ask(release).await {
            tracing::debug!(%error, "terminal/release failed");
        }
        let output = output.map_err(|error| editor_error("terminal/output", &error))?;
        let termination = match ended {
            Some(termination) => termination,
            None => output
                .exit_status
                .as_ref()
                .map_or(Termination::Exited(0), termination_of),
        };
        Ok(TerminalOutcome {
            termination,
            output: output.output,
            truncated: output.truncated,
        })
    }
}

/// How an exit status the editor reports ended the command.
fn termination_of(status: &TerminalExitStatus) -> Termination {
    match (status.exit_code, status.signal.as_deref()) {
        (Some(code), _) => Termination::Exited(i32::try_from(code).unwrap_or(i32::MAX)),
        (None, Some(signal)) => Termination::Signaled(signal_number(signal)),
        (None, None) => Termination::Exited(0),
    }
}

/// The number of a signal the editor names (`SIGKILL`, `KILL` or `9`); 0 when unknown.
fn signal_number(name: &str) -> i32 {
    let bare = name.trim().trim_start_matches("SIG");
    match bare {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ABRT" => 6,
        "KILL" => 9,
        "SEGV" => 11,
        "PIPE" => 13,
        "TERM" => 15,
        number => number.parse().unwrap_or(0),
    }
}

#[async_trait]
impl CommandTerminal for ClientTerminal {
    async fn run(
        &self,
        request: TerminalRequest<'_>,
        cancel: &CancellationToken,
    ) -> io::Result<TerminalOutcome> {
        let session = self.editor.session()?;
        let create =
            CreateTerminalRequest::new(session.clone(), self.program.display().to_string())
                .args(request.wrapped.args())
                .cwd(request.wrapped.cwd.clone())
                .output_byte_limit(request.output_limit);
        let created = tokio::select! {
            created = self.editor.ask(create) => {
                created.map_err(|error| editor_error("terminal/create", &error))?
            }
            () = cancel.cancelled() => {
                return Ok(TerminalOutcome {
                    termination: Termination::Cancelled,
                    output: String::new(),
                    truncated: false,
                });
            }
        };
        let terminal = created.terminal_id;
        self.show_in_call(&terminal);
        let wait = WaitForTerminalExitRequest::new(session.clone(), terminal.clone());
        let ended = tokio::select! {
            exited = self.editor.ask(wait) => match exited {
                Ok(_) => None,
                Err(error) => {
                    tracing::debug!(%error, "terminal/wait_for_exit failed; ending the command");
                    Some(Termination::Signaled(0))
                }
            },
            () = tokio::time::sleep(request.timeout) => Some(Termination::TimedOut),
            () = cancel.cancelled() => Some(Termination::Cancelled),
        };
        self.finish(&session, &terminal, ended).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_become_terminations() {
        let mut status = TerminalExitStatus::default();
        status.exit_code = Some(3);
        assert_eq!(termination_of(&status), Termination::Exited(3));
        status.exit_code = None;
        status.signal = Some("SIGKILL".into());
        assert_eq!(termination_of(&status), Termination::Signaled(9));
        status.signal = Some("15".into());
        assert_eq!(termination_of(&status), Termination::Signaled(15));
        status.signal = Some("SIGWHAT".into());
        assert_eq!(termination_of(&status), Termination::Signaled(0));
    }
}
