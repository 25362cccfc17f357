//! The overflow fallback: fitting a request that cannot fit the input budget even after
//! compaction (one enormous tool result, a tiny window), deterministically, instead of
//! sending it to fail.
//!
//! Steps, each only while the request is still too large:
//! 0. images become their placeholder text, oldest first;
//! 1. cap the largest tool results to head + tail around one `[N lines omitted]` marker
//!    (the raw output of squashed results is already in a spill file);
//! 2. drop the oldest conversation units (a user message, or an assistant message with
//!    its tool results — never splitting a call from its result), never the latest user
//!    message, leaving one note saying how many messages were dropped, followed by the
//!    session ledger, which stands in for them;
//! 3. cap the largest remaining text — never the text of an assistant message that
//!    carries signed or encrypted reasoning: such a message is sent whole or dropped
//!    whole (with its tool results), and a reasoning block is never cut.
//!
//! The fitted messages are used for the request only; the loop's history is not
//! rewritten, so nothing is lost from the session.

use pith_core::{Message, Part, Role, TokenCounter, ToolDefinition};

/// The outcome of [`fit_to_budget_with`].
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The messages to send.
    pub messages: Vec<Message>,
    /// Tool results or texts that were capped.
    pub capped_parts: usize,
    /// Messages dropped from the start.
    pub dropped_messages: usize,
    /// Estimate before fitting.
    pub tokens_before: u64,
    /// Estimate after fitting.
    pub tokens_after: u64,
}

impl Fitted {
    /// A one-line description for front-ends.
    pub fn notice(&self) -> String {
        format!(
            "request too large for the context window ({} tokens): capped {} part(s), dropped {} oldest message(s), now {} tokens",
            self.tokens_before, self.capped_parts, self.dropped_messages, self.tokens_after
        )
    }
}

fn estimate(
    counter: &dyn TokenCounter,
    system: &str,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> u64 {
    pith_core::tokens::estimate_request(counter, system, messages, tools).total as u64
}

/// Fits `messages` so that system + messages + tools estimate at most `input_budget`;
/// `stand_in` (the rendered session ledger), when given, follows the note that says how
/// many messages were dropped: it stands in for them.
pub fn fit_to_budget_with(
    counter: &dyn TokenCounter,
    system: &str,
    messages: &[Message],
    tools: &[ToolDefinition],
    input_budget: u64,
    stand_in: Option<&str>,
) -> Fitted {
    let tokens_before = estimate(counter, system, messages, tools);
    let mut fitted = Fitted {
        messages: messages.to_vec(),
        capped_parts: 0,
        dropped_messages: 0,
        tokens_before,
        tokens_after: tokens_before,
    };
    if tokens_before <= input_budget {
        return fitted;
    }
    let fixed = estimate(counter, system, &[], tools);
    let room = input_budget.saturating_sub(fixed).max(64);

    let fitter = Fitter {
        counter,
        system,
        tools,
        input_budget,
    };
    fitter.images_to_placeholders(&mut fitted);
    fitter.cap_large_results(&mut fitted, room);
    fitter.drop_oldest_units(&mut fitted, stand_in);
    fitter.cap_largest_texts(&mut fitted);
    fitted
}

/// What a request is fitted to: the counter, the fixed parts and the budget.
#[derive(Clone, Copy)]
struct Fitter<'a> {
    counter: &'a dyn TokenCounter,
    system: &'a str,
    tools: &'a [ToolDefinition],
    input_budget: u64,
}

