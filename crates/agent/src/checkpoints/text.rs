//! The words of a rewind, the same in every front-end (the REPL's `/rewind`, `pith
//! rewind`): the turns to pick from, and what a plan does before it is done.

use pith_session::Turn;

use crate::checkpoints::rewind::RewindPlan;

/// One line per turn: its number, when it was sent (UTC), the first line of its message
/// and the files it changed.
pub fn turn_lines(turns: &[Turn]) -> Vec<String> {
    turns
        .iter()
        .map(|turn| {
            let files = if turn.files.is_empty() {
                String::new()
            } else {
                format!("  [{}]", turn.files.join(", "))
            };
            format!(
                "{:>4}  {}  {}{files}",
                turn.number,
                short_time(&turn.ts),
                turn.preview
            )
        })
        .collect()
}

/// What `plan` does: its headline, then one line per path it restores, finds changed
/// outside pith, or leaves as it is, and where the conversation continues from.
pub fn plan_lines(plan: &RewindPlan) -> Vec<String> {
    let mut lines = vec![plan.headline()];
    let writes = plan.writes();
    if plan.mode.rewinds_code() && writes.is_empty() {
        lines.push("  no file to restore".to_owned());
    }
    lines.extend(writes.into_iter().map(|path| format!("  restore {path}")));
    lines.extend(
        plan.changed_outside()
            .into_iter()
            .map(|path| format!("  changed outside pith since: {path}")),
    );
    lines.extend(
        plan.skipped()
            .into_iter()
            .map(|path| format!("  skipped, left as it is: {path}")),
    );
    if plan.mode.rewinds_conversation() {
        lines.push(format!(
            "  the conversation continues from before turn {}",
            plan.turn.number
        ));
    }
    lines
}

/// A record's `ts` (`2026-12-02T02:14:34.123Z`) as `2026-12-02 02:14 UTC`; any other
/// text as it is.
pub fn short_time(ts: &str) -> String {
    let well_formed = ts.len() >= 16
        && ts.is_char_boundary(16)
        && ts.as_bytes().get(10) == Some(&b'T')
        && ts.ends_with('Z');
    if well_formed {
        format!("{} {} UTC", &ts[..10], &ts[11..16])
    } else {
        ts.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(number: u64, preview: &str, files: &[&str]) -> Turn {
        Turn {
            number,
            seq: number * 10,
            ts: "2026-12-02T02:14:34.123Z".into(),
            preview: preview.into(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    #[test]
    fn the_list_shows_number_time_preview_and_files() {
        let lines = turn_lines(&[
            turn(1, "write v2", &["a.txt", "b.txt"]),
            turn(2, "talk", &[]),
        ]);
        assert_eq!(
            lines,
            [
                "   1  2026-12-02 02:14 UTC  write v2  [a.txt, b.txt]",
                "   2  2026-12-02 02:14 UTC  talk"
            ]
        );
    }

    #[test]
    fn odd_timestamps_are_shown_as_they_are() {
        assert_eq!(short_time("yesterday"), "yesterday");
        assert_eq!(
            short_time("2026-12-02T02:14:34+01:00"),
            "2026-12-02T02:14:34+01:00"
        );
        assert_eq!(short_time("ééééééééééééééééZ"), "ééééééééééééééééZ");
    }
}
