//! A forge server's settings, read once in `main` from the environment (or from pairs in a
//! test) through one lookup with one rule: a variable that is unset, empty or only
//! whitespace is *not set* and takes its default. Parsing never fails at start (seed 001);
//! a bad value is kept as an error for the call that needs it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// The variables a server reads.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    vars: HashMap<String, OsString>,
}

/// A value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error(
        "{var}={value:?} is not a whole number greater than zero; unset it for the default ({default})"
    )]
    NotAPositiveNumber {
        var: &'static str,
        value: String,
        default: u64,
    },
}

/// A path setting and whether its default applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathSetting {
    /// The variable that sets it, named in error messages.
    pub var: &'static str,
    pub path: PathBuf,
    /// The variable was not set: the default applies.
    pub is_default: bool,
}

impl Settings {
    /// The process's environment.
    pub fn from_process() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// These variables (tests, or an environment already read).
    pub fn from_vars<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Self {
            vars: vars
                .into_iter()
                .filter_map(|(k, v)| Some((k.into().into_string().ok()?, v.into())))
                .collect(),
        }
    }

    fn raw(&self, var: &str) -> Option<&OsString> {
        self.vars
            .get(var)
            .filter(|value| !value.to_string_lossy().trim().is_empty())
    }

    /// The variable's text, trimmed; `None` when not set (or not valid UTF-8).
    pub fn text(&self, var: &str) -> Option<String> {
        self.raw(var)
            .and_then(|value| value.to_str())
            .map(|value| value.trim().to_owned())
    }

    /// The variable as a path.
    pub fn path(&self, var: &str) -> Option<PathBuf> {
        self.raw(var).map(PathBuf::from)
    }

    /// The variable as a path, else `default`.
    pub fn path_or(&self, var: &'static str, default: &str) -> PathSetting {
        match self.path(var) {
            Some(path) => PathSetting {
                var,
                path,
                is_default: false,
            },
            None => PathSetting {
                var,
                path: PathBuf::from(default),
                is_default: true,
            },
        }
    }

    /// The variable as a whole number above zero, else `default`.
    pub fn positive(&self, var: &'static str, default: u64) -> Result<u64, SettingError> {
        match self.text(var) {
            None => Ok(default),
            Some(value) => match value.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(SettingError::NotAPositiveNumber {
                    var,
                    value,
                    default,
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn unset_empty_and_blank_are_not_set() {
        let settings =
            Settings::from_vars([("A", "x "), ("B", ""), ("C", "  "), ("N", "12"), ("Z", "0")]);
        assert_eq!(settings.text("A"), Some("x".into()));
        for var in ["B", "C", "missing"] {
            assert_eq!(settings.text(var), None, "{var}");
        }
        assert_eq!(
            settings.path_or("B", "/default"),
            PathSetting {
                var: "B",
                path: "/default".into(),
                is_default: true
            }
        );
        assert_eq!(settings.positive("N", 5), Ok(12));
        assert_eq!(settings.positive("missing", 5), Ok(5));
        assert_eq!(
            settings.positive("Z", 5),
            Err(SettingError::NotAPositiveNumber {
                var: "Z",
                value: "0".into(),
                default: 5
            })
        );
    }
}
