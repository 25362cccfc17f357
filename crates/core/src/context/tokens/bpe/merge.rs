//! Byte-pair merging of one pre-token, by tiktoken's rule.
//!
//! Start from single bytes; while some adjacent pair of tokens is itself a token, merge
//! the pair of lowest rank (the leftmost one on a tie). The tokens left are the
//! encoding. Every single byte is a token of both vocabularies (the build script checks
//! it), so the result always exists.
//!
//! Short pieces (the common case) merge in a fixed array with a linear scan for the
//! lowest rank; longer ones through a heap, so a pathological piece (a megabyte of
//! letters without a space) costs O(n log n), not O(n²). Both apply the same merges in
//! the same order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::table::Table;

/// Pieces up to this many bytes merge in a fixed array; longer ones through a heap.
pub(crate) const SMALL_PIECE_BYTES: usize = 128;

/// No pair, or a pair that is not a token.
const NO_RANK: u32 = u32::MAX;

/// Calls `token` with the bytes of each token of `piece`, in order; returns how many.
pub(crate) fn merge(table: &Table, piece: &[u8], mut token: impl FnMut(&[u8])) -> usize {
    match piece.len() {
        0 => 0,
        1 => {
            token(piece);
            1
        }
        len if len <= SMALL_PIECE_BYTES => merge_small(table, piece, &mut token),
        _ => merge_large(table, piece, &mut token),
    }
}

/// The rank of `piece[from..to]` as one token, or [`NO_RANK`].
#[inline]
fn pair_rank(table: &Table, piece: &[u8], from: usize, to: usize) -> u32 {
    piece
        .get(from..to)
        .and_then(|bytes| table.rank(bytes))
        .unwrap_or(NO_RANK)
}

/// Linear-scan merging of a piece of 2..=[`SMALL_PIECE_BYTES`] bytes, in arrays sized
/// for the piece (most pieces are short: no need to clear a large one).
fn merge_small(table: &Table, piece: &[u8], token: &mut dyn FnMut(&[u8])) -> usize {
    if piece.len() <= 24 {
        merge_in::<24>(table, piece, token)
    } else {
        merge_in::<SMALL_PIECE_BYTES>(table, piece, token)
    }
}

/// [`merge_small`] with room for `N` bytes (`piece.len() <= N <= 255`).
fn merge_in<const N: usize>(table: &Table, piece: &[u8], token: &mut dyn FnMut(&[u8])) -> usize {
    // `starts[..tokens + 1]`: the tokens' boundaries (the last one is the piece's end).
    // `ranks[i]`: the rank of token `i` merged with token `i + 1`.
    let mut starts = [0u8; 256];
    let mut ranks = [NO_RANK; N];
    let mut tokens = piece.len();
    for (i, start) in starts.iter_mut().enumerate().take(tokens + 1) {
        *start = i as u8;
    }
    for (i, rank) in ranks.iter_mut().enumerate().take(tokens - 1) {
        *rank = pair_rank(table, piece, i, i + 2);
    }
    let at = |starts: &[u8], i: usize| usize::from(starts[i]);
    // The lowest rank among the `tokens - 1` pairs, the leftmost on a tie.
    let lowest = |ranks: &[u32]| {
        ranks
            .iter()
            .enumerate()
            .filter(|(_, &rank)| rank != NO_RANK)
            .min_by_key(|(i, &rank)| (rank, *i))
            .map(|(i, _)| i)
    };
    while let Some(i) = lowest(&ranks[..tokens - 1]) {
        // Token `i` absorbs token `i + 1`: drop the boundary between them.
        starts.copy_within(i + 2..tokens + 1, i + 1);
        ranks.copy_within(i + 1..tokens - 1, i);
        tokens -= 1;
        ranks[i] = if i + 1 < tokens {
            pair_rank(table, piece, at(&starts, i), at(&starts, i + 2))
        } else {
            NO_RANK
        };
        if i > 0 {
            ranks[i - 1] = pair_rank(table, piece, at(&starts, i - 1), at(&starts, i + 1));
        }
    }
    for bounds in starts[..tokens + 1].windows(2) {
        token(&piece[usize::from(bounds[0])..usize::from(bounds[1])]);
    }
    tokens
}

