//! The kept-lines plan every line-based squasher produces, and its rendering.
//!
//! A squasher decides, per original line, whether it is kept; a kept line may stand for a
//! run of identical lines (`(×N)`). [`render`] turns that plan into text with exactly one
//! `[N lines omitted]` marker per gap, and guarantees the accounting the issue demands:
//! lines represented by kept lines + lines in gap markers = original line count.
//!
//! Each kept line also has a priority; [`fit`] uses it to cut a plan down to a byte
//! budget (lowest priority first) when one applies, and [`KeepPlan::absorb`] places the
//! plan of one step of a multi-step output into the plan of the whole output.

use super::marker::omitted_marker;

/// Splits text into lines on `\n`; a final newline does not start an extra empty line.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() && text.is_empty() {
        return Vec::new();
    }
    body.split('\n').collect()
}

/// How much a kept line matters when [`fit`] must cut a plan to a byte budget: lower is
/// kept longer.
pub(crate) mod priority {
    /// Failing test ids, summaries, failure block headers, step commands.
    pub const MUST: u8 = 0;
    /// Failure details: assertion and exception lines, panics, failure messages.
    pub const DETAIL: u8 = 1;
    /// What a squasher keeps without saying more (the default).
    pub const NORMAL: u8 = 2;
    /// Last traceback frames, captured output tails.
    pub const FRAME: u8 = 3;
    /// Context lines and the rest of a failure block.
    pub const CONTEXT: u8 = 4;
}

/// Which original lines survive.
#[derive(Debug, Clone)]
pub(crate) struct KeepPlan {
    /// True for a kept line.
    pub keep: Vec<bool>,
    /// For a kept line, how many consecutive original lines (itself included) it stands
    /// for; lines after it inside that run are neither shown nor counted as omitted.
    pub run: Vec<u32>,
    /// Replacement text for a kept line that was shortened (index, new text), sorted by
    /// index.
    pub shortened: Vec<(usize, String)>,
    /// For a kept line whose run was joined into its (shortened) text, true: the run is
    /// shown by that text alone, without the `(×N)` suffix of identical lines.
    pub joined: Vec<bool>,
    /// For a kept line, its [`priority`] ([`priority::NORMAL`] unless set).
    pub priority: Vec<u8>,
}

impl KeepPlan {
    /// A plan that drops every line.
    pub fn none(len: usize) -> Self {
        Self {
            keep: vec![false; len],
            run: vec![1; len],
            shortened: Vec::new(),
            joined: vec![false; len],
            priority: vec![priority::NORMAL; len],
        }
    }

    /// Marks line `i` (if it exists) as kept.
    pub fn keep(&mut self, i: usize) {
        if let Some(k) = self.keep.get_mut(i) {
            *k = true;
        }
    }

    /// Marks line `i` (if it exists) as kept with priority `p`; a line kept twice keeps
    /// the higher priority (the lower number).
    pub fn keep_at(&mut self, i: usize, p: u8) {
        if i >= self.keep.len() {
            return;
        }
        self.priority[i] = if self.keep[i] {
            self.priority[i].min(p)
        } else {
            p
        };
        self.keep[i] = true;
    }

    /// Copies `sub`, a plan over the lines `offset..offset + sub.keep.len()`, into this
    /// plan.
    pub fn absorb(&mut self, offset: usize, sub: KeepPlan) {
        let len = sub.keep.len();
        if offset + len > self.keep.len() {
            return;
        }
        self.keep[offset..offset + len].copy_from_slice(&sub.keep);
        self.run[offset..offset + len].copy_from_slice(&sub.run);
        self.joined[offset..offset + len].copy_from_slice(&sub.joined);
        self.priority[offset..offset + len].copy_from_slice(&sub.priority);
        self.shortened
            .extend(sub.shortened.into_iter().map(|(i, s)| (i + offset, s)));
        self.shortened.sort_by_key(|(i, _)| *i);
    }
}

/// The rendered result of a plan.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    /// The squashed text.
    pub text: String,
    /// Original lines represented by kept lines (runs count fully).
    pub represented: usize,
    /// Original lines counted in gap markers.
    pub omitted: usize,
    /// Lines in `text`.
    pub lines_after: usize,
}

/// A gap whose lines take at most this many bytes is shown instead of marked: the marker
/// would cost more than the lines.
const CHEAPER_THAN_MARKER: usize = 20;

