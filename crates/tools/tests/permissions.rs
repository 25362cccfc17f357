//! Permission modes end to end through the registry: what runs, what asks the front-end,
//! and what a denial looks like to the model.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::{Fixture, ScriptedApprover};
use pith_tools::{Approval, Limits, PermissionMode};
use serde_json::json;

#[tokio::test]
async fn ask_mode_asks_before_writing_and_a_denial_reaches_the_model_as_an_error() {
    let approver = ScriptedApprover::new(vec![Approval::Deny {
        feedback: Some("put it in docs/ instead".into()),
    }]);
    let fx = Fixture::build(
        PermissionMode::Ask,
        Some(approver.clone()),
        Limits::default(),
    );
    let result = fx
        .call("write", json!({"path": "notes.md", "content": "hi"}))
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "permission denied: the user declined this call and said: put it in docs/ instead"
    );
    assert!(
        !fx.root().join("notes.md").exists(),
        "a denied write must not happen"
    );
    let questions = approver.questions();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].tool, "write");
    assert_eq!(questions[0].summary, "create notes.md (2 bytes)");
    assert!(
        questions[0].session_scope.contains("edits"),
        "{:?}",
        questions[0]
    );
}

#[tokio::test]
async fn allow_for_session_stops_asking_for_edits_but_not_for_commands() {
    let approver = ScriptedApprover::new(vec![
        Approval::AllowForSession,
        Approval::AllowOnce,
        Approval::AllowOnce,
    ]);
    let fx = Fixture::build(
        PermissionMode::Ask,
        Some(approver.clone()),
        Limits::default(),
    );
    let first = fx
        .call("write", json!({"path": "a.txt", "content": "one\n"}))
        .await;
    assert!(!first.is_error, "{}", first.content);
    let second = fx
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        )
        .await;
    assert!(!second.is_error, "{}", second.content);
    assert_eq!(
        approver.questions().len(),
        1,
        "edits were allowed for the session"
    );
    for _ in 0..2 {
        let run = fx.call("bash", json!({"command": "cat a.txt"})).await;
        assert_eq!(run.content, "two\n[exit code: 0]");
    }
    let questions = approver.questions();
    assert_eq!(questions.len(), 3, "allow-once commands ask every time");
    assert_eq!(questions[1].summary, "run: cat a.txt");
}

#[tokio::test]
async fn edits_that_cannot_apply_fail_before_bothering_the_user() {
    let approver = ScriptedApprover::new(vec![]);
    let fx = Fixture::build(
        PermissionMode::Ask,
        Some(approver.clone()),
        Limits::default(),
    );
    fx.write("a.txt", "x\n");
    let result = fx
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "missing", "new_string": "y"}),
        )
        .await;
    assert!(
        result.content.contains("was not found"),
        "{}",
        result.content
    );
    let escape = fx
        .call("write", json!({"path": "../escape.txt", "content": "x"}))
        .await;
    assert!(escape.content.contains("outside the workspace"));
    assert!(approver.questions().is_empty(), "nothing to approve");
}

#[tokio::test]
async fn read_only_mode_refuses_writes_but_reads_freely() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write("a.txt", "x\n");
    let write = fx
        .call("write", json!({"path": "b.txt", "content": "x"}))
        .await;
    assert!(write.is_error);
    assert!(
        write.content.contains("read-only mode"),
        "{}",
        write.content
    );
    let edit = fx
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert!(edit.is_error);
    assert_eq!(
        std::fs::read_to_string(fx.root().join("a.txt")).unwrap(),
        "x\n"
    );
    assert!(!fx.call("read", json!({"path": "a.txt"})).await.is_error);
}

#[tokio::test]
async fn switching_modes_through_the_toolset_handle_applies_to_the_next_call() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    assert!(fx.call("bash", json!({"command": "true"})).await.is_error);
    fx.toolset.permissions().set_mode(PermissionMode::Full);
    let run = fx.call("bash", json!({"command": "true"})).await;
    assert!(!run.is_error, "{}", run.content);
}

#[test]
fn registry_advertises_eight_tools_with_schemas_and_the_read_only_set() {
    let fx = Fixture::new(PermissionMode::Ask);
    let names: Vec<String> = fx
        .registry
        .definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "grep",
            "glob",
            "ls",
            "write",
            "edit",
            "bash",
            "update_plan"
        ]
    );
    for definition in fx.registry.definitions() {
        assert_eq!(
            definition.parameters["type"], "object",
            "{}",
            definition.name
        );
        assert!(!definition.description.is_empty());
    }
    assert_eq!(
        fx.registry
            .read_only_names()
            .into_iter()
            .collect::<Vec<_>>(),
        ["glob", "grep", "ls", "read", "update_plan"]
    );
}

#[test]
fn a_missing_workspace_root_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = pith_tools::ToolsConfig::new(dir.path().join("nope"), dir.path().join("spill"));
    let err = pith_tools::build_registry(config).unwrap_err();
    assert!(err.to_string().contains("workspace root"), "{err}");
}

#[tokio::test]
async fn concurrent_calls_needing_the_same_grant_ask_the_user_once() {
    let approver = ScriptedApprover::new(vec![Approval::AllowForSession]);
    let fx = Fixture::build(
        PermissionMode::Ask,
        Some(approver.clone()),
        Limits::default(),
    );
    let outside = fx.outside().join("notes.txt");
    std::fs::write(&outside, "n\n").unwrap();
    let path = outside.to_str().unwrap().to_owned();
    let reads: Vec<_> = (0..6)
        .map(|_| fx.call("read", json!({ "path": path })))
        .collect();
    for result in futures::future::join_all(reads).await {
        assert!(!result.is_error, "{}", result.content);
    }
    assert_eq!(
        approver.questions().len(),
        1,
        "questions are serialised and a session grant answers the waiting ones"
    );
}
