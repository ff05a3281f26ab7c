//! The server's configuration: which folder the file tools are confined to
//! and which repository the trash tools work in.
//!
//! Parsed once in `main` from the environment into typed values; nothing
//! else in the crate reads the environment. Parsing never fails: whether a
//! root exists is checked by the call that needs it (seed 001, "start with
//! nothing").

use server_kit::Settings;

use std::time::Duration;

use crate::protect::{PROTECTED_VAR, WriteProtection};
use crate::walk::{
    DEFAULT_MAX_ENTRIES, DEFAULT_MAX_SECONDS, DEFAULT_MAX_WALK_ENTRIES, MAX_ENTRIES_VAR,
    MAX_SECONDS_VAR, MAX_WALK_ENTRIES_VAR, WalkLimits,
};

/// The variable naming the folder the file tools may touch.
pub const WORKSPACE_ROOT_VAR: &str = "WORKSPACE_ROOT";
/// Its default.
pub const DEFAULT_WORKSPACE_ROOT: &str = "/workspace";
/// The variable naming the repository whose `.trash/` the trash tools use.
pub const REPO_ROOT_VAR: &str = "REPO_ROOT";
/// Its default.
pub const DEFAULT_REPO_ROOT: &str = "/workspace/erik/uvilo-os";

/// The variable capping what one whole-file `read_text_file` returns, in bytes.
pub const MAX_READ_BYTES_VAR: &str = "FORGE_FS_MAX_READ_BYTES";
/// Its default: 4 MiB. The file is read no further, so memory stays bounded whatever its
/// size; a bot's own cap on a result (BotCraft's `maxToolResultChars`) is usually far lower.
/// The answer carries the text twice (content and `structuredContent`), and rmcp clients drop
/// a line over 16 MiB (`DEFAULT_MAX_LINE_LENGTH`) — the call then hangs to its timeout — so
/// the cap keeps ordinary text well under that.
pub const DEFAULT_MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// One configured root folder and where its value came from (the kit's path setting).
pub type RootSetting = server_kit::PathSetting;

/// Everything the server is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Confines `read_text_file`, `write_file`, `edit_file`,
    /// `list_directory` and `search_files`.
    pub workspace_root: RootSetting,
    /// Holds `.trash/`; confines the trash tools.
    pub repo_root: RootSetting,
    /// What `write_file` and `edit_file` refuse (`.git`, `.trash`, `FORGE_FS_PROTECTED`).
    pub protection: WriteProtection,
    /// At most this many bytes of a file are read by a whole-file `read_text_file`
    /// (`FORGE_FS_MAX_READ_BYTES`; unset, blank, not a whole number or 0: the default).
    pub max_read_bytes: u64,
    /// The bounds of `list_directory` and `search_files` (`FORGE_FS_MAX_ENTRIES`,
    /// `FORGE_FS_MAX_WALK_ENTRIES`, `FORGE_FS_MAX_SECONDS`; their answers are capped at
    /// `max_read_bytes` too).
    pub walk: WalkLimits,
}

impl Config {
    /// Build the configuration from the settings `main` read. A variable that is unset,
    /// empty or blank takes its default.
    pub fn from_settings(settings: &Settings) -> Self {
        // Not a whole number above zero: the default (as for every number here).
        let number = |var, default| settings.positive(var, default).unwrap_or(default);
        let max_read_bytes = number(MAX_READ_BYTES_VAR, DEFAULT_MAX_READ_BYTES);
        Self {
            workspace_root: settings.path_or(WORKSPACE_ROOT_VAR, DEFAULT_WORKSPACE_ROOT),
            repo_root: settings.path_or(REPO_ROOT_VAR, DEFAULT_REPO_ROOT),
            protection: WriteProtection::parse(settings.text(PROTECTED_VAR).as_deref()),
            max_read_bytes,
            walk: WalkLimits {
                max_entries: number(MAX_ENTRIES_VAR, DEFAULT_MAX_ENTRIES),
                max_bytes: max_read_bytes,
                max_walk_entries: number(MAX_WALK_ENTRIES_VAR, DEFAULT_MAX_WALK_ENTRIES),
                max_time: Duration::from_secs(number(MAX_SECONDS_VAR, DEFAULT_MAX_SECONDS)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    use std::path::PathBuf;

    fn lookup_in(pairs: &[(&str, &str)]) -> Settings {
        Settings::from_vars(pairs.iter().copied())
    }

    #[test]
    fn unset_and_empty_variables_take_the_defaults() {
        for pairs in [&[][..], &[("WORKSPACE_ROOT", ""), ("REPO_ROOT", " ")][..]] {
            let config = Config::from_settings(&lookup_in(pairs));
            assert_eq!(
                config,
                Config {
                    workspace_root: RootSetting {
                        var: "WORKSPACE_ROOT",
                        path: PathBuf::from("/workspace"),
                        is_default: true,
                    },
                    repo_root: RootSetting {
                        var: "REPO_ROOT",
                        path: PathBuf::from("/workspace/erik/uvilo-os"),
                        is_default: true,
                    },
                    protection: WriteProtection::default(),
                    max_read_bytes: DEFAULT_MAX_READ_BYTES,
                    walk: WalkLimits::default(),
                }
            );
        }
    }

    #[test]
    fn set_variables_are_taken_as_given() {
        let config = Config::from_settings(&lookup_in(&[
            ("WORKSPACE_ROOT", "/srv/ws"),
            ("REPO_ROOT", "relative/repo"),
        ]));
        assert_eq!(config.workspace_root.path, PathBuf::from("/srv/ws"));
        assert!(!config.workspace_root.is_default);
        assert_eq!(config.repo_root.path, PathBuf::from("relative/repo"));
    }

    #[test]
    fn walk_bounds_are_read_and_bad_values_take_the_defaults() {
        let config = Config::from_settings(&lookup_in(&[
            ("FORGE_FS_MAX_READ_BYTES", "1000"),
            ("FORGE_FS_MAX_ENTRIES", "5"),
            ("FORGE_FS_MAX_WALK_ENTRIES", "0"),
            ("FORGE_FS_MAX_SECONDS", "soon"),
        ]));
        assert_eq!(
            config.walk,
            WalkLimits {
                max_entries: 5,
                max_bytes: 1000,
                max_walk_entries: DEFAULT_MAX_WALK_ENTRIES,
                max_time: Duration::from_secs(DEFAULT_MAX_SECONDS),
            }
        );
    }
}
