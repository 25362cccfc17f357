//! The registry the tool loop executes calls through.
//!
//! Execution model: the loop receives tool calls from the model, and for each one calls
//! [`ToolRegistry::execute`], which looks the tool up, runs it with the call's arguments
//! and a [`ToolContext`], and always returns a [`ToolResult`] for the model — unknown
//! tools, invalid arguments, refusals and failures become error results, never panics or
//! loop errors. During compaction the loop swaps in [`ToolRegistry::denying`], which keeps
//! the same definitions (prompt-cache parity) but answers every call with
//! [`TOOLS_DISABLED_DURING_COMPACTION`] without running anything.
//!
//! Growth: a registry is a shared handle whose advertised list only grows at its end —
//! tools registered before the first request, then deferred tools as they are loaded
//! ([`ToolRegistry::defer`], [`ToolRegistry::load`]). The loop asks for
//! [`ToolRegistry::definitions`] before every request, so a tool loaded during a turn is
//! advertised from the next request on, after every definition sent so far.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use tokio_util::sync::CancellationToken;

use crate::context::prompts::TOOLS_DISABLED_DURING_COMPACTION;
use crate::protocol::message::{Image, ToolCall, ToolResult};
use crate::protocol::sink::Progress;
use crate::protocol::tool::{Tool, ToolContext, ToolDefinition, ToolError};

/// What [`ToolRegistry::load`] did with one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadOutcome {
    /// The tool was deferred; its definition is now advertised, at the end of the list.
    Loaded,
    /// The tool was already advertised (registered eagerly, or loaded before).
    AlreadyAdvertised,
    /// No tool of that name is registered.
    Unknown,
}

/// The tools of a registry; shared by all clones of it.
#[derive(Default)]
struct Shelf {
    /// Advertised tools, in advertisement order. Only ever appended to once a request
    /// has been sent with it (see [`ToolRegistry`]).
    advertised: Vec<Arc<dyn Tool>>,
    /// Deferred tools: callable, not advertised until loaded.
    deferred: Vec<Arc<dyn Tool>>,
}

impl Shelf {
    /// Puts `tool` in the place of the tool of the same name, advertised or deferred;
    /// gives it back when there is none.
    fn replace(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let slot = self
            .advertised
            .iter_mut()
            .chain(self.deferred.iter_mut())
            .find(|t| t.name() == tool.name());
        match slot {
            Some(slot) => {
                *slot = tool;
                None
            }
            None => Some(tool),
        }
    }
}

/// The set of tools available to a loop, in advertisement order.
///
/// A registry is a shared handle: clones (the loop's copy, the compaction's
/// [`ToolRegistry::denying`] copy, a front-end's copy) see the same tools, so the set can
/// grow during a session without rebuilding the loop. It holds two kinds of tools:
///
/// - **advertised** tools, whose definitions [`ToolRegistry::definitions`] returns in
///   registration order, for every request;
/// - **deferred** tools ([`ToolRegistry::defer`]): callable by name but not advertised,
///   so their definitions cost nothing until the model asks for them.
///
/// [`ToolRegistry::load`] moves a deferred tool to the *end* of the advertised list, where
/// it stays for the life of the registry (the session). Nothing is ever removed or
/// reordered, so the definitions of request N are a prefix of those of request N+1 and a
/// provider's prompt cache of the tool block survives a load. Calling a deferred tool that
/// was not loaded loads it first (the call runs; its schema is advertised from the next
/// request on), so a model that guessed the arguments right is not sent round again.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    shelf: Arc<RwLock<Shelf>>,
    deny_all: bool,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shelf = self.read();
        let names = |tools: &[Arc<dyn Tool>]| -> Vec<String> {
            tools.iter().map(|t| t.name().to_owned()).collect()
        };
        f.debug_struct("ToolRegistry")
            .field("advertised", &names(&shelf.advertised))
            .field("deferred", &names(&shelf.deferred))
            .field("deny_all", &self.deny_all)
            .finish()
    }
}

