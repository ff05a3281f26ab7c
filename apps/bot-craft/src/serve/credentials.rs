//! `serve`'s secrets: read from files where `NAME_FILE` says so (Docker and Kubernetes
//! secrets, so that they need not sit in PID 1's environment), the admin and chat keys,
//! every secret value BotCraft knows, for the redactor, and a warning for a secret given as
//! a flag (any process of the machine reads a command line).

use super::ServeArgs;
use crate::config::{generated_key, key_file, secret_or_file};

/// The flags whose values are secrets, and the variable each can come from instead.
const SECRET_FLAGS: &[(&str, &str)] = &[
    ("--api-key", "BOTCRAFT_API_KEY"),
    ("--chat-keys", "BOTCRAFT_CHAT_KEYS"),
    ("--openai-api-key", "OPENAI_API_KEY"),
    ("--anthropic-api-key", "ANTHROPIC_API_KEY"),
    ("--bot-keys", mcp_gateway::BOT_KEYS_ENV),
    ("--database-url", "DATABASE_URL"),
];

/// The secret flags among `args` (a command line), with their variables: given so, any
/// process of the machine reads them in `/proc/PID/cmdline` (no access right needed), a tool's
/// command included.
pub(super) fn secrets_on_the_command_line(
    args: impl IntoIterator<Item = String>,
) -> Vec<(&'static str, &'static str)> {
    let args: Vec<String> = args.into_iter().collect();
    SECRET_FLAGS
        .iter()
        .filter(|(flag, _)| {
            args.iter().any(|arg| {
                arg == flag
                    || arg
                        .strip_prefix(flag)
                        .is_some_and(|rest| rest.starts_with('='))
            })
        })
        .copied()
        .collect()
}

/// Says on stderr which secrets were given as flags, and how to give them instead.
pub(super) fn warn_of_secret_flags() {
    for (flag, variable) in secrets_on_the_command_line(std::env::args().skip(1)) {
        eprintln!(
            "botcraft: warning: {flag} is on the command line, which any process of this machine can read (/proc/PID/cmdline), tools included; set {variable} or {variable}_FILE instead"
        );
    }
}

/// Replace each secret argument by its file's content where `NAME_FILE` is set.
pub(super) fn read_secret_files(args: &mut ServeArgs) -> anyhow::Result<()> {
    args.api_key = secret_or_file(args.api_key.take(), "BOTCRAFT_API_KEY")?;
    args.chat_keys = secret_or_file(args.chat_keys.take(), "BOTCRAFT_CHAT_KEYS")?;
    args.openai_api_key = secret_or_file(args.openai_api_key.take(), "OPENAI_API_KEY")?;
    args.anthropic_api_key = secret_or_file(args.anthropic_api_key.take(), "ANTHROPIC_API_KEY")?;
    args.bot_keys = secret_or_file(args.bot_keys.take(), mcp_gateway::BOT_KEYS_ENV)?;
    Ok(())
}

/// The admin keys: `BOTCRAFT_API_KEY` (comma-separated), else the key generated into the
/// data folder (said on stderr, the key itself never).
pub(super) fn admin_keys(args: &ServeArgs) -> anyhow::Result<Vec<String>> {
    Ok(
        match args.api_key.as_deref().filter(|k| !k.trim().is_empty()) {
            Some(keys) => keys.split(',').map(|k| k.trim().to_owned()).collect(),
            None => {
                let key = generated_key(&args.data.data_dir)?;
                eprintln!(
                    "botcraft: BOTCRAFT_API_KEY is not set; using the key in {}",
                    key_file(&args.data.data_dir).display()
                );
                vec![key]
            }
        },
    )
}

/// Fewest characters a key configured by variable should have: a shorter one can be guessed
/// online (a refused key costs one lookup; failures are not slowed down).
const MIN_KEY_CHARS: usize = 16;

/// What to say of the keys of `variable` that are shorter than [`MIN_KEY_CHARS`], each
/// named by its label (its position among the keys given, or its bot; never the key), or
/// `None`. Empty entries are no keys and are not counted.
pub(super) fn short_keys_warning<'a>(
    variable: &str,
    keys: impl IntoIterator<Item = (String, &'a str)>,
) -> Option<String> {
    let short: Vec<String> = keys
        .into_iter()
        .filter(|(_, key)| !key.is_empty() && key.chars().count() < MIN_KEY_CHARS)
        .map(|(label, _)| label)
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "{variable}: {} of fewer than {MIN_KEY_CHARS} characters can be guessed; use long random keys (openssl rand -hex 32)",
            short.join(", ")
        )
    })
}

