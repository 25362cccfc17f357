//! What counting tokens means to pith ([`TokenCounter`]) and which vocabulary counts
//! ([`Encoding`]).

use serde::{Deserialize, Serialize};

use crate::context::tokens::image::ImageFormula;

/// Which BPE vocabulary to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Encoding {
    /// `o200k_base`: GPT-4o and later OpenAI models. The default.
    #[default]
    #[serde(rename = "o200k")]
    O200kBase,
    /// `cl100k_base`: GPT-4, GPT-3.5 and older.
    #[serde(rename = "cl100k")]
    Cl100kBase,
}

impl Encoding {
    /// Parses `o200k`, `o200k_base`, `cl100k` or `cl100k_base`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "o200k" | "o200k_base" => Some(Self::O200kBase),
            "cl100k" | "cl100k_base" => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// The encoding's canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }
}

/// Counts tokens in text.
///
/// Implementations must be deterministic (same text, same count) and cheap to share
/// across threads; callers never assume a particular tokenizer beyond that.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens in `text`, with special-token-looking text counted as text.
    fn count(&self, text: &str) -> usize;

    /// The tokens of an image of `width` × `height` pixels. The default is the larger of
    /// the published formulas ([`ImageFormula::Conservative`]).
    fn image_tokens(&self, width: u32, height: u32) -> usize {
        ImageFormula::Conservative.tokens(width, height)
    }

    /// True when [`TokenCounter::count`] answers at once; false while the tables it
    /// needs are still being built (it would wait for them). The default is true.
    fn is_ready(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::BpeCounter;

    fn o200k() -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn empty_text_is_zero_tokens() {
        assert_eq!(o200k().count(""), 0);
    }

    #[test]
    fn encoding_names_parse() {
        assert_eq!(Encoding::parse("o200k"), Some(Encoding::O200kBase));
        assert_eq!(Encoding::parse("cl100k_base"), Some(Encoding::Cl100kBase));
        assert_eq!(Encoding::parse("p50k"), None);
    }
}
