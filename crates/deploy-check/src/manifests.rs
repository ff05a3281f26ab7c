//! Kubernetes manifests: every YAML document of every `*.yaml` file in a directory, as JSON
//! values, and the containers of the workloads among them.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::CheckError;

/// One document with the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub file: String,
    pub document: Value,
}

impl Manifest {
    pub fn kind(&self) -> &str {
        self.document["kind"].as_str().unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        self.document["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
    }

    /// The containers and init containers of a workload's pod template.
    pub fn containers(&self) -> Vec<&Value> {
        let pod = &self.document["spec"]["template"]["spec"];
        ["initContainers", "containers"]
            .iter()
            .filter_map(|key| pod[*key].as_array())
            .flatten()
            .collect()
    }
}

/// The documents of one YAML text (`---` separated).
pub fn parse(file: &str, text: &str) -> Result<Vec<Manifest>, CheckError> {
    let error = |message: String| CheckError::Manifest {
        path: file.to_owned(),
        message,
    };
    let mut manifests = Vec::new();
    for document in serde_norway::Deserializer::from_str(text) {
        let value = serde_norway::Value::deserialize(document).map_err(|e| error(e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let document = serde_json::to_value(value).map_err(|e| error(e.to_string()))?;
        manifests.push(Manifest {
            file: file.to_owned(),
            document,
        });
    }
    Ok(manifests)
}

/// Every document of every `*.yaml` file in `dir`, files in name order.
pub fn load_dir(dir: &Path) -> Result<Vec<Manifest>, CheckError> {
    let error = |message: String| CheckError::Manifest {
        path: dir.display().to_string(),
        message,
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| error(e.to_string()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    let mut manifests = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| error(e.to_string()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        manifests.extend(parse(&name.unwrap_or_default(), &text)?);
    }
    Ok(manifests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn documents_and_containers_are_read() {
        let text = "---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n\
                    kind: Deployment\nmetadata: {name: b}\nspec:\n  template:\n    spec:\n      \
                    initContainers: [{name: seed}]\n      containers: [{name: app}]\n";
        let manifests = parse("x.yaml", text).expect("parses");
        let kinds: Vec<(&str, &str)> = manifests.iter().map(|m| (m.kind(), m.name())).collect();
        assert_eq!(kinds, vec![("Service", "a"), ("Deployment", "b")]);
        let names: Vec<&str> = manifests[1]
            .containers()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, vec!["seed", "app"]);
    }

    #[test]
    fn invalid_yaml_names_the_file() {
        assert!(matches!(
            parse("bad.yaml", "a: [1,\n"),
            Err(CheckError::Manifest { path, .. }) if path == "bad.yaml"
        ));
    }
}
