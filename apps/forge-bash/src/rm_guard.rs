//! The rm guard: finds file deletion by `rm` (or `find -delete` /
//! `find -exec rm`) anywhere in a command string, so the call can be refused
//! and the model sent to forge-filesystem's trash tools.
//!
//! The rule, applied to every simple command the lexer finds (chains, pipes,
//! subshells, `$( … )`, backticks, process substitutions):
//! 1. skip leading assignments (`VAR=x`) and reserved words (`if`, `then`,
//!    `do`, `while`, `until`, `!`, `{`, `}`, …);
//! 2. strip wrappers that run their arguments as a command (see
//!    [`WRAPPERS`]), with their options;
//! 3. take the basename of the program: `rm` is blocked;
//! 4. `bash`/`sh`/`zsh`/… `-c STRING`, `eval ARGS`, `su -c STRING`,
//!    `watch ARGS` and `env -S STRING`: the string is checked the same way;
//! 5. `find`: `-delete` is blocked, and the command after `-exec`,
//!    `-execdir`, `-ok` or `-okdir` is checked the same way.
//!
//! It is a guard against mistakes, not a sandbox: a program name that is only
//! known at run time (`$x file`, `alias`, a script that calls rm, a command
//! piped into `sh`, other languages' delete calls) is not seen.

use std::fmt;

use crate::shell_words::{self, LexError, MAX_DEPTH, SimpleCommand, Word};

/// A command string the guard refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub kind: BlockedKind,
    /// The simple command that was refused, words joined by spaces.
    pub segment: String,
}

/// What was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockedKind {
    /// `rm`, however it is spelled or wrapped.
    Rm,
    /// `find … -delete`.
    FindDelete,
    /// `find … -exec rm …` (or `-execdir`, `-ok`, `-okdir`).
    FindExecRm,
    /// Nesting too deep to check; refused to be safe.
    TooDeep,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            BlockedKind::Rm => "`rm` is blocked in forge-bash",
            BlockedKind::FindDelete => "`find -delete` is blocked in forge-bash",
            BlockedKind::FindExecRm => "`find -exec rm` is blocked in forge-bash",
            BlockedKind::TooDeep => {
                "the command nests substitutions or shells too deeply to check for `rm`"
            }
        };
        write!(
            f,
            "Command blocked: {what} (found in: {}).\nNothing was run. To delete, move things to the trash with forge-filesystem instead: `trash_file` for a file, `trash_directory` for a directory (both can be restored).",
            self.segment
        )
    }
}

/// Check a whole command string.
pub fn check(command: &str) -> Result<(), Blocked> {
    check_at(command, 0)
}

fn check_at(source: &str, depth: usize) -> Result<(), Blocked> {
    let commands = shell_words::simple_commands_at(source, depth).map_err(|error| match error {
        LexError::TooDeep => too_deep(source),
    })?;
    for command in &commands {
        inspect(&command.words, depth, command)?;
    }
    Ok(())
}

fn too_deep(segment: &str) -> Blocked {
    let mut segment: String = segment.chars().take(80).collect();
    segment.push('…');
    Blocked {
        kind: BlockedKind::TooDeep,
        segment,
    }
}

/// Reserved words that may precede a command's program.
const PREFIX_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "esac",
    "coproc",
];

/// Reserved words whose following words are not a command.
const NON_COMMAND_KEYWORDS: &[&str] = &["for", "select", "case", "in", "[[", "]]"];

/// A program that runs its arguments as another command.
#[derive(Debug)]
pub struct Wrapper {
    pub name: &'static str,
    /// Options that take the next word as their value (`-u root`), short
    /// (a single letter) or long (`--user`, also accepted as `--user=x`).
    pub value_options: &'static [&'static str],
    /// Options whose value is itself a command string to check (`env -S`).
    pub command_string_options: &'static [&'static str],
    /// Options after which the wrapper does not run a command (`command -v`).
    pub lookup_options: &'static [&'static str],
    /// Positional words between the options and the command (`timeout 5`).
    pub positionals: usize,
    /// `NAME=value` words before the command are skipped (`env`).
    pub assignments: bool,
}

