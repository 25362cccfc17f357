//! The tool calls of a session that have started and not finished yet, so that a
//! permission question (which names a tool, not a call) can point the editor at the call
//! it is about. Questions come one at a time (the policy serialises them), and only
//! `task` calls run side by side, so the latest running call of the tool is the one that
//! asks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::SessionId;

/// One running call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningCall {
    /// The session the call was announced in (a subagent's, or the parent's).
    pub session: SessionId,
    /// Its ACP tool call id.
    pub id: String,
    /// The tool's name.
    pub tool: String,
}

/// The running calls, shared by a session's event mapper and its approver.
#[derive(Debug, Clone, Default)]
pub struct RunningCalls {
    calls: Arc<Mutex<Vec<RunningCall>>>,
    /// The editor terminal each `bash` call ran in (ACP call id → terminal id), so that
    /// the call's last update keeps showing it.
    terminals: Arc<Mutex<HashMap<String, String>>>,
}

impl RunningCalls {
    /// A call started.
    pub fn start(&self, call: RunningCall) {
        self.lock().push(call);
    }

    /// The call `id` ended.
    pub fn finish(&self, id: &str) {
        self.lock().retain(|call| call.id != id);
    }

    /// The latest running call of `tool`.
    pub fn latest(&self, tool: &str) -> Option<RunningCall> {
        self.lock().iter().rev().find(|c| c.tool == tool).cloned()
    }

    /// The call `id` runs in the editor's terminal `terminal`.
    pub fn attach_terminal(&self, id: &str, terminal: &str) {
        self.terminals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned(), terminal.to_owned());
    }

    /// The terminal the call `id` ran in, if any (forgotten once asked).
    pub fn take_terminal(&self, id: &str) -> Option<String> {
        self.terminals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }

    /// Takes every call still running (the turn ended without their results).
    pub fn drain(&self) -> Vec<RunningCall> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RunningCall>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, tool: &str) -> RunningCall {
        RunningCall {
            session: SessionId::new("s"),
            id: id.into(),
            tool: tool.into(),
        }
    }

    #[test]
    fn the_latest_unfinished_call_of_the_tool_is_found() {
        let calls = RunningCalls::default();
        calls.start(call("a", "bash"));
        calls.start(call("b", "read"));
        calls.start(call("c", "bash"));
        assert_eq!(calls.latest("bash").map(|c| c.id), Some("c".into()));
        calls.finish("c");
        assert_eq!(calls.latest("bash").map(|c| c.id), Some("a".into()));
        assert_eq!(calls.drain().len(), 2);
        assert_eq!(calls.latest("read"), None);
        calls.attach_terminal("a", "t1");
        assert_eq!(calls.take_terminal("a").as_deref(), Some("t1"));
        assert_eq!(calls.take_terminal("a"), None);
    }
}
