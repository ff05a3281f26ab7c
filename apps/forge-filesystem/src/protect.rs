//! Paths `write_file` and `edit_file` never write: anything under a `.git` or `.trash`
//! folder (or file) at any depth, so no repository inside the root can get a hook, a
//! `core.fsmonitor` command or a rewritten trash through the file tools, plus the
//! operator's own list (`FORGE_FS_PROTECTED`, paths relative to `WORKSPACE_ROOT`).
//!
//! The check runs on the *real* path (every symlink followed), relative to the root's real
//! path, so a symlink into `.git` is refused like `.git` itself.

use std::path::{Path, PathBuf};

/// The variable naming extra protected paths (comma-separated, relative to the root).
pub const PROTECTED_VAR: &str = "FORGE_FS_PROTECTED";

/// Folder names protected wherever they appear.
pub const ALWAYS_PROTECTED: [&str; 2] = [".git", ".trash"];

/// A write the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Refusing to write {}: {rule} is protected (write_file and edit_file never write under .git, .trash or the paths in FORGE_FS_PROTECTED)",
    .relative.display()
)]
pub struct ProtectedWrite {
    pub relative: PathBuf,
    pub rule: String,
}

/// The paths one server protects besides [`ALWAYS_PROTECTED`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteProtection {
    extra: Vec<PathBuf>,
}

impl WriteProtection {
    /// From `FORGE_FS_PROTECTED`'s text: comma-separated, blanks ignored, leading `./` and
    /// `/` dropped (every entry is relative to the root).
    pub fn parse(text: Option<&str>) -> Self {
        let extra = text
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .map(|entry| entry.trim_start_matches("./").trim_start_matches('/'))
            .map(|entry| entry.trim_end_matches('/'))
            .filter(|entry| !entry.is_empty())
            .map(PathBuf::from)
            .collect();
        Self { extra }
    }

    /// Refuse a write to `real` (a resolved path inside `root_real`): under a protected
    /// path, or under what a protected path really is (`release` a symlink to `config`
    /// protects `config/…` too).
    pub fn check(&self, root_real: &Path, real: &Path) -> Result<(), ProtectedWrite> {
        let relative = real.strip_prefix(root_real).unwrap_or(real);
        self.check_relative(relative)?;
        match self.extra.iter().find(|rule| {
            real_path_of(root_real, rule).is_some_and(|target| real.starts_with(target))
        }) {
            Some(rule) => Err(ProtectedWrite {
                relative: relative.to_path_buf(),
                rule: rule.display().to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Refuse a write to `relative` (a path relative to the root).
    pub fn check_relative(&self, relative: &Path) -> Result<(), ProtectedWrite> {
        let refused = |rule: &str| ProtectedWrite {
            relative: relative.to_path_buf(),
            rule: rule.to_owned(),
        };
        if let Some(rule) = relative.components().find_map(|part| {
            ALWAYS_PROTECTED
                .iter()
                .find(|name| part.as_os_str() == **name)
        }) {
            return Err(refused(rule));
        }
        if let Some(rule) = self.extra.iter().find(|rule| relative.starts_with(rule)) {
            return Err(refused(&rule.display().to_string()));
        }
        Ok(())
    }

    /// The operator's protected path that lies inside `real` (a folder about to be moved
    /// away whole, such as by the trash), if any: as written, or as its real path (a
    /// protected symlink's target inside the folder).
    pub fn held_by(&self, root_real: &Path, real: &Path) -> Option<&Path> {
        let relative = real.strip_prefix(root_real).ok()?;
        self.extra
            .iter()
            .find(|rule| {
                rule.starts_with(relative)
                    || real_path_of(root_real, rule).is_some_and(|target| target.starts_with(real))
            })
            .map(PathBuf::as_path)
    }
}

/// What `rule` (relative to the root) really is, when it exists: every symlink followed (a
/// loop or a missing path has none, and the rule then protects by its name alone).
fn real_path_of(root_real: &Path, rule: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(root_real.join(rule)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn git_and_trash_anywhere_and_the_extra_list_are_refused() {
        let protection = WriteProtection::parse(Some(" ./secrets/ , /deploy/prod.env,, "));
        let root = Path::new("/ws");
        let cases = [
            ("/ws/.git/hooks/post-commit", Some(".git")),
            ("/ws/.git/config", Some(".git")),
            ("/ws/.git", Some(".git")),
            ("/ws/vendor/lib/.git/config", Some(".git")),
            ("/ws/.trash/a.md", Some(".trash")),
            ("/ws/secrets/key.pem", Some("secrets")),
            ("/ws/deploy/prod.env", Some("deploy/prod.env")),
            ("/ws/deploy/dev.env", None),
            ("/ws/docs/.gitignore", None),
            ("/ws/git/config", None),
            ("/ws/secrets-not/x", None),
        ];
        for (path, rule) in cases {
            assert_eq!(
                protection
                    .check(root, Path::new(path))
                    .err()
                    .map(|e| e.rule),
                rule.map(str::to_owned),
                "{path}"
            );
        }
    }

    #[test]
    fn the_message_names_the_path_and_the_rule() {
        let error = WriteProtection::default()
            .check(Path::new("/ws"), Path::new("/ws/repo/.git/config"))
            .expect_err("refused");
        assert_eq!(
            error.to_string(),
            "Refusing to write repo/.git/config: .git is protected (write_file and edit_file never write under .git, .trash or the paths in FORGE_FS_PROTECTED)"
        );
    }
}
