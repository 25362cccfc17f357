//! A `session/prompt`'s content blocks as pith's user message.
//!
//! - text blocks are the message's text, in order;
//! - a resource link (an `@`-mention of a file) becomes `@path` in the text (relative to
//!   the workspace when it is inside it), so pith's attachments take an image it names,
//!   and the model can `read` any other file;
//! - an embedded resource (`embeddedContext`: the editor sends the file's content) is
//!   appended as a `<context uri="…">` block;
//! - an image block is decoded and scaled to the provider's limits like a `read`
//!   screenshot (a model that takes no images gets the text alone, and a notice says so);
//! - audio is not supported (`audio: false`): a notice says it was left out.

use std::path::Path;

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use base64::Engine;
use pith_core::ImageLimits;
use pith_core::{Message, Part};
use pith_tools::image_from_bytes;

/// The text of `blocks` alone (what a slash command is read from).
pub fn text_of(blocks: &[ContentBlock], cwd: &Path) -> String {
    let mut text = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => push_word(&mut text, &mention(&link.uri, cwd)),
            _ => {}
        }
    }
    text
}

/// The user message for `blocks`, and a notice per part left out.
pub fn user_message(
    blocks: &[ContentBlock],
    cwd: &Path,
    limits: Option<ImageLimits>,
) -> (Message, Vec<String>) {
    let mut text = text_of(blocks, cwd);
    let mut notices = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(_) | ContentBlock::ResourceLink(_) => {}
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(file) => {
                    text.push_str(&format!(
                        "\n\n<context uri=\"{}\">\n{}\n</context>",
                        file.uri,
                        file.text.trim_end()
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => notices.push(format!(
                    "{}: binary content is not sent to the model; it was left out",
                    blob.uri
                )),
                _ => notices.push("a resource of an unknown kind was left out".to_owned()),
            },
            ContentBlock::Image(picture) => {
                let number = images.len() + 1;
                let shown = picture
                    .uri
                    .clone()
                    .unwrap_or_else(|| format!("pasted image {number}"));
                let Some(limits) = limits else {
                    notices.push(format!(
                        "{shown}: the model does not accept images; the message is sent without it"
                    ));
                    continue;
                };
                let decoded = base64::engine::general_purpose::STANDARD.decode(picture.data.trim());
                match decoded {
                    Ok(bytes) => match image_from_bytes(&bytes, &shown, limits) {
                        Ok(image) => images.push(Part::Image(image)),
                        Err(error) => notices.push(format!("{shown}: not attached: {error}")),
                    },
                    Err(error) => notices.push(format!(
                        "{shown}: not attached: its data is not base64 ({error})"
                    )),
                }
            }
            ContentBlock::Audio(_) => {
                notices.push("audio is not supported; it was left out".to_owned())
            }
            _ => notices.push("a content block of an unknown kind was left out".to_owned()),
        }
    }
    let (mut message, more) = pith_agent::user_message(&text, cwd, limits);
    notices.extend(more);
    message.parts.extend(images);
    (message, notices)
}

/// `@path` for a `file://` URI (relative to `cwd` inside it), the URI itself otherwise.
fn mention(uri: &str, cwd: &Path) -> String {
    let Some(path) = uri.strip_prefix("file://") else {
        return uri.to_owned();
    };
    let path = percent_decode(path);
    let relative = Path::new(&path)
        .strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or(path);
    format!("@{relative}")
}

fn push_word(text: &mut String, word: &str) {
    if !text.is_empty() && !text.ends_with(char::is_whitespace) {
        text.push(' ');
    }
    text.push_str(word);
}

/// Decodes `%XX` escapes (a path with spaces in a URI); anything malformed stays as is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((high * 16 + low) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextResourceContents,
    };

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8,
        0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn links_become_mentions_and_embedded_files_context() {
        let cwd = Path::new("/w");
        let blocks = vec![
            ContentBlock::from("Why does"),
            ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///w/src/my%20lib.rs")),
            ContentBlock::from(" fail?"),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}\n",
                    "file:///w/src/main.rs",
                )),
            )),
        ];
        let (message, notices) = user_message(&blocks, cwd, None);
        assert_eq!(
            message.text_content(),
            "Why does @src/my lib.rs fail?\n\n<context uri=\"file:///w/src/main.rs\">\nfn main() {}\n</context>"
        );
        assert!(notices.is_empty(), "{notices:?}");
        assert_eq!(text_of(&blocks, cwd), "Why does @src/my lib.rs fail?");
    }

    #[test]
    fn images_are_decoded_and_scaled_or_refused_in_words() {
        let data = pith_tools::image_base64(PNG_1X1);
        let blocks = vec![
            ContentBlock::from("look"),
            ContentBlock::Image(ImageContent::new(data, "image/png")),
            ContentBlock::Image(ImageContent::new("%%%", "image/png")),
        ];
        let (message, notices) =
            user_message(&blocks, Path::new("/w"), Some(ImageLimits::ANTHROPIC));
        assert_eq!(message.images().count(), 1);
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("not base64"), "{notices:?}");
        let (message, notices) = user_message(&blocks, Path::new("/w"), None);
        assert_eq!(message.images().count(), 0);
        assert!(notices[0].contains("does not accept images"));
    }

    #[test]
    fn percent_escapes_decode_and_bad_ones_stay() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
