//! The options the front-ends share, as the conversation's [`Overrides`]: the REPL's and
//! `pith acp`'s, and the model options `pith run` takes too.

use std::path::PathBuf;

use pith_agent::Overrides;
use pith_tools::PermissionMode;

use crate::cli::{ModelOptions, ReplApprovalArg, SessionOptions};

/// `options` as overrides of a conversation in `cwd`; the rest stays at its default.
pub fn overrides(options: SessionOptions, cwd: PathBuf) -> Overrides {
    let base = Overrides {
        approval: options.approval.map(|mode| match mode {
            ReplApprovalArg::Ask => PermissionMode::Ask,
            ReplApprovalArg::ReadOnly => PermissionMode::ReadOnly,
            ReplApprovalArg::AutoEdit => PermissionMode::AutoEdit,
            ReplApprovalArg::Full => PermissionMode::Full,
        }),
        cwd,
        ..Overrides::default()
    };
    with_model_options(options.shared, base)
}

/// `base` with the options every front-end takes the same way.
pub fn with_model_options(options: ModelOptions, base: Overrides) -> Overrides {
    Overrides {
        model: options.model,
        compaction_model: options.compaction_model,
        context_window: options.context_window,
        no_auto_compact: options.no_auto_compact,
        max_cost: options.max_cost,
        sandbox: options.sandbox,
        allow_network: options.allow_network,
        reasoning: options.reasoning,
        ..base
    }
}
