//! A provider's prompt cache as a pure model: which part of a request's input is read from
//! the cache, which part is written to it, and which entries live how long. The testkit's
//! server reports usage with it ([`crate::UsageMode::Cached`]) and `cargo xtask simulate`
//! prices simulated sessions with it, so it knows nothing of HTTP or of any wire format: a
//! request is a list of [`Segment`]s (blocks in prompt order, each with a content identity
//! and a size in tokens) sent at a time in seconds.
//!
//! An entry names an exact prefix: the prefix identity of segment `i` is a rolling hash of
//! the ids of segments `0..=i`, so two requests share an entry only when every block up to
//! it is the same. Matching is at block boundaries (a changed block ends the match, even
//! when the provider would match part of it). The rules of each provider family, with
//! their sources, are in `docs/testkit.md`; in short:
//!
//! - [`CacheRules::Anthropic`] (Anthropic Messages, Bedrock Converse): explicit
//!   breakpoints; at most 4 count; a read looks back up to 20 block boundaries from each;
//!   every breakpoint whose prefix is long enough writes (or refreshes) an entry; reads
//!   and writes are billed separately.
//! - [`CacheRules::OpenAi`]: every prefix of a long enough prompt is cached automatically;
//!   hits come in 128-token increments; nothing is billed for writing.
//! - [`CacheRules::Gemini`]: implicit caching, like OpenAI's without the increments.
//!
//! ```
//! use pith_testkit::cache::{CacheRules, PromptCache, Segment};
//!
//! let mut cache = PromptCache::new(CacheRules::anthropic());
//! let system = Segment { id: 1, tokens: 3_000, breakpoint: true };
//! let question = Segment { id: 2, tokens: 200, breakpoint: true };
//! let first = cache.request(0.0, &[system]);
//! assert_eq!((first.cache_read_tokens, first.cache_write_tokens), (0, 3_000));
//! let second = cache.request(30.0, &[system, question]);
//! assert_eq!((second.cache_read_tokens, second.cache_write_tokens), (3_000, 200));
//! assert_eq!(second.input_tokens, 3_200);
//! ```

use std::collections::HashMap;

/// How many breakpoints of a request Anthropic honours (the API refuses more; the model
/// ignores the ones after the 4th).
const MAX_BREAKPOINTS: usize = 4;

/// How a provider family caches prompts (docs/testkit.md cites the sources).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CacheRules {
    /// Anthropic Messages and Bedrock Converse: explicit breakpoints (`cache_control`,
    /// `cachePoint`), at most 4 per request; a read looks for a live entry at each
    /// breakpoint and up to `lookback` (20) block boundaries before it; a write creates an
    /// entry at each breakpoint whose prefix has at least `min_tokens`; an entry lives
    /// `ttl_seconds` (300, or 3600 for the 1-hour cache) from its last use.
    Anthropic {
        /// Lifetime of an entry after its last use, in seconds.
        ttl_seconds: f64,
        /// The shortest prefix that is cached, in tokens.
        min_tokens: u64,
        /// How many block boundaries before a breakpoint a read also tries.
        lookback: usize,
    },
    /// OpenAI: automatic prefix caching of prompts of at least `min_tokens` (1024), hits in
    /// `step` (128) token increments; an entry lives `ttl_seconds` from its last use; no
    /// write premium.
    OpenAi {
        /// Lifetime of an entry after its last use, in seconds.
        ttl_seconds: f64,
        /// The shortest prompt (and shortest hit) that is cached, in tokens.
        min_tokens: u64,
        /// Hits are rounded down to a multiple of this many tokens.
        step: u64,
    },
    /// Gemini implicit caching: automatic prefix caching from `min_tokens`; no write premium.
    Gemini {
        /// Lifetime of an entry after its last use, in seconds.
        ttl_seconds: f64,
        /// The shortest prompt (and shortest hit) that is cached, in tokens.
        min_tokens: u64,
    },
}

impl CacheRules {
    /// Anthropic's default (5-minute) cache: entries live 300 s from their last use,
    /// prefixes from 1024 tokens (Claude Sonnet 4.5's minimum; Opus 4.5 and Haiku 4.5 need
    /// 4096, Sonnet 4.6 2048), reads look back 20 blocks from each breakpoint.
    pub fn anthropic() -> Self {
        CacheRules::Anthropic {
            ttl_seconds: 300.0,
            min_tokens: 1024,
            lookback: 20,
        }
    }

