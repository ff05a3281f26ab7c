//! The server's configuration: which folder the file tools are confined to
//! and which repository the trash tools work in.
//!
//! Parsed once in `main` from the environment into typed values; nothing
//! else in the crate reads the environment. Parsing never fails: whether a
//! root exists is checked by the call that needs it (seed 001, "start with
//! nothing").

use std::ffi::OsString;
use std::path::PathBuf;

/// The variable naming the folder the file tools may touch.
pub const WORKSPACE_ROOT_VAR: &str = "WORKSPACE_ROOT";
/// Its default.
pub const DEFAULT_WORKSPACE_ROOT: &str = "/workspace";
/// The variable naming the repository whose `.trash/` the trash tools use.
pub const REPO_ROOT_VAR: &str = "REPO_ROOT";
/// Its default.
pub const DEFAULT_REPO_ROOT: &str = "/workspace/erik/uvilo-os";

/// One configured root folder and where its value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootSetting {
    /// The environment variable that sets it, named in error messages.
    pub var: &'static str,
    /// The folder as configured (not yet resolved).
    pub path: PathBuf,
    /// True when the variable was unset or empty and the default applies.
    pub is_default: bool,
}

impl RootSetting {
    fn from_value(var: &'static str, default: &str, value: Option<OsString>) -> Self {
        match value {
            Some(value) if !value.is_empty() => Self {
                var,
                path: PathBuf::from(value),
                is_default: false,
            },
            _ => Self {
                var,
                path: PathBuf::from(default),
                is_default: true,
            },
        }
    }
}

/// Everything the server is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Confines `read_text_file`, `write_file`, `edit_file`,
    /// `list_directory` and `search_files`.
    pub workspace_root: RootSetting,
    /// Holds `.trash/`; confines the trash tools.
    pub repo_root: RootSetting,
}

impl Config {
    /// Build the configuration from an environment lookup (`main` passes
    /// `std::env::var_os`). An unset or empty variable takes its default.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        Self {
            workspace_root: RootSetting::from_value(
                WORKSPACE_ROOT_VAR,
                DEFAULT_WORKSPACE_ROOT,
                lookup(WORKSPACE_ROOT_VAR),
            ),
            repo_root: RootSetting::from_value(
                REPO_ROOT_VAR,
                DEFAULT_REPO_ROOT,
                lookup(REPO_ROOT_VAR),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn lookup_in(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn unset_and_empty_variables_take_the_defaults() {
        for pairs in [&[][..], &[("WORKSPACE_ROOT", ""), ("REPO_ROOT", "")][..]] {
            let config = Config::from_lookup(lookup_in(pairs));
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
                }
            );
        }
    }

    #[test]
    fn set_variables_are_taken_as_given() {
        let config = Config::from_lookup(lookup_in(&[
            ("WORKSPACE_ROOT", "/srv/ws"),
            ("REPO_ROOT", "relative/repo"),
        ]));
        assert_eq!(config.workspace_root.path, PathBuf::from("/srv/ws"));
        assert!(!config.workspace_root.is_default);
        assert_eq!(config.repo_root.path, PathBuf::from("relative/repo"));
    }
}
