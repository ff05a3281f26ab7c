//! A small shell-word lexer: splits a command string into the simple commands
//! a POSIX shell (bash) would run, with the quoting removed.
//!
//! It understands what the rm guard needs and no more: single and double
//! quotes, `$'…'`, backslash escapes and line continuations, comments, the
//! operators `|` `||` `&&` `&` `;` `;;` `|&` `(` `)` and newlines,
//! redirections (their targets are not command words), here-documents (their
//! bodies are data), `$( … )`, backticks, `<( … )` / `>( … )`, `${ … }` and
//! `$(( … ))`. The commands inside substitutions are returned as commands of
//! their own, in the same flat list. It does not expand anything: a word that
//! holds an expansion is marked [`Word::dynamic`] and keeps a placeholder.

/// How deep substitutions and nested command strings may go before the lexer
/// gives up (a guard against stack exhaustion, not a shell limit).
pub const MAX_DEPTH: usize = 32;

/// One shell word with its quoting removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word's value (expansions replaced by a placeholder such as `$(…)`).
    pub text: String,
    /// The word holds a parameter, command or arithmetic expansion.
    pub dynamic: bool,
    /// Length of the prefix of `text` that came from plain unquoted
    /// characters (before the first quote, escape or expansion).
    plain_prefix: usize,
}

impl Word {
    /// A plain word, as if typed without quotes (for tests and for callers
    /// that build words themselves).
    pub fn plain(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            dynamic: false,
            plain_prefix: text.len(),
        }
    }

    /// `NAME=value` or `NAME+=value` with an unquoted name: a variable
    /// assignment when it precedes a command.
    pub fn is_assignment(&self) -> bool {
        let Some(eq) = self.text.find('=') else {
            return false;
        };
        if eq == 0 || eq >= self.plain_prefix {
            return false;
        }
        let name = self.text[..eq]
            .strip_suffix('+')
            .unwrap_or(&self.text[..eq]);
        is_name(name)
    }
}

/// A simple command: its words in order, redirections left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    pub words: Vec<Word>,
}

impl SimpleCommand {
    /// The words joined by spaces, for messages.
    pub fn display(&self) -> String {
        self.words
            .iter()
            .map(|word| word.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Why a command string could not be lexed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LexError {
    #[error("substitutions nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Split `source`, found `depth` levels deep (0 for the command itself, more
/// for a `bash -c` string), into its simple commands, substitutions
/// included. Unterminated quotes or substitutions run to the end of the
/// string (the shell will reject them anyway).
pub fn simple_commands_at(source: &str, depth: usize) -> Result<Vec<SimpleCommand>, LexError> {
    if depth > MAX_DEPTH {
        return Err(LexError::TooDeep);
    }
    let chars: Vec<char> = source.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        pos: 0,
        depth,
        out: Vec::new(),
        heredocs: Vec::new(),
    };
    lexer.commands(false)?;
    Ok(lexer.out)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A here-document waiting for the end of its line.
struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    /// Unquoted delimiter: the body undergoes substitution.
    expands: bool,
}

/// Where a word ended.
#[derive(Debug, PartialEq, Eq)]
enum WordEnd {
    /// Whitespace, an operator or the end of input.
    Normal,
    /// Directly before `<` or `>`: an all-digit word here is a file
    /// descriptor number, not an argument.
    BeforeRedirect,
}

struct Lexer<'a> {
    chars: &'a [char],
    pos: usize,
    depth: usize,
    out: Vec<SimpleCommand>,
    heredocs: Vec<Heredoc>,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn finish(&mut self, current: &mut SimpleCommand) {
        if !current.words.is_empty() {
            self.out.push(std::mem::take(current));
        }
    }

    /// Read commands until the end of input, or (when `in_substitution`)
    /// until the `)` that closes it.
    fn commands(&mut self, in_substitution: bool) -> Result<(), LexError> {
        let mut current = SimpleCommand::default();
        let mut parens = 0usize;
        // The next word is a redirection target; `Some(true)` for a
        // here-document delimiter (`<<-` when the flag says strip tabs).
        let mut redirect: Option<Option<bool>> = None;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '\n' => {
                    self.pos += 1;
                    self.finish(&mut current);
                    self.heredoc_bodies()?;
                }
                '#' => self.skip_comment(),
                ';' | '&' | '|' => {
                    self.pos += 1;
                    if c == '&' && self.eat('>') {
                        self.eat('>');
                        redirect = Some(None);
                        continue;
                    }
                    if c != ';' {
                        self.eat(c);
                    }
                    if c == '|' {
                        self.eat('&');
                    }
                    if c == ';' {
                        self.eat(';');
                        self.eat('&');
                    }
                    self.finish(&mut current);
                }
                '(' => {
                    self.pos += 1;
                    parens += 1;
                    self.finish(&mut current);
                }
                ')' => {
                    self.pos += 1;
                    self.finish(&mut current);
                    if parens == 0 {
                        if in_substitution {
                            return Ok(());
                        }
                    } else {
                        parens -= 1;
                    }
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    // Process substitution: an argument whose commands run.
                    self.pos += 2;
                    self.nested_commands()?;
                    current.words.push(Word {
                        text: format!("{c}(…)"),
                        dynamic: true,
                        plain_prefix: 0,
                    });
                }
                '<' | '>' => redirect = Some(self.redirection_operator()),
                _ => {
                    let (word, end) = self.word()?;
                    let is_fd = end == WordEnd::BeforeRedirect
                        && !word.text.is_empty()
                        && word.plain_prefix == word.text.len()
                        && word.text.chars().all(|d| d.is_ascii_digit());
                    match redirect.take() {
                        Some(Some(strip_tabs)) => self.heredocs.push(Heredoc {
                            expands: word.plain_prefix == word.text.len() && !word.dynamic,
                            delimiter: word.text,
                            strip_tabs,
                        }),
                        Some(None) => {}
                        None if is_fd => {}
                        None => current.words.push(word),
                    }
                }
            }
        }
        self.finish(&mut current);
        Ok(())
    }

