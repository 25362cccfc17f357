//! How text and tool-call arguments are cut into the deltas of a streamed answer.

/// The largest char boundary of `text` not after `index`.
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut cut = index.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// Longest fragment a text or argument delta carries, in characters.
const MAX_FRAGMENT_CHARS: usize = 16;

/// Splits `text` into consecutive fragments of at most 16 characters, and into at least
/// `min_parts` fragments when it has that many characters. Empty text gives no fragment.
pub(crate) fn fragments(text: &str, min_parts: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let size = chars
        .div_ceil(min_parts.max(1))
        .clamp(1, MAX_FRAGMENT_CHARS);
    let mut pieces = Vec::with_capacity(chars.div_ceil(size));
    let mut start = 0;
    let mut taken = 0;
    for (offset, _) in text.char_indices() {
        if taken == size {
            pieces.push(&text[start..offset]);
            start = offset;
            taken = 0;
        }
        taken += 1;
    }
    pieces.push(&text[start..]);
    pieces
}

/// Splits a text delta stream: at least two fragments.
pub(crate) fn text_fragments(text: &str) -> Vec<&str> {
    fragments(text, 2)
}

/// Splits tool-call arguments: at least three fragments.
pub(crate) fn argument_fragments(arguments: &str) -> Vec<&str> {
    fragments(arguments, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_rejoin_to_the_original_and_respect_the_minimum_count() {
        for text in [
            "",
            "a",
            "ab",
            "Let me look.",
            &"x".repeat(100),
            "héllo wörld ✓✓✓",
        ] {
            let pieces = text_fragments(text);
            assert_eq!(pieces.concat(), text);
            if text.chars().count() >= 2 {
                assert!(pieces.len() >= 2, "{text:?} split into {pieces:?}");
            }
            assert!(pieces
                .iter()
                .all(|p| p.chars().count() <= MAX_FRAGMENT_CHARS));
        }
        assert!(argument_fragments(r#"{"path":"a"}"#).len() >= 3);
    }
}
