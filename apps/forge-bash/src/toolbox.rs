//! The `run` tool: forge-bash's [`Toolbox`]. Ties the pieces together for
//! one call: settings check, rm guard, execution with capture, audit line,
//! reply.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::Deserialize;
use server_kit::{
    Identity, Tool, ToolAnnotations, ToolCall, ToolFailure, ToolOutput, Toolbox, tool_spec,
};

use crate::audit::{AuditLog, Entry, Outcome};
use crate::capture::Capture;
use crate::config::{CWD_VAR, Config, ConfigError};
use crate::environ::EnvVars;
use crate::exec::{self, Ending, ExecError, Execution};
use crate::log_dir::{self, LogDirError};
use crate::overflow::OverflowFiles;
use crate::reply::{self, Limits};
use crate::rm_guard;
use crate::shutdown::RunningGroups;

/// The tool's description, as `tools/list` shows it.
pub const RUN_DESCRIPTION: &str = "Run a shell command (bash, else /bin/sh) and return stdout + stderr followed by an [exit:N | Xms] footer. Pipes and chain operators (|, &&, ||, ;) work as in a shell. Output over 200 lines or 50 KB is truncated and saved to a file whose path the reply gives. `rm` (and find -delete / -exec rm) is blocked: use forge-filesystem's trash_file or trash_directory instead.";

// The parameters of `run` (a plain comment: a doc comment would become the
// schema's description).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunParams {
    /// Full command string, including pipes and chain operators.
    pub command: String,
}

/// What a configured server runs with.
#[derive(Debug)]
struct Settings {
    config: Config,
    shell: PathBuf,
    env: EnvVars,
    groups: Arc<RunningGroups>,
    audit: AuditLog,
    overflow: OverflowFiles,
}

/// forge-bash's tools.
#[derive(Debug)]
pub struct BashToolbox {
    settings: Result<Settings, ConfigError>,
}

impl BashToolbox {
    /// `config` as parsed in `main` (an error fails every call, never the
    /// start), the shell to use, the environment of commands, and the
    /// registry of running command groups (shared with the signal handler).
    pub fn new(
        config: Result<Config, ConfigError>,
        shell: PathBuf,
        env: EnvVars,
        groups: Arc<RunningGroups>,
    ) -> Self {
        let settings = config.map(|config| Settings {
            groups,
            audit: AuditLog::new(config.log_dir.clone()),
            overflow: OverflowFiles::new(config.log_dir.clone()),
            config,
            shell,
            env,
        });
        Self { settings }
    }
}

impl Toolbox for BashToolbox {
    fn identity(&self) -> Identity {
        Identity {
            name: "forge-bash",
            version: env!("CARGO_PKG_VERSION"),
            instructions: Some(
                "Runs shell commands with `run`. Deleting with rm is blocked: use forge-filesystem's trash_file / trash_directory."
                    .to_owned(),
            ),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        vec![
            tool_spec::<RunParams>("run", RUN_DESCRIPTION).annotate(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            ),
        ]
    }

    async fn call(&self, call: ToolCall) -> Result<ToolOutput, ToolFailure> {
        let params: RunParams = call.parse()?;
        let settings = self
            .settings
            .as_ref()
            .map_err(|error| ToolFailure::not_configured(error.to_string()))?;
        settings.run(&params.command, &call).await
    }
}

impl Settings {
    async fn run(&self, command: &str, call: &ToolCall) -> Result<ToolOutput, ToolFailure> {
        let mut audit = PendingAudit::new(self, command);
        match log_dir::secure(&self.config.log_dir) {
            Ok(()) => {}
            // A folder that could be someone else's is never written: the call fails.
            Err(
                error @ (LogDirError::Symlink { .. }
                | LogDirError::NotAFolder { .. }
                | LogDirError::NotOurs { .. }),
            ) => {
                // Nothing is written there, not even the audit line of this refusal.
                audit.abandon();
                return Err(ToolFailure::not_configured(error.to_string()));
            }
            Err(error @ LogDirError::Io { .. }) => {
                tracing::warn!("{error}; the command runs without audit line or overflow file")
            }
        }
        if let Err(blocked) = rm_guard::check(command) {
            audit.finish(Outcome::Blocked);
            return Err(ToolFailure::tool(blocked.to_string()));
        }
        if !self.config.cwd.is_dir() {
            audit.finish(Outcome::Failed);
            return Err(ToolFailure::not_configured(format!(
                "The working directory {} does not exist or is not a directory; set {CWD_VAR} to one that does.",
                self.config.cwd.display()
            )));
        }
        let execution = Execution {
            groups: &self.groups,
            shell: &self.shell,
            command,
            cwd: &self.config.cwd,
            env: &self.env,
            timeout: self.config.timeout,
            max_buffer_bytes: self.config.max_buffer_bytes,
        };
        let mut capture = Capture::new(&self.overflow);
        let ending = match exec::execute(execution, &mut capture, &call.cancel).await {
            Ok(ending) => ending,
            Err(error) => {
                audit.finish(Outcome::Failed);
                return Err(ToolFailure::tool(match error {
                    ExecError::Spawn { .. } | ExecError::Wait(_) => error.to_string(),
                }));
            }
        };
        let captured = capture.finish().await;
        let elapsed = audit.finish(ending.into());
        let limits = Limits {
            timeout: self.config.timeout,
            max_buffer_bytes: self.config.max_buffer_bytes,
        };
        let text = reply::render(&captured, ending, elapsed, limits);
        match ending {
            Ending::Exited(_) => Ok(ToolOutput::text(text)),
            Ending::TimedOut | Ending::BufferExceeded | Ending::Cancelled => {
                Err(ToolFailure::tool(text))
            }
        }
    }
}

/// The audit line of a call in progress: written once with the outcome, or
/// as `shutdown` if the call is dropped first (the server stopped).
struct PendingAudit<'a> {
    settings: &'a Settings,
    command: &'a str,
    started: Timestamp,
    clock: Instant,
    done: bool,
}

impl<'a> PendingAudit<'a> {
    fn new(settings: &'a Settings, command: &'a str) -> Self {
        Self {
            settings,
            command,
            started: Timestamp::now(),
            clock: Instant::now(),
            done: false,
        }
    }

    /// Write no line (the log folder must not be written).
    fn abandon(&mut self) {
        self.done = true;
    }

    /// Write the line; returns the elapsed time it recorded.
    fn finish(&mut self, outcome: Outcome) -> std::time::Duration {
        let duration = self.clock.elapsed();
        self.done = true;
        self.settings.audit.record(&Entry {
            started: self.started,
            outcome,
            duration,
            cwd: &self.settings.config.cwd,
            command: self.command,
        });
        duration
    }
}

impl Drop for PendingAudit<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Outcome::Shutdown);
        }
    }
}