impl ToolRegistry {
    /// A registry advertising `tools` in this order. A later tool with the same name
    /// replaces an earlier one.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let registry = Self::default();
        for tool in tools {
            registry.register(tool);
        }
        registry
    }

    fn read(&self) -> RwLockReadGuard<'_, Shelf> {
        self.shelf.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Shelf> {
        self.shelf.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds an advertised tool at the end of the list, or replaces the tool of the same
    /// name in place (advertised or deferred). Every clone sees it. Register tools before
    /// the first request: a tool added later changes the advertised list, which is fine
    /// for correctness but costs the provider's cached prefix once.
    pub fn register(&self, tool: Arc<dyn Tool>) {
        let mut shelf = self.write();
        if let Some(tool) = shelf.replace(tool) {
            shelf.advertised.push(tool);
        }
    }

    /// Adds a deferred tool: callable by name, advertised only once loaded (see the type's
    /// docs). A tool of the same name already present is replaced in place.
    pub fn defer(&self, tool: Arc<dyn Tool>) {
        let mut shelf = self.write();
        if let Some(tool) = shelf.replace(tool) {
            shelf.deferred.push(tool);
        }
    }

    /// Advertises the deferred tool `name` from now on, appended after every tool
    /// advertised so far. Shared by all clones; never undone.
    pub fn load(&self, name: &str) -> LoadOutcome {
        let mut shelf = self.write();
        if shelf.advertised.iter().any(|t| t.name() == name) {
            return LoadOutcome::AlreadyAdvertised;
        }
        match shelf.deferred.iter().position(|t| t.name() == name) {
            Some(index) => {
                let tool = shelf.deferred.remove(index);
                shelf.advertised.push(tool);
                LoadOutcome::Loaded
            }
            None => LoadOutcome::Unknown,
        }
    }

    /// Names of the deferred tools not loaded yet, in the order they were deferred.
    pub fn deferred_names(&self) -> Vec<String> {
        self.read()
            .deferred
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }

    /// A handle that loads deferred tools of this registry without keeping it alive (a
    /// tool inside the registry holds one without making a reference cycle).
    pub fn loader(&self) -> ToolLoader {
        ToolLoader {
            shelf: Arc::downgrade(&self.shelf),
        }
    }

    /// The same tools, but every call is refused with
    /// [`TOOLS_DISABLED_DURING_COMPACTION`]; nothing runs and no permission is asked.
    pub fn denying(&self) -> Self {
        Self {
            shelf: Arc::clone(&self.shelf),
            deny_all: true,
        }
    }

    /// True for a registry made by [`ToolRegistry::denying`].
    pub fn is_denying(&self) -> bool {
        self.deny_all
    }

    /// Definitions to advertise: registration order, then loaded tools in load order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.read()
            .advertised
            .iter()
            .map(|t| t.definition())
            .collect()
    }

    /// The tool called `name`, advertised or deferred.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let shelf = self.read();
        shelf
            .advertised
            .iter()
            .chain(&shelf.deferred)
            .find(|t| t.name() == name)
            .cloned()
    }

    /// True when `name` is a registered read-only tool. This is the single source of the
    /// read-only tool set (used by dedup and by concurrent execution).
    pub fn is_read_only(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.read_only())
    }

    /// True when `name` is a registered tool whose calls may run concurrently (see
    /// [`Tool::concurrent`]).
    pub fn is_concurrent(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.concurrent())
    }

    /// Names of the registered read-only tools (advertised and deferred).
    pub fn read_only_names(&self) -> BTreeSet<String> {
        let shelf = self.read();
        shelf
            .advertised
            .iter()
            .chain(&shelf.deferred)
            .filter(|t| t.read_only())
            .map(|t| t.name().to_owned())
            .collect()
    }

    /// Executes `call` and returns the result the model will see. Never fails: every
    /// problem becomes an error result. A deferred tool is loaded before it runs. Images
    /// the tool returned are dropped (see [`ToolRegistry::execute_with_images`]).
    pub async fn execute(&self, call: &ToolCall, cancel: &CancellationToken) -> ToolResult {
        self.execute_with(call, cancel, false).await
    }

    /// [`ToolRegistry::execute`], with `pre_approved` set when a hook approved the call
    /// (see [`ToolContext::pre_approved`]).
    pub async fn execute_with(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
        pre_approved: bool,
    ) -> ToolResult {
        self.execute_with_images(call, cancel, pre_approved).await.0
    }

    /// [`ToolRegistry::execute_with`], with the images the tool returned.
    pub async fn execute_with_images(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
        pre_approved: bool,
    ) -> (ToolResult, Vec<Image>) {
        self.execute_with_progress(call, cancel, pre_approved, None)
            .await
    }

    /// [`ToolRegistry::execute_with_images`], with a [`Progress`] handle the tool may
    /// send a child conversation's events into while it runs.
    pub async fn execute_with_progress(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
        pre_approved: bool,
        progress: Option<Progress>,
    ) -> (ToolResult, Vec<Image>) {
        let result = |content: String, is_error: bool| {
            (
                ToolResult::new(call.id.clone(), content, is_error),
                Vec::new(),
            )
        };
        if self.deny_all {
            return result(TOOLS_DISABLED_DURING_COMPACTION.to_owned(), true);
        }
        let Some(tool) = self.get(&call.name) else {
            let known: Vec<String> = self
                .read()
                .advertised
                .iter()
                .map(|t| t.name().to_owned())
                .collect();
            return result(
                format!(
                    "unknown tool `{}`; available tools: {}",
                    call.name,
                    known.join(", ")
                ),
                true,
            );
        };
        if cancel.is_cancelled() {
            return result(ToolError::Cancelled.to_string(), true);
        }
        self.load(&call.name);
        let ctx = ToolContext {
            cancel: cancel.clone(),
            call_id: call.id.clone(),
            pre_approved,
            progress,
        };
        match tool.run(call.arguments.clone(), &ctx).await {
            Ok(output) => {
                let (mut result, _) = result(output.content, output.is_error);
                result.effects = output.effects;
                result.child_session = output.child;
                (result, output.images)
            }
            Err(err) => result(err.to_string(), true),
        }
    }
}

