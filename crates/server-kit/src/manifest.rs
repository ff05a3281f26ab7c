//! Committed manifests: the tool manifest (the JSON that `--manifest` prints and that each
//! server commits as `tools.manifest.json`) and the drift check that keeps a committed JSON
//! file equal to what the code produces ([`check_committed`], also what the gateway's bot
//! manifest is checked with).

use std::path::{Path, PathBuf};

use rmcp::model::Tool;
use serde_json::{Value, json};

/// The manifest text: `{"tools": [...]}` exactly as `tools/list` carries the
/// tools, pretty-printed, with a final newline.
pub fn render(tools: &[Tool]) -> String {
    let value = json!({ "tools": tools });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

/// A manifest that cannot be read, written or parsed, or that no longer matches the code.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read the manifest {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the manifest {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the manifest {path} is not JSON: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "the committed manifest {path} has drifted from the code.\n--- committed\n{committed}\n+++ current\n{current}\nRefresh it with `{refresh}`."
    )]
    Drift {
        path: PathBuf,
        committed: String,
        current: String,
        refresh: String,
    },
}

/// Compare the committed manifest at `path` with `tools`. `refresh` is the
/// command a developer runs to rewrite it; it goes in the error.
pub fn check(path: &Path, tools: &[Tool], refresh: &str) -> Result<(), ManifestError> {
    check_committed(path, &json!({ "tools": tools }), || render(tools), refresh)
}

/// Compare the JSON committed at `path` with `current` (as values: key order and spacing do
/// not count). On drift the error carries both texts, `current` as `render` writes it, and
/// `refresh`, the command that rewrites the file.
pub fn check_committed(
    path: &Path,
    current: &Value,
    render: impl FnOnce() -> String,
    refresh: &str,
) -> Result<(), ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
        path: path.to_owned(),
        source,
    })?;
    let committed: Value = serde_json::from_str(&text).map_err(|source| ManifestError::Parse {
        path: path.to_owned(),
        source,
    })?;
    if committed == *current {
        Ok(())
    } else {
        Err(ManifestError::Drift {
            path: path.to_owned(),
            committed: text,
            current: render(),
            refresh: refresh.to_owned(),
        })
    }
}

/// Write the manifest for `tools` to `path`.
pub fn write(path: &Path, tools: &[Tool]) -> Result<(), ManifestError> {
    std::fs::write(path, render(tools)).map_err(|source| ManifestError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolbox::empty_schema;

    #[test]
    fn check_passes_on_equal_and_fails_on_drift() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tools.manifest.json");
        let tools = vec![Tool::new("list_trash", "List trash", empty_schema())];
        write(&path, &tools).expect("write");
        check(&path, &tools, "refresh").expect("equal manifests pass");

        let changed = vec![Tool::new("list_trash", "List the trash", empty_schema())];
        let error = check(&path, &changed, "refresh").expect_err("drift is caught");
        assert!(matches!(error, ManifestError::Drift { .. }));
    }
}
