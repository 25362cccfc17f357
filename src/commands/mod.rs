//! Command implementations that belong to the binary itself (thin glue over the crates).

pub mod acp;
pub mod compress;
pub mod mcp;
pub mod options;
pub mod repl;
pub mod replay;
pub mod rewind;
pub mod run;
pub mod sandbox_exec;
pub mod sessions;
pub mod tokens;
