//! The REPL session: start-up (one [`Conversation`], new, continued or resumed), the
//! prompt loop and the dispatch of slash commands. Jobs (a turn, `/compact`) are in
//! `jobs`, the other slash commands in `slash`.
//!
//! The REPL renders; it never builds a loop, resolves a model or touches the session
//! store: the conversation does all three, records every event and persists compactions
//! before they apply.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use pith_agent::{
    Conversation, ConversationError, ExitCode, Frontend, Overrides, TrustQuestion, Workspace,
};
use pith_session::{project_ui, ui_text, Record};
use tokio::runtime::Runtime;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::approver::{ApprovalQuestion, ChannelApprover};
use crate::commands::{parse_input, Command, Input};
use crate::input::{Entry, LineSource};
use crate::keys::PromptEsc;
use crate::render::{Screen, Tone};
use crate::status::Status;

mod jobs;
mod rewind;
mod slash;

/// Why the REPL could not start (the conversation could not be opened).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReplError(ConversationError);

impl ReplError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        self.0.exit_code()
    }
}

/// Runs the REPL until `/exit`, Ctrl+D or the end of piped input, in the conversation
/// `overrides` open.
pub fn run(overrides: Overrides) -> Result<(), ReplError> {
    let interactive = crate::terminal::is_interactive();
    crate::terminal::install_panic_hook();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            ReplError(ConversationError::Failure(format!(
                "cannot start the async runtime: {e}"
            )))
        })?;
    let screen = Screen::new(Box::new(io::stdout()), interactive);
    let mut app = runtime.block_on(async { App::start(overrides, screen) })?;
    let history_file = app
        .conversation
        .data_dir()
        .map(|dir| dir.join("repl-history.txt"));
    let mut source = if interactive {
        LineSource::editor(history_file)
    } else {
        LineSource::piped()
    };
    app.prompt_loop(&runtime, &mut source);
    app.conversation.close();
    drop(source);
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}

/// Asks once whether the hooks of the project's `.pith/config.toml` may run, whether its
/// `.pith/agents` are offered and whether its `.mcp.json` may start its servers (only at
/// a terminal; piped input leaves them untrusted, and the conversation says so). A
/// changed file asks again.
fn ask_project_trust(workspace: &Workspace, frontend: &Frontend, screen: &mut Screen) {
    if !screen.is_interactive() {
        return;
    }
    ask_trust(
        screen,
        TrustAsk {
            checking: "the project's hooks",
            file: ".pith/config.toml",
            offers: "would run these hooks",
            prompt: "Trust these hooks and let them run? [y/N]",
        },
        pith_agent::hooks_trust_question(workspace, &frontend.env),
        frontend,
    );
    ask_trust(
        screen,
        TrustAsk {
            checking: "the project's agents",
            file: ".pith/agents",
            offers: "would offer these subagents",
            prompt: "Trust these agents and offer them? [y/N]",
        },
        pith_agent::agents_trust_question(workspace.cwd(), &frontend.env),
        frontend,
    );
    ask_trust(
        screen,
        TrustAsk {
            checking: ".mcp.json",
            file: ".mcp.json",
            offers: "would start these MCP servers",
            prompt: "Trust this .mcp.json and start them? [y/N]",
        },
        pith_agent::mcp_trust_question(workspace.cwd(), &frontend.env),
        frontend,
    );
}

/// The words of one trust question.
struct TrustAsk {
    /// What is checked, for the error line (`cannot check …`).
    checking: &'static str,
    /// The file set, as the question names it.
    file: &'static str,
    /// What trusting it would do.
    offers: &'static str,
    /// The question.
    prompt: &'static str,
}

/// Shows a pending trust `question` (naming its project's directory), asks, and records
/// the trust in the store of `frontend`'s environment when the user says yes. An error
/// checking it is shown and nothing is asked.
fn ask_trust(
    screen: &mut Screen,
    ask: TrustAsk,
    question: Result<Option<TrustQuestion>, ConversationError>,
    frontend: &Frontend,
) {
    let question = match question {
        Ok(Some(question)) => question,
        Ok(None) => return,
        Err(error) => {
            screen.message(
                Tone::Error,
                &format!("cannot check {}: {error}", ask.checking),
            );
            return;
        }
    };
    let mut text = format!(
        "{} {} in {} {}:",
        if question.changed {
            "The changed"
        } else {
            "This project's"
        },
        ask.file,
        question.files.project.display(),
        ask.offers
    );
    for line in &question.lines {
        text.push_str(&format!("\n  {line}"));
    }
    screen.message(Tone::Dim, &text);
    screen.message(Tone::Dim, ask.prompt);
    let mut answer = String::new();
    if io::stdin().read_line(&mut answer).is_err() {
        return;
    }
    if matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") {
        if let Err(error) = question.trust(&frontend.env) {
            screen.message(Tone::Error, &format!("cannot record the trust: {error}"));
        }
    }
}

/// The REPL's state: the conversation and what the screen needs around it.
pub(crate) struct App {
    pub(crate) conversation: Conversation,
    pub(crate) approvals: UnboundedReceiver<ApprovalQuestion>,
    pub(crate) screen: Screen,
    pub(crate) status: Status,
    pub(crate) queued: VecDeque<String>,
    pub(crate) type_ahead: String,
}

enum Flow {
    Continue,
    Exit,
}

