//! Reading a simple command's words: its program once the wrappers and assignments in
//! front of it are gone, a program's base name, and its operands.

/// The words of a simple command from its program on: leading `VAR=value` assignments
/// and wrappers (`sudo`, `time`, `env`, `nice`, `nohup`, `command`, `exec`, `stdbuf`,
/// `timeout N`, with their options) removed, and the grouping words `{`, `}` and `!`
/// left out.
pub fn program_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut rest: Vec<&str> = words
        .into_iter()
        .filter(|w| *w != "{" && *w != "}" && *w != "!")
        .collect();
    loop {
        match rest.first().copied() {
            Some(w) if is_assignment(w) => {
                rest.remove(0);
            }
            Some("sudo" | "time" | "nice" | "nohup" | "command" | "exec" | "stdbuf") => {
                rest.remove(0);
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest.remove(0);
                }
            }
            Some("env") => {
                rest.remove(0);
                while rest
                    .first()
                    .is_some_and(|w| w.starts_with('-') || is_assignment(w))
                {
                    rest.remove(0);
                }
            }
            Some("timeout") => {
                rest.remove(0);
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest.remove(0);
                }
                if rest.first().is_some_and(|w| {
                    w.chars()
                        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 's' | 'm' | 'h'))
                }) {
                    rest.remove(0);
                }
            }
            _ => return rest,
        }
    }
}

/// True for a `NAME=value` word (a shell variable assignment).
pub fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// A program's name without its directory: `/usr/bin/grep` → `grep`.
pub fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The operands among a program's arguments: the words that are not options, the word
/// after each option in `with_value` being that option's value.
pub fn operands<'a>(args: &[&'a str], with_value: &[&str]) -> Vec<&'a str> {
    let mut operands = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        if with_value.contains(word) {
            iter.next();
        } else if !word.starts_with('-') {
            operands.push(*word);
        }
    }
    operands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_and_assignments_before_the_program_are_removed() {
        assert_eq!(
            program_words("LC_ALL=C time grep -n x".split(' ')),
            ["grep", "-n", "x"]
        );
        assert_eq!(
            program_words("sudo -E env -i A=1 nohup timeout --foreground 5m pytest -x".split(' ')),
            ["pytest", "-x"]
        );
        assert_eq!(program_words("{ ! cat a.py".split(' ')), ["cat", "a.py"]);
        assert!(program_words("A=1 B=2".split(' ')).is_empty());
        assert!(!is_assignment("1A=2") && !is_assignment("=x") && is_assignment("_a1=b"));
    }

    #[test]
    fn base_names_and_operands() {
        assert_eq!(base_name("/usr/bin/grep"), "grep");
        assert_eq!(base_name("./runtests.py"), "runtests.py");
        assert_eq!(base_name("cat"), "cat");
        assert_eq!(
            operands(&["-n", "5", "-v", "a.py", "b.py"], &["-n"]),
            ["a.py", "b.py"]
        );
        assert_eq!(operands(&["-s", "10", "f"], &["-s", "--size"]), ["f"]);
    }
}