/// Loads deferred tools into the registry it came from ([`ToolRegistry::loader`]); does
/// nothing once that registry is gone.
#[derive(Clone)]
pub struct ToolLoader {
    shelf: Weak<RwLock<Shelf>>,
}

impl std::fmt::Debug for ToolLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolLoader").finish_non_exhaustive()
    }
}

impl ToolLoader {
    /// [`ToolRegistry::load`] on the registry; [`LoadOutcome::Unknown`] when it is gone.
    pub fn load(&self, name: &str) -> LoadOutcome {
        match self.shelf.upgrade() {
            Some(shelf) => ToolRegistry {
                shelf,
                deny_all: false,
            }
            .load(name),
            None => LoadOutcome::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::tool::ToolOutput;
    use async_trait::async_trait;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Echo {
        runs: AtomicUsize,
    }

    #[async_trait]
    impl Tool for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn description(&self) -> &str {
            "Echo the text argument"
        }
        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        }
        fn read_only(&self) -> bool {
            true
        }
        async fn run(
            &self,
            arguments: serde_json::Value,
            _ctx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            match arguments.get("text").and_then(|t| t.as_str()) {
                Some(text) => Ok(ToolOutput::ok(text)),
                None => Err(ToolError::InvalidArguments(
                    "`text` must be a string".into(),
                )),
            }
        }
    }

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[tokio::test]
    async fn executes_a_registered_tool() {
        let echo = Arc::new(Echo {
            runs: AtomicUsize::new(0),
        });
        let registry = ToolRegistry::new(vec![echo.clone()]);
        let result = registry
            .execute(
                &call("echo", json!({"text": "hi"})),
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(result, ToolResult::new("call_1", "hi", false));
        assert_eq!(echo.runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn bad_arguments_and_unknown_tools_become_error_results() {
        let registry = ToolRegistry::new(vec![Arc::new(Echo {
            runs: AtomicUsize::new(0),
        })]);
        let cancel = CancellationToken::new();
        let bad = registry
            .execute(&call("echo", json!({"text": 3})), &cancel)
            .await;
        assert!(bad.is_error);
        assert!(bad.content.contains("invalid arguments"));
        let unknown = registry.execute(&call("rm_rf", json!({})), &cancel).await;
        assert!(unknown.is_error);
        assert!(unknown.content.contains("unknown tool `rm_rf`"));
        assert!(unknown.content.contains("echo"));
    }

    #[tokio::test]
    async fn denying_registry_keeps_definitions_and_runs_nothing() {
        let echo = Arc::new(Echo {
            runs: AtomicUsize::new(0),
        });
        let registry = ToolRegistry::new(vec![echo.clone()]);
        let denying = registry.denying();
        assert_eq!(denying.definitions(), registry.definitions());
        let result = denying
            .execute(
                &call("echo", json!({"text": "hi"})),
                &CancellationToken::new(),
            )
            .await;
        assert!(result.is_error);
        assert_eq!(
            result.content,
            "Tool calls are disabled during compaction; use the history."
        );
        let unknown = denying
            .execute(&call("anything", json!(null)), &CancellationToken::new())
            .await;
        assert_eq!(unknown.content, TOOLS_DISABLED_DURING_COMPACTION);
        assert_eq!(
            echo.runs.load(Ordering::SeqCst),
            0,
            "a denied call must not run"
        );
    }

    #[tokio::test]
    async fn a_cancelled_turn_does_not_start_tools() {
        let echo = Arc::new(Echo {
            runs: AtomicUsize::new(0),
        });
        let registry = ToolRegistry::new(vec![echo.clone()]);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = registry
            .execute(&call("echo", json!({"text": "hi"})), &cancel)
            .await;
        assert!(result.is_error);
        assert_eq!(echo.runs.load(Ordering::SeqCst), 0);
    }

    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "a tool"
        }
        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object"})
        }
        fn read_only(&self) -> bool {
            false
        }
        async fn run(
            &self,
            _arguments: serde_json::Value,
            _ctx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::ok(self.0))
        }
    }

    fn names(registry: &ToolRegistry) -> Vec<String> {
        registry.definitions().into_iter().map(|d| d.name).collect()
    }

    #[test]
    fn loaded_tools_are_appended_so_earlier_definitions_stay_a_prefix() {
        let registry = ToolRegistry::new(vec![Arc::new(Named("read")), Arc::new(Named("bash"))]);
        registry.defer(Arc::new(Named("mcp__a__x")));
        registry.defer(Arc::new(Named("mcp__a__y")));
        let loop_copy = registry.clone();
        let before = loop_copy.definitions();
        assert_eq!(
            names(&loop_copy),
            ["read", "bash"],
            "deferred tools are not advertised"
        );
        assert_eq!(registry.deferred_names(), ["mcp__a__x", "mcp__a__y"]);
        assert_eq!(registry.load("mcp__a__y"), LoadOutcome::Loaded);
        assert_eq!(registry.load("mcp__a__y"), LoadOutcome::AlreadyAdvertised);
        assert_eq!(registry.load("read"), LoadOutcome::AlreadyAdvertised);
        assert_eq!(registry.load("nope"), LoadOutcome::Unknown);
        assert_eq!(registry.loader().load("mcp__a__x"), LoadOutcome::Loaded);
        let after = loop_copy.definitions();
        assert_eq!(
            names(&loop_copy),
            ["read", "bash", "mcp__a__y", "mcp__a__x"],
            "every clone sees loads, in load order"
        );
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "the old list is a prefix"
        );
        assert!(registry.deferred_names().is_empty());
    }

    #[tokio::test]
    async fn calling_a_deferred_tool_runs_it_and_loads_it() {
        let registry = ToolRegistry::new(vec![Arc::new(Named("read"))]);
        registry.defer(Arc::new(Named("mcp__s__t")));
        let result = registry
            .execute(&call("mcp__s__t", json!({})), &CancellationToken::new())
            .await;
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.content, "mcp__s__t");
        assert_eq!(names(&registry), ["read", "mcp__s__t"]);
    }

    #[test]
    fn a_loader_outliving_its_registry_loads_nothing() {
        let registry = ToolRegistry::default();
        registry.defer(Arc::new(Named("x")));
        let loader = registry.loader();
        drop(registry);
        assert_eq!(loader.load("x"), LoadOutcome::Unknown);
    }

    #[test]
    fn read_only_set_comes_from_the_tools() {
        let registry = ToolRegistry::new(vec![Arc::new(Echo {
            runs: AtomicUsize::new(0),
        })]);
        assert!(registry.is_read_only("echo"));
        assert!(!registry.is_read_only("bash"));
        assert_eq!(
            registry.read_only_names().into_iter().collect::<Vec<_>>(),
            vec!["echo".to_owned()]
        );
    }
}