const fn wrapper(name: &'static str) -> Wrapper {
    Wrapper {
        name,
        value_options: &[],
        command_string_options: &[],
        lookup_options: &[],
        positionals: 0,
        assignments: false,
    }
}

/// The wrappers the guard sees through.
pub const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        value_options: &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-r",
            "-t",
            "-C",
            "-D",
            "-U",
            "-T",
            "-R",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--close-from",
            "--chdir",
            "--other-user",
            "--command-timeout",
            "--chroot",
        ],
        lookup_options: &[
            "-l",
            "--list",
            "-e",
            "--edit",
            "-v",
            "--validate",
            "-k",
            "-K",
        ],
        ..wrapper("sudo")
    },
    Wrapper {
        value_options: &["-u", "-C"],
        ..wrapper("doas")
    },
    Wrapper {
        lookup_options: &["-v", "-V"],
        ..wrapper("command")
    },
    wrapper("builtin"),
    Wrapper {
        value_options: &["-a"],
        ..wrapper("exec")
    },
    Wrapper {
        value_options: &["-u", "-C", "--unset", "--chdir"],
        command_string_options: &["-S", "--split-string"],
        assignments: true,
        ..wrapper("env")
    },
    Wrapper {
        value_options: &["-n", "--adjustment"],
        ..wrapper("nice")
    },
    wrapper("nohup"),
    Wrapper {
        value_options: &["-f", "-o", "--format", "--output"],
        ..wrapper("time")
    },
    Wrapper {
        value_options: &["-s", "-k", "--signal", "--kill-after"],
        positionals: 1,
        ..wrapper("timeout")
    },
    Wrapper {
        value_options: &[
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ],
        ..wrapper("xargs")
    },
    Wrapper {
        value_options: &["-i", "-o", "-e", "--input", "--output", "--error"],
        ..wrapper("stdbuf")
    },
    Wrapper {
        value_options: &["-c", "-n", "--class", "--classdata"],
        lookup_options: &["-p", "-P", "-u", "--pid", "--pgid", "--uid"],
        ..wrapper("ionice")
    },
    wrapper("setsid"),
    Wrapper {
        value_options: &["--userspec", "--groups"],
        positionals: 1,
        ..wrapper("chroot")
    },
    wrapper("unbuffer"),
    wrapper("busybox"),
];

/// Shells whose `-c STRING` is a command string.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"];

/// Check one simple command (or the tail of one, after a wrapper).
fn inspect(words: &[Word], depth: usize, whole: &SimpleCommand) -> Result<(), Blocked> {
    if depth > MAX_DEPTH {
        return Err(too_deep(&whole.display()));
    }
    let mut index = 0;
    while let Some(word) = words.get(index) {
        let keyword = !word.dynamic && PREFIX_KEYWORDS.contains(&word.text.as_str());
        if !(keyword || word.is_assignment()) {
            break;
        }
        index += 1;
    }
    let Some(program) = words.get(index) else {
        return Ok(());
    };
    if program.dynamic {
        return Ok(());
    }
    let args = &words[index + 1..];
    let name = program.text.rsplit('/').next().unwrap_or_default();
    let blocked = |kind| Blocked {
        kind,
        segment: whole.display(),
    };
    if name == "rm" {
        return Err(blocked(BlockedKind::Rm));
    }
    if NON_COMMAND_KEYWORDS.contains(&name) {
        return Ok(());
    }
    if name == "function" {
        return inspect(args.get(1..).unwrap_or_default(), depth, whole);
    }
    if name == "find" {
        return inspect_find(args, depth, whole);
    }
    if name == "eval" || name == "watch" {
        let start = if name == "watch" {
            skip_watch_options(args)
        } else {
            0
        };
        return check_string(&join(&args[start.min(args.len())..]), depth, whole);
    }
    if SHELLS.contains(&name) {
        return match shell_command_string(args) {
            Some(string) => check_string(&string.text, depth, whole),
            None => Ok(()),
        };
    }
    if name == "su" || name == "runuser" {
        return match option_value(args, &["-c", "--command"]) {
            Some(string) => check_string(&string, depth, whole),
            None => Ok(()),
        };
    }
    if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
        return match unwrap(wrapper, args) {
            Unwrapped::Command(start) => inspect(&args[start..], depth + 1, whole),
            Unwrapped::CommandString(string, start) => {
                let mut full = string;
                for word in &args[start..] {
                    full.push(' ');
                    full.push_str(&word.text);
                }
                check_string(&full, depth, whole)
            }
            Unwrapped::NoCommand => Ok(()),
        };
    }
    Ok(())
}

