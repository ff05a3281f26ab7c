//! A Dockerfile reader, enough to check one against the workspace: instructions with their
//! flags (`--from=build`), arguments in exec form (`["a", "b"]`) or shell form, line
//! continuations, comments, stages (`FROM … AS name`) and `${ARG}` expansion.

use std::collections::BTreeMap;

use crate::error::CheckError;

/// An instruction's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Args {
    /// `["botcraft", "serve"]`.
    Exec(Vec<String>),
    /// Everything after the keyword and flags, as written (continuations joined by a space).
    Shell(String),
}

impl Args {
    /// The words: the exec list, or the shell text split on whitespace.
    pub fn words(&self) -> Vec<String> {
        match self {
            Self::Exec(words) => words.clone(),
            Self::Shell(text) => text.split_whitespace().map(str::to_owned).collect(),
        }
    }

    /// The arguments as one string.
    pub fn text(&self) -> String {
        match self {
            Self::Exec(words) => words.join(" "),
            Self::Shell(text) => text.clone(),
        }
    }
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Upper case: `COPY`, `RUN` …
    pub keyword: String,
    /// `--name=value` (value `None` for a bare `--name`), in order.
    pub flags: Vec<(String, Option<String>)>,
    pub args: Args,
    /// 1-based line where the instruction starts.
    pub line: usize,
}

impl Instruction {
    pub fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(flag, _)| flag == name)
            .and_then(|(_, value)| value.as_deref())
    }
}

/// `FROM base [AS name]` and what follows up to the next `FROM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The base image with global `ARG` defaults expanded.
    pub base: String,
    pub name: Option<String>,
    pub instructions: Vec<Instruction>,
}

impl Stage {
    pub fn all<'a>(&'a self, keyword: &str) -> impl Iterator<Item = &'a Instruction> + use<'a> {
        let keyword = keyword.to_owned();
        self.instructions
            .iter()
            .filter(move |instruction| instruction.keyword == keyword)
    }

    /// The last instruction of this kind (the one that counts for `CMD`, `USER` …).
    pub fn last(&self, keyword: &str) -> Option<&Instruction> {
        self.all(keyword).last()
    }

    /// `ENV` values set in this stage, last one winning.
    pub fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for instruction in self.all("ENV") {
            for word in split_words(&instruction.args.text()) {
                if let Some((key, value)) = word.split_once('=') {
                    env.insert(key.to_owned(), value.to_owned());
                }
            }
        }
        env
    }
}

/// A parsed Dockerfile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dockerfile {
    /// `ARG`s before the first `FROM`, with their defaults.
    pub global_args: BTreeMap<String, Option<String>>,
    pub stages: Vec<Stage>,
}

impl Dockerfile {
    pub fn parse(text: &str) -> Result<Self, CheckError> {
        let mut global_args = BTreeMap::new();
        let mut stages: Vec<Stage> = Vec::new();
        for instruction in instructions(text)? {
            match (instruction.keyword.as_str(), stages.last_mut()) {
                ("FROM", _) => {
                    let words = instruction.args.words();
                    let base = words.first().ok_or_else(|| CheckError::Syntax {
                        line: instruction.line,
                        message: "FROM without an image".into(),
                    })?;
                    let name = match words.get(1).map(|w| w.to_ascii_uppercase()) {
                        Some(as_) if as_ == "AS" => words.get(2).cloned(),
                        _ => None,
                    };
                    stages.push(Stage {
                        base: expand(base, &global_args),
                        name,
                        instructions: Vec::new(),
                    });
                }
                ("ARG", None) => {
                    let text = instruction.args.text();
                    let (name, default) = match text.split_once('=') {
                        Some((name, default)) => (name.to_owned(), Some(default.to_owned())),
                        None => (text.trim().to_owned(), None),
                    };
                    global_args.insert(name, default);
                }
                (_, Some(stage)) => stage.instructions.push(instruction),
                (_, None) => {
                    return Err(CheckError::Syntax {
                        line: instruction.line,
                        message: format!("{} before the first FROM", instruction.keyword),
                    });
                }
            }
        }
        Ok(Self {
            global_args,
            stages,
        })
    }

    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages
            .iter()
            .find(|stage| stage.name.as_deref() == Some(name))
    }

    /// The image that runs: the last stage.
    pub fn final_stage(&self) -> Option<&Stage> {
        self.stages.last()
    }
}

/// `${NAME}` and `$NAME` replaced by `vars`' defaults; unknown names stay as written.
pub fn expand(text: &str, vars: &BTreeMap<String, Option<String>>) -> String {
    let mut out = text.to_owned();
    for (name, value) in vars {
        if let Some(value) = value {
            out = out
                .replace(&format!("${{{name}}}"), value)
                .replace(&format!("${name}"), value);
        }
    }
    out
}

