//! Squash on real tool outputs, per family: throughput over runs, and savings and
//! retention next to a head+tail truncation baseline (what agents without squash do:
//! keep the first and last bytes of an output).
//!
//! Savings and retention come from the eval's own code (`eval_core::evaluate` and its
//! probes); the baseline is scored with the same probes.

use std::collections::BTreeMap;

use pith_core::context::squash::SquashConfig;
use pith_core::TokenCounter;

use super::stats::Spread;
use crate::eval_core::{eval_family, evaluate, FamilyReport, Probes, ToolSample};

/// Bytes the truncation baseline keeps: squash's generic byte budget (3 000 by default),
/// half from the head and half from the tail.
pub fn baseline_budget(config: &SquashConfig) -> usize {
    config.generic_budget_bytes
}

/// Head + tail truncation to `budget` bytes with one `[N bytes omitted]` line.
pub fn head_tail(text: &str, budget: usize) -> String {
    if text.len() <= budget {
        return text.to_owned();
    }
    let mut head = budget / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - budget / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[{} bytes omitted]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The baseline's figures of one family.
#[derive(Debug, Clone, Default)]
pub struct BaselineFamily {
    /// Tokens after truncation.
    pub tokens_after: u64,
    /// What the probes found and what of it the truncation kept.
    pub probes: Probes,
}

/// One row of the squash table.
#[derive(Debug, Clone)]
pub struct SquashRow {
    /// Family name (eval rows) or `all`.
    pub family: String,
    /// Squash's eval figures.
    pub squash: FamilyReport,
    /// Throughput over runs, MB/s.
    pub mb_per_s: Option<Spread>,
    /// The truncation baseline.
    pub baseline: BaselineFamily,
}

/// Measures every family (and all together).
pub fn measure(samples: &[ToolSample], runs: usize, counter: &dyn TokenCounter) -> Vec<SquashRow> {
    let config = SquashConfig::default();
    let report = evaluate(samples, &config, counter);
    let budget = baseline_budget(&config);

    let mut baseline: BTreeMap<String, BaselineFamily> = BTreeMap::new();
    let mut seconds: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let above: Vec<&ToolSample> = samples
        .iter()
        .filter(|s| s.content.len() > config.floor_bytes)
        .collect();
    for sample in &above {
        let family = eval_family(&sample.command).to_owned();
        let cut = head_tail(&sample.content, budget);
        let (found, _) = Probes::of_output(&family, &sample.content, &cut);
        for key in [family.clone(), "all".to_owned()] {
            let b = baseline.entry(key).or_default();
            b.tokens_after += counter.count(&cut) as u64;
            // The same probes on the same families as the eval scores.
            b.probes.merge(&found);
        }
    }
    for _ in 0..runs {
        let mut run: BTreeMap<String, f64> = BTreeMap::new();
        for sample in &above {
            let (out, secs) = sample.squash_timed(&config);
            std::hint::black_box(out);
            *run.entry(eval_family(&sample.command).to_owned())
                .or_default() += secs;
            *run.entry("all".to_owned()).or_default() += secs;
        }
        for (family, secs) in run {
            seconds.entry(family).or_default().push(secs);
        }
    }
    let mut rows = Vec::new();
    let families = report
        .families
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(std::iter::once(("all".to_owned(), report.overall.clone())));
    for (family, squash) in families {
        let mb = squash.bytes_before as f64 / 1e6;
        let mb_per_s = seconds
            .get(&family)
            .and_then(|s| Spread::of(s))
            .map(|s| s.map(|t| if t > 0.0 { mb / t } else { f64::INFINITY }));
        rows.push(SquashRow {
            baseline: baseline.remove(&family).unwrap_or_default(),
            family,
            squash,
            mb_per_s,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_within_the_budget_and_says_how_much_it_cut() {
        let text = format!("HEAD{}TAIL", "x".repeat(10_000));
        let cut = head_tail(&text, 100);
        assert!(cut.starts_with("HEAD") && cut.ends_with("TAIL"));
        assert!(cut.contains("[9908 bytes omitted]"), "{cut}");
        assert_eq!(head_tail("short", 100), "short");
    }

    #[test]
    fn head_tail_never_splits_a_character() {
        let text = "é".repeat(1_000);
        let cut = head_tail(&text, 101);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
    }
}
