//! Writes the BPE tables of `o200k_base` and `cl100k_base` into `OUT_DIR`, in the form
//! pith-core reads in place from its own binary (`src/context/tokens/bpe/layout.rs` describes it).
//!
//! The vocabularies come from tiktoken-rs, the reference the tests check pith's counts
//! against: each rank's bytes are what tiktoken decodes that rank to. Nothing is
//! deserialised at run time; a process touches only the pages of the tables it uses.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

include!("src/context/tokens/bpe/layout.rs");

/// The number of mergeable ranks of each encoding (tiktoken's `n_vocab` without the
/// special tokens): a vocabulary of another size means the source changed.
const O200K_TOKENS: usize = 199_998;
const CL100K_TOKENS: usize = 100_256;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/context/tokens/bpe/layout.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let o200k = tiktoken_rs::o200k_base().expect("tiktoken-rs builds o200k_base");
    write_tables(&out, "o200k_base", &vocabulary(&o200k, O200K_TOKENS));
    let cl100k = tiktoken_rs::cl100k_base().expect("tiktoken-rs builds cl100k_base");
    write_tables(&out, "cl100k_base", &vocabulary(&cl100k, CL100K_TOKENS));
}

/// Every mergeable token's bytes, indexed by rank (ranks are 0..n without gaps).
fn vocabulary(bpe: &tiktoken_rs::CoreBPE, expected: usize) -> Vec<Vec<u8>> {
    let specials: HashSet<&[u8]> = bpe
        .special_tokens()
        .into_iter()
        .map(str::as_bytes)
        .collect();
    let mut tokens = Vec::with_capacity(expected);
    for rank in 0u32.. {
        let Ok(bytes) = bpe.decode_bytes(&[rank]) else {
            break;
        };
        assert!(
            !specials.contains(bytes.as_slice()),
            "rank {rank} is a special token: the mergeable ranks are not contiguous"
        );
        assert!(!bytes.is_empty(), "rank {rank} has no bytes");
        tokens.push(bytes);
    }
    assert_eq!(tokens.len(), expected, "unexpected vocabulary size");
    let distinct: HashSet<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
    assert_eq!(distinct.len(), tokens.len(), "two ranks share their bytes");
    for byte in 0..=255u8 {
        assert!(
            distinct.contains([byte].as_slice()),
            "byte {byte} is not a token: the counter needs every single byte"
        );
    }
    tokens
}

/// Writes `NAME.bytes`, `NAME.starts`, `NAME.slots` and `NAME.pairs` for `tokens`.
fn write_tables(out: &Path, name: &str, tokens: &[Vec<u8>]) {
    let mut bytes = Vec::new();
    let mut starts = Vec::with_capacity((tokens.len() + 1) * 4);
    for token in tokens {
        starts.extend_from_slice(&offset(bytes.len()).to_le_bytes());
        bytes.extend_from_slice(token);
    }
    starts.extend_from_slice(&offset(bytes.len()).to_le_bytes());

    let len = (tokens.len() * 2).next_power_of_two();
    let mask = len - 1;
    let mut slots = vec![EMPTY_SLOT; len];
    for (rank, token) in tokens.iter().enumerate() {
        let mut slot = piece_hash(token) & mask;
        while slots[slot] != EMPTY_SLOT {
            slot = (slot + 1) & mask;
        }
        slots[slot] = offset(rank);
    }
    let slots: Vec<u8> = slots.iter().flat_map(|s| s.to_le_bytes()).collect();

    let mut pairs = vec![EMPTY_SLOT; 1 << 16];
    for (rank, token) in tokens.iter().enumerate() {
        if let [first, second] = token[..] {
            pairs[usize::from(first) << 8 | usize::from(second)] = offset(rank);
        }
    }
    let pairs: Vec<u8> = pairs.iter().flat_map(|s| s.to_le_bytes()).collect();

    for (extension, data) in [
        ("bytes", &bytes),
        ("starts", &starts),
        ("slots", &slots),
        ("pairs", &pairs),
    ] {
        let path = out.join(format!("{name}.{extension}"));
        std::fs::write(&path, data).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

fn offset(value: usize) -> u32 {
    u32::try_from(value).expect("the tables stay below 4 GiB")
}
