//! The server's configuration: which folder the file tools are confined to
//! and which repository the trash tools work in.
//!
//! Parsed once in `main` from the environment into typed values; nothing
//! else in the crate reads the environment. Parsing never fails: whether a
//! root exists is checked by the call that needs it (seed 001, "start with
//! nothing").

use server_kit::Settings;

use crate::protect::{PROTECTED_VAR, WriteProtection};

/// The variable naming the folder the file tools may touch.
pub const WORKSPACE_ROOT_VAR: &str = "WORKSPACE_ROOT";
/// Its default.
pub const DEFAULT_WORKSPACE_ROOT: &str = "/workspace";
/// The variable naming the repository whose `.trash/` the trash tools use.
pub const REPO_ROOT_VAR: &str = "REPO_ROOT";
/// Its default.
pub const DEFAULT_REPO_ROOT: &str = "/workspace/erik/uvilo-os";

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
}

impl Config {
    /// Build the configuration from the settings `main` read. A variable that is unset,
    /// empty or blank takes its default.
    pub fn from_settings(settings: &Settings) -> Self {
        Self {
            workspace_root: settings.path_or(WORKSPACE_ROOT_VAR, DEFAULT_WORKSPACE_ROOT),
            repo_root: settings.path_or(REPO_ROOT_VAR, DEFAULT_REPO_ROOT),
            protection: WriteProtection::parse(settings.text(PROTECTED_VAR).as_deref()),
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
}
