//! The walk over a command line's simple commands: `cd` changes where relative paths
//! point, output redirections are writes, and a range printed through a pipe is the
//! range of the file the pipeline started with.

use super::effects::{ShellEffects, ShellWrite};
use super::paths::{is_plain_path, join};
use super::programs::{classify, piped_range, PipedRange};
use crate::context::shell::lexer::simple_commands;
use crate::context::shell::program::{base_name, program_words};
use crate::protocol::effect::FileAction;

/// The files `command` reads and writes (see the module docs for the rule).
pub fn file_effects(command: &str) -> ShellEffects {
    let commands = simple_commands(command);
    let mut effects = ShellEffects::default();
    let mut dir: Option<String> = None;
    // Index in `effects.reads` of the whole-file read the current pipeline started with.
    let mut pipeline_read: Option<usize> = None;
    for simple in &commands {
        if !simple.piped {
            pipeline_read = None;
        }
        let words = program_words(simple.words.iter().map(String::as_str));
        let program = words.first().map(|w| base_name(w)).unwrap_or_default();
        if program == "cd" {
            dir = match words.get(1) {
                Some(target) if is_plain_path(target) => Some(join(dir.as_deref(), target)),
                _ => None,
            };
            continue;
        }
        let path = |word: &str| -> Option<String> {
            is_plain_path(word).then(|| join(dir.as_deref(), word))
        };
        let mut writes_to_file = false;
        for redirect in &simple.redirects {
            if redirect.output {
                if let Some(target) = path(&redirect.target) {
                    writes_to_file = true;
                    effects.writes.push(ShellWrite {
                        path: target,
                        action: FileAction::Written,
                    });
                }
            }
        }
        let before = effects.reads.len();
        classify(program, &words, simple, &path, writes_to_file, &mut effects);
        // A range printed through a pipe is the range of the file the pipe started with.
        if simple.piped && effects.reads.len() == before && !writes_to_file {
            if let (Some(index), Some(range)) = (pipeline_read, piped_range(program, &words)) {
                let read = &mut effects.reads[index];
                match range {
                    PipedRange::Lines(first, last) => read.lines = Some((first, last)),
                    PipedRange::Partial => read.partial = true,
                }
            }
        } else if effects.reads.len() == before + 1 && effects.reads[before].lines.is_none() {
            pipeline_read = Some(before);
        } else if !simple.piped {
            pipeline_read = None;
        }
    }
    effects
}
