//! The options the REPL and `pith acp` share, as the conversation's [`Overrides`].

use std::path::PathBuf;

use pith_agent::Overrides;
use pith_tools::PermissionMode;

use crate::cli::{ReplApprovalArg, SessionOptions};

/// `options` as overrides of a conversation in `cwd`; the rest stays at its default.
pub fn overrides(options: SessionOptions, cwd: PathBuf) -> Overrides {
    Overrides {
        model: options.model,
        compaction_model: options.compaction_model,
        context_window: options.context_window,
        approval: options.approval.map(|mode| match mode {
            ReplApprovalArg::Ask => PermissionMode::Ask,
            ReplApprovalArg::ReadOnly => PermissionMode::ReadOnly,
            ReplApprovalArg::AutoEdit => PermissionMode::AutoEdit,
            ReplApprovalArg::Full => PermissionMode::Full,
        }),
        no_auto_compact: options.no_auto_compact,
        max_cost: options.max_cost,
        sandbox: options.sandbox,
        allow_network: options.allow_network,
        reasoning: options.reasoning,
        cwd,
        ..Overrides::default()
    }
}
