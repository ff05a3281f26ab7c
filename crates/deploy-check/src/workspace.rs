//! What the workspace builds, from `cargo metadata`: each binary target with its package,
//! and the declared `rust-version`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::error::CheckError;

/// The workspace as the deployment files see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Binary target name → package name.
    pub binaries: BTreeMap<String, String>,
    /// `rust-version` of each package that declares one.
    pub rust_versions: BTreeMap<String, String>,
}

impl Workspace {
    /// Runs `cargo metadata --no-deps` in `root` with the `cargo` binary given.
    pub fn load(cargo: &Path, root: &Path) -> Result<Self, CheckError> {
        let output = Command::new(cargo)
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--offline",
            ])
            .current_dir(root)
            .output()
            .map_err(|error| CheckError::Metadata(error.to_string()))?;
        if !output.status.success() {
            return Err(CheckError::Metadata(
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ));
        }
        let metadata: Value = serde_json::from_slice(&output.stdout)
            .map_err(|error| CheckError::Metadata(error.to_string()))?;
        Ok(Self::from_metadata(&metadata))
    }

    /// The binaries and rust versions in a `cargo metadata` document.
    pub fn from_metadata(metadata: &Value) -> Self {
        let mut binaries = BTreeMap::new();
        let mut rust_versions = BTreeMap::new();
        let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
        for package in &packages {
            let Some(name) = package["name"].as_str() else {
                continue;
            };
            if let Some(version) = package["rust_version"].as_str() {
                rust_versions.insert(name.to_owned(), version.to_owned());
            }
            let targets = package["targets"].as_array().cloned().unwrap_or_default();
            for target in &targets {
                let is_bin = target["kind"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin"));
                if let (true, Some(bin)) = (is_bin, target["name"].as_str()) {
                    binaries.insert(bin.to_owned(), name.to_owned());
                }
            }
        }
        Self {
            binaries,
            rust_versions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn binaries_and_rust_versions_come_from_metadata() {
        let metadata = json!({"packages": [
            {"name": "bot-craft", "rust_version": "1.95", "targets": [
                {"name": "botcraft", "kind": ["bin"]},
                {"name": "seed", "kind": ["test"]},
            ]},
            {"name": "store", "rust_version": null, "targets": [{"name": "store", "kind": ["lib"]}]},
        ]});
        assert_eq!(
            Workspace::from_metadata(&metadata),
            Workspace {
                binaries: BTreeMap::from([("botcraft".into(), "bot-craft".into())]),
                rust_versions: BTreeMap::from([("bot-craft".into(), "1.95".into())]),
            }
        );
    }
}
