//! A `tools/call` result as text for the model, before capture (squash + spill).
//!
//! - text blocks: their text, one after the other;
//! - structured content: compact JSON (one line), and text blocks that only repeat it
//!   (servers send both for older clients) are dropped;
//! - images, audio, embedded resources: a one-line placeholder with the type and size.
//!   pith passes no images to models yet, so an image is always a placeholder;
//! - resource links: one line naming the URI.
//!
//! The text then takes the same path as a built-in tool's output
//! (`pith_tools::Capture::finish`).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// The result rendered for the model, and whether the server flagged it as an error.
pub fn render(result: &CallToolResult) -> (String, bool) {
    let mut parts: Vec<String> = Vec::new();
    let structured = result.structured_content.as_ref();
    if let Some(value) = structured {
        parts.push(serde_json::to_string(value).unwrap_or_else(|_| value.to_string()));
    }
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => {
                let repeats_structured = structured.is_some_and(|value| {
                    serde_json::from_str::<serde_json::Value>(&text.text)
                        .ok()
                        .as_ref()
                        == Some(value)
                });
                if !repeats_structured {
                    parts.push(text.text.clone());
                }
            }
            ContentBlock::Image(image) => parts.push(placeholder(
                "image",
                &image.mime_type,
                decoded_len(&image.data),
            )),
            ContentBlock::Audio(audio) => parts.push(placeholder(
                "audio",
                &audio.mime_type,
                decoded_len(&audio.data),
            )),
            ContentBlock::Resource(embedded) => parts.push(match &embedded.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => format!(
                    "[resource {uri} ({}, {}): not shown]",
                    mime_type.as_deref().unwrap_or("text"),
                    size(text.len() as u64)
                ),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => format!(
                    "[resource {uri} ({}, {}): not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    size(decoded_len(blob))
                ),
                #[allow(unreachable_patterns)]
                _ => "[resource: not shown]".to_owned(),
            }),
            ContentBlock::ResourceLink(link) => parts.push(format!(
                "[resource link {}{}]",
                link.uri,
                link.mime_type
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            )),
            #[allow(unreachable_patterns)]
            _ => parts.push("[content of an unknown type: not shown]".to_owned()),
        }
    }
    let is_error = result.is_error.unwrap_or(false);
    let mut text = parts.join("\n");
    if text.is_empty() {
        text = if is_error {
            "the tool reported an error without a message".to_owned()
        } else {
            "(the tool returned no content)".to_owned()
        };
    }
    (text, is_error)
}

fn placeholder(kind: &str, mime: &str, bytes: u64) -> String {
    format!(
        "[{kind} {mime}, {}: not shown, pith does not pass {kind} to the model yet]",
        size(bytes)
    )
}

/// Bytes that base64 text decodes to (padding and whitespace excluded).
fn decoded_len(base64: &str) -> u64 {
    let symbols = base64
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count() as u64;
    symbols * 3 / 4
}

/// `512 B`, `12.3 KiB`, `4 MiB` ([`pith_core::human_bytes`]).
fn size(bytes: u64) -> String {
    pith_core::human_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmbeddedResource, Resource};
    use serde_json::json;

    #[test]
    fn text_blocks_are_joined() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::text("second"),
        ]);
        assert_eq!(render(&result), ("first\nsecond".to_owned(), false));
    }

    #[test]
    fn structured_content_is_compact_json_and_its_text_copy_is_dropped() {
        let value = json!({"timezone": "UTC", "datetime": "2026-11-30T12:00:00+00:00"});
        let mut result = CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string_pretty(&value).unwrap(),
        )]);
        result.structured_content = Some(value.clone());
        let (text, _) = render(&result);
        assert_eq!(text, serde_json::to_string(&value).unwrap());
        assert!(!text.contains('\n'));
    }

    #[test]
    fn images_and_resources_become_placeholders_with_their_size() {
        let png = "A".repeat(4000);
        let result = CallToolResult::success(vec![
            ContentBlock::image(png, "image/png"),
            ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
                "x".repeat(2048),
                "file:///notes.md",
            ))),
            ContentBlock::ResourceLink(Resource::new("file:///big.bin", "big")),
        ]);
        let (text, is_error) = render(&result);
        assert!(!is_error);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "[image image/png, 2.9 KiB: not shown, pith does not pass image to the model yet]"
        );
        assert_eq!(
            lines[1],
            "[resource file:///notes.md (text/plain, 2 KiB): not shown]"
        );
        assert_eq!(lines[2], "[resource link file:///big.bin]");
        assert!(text.len() < 300);
    }

    #[test]
    fn an_error_result_stays_an_error_and_is_never_empty() {
        let result = CallToolResult::error(vec![ContentBlock::text("city not found")]);
        assert_eq!(render(&result), ("city not found".to_owned(), true));
        let empty = CallToolResult::error(vec![]);
        assert!(render(&empty).1);
        assert!(!render(&empty).0.is_empty());
    }
}