    /// Anthropic's 1-hour cache (`"ttl": "1h"`): as [`CacheRules::anthropic`], entries live
    /// 3600 s from their last use.
    pub fn anthropic_1h() -> Self {
        CacheRules::Anthropic {
            ttl_seconds: 3600.0,
            min_tokens: 1024,
            lookback: 20,
        }
    }

    /// OpenAI's in-memory prompt cache: prompts from 1024 tokens, hits in 128-token
    /// increments, entries live 600 s from their last use (OpenAI says "generally 5 to 10
    /// minutes of inactivity, up to a maximum of one hour"; the upper end is taken, so a
    /// pause shorter than 10 minutes keeps the cache).
    pub fn openai() -> Self {
        CacheRules::OpenAi {
            ttl_seconds: 600.0,
            min_tokens: 1024,
            step: 128,
        }
    }

    /// Gemini's implicit caching (2.5 and later models): prompts from 1024 tokens (Gemini
    /// 2.5 Flash's published minimum; the Pro and 3.x models need more), entries live
    /// 300 s from their last use. Google publishes no lifetime for implicit caches (its
    /// explicit ones default to an hour): 5 minutes is an assumption, Anthropic's default.
    pub fn gemini() -> Self {
        CacheRules::Gemini {
            ttl_seconds: 300.0,
            min_tokens: 1024,
        }
    }

    /// The lifetime of an entry after its last use, in seconds.
    pub fn ttl_seconds(&self) -> f64 {
        match *self {
            CacheRules::Anthropic { ttl_seconds, .. }
            | CacheRules::OpenAi { ttl_seconds, .. }
            | CacheRules::Gemini { ttl_seconds, .. } => ttl_seconds,
        }
    }

    /// The shortest prefix that is cached, in tokens.
    pub fn min_tokens(&self) -> u64 {
        match *self {
            CacheRules::Anthropic { min_tokens, .. }
            | CacheRules::OpenAi { min_tokens, .. }
            | CacheRules::Gemini { min_tokens, .. } => min_tokens,
        }
    }
}

/// One block of a request in prompt order: its content identity (equal ids = equal content),
/// its tokens, and whether a cache breakpoint is set after it (Anthropic/Bedrock only;
/// ignored by the automatic families).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The block's content identity: equal ids mean equal content.
    pub id: u64,
    /// The block's size in tokens.
    pub tokens: u64,
    /// A cache breakpoint is set after this block (`cache_control`, `cachePoint`).
    pub breakpoint: bool,
}

/// What one request was billed for input: all its tokens, the part read from the cache, and
/// the part written to it (always 0 for the automatic families). `input_tokens` includes both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheBill {
    /// Every input token of the request, cache reads and writes included.
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the cache.
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the cache (billed at the write premium).
    pub cache_write_tokens: u64,
    /// The part of `cache_write_tokens` written at a breakpoint with a longer lifetime than
    /// the rules' (Anthropic's 1-hour cache, billed at its own premium: 2× instead of
    /// 1.25×): the tokens up to the last such breakpoint that were not read.
    pub cache_write_long_tokens: u64,
}

/// One cached prefix.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The entry is live while the clock is before this time.
    expires: f64,
    /// Its lifetime after each use.
    ttl: f64,
}

impl Entry {
    fn touch(&mut self, now: f64, ttl: f64) {
        self.ttl = self.ttl.max(ttl);
        self.expires = self.expires.max(now + self.ttl);
    }
}

/// A provider's prompt cache for one client (one API key / one `prompt_cache_key`).
#[derive(Debug, Clone)]
pub struct PromptCache {
    rules: CacheRules,
    /// Live entries by prefix identity.
    entries: HashMap<u64, Entry>,
}

impl PromptCache {
    /// An empty cache that follows `rules`.
    pub fn new(rules: CacheRules) -> Self {
        PromptCache {
            rules,
            entries: HashMap::new(),
        }
    }

    /// Bills one request of `segments` sent at `now_seconds` (any monotonic clock in
    /// seconds; the simulator passes simulated time), and updates the entries.
    pub fn request(&mut self, now_seconds: f64, segments: &[Segment]) -> CacheBill {
        self.request_with_ttls(now_seconds, segments, &[])
    }

