//! `pith replay`: renders a recorded transcript (glue over `pith_session` reading,
//! projection and rendering).

use std::io::{self, Write};

use anyhow::Result;
use pith_session::{
    model_json, model_text, project_model_owned, project_ui, ui_json, ui_text, ui_text_nested,
    ReadOptions, SessionError, SessionStore, UiEntry,
};

use crate::cli::{ReplayArgs, ReplayFormat, ReplayView};
use crate::exit::ExitError;

/// Reads the transcript, prints its warnings on stderr and renders the chosen view.
pub fn run(args: ReplayArgs) -> Result<()> {
    let store = SessionStore::from_env().map_err(session_error)?;
    let options = ReadOptions {
        skip_corrupt: args.skip_corrupt,
    };
    let transcript = store.read(&args.session, options).map_err(|err| {
        if matches!(err, SessionError::CorruptLine { .. }) {
            anyhow::anyhow!("{err}; rerun with --skip-corrupt to skip corrupt lines")
        } else {
            session_error(err)
        }
    })?;
    for warning in transcript.report.warnings() {
        eprintln!("pith: warning: {warning}");
    }
    let report = transcript.report.clone();
    let report = &report;
    match (args.view, args.format) {
        (ReplayView::Ui, ReplayFormat::Text) if args.expand => {
            let entries = project_ui(&transcript.records);
            let children = |id: &str| -> Option<Result<Vec<UiEntry>, String>> {
                Some(
                    store
                        .read(id, options)
                        .map(|child| project_ui(&child.records))
                        .map_err(|error| format!("cannot read it: {error}")),
                )
            };
            write_stdout(|out| ui_text_nested(&entries, out, &children))
        }
        (ReplayView::Ui, ReplayFormat::Text) => {
            let entries = project_ui(&transcript.records);
            write_stdout(|out| ui_text(&entries, out))
        }
        (ReplayView::Ui, ReplayFormat::Json) => {
            let entries = project_ui(&transcript.records);
            write_stdout(|out| ui_json(&entries, report, out))
        }
        (ReplayView::Model, ReplayFormat::Text) => {
            let messages = project_model_owned(transcript.records);
            write_stdout(|out| model_text(&messages, out))
        }
        (ReplayView::Model, ReplayFormat::Json) => {
            let messages = project_model_owned(transcript.records);
            write_stdout(|out| model_json(&messages, report, out))
        }
    }
}

/// Maps a store error to the exit code it deserves: 2 for what the user asked for
/// (unknown or ambiguous session, no data directory), 1 otherwise.
pub fn session_error(err: SessionError) -> anyhow::Error {
    if err.is_usage() {
        ExitError::usage(err.to_string()).into()
    } else {
        err.into()
    }
}

/// Renders into a buffered stdout; a closed pipe (`| head`) is not an error.
pub fn write_stdout(render: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match render(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(anyhow::anyhow!("cannot write output: {err}")),
    }
}