/// Whitespace-separated words; double or single quotes keep spaces inside a word.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Logical lines: comments and blank lines dropped (also inside a continuation), lines
/// ending in `\` joined with the next.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_none()) {
            continue;
        }
        let (body, continues) = match trimmed.strip_suffix('\\') {
            Some(body) => (body.trim_end(), true),
            None => (trimmed, false),
        };
        let entry = current.get_or_insert_with(|| (index + 1, String::new()));
        if !entry.1.is_empty() && !body.is_empty() {
            entry.1.push(' ');
        }
        entry.1.push_str(body);
        if !continues && let Some(done) = current.take() {
            lines.push(done);
        }
    }
    if let Some(done) = current {
        lines.push(done);
    }
    lines
}

/// Every instruction, in order.
pub fn instructions(text: &str) -> Result<Vec<Instruction>, CheckError> {
    logical_lines(text)
        .into_iter()
        .filter(|(_, line)| !line.is_empty())
        .map(|(line, text)| parse_instruction(line, &text))
        .collect()
}

fn parse_instruction(line: usize, text: &str) -> Result<Instruction, CheckError> {
    let (keyword, mut rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let keyword = keyword.to_ascii_uppercase();
    let mut flags = Vec::new();
    loop {
        rest = rest.trim_start();
        let Some(flag) = rest.strip_prefix("--") else {
            break;
        };
        let (token, after) = flag.split_once(char::is_whitespace).unwrap_or((flag, ""));
        let (name, value) = match token.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (token.to_owned(), None),
        };
        flags.push((name, value));
        rest = after;
    }
    let rest = rest.trim();
    let args = if rest.starts_with('[') {
        let words: Vec<String> =
            serde_json::from_str(rest).map_err(|error| CheckError::Syntax {
                line,
                message: format!("{keyword}: exec form is not a JSON list of strings: {error}"),
            })?;
        Args::Exec(words)
    } else {
        Args::Shell(rest.to_owned())
    };
    Ok(Instruction {
        keyword,
        flags,
        args,
        line,
    })
}

/// `HEALTHCHECK [flags] CMD …`: the command, or `None` for `HEALTHCHECK NONE`.
pub fn healthcheck_command(instruction: &Instruction) -> Option<Args> {
    let text = match &instruction.args {
        Args::Shell(text) => text.clone(),
        Args::Exec(_) => return None,
    };
    let rest = text.trim().strip_prefix("CMD")?.trim();
    if rest.starts_with('[') {
        serde_json::from_str(rest).ok().map(Args::Exec)
    } else {
        Some(Args::Shell(rest.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const SAMPLE: &str = r#"# syntax=docker/dockerfile:1
ARG RUST_VERSION=1.95
FROM rust:${RUST_VERSION}-trixie AS build
RUN --mount=type=cache,target=/x \
    cargo build --release \
    # a comment inside a continuation
      --bin a
FROM debian:trixie-slim
COPY --from=build /out/a /usr/local/bin/
ENV A=1 \
    B="two words"
HEALTHCHECK --interval=5s CMD ["curl", "-f", "http://127.0.0.1:3000/api/health"]
CMD ["a", "serve"]
"#;

    #[test]
    fn stages_flags_and_forms_are_read() {
        let file = Dockerfile::parse(SAMPLE).expect("parses");
        assert_eq!(file.stages.len(), 2);
        let build = file.stage("build").expect("build stage");
        assert_eq!(build.base, "rust:1.95-trixie");
        let run = build.last("RUN").expect("a RUN");
        assert_eq!(run.flag("mount"), Some("type=cache,target=/x"));
        assert_eq!(
            run.args,
            Args::Shell("cargo build --release --bin a".into())
        );
        let runtime = file.final_stage().expect("a final stage");
        assert_eq!(runtime.name, None);
        let copy = runtime.last("COPY").expect("a COPY");
        assert_eq!(copy.flag("from"), Some("build"));
        assert_eq!(copy.args.words(), vec!["/out/a", "/usr/local/bin/"]);
        assert_eq!(
            runtime.env(),
            BTreeMap::from([("A".into(), "1".into()), ("B".into(), "two words".into())])
        );
        assert_eq!(
            runtime.last("CMD").map(|cmd| cmd.args.clone()),
            Some(Args::Exec(vec!["a".into(), "serve".into()]))
        );
        let health = runtime.last("HEALTHCHECK").expect("a HEALTHCHECK");
        assert_eq!(health.flag("interval"), Some("5s"));
        assert_eq!(
            healthcheck_command(health).map(|cmd| cmd.words()),
            Some(vec![
                "curl".into(),
                "-f".into(),
                "http://127.0.0.1:3000/api/health".into()
            ])
        );
    }

    #[test]
    fn malformed_files_are_refused_with_a_line() {
        let cases = [
            ("RUN echo\n", 1),
            ("FROM x\nCMD [\"a\",\n", 2),
            ("FROM\n", 1),
        ];
        for (text, line) in cases {
            match Dockerfile::parse(text) {
                Err(CheckError::Syntax { line: got, .. }) => assert_eq!(got, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
