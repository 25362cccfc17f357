//! The `[hooks]` configuration: for each [`HookEvent`], the hooks to run, in order.
//!
//! ```toml
//! [[hooks.PreToolUse]]
//! matcher = "bash"            # a regex over the tool name, whole name; optional
//! command = ".pith/hooks/guard.sh"
//! timeout_s = 30              # optional, default 60
//! ```
//!
//! The matcher applies to the tool name (`PreToolUse`, `PostToolUse`, MCP tools included:
//! `mcp__github__.*`), to the source (`SessionStart`: `new`, `resume`, `compact`) and to
//! the trigger (`PreCompact`, `PostCompact`: `auto`, `manual`). No matcher, an empty one
//! or `*` matches everything; it is ignored for `UserPromptSubmit` and `Stop`.

use std::collections::BTreeMap;
use std::time::Duration;

use pith_core::HookEvent;
use regex::Regex;
use serde::Deserialize;
use thiserror::Error;

/// Seconds a hook may run when `timeout_s` is not given.
pub const DEFAULT_TIMEOUT_S: u64 = 60;

/// The longest timeout accepted (one hour).
pub const MAX_TIMEOUT_S: u64 = 3600;

/// A `[hooks]` table that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HooksConfigError {
    /// A key under `[hooks]` that is not an event name.
    #[error("[hooks]: {0}")]
    UnknownEvent(#[from] pith_core::hooks::UnknownHookEvent),
    /// An entry that does not have the documented shape.
    #[error("[[hooks.{event}]] entry {index}: {message}")]
    Invalid {
        /// The event it is under.
        event: String,
        /// Its position, from 1.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

/// Where a hook was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookOrigin {
    /// The user's config file.
    User,
    /// The project's `.pith/config.toml` (runs only once trusted).
    Project,
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct HookSpec {
    /// The event it runs at.
    pub event: HookEvent,
    /// The matcher as written (`None`: matches everything).
    pub matcher: Option<String>,
    /// The compiled matcher, anchored at both ends.
    pattern: Option<Regex>,
    /// The command line, run with `sh -c` in the workspace.
    pub command: String,
    /// How long it may run before its process group is killed.
    pub timeout: Duration,
    /// Where it was configured.
    pub origin: HookOrigin,
}

impl HookSpec {
    /// True when the hook runs for `subject` (a tool name, a source or a trigger; `None`
    /// for events without one).
    pub fn matches(&self, subject: Option<&str>) -> bool {
        match (&self.pattern, subject) {
            (None, _) | (_, None) => true,
            (Some(pattern), Some(subject)) => pattern.is_match(subject),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    matcher: Option<String>,
    command: String,
    timeout_s: Option<u64>,
}

/// Every configured hook, by event, in configuration order (the user's first).
#[derive(Debug, Clone, Default)]
pub struct HooksConfig {
    by_event: BTreeMap<HookEvent, Vec<HookSpec>>,
}

impl HooksConfig {
    /// Parses a `[hooks]` table from a file of `origin` and appends its hooks.
    pub fn add_table(
        &mut self,
        table: &toml::Table,
        origin: HookOrigin,
    ) -> Result<(), HooksConfigError> {
        for (name, value) in table {
            let event: HookEvent = name.parse()?;
            let invalid = |index: usize, message: String| HooksConfigError::Invalid {
                event: name.clone(),
                index,
                message,
            };
            let entries = value.as_array().ok_or_else(|| {
                invalid(
                    1,
                    "expected an array of tables (`[[hooks.EVENT]]`)".to_owned(),
                )
            })?;
            for (i, entry) in entries.iter().enumerate() {
                let index = i + 1;
                let raw: RawHook = entry
                    .clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| invalid(index, e.message().to_owned()))?;
                if raw.command.trim().is_empty() {
                    return Err(invalid(index, "`command` is empty".into()));
                }
                let timeout_s = raw.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
                if timeout_s == 0 || timeout_s > MAX_TIMEOUT_S {
                    return Err(invalid(
                        index,
                        format!("`timeout_s` must be between 1 and {MAX_TIMEOUT_S}"),
                    ));
                }
                let matcher = raw.matcher.filter(|m| !m.is_empty() && m != "*");
                let pattern = matcher
                    .as_deref()
                    .map(|m| Regex::new(&format!("^(?:{m})$")))
                    .transpose()
                    .map_err(|e| invalid(index, format!("`matcher` is not a valid regex: {e}")))?;
                self.by_event.entry(event).or_default().push(HookSpec {
                    event,
                    matcher,
                    pattern,
                    command: raw.command,
                    timeout: Duration::from_secs(timeout_s),
                    origin,
                });
            }
        }
        Ok(())
    }

    /// The hooks of `event` that match `subject`, in order.
    pub fn matching(&self, event: HookEvent, subject: Option<&str>) -> Vec<&HookSpec> {
        self.by_event
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|hook| hook.matches(subject))
            .collect()
    }

    /// Every hook, event by event.
    pub fn all(&self) -> impl Iterator<Item = &HookSpec> {
        self.by_event.values().flatten()
    }

    /// True when no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.by_event.values().all(Vec::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<HooksConfig, HooksConfigError> {
        let table: toml::Table = toml::from_str(text).unwrap();
        let mut config = HooksConfig::default();
        let hooks = table
            .get("hooks")
            .and_then(|h| h.as_table())
            .cloned()
            .unwrap_or_default();
        config.add_table(&hooks, HookOrigin::User)?;
        Ok(config)
    }

    #[test]
    fn matchers_are_whole_name_regexes_and_absent_or_star_match_all() {
        let config = parse(
            r#"
            [[hooks.PreToolUse]]
            matcher = "bash"
            command = "a"
            [[hooks.PreToolUse]]
            matcher = "write|edit"
            command = "b"
            timeout_s = 5
            [[hooks.PreToolUse]]
            matcher = "mcp__github__.*"
            command = "c"
            [[hooks.PreToolUse]]
            matcher = "*"
            command = "d"
            [[hooks.Stop]]
            command = "e"
            "#,
        )
        .unwrap();
        let names = |tool: &str| -> Vec<String> {
            config
                .matching(HookEvent::PreToolUse, Some(tool))
                .iter()
                .map(|h| h.command.clone())
                .collect()
        };
        assert_eq!(names("bash"), ["a", "d"]);
        assert_eq!(names("bashful"), ["d"], "the matcher covers the whole name");
        assert_eq!(names("edit"), ["b", "d"]);
        assert_eq!(names("mcp__github__create_issue"), ["c", "d"]);
        assert_eq!(config.matching(HookEvent::Stop, None).len(), 1);
        assert!(config
            .matching(HookEvent::PostToolUse, Some("bash"))
            .is_empty());
        let timeouts: Vec<u64> = config.all().map(|h| h.timeout.as_secs()).collect();
        assert_eq!(timeouts, [60, 5, 60, 60, 60]);
    }

    #[test]
    fn mistakes_are_named() {
        let error = parse("[[hooks.PreToolUsage]]\ncommand = \"x\"").unwrap_err();
        assert!(error.to_string().contains("PreToolUsage"), "{error}");
        let error = parse("[[hooks.Stop]]\ncomand = \"x\"").unwrap_err();
        assert!(
            error.to_string().contains("[[hooks.Stop]] entry 1"),
            "{error}"
        );
        assert!(error.to_string().contains("comand"), "{error}");
        let error = parse("[[hooks.Stop]]\ncommand = \"x\"\ntimeout_s = 0").unwrap_err();
        assert!(error.to_string().contains("timeout_s"), "{error}");
        let error = parse("[[hooks.PreToolUse]]\nmatcher = \"(\"\ncommand = \"x\"").unwrap_err();
        assert!(error.to_string().contains("regex"), "{error}");
        let error = parse("[hooks.Stop]\ncommand = \"x\"").unwrap_err();
        assert!(error.to_string().contains("array of tables"), "{error}");
    }
}