    /// Like [`PromptCache::request`], with a lifetime per breakpoint (Anthropic's
    /// `cache_control: {"type": "ephemeral", "ttl": "1h"}`, Bedrock's `cachePoint` with a
    /// `ttl`): `ttl_seconds[i]`, when present and `Some`, is the lifetime in seconds of the
    /// entry written at the breakpoint after segment `i`; otherwise the rules' lifetime
    /// applies. An entry keeps the longest lifetime it was written with. The automatic
    /// families ignore `ttl_seconds`.
    pub fn request_with_ttls(
        &mut self,
        now_seconds: f64,
        segments: &[Segment],
        ttl_seconds: &[Option<f64>],
    ) -> CacheBill {
        self.entries.retain(|_, entry| entry.expires > now_seconds);
        let prefixes = Prefixes::of(segments);
        let total = prefixes.tokens.last().copied().unwrap_or(0);
        let (cache_read_tokens, cache_write_tokens, cache_write_long_tokens) = match self.rules {
            CacheRules::Anthropic {
                ttl_seconds: default_ttl,
                min_tokens,
                lookback,
            } => {
                let ttl_at = |position: usize| {
                    ttl_seconds
                        .get(position)
                        .copied()
                        .flatten()
                        .filter(|ttl| ttl.is_finite() && *ttl > 0.0)
                        .unwrap_or(default_ttl)
                };
                self.explicit(
                    now_seconds,
                    &prefixes,
                    (min_tokens, lookback, default_ttl),
                    ttl_at,
                )
            }
            CacheRules::OpenAi {
                ttl_seconds,
                min_tokens,
                step,
            } => (
                self.automatic(now_seconds, &prefixes, ttl_seconds, min_tokens, step),
                0,
                0,
            ),
            CacheRules::Gemini {
                ttl_seconds,
                min_tokens,
            } => (
                self.automatic(now_seconds, &prefixes, ttl_seconds, min_tokens, 1),
                0,
                0,
            ),
        };
        CacheBill {
            input_tokens: total,
            cache_read_tokens,
            cache_write_tokens,
            cache_write_long_tokens,
        }
    }

    /// The rules.
    pub fn rules(&self) -> CacheRules {
        self.rules
    }

    /// Anthropic's breakpoints: the read prefix's tokens and the tokens written.
    fn explicit(
        &mut self,
        now: f64,
        prefixes: &Prefixes,
        (min_tokens, lookback, default_ttl): (u64, usize, f64),
        ttl_at: impl Fn(usize) -> f64,
    ) -> (u64, u64, u64) {
        let breakpoints = &prefixes.breakpoints;
        let mut read: Option<usize> = None;
        for &breakpoint in breakpoints {
            let lowest = breakpoint.saturating_sub(lookback);
            let hit = (lowest..=breakpoint)
                .rev()
                .find(|&position| self.entries.contains_key(&prefixes.hashes[position]));
            if let Some(position) = hit {
                if read.is_none_or(|read| position > read) {
                    read = Some(position);
                }
            }
        }
        let read_tokens = read.map_or(0, |position| prefixes.tokens[position]);
        if let Some(entry) =
            read.and_then(|position| self.entries.get_mut(&prefixes.hashes[position]))
        {
            let ttl = entry.ttl;
            entry.touch(now, ttl);
        }
        let mut written_to = read_tokens;
        let mut long_written_to = read_tokens;
        for &breakpoint in breakpoints {
            let tokens = prefixes.tokens[breakpoint];
            if tokens < min_tokens {
                continue;
            }
            let ttl = ttl_at(breakpoint);
            if ttl > default_ttl {
                long_written_to = long_written_to.max(tokens);
            }
            self.entries
                .entry(prefixes.hashes[breakpoint])
                .and_modify(|entry| entry.touch(now, ttl))
                .or_insert(Entry {
                    expires: now + ttl,
                    ttl,
                });
            written_to = written_to.max(tokens);
        }
        (
            read_tokens,
            written_to - read_tokens,
            long_written_to - read_tokens,
        )
    }