/// The keys of a comma-separated list, labelled `key N` by their place among the non-empty
/// ones.
pub(super) fn numbered<'a>(keys: impl IntoIterator<Item = &'a str>) -> Vec<(String, &'a str)> {
    keys.into_iter()
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .enumerate()
        .map(|(index, key)| (format!("key {}", index + 1), key))
        .collect()
}

/// The chat keys of `BOTCRAFT_CHAT_KEYS` (comma-separated).
pub(super) fn chat_keys(args: &ServeArgs) -> Vec<String> {
    args.chat_keys
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(|key| key.trim().to_owned())
        .filter(|key| !key.is_empty())
        .collect()
}

/// Every secret value BotCraft knows, redacted from errors, streams and server logs: its
/// keys, the provider keys, the `/mcp` bot keys, the database's password (in its URL or
/// `PGPASSWORD`), the OTLP
/// exporter's header values and the secret key.
pub(super) fn known(
    args: &ServeArgs,
    keys: &[String],
    chat_keys: &[String],
    url: &str,
    trace_settings: &observability::TelemetrySettings,
) -> Vec<String> {
    let bot_key_values: Vec<String> = args
        .bot_keys
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter_map(|entry| entry.split_once('=').map(|(_, key)| key.trim().to_owned()))
        .filter(|key| key.len() >= 8)
        .collect();
    let database_password = reqwest::Url::parse(url)
        .ok()
        .and_then(|parsed| parsed.password().map(str::to_owned))
        .filter(|password| !password.is_empty());
    keys.iter()
        .cloned()
        .chain(chat_keys.iter().cloned())
        .chain(args.openai_api_key.clone())
        .chain(args.anthropic_api_key.clone())
        .chain(bot_key_values)
        .chain(database_password)
        // libpq's (and sqlx's) password variable, when the URL carries none.
        .chain(
            std::env::var("PGPASSWORD")
                .ok()
                .filter(|password| !password.is_empty()),
        )
        .chain(
            trace_settings
                .headers
                .values()
                .filter(|value| value.len() >= 8)
                .cloned(),
        )
        .chain(
            std::env::var(secrets::KEY_VAR)
                .ok()
                .filter(|key| key.len() >= 8),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn short_configured_keys_are_said_by_position_only() {
        assert_eq!(
            short_keys_warning(
                "BOTCRAFT_API_KEY",
                numbered(["a-long-enough-key-1234", "", "short-key", " "])
            ),
            Some("BOTCRAFT_API_KEY: key 2 of fewer than 16 characters can be guessed; use long random keys (openssl rand -hex 32)".to_owned())
        );
        assert_eq!(
            short_keys_warning("BOTCRAFT_CHAT_KEYS", numbered(["0123456789abcdef", ""])),
            None
        );
        assert_eq!(
            short_keys_warning(
                "BOTCRAFT_BOT_KEYS",
                [
                    ("bot forge".to_owned(), "abc"),
                    ("bot b".to_owned(), "0123456789abcdef")
                ]
            )
            .as_deref(),
            Some(
                "BOTCRAFT_BOT_KEYS: bot forge of fewer than 16 characters can be guessed; use long random keys (openssl rand -hex 32)"
            )
        );
    }

    #[test]
    fn secret_flags_on_the_command_line_are_found() {
        let found = |line: &str| secrets_on_the_command_line(line.split(' ').map(String::from));
        let cases: [(&str, Vec<&str>); 5] = [
            ("serve --addr 127.0.0.1:0", vec![]),
            (
                "serve --api-key bck_x --addr 127.0.0.1:0",
                vec!["--api-key"],
            ),
            ("serve --openai-api-key=sk-x", vec!["--openai-api-key"]),
            (
                "serve --database-url postgres://u:p@h/db --bot-keys b=k",
                vec!["--bot-keys", "--database-url"],
            ),
            // A flag's value or a longer flag is not the flag.
            ("serve --public-url --api-keys-file", vec![]),
        ];
        for (line, flags) in cases {
            let got: Vec<&str> = found(line).into_iter().map(|(flag, _)| flag).collect();
            assert_eq!(got, flags, "{line}");
        }
    }
}
