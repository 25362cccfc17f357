//! The permission policy: which tool actions run freely, which need the user's approval,
//! and which are refused, per permission mode.
//!
//! | action                          | read-only | ask   | auto-edit | full  |
//! |---------------------------------|-----------|-------|-----------|-------|
//! | read inside workspace / spill   | allow     | allow | allow     | allow |
//! | read outside the workspace      | allow     | ask   | allow     | allow |
//! | write / edit (inside workspace) | deny      | ask   | allow     | allow |
//! | bash                            | deny      | ask   | ask       | allow |
//! | bash once without the sandbox   | deny      | ask   | ask       | deny  |
//! | external (MCP) tool             | hint¹     | ask   | config²   | config² |
//!
//! ¹ runs when its server marks it read-only (`readOnlyHint`), else refused.
//! ² the server's [`AutoApprove`]: `all` runs, `read-only` runs hinted tools and asks for
//! the rest, `none` asks; unset it is `read-only` in `auto-edit` and `all` in `full`.
//! "Allow for this session" covers every later call of that one tool.
//!
//! Writes outside the workspace are refused before the policy is consulted (see
//! [`crate::workspace`]), in every mode. "Ask" goes to the front-end's [`Approver`]; with
//! no approver (a headless run) an action that needs approval is refused with a message
//! naming the mode that would allow it. Every refusal is a [`pith_core::ToolError::Denied`], which
//! the registry turns into an error result for the model: never a crash.
//!
//! Tools call [`PermissionPolicy::authorize`] after parsing and resolving their
//! arguments and before doing anything.
//!
//! - `mode`: the four modes and their names;
//! - `action`: what a tool is about to do ([`Action`]) and what "allow for this session"
//!   would cover;
//! - `approval`: the question to the user and the answer ([`Approver`]);
//! - `policy`: the verdict per mode, the session's grants, asking ([`PermissionPolicy`]).

mod action;
mod approval;
mod mode;
mod policy;

pub use self::action::{Action, AutoApprove};
pub use self::approval::{Approval, Approver, PermissionRequest};
pub use self::mode::{PermissionMode, UnknownPermissionMode};
pub use self::policy::PermissionPolicy;
