//! tiktoken's pre-tokenizers: the text is cut into pieces by a regular expression, and
//! byte-pair merging happens within each piece.
//!
//! The patterns are OpenAI's (`o200k_base`, `cl100k_base`) with one rewrite: they end in
//! `\s+(?!\S)|\s+`, a look-ahead `regex-automata` does not have. `\s+(?!\S)` matches a
//! run of whitespace that is followed by whitespace or by the end of the text; here it is
//! split in two: `\s+$` (at the end of the text) joins the first pattern, and `\s+\s`
//! becomes a pattern of its own whose last character is given back after the match. The
//! patterns are searched as one, anchored where the previous piece ended, earlier
//! patterns winning, as the alternation does in tiktoken's regex.

use regex_automata::meta::{BuildError, Regex};
use regex_automata::{Anchored, Input};

use crate::context::tokens::counter::Encoding;

/// The contractions both encodings split off (`'s`, `'ll`, …), case-insensitively.
const CONTRACTIONS: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";

/// The pieces of text one encoding merges within.
pub(crate) struct Pretokenizer {
    /// The patterns: `[main, \s+\s, \s+]`.
    regex: Regex,
}

/// The pattern whose last character is a look-ahead, given back after the match.
const LOOKAHEAD_PATTERN: usize = 1;

impl Pretokenizer {
    /// Builds `encoding`'s pre-tokenizer (a few milliseconds: the Unicode classes compile
    /// into automata).
    pub(crate) fn new(encoding: Encoding) -> Result<Self, Box<BuildError>> {
        let main = match encoding {
            Encoding::O200kBase => {
                let upper = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]";
                let lower = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]";
                [
                    format!(r"[^\r\n\p{{L}}\p{{N}}]?{upper}*{lower}+{CONTRACTIONS}?"),
                    format!(r"[^\r\n\p{{L}}\p{{N}}]?{upper}+{lower}*{CONTRACTIONS}?"),
                    r"\p{N}{1,3}".to_owned(),
                    r" ?[^\s\p{L}\p{N}]+[\r\n/]*".to_owned(),
                    r"\s*[\r\n]+".to_owned(),
                    r"\s+$".to_owned(),
                ]
                .join("|")
            }
            Encoding::Cl100kBase => [
                CONTRACTIONS,
                r"[^\r\n\p{L}\p{N}]?\p{L}+",
                r"\p{N}{1,3}",
                r" ?[^\s\p{L}\p{N}]+[\r\n]*",
                r"\s*[\r\n]+",
                r"\s+$",
            ]
            .join("|"),
        };
        let regex = Regex::new_many(&[main.as_str(), r"\s+\s", r"\s+"]).map_err(Box::new)?;
        Ok(Self { regex })
    }

    /// The pieces of `text`, in order; together they are exactly `text`.
    pub(crate) fn split<'t>(&'t self, text: &'t str) -> Pieces<'t> {
        Pieces {
            regex: &self.regex,
            text,
            at: 0,
        }
    }
}

/// The iterator of [`Pretokenizer::split`].
pub(crate) struct Pieces<'t> {
    regex: &'t Regex,
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for Pieces<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let rest = self.text.get(self.at..).filter(|rest| !rest.is_empty())?;
        let found = self
            .regex
            .find(Input::new(rest).anchored(Anchored::Yes))
            .filter(|m| m.end() > 0);
        let end = match found {
            Some(m) if m.pattern().as_usize() == LOOKAHEAD_PATTERN => {
                // Give back the look-ahead character. `\s+\s` spans at least two
                // characters, so the piece keeps at least one.
                let piece = &rest[..m.end()];
                let last = piece.chars().next_back().map_or(0, char::len_utf8);
                m.end() - last
            }
            Some(m) => m.end(),
            // Unreachable with these patterns (together they match any character); a
            // character on its own keeps the split total and the count an over-estimate.
            None => rest.chars().next().map_or(rest.len(), char::len_utf8),
        };
        self.at += end;
        Some(&rest[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(encoding: Encoding, text: &str) -> Vec<&'static str> {
        let pre = Box::leak(Box::new(Pretokenizer::new(encoding).unwrap()));
        let text: &'static str = Box::leak(text.to_owned().into_boxed_str());
        pre.split(text).collect()
    }

    #[test]
    fn whitespace_before_a_word_leaves_its_last_space_to_the_word() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            assert_eq!(
                pieces(encoding, "a   b\n\n  c  "),
                ["a", "  ", " b", "\n\n", " ", " c", "  "],
                "{encoding:?}"
            );
            assert_eq!(pieces(encoding, ""), Vec::<&str>::new());
            assert_eq!(
                pieces(encoding, "x\u{3000}\u{3000}y"),
                ["x", "\u{3000}", "\u{3000}y"],
                "{encoding:?}"
            );
        }
    }

    #[test]
    fn the_encodings_split_differently() {
        assert_eq!(
            pieces(Encoding::O200kBase, "HTTPServer's 12345"),
            ["HTTPServer's", " ", "123", "45"]
        );
        assert_eq!(
            pieces(Encoding::Cl100kBase, "HTTPServer's 12345"),
            ["HTTPServer", "'s", " ", "123", "45"]
        );
    }
}
