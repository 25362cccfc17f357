//! Guarding one streamed answer against a server that will not stop.
//!
//! Servers do not always honour the output cap they are sent (llama.cpp-based ones are
//! known to ignore it), and small models loop on one line. pith therefore enforces the cap
//! itself, counting the answer as it arrives — text and reasoning deltas with the token
//! counter, tool-argument bytes at four bytes a token — and ends a degenerate stream that
//! repeats the same line or sentence [`LoopOptions::repeated_line_limit`] times in a row.
//! Both cut the answer short ([`Truncation`]); what arrived up to the cut is kept. A stream
//! that sends only content-free events (pings, empty deltas) for longer than the
//! no-content timeout is an error; thinking deltas count as content.
//!
//! [`LoopOptions::repeated_line_limit`]: crate::tool_loop::LoopOptions

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use pith_core::thousands;
use pith_core::TokenCounter;

use crate::tool_loop::spend::SpendGuard;
use crate::wire::adapter::StreamChunk;
use crate::wire::error::ProviderError;

/// Why an answer ended before the model finished it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Truncation {
    /// pith's output cap was passed; `tokens` counted when it stopped reading.
    OutputCap {
        /// The cap in force.
        cap: u64,
    },
    /// The same line or sentence came `times` times in a row.
    RepeatedLine {
        /// How many times in a row.
        times: usize,
    },
    /// The provider itself stopped at its output limit (`length`, `max_tokens`,
    /// `max_output_tokens`).
    ProviderLimit {
        /// The provider's stop reason.
        reason: String,
    },
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Truncation::OutputCap { cap } => {
                write!(f, "output cap ({} tokens)", thousands(*cap))
            }
            Truncation::RepeatedLine { times } => {
                write!(f, "the same line repeated {times} times in a row")
            }
            Truncation::ProviderLimit { reason } => {
                write!(f, "the provider's output limit ({reason})")
            }
        }
    }
}

impl Truncation {
    /// The provider's stop reasons that mean "cut at the output limit".
    pub fn from_stop_reason(reason: Option<&str>) -> Option<Truncation> {
        let reason = reason?;
        matches!(reason, "length" | "max_tokens" | "max_output_tokens").then(|| {
            Truncation::ProviderLimit {
                reason: reason.to_owned(),
            }
        })
    }
}

/// The bounds one request's answer is held to.
#[derive(Clone, Copy)]
pub struct GuardLimits<'a> {
    /// Counts text and reasoning.
    pub counter: &'a dyn TokenCounter,
    /// Output tokens at which the answer is cut.
    pub output_cap: u64,
    /// Identical lines or sentences in a row that end the answer.
    pub repeated_line_limit: usize,
    /// Longest stretch without content before the request fails.
    pub no_content: Duration,
    /// The job's ceilings, consulted before every attempt (`None`: no ceilings).
    pub spend: Option<&'a SpendGuard>,
}

/// Longest line or sentence compared for repetition; a longer one never repeats.
const MAX_UNIT_CHARS: usize = 4_000;

/// Follows one answer as it streams.
pub(crate) struct OutputGuard<'a> {
    limits: GuardLimits<'a>,
    spent: u64,
    unit: String,
    unit_too_long: bool,
    last_unit: Option<u64>,
    run: usize,
    last_content: Instant,
}

impl<'a> OutputGuard<'a> {
    pub(crate) fn new(limits: GuardLimits<'a>) -> Self {
        Self {
            limits,
            spent: 0,
            unit: String::new(),
            unit_too_long: false,
            last_unit: None,
            run: 0,
            last_content: Instant::now(),
        }
    }

    /// Output tokens counted so far (text, reasoning, tool arguments).
    pub(crate) fn counted(&self) -> u64 {
        self.spent
    }

    /// Takes one chunk: `Ok(Some(_))` when the answer must end here, `Err` when the
    /// stream has sent nothing but keep-alives for too long.
    pub(crate) fn observe(
        &mut self,
        chunk: &StreamChunk,
    ) -> Result<Option<Truncation>, ProviderError> {
        match chunk {
            StreamChunk::Text(delta) | StreamChunk::Reasoning(delta) => {
                self.last_content = Instant::now();
                self.spent += self.limits.counter.count(delta) as u64;
                if let Some(times) = self.follow_text(delta) {
                    return Ok(Some(Truncation::RepeatedLine { times }));
                }
            }
            StreamChunk::ArgumentBytes { bytes, .. } => {
                self.last_content = Instant::now();
                self.spent += (*bytes as u64).div_ceil(4);
            }
            StreamChunk::ToolCall(_) | StreamChunk::ReasoningPart(_) => {
                self.last_content = Instant::now()
            }
            StreamChunk::Progress | StreamChunk::Usage(_) | StreamChunk::Done { .. } => {
                if self.last_content.elapsed() > self.limits.no_content {
                    return Err(ProviderError::NoContentTimeout(self.limits.no_content));
                }
            }
        }
        if self.spent > self.limits.output_cap {
            return Ok(Some(Truncation::OutputCap {
                cap: self.limits.output_cap,
            }));
        }
        Ok(None)
    }

