//! What a sandboxed command may read and write, independent of the kernel mechanism.
//!
//! **Reads** are allowed everywhere except the deny list: the user's credentials
//! ([`DEFAULT_HOME_DENY`]), pith's own config and data directories, and the configured
//! extra paths. **Writes** are allowed only below the writable roots: the workspace (in
//! `workspace-write`), the private temporary directory, the session's spill directory and
//! the configured extra writable directories (in `workspace-write`). The roots are exempt
//! from the deny list when they lie inside a denied directory (the spill directory lies
//! inside pith's data directory; it must stay readable and writable), but a denied path
//! inside a root is still denied.
//!
//! Landlock only grants access: a rule allows some rights on a directory and everything
//! beneath it, and whatever no rule covers is denied. "Read everywhere except `~/.ssh`" is
//! therefore built as allow rules on the complement ([`Policy::landlock_rules`]): starting
//! at `/`, a directory with a denied path somewhere below it gets no read rule of its own
//! but a *list* rule (its entries' names can be listed), and each of its entries gets
//! either the full rule (nothing denied below it), a recursive expansion (a denied path
//! below it) or nothing (the entry is denied, or is a symlink — a symlink's target is
//! judged by the rules of wherever it points). The same expansion carves denied paths out
//! of writable roots. `/dev` is carved the same way, so that only the usual character
//! devices (`/dev/null`, `/dev/tty`, …; [`DEVICES`]) are reachable, never a disk.

use std::path::{Path, PathBuf};

pub use super::user_dirs::UserDirs;
use super::{config::SandboxConfig, mode::SandboxMode};

/// Paths under the home directory that sandboxed commands may never read.
pub const DEFAULT_HOME_DENY: [&str; 5] = [".ssh", ".aws", ".gnupg", ".config/gcloud", ".netrc"];

/// The device directory, carved like a denied path: only [`DEVICES`] are reachable.
pub const DEV: &str = "/dev";

/// The entries of `/dev` sandboxed commands may use, and how.
pub const DEVICES: [(&str, Access); 9] = [
    ("null", Access::Device),
    ("zero", Access::Device),
    ("full", Access::Device),
    ("tty", Access::Device),
    ("ptmx", Access::Device),
    ("pts", Access::Device),
    ("random", Access::Read),
    ("urandom", Access::Read),
    ("shm", Access::Read),
];

/// The default deny list for `dirs`: [`DEFAULT_HOME_DENY`] under the home directory,
/// pith's config and data directories as pith computes them, and their default locations
/// under the home directory (so a session started with `PITH_HOME` elsewhere still hides
/// the transcripts kept in the default place).
pub fn default_deny_list(dirs: &UserDirs) -> Vec<PathBuf> {
    let mut deny = Vec::new();
    if let Some(home) = &dirs.home {
        deny.extend(DEFAULT_HOME_DENY.iter().map(|p| home.join(p)));
        deny.push(home.join(".config").join("pith"));
        deny.push(home.join(".local").join("share").join("pith"));
    }
    deny.extend(dirs.pith_config_dir());
    deny.extend(dirs.pith_data_dir());
    deny
}

/// The directories every sandboxed command gets, whatever the mode.
#[derive(Debug, Clone, Copy)]
pub struct Roots<'a> {
    /// The workspace root (canonical).
    pub workspace: &'a Path,
    /// The session's spill directory.
    pub spill: &'a Path,
    /// The sandbox's private temporary directory.
    pub temp: &'a Path,
}

/// What one rule grants beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// List the directory's entries (and those of every directory below it), nothing
    /// else: the directories on the way to a denied path.
    List,
    /// Read files, list directories, execute programs.
    Read,
    /// Read, plus create, change, rename and remove files, directories, links, FIFOs and
    /// sockets. Never device nodes.
    Write,
    /// Read and write a device file, including its ioctls (`/dev/null`, `/dev/tty`, …).
    Device,
}

/// One allow rule: `access` on `path` and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The file or directory.
    pub path: PathBuf,
    /// What is allowed.
    pub access: Access,
}

impl Rule {
    fn new(path: impl Into<PathBuf>, access: Access) -> Self {
        Self {
            path: path.into(),
            access,
        }
    }
}

