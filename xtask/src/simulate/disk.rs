//! The disk of a replayed session, as far as the session shows it: the content of every
//! file a successful command printed whole (`cat FILE`), so a simulated compaction can
//! re-attach files as pith would. A file the session changed afterwards keeps the last
//! content printed, which is what pith would re-read only approximately; files never
//! printed whole cannot be re-attached.

use std::collections::HashMap;
use std::sync::Mutex;

use pith_core::context::ledger::{shell, FileProbe};

/// Files as the session printed them.
#[derive(Debug, Default)]
pub struct SessionDisk {
    files: Mutex<HashMap<String, String>>,
}

impl SessionDisk {
    /// Records the output of `command` when it printed exactly one file whole.
    pub fn observe(&self, command: &str, exit_code: Option<i32>, output: &str) {
        if exit_code.is_some_and(|c| c != 0) {
            return;
        }
        let effects = shell::file_effects(command);
        if let [read] = effects.reads.as_slice() {
            if read.lines.is_none() && !read.partial && command.trim_start().starts_with("cat ") {
                if let Ok(mut files) = self.files.lock() {
                    files.insert(read.path.clone(), output.to_owned());
                }
            }
        }
    }
}

impl FileProbe for SessionDisk {
    /// Every path "exists and is as last seen": the replay cannot know better, and a
    /// missing fingerprint would read as "missing on disk".
    fn fingerprint(&self, _path: &str) -> Option<String> {
        Some("replayed".to_owned())
    }

    fn show(&self, path: &str, offset: u64, max_bytes: usize) -> Option<String> {
        let files = self.files.lock().ok()?;
        let content = files.get(path)?;
        let mut out = String::new();
        for (index, line) in content
            .lines()
            .enumerate()
            .skip(offset.saturating_sub(1) as usize)
        {
            let numbered = format!("{:>6}\t{line}\n", index + 1);
            if out.len() + numbered.len() > max_bytes {
                out.push_str("[truncated]\n");
                break;
            }
            out.push_str(&numbered);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_single_file_cats_that_succeeded_are_kept() {
        let disk = SessionDisk::default();
        disk.observe("cat src/a.py", Some(0), "x = 1\ny = 2\n");
        disk.observe("cat src/b.py", Some(1), "No such file");
        disk.observe("sed -n 1,5p src/c.py", Some(0), "partial");
        assert_eq!(
            disk.show("src/a.py", 1, 1000).unwrap(),
            "     1\tx = 1\n     2\ty = 2\n"
        );
        assert_eq!(disk.show("src/a.py", 2, 1000).unwrap(), "     2\ty = 2\n");
        assert_eq!(disk.show("src/b.py", 1, 1000), None);
        assert_eq!(disk.show("src/c.py", 1, 1000), None);
        assert!(disk
            .show("src/a.py", 1, 10)
            .unwrap()
            .ends_with("[truncated]\n"));
    }
}