    /// OpenAI's and Gemini's automatic caching: the cached tokens (nothing is billed for
    /// writing). Every prefix of a long enough prompt becomes, or refreshes, an entry.
    fn automatic(
        &mut self,
        now: f64,
        prefixes: &Prefixes,
        ttl: f64,
        min_tokens: u64,
        step: u64,
    ) -> u64 {
        let total = prefixes.tokens.last().copied().unwrap_or(0);
        if total < min_tokens {
            return 0;
        }
        let longest = (0..prefixes.hashes.len())
            .rev()
            .find(|&position| self.entries.contains_key(&prefixes.hashes[position]))
            .map_or(0, |position| prefixes.tokens[position]);
        let cached = if longest >= min_tokens {
            let step = step.max(1);
            longest / step * step
        } else {
            0
        };
        for (hash, tokens) in prefixes.hashes.iter().zip(&prefixes.tokens) {
            // A shorter prefix could only ever be a hit below the minimum: not worth keeping.
            if *tokens >= min_tokens {
                self.entries
                    .entry(*hash)
                    .and_modify(|entry| entry.touch(now, ttl))
                    .or_insert(Entry {
                        expires: now + ttl,
                        ttl,
                    });
            }
        }
        cached
    }
}

/// The prefix identities and prefix sizes of a request's segments.
struct Prefixes {
    /// `hashes[i]` names the exact prefix `0..=i`.
    hashes: Vec<u64>,
    /// `tokens[i]`: the tokens of segments `0..=i`.
    tokens: Vec<u64>,
    /// The positions of the first [`MAX_BREAKPOINTS`] breakpoints.
    breakpoints: Vec<usize>,
}

impl Prefixes {
    fn of(segments: &[Segment]) -> Prefixes {
        let mut hashes = Vec::with_capacity(segments.len());
        let mut tokens = Vec::with_capacity(segments.len());
        let (mut hash, mut sum) = (PREFIX_SEED, 0u64);
        for segment in segments {
            hash = extend(hash, segment.id);
            sum = sum.saturating_add(segment.tokens);
            hashes.push(hash);
            tokens.push(sum);
        }
        let breakpoints = segments
            .iter()
            .enumerate()
            .filter(|(_, segment)| segment.breakpoint)
            .map(|(position, _)| position)
            .take(MAX_BREAKPOINTS)
            .collect();
        Prefixes {
            hashes,
            tokens,
            breakpoints,
        }
    }
}

/// The identity of the empty prefix.
const PREFIX_SEED: u64 = 0x243f_6a88_85a3_08d3;

/// The identity of `prefix` followed by a block of identity `id`.
fn extend(prefix: u64, id: u64) -> u64 {
    mix(prefix.rotate_left(23) ^ mix(id ^ 0x9e37_79b9_7f4a_7c15))
}

