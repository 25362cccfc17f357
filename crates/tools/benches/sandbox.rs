//! What the bash sandbox costs per command: `true` through the bash tool (registry,
//! permission check, spawn, capture) without the sandbox, in `workspace-write` with the
//! network allowed (Landlock only) and in `workspace-write` without network (Landlock
//! plus the network namespace, the default). The target is < 5 ms per command.
//!
//! `cargo bench -p pith-tools --bench sandbox`
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use pith_core::{ToolCall, ToolRegistry};
use pith_tools::{PermissionMode, SandboxConfig, SandboxMode, ToolsConfig, Toolset};
use tokio_util::sync::CancellationToken;

fn registry(dir: &std::path::Path, name: &str, sandbox: SandboxConfig) -> ToolRegistry {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).unwrap();
    let config = ToolsConfig::new(&root, dir.join(format!("{name}-spill")))
        .with_mode(PermissionMode::Full)
        .with_sandbox(sandbox);
    Toolset::new(config).unwrap().registry()
}

fn bash_true(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let variants = [
        (
            "true_unsandboxed",
            SandboxConfig::default().with_mode(Some(SandboxMode::Off)),
        ),
        (
            "true_workspace_write_with_network",
            SandboxConfig::default()
                .with_mode(Some(SandboxMode::WorkspaceWrite))
                .with_network(true),
        ),
        (
            "true_workspace_write",
            SandboxConfig::default().with_mode(Some(SandboxMode::WorkspaceWrite)),
        ),
    ];
    let call = ToolCall {
        id: "bench".into(),
        name: "bash".into(),
        arguments: serde_json::json!({"command": "true"}),
    };
    let cancel = CancellationToken::new();
    let mut group = c.benchmark_group("bash_sandbox");
    group.sample_size(50);
    for (name, sandbox) in variants {
        let registry = registry(dir.path(), name, sandbox);
        group.bench_function(name, |b| {
            b.iter(|| {
                let result = runtime.block_on(registry.execute(&call, &cancel));
                assert!(!result.is_error, "{name}: {}", result.content);
                black_box(result)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bash_true);
criterion_main!(benches);
