//! The terminal's modes: whether pith talks to a terminal at all, raw mode while a job
//! runs (so Esc and Ctrl+C arrive as keys), and restoring the terminal on every exit
//! path, panics included.

use std::io::{self, IsTerminal, Write};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::execute;
use crossterm::terminal;

/// True when both standard input and standard output are terminals; otherwise the REPL
/// reads lines from standard input and never enters raw mode.
pub fn is_interactive() -> bool {
    io::stdin().is_terminal() && io::stdout().is_terminal()
}

/// Raw mode for as long as the guard lives.
#[derive(Debug)]
pub struct RawMode(());

impl RawMode {
    /// Enables raw mode.
    pub fn enable() -> io::Result<Self> {
        terminal::enable_raw_mode()?;
        Ok(Self(()))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves raw mode and shows the cursor (best effort: called while failing).
pub fn restore() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(io::stdout(), Show);
    let _ = io::stdout().flush();
}

/// Restores the terminal before the default panic message is printed.
pub fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
