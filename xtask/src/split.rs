//! The one rule that splits the corpus into a tuning half and a held-out half.
//!
//! Squash rules may be tuned by looking at the tuning half only; the held-out half is
//! measured and reported, never inspected while tuning, so its figures say how the rules
//! generalise. A session's half depends on its file name alone (not on its content, the
//! directory or the order of files), so the split is the same on every machine and for
//! every subset of the corpus (the vendored sample included):
//!
//! `fmix64(fnv1a64(file name bytes))` odd → held-out, even → tuning.
//!
//! FNV-1a's lowest bit depends only on the lowest bits of the input bytes, so its hash is
//! passed through MurmurHash3's 64-bit finaliser before the bit is taken. On the shared
//! corpus this puts 122 sessions in the tuning half and 118 in the held-out half.

use std::path::Path;

/// The half of the corpus a session belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Half {
    /// Sessions the squash rules may be tuned on.
    Tuning,
    /// Sessions kept out of all tuning.
    HeldOut,
}

impl Half {
    /// Both halves, in report order.
    pub const ALL: [Half; 2] = [Half::Tuning, Half::HeldOut];

    /// Stable name (`tuning`, `held-out`).
    pub fn as_str(self) -> &'static str {
        match self {
            Half::Tuning => "tuning",
            Half::HeldOut => "held-out",
        }
    }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The half of the session stored in `path` (judged by its file name).
pub fn half_of(path: &Path) -> Half {
    let name = path
        .file_name()
        .map(|n| n.as_encoded_bytes())
        .unwrap_or(&[]);
    if fmix64(fnv1a64(name)) & 1 == 1 {
        Half::HeldOut
    } else {
        Half::Tuning
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_depends_on_the_file_name_only() {
        let a = half_of(Path::new("/x/django__django-11815.jsonl"));
        assert_eq!(a, half_of(Path::new("django__django-11815.jsonl")));
        assert_eq!(
            a,
            half_of(Path::new("/elsewhere/django__django-11815.jsonl"))
        );
        // Pinned values: changing the rule must be a deliberate, visible act.
        assert_eq!(a, Half::HeldOut);
        assert_eq!(half_of(Path::new("sympy__sympy-13551.jsonl")), Half::Tuning);
        assert_eq!(
            half_of(Path::new("astropy__astropy-8872.jsonl")),
            Half::HeldOut
        );
    }

    #[test]
    fn the_split_is_roughly_even() {
        let held = (0..1000)
            .filter(|i| half_of(Path::new(&format!("proj__proj-{i}.jsonl"))) == Half::HeldOut)
            .count();
        assert!((400..600).contains(&held), "{held} of 1000 held out");
    }
}
