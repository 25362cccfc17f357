//! The history as the protocols with a separate system prompt and strictly alternating
//! turns take it (Anthropic, Gemini, Bedrock): system messages folded into the system
//! prompt, consecutive messages of one side merged into one turn, messages without
//! blocks left out, and a placeholder user turn first when the history starts with the
//! model.

use std::borrow::Cow;

use pith_core::{Image, Message, Part, Role, ToolCall, ToolResult};

use crate::wire::adapter::ModelRequest;

/// The text of the placeholder user turn put first when the history starts with the model.
pub(crate) const CONVERSATION_CONTINUES: &str = "(conversation continues)";

/// Which side of the conversation a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The user (user messages and tool results).
    User,
    /// The model.
    Assistant,
}

impl Side {
    /// The role Anthropic and Bedrock's Converse name the side by (Gemini calls the
    /// model `model`).
    pub(crate) fn role(self) -> &'static str {
        match self {
            Side::User => "user",
            Side::Assistant => "assistant",
        }
    }
}

/// A request's history in alternating turns.
pub(crate) struct Alternating<'a, B> {
    /// The system prompt, then each system message of the history, blank-line separated.
    pub system: Cow<'a, str>,
    /// The turns, alternating, the first one the user's.
    pub turns: Vec<(Side, Vec<B>)>,
    /// Where the request's stable prefix ends ([`crate::wire::adapter::CacheHints`]): the
    /// turn and block index of the last block made from a message before the anchor.
    pub anchor: Option<(usize, usize)>,
}

/// Folds `request`'s history into alternating turns: `user` converts one message of the
/// user's side, `assistant` one of the model's, `placeholder` is the one block of the
/// user turn put first when needed.
pub(crate) fn alternate<'a, B>(
    request: &'a ModelRequest,
    mut user: impl FnMut(&'a Message) -> Vec<B>,
    mut assistant: impl FnMut(&'a Message) -> Vec<B>,
    placeholder: impl FnOnce() -> B,
) -> Alternating<'a, B> {
    let mut system = Cow::Borrowed(request.system.as_str());
    let mut turns: Vec<(Side, Vec<B>)> = Vec::new();
    let anchor_at = request.cache.anchor.unwrap_or(0);
    let mut anchor = None;
    for (index, message) in request.messages.iter().enumerate() {
        if index == anchor_at && anchor_at > 0 {
            anchor = turns
                .last()
                .map(|(_, blocks)| (turns.len() - 1, blocks.len().saturating_sub(1)));
        }
        let side = match message.role {
            Role::System => {
                let text = system.to_mut();
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&message.text_content());
                continue;
            }
            Role::User | Role::Tool => Side::User,
            Role::Assistant => Side::Assistant,
        };
        let converted = match side {
            Side::User => user(message),
            Side::Assistant => assistant(message),
        };
        if converted.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == side => content.extend(converted),
            _ => turns.push((side, converted)),
        }
    }
    if turns.first().is_some_and(|(side, _)| *side != Side::User) {
        turns.insert(0, (Side::User, vec![placeholder()]));
        anchor = anchor.map(|(turn, block)| (turn + 1, block));
    }
    Alternating {
        system,
        turns,
        anchor,
    }
}

/// One user message's parts in the order Anthropic and Bedrock send them: the tool
/// results first, then the texts and images.
pub(crate) struct UserParts<'a> {
    /// Each tool result with the images right after it (that tool's output, which goes
    /// inside the result).
    pub results: Vec<(&'a ToolResult, Vec<&'a Image>)>,
    /// The texts and the other images, in order.
    pub rest: Vec<Loose<'a>>,
}

/// A text or image of a user message outside its tool results.
pub(crate) enum Loose<'a> {
    /// A text the protocol keeps.
    Text(&'a str),
    /// An image that follows no tool result.
    Image(&'a Image),
}

/// Splits `message`'s parts into [`UserParts`]; a text `keep_text` refuses is left out
/// (and, like any other part, does not end a tool result's images).
pub(crate) fn user_parts(message: &Message, keep_text: fn(&str) -> bool) -> UserParts<'_> {
    let mut parts = UserParts {
        results: Vec::new(),
        rest: Vec::new(),
    };
    // Whether the previous part was a tool result or one of its images.
    let mut after_result = false;
    for part in &message.parts {
        match part {
            Part::Text { text } if keep_text(text) => {
                parts.rest.push(Loose::Text(text));
                after_result = false;
            }
            Part::ToolResult(result) => {
                parts.results.push((result, Vec::new()));
                after_result = true;
            }
            Part::Image(image) => match parts.results.last_mut().filter(|_| after_result) {
                Some((_, images)) => images.push(image),
                None => parts.rest.push(Loose::Image(image)),
            },
            _ => {}
        }
    }
    parts
}

