//! The importer for the standard `mcpServers` JSON of MCP hosts.
//!
//! Accepted shapes:
//! - Claude Desktop, Cursor, Windsurf, Cline: `{"mcpServers": {NAME: {command, args, env}}}`;
//! - VS Code `.vscode/mcp.json`: `{"servers": {NAME: {"type": "stdio", command, args, env}}}`;
//! - VS Code `settings.json`: `{"mcp": {"servers": {…}}}`.
//!
//! Only stdio servers are imported. An entry is skipped, with the reason, when it is remote
//! (`url` or a `type` other than `stdio`), disabled (`"disabled": true`), needs what the model
//! cannot hold (`cwd`, `envFile`), or fails validation (a refused env key, a VS Code
//! `${input:…}` reference, …). Importing a name that exists replaces its command, args and env
//! and keeps its timeouts, always-on flag and instructions.

use std::collections::BTreeMap;

use serde_json::Value;
use thiserror::Error;

use crate::database::Store;
use crate::error::{StoreError, ValidationError};
use crate::model::McpServerSpec;
use crate::validate;

/// A file that is not an `mcpServers` document at all.
#[derive(Debug, Error)]
pub enum ImportError {
    #[error("not JSON")]
    Json(#[from] serde_json::Error),
    #[error("no \"mcpServers\", \"servers\" or \"mcp.servers\" object at the top level")]
    NoServers,
}

/// Why one entry was not imported.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SkipReason {
    #[error("not an object")]
    NotAnObject,
    #[error("a remote server ({transport}); only stdio servers are managed")]
    Remote { transport: String },
    #[error("disabled in the source file")]
    Disabled,
    #[error("no \"command\" string")]
    NoCommand,
    #[error("field {field:?} has the wrong type")]
    WrongType { field: &'static str },
    #[error("field {field:?} is not supported by the McpServer model")]
    Unsupported { field: &'static str },
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

/// One entry that was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub reason: SkipReason,
}

/// What a file holds: the servers to write and the entries left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportPlan {
    pub servers: Vec<McpServerSpec>,
    pub skipped: Vec<Skipped>,
}

/// What an import wrote, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    pub skipped: Vec<Skipped>,
}

/// Read an `mcpServers` document (see the module docs for the shapes).
pub fn parse_mcp_servers(text: &str) -> Result<ImportPlan, ImportError> {
    let document: Value = serde_json::from_str(text)?;
    let servers = document
        .get("mcpServers")
        .or_else(|| document.get("servers"))
        .or_else(|| document.get("mcp").and_then(|mcp| mcp.get("servers")))
        .and_then(Value::as_object)
        .ok_or(ImportError::NoServers)?;
    let mut plan = ImportPlan::default();
    for (name, entry) in servers {
        match entry_spec(name, entry) {
            Ok(spec) => plan.servers.push(spec),
            Err(reason) => plan.skipped.push(Skipped {
                name: name.clone(),
                reason,
            }),
        }
    }
    Ok(plan)
}

fn entry_spec(name: &str, entry: &Value) -> Result<McpServerSpec, SkipReason> {
    let entry = entry.as_object().ok_or(SkipReason::NotAnObject)?;
    if let Some(url) = entry.get("url").or_else(|| entry.get("serverUrl")) {
        let transport = entry
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(if url.is_string() { "http" } else { "remote" });
        return Err(SkipReason::Remote {
            transport: transport.to_owned(),
        });
    }
    if let Some(kind) = entry.get("type").and_then(Value::as_str)
        && kind != "stdio"
    {
        return Err(SkipReason::Remote {
            transport: kind.to_owned(),
        });
    }
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Err(SkipReason::Disabled);
    }
    for field in ["cwd", "envFile"] {
        if entry.contains_key(field) {
            return Err(SkipReason::Unsupported {
                field: if field == "cwd" { "cwd" } else { "envFile" },
            });
        }
    }
    let command = entry
        .get("command")
        .and_then(Value::as_str)
        .ok_or(SkipReason::NoCommand)?;
    let args: Vec<String> = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| SkipReason::WrongType { field: "args" })?,
    };
    let env: BTreeMap<String, String> = match entry.get("env") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| SkipReason::WrongType { field: "env" })?,
    };
    let mut spec = McpServerSpec::new(name, command).args(args);
    spec.env = env;
    validate::server(&spec)?;
    Ok(spec)
}

impl Store {
    /// Write an import plan: create new names, update command/args/env of existing ones.
    pub async fn import_servers(&self, plan: &ImportPlan) -> Result<ImportReport, StoreError> {
        let mut report = ImportReport {
            skipped: plan.skipped.clone(),
            ..ImportReport::default()
        };
        for spec in &plan.servers {
            match self.server_by_name(&spec.name).await? {
                Some(existing) => {
                    let mut merged = existing.spec();
                    merged.command = spec.command.clone();
                    merged.args = spec.args.clone();
                    merged.env = spec.env.clone();
                    self.update_server(&existing.id, &merged).await?;
                    report.updated.push(spec.name.clone());
                }
                None => {
                    self.create_server(spec).await?;
                    report.created.push(spec.name.clone());
                }
            }
        }
        Ok(report)
    }
}