/// splitmix64's finaliser: a bijection that spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(id: u64, tokens: u64) -> Segment {
        Segment {
            id,
            tokens,
            breakpoint: false,
        }
    }

    fn marked(id: u64, tokens: u64) -> Segment {
        Segment {
            id,
            tokens,
            breakpoint: true,
        }
    }

    fn bill(input: u64, read: u64, write: u64) -> CacheBill {
        CacheBill {
            input_tokens: input,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cache_write_long_tokens: 0,
        }
    }

    #[test]
    fn anthropic_reads_the_same_prefix_and_writes_what_follows_up_to_the_last_breakpoint() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let history = [block(1, 500), marked(2, 1_500)];
        assert_eq!(cache.request(0.0, &history), bill(2_000, 0, 2_000));
        // The same prefix, one more turn marked, and an unmarked tail billed as plain input.
        let next = [
            block(1, 500),
            marked(2, 1_500),
            marked(3, 300),
            block(4, 40),
        ];
        assert_eq!(cache.request(10.0, &next), bill(2_340, 2_000, 300));
        // Again, unchanged: everything up to the last breakpoint is read.
        assert_eq!(cache.request(20.0, &next), bill(2_340, 2_300, 0));
    }

    #[test]
    fn anthropic_misses_after_a_changed_middle_block() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let first = [block(1, 600), block(2, 600), marked(3, 600)];
        assert_eq!(cache.request(0.0, &first), bill(1_800, 0, 1_800));
        let edited = [block(1, 600), block(9, 600), block(3, 600), marked(4, 10)];
        assert_eq!(cache.request(1.0, &edited), bill(1_810, 0, 1_810));
    }

    #[test]
    fn anthropic_reads_look_back_twenty_blocks_and_no_further() {
        let prefix = [block(1, 2_000), marked(2, 10)];
        let grown = |added: u64| {
            let mut segments = prefix.to_vec();
            segments[1].breakpoint = false;
            segments.extend((0..added).map(|i| block(100 + i, 5)));
            if let Some(last) = segments.last_mut() {
                last.breakpoint = true;
            }
            segments
        };
        let mut cache = PromptCache::new(CacheRules::anthropic());
        cache.request(0.0, &prefix);
        // 20 blocks later the old breakpoint is the 20th boundary before the new one: read.
        assert_eq!(cache.request(1.0, &grown(20)), bill(2_110, 2_010, 100));

        let mut cache = PromptCache::new(CacheRules::anthropic());
        cache.request(0.0, &prefix);
        // 21 blocks later it is out of reach: a miss, everything written again.
        assert_eq!(cache.request(1.0, &grown(21)), bill(2_115, 0, 2_115));

        // A second breakpoint within reach of the old one rescues the read.
        let mut cache = PromptCache::new(CacheRules::anthropic());
        cache.request(0.0, &prefix);
        let mut rescued = grown(21);
        rescued[12].breakpoint = true;
        assert_eq!(cache.request(1.0, &rescued), bill(2_115, 2_010, 105));
    }

    #[test]
    fn anthropic_entries_expire_after_their_ttl_and_a_hit_refreshes_them() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let prompt = [marked(1, 2_000)];
        assert_eq!(cache.request(0.0, &prompt).cache_write_tokens, 2_000);
        assert_eq!(cache.request(299.0, &prompt).cache_read_tokens, 2_000);
        // 598 s after the write, but only 299 s after the last hit: still live.
        assert_eq!(cache.request(598.0, &prompt).cache_read_tokens, 2_000);
        // 301 s of silence: expired, written again.
        assert_eq!(cache.request(899.0, &prompt), bill(2_000, 0, 2_000));

        let mut cache = PromptCache::new(CacheRules::anthropic_1h());
        cache.request(0.0, &prompt);
        assert_eq!(cache.request(3_000.0, &prompt).cache_read_tokens, 2_000);
        assert_eq!(cache.request(6_601.0, &prompt).cache_read_tokens, 0);
    }

    #[test]
    fn a_one_hour_breakpoint_outlives_the_default_ttl() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let prompt = [marked(1, 2_000), marked(2, 2_000)];
        // The first breakpoint asks for an hour, the second takes the rules' 5 minutes:
        // both are written, the first 2,000 tokens at the hour's premium.
        let first = cache.request_with_ttls(0.0, &prompt, &[Some(3_600.0)]);
        assert_eq!(
            first,
            CacheBill {
                cache_write_long_tokens: 2_000,
                ..bill(4_000, 0, 4_000)
            }
        );
        assert_eq!(cache.request(400.0, &prompt), bill(4_000, 2_000, 2_000));
        // Read again, nothing is written at either premium.
        let again = cache.request_with_ttls(401.0, &prompt, &[Some(3_600.0)]);
        assert_eq!(again, bill(4_000, 4_000, 0));
        // The rules' own lifetime is never the longer one.
        let mut hour = PromptCache::new(CacheRules::anthropic_1h());
        let written = hour.request_with_ttls(0.0, &prompt, &[Some(3_600.0)]);
        assert_eq!(written, bill(4_000, 0, 4_000));
    }

    #[test]
    fn anthropic_never_caches_a_prefix_under_the_minimum() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let short = [block(1, 600), marked(2, 400)];
        assert_eq!(cache.request(0.0, &short), bill(1_000, 0, 0));
        assert_eq!(cache.request(1.0, &short), bill(1_000, 0, 0));
        // A short first breakpoint writes nothing; the long second one writes it all.
        let longer = [block(1, 600), marked(2, 400), marked(3, 100)];
        assert_eq!(cache.request(2.0, &longer), bill(1_100, 0, 1_100));
        let cache_of_opus = CacheRules::Anthropic {
            ttl_seconds: 300.0,
            min_tokens: 4_096,
            lookback: 20,
        };
        let mut cache = PromptCache::new(cache_of_opus);
        assert_eq!(cache.request(0.0, &[marked(1, 4_000)]), bill(4_000, 0, 0));
    }

    #[test]
    fn anthropic_honours_only_the_first_four_breakpoints() {
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let prompt: Vec<Segment> = (1..=5).map(|id| marked(id, 1_100)).collect();
        // The 5th breakpoint is ignored: its block is plain input.
        assert_eq!(cache.request(0.0, &prompt), bill(5_500, 0, 4_400));
        assert_eq!(cache.request(1.0, &prompt), bill(5_500, 4_400, 0));
        // A 5th breakpoint neither reads: the entry the first request wrote at block 9 is
        // not found when four earlier breakpoints come first.
        let mut cache = PromptCache::new(CacheRules::anthropic());
        let blocks: Vec<Segment> = std::iter::once(block(1, 2_000))
            .chain((2..=10).map(|id| block(id, 10)))
            .collect();
        let mut first = blocks.clone();
        first[9].breakpoint = true;
        assert_eq!(cache.request(0.0, &first), bill(2_090, 0, 2_090));
        let mut crowded = blocks;
        for position in [0, 1, 2, 3, 9] {
            crowded[position].breakpoint = true;
        }
        assert_eq!(cache.request(1.0, &crowded), bill(2_090, 0, 2_030));
    }

    #[test]
    fn openai_caches_from_1024_tokens_in_128_token_steps_and_bills_no_writes() {
        let mut cache = PromptCache::new(CacheRules::openai());
        let prompt = [block(1, 1_500), block(2, 500)];
        assert_eq!(cache.request(0.0, &prompt), bill(2_000, 0, 0));
        // The same 2,000 tokens: 15 steps of 128 read.
        assert_eq!(cache.request(1.0, &prompt), bill(2_000, 1_920, 0));
        // A shared prefix of 1,500 tokens: 11 steps of 128.
        assert_eq!(
            cache.request(2.0, &[block(1, 1_500), block(3, 800)]),
            bill(2_300, 1_408, 0)
        );
        // A shared prefix under 1,024 tokens is no hit.
        let mut cache = PromptCache::new(CacheRules::openai());
        cache.request(0.0, &[block(1, 1_000), block(2, 1_000)]);
        assert_eq!(
            cache.request(1.0, &[block(1, 1_000), block(3, 1_000)]),
            bill(2_000, 0, 0)
        );
        // A prompt under 1,024 tokens is never cached.
        let mut cache = PromptCache::new(CacheRules::openai());
        cache.request(0.0, &[block(1, 1_000)]);
        assert_eq!(cache.request(1.0, &[block(1, 1_000)]), bill(1_000, 0, 0));
    }

    #[test]
    fn automatic_caches_ignore_breakpoints_and_expire_after_their_ttl() {
        let mut cache = PromptCache::new(CacheRules::openai());
        let prompt = [marked(1, 1_024), block(2, 1_000)];
        cache.request(0.0, &prompt);
        assert_eq!(cache.request(599.0, &prompt).cache_read_tokens, 1_920);
        assert_eq!(cache.request(1_198.0, &prompt).cache_read_tokens, 1_920);
        assert_eq!(cache.request(1_800.0, &prompt).cache_read_tokens, 0);
        // A changed middle block: only the prefix before it is read.
        let edited = [marked(1, 1_024), block(3, 1_000), block(2, 1)];
        assert_eq!(cache.request(1_801.0, &edited), bill(2_025, 1_024, 0));
    }

    #[test]
    fn gemini_reads_the_whole_matching_prefix_without_steps() {
        let mut cache = PromptCache::new(CacheRules::gemini());
        let prompt = [block(1, 1_100), block(2, 7)];
        assert_eq!(cache.request(0.0, &prompt), bill(1_107, 0, 0));
        assert_eq!(cache.request(1.0, &prompt), bill(1_107, 1_107, 0));
        assert_eq!(
            cache.request(2.0, &[block(1, 1_100), block(3, 50)]),
            bill(1_150, 1_100, 0)
        );
        assert_eq!(cache.request(400.0, &prompt).cache_read_tokens, 0);
        let mut cache = PromptCache::new(CacheRules::gemini());
        cache.request(0.0, &[block(1, 1_000)]);
        assert_eq!(cache.request(1.0, &[block(1, 1_000)]).cache_read_tokens, 0);
    }

    #[test]
    fn an_empty_request_bills_nothing() {
        for rules in [
            CacheRules::anthropic(),
            CacheRules::openai(),
            CacheRules::gemini(),
        ] {
            assert_eq!(
                PromptCache::new(rules).request(0.0, &[]),
                CacheBill::default()
            );
        }
    }
}
