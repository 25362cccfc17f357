//! Usage is evidence, not truth: how pith weighs the input tokens a server reports
//! against its own count of the request it sent.
//!
//! Tokenizers really differ (Claude's counts 10–30% more than o200k; images and tool
//! schemas are counted differently by every provider), so a report that differs from
//! pith's count is normal. A report far outside that, though, says more about the server
//! than about the request: a proxy that adds its own context, a server that counts only
//! uncached tokens, or one that reports a fixed number. So:
//!
//! - a report within the plausible band (by default [`PLAUSIBLE_RATIO_MIN`]× to
//!   [`PLAUSIBLE_RATIO_MAX`]× pith's count; `[context] usage_ratio_min` / `max`) is
//!   trusted: the estimate anchors on the report, and its ratio, when it is within the
//!   default band, becomes the conversation's calibration factor;
//! - a report outside the band is not anchored on; the decision uses pith's own count
//!   times the factor last learned (1 until a plausible report arrives).
//!
//! A report can also be in the band and still say nothing about the request: a server (or
//! proxy) that reports the same figure whatever it is sent. pith notices the experiment a
//! rewrite runs for free: when a compaction, a prune or a fit cut its count of the
//! request by [`UNRESPONSIVE_DROP_PERCENT`]% or more and the server's next report is
//! within [`UNRESPONSIVE_TOLERANCE_PERCENT`]% of the one before, the server's usage does
//! not follow what it is sent ([`Evidence::Unresponsive`]): for the rest of the
//! conversation no report is anchored on, and the factor goes back to 1.
//!
//! A wider band is for servers known to report more than the request holds (a gateway
//! that adds its own hidden context): their reports are anchored on, but a ratio outside
//! the default band never becomes the calibration factor.

use serde::Serialize;

/// A rewrite that cut pith's count of the request by at least this much is an
/// experiment the server's next report must follow.
pub const UNRESPONSIVE_DROP_PERCENT: u64 = 30;

/// A report within this much of the one before such a rewrite did not follow it.
pub const UNRESPONSIVE_TOLERANCE_PERCENT: u64 = 2;

/// The smallest reported/counted ratio taken as evidence.
pub const PLAUSIBLE_RATIO_MIN: f64 = 0.5;
/// The largest reported/counted ratio taken as evidence.
pub const PLAUSIBLE_RATIO_MAX: f64 = 2.0;

/// What one usage report says, weighed against pith's count of the same request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Evidence {
    /// Within the band: the report stands for the request.
    Plausible {
        /// Reported input tokens divided by pith's count.
        ratio: f64,
    },
    /// Outside the band: the report is not anchored on.
    Implausible {
        /// Input tokens the server reported.
        reported: u64,
        /// pith's count of the request it sent.
        counted: u64,
    },
    /// The server reported the same figure after a rewrite cut the request: its usage
    /// does not follow the request, and is not believed again in this conversation.
    Unresponsive {
        /// What it reported, before and after.
        reported: u64,
        /// pith's count of the request before the rewrite.
        counted_before: u64,
        /// pith's count after it.
        counted_after: u64,
    },
}

impl Evidence {
    /// Weighs `reported` input tokens against pith's count `counted` of the same request,
    /// with the default band.
    pub fn judge(reported: u64, counted: u64) -> Self {
        Self::judge_within(reported, counted, Band::default())
    }

    /// Weighs `reported` against `counted` within `band`.
    pub fn judge_within(reported: u64, counted: u64, band: Band) -> Self {
        let ratio = reported as f64 / counted.max(1) as f64;
        if (band.min..=band.max).contains(&ratio) {
            Self::Plausible { ratio }
        } else {
            Self::Implausible { reported, counted }
        }
    }

    /// True for [`Evidence::Plausible`].
    pub fn is_plausible(&self) -> bool {
        matches!(self, Self::Plausible { .. })
    }
}

/// Which reported/counted ratios are taken as evidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Band {
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Default for Band {
    fn default() -> Self {
        Self {
            min: PLAUSIBLE_RATIO_MIN,
            max: PLAUSIBLE_RATIO_MAX,
        }
    }
}