    /// Consume a redirection operator at `<` or `>`. Returns `Some(strip)`
    /// for a here-document (`<<`, `<<-`), `None` for the others.
    fn redirection_operator(&mut self) -> Option<bool> {
        let first = self.peek();
        self.pos += 1;
        if first == Some('<') {
            if self.eat('<') {
                if self.eat('<') {
                    return None; // here-string: the next word is data
                }
                return Some(self.eat('-'));
            }
            if !self.eat('&') {
                self.eat('>');
            }
        } else if !self.eat('>') && !self.eat('&') {
            self.eat('|');
        }
        None
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.pos += 1;
        }
    }

    /// Lex `$( … )` or `<( … )` contents (the opener already consumed) into
    /// commands of their own.
    fn nested_commands(&mut self) -> Result<(), LexError> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(LexError::TooDeep);
        }
        self.depth += 1;
        let result = self.commands(true);
        self.depth -= 1;
        result
    }

    /// Lex a separate string (a backtick body, a here-document body) found
    /// one level deeper, adding its commands to ours.
    fn nested_source(&mut self, source: &str, expansions_only: bool) -> Result<(), LexError> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(LexError::TooDeep);
        }
        let chars: Vec<char> = source.chars().collect();
        let mut inner = Lexer {
            chars: &chars,
            pos: 0,
            depth: self.depth + 1,
            out: Vec::new(),
            heredocs: Vec::new(),
        };
        if expansions_only {
            inner.expansions_only()?;
        } else {
            inner.commands(false)?;
        }
        self.out.append(&mut inner.out);
        Ok(())
    }

    /// Scan text that is not commands but may hold substitutions (an
    /// unquoted here-document body).
    fn expansions_only(&mut self) -> Result<(), LexError> {
        let mut sink = Word::plain("");
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '$' => self.dollar(&mut sink)?,
                '`' => self.backtick(&mut sink)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Read the bodies of the here-documents opened on the line just ended.
    fn heredoc_bodies(&mut self) -> Result<(), LexError> {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while self.pos < self.chars.len() {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                self.pos = (self.pos + 1).min(self.chars.len());
                let compared = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if compared == heredoc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if heredoc.expands {
                self.nested_source(&body, true)?;
            }
        }
        Ok(())
    }

    /// Read one word starting at the current position.
    fn word(&mut self) -> Result<(Word, WordEnd), LexError> {
        let mut word = Word {
            text: String::new(),
            dynamic: false,
            plain_prefix: usize::MAX,
        };
        let mut end = WordEnd::Normal;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | ')' => break,
                '<' | '>' => {
                    end = WordEnd::BeforeRedirect;
                    break;
                }
                '(' => {
                    if word.is_assignment() && word.text.ends_with('=') {
                        self.pos += 1;
                        self.array_body()?;
                        word.text.push_str("(…)");
                        continue;
                    }
                    break;
                }
                _ => {}
            }
            self.pos += 1;
            match c {
                '\\' => {
                    mark_special(&mut word);
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next) => {
                            self.pos += 1;
                            word.text.push(next);
                        }
                        None => word.text.push('\\'),
                    }
                }
                '\'' => {
                    mark_special(&mut word);
                    while let Some(q) = self.peek() {
                        self.pos += 1;
                        if q == '\'' {
                            break;
                        }
                        word.text.push(q);
                    }
                }
                '"' => {
                    mark_special(&mut word);
                    self.double_quoted(&mut word)?;
                }
                '$' => self.dollar(&mut word)?,
                '`' => self.backtick(&mut word)?,
                _ => word.text.push(c),
            }
        }
        if word.plain_prefix == usize::MAX {
            word.plain_prefix = word.text.len();
        }
        Ok((word, end))
    }

    /// `name=( … )`: array elements are words, not a command.
    fn array_body(&mut self) -> Result<(), LexError> {
        while let Some(c) = self.peek() {
            match c {
                ')' => {
                    self.pos += 1;
                    return Ok(());
                }
                ' ' | '\t' | '\n' => self.pos += 1,
                '(' | ';' | '&' | '|' | '<' | '>' => self.pos += 1,
                _ => {
                    self.word()?;
                }
            }
        }
        Ok(())
    }

    /// The inside of `"…"` (the opening quote consumed).
    fn double_quoted(&mut self, word: &mut Word) -> Result<(), LexError> {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '"' => return Ok(()),
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        self.pos += 1;
                        word.text.push(next);
                    }
                    _ => word.text.push('\\'),
                },
                '$' => self.dollar(word)?,
                '`' => self.backtick(word)?,
                _ => word.text.push(c),
            }
        }
        Ok(())
    }

    /// After a `$`: a quote form, a substitution, a parameter, or a plain `$`.
    ///
    /// Every nesting path (`${ … }` in `${ … }`, `$"…"` in `"…"`, `$( … )`)
    /// passes here, so the depth bound is kept here: hostile input cannot
    /// exhaust the stack.
    fn dollar(&mut self, word: &mut Word) -> Result<(), LexError> {
        if self.depth >= MAX_DEPTH {
            return Err(LexError::TooDeep);
        }
        self.depth += 1;
        let result = self.dollar_form(word);
        self.depth -= 1;
        result
    }

    fn dollar_form(&mut self, word: &mut Word) -> Result<(), LexError> {
        match self.peek() {
            Some('\'') => {
                self.pos += 1;
                mark_special(word);
                self.ansi_c_quoted(word);
            }
            Some('"') => {
                self.pos += 1;
                mark_special(word);
                self.double_quoted(word)?;
            }
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                mark_dynamic(word, "$((…))");
                self.skip_balanced('(', ')', 2);
            }
            Some('(') => {
                self.pos += 1;
                mark_dynamic(word, "$(…)");
                self.nested_commands()?;
            }
            Some('{') => {
                self.pos += 1;
                mark_dynamic(word, "${…}");
                self.braced_parameter()?;
            }
            Some(c) if c.is_ascii_digit() => {
                self.pos += 1;
                mark_dynamic(word, "$");
                word.text.push(c);
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                mark_dynamic(word, "$");
                while let Some(c) = self.peek() {
                    if !(c.is_ascii_alphanumeric() || c == '_') {
                        break;
                    }
                    word.text.push(c);
                    self.pos += 1;
                }
            }
            Some(c @ ('@' | '*' | '#' | '?' | '-' | '$' | '!')) => {
                self.pos += 1;
                mark_dynamic(word, "$");
                word.text.push(c);
            }
            _ => word.text.push('$'),
        }
        Ok(())
    }

    /// `${ … }` (opener consumed): skipped, but substitutions inside it run.
    fn braced_parameter(&mut self) -> Result<(), LexError> {
        let mut sink = Word::plain("");
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '}' => return Ok(()),
                '\\' => self.pos += 1,
                '\'' => {
                    while let Some(q) = self.peek() {
                        self.pos += 1;
                        if q == '\'' {
                            break;
                        }
                    }
                }
                '"' => self.double_quoted(&mut sink)?,
                '$' => self.dollar(&mut sink)?,
                '`' => self.backtick(&mut sink)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Skip to the close that balances `open_count` opens already consumed.
    fn skip_balanced(&mut self, open: char, close: char, open_count: usize) {
        let mut level = open_count;
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == open {
                level += 1;
            } else if c == close {
                level -= 1;
                if level == 0 {
                    return;
                }
            }
        }
    }

    /// A backtick substitution (opening backtick consumed): its body is
    /// unescaped and lexed as commands of its own.
    fn backtick(&mut self, word: &mut Word) -> Result<(), LexError> {
        mark_dynamic(word, "`…`");
        let mut body = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '`' => break,
                '\\' => match self.peek() {
                    Some(next @ ('`' | '\\' | '$')) => {
                        self.pos += 1;
                        body.push(next);
                    }
                    _ => body.push('\\'),
                },
                _ => body.push(c),
            }
        }
        self.nested_source(&body, false)
    }

    /// `$'…'` (opener consumed): backslash escapes decoded.
    fn ansi_c_quoted(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(next) = self.peek() else {
                        word.text.push('\\');
                        return;
                    };
                    self.pos += 1;
                    match next {
                        'n' => word.text.push('\n'),
                        't' => word.text.push('\t'),
                        'r' => word.text.push('\r'),
                        'x' => {
                            let value = self.radix_digits(16, 2);
                            push_code(word, value);
                        }
                        '0'..='7' => {
                            self.pos -= 1;
                            let value = self.radix_digits(8, 3);
                            push_code(word, value);
                        }
                        other => word.text.push(other),
                    }
                }
                _ => word.text.push(c),
            }
        }
    }

    fn radix_digits(&mut self, radix: u32, max: usize) -> Option<u32> {
        let mut value: Option<u32> = None;
        for _ in 0..max {
            let Some(digit) = self.peek().and_then(|c| c.to_digit(radix)) else {
                break;
            };
            self.pos += 1;
            value = Some(value.unwrap_or(0) * radix + digit);
        }
        value
    }
}

