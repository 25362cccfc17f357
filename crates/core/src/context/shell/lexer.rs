//! The one shell lexer of pith: a command line split the way the shell splits it, into
//! simple commands with their words, redirections and heredoc bodies.
//!
//! It knows quotes, escapes, `&&`, `||`, `;`, `|`, `|&`, `&`, newlines, subshell
//! parentheses, comments, line continuations, `$(…)` and backquotes (kept verbatim in
//! their word), process substitutions, redirections (`>`, `>>`, `<`, `&>`, `N>`, `>&N`)
//! and heredocs, whose bodies are read as the input of their command, never as
//! commands. Each [`SimpleCommand`] also carries its text as written, for rules that
//! judge a command by its raw words. It never fails: a broken line (an unterminated
//! quote, a heredoc without its end) gives what could be read.
//!
//! Used by squash (which squasher an output gets, a grep's pattern) and by the session
//! ledger (what a command reads and writes).

use std::collections::HashMap;

/// Splits `line` into its simple commands, in order (see the module docs).
pub fn simple_commands(line: &str) -> Vec<SimpleCommand> {
    Lexer::new(line).run()
}

/// One simple command of a line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Its words as the shell reads them: quotes removed, escapes resolved, `$(…)`,
    /// backquotes and process substitutions kept verbatim. Redirections are not words.
    pub words: Vec<String>,
    /// Its file redirections, in order.
    pub redirects: Vec<Redirect>,
    /// The body of the command's first heredoc (or here-string).
    pub heredoc: Option<String>,
    /// Its standard input is the previous command's output.
    pub piped: bool,
    /// The command as written, quotes and redirections included: from its first word or
    /// redirection to its last, without separators, comments or heredoc bodies.
    pub text: String,
}

/// A file redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// True for output (`>`, `>>`, `&>`, `N>`), false for input.
    pub output: bool,
    /// The file (quotes removed).
    pub target: String,
}

/// What the next word is.
enum Pending {
    Word,
    OutputTarget,
    InputTarget,
    Descriptor,
    Heredoc { strip_tabs: bool },
    HereString,
}

/// A heredoc whose body starts after the current line.
struct OpenHeredoc {
    delimiter: String,
    strip_tabs: bool,
    command: usize,
}

/// Splits a command line into simple commands (see the module docs).
struct Lexer<'a> {
    line: &'a str,
    chars: Vec<char>,
    /// The byte offset in `line` of each char, and `line.len()` after the last.
    offsets: Vec<usize>,
    /// The first and one-past-the-last char of the current command's tokens.
    span: Option<(usize, usize)>,
    at: usize,
    commands: Vec<SimpleCommand>,
    current: SimpleCommand,
    pending: Pending,
    heredocs: Vec<OpenHeredoc>,
    bodies: HashMap<usize, String>,
}

