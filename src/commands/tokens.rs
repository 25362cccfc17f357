//! `pith tokens`: prints the token count of a file or of standard input.

use std::io::Read;
use std::path::Path;

use anyhow::Result;
use pith_core::{BpeCounter, TokenCounter};

use crate::cli::TokensArgs;
use crate::exit::ExitError;

/// Reads the input, counts its tokens and prints the count.
pub fn run(args: TokensArgs) -> Result<()> {
    let bytes = read_input(args.file.as_deref())?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            eprintln!(
                "pith: warning: input is not valid UTF-8; invalid bytes were counted as U+FFFD"
            );
            String::from_utf8_lossy(err.as_bytes()).into_owned()
        }
    };
    let counter = BpeCounter::new(args.encoding.into());
    println!("{}", counter.count(&text));
    Ok(())
}

/// The whole input: the file, or standard input for `-` or no file.
pub fn read_input(file: Option<&Path>) -> Result<Vec<u8>> {
    match file {
        Some(path) if path != Path::new("-") => std::fs::read(path).map_err(|err| {
            ExitError::usage(format!("cannot read {}: {err}", path.display())).into()
        }),
        _ => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|err| ExitError::usage(format!("cannot read standard input: {err}")))?;
            Ok(bytes)
        }
    }
}
