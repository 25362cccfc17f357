//! The Conversation against the testkit: what both front-ends rely on.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::path::Path;
use std::sync::Arc;

use pith_agent::{Conversation, Frontend, Overrides, SessionChoice};
use pith_core::Discard;
use pith_testkit::{Script, TestServer, Turn};
use tokio_util::sync::CancellationToken;

/// A workspace, a pith home and an Anthropic testkit server, with the environment
/// `pith` would see.
struct Setup {
    root: tempfile::TempDir,
    server: TestServer,
}

impl Setup {
    fn new(turns: Vec<Turn>) -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("work")).unwrap();
        let server = TestServer::start(Script::anthropic(turns)).unwrap();
        Self { root, server }
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.root.path().join("work")
    }

    fn frontend(&self) -> Frontend {
        let home = self.root.path().to_path_buf();
        let base_url = self.server.base_url();
        Frontend {
            env: Arc::new(move |name: &str| match name {
                "HOME" => Some(home.display().to_string()),
                "XDG_CONFIG_HOME" => Some(home.join("config").display().to_string()),
                "PITH_HOME" => Some(home.join("pith-home").display().to_string()),
                "ANTHROPIC_API_KEY" => Some("sk-ant-test".into()),
                "ANTHROPIC_BASE_URL" => Some(base_url.clone()),
                _ => None,
            }),
            approver: None,
            files: None,
            terminal: None,
            changes: None,
        }
    }

    fn open(&self, session: SessionChoice) -> Conversation {
        let overrides = Overrides {
            model: Some("anthropic/claude-sonnet-4-5".into()),
            session,
            cwd: self.workspace(),
            ..Overrides::default()
        };
        Conversation::open(overrides, self.frontend())
            .expect("opens")
            .value
    }

    fn systems(&self) -> Vec<String> {
        self.server
            .requests()
            .iter()
            .map(|r| {
                r.body["system"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    }
}

async fn say(conversation: &mut Conversation, text: &str) -> String {
    let outcome = conversation
        .run_turn(text, &mut Discard, &CancellationToken::new())
        .await;
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    outcome.text
}

fn sessions_on_disk(pith_home: &Path) -> usize {
    let Ok(projects) = std::fs::read_dir(pith_home.join("sessions")) else {
        return 0;
    };
    projects
        .flatten()
        .map(|p| std::fs::read_dir(p.path()).map_or(0, |s| s.count()))
        .sum()
}

#[tokio::test]
async fn the_system_prompt_is_rebuilt_at_every_turn_and_unchanged_bytes_when_nothing_changed() {
    let setup = Setup::new(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ]);
    let mut conversation = setup.open(SessionChoice::New);
    assert_eq!(say(&mut conversation, "first").await, "one");
    std::fs::write(
        setup.workspace().join("AGENTS.md"),
        "Always answer in French.\n",
    )
    .unwrap();
    say(&mut conversation, "second").await;
    say(&mut conversation, "third").await;
    let systems = setup.systems();
    assert!(!systems[0].contains("Always answer in French."));
    assert!(
        systems[1].contains("Always answer in French."),
        "an edit applies at the next turn"
    );
    assert_eq!(
        systems[1], systems[2],
        "byte-identical when nothing changed (prompt cache)"
    );
}

#[tokio::test]
async fn a_resumed_conversation_continues_from_what_was_recorded() {
    let setup = Setup::new(vec![
        Turn::text("Remembered."),
        Turn::text("You said: remember"),
    ]);
    let mut first = setup.open(SessionChoice::New);
    say(&mut first, "remember this").await;
    let id = first.session_id().to_owned();
    first.close();
    let mut resumed = setup.open(SessionChoice::Resume(id.clone()));
    assert_eq!(resumed.session_id(), id);
    assert_eq!(resumed.history().len(), 2, "user + answer");
    say(&mut resumed, "what did I say?").await;
    let sent = setup.server.requests()[1].body["messages"].to_string();
    assert!(sent.contains("remember this") && sent.contains("Remembered."));
}

#[tokio::test]
async fn clear_and_switching_models_keep_the_settings_and_unused_sessions_leave_no_trace() {
    let setup = Setup::new(vec![Turn::text("hello")]);
    let pith_home = setup.root.path().join("pith-home");
    let mut conversation = setup.open(SessionChoice::New);
    assert_eq!(sessions_on_disk(&pith_home), 1);
    conversation.clear().unwrap();
    assert_eq!(
        sessions_on_disk(&pith_home),
        1,
        "the unused session was removed"
    );
    say(&mut conversation, "hi").await;
    let history = conversation.history().to_vec();
    conversation
        .switch_model("anthropic/claude-haiku-4-5")
        .unwrap();
    assert_eq!(conversation.model_spec(), "anthropic/claude-haiku-4-5");
    assert_eq!(conversation.history(), &history[..], "the history stays");
    conversation.clear().unwrap();
    assert_eq!(
        conversation.model_spec(),
        "anthropic/claude-haiku-4-5",
        "clear keeps the switched model"
    );
    conversation.close();
    assert_eq!(
        sessions_on_disk(&pith_home),
        1,
        "only the used session stays"
    );
}

#[tokio::test]
async fn a_live_rewind_restores_the_files_and_continues_from_before_the_turn() {
    let setup = Setup::new(vec![
        Turn::text("Writing.").with_tool_call(
            "write",
            serde_json::json!({"path": "notes.txt", "content": "turn one\n"}),
        ),
        Turn::text("one"),
        Turn::text("Rewriting.").with_tool_call(
            "write",
            serde_json::json!({"path": "notes.txt", "content": "turn two\n"}),
        ),
        Turn::text("two"),
        Turn::text("again"),
    ]);
    std::fs::write(setup.workspace().join("notes.txt"), "original\n").unwrap();
    let overrides = Overrides {
        model: Some("anthropic/claude-sonnet-4-5".into()),
        approval: Some(pith_tools::PermissionMode::Full),
        cwd: setup.workspace(),
        ..Overrides::default()
    };
    let mut conversation = Conversation::open(overrides, setup.frontend())
        .unwrap()
        .value;
    assert!(conversation.keeps_checkpoints());
    say(&mut conversation, "first").await;
    say(&mut conversation, "second").await;
    let notes = setup.workspace().join("notes.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "turn two\n");
    let turns = conversation.turns().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].files, ["notes.txt"]);
    assert!(conversation.checkpoint_store_bytes().unwrap() > 0);

    // Back to before turn 2: the file as turn 1 left it, and the conversation too.
    let plan = conversation
        .plan_rewind(2, pith_session::RewindMode::Both)
        .await
        .unwrap();
    assert_eq!(plan.writes(), ["notes.txt"]);
    assert!(plan.changed_outside().is_empty());
    conversation.rewind(plan).await.unwrap();
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "turn one\n");
    assert_eq!(conversation.turns().unwrap().len(), 1);
    assert_eq!(say(&mut conversation, "third").await, "again");
    let last = setup.server.requests().last().unwrap().body["messages"].to_string();
    assert!(last.contains("first") && last.contains("third"), "{last}");
    assert!(!last.contains("second"), "turn 2 was rewound: {last}");

    // A hand edit is reported before a rewind overwrites it.
    std::fs::write(&notes, "by hand\n").unwrap();
    let plan = conversation
        .plan_rewind(1, pith_session::RewindMode::Code)
        .await
        .unwrap();
    assert_eq!(plan.changed_outside(), ["notes.txt"]);
    conversation.rewind(plan).await.unwrap();
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "original\n");
    assert!(conversation
        .plan_rewind(9, pith_session::RewindMode::Code)
        .await
        .is_err());
}
