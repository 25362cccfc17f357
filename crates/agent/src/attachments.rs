//! `@path/to/shot.png` in a user message: each word that starts with `@` and names a PNG,
//! JPEG, GIF or WebP file (relative to the workspace, or absolute) attaches that image to
//! the message, scaled to the provider's limits. The text stays as typed, so the model
//! knows which file each image is. A model that takes no images, a missing or broken file:
//! the text goes alone, with a notice saying why.

use std::path::Path;

use pith_core::ImageLimits;
use pith_core::{Message, Part};
use pith_tools::load_image;

/// Extensions of the images `@path` attaches.
const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// The user message for `text`, with the images its `@paths` name, and a notice per
/// image that could not be attached.
pub fn user_message(text: &str, cwd: &Path, limits: Option<ImageLimits>) -> (Message, Vec<String>) {
    let mut message = Message::user(text);
    let mut notices = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        // Trailing punctuation of the sentence is not part of the path.
        let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
        let is_image = Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
        if !is_image {
            continue;
        }
        let Some(limits) = limits else {
            notices.push(format!(
                "@{path}: the model does not accept images; the message is sent without it"
            ));
            continue;
        };
        match load_image(&cwd.join(path), path, limits) {
            Ok(image) => message.parts.push(Part::Image(image)),
            Err(error) => notices.push(format!("@{path}: not attached: {error}")),
        }
    }
    (message, notices)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8,
        0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn at_paths_of_images_attach_them_and_the_text_stays_as_typed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("shots")).unwrap();
        std::fs::write(dir.path().join("shots/a.png"), PNG_1X1).unwrap();
        let text = "Why is @shots/a.png blank, and what about @missing.png? See @notes.md.";
        let (message, notices) = user_message(text, dir.path(), Some(ImageLimits::ANTHROPIC));
        assert_eq!(message.text_content(), text);
        let images: Vec<_> = message.images().collect();
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].path, "shots/a.png");
        assert_eq!((images[0].width, images[0].height), (1, 1));
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].starts_with("@missing.png: not attached"),
            "{notices:?}"
        );
        let (message, notices) = user_message(text, dir.path(), None);
        assert_eq!(message.images().count(), 0);
        assert!(notices[0].contains("does not accept images"), "{notices:?}");
    }
}
