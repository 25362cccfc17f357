//! The scaffold of the read-only tools (read, grep, glob, ls): what every one of them does
//! around its own work, written once.
//!
//! A call goes: the arguments parsed into the tool's struct ([`ReadOnlyTool::Args`]) →
//! the checks that need no file and the path to read ([`ReadOnlyTool::path`]) → the path
//! resolved in the workspace, and the policy asked when it lies outside the workspace and
//! the spill directory (`Action::ReadOutside`) → the tool's work
//! ([`ReadOnlyTool::answer`], usually on a blocking thread through `blocking`) → its
//! text squashed and spilled by the capture ([`Answer::Captured`]), or returned as it is
//! ([`Answer::Exact`]: `read`, whose text is never squashed).

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use pith_core::{ToolContext, ToolError, ToolOutput};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::capture::RawOutput;
use crate::config::ToolEnv;
use crate::permission::Action;
use crate::typed::TypedTool;
use crate::workspace::{PathScope, ReadTarget};

/// What a read-only tool's work produced.
#[derive(Debug)]
pub enum Answer {
    /// Text for the model, squashed and spilled by the capture like every tool's output.
    Captured(String),
    /// The result as it is (never squashed).
    Exact(ToolOutput),
}

/// One read-only tool, written as what is its own; [`ReadOnly`] makes it a
/// [`TypedTool`] (see the module docs for the steps of a call).
#[async_trait]
pub trait ReadOnlyTool: Send + Sync + 'static {
    /// The tool's name, as the model calls it.
    const NAME: &'static str;
    /// What the tool does, for the model.
    const DESCRIPTION: &'static str;
    /// A call without arguments (`null`) means `{}` (ls lists the workspace root); else it
    /// is refused like any argument that is not an object.
    const ARGUMENTS_OPTIONAL: bool = false;
    /// The arguments.
    type Args: DeserializeOwned + Send;

    /// The JSON Schema of the arguments.
    fn parameters(env: &ToolEnv) -> serde_json::Value;

    /// Checks the arguments that need no file, and names the path to read (relative to
    /// the workspace root, or absolute).
    fn path(args: &Self::Args) -> Result<&str, ToolError>;

    /// The work, on the path resolved and allowed.
    async fn answer(call: Call<'_, Self::Args>) -> Result<Answer, ToolError>;
}

/// One call whose path was resolved and allowed: what [`ReadOnlyTool::answer`] works on.
pub struct Call<'a, A> {
    /// The session's environment.
    pub env: &'a Arc<ToolEnv>,
    /// The parsed arguments.
    pub args: A,
    /// The path to read, resolved.
    pub target: ReadTarget,
    /// The call's context (id, cancellation).
    pub ctx: &'a ToolContext,
}

/// A read-only tool over the session's environment.
pub struct ReadOnly<T> {
    env: Arc<ToolEnv>,
    tool: PhantomData<fn() -> T>,
}

impl<T> ReadOnly<T> {
    /// The tool over `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self {
            env,
            tool: PhantomData,
        }
    }
}

#[async_trait]
impl<T: ReadOnlyTool> TypedTool for ReadOnly<T> {
    const NAME: &'static str = T::NAME;
    const READ_ONLY: bool = true;
    const ARGUMENTS_OPTIONAL: bool = T::ARGUMENTS_OPTIONAL;
    type Args = T::Args;

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn parameters(&self) -> serde_json::Value {
        T::parameters(&self.env)
    }

    async fn call(&self, args: T::Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let target = authorize_read(&self.env, T::NAME, T::path(&args)?, ctx).await?;
        let call = Call {
            env: &self.env,
            args,
            target,
            ctx,
        };
        Ok(match T::answer(call).await? {
            Answer::Captured(text) => ToolOutput::ok(
                self.env
                    .capture
                    .finish(&ctx.call_id, RawOutput::plain(T::NAME, &text)),
            ),
            Answer::Exact(output) => output,
        })
    }
}

/// Resolves a path argument for reading and asks the policy when it lies outside the
/// workspace and the spill directory.
async fn authorize_read(
    env: &ToolEnv,
    tool: &str,
    raw: &str,
    ctx: &ToolContext,
) -> Result<ReadTarget, ToolError> {
    let target = env.workspace.resolve_read(raw)?;
    if target.scope == PathScope::Outside {
        env.permissions
            .authorize_call(
                Action::ReadOutside {
                    tool: tool.to_owned(),
                    path: target.path.display().to_string(),
                },
                ctx,
            )
            .await?;
    }
    Ok(target)
}

/// Runs `work` on a blocking thread and waits for it, or for the call's cancellation.
/// `work` gets a token that is cancelled when the call is cancelled or its future dropped,
/// so a long walk can stop early; a thread that failed (panicked) is
/// `ToolError::Failed("{tool} failed: …")`.
pub(crate) async fn blocking<R, W>(tool: &str, ctx: &ToolContext, work: W) -> Result<R, ToolError>
where
    R: Send + 'static,
    W: FnOnce(CancellationToken) -> Result<R, ToolError> + Send + 'static,
{
    let cancel = ctx.cancel.child_token();
    let worker_cancel = cancel.clone();
    let _stop_worker = cancel.drop_guard();
    let done = tokio::task::spawn_blocking(move || work(worker_cancel));
    tokio::select! {
        done = done => done.map_err(|err| ToolError::Failed(format!("{tool} failed: {err}")))?,
        () = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
    }
}