/// A part of an assistant message as Anthropic and Bedrock send it back.
pub(crate) enum Said<'a> {
    /// A reasoning block with its signature.
    Thinking {
        /// The reasoning text.
        text: &'a str,
        /// The provider's signature over it.
        signature: &'a str,
    },
    /// A redacted reasoning block: its encrypted data as received.
    Redacted(&'a str),
    /// A text the protocol keeps.
    Text(&'a str),
    /// A tool call.
    Call(&'a ToolCall),
}

/// The parts of assistant `message` to send back, in order: its reasoning blocks from
/// `reasoning_origin` (none when `None`: thinking is off), each with its signature, else
/// its encrypted data, else left out; the texts `keep_text` keeps; the tool calls.
pub(crate) fn assistant_parts<'a>(
    message: &'a Message,
    reasoning_origin: Option<&str>,
    keep_text: fn(&str) -> bool,
) -> Vec<Said<'a>> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Reasoning(reasoning) if Some(reasoning.origin.as_str()) == reasoning_origin => {
                match (&reasoning.signature, &reasoning.encrypted) {
                    (Some(signature), _) => Some(Said::Thinking {
                        text: &reasoning.text,
                        signature,
                    }),
                    (None, Some(data)) => Some(Said::Redacted(data)),
                    (None, None) => None,
                }
            }
            Part::Text { text } if keep_text(text) => Some(Said::Text(text)),
            Part::ToolCall(call) => Some(Said::Call(call)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: "base".into(),
            messages: std::sync::Arc::new(messages),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
            reasoning: None,
            output: None,
            cache: Default::default(),
        }
    }

    #[test]
    fn system_messages_fold_into_the_prompt_and_same_side_messages_merge() {
        let request = request(vec![
            Message::assistant("earlier answer"),
            Message::system("extra rule"),
            Message::user("one"),
            Message::user(""),
            Message::user("two"),
            Message::assistant("reply"),
        ]);
        let text_of = |side: Side, m: &Message| {
            let text = m.text_content();
            if text.is_empty() {
                Vec::new()
            } else {
                vec![(side, text)]
            }
        };
        let folded = alternate(
            &request,
            |m| text_of(Side::User, m),
            |m| text_of(Side::Assistant, m),
            || (Side::User, CONVERSATION_CONTINUES.to_owned()),
        );
        assert_eq!(folded.system, "base\n\nextra rule");
        let sides: Vec<Side> = folded.turns.iter().map(|(side, _)| *side).collect();
        assert_eq!(
            sides,
            [Side::User, Side::Assistant, Side::User, Side::Assistant],
            "a placeholder user turn first; the two user messages merged, the empty one left out"
        );
        assert_eq!(folded.turns[0].1[0].1, CONVERSATION_CONTINUES);
        assert_eq!(folded.turns[2].1.len(), 2);
        assert_eq!(folded.anchor, None, "no anchor asked for");
    }

    #[test]
    fn the_anchor_names_the_last_block_before_it_across_merged_turns() {
        let mut asked = request(vec![
            Message::user("one"),
            Message::user("two"),
            Message::assistant("reply"),
            Message::user("three"),
        ]);
        asked.cache.anchor = Some(2);
        let folded = alternate(
            &asked,
            |m| vec![(Side::User, m.text_content())],
            |m| vec![(Side::Assistant, m.text_content())],
            || (Side::User, CONVERSATION_CONTINUES.to_owned()),
        );
        // Messages 0 and 1 merged into turn 0: its second block ends the prefix.
        assert_eq!(folded.anchor, Some((0, 1)));
        asked.messages =
            std::sync::Arc::new(vec![Message::assistant("earlier"), Message::user("next")]);
        asked.cache.anchor = Some(1);
        let folded = alternate(
            &asked,
            |m| vec![(Side::User, m.text_content())],
            |m| vec![(Side::Assistant, m.text_content())],
            || (Side::User, CONVERSATION_CONTINUES.to_owned()),
        );
        assert_eq!(
            folded.anchor,
            Some((1, 0)),
            "shifted by the placeholder turn"
        );
    }
}