    /// Feeds text to the repetition detector; `Some(run)` when a unit repeated enough.
    fn follow_text(&mut self, delta: &str) -> Option<usize> {
        let mut rest = delta;
        while let Some(end) = rest.find(['\n', '.', '!', '?']) {
            let (piece, after) = rest.split_at(end + 1);
            self.push_unit(piece);
            if let Some(run) = self.end_unit() {
                return Some(run);
            }
            rest = after;
        }
        self.push_unit(rest);
        None
    }

    fn push_unit(&mut self, piece: &str) {
        if self.unit_too_long {
            return;
        }
        if self.unit.len() + piece.len() > MAX_UNIT_CHARS {
            self.unit_too_long = true;
            self.unit.clear();
        } else {
            self.unit.push_str(piece);
        }
    }

    /// Closes the current unit; `Some(run)` when it made the run reach the limit.
    fn end_unit(&mut self) -> Option<usize> {
        let too_long = std::mem::take(&mut self.unit_too_long);
        let unit = std::mem::take(&mut self.unit);
        let trimmed = unit.trim();
        if too_long {
            self.last_unit = None;
            self.run = 0;
            return None;
        }
        if trimmed.len() <= 1 {
            return None;
        }
        let mut hasher = DefaultHasher::new();
        trimmed.hash(&mut hasher);
        let key = hasher.finish();
        if self.last_unit == Some(key) {
            self.run += 1;
        } else {
            self.last_unit = Some(key);
            self.run = 1;
        }
        (self.run >= self.limits.repeated_line_limit).then_some(self.run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{BpeCounter, Encoding};

    fn guard(counter: &BpeCounter, cap: u64) -> OutputGuard<'_> {
        OutputGuard::new(GuardLimits {
            counter,
            output_cap: cap,
            repeated_line_limit: 50,
            no_content: Duration::from_secs(600),
            spend: None,
        })
    }

    #[test]
    fn the_output_cap_counts_text_reasoning_and_argument_bytes() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let mut guard = guard(&counter, 100);
        for i in 0..30 {
            let text = StreamChunk::Text(format!("word{i} "));
            assert_eq!(guard.observe(&text).unwrap(), None, "{i}");
        }
        let args = StreamChunk::ArgumentBytes {
            call: 1,
            bytes: 400,
        };
        assert_eq!(
            guard.observe(&args).unwrap(),
            Some(Truncation::OutputCap { cap: 100 })
        );
    }

    #[test]
    fn fifty_identical_lines_in_a_row_end_the_answer_and_varied_ones_do_not() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let mut varied = guard(&counter, u64::MAX);
        for i in 0..200 {
            let chunk = StreamChunk::Text(format!("line {i} is different\n"));
            assert_eq!(varied.observe(&chunk).unwrap(), None);
        }
        let mut looping = guard(&counter, u64::MAX);
        let mut ended = None;
        for i in 0..100 {
            // Split mid-line, the way deltas arrive.
            for piece in ["Echo echo ", "echo.\n"] {
                if let Some(truncation) = looping
                    .observe(&StreamChunk::Text(piece.to_owned()))
                    .unwrap()
                {
                    ended = Some((i, truncation));
                }
            }
            if ended.is_some() {
                break;
            }
        }
        assert_eq!(ended, Some((49, Truncation::RepeatedLine { times: 50 })));
    }

    #[test]
    fn sentences_repeated_on_one_line_count_too() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let mut guard = guard(&counter, u64::MAX);
        let text = "I will fix it. ".repeat(60);
        assert_eq!(
            guard.observe(&StreamChunk::Text(text)).unwrap(),
            Some(Truncation::RepeatedLine { times: 50 })
        );
    }

    #[test]
    fn only_keep_alives_for_too_long_is_an_error() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let mut guard = OutputGuard::new(GuardLimits {
            counter: &counter,
            output_cap: 1_000,
            repeated_line_limit: 50,
            no_content: Duration::from_millis(20),
            spend: None,
        });
        assert!(guard.observe(&StreamChunk::Progress).unwrap().is_none());
        std::thread::sleep(Duration::from_millis(40));
        assert!(matches!(
            guard.observe(&StreamChunk::Progress),
            Err(ProviderError::NoContentTimeout(_))
        ));
        // Content resets the clock.
        guard
            .observe(&StreamChunk::Reasoning("thinking".into()))
            .unwrap();
        assert!(guard.observe(&StreamChunk::Progress).unwrap().is_none());
    }

    #[test]
    fn provider_stop_reasons_that_mean_cut_off() {
        for reason in ["length", "max_tokens", "max_output_tokens"] {
            assert!(Truncation::from_stop_reason(Some(reason)).is_some());
        }
        assert!(Truncation::from_stop_reason(Some("stop")).is_none());
        assert!(Truncation::from_stop_reason(None).is_none());
    }
}