fn push_code(word: &mut Word, value: Option<u32>) {
    if let Some(c) = value.and_then(char::from_u32) {
        word.text.push(c);
    }
}

/// Record that quoting starts here (ends the plain prefix).
fn mark_special(word: &mut Word) {
    if word.plain_prefix == usize::MAX {
        word.plain_prefix = word.text.len();
    }
}

/// Record an expansion and put its placeholder in the text.
fn mark_dynamic(word: &mut Word, placeholder: &str) {
    mark_special(word);
    word.dynamic = true;
    word.text.push_str(placeholder);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn texts(source: &str) -> Vec<Vec<String>> {
        simple_commands_at(source, 0)
            .expect("lexes")
            .into_iter()
            .map(|command| command.words.into_iter().map(|w| w.text).collect())
            .collect()
    }

    #[test]
    fn splits_commands_and_removes_quoting() {
        let cases: &[(&str, &[&[&str]])] = &[
            ("ls -la", &[&["ls", "-la"]]),
            ("echo a && rm x", &[&["echo", "a"], &["rm", "x"]]),
            (
                "a | b || c; d & e |& f",
                &[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"]],
            ),
            ("a\nb", &[&["a"], &["b"]]),
            (r"\rm x", &[&["rm", "x"]]),
            ("'rm' x", &[&["rm", "x"]]),
            (r#"r"m" 'a b' "c\"d""#, &[&["rm", "a b", "c\"d"]]),
            ("echo hi # rm x", &[&["echo", "hi"]]),
            ("echo a\\\nb", &[&["echo", "ab"]]),
            ("$'\\x72m' x", &[&["rm", "x"]]),
            ("$'\\162m' x", &[&["rm", "x"]]),
            ("(cd a; rm x)", &[&["cd", "a"], &["rm", "x"]]),
            ("echo $(rm x) y", &[&["rm", "x"], &["echo", "$(…)", "y"]]),
            ("echo `rm x`", &[&["rm", "x"], &["echo", "`…`"]]),
            ("echo \"$(rm x)\"", &[&["rm", "x"], &["echo", "$(…)"]]),
            ("diff <(rm a) b", &[&["rm", "a"], &["diff", "<(…)", "b"]]),
            ("echo $((1 + (2)))", &[&["echo", "$((…))"]]),
            ("echo ${x:-$(rm y)}", &[&["rm", "y"], &["echo", "${…}"]]),
            ("echo $HOME/x", &[&["echo", "$HOME/x"]]),
        ];
        for (source, expected) in cases {
            let expected: Vec<Vec<String>> = expected
                .iter()
                .map(|words| words.iter().map(|w| (*w).to_owned()).collect())
                .collect();
            assert_eq!(texts(source), expected, "source: {source}");
        }
    }

    #[test]
    fn redirections_are_not_words() {
        let cases: &[(&str, &[&[&str]])] = &[
            ("echo a > rm", &[&["echo", "a"]]),
            ("echo a 2>/dev/null >> log", &[&["echo", "a"]]),
            ("cmd 2>&1 | tee out", &[&["cmd"], &["tee", "out"]]),
            ("cmd &> out", &[&["cmd"]]),
            ("cat < in", &[&["cat"]]),
            ("cat <<< 'rm x'", &[&["cat"]]),
            ("echo 2 > f", &[&["echo", "2"]]),
        ];
        for (source, expected) in cases {
            let expected: Vec<Vec<String>> = expected
                .iter()
                .map(|words| words.iter().map(|w| (*w).to_owned()).collect())
                .collect();
            assert_eq!(texts(source), expected, "source: {source}");
        }
    }

    #[test]
    fn heredoc_bodies_are_data_but_their_substitutions_run() {
        assert_eq!(
            texts("cat <<EOF\nrm x\nEOF\necho done"),
            vec![
                vec!["cat".to_owned()],
                vec!["echo".to_owned(), "done".to_owned()]
            ]
        );
        assert_eq!(
            texts("cat <<-'EOF'\n\t$(rm x)\n\tEOF"),
            vec![vec!["cat".to_owned()]]
        );
        assert_eq!(
            texts("cat <<EOF\n$(rm x)\nEOF"),
            vec![
                vec!["cat".to_owned()],
                vec!["rm".to_owned(), "x".to_owned()]
            ]
        );
    }

    #[test]
    fn assignments_need_an_unquoted_name() {
        let words =
            &simple_commands_at("A=1 B+=\"x y\" 'C=2' D$x=3 =4", 0).expect("lexes")[0].words;
        let flags: Vec<bool> = words.iter().map(Word::is_assignment).collect();
        assert_eq!(flags, vec![true, true, false, false, false]);
    }

    #[test]
    fn arrays_are_not_subshells() {
        assert_eq!(
            texts("a=(rm x) cmd"),
            vec![vec!["a=(…)".to_owned(), "cmd".to_owned()]]
        );
    }

    #[test]
    fn runaway_nesting_is_an_error_not_a_stack_overflow() {
        for source in [
            "$(".repeat(MAX_DEPTH + 2),
            "${".repeat(100_000),
            "\"$".repeat(100_000),
            "$(echo ${x:-\"$(".repeat(100),
        ] {
            assert_eq!(
                simple_commands_at(&source, 0),
                Err(LexError::TooDeep),
                "{}",
                &source[..20]
            );
        }
    }

    #[test]
    fn sixteen_nested_substitutions_are_fine() {
        let source = format!("{}rm x{}", "echo $(".repeat(15), ")".repeat(15));
        let commands = simple_commands_at(&source, 0).expect("lexes");
        assert_eq!(commands[0].display(), "rm x");
    }
}
