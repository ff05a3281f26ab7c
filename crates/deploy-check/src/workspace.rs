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
    /// Each member → the members it depends on (normal dependencies, not dev or build).
    pub dependencies: BTreeMap<String, Vec<String>>,
    /// Members whose manifest is under `apps/`.
    pub apps: Vec<String>,
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
        let mut dependencies = BTreeMap::new();
        let mut apps = Vec::new();
        let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
        let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
        for package in &packages {
            let Some(name) = package["name"].as_str() else {
                continue;
            };
            if package["manifest_path"]
                .as_str()
                .is_some_and(|path| path.contains("/apps/"))
            {
                apps.push(name.to_owned());
            }
            let mut deps: Vec<String> = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| members.contains(d))
                .map(str::to_owned)
                .collect();
            deps.sort();
            deps.dedup();
            dependencies.insert(name.to_owned(), deps);
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
        apps.sort();
        Self {
            binaries,
            rust_versions,
            dependencies,
            apps,
        }
    }

    /// The members' dependency graph as text: `crate → dep, dep` per line, by name; members
    /// without workspace dependencies are listed alone.
    pub fn graph(&self) -> String {
        self.dependencies
            .iter()
            .map(|(name, deps)| {
                if deps.is_empty() {
                    name.clone()
                } else {
                    format!("{name} → {}", deps.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether `from` depends on `to`, directly or through other members.
    pub fn depends_on(&self, from: &str, to: &str) -> bool {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(next) = todo.pop() {
            for dep in self.dependencies.get(&next).into_iter().flatten() {
                if dep == to {
                    return true;
                }
                if seen.insert(dep.clone()) {
                    todo.push(dep.clone());
                }
            }
        }
        false
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
            {"name": "bot-craft", "rust_version": "1.95", "manifest_path": "/w/apps/bot-craft/Cargo.toml",
             "dependencies": [{"name": "store", "kind": null}, {"name": "tempfile", "kind": null},
                              {"name": "pretty_assertions", "kind": "dev"}],
             "targets": [
                {"name": "botcraft", "kind": ["bin"]},
                {"name": "seed", "kind": ["test"]},
            ]},
            {"name": "store", "rust_version": null, "manifest_path": "/w/crates/store/Cargo.toml",
             "dependencies": [], "targets": [{"name": "store", "kind": ["lib"]}]},
        ]});
        assert_eq!(
            Workspace::from_metadata(&metadata),
            Workspace {
                binaries: BTreeMap::from([("botcraft".into(), "bot-craft".into())]),
                rust_versions: BTreeMap::from([("bot-craft".into(), "1.95".into())]),
                dependencies: BTreeMap::from([
                    ("bot-craft".into(), vec!["store".into()]),
                    ("store".into(), vec![]),
                ]),
                apps: vec!["bot-craft".into()],
            }
        );
        let workspace = Workspace::from_metadata(&metadata);
        assert!(workspace.depends_on("bot-craft", "store"));
        assert!(!workspace.depends_on("store", "bot-craft"));
        assert_eq!(workspace.graph(), "bot-craft → store\nstore");
    }
}