/// The resolved policy of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Paths that may not be read (canonical where they exist).
    pub deny: Vec<PathBuf>,
    /// Directories that may be written (canonical where they exist), exempt from the deny
    /// list except for denied paths inside them.
    pub writable: Vec<PathBuf>,
    /// Directories always readable, exempt like the writable ones: the workspace.
    pub readable: Vec<PathBuf>,
}

impl Policy {
    /// The policy of `mode` (a sandboxed one) for `config` and `roots`.
    pub fn new(mode: SandboxMode, config: &SandboxConfig, roots: &Roots<'_>) -> Self {
        let home = config.user_dirs.home.as_deref();
        let resolve_all = |paths: &mut dyn Iterator<Item = &PathBuf>| -> Vec<PathBuf> {
            let mut out: Vec<PathBuf> = Vec::new();
            for path in paths {
                let resolved = resolve(path, roots.workspace, home);
                if !out.contains(&resolved) {
                    out.push(resolved);
                }
            }
            out
        };
        let defaults = default_deny_list(&config.user_dirs);
        let deny = resolve_all(&mut defaults.iter().chain(&config.extra_deny));
        let workspace = roots.workspace.to_path_buf();
        let temp = roots.temp.to_path_buf();
        let spill = roots.spill.to_path_buf();
        let writable = match mode {
            SandboxMode::WorkspaceWrite => resolve_all(
                &mut [workspace.clone(), temp, spill]
                    .iter()
                    .chain(&config.extra_writable),
            ),
            SandboxMode::ReadOnly | SandboxMode::Off => resolve_all(&mut [temp, spill].iter()),
        };
        Self {
            deny,
            writable,
            readable: vec![resolve(&workspace, roots.workspace, home)],
        }
    }

    /// The Landlock allow rules expressing this policy (see the module documentation).
    /// Reads the directories on the way to each denied path; a directory that cannot be
    /// listed gets a list rule only (its entries stay unreachable).
    pub fn landlock_rules(&self) -> Vec<Rule> {
        let mut carve = self.deny.clone();
        carve.push(PathBuf::from(DEV));
        let mut rules = Vec::new();
        expand(Path::new("/"), Access::Read, &carve, &mut rules);
        for dir in &self.readable {
            expand(dir, Access::Read, &carve, &mut rules);
        }
        for dir in &self.writable {
            expand(dir, Access::Write, &carve, &mut rules);
        }
        rules.push(Rule::new(DEV, Access::List));
        for (name, access) in DEVICES {
            rules.push(Rule::new(Path::new(DEV).join(name), access));
        }
        rules
    }
}

/// Adds the rules granting `access` on `root` minus every path of `carve` strictly
/// beneath it.
fn expand(root: &Path, access: Access, carve: &[PathBuf], rules: &mut Vec<Rule>) {
    let below: Vec<&PathBuf> = carve
        .iter()
        .filter(|denied| denied.starts_with(root) && denied.as_path() != root)
        .collect();
    if below.is_empty() {
        rules.push(Rule::new(root, access));
        return;
    }
    rules.push(Rule::new(root, Access::List));
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) => {
            tracing::debug!(dir = %root.display(), %err, "sandbox: cannot list a directory on the way to a denied path");
            return;
        }
    };
    for entry in entries.flatten() {
        let path = root.join(entry.file_name());
        if carve.contains(&path) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() && below.iter().any(|denied| denied.starts_with(&path)) {
            expand(&path, access, carve, rules);
        } else {
            rules.push(Rule::new(path, access));
        }
    }
}