impl App {
    fn start(overrides: Overrides, mut screen: Screen) -> Result<Self, ReplError> {
        let (approver, approvals) = ChannelApprover::new();
        let frontend = Frontend {
            approver: Some(Arc::new(approver)),
            ..Frontend::process_env()
        };
        // The configuration is read once: for the trust questions, then the conversation.
        let workspace =
            Workspace::open(&overrides.cwd, frontend.env.as_ref()).map_err(ReplError)?;
        ask_project_trust(&workspace, &frontend, &mut screen);
        let mut opened =
            Conversation::open_in(workspace, overrides, frontend).map_err(ReplError)?;
        // The next turn may use a summary prepared in this one.
        opened.value.keep_prepared_summaries(true);
        for notice in &opened.notices {
            screen.message(Tone::Error, notice);
        }
        let mut app = Self {
            status: Status::of(&opened.value),
            conversation: opened.value,
            approvals,
            screen,
            queued: VecDeque::new(),
            type_ahead: String::new(),
        };
        if let Some(records) = &opened.resumed {
            app.show_replay(records);
        }
        app.refresh_status();
        app.banner();
        Ok(app)
    }

    pub(crate) fn refresh_status(&mut self) {
        let mut status = Status::of(&self.conversation);
        status.used = self.conversation.estimate().total as u64;
        self.status = status;
    }

    pub(crate) fn banner(&mut self) {
        let text = format!(
            "pith · {} · session {} · approval {} · /help for commands",
            self.conversation.model_spec(),
            self.conversation.session_id(),
            self.conversation.approval()
        );
        self.screen.message(Tone::Dim, &text);
    }

    pub(crate) fn show_replay(&mut self, records: &[Record]) {
        let mut rendered = Vec::new();
        if ui_text(&project_ui(records), &mut rendered).is_ok() {
            self.screen.block(&String::from_utf8_lossy(&rendered));
        }
    }

    fn prompt_loop(&mut self, runtime: &Runtime, source: &mut LineSource) {
        loop {
            let line = match self.queued.pop_front() {
                Some(line) => {
                    self.screen.message(Tone::Dim, &format!("› {line}"));
                    line
                }
                None => {
                    if self.screen.is_interactive() {
                        let status = self.status.text();
                        self.screen.message(Tone::Dim, &status);
                    }
                    match self.read_entry(source) {
                        Ok(Entry::Line(line)) => line,
                        Ok(Entry::Interrupted) => {
                            self.screen
                                .message(Tone::Dim, "(Ctrl+D on an empty prompt or /exit leaves)");
                            continue;
                        }
                        Ok(Entry::End) => break,
                        Ok(Entry::Esc { .. }) => continue,
                        Err(e) => {
                            self.screen
                                .message(Tone::Error, &format!("cannot read input: {e}"));
                            break;
                        }
                    }
                }
            };
            let flow = match parse_input(&line) {
                Input::Empty => Flow::Continue,
                Input::Invalid(message) => {
                    self.screen.message(Tone::Error, &message);
                    Flow::Continue
                }
                Input::Prompt(text) => {
                    runtime.block_on(self.turn(text));
                    Flow::Continue
                }
                Input::Command(Command::Rewind { turn, mode }) => {
                    self.rewind(runtime, source, turn, mode);
                    Flow::Continue
                }
                Input::Command(Command::RewindUndo) => {
                    self.rewind_undo(runtime, source);
                    Flow::Continue
                }
                Input::Command(command) => self.command(runtime, command),
            };
            if matches!(flow, Flow::Exit) {
                break;
            }
        }
    }

    /// Reads the next entry at the prompt: Esc presses are handled here (Esc Esc on an
    /// empty line gives `/rewind`, on a line with text clears it), the line kept between
    /// them.
    fn read_entry(&mut self, source: &mut LineSource) -> std::io::Result<Entry> {
        let mut initial = std::mem::take(&mut self.type_ahead);
        let mut previous_esc = None;
        loop {
            let entry = source.read(&initial)?;
            initial.clear();
            let Entry::Esc { line_empty } = entry else {
                return Ok(entry);
            };
            let now = std::time::Instant::now();
            match crate::keys::esc_at_prompt(previous_esc, now, line_empty) {
                PromptEsc::Wait => previous_esc = Some(now),
                PromptEsc::ClearLine => {
                    previous_esc = None;
                    source.clear_line();
                }
                PromptEsc::OpenRewind => {
                    // Shown on the prompt's line as if typed, so the list starts below it.
                    self.screen.echo_command("/rewind");
                    return Ok(Entry::Line("/rewind".to_owned()));
                }
            }
        }
    }

    fn command(&mut self, runtime: &Runtime, command: Command) -> Flow {
        match command {
            // Needs the line source for its question: the prompt loop runs it.
            Command::Rewind { .. } | Command::RewindUndo => {}
            Command::Exit => return Flow::Exit,
            Command::Help => self.help(),
            Command::Compact { focus } => runtime.block_on(self.compact(focus)),
            Command::Context => {
                // MCP tools are installed before the first turn; /context shows them
                // even before it.
                let mut notices: Vec<pith_core::LoopEvent> = Vec::new();
                runtime.block_on(
                    self.conversation.prepare_mcp_tools(
                        &mut notices,
                        &tokio_util::sync::CancellationToken::new(),
                    ),
                );
                for event in notices {
                    if let pith_core::LoopEvent::Notice(text) = event {
                        self.screen.message(Tone::Dim, &text);
                    }
                }
                self.context_report()
            }
            Command::Ledger => self.ledger_report(),
            Command::Pin { argument } => self.pin(argument),
            Command::Unpin { target } => self.unpin(&target),
            Command::Sessions => self.sessions(),
            Command::Resume { id } => self.resume(&id),
            Command::Clear => self.clear(),
            Command::Model { name } => self.switch_model(name),
        }
        Flow::Continue
    }
}
