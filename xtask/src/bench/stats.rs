//! Min / median / max of repeated measurements, and their markdown rendering.

use serde::Serialize;

/// The spread of one figure over runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest value.
    pub min: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// Number of runs.
    pub runs: usize,
}

impl Spread {
    /// The spread of `values`; `None` when there are none (or a NaN).
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Self {
            min: sorted[0],
            median,
            max: sorted[n - 1],
            runs: n,
        })
    }

    /// Every value mapped through `f` (monotonic decreasing maps swap min and max).
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Self {
        let (a, b) = (f(self.min), f(self.max));
        Self {
            min: a.min(b),
            median: f(self.median),
            max: a.max(b),
            runs: self.runs,
        }
    }

    /// `median (min – max)` with `decimals` decimals.
    pub fn show(&self, decimals: usize) -> String {
        format!(
            "{:.d$} ({:.d$} – {:.d$})",
            self.median,
            self.min,
            self.max,
            d = decimals
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_reports_min_median_max_of_odd_and_even_counts() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.runs), (1.0, 2.0, 3.0, 3));
        let s = Spread::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert!(Spread::of(&[]).is_none());
        assert!(Spread::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn mapping_through_a_reciprocal_keeps_min_below_max() {
        let s = Spread::of(&[1.0, 2.0, 4.0]).unwrap().map(|t| 1.0 / t);
        assert_eq!((s.min, s.median, s.max), (0.25, 0.5, 1.0));
        assert_eq!(s.show(2), "0.50 (0.25 – 1.00)");
    }
}
