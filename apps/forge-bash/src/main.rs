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
mod log_dir;
mod overflow;
mod process_group;
mod reply;
mod rm_guard;
mod shell_words;
mod shutdown;
mod toolbox;

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use server_kit::RunOptions;

fn main() -> ExitCode {
    // `forge-bash --keep-command …`: this process is a command's keeper, not the server.
    proc_tree::keeper::run_if_asked();
    let groups = shutdown::RunningGroups::new();
    shutdown::stop_on_signal(std::sync::Arc::clone(&groups));
    server_kit::init_logging();
    let own: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let settings = server_kit::Settings::from_vars(own.iter().cloned());
    let default_cwd = config::default_cwd(
        Path::new(config::DEFAULT_WORKSPACE),
        std::env::current_dir().ok(),
    );
    let config = config::Config::from_settings(&settings, default_cwd);
    let shell = config::find_shell(std::env::var_os("PATH").as_deref());
    let env_file = config
        .as_ref()
        .map_or_else(|_| config::DEFAULT_ENV_FILE.into(), |c| c.env_file.clone());
    let deny = environ::DenyList::with_extra(settings.text(config::INJECT_DENY_VAR).as_deref());
    let injected = deny.filter(environ::read_env_file(&env_file).unwrap_or_default());
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