impl Fitter<'_> {
    /// The tokens of a request with `messages`.
    fn estimate(self, messages: &[Message]) -> u64 {
        estimate(self.counter, self.system, messages, self.tools)
    }

    /// Step 0: images become their placeholders, oldest first.
    fn images_to_placeholders(self, fitted: &mut Fitted) {
        let images: Vec<(usize, usize)> = fitted
            .messages
            .iter()
            .enumerate()
            .flat_map(|(mi, m)| {
                m.parts
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| matches!(p, Part::Image(_)))
                    .map(move |(pi, _)| (mi, pi))
            })
            .collect();
        for (mi, pi) in images {
            if fitted.tokens_after <= self.input_budget {
                break;
            }
            let part = &mut fitted.messages[mi].parts[pi];
            if let Some(text) = pith_core::context::images::image_placeholder(part, self.counter) {
                *part = text;
                fitted.capped_parts += 1;
                fitted.tokens_after = self.estimate(&fitted.messages);
            }
        }
    }

    /// Step 1: tool results larger than an eighth of the `room` are capped, largest
    /// first.
    fn cap_large_results(self, fitted: &mut Fitted, room: u64) {
        let cap = (room / 8).max(128) as usize;
        let mut results: Vec<(usize, usize, usize)> = Vec::new();
        for (mi, message) in fitted.messages.iter().enumerate() {
            for (pi, part) in message.parts.iter().enumerate() {
                if let Part::ToolResult(result) = part {
                    let tokens = self.counter.count(&result.content);
                    if tokens > cap {
                        results.push((tokens, mi, pi));
                    }
                }
            }
        }
        results.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, mi, pi) in results {
            if fitted.tokens_after <= self.input_budget {
                break;
            }
            if let Part::ToolResult(result) = &mut fitted.messages[mi].parts[pi] {
                result.content = cap_text(self.counter, &result.content, cap);
                fitted.capped_parts += 1;
            }
            fitted.tokens_after = self.estimate(&fitted.messages);
        }
    }

    /// Step 2: the oldest units are dropped, keeping the latest user message and
    /// everything after it; a note (and `stand_in`, the ledger) says so.
    fn drop_oldest_units(self, fitted: &mut Fitted, stand_in: Option<&str>) {
        let protected_from = fitted
            .messages
            .iter()
            .rposition(|m| {
                m.role == Role::User && m.parts.iter().any(|p| matches!(p, Part::Text { .. }))
            })
            .unwrap_or(fitted.messages.len().saturating_sub(1));
        let mut drop_until = 0;
        while fitted.tokens_after > self.input_budget && drop_until < protected_from {
            drop_until = next_unit_end(&fitted.messages, drop_until).min(protected_from);
            let note = match stand_in {
                Some(ledger) => format!(
                    "[{drop_until} earlier messages were dropped to fit the context window; the \
                     session ledger below keeps their facts]\n{ledger}"
                ),
                None => {
                    format!(
                        "[{drop_until} earlier messages were dropped to fit the context window]"
                    )
                }
            };
            let mut candidate = vec![Message::user(note)];
            candidate.extend_from_slice(&fitted.messages[drop_until..]);
            fitted.tokens_after = self.estimate(&candidate);
            if fitted.tokens_after <= self.input_budget || drop_until >= protected_from {
                fitted.dropped_messages = drop_until;
                fitted.messages = candidate;
                break;
            }
        }
    }

    /// Step 3: the largest remaining texts are capped.
    fn cap_largest_texts(self, fitted: &mut Fitted) {
        while fitted.tokens_after > self.input_budget {
            let Some((mi, pi, tokens)) = largest_part(self.counter, &fitted.messages) else {
                break;
            };
            let excess = (fitted.tokens_after - self.input_budget) as usize;
            let target = tokens.saturating_sub(excess + 16).max(16);
            if target >= tokens {
                break;
            }
            match &mut fitted.messages[mi].parts[pi] {
                Part::Text { text } => *text = cap_text(self.counter, text, target),
                Part::ToolResult(result) => {
                    result.content = cap_text(self.counter, &result.content, target)
                }
                Part::ToolCall(_) | Part::Reasoning(_) | Part::Image(_) => break,
            }
            fitted.capped_parts += 1;
            let after = self.estimate(&fitted.messages);
            if after >= fitted.tokens_after {
                fitted.tokens_after = after;
                break;
            }
            fitted.tokens_after = after;
        }
    }
}

/// The index just after the conversation unit that starts at `start`.
fn next_unit_end(messages: &[Message], start: usize) -> usize {
    let mut end = start + 1;
    if messages
        .get(start)
        .is_some_and(|m| m.role == Role::Assistant)
    {
        while end < messages.len() && messages[end].role == Role::Tool {
            end += 1;
        }
    }
    while end < messages.len() && messages[end].role == Role::Tool {
        end += 1;
    }
    end
}

fn largest_part(counter: &dyn TokenCounter, messages: &[Message]) -> Option<(usize, usize, usize)> {
    let mut best: Option<(usize, usize, usize)> = None;
    for (mi, message) in messages.iter().enumerate() {
        // A signed answer is kept whole: its reasoning goes back exactly as it came.
        if message.reasoning().any(|r| r.is_replayable()) {
            continue;
        }
        for (pi, part) in message.parts.iter().enumerate() {
            let tokens = match part {
                Part::Text { text } => counter.count(text),
                Part::ToolResult(result) => counter.count(&result.content),
                Part::ToolCall(_) | Part::Reasoning(_) | Part::Image(_) => 0,
            };
            if best.is_none_or(|(_, _, t)| tokens > t) {
                best = Some((mi, pi, tokens));
            }
        }
    }
    best
}

