//! The importer for the standard `mcpServers` JSON of MCP hosts.
//!
//! Accepted shapes:
//! - Claude Desktop, Cursor, Windsurf, Cline: `{"mcpServers": {NAME: {command, args, env}}}`;
//! - VS Code `.vscode/mcp.json`: `{"servers": {NAME: {"type": "stdio", command, args, env}}}`;
//! - VS Code `settings.json`: `{"mcp": {"servers": {…}}}`.
//!
//! A stdio entry has `command`, `args`, `env`. A remote entry has `url` (Windsurf:
//! `serverUrl`) and optional `headers`; its transport is its `type`: `http`,
//! `streamable-http` or `streamableHttp` (streamable HTTP) or `sse` (HTTP+SSE). A remote entry
//! without a `type` (Cursor's form) is streamable HTTP unless its path ends in `/sse`, the
//! convention of SSE servers. An entry is skipped, with the reason, when its `type` is none of
//! these, it is disabled (`"disabled": true`), needs what the model cannot hold (`cwd`,
//! `envFile`), or fails validation (a refused env key, a VS Code `${input:…}` reference, a URL
//! with a password, …). Importing a name that exists replaces how it is reached (transport,
//! command, args, env, url, headers) and keeps its timeouts, always-on flag and instructions.

use std::collections::BTreeMap;

use serde_json::Value;
use thiserror::Error;

use crate::database::Store;
use crate::error::{StoreError, ValidationError};
use crate::model::{McpServerSpec, Transport};
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
    #[error("transport type {transport:?} is not one BotCraft speaks (stdio, http, sse)")]
    UnknownTransport { transport: String },
    #[error("disabled in the source file")]
    Disabled,
    #[error("no \"command\" string")]
    NoCommand,
    #[error("no \"url\" for a remote server")]
    NoUrl,
    #[error("field {field:?} has the wrong type")]
    WrongType { field: &'static str },
    #[error("field {field:?} is not supported by the McpServer model")]
    Unsupported { field: &'static str },
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// A way to run a `server.json` server that was not taken (`crate::registry`).
    #[error("{reason}")]
    Registry { reason: String },
    /// Its name is written in tool names as another server's is (`my.fs`, `my_fs`).
    #[error("its name is written {prefix:?} in tool names, as the name of the server {other:?} is")]
    NameClash { other: String, prefix: String },
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
    let kind = match entry.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => return Err(SkipReason::WrongType { field: "type" }),
    };
    let url = entry.get("url").or_else(|| entry.get("serverUrl"));
    let transport = match (kind, url) {
        (Some("stdio"), _) => Transport::Stdio,
        (Some("http" | "streamable-http" | "streamableHttp"), _) => Transport::StreamableHttp,
        (Some("sse"), _) => Transport::Sse,
        (Some(other), _) => {
            return Err(SkipReason::UnknownTransport {
                transport: other.to_owned(),
            });
        }
        (None, None) => Transport::Stdio,
        (None, Some(url)) => match url.as_str() {
            Some(url) if url_path(url).ends_with("/sse") => Transport::Sse,
            _ => Transport::StreamableHttp,
        },
    };
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
    if transport.is_remote() {
        return remote_spec(name, transport, entry);
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

/// The path of `url`, without its query or fragment.
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find('/').map_or("", |at| &rest[at..]);
    path.split(['?', '#']).next().unwrap_or_default()
}

fn remote_spec(
    name: &str,
    transport: Transport,
    entry: &serde_json::Map<String, Value>,
) -> Result<McpServerSpec, SkipReason> {
    let url = entry
        .get("url")
        .or_else(|| entry.get("serverUrl"))
        .ok_or(SkipReason::NoUrl)?
        .as_str()
        .ok_or(SkipReason::WrongType { field: "url" })?;
    let headers: BTreeMap<String, String> = match entry.get("headers") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| SkipReason::WrongType { field: "headers" })?,
    };
    let mut spec = McpServerSpec::remote(name, transport, url);
    spec.headers = headers;
    validate::server(&spec)?;
    Ok(spec)
}

/// What an imported server that already exists keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportUpdate {
    /// Its sandbox, always-on and idle settings (an operator's own file, re-imported).
    KeepSettings,
    /// Not its sandbox: a third-party document (an MCP Registry entry) replaces the server.
    Replace,
}

impl Store {
    /// Write an import plan: create new names, update command/args/env of existing ones
    /// (each keeps its sandbox, its always-on and idle settings and its bindings).
    pub async fn import_servers(&self, plan: &ImportPlan) -> Result<ImportReport, StoreError> {
        self.import_servers_as(plan, ImportUpdate::KeepSettings)
            .await
    }

    /// [`Store::import_servers`], saying what an existing server keeps.
    pub async fn import_servers_as(
        &self,
        plan: &ImportPlan,
        update: ImportUpdate,
    ) -> Result<ImportReport, StoreError> {
        let mut report = ImportReport {
            skipped: plan.skipped.clone(),
            ..ImportReport::default()
        };
        for spec in &plan.servers {
            match self.server_by_name(&spec.name).await? {
                Some(existing) => {
                    let mut merged = existing.spec();
                    merged.transport = spec.transport;
                    merged.command = spec.command.clone();
                    merged.args = spec.args.clone();
                    merged.env = spec.env.clone();
                    merged.url = spec.url.clone();
                    merged.headers = spec.headers.clone();
                    if update == ImportUpdate::Replace {
                        // Its sandbox named paths from its old env (`${WORKSPACE_ROOT}`),
                        // which the imported document now sets: it starts again from the
                        // default of a new server.
                        merged.sandbox = spec.sandbox.clone();
                    }
                    self.update_server(&existing.id, &merged).await?;
                    report.updated.push(spec.name.clone());
                }
                // A name that clashes is left out, and the rest goes on (some may be written).
                None => match self.create_server(spec).await {
                    Ok(_) => report.created.push(spec.name.clone()),
                    Err(StoreError::ServerNameClash { other, prefix, .. }) => {
                        report.skipped.push(Skipped {
                            name: spec.name.clone(),
                            reason: SkipReason::NameClash { other, prefix },
                        });
                    }
                    Err(error) => return Err(error),
                },
            }
        }
        Ok(report)
    }
}
