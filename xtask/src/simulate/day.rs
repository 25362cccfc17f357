//! `--day N`: corpus sessions joined into days of work. Each corpus session is one task
//! (the user's message, the agent's tool turns and the harness's replies); a day joins `N`
//! of them, in name order so that a day stays within one repository where the corpus
//! allows, into one session of `N` tasks: the first session's system prompt, then each
//! session's messages in turn. The user pauses before each task
//! (`CorpusSession::task_starts`), not before the harness's own user-role messages inside
//! one.
//! Call ids are prefixed with the task's place in the day so that they stay unique.

use std::collections::HashMap;

use pith_core::message::{Message, Part};

use crate::corpus::CorpusSession;

/// The repository a corpus session works in (`django` of `django__django-11815`).
fn repository(name: &str) -> &str {
    name.split("__").next().unwrap_or(name)
}

/// Joins `sessions` into days of `n` tasks. Sessions are taken in name order; a day is
/// filled from one repository and continued with the next one only when the first runs
/// out. `n <= 1` returns the sessions unchanged.
pub fn days(sessions: &[CorpusSession], n: usize) -> Vec<CorpusSession> {
    if n <= 1 {
        return sessions.to_vec();
    }
    let mut sorted: Vec<&CorpusSession> = sessions.iter().collect();
    sorted.sort_by(|a, b| (repository(&a.name), &a.name).cmp(&(repository(&b.name), &b.name)));
    sorted.chunks(n).map(join).collect()
}

/// One session of the tasks in order, each task starting where it did in its own.
pub fn join(tasks: &[&CorpusSession]) -> CorpusSession {
    let mut day = CorpusSession {
        name: tasks
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        system: tasks.first().map(|t| t.system.clone()).unwrap_or_default(),
        messages: Vec::new(),
        file_lines: Vec::new(),
        commands: HashMap::new(),
        exit_codes: HashMap::new(),
        malformed_lines: tasks.iter().map(|t| t.malformed_lines).sum(),
        task_starts: Vec::new(),
    };
    for (k, task) in tasks.iter().enumerate() {
        let offset = day.messages.len();
        day.task_starts
            .extend(task.task_starts.iter().map(|start| offset + start));
        let rename = |id: &str| format!("t{k}_{id}");
        for (i, message) in task.messages.iter().enumerate() {
            let mut message: Message = message.clone();
            for part in &mut message.parts {
                match part {
                    Part::ToolCall(call) => call.id = rename(&call.id),
                    Part::ToolResult(result) => result.call_id = rename(&result.call_id),
                    _ => {}
                }
            }
            day.messages.push(message);
            day.file_lines
                .push(task.file_lines.get(i).copied().unwrap_or(i));
        }
        for (id, command) in &task.commands {
            day.commands.insert(rename(id), command.clone());
        }
        for (id, code) in &task.exit_codes {
            day.exit_codes.insert(rename(id), *code);
        }
    }
    day
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::parse_session;

    fn task(name: &str) -> CorpusSession {
        let mut s = parse_session(
            "{\"role\":\"system\",\"content\":\"sys\"}\n\
             {\"role\":\"user\",\"content\":\"task\"}\n\
             {\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":[{\"id\":\"call_1\",\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}]}\n\
             {\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"exit_code\":0,\"content\":\"a.py\"}\n",
        );
        s.name = name.to_owned();
        s
    }

    #[test]
    fn a_day_joins_tasks_of_one_repository_with_unique_call_ids() {
        let sessions = vec![task("sympy__b"), task("django__a"), task("django__c")];
        let days = days(&sessions, 2);
        assert_eq!(days.len(), 2);
        assert_eq!(days[0].name, "django__a+django__c");
        assert_eq!(days[0].messages.len(), 6);
        let users = days[0]
            .messages
            .iter()
            .filter(|m| m.role == pith_core::message::Role::User)
            .count();
        assert_eq!(users, 2, "one user turn per task");
        assert_eq!(
            days[0].task_starts,
            [0, 3],
            "each task starts where its user typed"
        );
        assert_eq!(days[0].commands.len(), 2, "call ids stay apart");
        assert_eq!(days[0].commands["t1_call_1"], "ls");
        assert_eq!(days[1].name, "sympy__b");
        assert_eq!(super::days(&sessions, 1).len(), 3);
    }
}
