//! Replaying one corpus session under one policy: the messages arrive in their recorded
//! order, every assistant message stands for one model request, and before each request
//! the policy may rewrite the history exactly as its agent would have ([`super::steps`]).
//!
//! The `pith` step ([`super::pith_step`]) mirrors `AgentLoop::prepare_turn_request`
//! (crates/providers) call for call: the estimate comes from core's [`RequestEstimator`],
//! the thresholds from [`ContextBudget`] (with the working set), the decision from
//! `decide`, masking is `collapse` + `prune_old_tool_outputs` within
//! `PruneConfig::within`, the cold rule is [`ContextBudget::cooled`], the replacement
//! after an LLM compaction is
//! [`build_auto_replacement`] or [`replacement_text`] with the session ledger, and tool
//! outputs go through [`squash::apply`] at capture. The LLM summary is a deterministic
//! stand-in of a fixed token size.
//!
//! Time ([`super::clock`]) moves with each request's answer, each tool call and the
//! user's pause before each task (not before the harness's own user-role messages), and every request is billed by the provider family's prompt cache
//! ([`super::ledger`]). When a policy has hidden an output the session later relies on,
//! the model reads it again ([`super::rereads`]), and that is billed too.
//!
//! Modelling choices (documented in docs/benchmarks.md): every corpus call is `bash`; a
//! call whose command is a file view, grep, find or ls is renamed to the pith tool that
//! would have made it (`read`, `grep`, `glob`, `ls`), so dedup sees what it would see in
//! pith, while squash still judges the bash command. The assistant's replies are replayed
//! unchanged whatever happened to the history.

use pith_core::context::squash::{self, command_family, CommandFamily, SquashConfig};
use pith_core::context::Governor;
use pith_core::message::{Part, Role};
use pith_core::tokens::count_message;
use pith_core::ContextBudget;

use super::clock::{tool_seconds, Pauses};
use super::engine::Replay;
use super::policy::Policy;
use super::rereads::Rereads;
use crate::corpus::CorpusSession;

pub use super::engine::{CompactionView, SessionOutcome, SimParams, ViewKind};

/// The pith tool a corpus bash command corresponds to (see the module docs).
fn pith_tool_name(command: &str) -> &'static str {
    match command_family(command) {
        CommandFamily::FileView => "read",
        CommandFamily::Grep => "grep",
        CommandFamily::Find => "glob",
        CommandFamily::Ls => "ls",
        _ => "bash",
    }
}

/// The `n`th spill file of a session as pith's tools name it: each squashed output has a
/// file of its own, so the ledger lists every one as the real session's would.
fn spill_path(n: usize) -> String {
    format!("$PITH_SPILL_DIR/{n}.txt")
}

/// The budget a policy's requests are held to: pith's with its working set, the plain
/// input budget for the others.
fn budget_of(policy: &Policy, window: u64) -> ContextBudget {
    match policy {
        Policy::Pith(p) => ContextBudget::with_micro_percent(window, p.micro_percent)
            .with_working_set(p.working_set),
        _ => ContextBudget::for_window(window),
    }
}

/// Replays `session` under `policy` with window `params.window`.
#[cfg(test)]
pub fn replay(session: &CorpusSession, policy: &Policy, params: &SimParams) -> SessionOutcome {
    replay_with(session, policy, params, false)
}

/// [`replay`], also recording the model's view after each rewrite when `record_views`
/// (for the fidelity probes).
pub fn replay_with(
    session: &CorpusSession,
    policy: &Policy,
    params: &SimParams,
    record_views: bool,
) -> SessionOutcome {
    let budget = budget_of(policy, params.window);
    let squash_config = SquashConfig::default();
    let mut replay = Replay::new(params, &session.system, budget, policy);
    replay.record_views = record_views;
    let mut pauses = Pauses::for_session(&session.name);
    let mut rereads = Rereads::default();
    // The loop's governor with its defaults (the ceiling included).
    let mut memory = Governor::default();
    let mut steps = super::steps::StepState::default();
    let mut spills = 0;
    for (index, message) in session.messages.iter().enumerate() {
        replay.message_index = index;
        match message.role {
            Role::User | Role::System => {
                // A person pauses before typing a task; the harness's own user-role
                // messages inside a task come the moment the model answered.
                if replay.last_request_at.is_some() && session.task_starts.contains(&index) {
                    replay.now += pauses.next_pause_s();
                    replay.outcome.pauses += 1;
                }
                replay.last_user_text = message.text_content();
                replay.user_texts.push(replay.last_user_text.clone());
                if replay.carry.tracks_files() {
                    replay.session_ledger.observe_user(&replay.last_user_text);
                }
                replay.user_turn_starts(policy, &mut steps);
                replay.push(message.clone());
                memory.start_turn();
                steps.new_history = true;
            }
            Role::Tool => {
                let mut message = message.clone();
                let mut chars = 0;
                for part in &mut message.parts {
                    if let Part::ToolResult(result) = part {
                        chars += result.content.len();
                        if policy.squashes() {
                            let command = session.commands.get(&result.call_id);
                            let squashed = squash::apply(
                                "bash",
                                command.map(String::as_str),
                                session.exit_codes.get(&result.call_id).copied(),
                                &result.content,
                                &squash_config,
                            );
                            if squashed.dropped_anything {
                                spills += 1;
                                result.content =
                                    squash::with_spill_marker(&squashed.text, &spill_path(spills));
                            }
                        }
                    }
                }
                replay.now += tool_seconds(chars);
                replay.observe_tool(session, &message, &session.messages[index]);
                rereads.capture(session, &message);
                replay.push(message);
                memory.record_new_history();
                steps.new_history = true;
            }
            Role::Assistant => {
                // The policy acts first: the re-reads are what the model, given the view
                // the policy made for this request, must read again before it can go on.
                match policy {
                    Policy::Pith(p) => replay.pith_step(p, &mut memory),
                    other => replay.peer_step(other, &mut steps),
                }
                rereads.before_request(&mut replay, session, message);
                let answer = count_message(params.counter.as_ref(), message) as u64;
                replay.agent_request(answer);
                replay.observe_assistant(message);
                let mut message = message.clone();
                for part in &mut message.parts {
                    if let Part::ToolCall(call) = part {
                        let command = call
                            .arguments
                            .get("command")
                            .and_then(|c| c.as_str())
                            .unwrap_or_default();
                        if call.name == "bash" {
                            call.name = pith_tool_name(command).to_owned();
                        }
                    }
                }
                replay.push(message);
            }
        }
    }
    if let Some(prepared) = replay.prepared.take() {
        replay.prepared_unused(prepared);
    }
    replay.outcome.ledger = replay.ledger.totals();
    replay.outcome
}