/// Renders `plan` over `lines`, with one marker line per gap.
pub(crate) fn render(lines: &[&str], plan: &KeepPlan) -> Rendered {
    let mut out = String::new();
    let mut represented = 0usize;
    let mut omitted = 0usize;
    let mut lines_after = 0usize;
    let mut shortened = plan.shortened.iter().peekable();
    let mut i = 0usize;
    let n = lines.len();
    let push = |out: &mut String, s: &str, lines_after: &mut usize| {
        out.push_str(s);
        out.push('\n');
        *lines_after += 1;
    };
    while i < n {
        if plan.keep[i] {
            while shortened.peek().is_some_and(|(j, _)| *j < i) {
                shortened.next();
            }
            let text = match shortened.peek() {
                Some((j, s)) if *j == i => s.as_str(),
                _ => lines[i],
            };
            let run = (plan.run[i].max(1) as usize).min(n - i);
            if run > 1 && !plan.joined[i] {
                push(&mut out, &format!("{text} (×{run})"), &mut lines_after);
            } else {
                push(&mut out, text, &mut lines_after);
            }
            represented += run;
            i += run;
            continue;
        }
        let start = i;
        while i < n && !plan.keep[i] {
            i += 1;
        }
        let gap = i - start;
        let gap_bytes: usize = lines[start..i].iter().map(|l| l.len() + 1).sum();
        if gap_bytes <= CHEAPER_THAN_MARKER {
            for line in &lines[start..i] {
                push(&mut out, line, &mut lines_after);
            }
            represented += gap;
        } else {
            push(&mut out, &omitted_marker(gap), &mut lines_after);
            omitted += gap;
        }
    }
    if out.ends_with('\n') {
        out.pop();
    }
    Rendered {
        text: out,
        represented,
        omitted,
        lines_after,
    }
}

/// A cut shorter than this costs about as many tokens as the `…[N chars omitted]` marker
/// that replaces it, so it is not made.
const MIN_CUT_CHARS: usize = 40;

/// Shortens `line` to about `max_chars` characters, keeping its head and tail and naming
/// how many characters were cut; `None` when it already fits or when fewer than
/// [`MIN_CUT_CHARS`] characters would go (the marker would cost what it saves).
pub(crate) fn shorten(line: &str, max_chars: usize) -> Option<String> {
    let total = line.chars().count();
    if total <= max_chars || max_chars < 8 || total - max_chars < MIN_CUT_CHARS {
        return None;
    }
    let head = max_chars * 3 / 4;
    let tail = max_chars - head;
    let cut = total - head - tail;
    let head_end = line.char_indices().nth(head).map_or(line.len(), |(b, _)| b);
    let tail_start = line
        .char_indices()
        .nth(total - tail)
        .map_or(line.len(), |(b, _)| b);
    Some(format!(
        "{}{}{}",
        &line[..head_end],
        super::marker::chars_omitted_suffix(cut),
        &line[tail_start..]
    ))
}

/// Marks runs of consecutive lines that `same(i, j)` (line indices) considers equal in
/// `plan.run`, so that a kept first line stands for the whole run. Returns the run start
/// for every line.
pub(crate) fn mark_runs(
    lines: &[&str],
    plan: &mut KeepPlan,
    same: impl Fn(usize, usize) -> bool,
) -> Vec<usize> {
    let mut run_start = vec![0usize; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && same(i, j) {
            j += 1;
        }
        plan.run[i] = u32::try_from(j - i).unwrap_or(u32::MAX);
        for slot in run_start.iter_mut().take(j).skip(i) {
            *slot = i;
        }
        i = j;
    }
    run_start
}

/// Bytes a gap marker line costs at most in an output of `lines` lines (newline
/// included); also bounds a gap shown verbatim because it is cheaper than its marker.
fn marker_cost(lines: usize) -> usize {
    (omitted_marker(lines.max(1)).len() + 1).max(CHEAPER_THAN_MARKER)
}

/// The bytes kept line `i` renders to (newline included), an upper bound.
fn kept_cost(lines: &[&str], plan: &KeepPlan, shortened: &[Option<&str>], i: usize) -> usize {
    let text = shortened[i].unwrap_or(lines[i]);
    let run = plan.run[i].max(1) as usize;
    let suffix = if run > 1 && !plan.joined[i] {
        format!(" (×{run})").len()
    } else {
        0
    };
    text.len() + suffix + 1
}