impl<'a> Lexer<'a> {
    fn new(line: &'a str) -> Self {
        Self {
            line,
            chars: line.chars().collect(),
            offsets: line
                .char_indices()
                .map(|(at, _)| at)
                .chain(std::iter::once(line.len()))
                .collect(),
            span: None,
            at: 0,
            commands: Vec::new(),
            current: SimpleCommand::default(),
            pending: Pending::Word,
            heredocs: Vec::new(),
            bodies: HashMap::new(),
        }
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    /// Runs `token`, which consumes one token of the current command from `at`, and
    /// widens the command's span over it.
    fn token(&mut self, token: impl FnOnce(&mut Self)) {
        let start = self.at;
        token(self);
        let end = self.at;
        self.span = Some(match self.span {
            Some((first, _)) => (first, end),
            None => (start, end),
        });
    }

    fn run(mut self) -> Vec<SimpleCommand> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.at += 1,
                '\n' => {
                    self.at += 1;
                    self.finish(false);
                    self.read_heredoc_bodies();
                }
                '\\' if self.peek(1) == Some('\n') => self.at += 2,
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                ';' | '(' | ')' => {
                    self.at += 1;
                    self.finish(false);
                }
                '&' if self.peek(1) == Some('>') => self.token(|lexer| {
                    lexer.at += 2;
                    if lexer.peek(0) == Some('>') {
                        lexer.at += 1;
                    }
                    lexer.pending = Pending::OutputTarget;
                }),
                '&' => {
                    self.at += if self.peek(1) == Some('&') { 2 } else { 1 };
                    self.finish(false);
                }
                '|' if self.peek(1) == Some('|') => {
                    self.at += 2;
                    self.finish(false);
                }
                '|' => {
                    self.at += if self.peek(1) == Some('&') { 2 } else { 1 };
                    self.finish(true);
                }
                '>' | '<' => self.token(Self::redirect),
                c if c.is_ascii_digit() && self.descriptor_redirect() => {}
                _ => self.token(|lexer| {
                    let word = lexer.word();
                    lexer.take_word(word);
                }),
            }
        }
        self.finish(false);
        for (index, body) in self.bodies.drain() {
            if let Some(command) = self.commands.get_mut(index) {
                command.heredoc.get_or_insert(body);
            }
        }
        self.commands
    }

    /// `2>`, `2>>`, `1>&2`: a descriptor number directly before a redirection.
    fn descriptor_redirect(&mut self) -> bool {
        let mut end = self.at;
        while self.chars.get(end).is_some_and(char::is_ascii_digit) {
            end += 1;
        }
        if matches!(self.chars.get(end), Some('>' | '<')) {
            self.token(|lexer| {
                lexer.at = end;
                lexer.redirect();
            });
            true
        } else {
            false
        }
    }

    fn redirect(&mut self) {
        let first = self.chars[self.at];
        self.at += 1;
        if first == '<' {
            match (self.peek(0), self.peek(1)) {
                (Some('<'), Some('<')) => {
                    self.at += 2;
                    self.pending = Pending::HereString;
                }
                (Some('<'), Some('-')) => {
                    self.at += 2;
                    self.pending = Pending::Heredoc { strip_tabs: true };
                }
                (Some('<'), _) => {
                    self.at += 1;
                    self.pending = Pending::Heredoc { strip_tabs: false };
                }
                (Some('('), _) => {
                    // Process substitution `<(…)`: a command, not a file.
                    let mut word = String::from("<");
                    self.balanced(&mut word);
                    self.current.words.push(word);
                }
                _ => self.pending = Pending::InputTarget,
            }
            return;
        }
        match self.peek(0) {
            Some('>') | Some('|') => self.at += 1,
            Some('&') => {
                self.at += 1;
                self.pending = Pending::Descriptor;
                return;
            }
            Some('(') => {
                let mut word = String::from(">");
                self.balanced(&mut word);
                self.current.words.push(word);
                return;
            }
            _ => {}
        }
        self.pending = Pending::OutputTarget;
    }

    fn take_word(&mut self, word: String) {
        match std::mem::replace(&mut self.pending, Pending::Word) {
            Pending::Word => self.current.words.push(word),
            Pending::OutputTarget => self.current.redirects.push(Redirect {
                output: true,
                target: word,
            }),
            Pending::InputTarget => self.current.redirects.push(Redirect {
                output: false,
                target: word,
            }),
            Pending::Descriptor => {
                // `>&2`, `>&-`: a descriptor; `>&file` is bash's `&>file`.
                if !word.chars().all(|c| c.is_ascii_digit() || c == '-') {
                    self.current.redirects.push(Redirect {
                        output: true,
                        target: word,
                    });
                }
            }
            Pending::Heredoc { strip_tabs } => self.heredocs.push(OpenHeredoc {
                delimiter: word,
                strip_tabs,
                command: self.commands.len(),
            }),
            Pending::HereString => {
                self.current.heredoc.get_or_insert(word);
            }
        }
    }

    /// Ends the current simple command; the next one reads its input from it when
    /// `pipe`.
    fn finish(&mut self, pipe: bool) {
        self.pending = Pending::Word;
        let next = SimpleCommand {
            piped: pipe,
            ..SimpleCommand::default()
        };
        let mut done = std::mem::replace(&mut self.current, next);
        if let Some((first, end)) = self.span.take() {
            done.text = self.line[self.offsets[first]..self.offsets[end]].to_owned();
        }
        if !done.words.is_empty() || !done.redirects.is_empty() || done.heredoc.is_some() {
            self.commands.push(done);
        }
    }

    /// Reads the bodies of the heredocs opened on the line just ended.
    fn read_heredoc_bodies(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while let Some(line) = self.next_line() {
                let candidate = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if candidate.trim_end() == heredoc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            self.bodies.entry(heredoc.command).or_insert(body);
        }
    }

    fn next_line(&mut self) -> Option<String> {
        if self.at >= self.chars.len() {
            return None;
        }
        let start = self.at;
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.at += 1;
        }
        let line: String = self.chars[start..self.at].iter().collect();
        if self.peek(0) == Some('\n') {
            self.at += 1;
        }
        Some(line)
    }

    /// One word: quotes removed, escapes resolved, `$(…)` and backquotes kept verbatim.
    fn word(&mut self) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '>' | '<' | ')' => break,
                '(' if word.is_empty() || !word.ends_with(['$', '<', '>', '=']) => break,
                '\'' => {
                    self.at += 1;
                    while let Some(q) = self.peek(0) {
                        self.at += 1;
                        if q == '\'' {
                            break;
                        }
                        word.push(q);
                    }
                }
                '"' => {
                    self.at += 1;
                    while let Some(q) = self.peek(0) {
                        self.at += 1;
                        match q {
                            '"' => break,
                            '\\' => match self.peek(0) {
                                Some(e @ ('"' | '\\' | '$' | '`')) => {
                                    self.at += 1;
                                    word.push(e);
                                }
                                Some('\n') => self.at += 1,
                                _ => word.push('\\'),
                            },
                            _ => word.push(q),
                        }
                    }
                }
                '\\' => {
                    self.at += 1;
                    match self.peek(0) {
                        Some('\n') => self.at += 1,
                        Some(e) => {
                            self.at += 1;
                            word.push(e);
                        }
                        None => {}
                    }
                }
                '$' if self.peek(1) == Some('(') => {
                    word.push('$');
                    self.at += 1;
                    self.balanced(&mut word);
                }
                '(' => self.balanced(&mut word),
                '`' => {
                    word.push('`');
                    self.at += 1;
                    while let Some(q) = self.peek(0) {
                        self.at += 1;
                        word.push(q);
                        if q == '`' {
                            break;
                        }
                    }
                }
                _ => {
                    word.push(c);
                    self.at += 1;
                }
            }
        }
        if word.is_empty() && self.at < self.chars.len() {
            // Never stall on a character no rule consumed.
            let c = self.chars[self.at];
            if !matches!(c, ' ' | '\t' | '\r' | '\n') {
                word.push(c);
            }
            self.at += 1;
        }
        word
    }

    /// Copies a parenthesised group (from its `(`) into `word`, verbatim.
    fn balanced(&mut self, word: &mut String) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            self.at += 1;
            word.push(c);
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each simple command's words.
    fn words(line: &str) -> Vec<Vec<String>> {
        simple_commands(line).into_iter().map(|c| c.words).collect()
    }

    /// Each simple command's text as written, and whether it is piped.
    fn texts(line: &str) -> Vec<(String, bool)> {
        simple_commands(line)
            .into_iter()
            .map(|c| (c.text, c.piped))
            .collect()
    }

    #[test]
    fn shell_words_follow_quotes_and_escapes() {
        assert_eq!(
            words(r#"grep -C 2 "a \"b\" c" 'd e' f\ g"#),
            [["grep", "-C", "2", "a \"b\" c", "d e", "f g"]]
        );
        assert_eq!(
            words(r#"echo 'a\b' "c\d" "e\$f" \; "x;y" 'p|q'"#),
            [["echo", "a\\b", "c\\d", "e$f", ";", "x;y", "p|q"]]
        );
        assert_eq!(
            words("echo $(cd a; ls) `date; id` <(sort x)"),
            [["echo", "$(cd a; ls)", "`date; id`", "<(sort x)"]]
        );
    }

    #[test]
    fn separators_split_simple_commands_and_pipes_mark_them() {
        let line = "cd a && make || echo no; cat x | grep y |& tee z & sleep 1\n(cd b) # done";
        assert_eq!(
            texts(line),
            [
                ("cd a".to_owned(), false),
                ("make".to_owned(), false),
                ("echo no".to_owned(), false),
                ("cat x".to_owned(), false),
                ("grep y".to_owned(), true),
                ("tee z".to_owned(), true),
                ("sleep 1".to_owned(), false),
                ("cd b".to_owned(), false),
            ]
        );
        assert_eq!(
            words("a \\\n  b;c"),
            [vec!["a", "b"], vec!["c"]],
            "a line continuation joins"
        );
    }

    #[test]
    fn redirections_are_not_words_and_the_text_keeps_them() {
        let commands = simple_commands("python run.py 2>&1 >> log.txt < in.txt &> all");
        let [command] = commands.as_slice() else {
            panic!("{commands:?}");
        };
        assert_eq!(command.words, ["python", "run.py"]);
        assert_eq!(
            command.redirects,
            [
                Redirect {
                    output: true,
                    target: "log.txt".into()
                },
                Redirect {
                    output: false,
                    target: "in.txt".into()
                },
                Redirect {
                    output: true,
                    target: "all".into()
                },
            ]
        );
        assert_eq!(
            command.text,
            "python run.py 2>&1 >> log.txt < in.txt &> all"
        );
    }

    #[test]
    fn heredoc_bodies_are_input_not_commands() {
        let line = "cat <<'EOF' > out.py\nrm -rf /\nEOF\npython out.py <<-END\n\tdata\n\tEND\ngrep x <<< 'here'";
        let commands = simple_commands(line);
        let texts: Vec<&str> = commands.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "cat <<'EOF' > out.py",
                "python out.py <<-END",
                "grep x <<< 'here'"
            ]
        );
        assert_eq!(commands[0].heredoc.as_deref(), Some("rm -rf /\n"));
        assert_eq!(commands[1].heredoc.as_deref(), Some("\tdata\n"));
        assert_eq!(commands[2].heredoc.as_deref(), Some("here"));
    }

    #[test]
    fn broken_lines_give_what_could_be_read() {
        assert_eq!(words("cat 'unterminated"), [["cat", "unterminated"]]);
        assert_eq!(words("echo \"open \\"), [["echo", "open \\"]]);
        assert_eq!(words("cat <<EOF\nbody without end"), [["cat"]]);
        assert_eq!(
            simple_commands("cat <<EOF\nbody without end")[0]
                .heredoc
                .as_deref(),
            Some("body without end\n")
        );
        for line in [
            "",
            "$(((",
            "a >",
            "| | ;; && >& <<< ((",
            "echo `x",
            "2>",
            "\\",
            "'",
            "\"",
        ] {
            let _ = simple_commands(line);
        }
        assert!(simple_commands("   \n  # only a comment\n").is_empty());
    }

    #[test]
    fn the_text_is_sliced_on_character_boundaries() {
        assert_eq!(
            texts("echo 'héllo wörld' && cat ✓.txt"),
            [
                ("echo 'héllo wörld'".to_owned(), false),
                ("cat ✓.txt".to_owned(), false)
            ]
        );
    }
}