/// Keeps the head and tail lines of `text` within about `max_tokens`, with one
/// `[N lines omitted]` marker for the gap. Text of a single huge line is cut by bytes.
pub fn cap_text(counter: &dyn TokenCounter, text: &str, max_tokens: usize) -> String {
    if counter.count(text) <= max_tokens {
        return text.to_owned();
    }
    // Work in bytes with a conservative 3 bytes per token, then verify.
    let mut budget_bytes = max_tokens.saturating_mul(3).max(64);
    loop {
        let capped = head_tail(text, budget_bytes);
        if counter.count(&capped) <= max_tokens || budget_bytes <= 64 {
            return capped;
        }
        budget_bytes = budget_bytes * 3 / 4;
    }
}

fn head_tail(text: &str, budget_bytes: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 2 {
        let head = floor_char(text, budget_bytes / 2);
        let tail_start = ceil_char(text, text.len().saturating_sub(budget_bytes / 2));
        let omitted = text
            .len()
            .saturating_sub(head.len() + (text.len() - tail_start));
        return format!("{head}\n[{omitted} bytes omitted]\n{}", &text[tail_start..]);
    }
    let half = budget_bytes / 2;
    let mut head_end = 0;
    let mut used = 0;
    while head_end < lines.len() && used + lines[head_end].len() < half {
        used += lines[head_end].len() + 1;
        head_end += 1;
    }
    let mut tail_start = lines.len();
    used = 0;
    while tail_start > head_end && used + lines[tail_start - 1].len() < half {
        used += lines[tail_start - 1].len() + 1;
        tail_start -= 1;
    }
    let omitted = tail_start - head_end;
    let mut out = lines[..head_end].join("\n");
    if omitted > 0 {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("[{omitted} lines omitted]"));
    }
    if tail_start < lines.len() {
        out.push('\n');
        out.push_str(&lines[tail_start..].join("\n"));
    }
    out
}

fn floor_char(text: &str, mut index: usize) -> &str {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    &text[..index]
}