/// Cuts `plan` until it renders to at most `budget` bytes: whole priority classes go,
/// lowest first, then lines of the class that no longer fits entirely come back, taken
/// alternately from its start and its end (head and tail survive), until one does not
/// fit. The byte count uses an upper bound of every marker's length, so the rendered
/// text never exceeds the budget (lines are not cut here: callers shorten long lines
/// first).
pub(crate) fn fit(lines: &[&str], plan: &mut KeepPlan, budget: usize) {
    let n = lines.len();
    let mut shortened: Vec<Option<&str>> = vec![None; n];
    for (i, s) in &plan.shortened {
        if let Some(slot) = shortened.get_mut(*i) {
            *slot = Some(s.as_str());
        }
    }
    let marker = marker_cost(n);
    let end_of = |plan: &KeepPlan, i: usize| (i + plan.run[i].max(1) as usize).min(n);
    // Kept units in order: (start, cost, priority).
    let units: Vec<(usize, usize, u8)> = (0..n)
        .filter(|&i| plan.keep[i])
        .map(|i| (i, kept_cost(lines, plan, &shortened, i), plan.priority[i]))
        .collect();
    let total = |chosen: &[bool]| -> usize {
        let mut bytes = 0;
        let mut next_free = 0usize;
        for (k, &(start, cost, _)) in units.iter().enumerate() {
            if !chosen[k] {
                continue;
            }
            if start > next_free {
                bytes += marker;
            }
            bytes += cost;
            next_free = end_of(plan, start);
        }
        if next_free < n {
            bytes += marker;
        }
        bytes
    };
    let mut chosen = vec![true; units.len()];
    if total(&chosen) <= budget {
        return;
    }
    let mut classes: Vec<u8> = units.iter().map(|u| u.2).collect();
    classes.sort_unstable();
    classes.dedup();
    // The highest class that still fits whole, with every lower-priority class dropped.
    let mut partial: Option<u8> = None;
    for &class in classes.iter().rev() {
        for (k, u) in units.iter().enumerate() {
            chosen[k] = u.2 < class;
        }
        if total(&chosen) <= budget {
            partial = Some(class);
            break;
        }
    }
    let class = partial.unwrap_or(classes[0]);
    if partial.is_none() {
        chosen.iter_mut().for_each(|c| *c = false);
    }
    // Add the class's units back, alternating from its start and its end, while they fit.
    let members: Vec<usize> = (0..units.len()).filter(|&k| units[k].2 == class).collect();
    let mut order = Vec::with_capacity(members.len());
    let (mut lo, mut hi) = (0usize, members.len());
    while lo < hi {
        order.push(members[lo]);
        lo += 1;
        if lo < hi {
            hi -= 1;
            order.push(members[hi]);
        }
    }
    // Adding a unit costs its line and at most one more marker (it splits one gap in
    // two), so `used` stays an upper bound of the rendered size.
    let mut used = total(&chosen);
    for k in order {
        let added = units[k].1 + marker;
        if used + added > budget {
            break;
        }
        used += added;
        chosen[k] = true;
    }
    for (k, &(start, _, _)) in units.iter().enumerate() {
        if !chosen[k] {
            plan.keep[start] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gap_gets_one_marker_and_counts_add_up() {
        let lines: Vec<String> = (0..50).map(|i| format!("line number {i} here")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut plan = KeepPlan::none(refs.len());
        plan.keep(0);
        for i in 10..=12 {
            plan.keep(i);
        }
        plan.keep(49);
        let r = render(&refs, &plan);
        assert_eq!(r.represented + r.omitted, 50);
        assert_eq!(r.text.matches("lines omitted]").count(), 2, "{}", r.text);
        assert!(r.text.contains("[9 lines omitted]"));
        assert!(r.text.contains("[36 lines omitted]"));
    }

    #[test]
    fn runs_render_once_with_a_count() {
        let refs = vec!["a", "err: timeout", "err: timeout", "err: timeout", "b"];
        let mut plan = KeepPlan::none(refs.len());
        mark_runs(&refs, &mut plan, |a, b| refs[a] == refs[b]);
        plan.keep = vec![true; 5];
        let r = render(&refs, &plan);
        assert_eq!(r.text, "a\nerr: timeout (×3)\nb");
        assert_eq!(r.represented, 5);
    }

    #[test]
    fn shortening_keeps_head_and_tail_on_char_boundaries() {
        let line = "é".repeat(300);
        let s = shorten(&line, 100).unwrap();
        assert!(s.contains("[200 chars omitted]"), "{s}");
        assert!(shorten("short", 100).is_none());
        // Cutting 30 characters would cost what the marker costs.
        assert!(shorten(&"x".repeat(130), 100).is_none());
    }
}
