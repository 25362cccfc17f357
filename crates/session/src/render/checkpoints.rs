//! The text of `checkpoint` and `rewind` entries in `pith replay`: a checkpoint is one
//! line under the turn that made it, a rewind a marker between turns, like a compaction.

use std::io::{self, Write};

use crate::projection::{CheckpointEntry, RewindEntry};
use pith_core::human_bytes;

/// Paths named on a checkpoint's line; the others are counted.
pub const CHECKPOINT_PATHS_SHOWN: usize = 5;

/// `  -- checkpoint after bash: 2 files, 1.2 KiB: src/a.rs, src/b.rs` (or `changed
/// outside pith:` for changes found between turns), then what the store left out.
pub(super) fn write_checkpoint(out: &mut dyn Write, entry: &CheckpointEntry) -> io::Result<()> {
    let what = if entry.outside {
        "changed outside pith".to_owned()
    } else {
        match &entry.tool {
            Some(tool) => format!("checkpoint after {tool}"),
            None => "checkpoint".to_owned(),
        }
    };
    let count = entry.files.len();
    let mut paths = entry
        .files
        .iter()
        .take(CHECKPOINT_PATHS_SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if count > CHECKPOINT_PATHS_SHOWN {
        paths.push_str(&format!(" and {} more", count - CHECKPOINT_PATHS_SHOWN));
    }
    writeln!(
        out,
        "  -- {what}: {}, {}: {paths}",
        plural(count, "file"),
        human_bytes(entry.bytes)
    )?;
    if entry.omitted > 0 {
        writeln!(
            out,
            "     [{} not kept (over a cap or unreadable): a rewind past this point refuses]",
            plural(entry.omitted, "file")
        )?;
    }
    Ok(())
}

/// `== ⟲ rewound to turn 3 (code and conversation): 4 files restored ==`, then the paths.
pub(super) fn write_rewind(out: &mut dyn Write, entry: &RewindEntry) -> io::Result<()> {
    writeln!(out)?;
    let restored = if entry.mode.rewinds_code() {
        format!(": {} restored", plural(entry.restored.len(), "file"))
    } else {
        String::new()
    };
    writeln!(
        out,
        "== \u{27f2} rewound to turn {} ({}){restored} ==",
        entry.turn,
        entry.mode.describe()
    )?;
    if !entry.restored.is_empty() {
        writeln!(out, "  [restored: {}]", entry.restored.join(", "))?;
    }
    Ok(())
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::RewindMode;

    fn render(entries: &[Entry]) -> String {
        let mut out = Vec::new();
        for entry in entries {
            match entry {
                Entry::Checkpoint(entry) => write_checkpoint(&mut out, entry).unwrap(),
                Entry::Rewind(entry) => write_rewind(&mut out, entry).unwrap(),
            }
        }
        String::from_utf8(out).unwrap()
    }

    enum Entry {
        Checkpoint(CheckpointEntry),
        Rewind(RewindEntry),
    }

    fn checkpoint(files: usize, outside: bool, omitted: usize) -> Entry {
        Entry::Checkpoint(CheckpointEntry {
            seq: 4,
            ts: "t".into(),
            call_id: (!outside).then(|| "c1".to_owned()),
            tool: (!outside).then(|| "bash".to_owned()),
            outside,
            files: (1..=files).map(|i| format!("src/f{i}.rs")).collect(),
            omitted,
            bytes: 1229,
        })
    }

    #[test]
    fn a_checkpoint_is_one_line_naming_its_files() {
        assert_eq!(
            render(&[checkpoint(2, false, 0)]),
            "  -- checkpoint after bash: 2 files, 1.2 KiB: src/f1.rs, src/f2.rs\n"
        );
        assert_eq!(
            render(&[checkpoint(7, true, 1)]),
            "  -- changed outside pith: 7 files, 1.2 KiB: src/f1.rs, src/f2.rs, src/f3.rs, \
             src/f4.rs, src/f5.rs and 2 more\n     [1 file not kept (over a cap or \
             unreadable): a rewind past this point refuses]\n"
        );
    }

    #[test]
    fn a_rewind_is_a_marker_with_its_turn_mode_and_files() {
        let rewind = |mode, restored: &[&str]| {
            Entry::Rewind(RewindEntry {
                seq: 9,
                ts: "t".into(),
                turn: 3,
                to_seq: 6,
                mode,
                restored: restored.iter().map(|p| (*p).to_owned()).collect(),
            })
        };
        assert_eq!(
            render(&[rewind(RewindMode::Both, &["a.rs", "b.rs"])]),
            "\n== ⟲ rewound to turn 3 (code and conversation): 2 files restored ==\n  \
             [restored: a.rs, b.rs]\n"
        );
        assert_eq!(
            render(&[rewind(RewindMode::Conversation, &[])]),
            "\n== ⟲ rewound to turn 3 (conversation) ==\n"
        );
        assert_eq!(
            render(&[rewind(RewindMode::Code, &["a.rs"])]),
            "\n== ⟲ rewound to turn 3 (code): 1 file restored ==\n  [restored: a.rs]\n"
        );
    }
}
