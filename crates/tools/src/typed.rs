//! What every tool does around its own work, written once: a call's arguments are parsed
//! into the tool's struct ([`TypedTool::Args`]) before the tool sees them, so a mismatch
//! is the same `InvalidArguments` error for every tool. The read-only tools add their
//! own scaffold on top ([`crate::read_only`]).

use async_trait::async_trait;
use pith_core::{Tool, ToolContext, ToolError, ToolOutput};
use serde::de::DeserializeOwned;

use crate::arguments::parse_args;

/// One tool whose arguments arrive parsed; [`Typed`] makes it a `pith_core::Tool`.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The tool's name, as the model calls it.
    const NAME: &'static str;
    /// Whether the tool only reads (`pith_core::Tool::read_only`); by default a tool
    /// may change the workspace, the safe assumption.
    const READ_ONLY: bool = false;
    /// A call without arguments (`null`) means `{}`; else it is refused like any argument
    /// that is not an object.
    const ARGUMENTS_OPTIONAL: bool = false;
    /// The arguments.
    type Args: DeserializeOwned + Send;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON Schema of the arguments.
    fn parameters(&self) -> serde_json::Value;

    /// The work, on the parsed arguments.
    async fn call(&self, args: Self::Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// A [`TypedTool`] as a `pith_core::Tool`.
pub struct Typed<T>(pub T);

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        self.0.description()
    }

    fn parameters(&self) -> serde_json::Value {
        self.0.parameters()
    }

    fn read_only(&self) -> bool {
        T::READ_ONLY
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let arguments = if T::ARGUMENTS_OPTIONAL && arguments.is_null() {
            serde_json::json!({})
        } else {
            arguments
        };
        self.0.call(parse_args(arguments)?, ctx).await
    }
}
