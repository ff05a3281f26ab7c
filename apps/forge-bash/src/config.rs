//! The server's settings: every default and the environment variable that
//! overrides it, parsed once in `main` into a typed [`Config`].
//!
//! An unset or empty variable means the default. An invalid value is not a
//! boot failure (the server must start with nothing): `main` keeps the
//! [`ConfigError`] and every `run` call fails with it as `not_configured`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const LOG_DIR_VAR: &str = "FORGE_BASH_LOG_DIR";
pub const CWD_VAR: &str = "FORGE_BASH_CWD";
/// The standard temporary-folder variable: the log folder's default lives there when set.
pub const TMPDIR_VAR: &str = "TMPDIR";
pub const TIMEOUT_VAR: &str = "FORGE_BASH_TIMEOUT_SECS";
pub const MAX_BUFFER_VAR: &str = "FORGE_BASH_MAX_BUFFER_BYTES";
pub const ENV_FILE_VAR: &str = "FORGE_BASH_ENV_FILE";
pub const INJECT_DENY_VAR: &str = "FORGE_BASH_INJECT_DENY";

pub const DEFAULT_LOG_DIR: &str = "/tmp/forge-bash";
pub const DEFAULT_WORKSPACE: &str = "/workspace";
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;
pub const DEFAULT_MAX_BUFFER_BYTES: u64 = 50 * 1024 * 1024;
pub const DEFAULT_ENV_FILE: &str = "/proc/1/environ";

/// The shell used when `bash` is not on `PATH`.
pub const FALLBACK_SHELL: &str = "/bin/sh";

/// What `--help` prints under ENVIRONMENT.
pub const ENVIRONMENT_HELP: &str = "\
FORGE_BASH_LOG_DIR           audit log and overflow files (default: $TMPDIR/forge-bash when TMPDIR is set, else /tmp/forge-bash)
FORGE_BASH_CWD               working directory of commands (default: /workspace if it exists, else the server's current directory)
FORGE_BASH_TIMEOUT_SECS      a command's time limit in seconds (default: 300)
FORGE_BASH_MAX_BUFFER_BYTES  a command's output limit in bytes, stdout and stderr together (default: 52428800)
FORGE_BASH_ENV_FILE          NUL-separated KEY=VALUE file whose variables are added to commands' environment when the server lacks them (default: /proc/1/environ)
FORGE_BASH_INJECT_DENY       more names (comma-separated; PREFIX* for a prefix) never injected, besides BotCraft's secrets: BOTCRAFT_*, OPENAI_API_KEY*, ANTHROPIC_API_KEY*, DATABASE_URL*";

/// Everything a `run` call needs to know about its surroundings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where the audit log and `cmd-N.txt` overflow files go.
    pub log_dir: PathBuf,
    /// The working directory of every command.
    pub cwd: PathBuf,
    /// A command's time limit; past it its process group is killed.
    pub timeout: Duration,
    /// A command's output limit (stdout + stderr bytes read); past it its
    /// process group is killed.
    pub max_buffer_bytes: u64,
    /// The file of variables injected into commands' environment.
    pub env_file: PathBuf,
}

/// A setting with a value the server cannot use (the kit's one rule for every forge server).
pub type ConfigError = server_kit::SettingError;

impl Config {
    /// Build the config from the server's settings (an unset, empty or blank variable takes
    /// its default). `default_cwd` is the working directory used when `FORGE_BASH_CWD` is
    /// unset (see [`default_cwd`]).
    pub fn from_settings(
        settings: &server_kit::Settings,
        default_cwd: PathBuf,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            log_dir: settings
                .path(LOG_DIR_VAR)
                .unwrap_or_else(|| default_log_dir(settings.path(TMPDIR_VAR))),
            cwd: settings.path(CWD_VAR).unwrap_or(default_cwd),
            timeout: Duration::from_secs(settings.positive(TIMEOUT_VAR, DEFAULT_TIMEOUT_SECS)?),
            max_buffer_bytes: settings.positive(MAX_BUFFER_VAR, DEFAULT_MAX_BUFFER_BYTES)?,
            env_file: settings
                .path(ENV_FILE_VAR)
                .unwrap_or_else(|| DEFAULT_ENV_FILE.into()),
        })
    }
}