/// The conversation's calibration: how many of the server's tokens one of pith's counted
/// tokens stands for, learned from the latest plausible report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    factor: f64,
    band: Band,
    /// The last (reported, counted) of a request of the history.
    last: Option<(u64, u64)>,
    /// That pair as it was when the history was last rewritten: the next report must
    /// follow the rewrite.
    before_rewrite: Option<(u64, u64)>,
    /// The server's usage did not follow a rewrite: no report is believed any more.
    deaf: bool,
}

impl Default for Calibration {
    fn default() -> Self {
        Self::within(Band::default())
    }
}

impl Calibration {
    /// A calibration that believes reports within `band`.
    pub fn within(band: Band) -> Self {
        Self {
            factor: 1.0,
            band,
            last: None,
            before_rewrite: None,
            deaf: false,
        }
    }

    /// True once the server's usage did not follow a rewrite ([`Evidence::Unresponsive`]).
    pub fn is_deaf(&self) -> bool {
        self.deaf
    }

    /// The history was rewritten (a compaction, a prune, a fit): the next report of a
    /// request of the history must follow it.
    pub fn mark_rewrite(&mut self) {
        if !self.deaf {
            self.before_rewrite = self.last;
        }
    }

    /// Takes a report for a request of the history (see [`Calibration::observe`]), and
    /// checks it against the rewrite before it: a server that reports the same figure for a
    /// request cut by a third is not believed again.
    pub fn observe_history(&mut self, reported: u64, counted: u64) -> Evidence {
        if self.deaf {
            return Evidence::Implausible { reported, counted };
        }
        if let Some((before, counted_before)) = self.before_rewrite.take() {
            let unmoved = reported.abs_diff(before).saturating_mul(100)
                <= before.saturating_mul(UNRESPONSIVE_TOLERANCE_PERCENT);
            let cut = counted.saturating_mul(100)
                <= counted_before.saturating_mul(100 - UNRESPONSIVE_DROP_PERCENT);
            if unmoved && cut && before > 0 {
                self.deaf = true;
                self.factor = 1.0;
                return Evidence::Unresponsive {
                    reported,
                    counted_before,
                    counted_after: counted,
                };
            }
        }
        self.last = Some((reported, counted));
        self.observe(reported, counted)
    }

    /// The band of believed reports.
    pub fn band(&self) -> Band {
        self.band
    }

    /// Takes a report of `reported` input tokens for a request pith counted at
    /// `counted`: a plausible one (within the band) is evidence, and when its ratio is
    /// within the default band it becomes the factor; an implausible one changes nothing.
    pub fn observe(&mut self, reported: u64, counted: u64) -> Evidence {
        if self.deaf {
            return Evidence::Implausible { reported, counted };
        }
        let evidence = Evidence::judge_within(reported, counted, self.band);
        if let Evidence::Plausible { ratio } = evidence {
            if (PLAUSIBLE_RATIO_MIN..=PLAUSIBLE_RATIO_MAX).contains(&ratio) {
                self.factor = ratio;
            }
        }
        evidence
    }

    /// The server refused a request pith counted at `counted` tokens as longer than its
    /// `window`: its tokens are at least `window / counted` of pith's, and at least a
    /// quarter more than believed so far (at most [`PLAUSIBLE_RATIO_MAX`]). Returns the
    /// new factor.
    pub fn learn_refusal(&mut self, counted: u64, window: u64) -> f64 {
        let needed = window as f64 / counted.max(1) as f64;
        self.factor = (self.factor * 1.25)
            .max(needed)
            .clamp(PLAUSIBLE_RATIO_MIN, PLAUSIBLE_RATIO_MAX);
        self.factor
    }

    /// Server tokens per counted token (1 until a plausible report arrived).
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// `counted` tokens in the server's terms, rounded up.
    pub fn scale(&self, counted: u64) -> u64 {
        (counted as f64 * self.factor).ceil() as u64
    }

