//! The user's directories the default deny list is computed from.

use std::ffi::OsString;
use std::path::PathBuf;

/// The directories the default deny list is computed from: `HOME`, `XDG_CONFIG_HOME`,
/// `XDG_DATA_HOME` and `PITH_HOME`. Empty values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserDirs {
    /// The home directory.
    pub home: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `XDG_DATA_HOME`.
    pub xdg_data_home: Option<PathBuf>,
    /// `PITH_HOME`.
    pub pith_home: Option<PathBuf>,
}

impl UserDirs {
    /// From the process environment.
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// From a variable lookup (testable without touching the environment).
    pub fn from_vars(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let var = |name: &str| {
            lookup(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        Self {
            home: var("HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            xdg_data_home: var("XDG_DATA_HOME"),
            pith_home: var("PITH_HOME"),
        }
    }

    /// Only a home directory (no XDG or pith variables).
    pub fn with_home(home: impl Into<PathBuf>) -> Self {
        Self {
            home: Some(home.into()),
            ..Self::default()
        }
    }

    /// pith's config directory, by the rule of the config loader: `$XDG_CONFIG_HOME/pith`
    /// when set, else `~/.config/pith`.
    pub fn pith_config_dir(&self) -> Option<PathBuf> {
        match (&self.xdg_config_home, &self.home) {
            (Some(xdg), _) => Some(xdg.join("pith")),
            (None, Some(home)) => Some(home.join(".config").join("pith")),
            (None, None) => None,
        }
    }

    /// pith's data directory (sessions live below it), by the rule of the session store:
    /// `$PITH_HOME` when set, else `$XDG_DATA_HOME/pith` when absolute, else
    /// `~/.local/share/pith`.
    pub fn pith_data_dir(&self) -> Option<PathBuf> {
        if let Some(pith_home) = &self.pith_home {
            return Some(pith_home.clone());
        }
        if let Some(xdg) = self.xdg_data_home.as_ref().filter(|p| p.is_absolute()) {
            return Some(xdg.join("pith"));
        }
        self.home
            .as_ref()
            .map(|home| home.join(".local").join("share").join("pith"))
    }
}