/// The log folder when `FORGE_BASH_LOG_DIR` is unset: `forge-bash` in `$TMPDIR` when that is
/// set (a sandboxed server's private temporary folder, which BotCraft gives it), else
/// [`DEFAULT_LOG_DIR`].
pub fn default_log_dir(tmpdir: Option<PathBuf>) -> PathBuf {
    match tmpdir {
        Some(dir) if dir.is_absolute() => dir.join("forge-bash"),
        _ => DEFAULT_LOG_DIR.into(),
    }
}

/// The working directory when `FORGE_BASH_CWD` is unset: `/workspace` if it
/// is a directory, else `current` (the server's own current directory).
pub fn default_cwd(workspace: &Path, current: Option<PathBuf>) -> PathBuf {
    if workspace.is_dir() {
        workspace.to_owned()
    } else {
        current.unwrap_or_else(|| PathBuf::from("/"))
    }
}

/// The shell: the first executable `bash` in `path` (a `PATH` value), else
/// `/bin/sh`.
pub fn find_shell(path: Option<&OsStr>) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    path.into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("bash"))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| PathBuf::from(FALLBACK_SHELL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_log_folder_defaults_to_tmpdir_then_tmp() {
        let cases = [
            (
                Some("/tmp/botcraft-tools-1/forge-bash-ab"),
                "/tmp/botcraft-tools-1/forge-bash-ab/forge-bash",
            ),
            (Some("relative"), DEFAULT_LOG_DIR),
            (None, DEFAULT_LOG_DIR),
        ];
        for (tmpdir, expected) in cases {
            assert_eq!(
                default_log_dir(tmpdir.map(PathBuf::from)),
                PathBuf::from(expected),
                "{tmpdir:?}"
            );
        }
    }

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let settings = server_kit::Settings::from_vars(vars.iter().map(|(k, v)| (*k, *v)));
        Config::from_settings(&settings, PathBuf::from("/here"))
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        assert_eq!(
            config(&[]),
            Ok(Config {
                log_dir: "/tmp/forge-bash".into(),
                cwd: "/here".into(),
                timeout: Duration::from_secs(300),
                max_buffer_bytes: 52_428_800,
                env_file: "/proc/1/environ".into(),
            })
        );
        assert_eq!(config(&[(LOG_DIR_VAR, ""), (TIMEOUT_VAR, "")]), config(&[]));
    }

    #[test]
    fn every_default_is_overridable() {
        assert_eq!(
            config(&[
                (LOG_DIR_VAR, "/var/log/fb"),
                (CWD_VAR, "/srv"),
                (TIMEOUT_VAR, "7"),
                (MAX_BUFFER_VAR, "1024"),
                (ENV_FILE_VAR, "/etc/env"),
            ]),
            Ok(Config {
                log_dir: "/var/log/fb".into(),
                cwd: "/srv".into(),
                timeout: Duration::from_secs(7),
                max_buffer_bytes: 1024,
                env_file: "/etc/env".into(),
            })
        );
    }

    #[test]
    fn invalid_numbers_are_errors_that_name_the_variable() {
        for (var, value) in [
            (TIMEOUT_VAR, "soon"),
            (TIMEOUT_VAR, "0"),
            (MAX_BUFFER_VAR, "-1"),
        ] {
            let error = config(&[(var, value)]).expect_err("invalid");
            assert_eq!(
                error,
                ConfigError::NotAPositiveNumber {
                    var,
                    value: value.to_owned(),
                    default: if var == TIMEOUT_VAR { 300 } else { 52_428_800 },
                }
            );
        }
    }

    #[test]
    fn default_cwd_prefers_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(default_cwd(dir.path(), None), dir.path());
        assert_eq!(
            default_cwd(&dir.path().join("missing"), Some("/cur".into())),
            PathBuf::from("/cur")
        );
    }

    #[test]
    fn shell_is_bash_on_path_else_bin_sh() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            find_shell(Some(dir.path().as_os_str())),
            PathBuf::from(FALLBACK_SHELL)
        );
        assert_eq!(find_shell(None), PathBuf::from(FALLBACK_SHELL));
        let bash = dir.path().join("bash");
        std::fs::write(&bash, "#!/bin/sh\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bash, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = std::env::join_paths([Path::new("/nonexistent"), dir.path()]).expect("join");
        assert_eq!(find_shell(Some(&path)), bash);
    }
}