fn ceil_char(text: &str, mut index: usize) -> usize {
    while index < text.len() && !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fits `messages` with no stand-in.
    fn fit_to_budget(
        counter: &dyn TokenCounter,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
        input_budget: u64,
    ) -> Fitted {
        fit_to_budget_with(counter, system, messages, tools, input_budget, None)
    }
    use pith_core::{BpeCounter, Encoding, ToolCall};

    fn counter() -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
    }

    fn big_output(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("line {i}: some build output that repeats"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_request_that_fits_is_untouched() {
        let messages = vec![Message::user("hi")];
        let fitted = fit_to_budget(&counter(), "sys", &messages, &[], 10_000);
        assert_eq!(fitted.messages, messages);
        assert_eq!(fitted.capped_parts, 0);
    }

    #[test]
    fn one_enormous_tool_result_is_capped_to_fit() {
        let messages = vec![
            Message::user("run the build"),
            Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": "make"}),
                }],
            ),
            Message::tool_result("c", big_output(5_000), false),
        ];
        let fitted = fit_to_budget(&counter(), "sys", &messages, &[], 4_000);
        assert!(fitted.tokens_after <= 4_000, "{}", fitted.tokens_after);
        assert_eq!(fitted.messages.len(), 3, "nothing needed dropping");
        let content = fitted.messages[2]
            .tool_results()
            .next()
            .unwrap()
            .content
            .clone();
        assert!(content.contains("lines omitted]"));
        assert!(content.starts_with("line 0:"));
        assert!(content.ends_with("line 4999: some build output that repeats"));
    }

    #[test]
    fn oldest_units_are_dropped_but_the_latest_user_message_stays() {
        let mut messages = Vec::new();
        for i in 0..40 {
            messages.push(Message::user(format!(
                "question {i} {}",
                "word ".repeat(100)
            )));
            messages.push(Message::assistant(format!(
                "answer {i} {}",
                "word ".repeat(100)
            )));
        }
        messages.push(Message::user("the latest request"));
        let fitted = fit_to_budget(&counter(), "sys", &messages, &[], 2_000);
        assert!(fitted.tokens_after <= 2_000);
        assert!(fitted.dropped_messages > 0);
        assert_eq!(
            fitted.messages.last().unwrap().text_content(),
            "the latest request"
        );
        assert!(fitted.messages[0]
            .text_content()
            .contains("earlier messages were dropped"));
    }

    #[test]
    fn the_ledger_stands_in_for_the_dropped_messages_within_the_budget() {
        let mut messages = Vec::new();
        for i in 0..40 {
            messages.push(Message::user(format!(
                "question {i} {}",
                "word ".repeat(100)
            )));
            messages.push(Message::assistant(format!(
                "answer {i} {}",
                "word ".repeat(100)
            )));
        }
        messages.push(Message::user("the latest request"));
        let ledger = "<session_ledger>\n## User messages\n- question 0\n</session_ledger>";
        let fitted = fit_to_budget_with(&counter(), "sys", &messages, &[], 2_000, Some(ledger));
        assert!(fitted.tokens_after <= 2_000);
        assert!(fitted.dropped_messages > 0);
        let note = fitted.messages[0].text_content();
        assert!(note.contains("earlier messages were dropped"), "{note}");
        assert!(note.ends_with(ledger), "{note}");
        assert_eq!(
            fitted.messages.last().unwrap().text_content(),
            "the latest request"
        );
    }

    #[test]
    fn calls_are_never_separated_from_their_results() {
        let mut messages = Vec::new();
        for i in 0..30 {
            messages.push(Message::user(format!("q{i} {}", "x ".repeat(50))));
            messages.push(Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: format!("c{i}"),
                    name: "ls".into(),
                    arguments: serde_json::json!({}),
                }],
            ));
            messages.push(Message::tool_result(format!("c{i}"), "a\nb", false));
        }
        messages.push(Message::user("now"));
        let fitted = fit_to_budget(&counter(), "", &messages, &[], 600);
        // The first kept message after the note must not be a tool result.
        assert_ne!(fitted.messages[1].role, Role::Tool);
        let call_ids: Vec<String> = fitted
            .messages
            .iter()
            .flat_map(|m| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
            .collect();
        let result_ids: Vec<String> = fitted
            .messages
            .iter()
            .flat_map(|m| {
                m.tool_results()
                    .map(|r| r.call_id.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(call_ids, result_ids);
    }

    #[test]
    fn a_huge_latest_user_message_is_capped_as_a_last_resort() {
        let messages = vec![Message::user(big_output(10_000))];
        let fitted = fit_to_budget(&counter(), "sys", &messages, &[], 3_000);
        assert!(fitted.tokens_after <= 3_000, "{}", fitted.tokens_after);
    }

    #[test]
    fn a_signed_answer_is_kept_or_dropped_whole_and_its_thinking_never_cut() {
        use pith_core::Reasoning;
        let thinking = |n: usize| Reasoning {
            origin: "anthropic".into(),
            text: big_output(n),
            signature: Some(format!("sig{n}")),
            ..Reasoning::default()
        };
        let mut signed = Message::assistant_with_calls(
            big_output(400),
            vec![ToolCall {
                id: "c".into(),
                name: "ls".into(),
                arguments: serde_json::json!({}),
            }],
        );
        signed.parts.insert(0, Part::Reasoning(thinking(300)));
        let messages = vec![
            Message::user("old question"),
            signed.clone(),
            Message::tool_result("c", "a", false),
            Message::user("now"),
            signed.clone(),
            Message::tool_result("c", "b", false),
        ];
        let fitted = fit_to_budget(&counter(), "", &messages, &[], 3_000);
        // The old unit went whole; the active turn's answer is sent exactly as it came.
        assert!(fitted.dropped_messages >= 3, "{fitted:?}");
        assert!(fitted.messages.contains(&signed));
        for message in &fitted.messages {
            for reasoning in message.reasoning() {
                assert_eq!(reasoning, &thinking(300));
            }
        }
    }

    #[test]
    fn images_become_placeholders_before_anything_else_is_cut() {
        let image = pith_core::Image {
            path: "shot.png".into(),
            media_type: "image/png".into(),
            width: 1500,
            height: 1500,
            data: "AAAA".into(),
        };
        let tool = Message {
            role: Role::Tool,
            parts: vec![
                Part::ToolResult(pith_core::ToolResult::new("c", "image", false)),
                Part::Image(image),
            ],
        };
        let messages = vec![
            Message::user("look"),
            Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "shot.png"}),
                }],
            ),
            tool,
        ];
        let fitted = fit_to_budget(&counter(), "", &messages, &[], 1_000);
        assert!(fitted.tokens_after <= 1_000, "{}", fitted.tokens_after);
        assert_eq!(fitted.dropped_messages, 0);
        assert!(fitted.messages[2]
            .text_content()
            .starts_with("[image: shot.png, 1500×1500"));
    }
}
