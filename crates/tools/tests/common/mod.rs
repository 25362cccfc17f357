//! Shared fixture for pith-tools integration tests: a temporary workspace, a spill
//! directory beside it, and a registry built by the public builder.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pith_core::{ToolCall, ToolRegistry, ToolResult};
use pith_tools::{
    Approval, Approver, Limits, PermissionMode, PermissionRequest, ToolsConfig, Toolset,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub toolset: Toolset,
    pub registry: ToolRegistry,
    spill: PathBuf,
    calls: AtomicUsize,
}

impl Fixture {
    pub fn new(mode: PermissionMode) -> Self {
        Self::build(mode, None, Limits::default())
    }

    pub fn build(
        mode: PermissionMode,
        approver: Option<Arc<dyn Approver>>,
        limits: Limits,
    ) -> Self {
        Self::build_with(mode, approver, limits, |_, config| config)
    }

    /// Like [`Fixture::build`], with `customize` changing the config last; it gets the
    /// fixture's temporary directory (holding `root/` and `outside/`) to place files in.
    pub fn build_with(
        mode: PermissionMode,
        approver: Option<Arc<dyn Approver>>,
        limits: Limits,
        customize: impl FnOnce(&Path, ToolsConfig) -> ToolsConfig,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        let mut config = ToolsConfig::new(dir.path().join("root"), dir.path().join("spill"))
            .with_mode(mode)
            .with_limits(limits);
        if let Some(approver) = approver {
            config = config.with_approver(approver);
        }
        let config = customize(dir.path(), config);
        let spill = config.spill_dir.clone();
        let toolset = Toolset::new(config).unwrap();
        let registry = toolset.registry();
        Self {
            dir,
            toolset,
            registry,
            spill,
            calls: AtomicUsize::new(0),
        }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root").canonicalize().unwrap()
    }

    pub fn outside(&self) -> PathBuf {
        self.dir.path().join("outside").canonicalize().unwrap()
    }

    pub fn spill_dir(&self) -> PathBuf {
        self.spill.clone()
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn next_call(&self, name: &str, arguments: Value) -> ToolCall {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        ToolCall {
            id: format!("call_{n}"),
            name: name.into(),
            arguments,
        }
    }

    /// Executes one call through the registry, failing the test if it hangs.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        self.call_with(name, arguments, &CancellationToken::new())
            .await
    }

    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let call = self.next_call(name, arguments);
        tokio::time::timeout(
            Duration::from_secs(60),
            self.registry.execute(&call, cancel),
        )
        .await
        .unwrap_or_else(|_| panic!("tool call {name} hung for 60 s"))
    }
}

/// The reference named by a `[full output: <reference>]` marker, if the text has one.
pub fn spill_reference(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find_map(|line| line.strip_prefix("[full output: ")?.strip_suffix(']'))
        .map(str::to_owned)
}

impl Fixture {
    /// The file a spill marker in `text` names, with `$PITH_SPILL_DIR` resolved against
    /// this fixture's spill directory (and required: markers never name absolute paths
    /// for files in it).
    pub fn spill_path(&self, text: &str) -> Option<PathBuf> {
        let reference = spill_reference(text)?;
        let name = reference
            .strip_prefix("$PITH_SPILL_DIR/")
            .unwrap_or_else(|| panic!("marker does not use $PITH_SPILL_DIR: {reference}"));
        Some(self.spill_dir().join(name))
    }
}

/// An approver that answers from a script and records every question.
pub struct ScriptedApprover {
    pub answers: Mutex<Vec<Approval>>,
    pub asked: Mutex<Vec<PermissionRequest>>,
}

impl ScriptedApprover {
    pub fn new(answers: Vec<Approval>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers),
            asked: Mutex::new(Vec::new()),
        })
    }

    pub fn questions(&self) -> Vec<PermissionRequest> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl Approver for ScriptedApprover {
    async fn decide(&self, request: PermissionRequest) -> Approval {
        self.asked.lock().unwrap().push(request);
        let mut answers = self.answers.lock().unwrap();
        if answers.is_empty() {
            Approval::Deny { feedback: None }
        } else {
            answers.remove(0)
        }
    }
}

/// True when process `pid` no longer runs (gone, or a zombie waiting to be reaped).
#[allow(unsafe_code)] // kill(pid, 0): the portable existence check, sends no signal
pub fn process_is_dead(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    // Still in the process table: dead only if it is a zombie (Linux: /proc state Z).
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        })
        .unwrap_or(false)
}

pub fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("pid file {path:?} missing: {err}"))
        .trim()
        .parse()
        .unwrap()
}
