//! `pith sessions`: lists recorded sessions (glue over `pith_session` listing and
//! rendering).

use anyhow::Result;
use pith_agent::{list_sessions_in, Listed};
use pith_session::{sessions_json, sessions_table, SessionStore};

use crate::cli::SessionsArgs;
use crate::commands::replay::{session_error, write_stdout};

/// Lists the current project's sessions (or all with `--all`) as a table or JSON.
pub fn run(args: SessionsArgs) -> Result<()> {
    let project = if args.all {
        None
    } else {
        let cwd = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| anyhow::anyhow!("cannot resolve the current directory: {e}"))?;
        Some(cwd)
    };
    // The process's own environment, read as the OS gives it (a non-UTF-8 HOME too).
    let store = SessionStore::from_env().map_err(session_error)?;
    let sessions =
        list_sessions_in(&store, project.as_deref(), Listed::All).map_err(session_error)?;
    let prices = prices();
    let price = |model: &str| prices.of(model);
    if args.json {
        return write_stdout(|out| sessions_json(&sessions, &price, out));
    }
    if sessions.is_empty() {
        match &project {
            Some(cwd) => eprintln!(
                "pith: no sessions recorded for {} (`pith sessions --all` lists every project)",
                cwd.display()
            ),
            None => eprintln!("pith: no sessions recorded in {}", store.root().display()),
        }
        return Ok(());
    }
    write_stdout(|out| sessions_table(&sessions, &price, out))
}

/// Every model's prices: the configuration of the current directory's project (its
/// `[models]` pricing), else the catalog's alone.
fn prices() -> pith_agent::Prices {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| pith_agent::Workspace::open(&cwd, &|name| std::env::var(name).ok()).ok())
        .map(|workspace| pith_agent::Prices::new(workspace.config().model_tables()))
        .unwrap_or_default()
}