/// Heap-ordered merging of a long piece: O(n log n) whatever its content.
fn merge_large(table: &Table, piece: &[u8], token: &mut dyn FnMut(&[u8])) -> usize {
    let len = piece.len();
    // Tokens are identified by their first byte. `end[s]`: where the token starting at
    // `s` ends; `prev[s]`: where the token before it starts (`usize::MAX` for none);
    // `rank[s]`: the rank of it merged with the next token, [`NO_RANK`] when there is no
    // such token, or when `s` no longer starts a token.
    let mut end: Vec<usize> = (1..=len).collect();
    let mut prev: Vec<usize> = (0..len).map(|s| s.wrapping_sub(1)).collect();
    let mut rank: Vec<u32> = (0..len)
        .map(|s| pair_rank(table, piece, s, s + 2))
        .collect();
    // The lowest rank first, the leftmost on a tie.
    let mut heap: BinaryHeap<Reverse<(u32, usize)>> = rank
        .iter()
        .enumerate()
        .filter(|(_, &r)| r != NO_RANK)
        .map(|(s, &r)| Reverse((r, s)))
        .collect();
    let mut tokens = len;
    while let Some(Reverse((pair, start))) = heap.pop() {
        // A stale entry: the pair changed (ranks are unique, so an equal rank is the
        // same pair) or its token was absorbed.
        if rank[start] != pair {
            continue;
        }
        let absorbed = end[start];
        let new_end = end[absorbed];
        end[start] = new_end;
        rank[absorbed] = NO_RANK;
        tokens -= 1;
        rank[start] = if new_end < len {
            prev[new_end] = start;
            pair_rank(table, piece, start, end[new_end])
        } else {
            NO_RANK
        };
        if rank[start] != NO_RANK {
            heap.push(Reverse((rank[start], start)));
        }
        let before = prev[start];
        if before != usize::MAX {
            rank[before] = pair_rank(table, piece, before, new_end);
            if rank[before] != NO_RANK {
                heap.push(Reverse((rank[before], before)));
            }
        }
    }
    let mut start = 0;
    while start < len {
        token(&piece[start..end[start]]);
        start = end[start];
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::bpe::table::O200K_BASE;

    fn tokens(piece: &[u8], large: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut push = |t: &[u8]| out.push(t.to_vec());
        let count = if large {
            merge_large(&O200K_BASE, piece, &mut push)
        } else {
            merge_small(&O200K_BASE, piece, &mut push)
        };
        assert_eq!(count, out.len());
        out
    }

    #[test]
    fn both_strategies_merge_alike() {
        for piece in [
            "ab",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            " supercalifragilisticexpialidocious",
            "qzxqzxqzxqzxqzxqzxqzx",
            "日本語のテキストです",
            "👨‍👩‍👧‍👦👨‍👩‍👧‍👦",
            "ababababababababababababababababababababababababab",
        ] {
            let small = tokens(piece.as_bytes(), false);
            assert_eq!(small, tokens(piece.as_bytes(), true), "{piece:?}");
            assert_eq!(small.concat(), piece.as_bytes());
            assert!(small.iter().all(|t| O200K_BASE.rank(t).is_some()));
        }
    }

    #[test]
    fn a_megabyte_of_letters_merges_quickly_into_tokens() {
        let piece = "a".repeat(1 << 20);
        let mut bytes = 0;
        let count = merge(&O200K_BASE, piece.as_bytes(), |t| {
            assert!(O200K_BASE.rank(t).is_some());
            bytes += t.len();
        });
        assert_eq!(bytes, piece.len());
        assert!(count < piece.len() / 4, "{count}");
    }
}
