//! forge-bash: an MCP server on stdio with one tool, `run`, that runs a shell
//! command and returns its output with an `[exit:N | Xms]` footer.
//!
//! `main` is the only place that reads the environment: it parses the
//! settings ([`config`]), reads the injected variables ([`environ`]), picks
//! the shell and hands everything to the [`toolbox::BashToolbox`].

mod audit;
mod capture;
mod config;
mod environ;
mod exec;
mod overflow;
mod process_group;
mod reply;
mod rm_guard;
mod shell_words;
mod shutdown;
mod toolbox;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use server_kit::RunOptions;

fn main() -> ExitCode {
    let groups = shutdown::RunningGroups::new();
    shutdown::stop_on_signal(std::sync::Arc::clone(&groups));
    init_logging();
    let own: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let text: HashMap<String, String> = own
        .iter()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v.to_str()?.to_owned())))
        .collect();
    let default_cwd = config::default_cwd(
        Path::new(config::DEFAULT_WORKSPACE),
        std::env::current_dir().ok(),
    );
    let config = config::Config::from_vars(|var| text.get(var).cloned(), default_cwd);
    let shell = config::find_shell(std::env::var_os("PATH").as_deref());
    let env_file = config
        .as_ref()
        .map_or_else(|_| config::DEFAULT_ENV_FILE.into(), |c| c.env_file.clone());
    let injected = environ::read_env_file(&env_file).unwrap_or_default();
    let (env, added) = environ::merge(own, injected);
    if !added.is_empty() {
        tracing::debug!(count = added.len(), file = %env_file.display(), "variables injected into commands' environment");
    }
    if let Err(error) = &config {
        eprintln!("forge-bash: {error}; every run call will fail until it is fixed");
    }
    let toolbox = toolbox::BashToolbox::new(config, shell, env, groups);
    server_kit::run(
        toolbox,
        &RunOptions {
            about: "Runs shell commands for a model: one tool, `run`, with an rm guard, an audit log, output limits and process-group cleanup.",
            environment: config::ENVIRONMENT_HELP,
        },
    )
}

/// Logs on stderr, as the kit sets them up (its own later setup is then a
/// no-op), so that what `main` logs before serving is not lost.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
