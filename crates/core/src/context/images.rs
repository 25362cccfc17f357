//! Images leaving the history: every image becomes its placeholder text
//! ([`crate::protocol::message::Image::placeholder`]: path, size, estimated tokens, and "read it
//! again to see it"). Used where old content must shrink whatever it is — the summary
//! request of a compaction, pruning, overflow fitting — so a session full of screenshots
//! can always be compacted.

use crate::context::tokens::TokenCounter;
use crate::protocol::message::{Message, Part};

/// True when any message holds an image.
pub fn has_images(messages: &[Message]) -> bool {
    messages
        .iter()
        .any(|m| m.parts.iter().any(|p| matches!(p, Part::Image(_))))
}

/// The placeholder text part of `part` when it is an image, with the image's estimated
/// tokens from `counter`.
pub fn image_placeholder(part: &Part, counter: &dyn TokenCounter) -> Option<Part> {
    match part {
        Part::Image(image) => Some(Part::Text {
            text: image.placeholder(counter.image_tokens(image.width, image.height)),
        }),
        _ => None,
    }
}

/// `messages` with every image replaced by its placeholder text; the other parts, and
/// the messages without images, are unchanged.
pub fn replace_images(messages: &[Message], counter: &dyn TokenCounter) -> Vec<Message> {
    messages
        .iter()
        .map(|message| Message {
            role: message.role,
            parts: message
                .parts
                .iter()
                .map(|part| image_placeholder(part, counter).unwrap_or_else(|| part.clone()))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::{BpeCounter, Encoding, ImageFormula};
    use crate::protocol::message::{Image, Role};

    #[test]
    fn images_become_their_placeholder_and_nothing_else_changes() {
        let counter =
            BpeCounter::new(Encoding::O200kBase).with_image_formula(ImageFormula::Anthropic);
        let history = vec![
            Message::user("look"),
            Message {
                role: Role::Tool,
                parts: vec![
                    Part::ToolResult(crate::protocol::message::ToolResult::new(
                        "c1",
                        "image shot.png (1200×900)",
                        false,
                    )),
                    Part::Image(Image {
                        path: "shot.png".into(),
                        media_type: "image/png".into(),
                        width: 1200,
                        height: 900,
                        data: "AAAA".into(),
                    }),
                ],
            },
        ];
        assert!(has_images(&history));
        let replaced = replace_images(&history, &counter);
        assert!(!has_images(&replaced));
        assert_eq!(replaced[0], history[0]);
        assert_eq!(replaced[1].parts[0], history[1].parts[0]);
        assert_eq!(
            replaced[1].parts[1],
            Part::Text {
                text: "[image: shot.png, 1200×900, ~1440 tokens — read it again to see it]".into()
            }
        );
    }
}