    /// The most counted tokens that stay within `calibrated` tokens in the server's terms
    /// (the inverse of [`Calibration::scale`], rounded down).
    pub fn unscale(&self, calibrated: u64) -> u64 {
        (calibrated as f64 / self.factor).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_is_half_to_twice_the_count() {
        assert!(Evidence::judge(5_000, 10_000).is_plausible());
        assert!(Evidence::judge(20_000, 10_000).is_plausible());
        assert!(Evidence::judge(13_000, 10_000).is_plausible());
        assert_eq!(
            Evidence::judge(4_999, 10_000),
            Evidence::Implausible {
                reported: 4_999,
                counted: 10_000
            }
        );
        assert!(!Evidence::judge(20_001, 10_000).is_plausible());
        assert!(!Evidence::judge(100, 3_000).is_plausible(), "a fixed 100");
        assert!(
            !Evidence::judge(30_000, 2_000).is_plausible(),
            "a fixed 30k"
        );
        assert!(!Evidence::judge(5, 0).is_plausible());
    }

    #[test]
    fn only_plausible_reports_move_the_factor() {
        let mut calibration = Calibration::default();
        assert_eq!(calibration.scale(1_000), 1_000);
        calibration.observe(13_000, 10_000);
        assert_eq!(calibration.factor(), 1.3);
        assert_eq!(calibration.scale(1_000), 1_300);
        assert_eq!(calibration.unscale(1_300), 1_000);
        calibration.observe(100, 10_000);
        assert_eq!(
            calibration.factor(),
            1.3,
            "an implausible report is ignored"
        );
    }

    #[test]
    fn a_server_whose_report_does_not_follow_a_rewrite_is_not_believed_again() {
        let mut calibration = Calibration::default();
        assert!(calibration.observe_history(30_000, 16_000).is_plausible());
        assert_eq!(calibration.factor(), 1.875);
        calibration.mark_rewrite();
        assert_eq!(
            calibration.observe_history(30_000, 6_000),
            Evidence::Unresponsive {
                reported: 30_000,
                counted_before: 16_000,
                counted_after: 6_000
            }
        );
        assert!(calibration.is_deaf());
        assert_eq!(calibration.factor(), 1.0);
        assert!(!calibration.observe_history(12_000, 12_000).is_plausible());
        assert!(!calibration.observe(12_000, 12_000).is_plausible());
    }

    #[test]
    fn a_report_that_follows_the_rewrite_is_evidence_as_usual() {
        let mut calibration = Calibration::default();
        calibration.observe_history(20_000, 16_000);
        calibration.mark_rewrite();
        assert!(calibration.observe_history(7_500, 6_000).is_plausible());
        // A rewrite that cut little proves nothing either way.
        calibration.mark_rewrite();
        assert!(calibration.observe_history(7_500, 5_800).is_plausible());
        assert!(!calibration.is_deaf());
    }

    #[test]
    fn a_refusal_raises_the_factor_to_what_the_window_implies() {
        let mut calibration = Calibration::default();
        assert_eq!(calibration.learn_refusal(20_000, 32_000), 1.6);
        assert_eq!(
            calibration.learn_refusal(31_000, 32_000),
            2.0,
            "a quarter more, held"
        );
        let mut calibration = Calibration::default();
        assert_eq!(calibration.learn_refusal(1_000, 32_000), 2.0);
    }

    #[test]
    fn a_wider_band_anchors_more_but_the_factor_stays_in_the_default_band() {
        let mut calibration = Calibration::within(Band {
            min: 0.5,
            max: 100.0,
        });
        assert!(calibration.observe(30_000, 1_000).is_plausible());
        assert_eq!(calibration.factor(), 1.0, "30× is believed, not learned");
        assert!(calibration.observe(1_500, 1_000).is_plausible());
        assert_eq!(calibration.factor(), 1.5);
        assert!(!calibration.observe(300_000, 1_000).is_plausible());
    }

    #[test]
    fn scaling_never_undercounts_and_unscaling_never_overshoots() {
        let mut calibration = Calibration::default();
        calibration.observe(11_111, 10_000);
        for counted in [0, 1, 7, 999, 28_672] {
            let scaled = calibration.scale(counted);
            assert!(scaled as f64 >= counted as f64 * calibration.factor());
            assert!(calibration.scale(calibration.unscale(scaled)) <= scaled);
        }
    }
}
