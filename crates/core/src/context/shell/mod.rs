//! How pith reads a shell command line, in one place for every rule that judges a
//! command by its text (squash choosing a squasher, the session ledger's file facts):
//!
//! - [`lexer`] — the line split the way the shell splits it: simple commands, their
//!   words, redirections and heredoc bodies;
//! - [`program`] — a command's program behind its wrappers, base names, operands;
//! - [`family`] — what a command prints (a test run, a search, a file view, …).

pub mod family;
pub mod lexer;
pub mod program;

pub use family::{command_family, output_head, view_origin, CommandFamily, ViewOrigin};
pub use lexer::{simple_commands, Redirect, SimpleCommand};
pub use program::{base_name, program_words};
