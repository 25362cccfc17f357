// The layout of the BPE tables, shared by the build script that writes them
// (`crates/core/build.rs`, through `include!`) and the code that reads them in place
// (`table.rs`). Both sides must hash a token the same way, so this is the one definition.
//
// Per encoding, three files in `OUT_DIR`:
// - `NAME.bytes`: every token's bytes, concatenated in rank order;
// - `NAME.starts`: little-endian `u32` offsets into `NAME.bytes`, one per rank plus the
//   end (token `r` is `bytes[starts[r]..starts[r + 1]]`);
// - `NAME.slots`: an open-addressing hash set of ranks, little-endian `u32` per slot,
//   `EMPTY_SLOT` where unused; a power-of-two number of slots, at most half of them used,
//   a token found by linear probing from `piece_hash(token) & (slots - 1)`;
// - `NAME.pairs`: the rank of every two-byte token, little-endian `u32` at index
//   `first_byte * 256 + second_byte`, `EMPTY_SLOT` for a pair that is no token (most
//   lookups while merging are of two bytes: one load instead of a probe).

/// A slot of the hash set that holds no rank.
pub const EMPTY_SLOT: u32 = u32::MAX;

/// A fast, non-cryptographic hash of a short byte string (Fx-style, 8 bytes at a time).
pub fn piece_hash(bytes: &[u8]) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    // Fold the well-mixed high bits into the low bits the mask keeps.
    (hash ^ (hash >> 32)) as usize
}