/// `path` made absolute (`~/` is `home`, relative is relative to `base`), normalised,
/// and canonicalised as far as it exists (a denied path that does not exist yet keeps
/// its spelling below its deepest existing ancestor).
pub fn resolve(path: &Path, base: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    };
    let absolute = crate::workspace::normalize(&base.join(expanded));
    let mut existing = absolute.as_path();
    let mut missing = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            let mut out = canonical;
            out.extend(missing.iter().rev());
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs_for(home: &Path) -> UserDirs {
        UserDirs::with_home(home)
    }

    #[test]
    fn the_default_deny_list_follows_the_config_and_session_rules() {
        let dirs = UserDirs::from_vars(|name| match name {
            "HOME" => Some("/h".into()),
            "XDG_CONFIG_HOME" => Some("/cfg".into()),
            "XDG_DATA_HOME" => Some("relative".into()),
            "PITH_HOME" => Some("".into()),
            _ => None,
        });
        assert_eq!(dirs.pith_config_dir().unwrap(), Path::new("/cfg/pith"));
        assert_eq!(
            dirs.pith_data_dir().unwrap(),
            Path::new("/h/.local/share/pith"),
            "a relative XDG_DATA_HOME and an empty PITH_HOME are ignored"
        );
        let deny = default_deny_list(&dirs);
        for expected in [
            "/h/.ssh",
            "/h/.aws",
            "/h/.gnupg",
            "/h/.config/gcloud",
            "/h/.netrc",
            "/h/.config/pith",
            "/h/.local/share/pith",
            "/cfg/pith",
        ] {
            assert!(deny.contains(&PathBuf::from(expected)), "{expected}");
        }
        let with_pith_home = UserDirs {
            pith_home: Some("/ph".into()),
            ..dirs
        };
        assert_eq!(with_pith_home.pith_data_dir().unwrap(), Path::new("/ph"));
        assert!(default_deny_list(&with_pith_home).contains(&PathBuf::from("/ph")));
        assert!(default_deny_list(&UserDirs::default()).is_empty());
    }

    #[test]
    fn paths_resolve_through_home_symlinks_and_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("keys")).unwrap();
        std::os::unix::fs::symlink(real.join("keys"), real.join("link")).unwrap();
        assert_eq!(
            resolve(Path::new("~/link/id"), Path::new("/ws"), Some(&real)),
            real.join("keys/id"),
            "a symlinked deny path is denied where it really is"
        );
        assert_eq!(
            resolve(Path::new("a/../b"), &real, None),
            real.join("b"),
            "relative to the base, normalised"
        );
        let missing = resolve(Path::new("/nonexistent-pith/x/.."), &real, None);
        assert_eq!(missing, Path::new("/nonexistent-pith"));
    }

    /// A fake tree: home with .ssh, a project, other entries.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in [
            "home/.ssh",
            "home/.config/pith",
            "home/.config/git",
            "home/.local/share/pith/sessions/p/s/spill",
            "home/project/src",
            "home/docs",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("home/.netrc"), "machine x").unwrap();
        std::fs::write(root.join("home/notes.txt"), "n").unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
        (dir, root)
    }

    fn policy_for(root: &Path, mode: SandboxMode, extra: SandboxConfig) -> Policy {
        let config = SandboxConfig {
            user_dirs: dirs_for(&root.join("home")),
            ..extra
        };
        let workspace = root.join("home/project");
        Policy::new(
            mode,
            &config,
            &Roots {
                workspace: &workspace,
                spill: &root.join("home/.local/share/pith/sessions/p/s/spill"),
                temp: &root.join("tmp"),
            },
        )
    }

    fn access_of(rules: &[Rule], path: &Path) -> Vec<Access> {
        rules
            .iter()
            .filter(|r| r.path == path)
            .map(|r| r.access)
            .collect()
    }

    /// Whether `path` is covered by a rule granting at least `wanted`, as Landlock
    /// decides: a rule on the path or on any ancestor.
    fn covered(rules: &[Rule], path: &Path, wanted: Access) -> bool {
        rules.iter().any(|r| {
            path.starts_with(&r.path)
                && match wanted {
                    Access::List => true,
                    Access::Read => matches!(r.access, Access::Read | Access::Write),
                    Access::Write => r.access == Access::Write,
                    Access::Device => r.access == Access::Device,
                }
        })
    }

    #[test]
    fn reads_are_allowed_on_the_complement_of_the_deny_list() {
        let (_dir, root) = tree();
        let home = root.join("home");
        let policy = policy_for(&root, SandboxMode::WorkspaceWrite, SandboxConfig::default());
        let rules = policy.landlock_rules();
        // Denied: the credentials and pith's own directories, and nothing on the way to
        // them is readable beyond its listing.
        for denied in [".ssh", ".netrc", ".config/pith", ".local/share/pith"] {
            assert!(
                !covered(&rules, &home.join(denied).join("x"), Access::Read),
                "{denied} must not be readable"
            );
        }
        assert_eq!(access_of(&rules, &home), [Access::List]);
        assert_eq!(access_of(&rules, &home.join(".config")), [Access::List]);
        assert!(access_of(&rules, Path::new("/")).contains(&Access::List));
        // Everything else is readable: siblings, the rest of /.
        for readable in ["docs", "notes.txt", ".config/git"] {
            assert!(
                covered(&rules, &home.join(readable), Access::Read),
                "{readable} must be readable"
            );
        }
        assert!(covered(&rules, Path::new("/usr/bin/env"), Access::Read));
        // A symlink gets no rule: its target is judged by its own rules.
        assert!(access_of(&rules, &home.join("keys")).is_empty());
        // The spill dir lies in the denied data dir but is readable and writable.
        let spill = home.join(".local/share/pith/sessions/p/s/spill");
        assert!(covered(&rules, &spill.join("1.txt"), Access::Write));
        assert!(!covered(
            &rules,
            &home.join(".local/share/pith/sessions/p/s/transcript.jsonl"),
            Access::Read
        ));
    }

    #[test]
    fn writes_are_confined_to_the_roots_of_the_mode() {
        let (_dir, root) = tree();
        let home = root.join("home");
        let project = home.join("project");
        let write = policy_for(&root, SandboxMode::WorkspaceWrite, SandboxConfig::default());
        let rules = write.landlock_rules();
        assert!(covered(&rules, &project.join("src/main.rs"), Access::Write));
        assert!(covered(&rules, &root.join("tmp/x"), Access::Write));
        assert!(!covered(&rules, &home.join("notes.txt"), Access::Write));
        assert!(!covered(&rules, Path::new("/etc/passwd"), Access::Write));

        let read_only = policy_for(&root, SandboxMode::ReadOnly, SandboxConfig::default());
        let rules = read_only.landlock_rules();
        assert!(!covered(
            &rules,
            &project.join("src/main.rs"),
            Access::Write
        ));
        assert!(covered(&rules, &project.join("src/main.rs"), Access::Read));
        assert!(covered(&rules, &root.join("tmp/x"), Access::Write));
    }

    #[test]
    fn devices_are_an_allow_list_and_disks_are_unreachable() {
        let (_dir, root) = tree();
        let rules = policy_for(&root, SandboxMode::WorkspaceWrite, SandboxConfig::default())
            .landlock_rules();
        assert!(covered(&rules, Path::new("/dev/null"), Access::Device));
        assert!(covered(&rules, Path::new("/dev/pts/0"), Access::Device));
        assert!(!covered(&rules, Path::new("/dev/sda"), Access::Read));
        assert!(!covered(&rules, Path::new("/dev/mem"), Access::Read));
        assert!(!covered(&rules, Path::new("/dev/null"), Access::Write));
    }

    #[test]
    fn a_denied_path_inside_the_workspace_is_carved_out_of_it() {
        let (_dir, root) = tree();
        let project = root.join("home/project");
        std::fs::create_dir_all(project.join("secrets/inner")).unwrap();
        std::fs::create_dir_all(project.join("build")).unwrap();
        let config = SandboxConfig::default().with_extra_deny(vec![
            PathBuf::from("secrets"), // relative to the workspace
            PathBuf::from("~/docs"),  // under the configured home
        ]);
        let policy = policy_for(&root, SandboxMode::WorkspaceWrite, config);
        assert!(policy.deny.contains(&project.join("secrets")));
        assert!(policy.deny.contains(&root.join("home/docs")));
        let rules = policy.landlock_rules();
        assert!(!covered(
            &rules,
            &project.join("secrets/inner/x"),
            Access::Read
        ));
        assert!(covered(&rules, &project.join("build/x"), Access::Write));
        assert!(covered(&rules, &project.join("src/x"), Access::Write));
        let on_root = access_of(&rules, &project);
        assert!(
            !on_root.is_empty() && on_root.iter().all(|a| *a == Access::List),
            "the workspace root itself can only be listed: {on_root:?}"
        );
        assert!(!covered(&rules, &root.join("home/docs/x"), Access::Read));
    }

    #[test]
    fn extra_writable_applies_to_workspace_write_only() {
        let (_dir, root) = tree();
        let cache = root.join("cache");
        std::fs::create_dir(&cache).unwrap();
        let config = SandboxConfig::default().with_extra_writable(vec![cache.clone()]);
        let write = policy_for(&root, SandboxMode::WorkspaceWrite, config.clone());
        assert!(write.writable.contains(&cache));
        let read_only = policy_for(&root, SandboxMode::ReadOnly, config);
        assert!(!read_only.writable.contains(&cache));
    }
}