/// A nested command string (shell `-c`, `eval`): checked one level deeper;
/// a refusal inside names the outer segment.
fn check_string(string: &str, depth: usize, whole: &SimpleCommand) -> Result<(), Blocked> {
    check_at(string, depth + 1).map_err(|inner| Blocked {
        kind: inner.kind,
        segment: match inner.kind {
            BlockedKind::TooDeep => inner.segment,
            _ => whole.display(),
        },
    })
}

fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|word| word.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn inspect_find(args: &[Word], depth: usize, whole: &SimpleCommand) -> Result<(), Blocked> {
    let mut index = 0;
    while let Some(word) = args.get(index) {
        index += 1;
        match word.text.as_str() {
            "-delete" => {
                return Err(Blocked {
                    kind: BlockedKind::FindDelete,
                    segment: whole.display(),
                });
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = index;
                while args
                    .get(index)
                    .is_some_and(|w| w.text != ";" && w.text != "+")
                {
                    index += 1;
                }
                inspect(&args[start..index], depth + 1, whole).map_err(|inner| Blocked {
                    kind: match inner.kind {
                        BlockedKind::Rm => BlockedKind::FindExecRm,
                        other => other,
                    },
                    segment: inner.segment,
                })?;
                index += 1;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The `-c` string of a shell invocation: the first operand after the
/// options when a `-c` (alone or in a cluster like `-ec`) was given.
fn shell_command_string(args: &[Word]) -> Option<&Word> {
    let mut has_c = false;
    let mut index = 0;
    while let Some(word) = args.get(index) {
        let text = word.text.as_str();
        index += 1;
        if text == "--" || text == "-" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                index += 1;
            }
            continue;
        }
        if let Some(cluster) = text.strip_prefix('-').or_else(|| text.strip_prefix('+')) {
            if cluster.is_empty() {
                break;
            }
            if text.starts_with('-') && cluster.contains('c') {
                has_c = true;
            }
            if cluster.contains('o') || cluster.contains('O') {
                index += 1;
            }
            continue;
        }
        index -= 1;
        break;
    }
    if has_c { args.get(index) } else { None }
}

/// The value of the first of `names` among `args` (`-c x`, `-cx`, `--command=x`).
fn option_value(args: &[Word], names: &[&str]) -> Option<String> {
    for (index, word) in args.iter().enumerate() {
        for name in names {
            if word.text == *name {
                return args.get(index + 1).map(|w| w.text.clone());
            }
            if let Some(value) = word.text.strip_prefix(name) {
                if name.starts_with("--") {
                    if let Some(value) = value.strip_prefix('=') {
                        return Some(value.to_owned());
                    }
                } else if !value.is_empty() {
                    return Some(value.to_owned());
                }
            }
        }
    }
    None
}

fn skip_watch_options(args: &[Word]) -> usize {
    const VALUE: &[&str] = &[
        "-n",
        "--interval",
        "-d",
        "-q",
        "--equexit",
        "-s",
        "--shotsfmt",
    ];
    let mut index = 0;
    while let Some(word) = args.get(index) {
        if !word.text.starts_with('-') {
            break;
        }
        index += if VALUE.contains(&word.text.as_str()) {
            2
        } else {
            1
        };
        if word.text == "--" {
            break;
        }
    }
    index
}

/// What follows a wrapper's options.
#[derive(Debug, PartialEq, Eq)]
enum Unwrapped {
    /// The wrapped command starts at this index of the wrapper's arguments.
    Command(usize),
    /// A command string given as an option value, then more words from index.
    CommandString(String, usize),
    /// The wrapper only looks something up (`command -v rm`).
    NoCommand,
}

fn unwrap(wrapper: &Wrapper, args: &[Word]) -> Unwrapped {
    let mut index = 0;
    while let Some(word) = args.get(index) {
        let text = word.text.as_str();
        if text == "--" {
            index += 1;
            break;
        }
        if wrapper.assignments && word.is_assignment() {
            index += 1;
            continue;
        }
        if !(text.starts_with('-') && text.len() > 1) {
            break;
        }
        index += 1;
        if wrapper.lookup_options.contains(&text) {
            return Unwrapped::NoCommand;
        }
        if text.starts_with("--") {
            let (name, inline) = match text.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (text, None),
            };
            if wrapper.command_string_options.contains(&name) {
                let value = inline.map(str::to_owned).or_else(|| {
                    let value = args.get(index).map(|w| w.text.clone());
                    index += 1;
                    value
                });
                return Unwrapped::CommandString(value.unwrap_or_default(), index.min(args.len()));
            }
            if inline.is_none() && wrapper.value_options.contains(&name) {
                index += 1;
            }
            continue;
        }
        // A short-option cluster: the first letter that takes a value takes
        // the rest of the word, or the next word when it is the last letter.
        for (offset, letter) in text.char_indices().skip(1) {
            let option = format!("-{letter}");
            let rest = &text[offset + letter.len_utf8()..];
            if wrapper.lookup_options.contains(&option.as_str()) {
                return Unwrapped::NoCommand;
            }
            let is_string = wrapper.command_string_options.contains(&option.as_str());
            if is_string || wrapper.value_options.contains(&option.as_str()) {
                let value = if rest.is_empty() {
                    let value = args.get(index).map(|w| w.text.clone());
                    index += 1;
                    value
                } else {
                    Some(rest.to_owned())
                };
                if is_string {
                    return Unwrapped::CommandString(
                        value.unwrap_or_default(),
                        index.min(args.len()),
                    );
                }
                break;
            }
        }
    }
    let start = index + wrapper.positionals;
    if start >= args.len() {
        Unwrapped::NoCommand
    } else {
        Unwrapped::Command(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Every command the seed task names, and more spellings.
    const BLOCKED: &[(&str, BlockedKind)] = &[
        ("rm x", BlockedKind::Rm),
        ("/bin/rm x", BlockedKind::Rm),
        (r"\rm x", BlockedKind::Rm),
        ("'rm' x", BlockedKind::Rm),
        ("\"rm\" -rf x", BlockedKind::Rm),
        ("r''m x", BlockedKind::Rm),
        ("sudo rm x", BlockedKind::Rm),
        ("sudo -u root -- rm x", BlockedKind::Rm),
        ("command rm x", BlockedKind::Rm),
        ("env rm x", BlockedKind::Rm),
        ("env -i A=1 B=2 rm x", BlockedKind::Rm),
        ("env -S 'rm x'", BlockedKind::Rm),
        ("nice rm x", BlockedKind::Rm),
        ("nice -n 10 rm x", BlockedKind::Rm),
        ("nohup rm x &", BlockedKind::Rm),
        ("time rm x", BlockedKind::Rm),
        ("timeout 5 rm x", BlockedKind::Rm),
        ("timeout -s KILL 5 rm x", BlockedKind::Rm),
        ("exec rm x", BlockedKind::Rm),
        ("builtin command rm x", BlockedKind::Rm),
        ("FOO=1 rm x", BlockedKind::Rm),
        ("xargs rm", BlockedKind::Rm),
        ("ls | xargs -0 -n 1 rm -f", BlockedKind::Rm),
        ("find . | xargs -I{} rm {}", BlockedKind::Rm),
        ("echo a && rm x", BlockedKind::Rm),
        ("false || rm x", BlockedKind::Rm),
        ("echo a; rm x", BlockedKind::Rm),
        ("echo a | rm x", BlockedKind::Rm),
        ("echo a\nrm x", BlockedKind::Rm),
        ("(rm x)", BlockedKind::Rm),
        ("{ rm x; }", BlockedKind::Rm),
        ("if true; then rm x; fi", BlockedKind::Rm),
        ("for f in *; do rm $f; done", BlockedKind::Rm),
        ("f() { rm x; }", BlockedKind::Rm),
        ("echo $(rm x)", BlockedKind::Rm),
        ("$(rm x)", BlockedKind::Rm),
        ("echo `rm x`", BlockedKind::Rm),
        ("`rm x`", BlockedKind::Rm),
        ("echo \"$(rm x)\"", BlockedKind::Rm),
        ("cat <(rm x)", BlockedKind::Rm),
        ("bash -c 'rm x'", BlockedKind::Rm),
        ("sh -c \"rm -rf x\"", BlockedKind::Rm),
        ("bash -ec 'cd /tmp && rm x'", BlockedKind::Rm),
        ("/usr/bin/zsh -c 'sudo rm x'", BlockedKind::Rm),
        ("bash -c \"sh -c 'rm x'\"", BlockedKind::Rm),
        ("eval 'rm x'", BlockedKind::Rm),
        ("su -c 'rm x' root", BlockedKind::Rm),
        ("$'\\x72m' x", BlockedKind::Rm),
        ("find . -delete", BlockedKind::FindDelete),
        ("find . -name '*.o' -delete", BlockedKind::FindDelete),
        ("find . -exec rm {} \\;", BlockedKind::FindExecRm),
        ("find . -exec rm {} +", BlockedKind::FindExecRm),
        ("find . -execdir /bin/rm -f {} ';'", BlockedKind::FindExecRm),
        ("find . -ok sudo rm {} \\;", BlockedKind::FindExecRm),
        (
            "find . -exec sh -c 'rm \"$1\"' _ {} \\;",
            BlockedKind::FindExecRm,
        ),
        ("sudo find . -delete", BlockedKind::FindDelete),
    ];

    const ALLOWED: &[&str] = &[
        "echo rm",
        "grep -r rm src",
        "ls -la",
        "cat rm.txt",
        "firm x",
        "git rm --cached x",
        "echo 'rm x'",
        "echo \"rm -rf /\"",
        "echo a # rm x",
        "cat <<EOF\nrm x\nEOF",
        "echo x > rm",
        "command -v rm",
        "type rm",
        "which rm",
        "man rm",
        "find . -name rm",
        "find . -exec echo {} \\;",
        "bash script.sh rm",
        "bash -c 'echo rm'",
        "rmdir empty",
        "xargs",
        "sudo -l",
        "ps aux | grep rm",
        "for rm in a b; do echo $rm; done",
        "a=(rm x)",
    ];

    #[test]
    fn blocks_every_spelling_of_rm() {
        for (command, kind) in BLOCKED {
            let verdict = check(command).map_err(|blocked| blocked.kind);
            assert_eq!(verdict, Err(*kind), "command: {command}");
        }
    }

    #[test]
    fn allows_commands_that_only_mention_rm() {
        for command in ALLOWED {
            assert_eq!(check(command), Ok(()), "command: {command}");
        }
    }

    #[test]
    fn the_segment_is_the_offending_command() {
        let blocked = check("echo a && sudo rm -rf build").expect_err("blocked");
        assert_eq!(blocked.segment, "sudo rm -rf build");
        let nested = check("bash -c 'rm x'").expect_err("blocked");
        assert_eq!(nested.segment, "bash -c rm x");
    }

    #[test]
    fn runaway_nesting_is_refused() {
        let command = format!("{}echo x", "nice ".repeat(MAX_DEPTH + 2));
        let verdict = check(&command).map_err(|blocked| blocked.kind);
        assert_eq!(verdict, Err(BlockedKind::TooDeep));
        let substitutions = format!("echo {}", "$(".repeat(MAX_DEPTH + 2));
        let verdict = check(&substitutions).map_err(|blocked| blocked.kind);
        assert_eq!(verdict, Err(BlockedKind::TooDeep));
    }

    /// Arbitrary input never panics or overflows the stack (a cheap
    /// deterministic fuzz: xorshift over shell-special characters).
    #[test]
    fn arbitrary_input_gets_a_verdict() {
        let alphabet: Vec<char> = "rm -$()`'\"\\|&;<>{}#\n\tab=x*!+".chars().collect();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut blocked = 0;
        for _ in 0..5000 {
            let len = (next() % 60) as usize;
            let source: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            if check(&source).is_err() {
                blocked += 1;
            }
        }
        assert!(blocked > 0, "some random strings contain a plain `rm`");
    }

    #[test]
    fn the_message_points_to_the_trash_tools() {
        let blocked = check("rm -rf build").expect_err("blocked");
        insta::assert_snapshot!("rm_blocked_message", blocked.to_string());
    }
}
