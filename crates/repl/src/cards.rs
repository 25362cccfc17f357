//! Tool cards: the one-line header of a tool call (tool and argument summary) and the
//! preview of its result; the plan's checklist card. Pure text, so the shortening rules
//! are unit-tested.

use pith_core::{Plan, ToolCall, ToolResult, PLAN_TOOL};
use serde_json::Value;

/// Most characters of an argument summary.
pub const SUMMARY_CHARS: usize = 100;
/// Most lines of a result preview.
pub const PREVIEW_LINES: usize = 3;
/// Most characters of one preview line.
pub const PREVIEW_LINE_CHARS: usize = 100;

/// The argument that says most about a call (`command`, `path`, `pattern`, …), else the
/// compact JSON of all arguments, shortened.
pub fn argument_summary(call: &ToolCall) -> String {
    if call.name == PLAN_TOOL {
        // The plan itself shows as its own card (`plan_card`).
        let steps = call.arguments.get("steps").and_then(Value::as_array);
        return match steps {
            Some(steps) if steps.len() == 1 => "1 step".to_owned(),
            Some(steps) => format!("{} steps", steps.len()),
            None => shorten(&single_line(&call.arguments.to_string()), SUMMARY_CHARS),
        };
    }
    const KEYS: [&str; 5] = ["command", "path", "file_path", "pattern", "query"];
    let text = match &call.arguments {
        Value::Object(map) => {
            let main = KEYS
                .iter()
                .find_map(|key| map.get(*key).and_then(Value::as_str));
            match main {
                Some(value) => {
                    let extra = map
                        .iter()
                        .filter(|(k, _)| !KEYS.contains(&k.as_str()))
                        .filter_map(|(k, v)| match v {
                            Value::String(s) if s.len() <= 20 => Some(format!("{k}={s}")),
                            Value::Number(n) => Some(format!("{k}={n}")),
                            Value::Bool(b) => Some(format!("{k}={b}")),
                            _ => None,
                        })
                        .collect::<Vec<_>>();
                    if extra.is_empty() {
                        value.to_owned()
                    } else {
                        format!("{value} ({})", extra.join(", "))
                    }
                }
                None => call.arguments.to_string(),
            }
        }
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    shorten(&single_line(&text), SUMMARY_CHARS)
}

/// The first lines of a result, each shortened, with a count of what was left out.
pub fn result_preview(result: &ToolResult) -> Vec<String> {
    let lines: Vec<&str> = result.content.lines().collect();
    let mut preview: Vec<String> = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|line| shorten(line, PREVIEW_LINE_CHARS))
        .collect();
    if lines.len() > PREVIEW_LINES {
        preview.push(format!("… {} more lines", lines.len() - PREVIEW_LINES));
    }
    if preview.is_empty() {
        preview.push("(no output)".to_owned());
    }
    preview
}

/// The plan as a checklist card: a heading with the progress, then one line per step
/// (`[x]` done, `[~]` in progress, `[ ]` pending), each with its note, every step shown.
pub fn plan_card(plan: &Plan) -> Vec<String> {
    let mut lines = vec![format!("Plan · {}", plan.progress())];
    for step in &plan.steps {
        let line = pith_core::plan::step_line(step);
        lines.push(format!("  {}", shorten(&line, PREVIEW_LINE_CHARS * 2)));
    }
    lines
}

fn single_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts `text` to `max` characters, marking the cut with `…`.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(arguments: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments,
        }
    }

    #[test]
    fn the_summary_names_the_main_argument_and_small_extras() {
        assert_eq!(
            argument_summary(&call(json!({"command": "cargo   test\n--all"}))),
            "cargo test --all"
        );
        assert_eq!(
            argument_summary(&call(json!({"path": "src/lib.rs", "offset": 10}))),
            "src/lib.rs (offset=10)"
        );
        assert_eq!(argument_summary(&call(json!({"x": [1]}))), "{\"x\":[1]}");
        let long = argument_summary(&call(json!({"command": "x".repeat(500)})));
        assert_eq!(long.chars().count(), SUMMARY_CHARS);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn the_plan_card_is_a_checklist_of_every_step() {
        let plan = Plan::from_arguments(&json!({"steps": [
            {"step": "read the parser", "status": "done", "note": "depth is global"},
            {"step": "fix it", "status": "in_progress"},
            {"step": "test it", "status": "pending"},
        ]}))
        .unwrap();
        assert_eq!(
            plan_card(&plan),
            vec![
                "Plan · 3 steps: 1 done, 1 in progress, 1 pending",
                "  [x] read the parser — depth is global",
                "  [~] fix it",
                "  [ ] test it",
            ]
        );
        let call = ToolCall {
            id: "p".into(),
            name: PLAN_TOOL.into(),
            arguments: json!({"steps": [{}, {}, {}]}),
        };
        assert_eq!(argument_summary(&call), "3 steps");
    }

    #[test]
    fn the_preview_shows_the_first_lines_and_counts_the_rest() {
        let result = ToolResult::new("c", "a\nb\nc\nd\ne", false);
        assert_eq!(
            result_preview(&result),
            vec!["a", "b", "c", "… 2 more lines"]
        );
        let empty = ToolResult {
            content: String::new(),
            ..result
        };
        assert_eq!(result_preview(&empty), vec!["(no output)"]);
    }
}
