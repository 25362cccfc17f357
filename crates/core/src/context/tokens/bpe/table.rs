//! A vocabulary's tables, read in place from the binary: no load, no copy.
//!
//! The build script wrote them (see `layout.rs`); this module answers the two questions
//! the counter asks: "which rank has these bytes, if any?" and "what are the bytes of
//! this rank?". A process maps the tables with the rest of the binary and touches only
//! the pages its lookups reach.

use super::layout::{piece_hash, EMPTY_SLOT};

/// One encoding's vocabulary: every mergeable token and a hash set of them by bytes.
pub(crate) struct Table {
    /// Every token's bytes, concatenated in rank order.
    bytes: &'static [u8],
    /// Little-endian `u32` offsets into `bytes`, one per rank plus the end.
    starts: &'static [u8],
    /// Little-endian `u32` ranks by hash slot, [`EMPTY_SLOT`] where unused.
    slots: &'static [u8],
    /// The number of slots minus one (the number is a power of two).
    mask: usize,
    /// Little-endian `u32` ranks of the two-byte tokens by `first * 256 + second`.
    pairs: &'static [u8],
}

macro_rules! table {
    ($name:literal) => {{
        const SLOTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".slots"));
        Table {
            bytes: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".bytes")),
            starts: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".starts")),
            slots: SLOTS,
            mask: SLOTS.len() / 4 - 1,
            pairs: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".pairs")),
        }
    }};
}

/// `o200k_base`'s vocabulary.
pub(crate) static O200K_BASE: Table = table!("o200k_base");
/// `cl100k_base`'s vocabulary.
pub(crate) static CL100K_BASE: Table = table!("cl100k_base");

/// The `index`-th little-endian `u32` of `words`, or [`EMPTY_SLOT`] past its end.
#[inline]
fn word(words: &[u8], index: usize) -> u32 {
    words
        .get(index * 4..)
        .and_then(<[u8]>::first_chunk::<4>)
        .map_or(EMPTY_SLOT, |w| u32::from_le_bytes(*w))
}

impl Table {
    /// The number of tokens.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.starts.len() / 4 - 1
    }

    /// The bytes of the token of rank `rank` (empty for a rank out of range).
    #[inline]
    pub(crate) fn token(&self, rank: u32) -> &'static [u8] {
        let rank = rank as usize;
        let (start, end) = (word(self.starts, rank), word(self.starts, rank + 1));
        self.bytes
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// The rank of the token whose bytes are exactly `piece`, if there is one.
    #[inline]
    pub(crate) fn rank(&self, piece: &[u8]) -> Option<u32> {
        if let [first, second] = *piece {
            let rank = word(self.pairs, usize::from(first) << 8 | usize::from(second));
            return (rank != EMPTY_SLOT).then_some(rank);
        }
        let mut slot = piece_hash(piece) & self.mask;
        loop {
            match word(self.slots, slot) {
                EMPTY_SLOT => return None,
                rank if self.token(rank) == piece => return Some(rank),
                _ => slot = (slot + 1) & self.mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_is_found_by_its_bytes() {
        for table in [&O200K_BASE, &CL100K_BASE] {
            for rank in 0..table.len() as u32 {
                assert_eq!(table.rank(table.token(rank)), Some(rank));
            }
        }
        assert_eq!(O200K_BASE.len(), 199_998);
        assert_eq!(CL100K_BASE.len(), 100_256);
    }

    #[test]
    fn every_two_bytes_are_found_exactly_when_they_are_a_token() {
        for table in [&O200K_BASE, &CL100K_BASE] {
            let mut expected = vec![None; 1 << 16];
            for rank in 0..table.len() as u32 {
                if let [a, b] = *table.token(rank) {
                    expected[usize::from(a) << 8 | usize::from(b)] = Some(rank);
                }
            }
            assert!(expected.iter().any(Option::is_none));
            for (index, rank) in expected.into_iter().enumerate() {
                let pair = [(index >> 8) as u8, index as u8];
                assert_eq!(table.rank(&pair), rank, "{pair:?}");
            }
        }
    }

    #[test]
    fn bytes_that_are_no_token_are_not_found() {
        for table in [&O200K_BASE, &CL100K_BASE] {
            for piece in [
                "",
                " thexq",
                "qzxqzxqzxqzxqzxqzxqzx",
                "日本語のテキストです",
            ] {
                assert_eq!(table.rank(piece.as_bytes()), None, "{piece:?}");
            }
            assert!(table.rank(b" the").is_some());
            assert!(table.rank(b"in").is_some());
            assert_eq!(table.token(u32::MAX), b"");
        }
    }
}
