//! `/api/servers…` — MCP server configs (CRUD with the store's validation, and an import of
//! an `mcpServers` document or an MCP Registry `server.json`) and their processes (start, stop, restart, stderr tail, tools,
//! a tool call for testing, a resource read as bytes). `{server}` is a server's id or its name. Every config write
//! reloads the manager's configs, so a change takes effect at the server's next start and a
//! deleted server is stopped.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcp_lifecycle::JsonObject;
use serde::Deserialize;
use serde_json::{Value, json};
use store::{McpServer, McpServerSpec, Store};

use crate::error::ApiError;
use crate::health::status_json;
use crate::state::AppState;
use mcp_lifecycle::LifecycleError;

/// The server with this id, else with this name.
pub async fn find_server(store: &Store, key: &str) -> Result<McpServer, ApiError> {
    if let Some(server) = store.server(key).await? {
        return Ok(server);
    }
    store
        .server_by_name(key)
        .await?
        .ok_or_else(|| ApiError::not_found("unknown_server", format!("no MCP server {key:?}")))
}

/// What a header value that holds no `${VAR}` reference reads as: header values are
/// credentials more often than not, and are written, never read back. A write that sends
/// this value keeps the stored one. Environment values that read as credentials
/// ([`hidden_env`]) read so too.
pub const HIDDEN_HEADER_VALUE: &str = "[hidden]";

/// Words of a variable's name that make its value a credential: anywhere in the name…
const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "COOKIE",
    "AUTH",
    "APIKEY",
];

/// …or as a whole part of it (`GITHUB_PAT`, `OPENAI_API_KEY`, but not `PATH`).
const CREDENTIAL_PARTS: &[&str] = &["KEY", "PAT", "PASS", "PW", "SESSION"];

/// Whether the environment variable `name` = `value` is not read back: any value but
/// `${VAR}` references alone (a reference is a name, not a secret) under a name that says
/// credential, or a URL that carries user information or a query
/// (`postgres://user:password@…`, references included).
pub fn hidden_env(name: &str, value: &str) -> bool {
    if only_references(value) {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_WORDS.iter().any(|word| upper.contains(word))
        || upper
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|part| CREDENTIAL_PARTS.contains(&part))
        || (value.contains("://") && observability::shown_url(value) != value)
}

/// Whether `value` is nothing but `${VAR}` references (and is not empty).
fn only_references(value: &str) -> bool {
    let mut rest = value;
    while let Some(after) = rest.strip_prefix("${") {
        match after.find('}') {
            Some(end) => rest = &after[end + 1..],
            None => return false,
        }
    }
    rest.is_empty() && !value.is_empty()
}

/// `server` as the API shows it: a header value with no `${VAR}` reference is
/// [`HIDDEN_HEADER_VALUE`] (a reference is a name, not a secret, and is shown), and so is an
/// environment value that reads as a credential ([`hidden_env`]).
fn shown(server: &McpServer) -> McpServer {
    let mut server = server.clone();
    for value in server.headers.values_mut() {
        if !value.contains("${") {
            HIDDEN_HEADER_VALUE.clone_into(value);
        }
    }
    for (name, value) in &mut server.env {
        if hidden_env(name, value) {
            HIDDEN_HEADER_VALUE.clone_into(value);
        }
    }
    server
}

/// `spec` with every [`HIDDEN_HEADER_VALUE`] replaced by the value `existing` stores for that
/// header or variable (a client that read a server and writes it back keeps its
/// credentials). Only while the server stays where it was: for a header, the same transport
/// and resource (scheme, host, port and path); for a variable, the same transport, command,
/// arguments and sandbox. A stored credential never goes to a URL or a program it was not written for, so
/// a write that moves the server must give the values again.
fn keep_hidden_values(
    mut spec: McpServerSpec,
    existing: &McpServer,
) -> Result<McpServerSpec, ApiError> {
    let resource = |url: Option<&str>| url.and_then(mcp_lifecycle::oauth::canonical_resource);
    let moved = spec.transport != existing.transport
        || resource(spec.url.as_deref()) != resource(existing.url.as_deref());
    let needed = |code: &'static str, what: &str, name: &str, why: &str| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
            format!(
                "give the value of {what} {name} again: the server's {why} changed, and a \
                 stored value is sent only to the {why} it was written for"
            ),
        )
    };
    for (name, value) in &mut spec.headers {
        if value == HIDDEN_HEADER_VALUE
            && let Some(stored) = existing.headers.get(name)
        {
            if moved {
                return Err(needed("header_value_needed", "header", name, "URL"));
            }
            value.clone_from(stored);
        }
    }
    // What runs, and how confined: a value written for one program never goes to another.
    let relaunched = spec.transport != existing.transport
        || spec.command != existing.command
        || spec.args != existing.args
        || spec.sandbox != existing.sandbox;
    for (name, value) in &mut spec.env {
        if value == HIDDEN_HEADER_VALUE
            && let Some(stored) = existing.env.get(name)
            && hidden_env(name, stored)
        {
            if relaunched {
                return Err(needed("env_value_needed", "variable", name, "program"));
            }
            value.clone_from(stored);
        }
    }
    Ok(spec)
}

/// A stored server with its live status (`null` before the manager knows it).
fn with_status(state: &AppState, server: &McpServer) -> Value {
    let mut value = serde_json::to_value(shown(server)).unwrap_or(Value::Null);
    let status = state
        .manager
        .get_all_statuses()
        .into_iter()
        .find(|status| status.name == server.name)
        .map(|status| status_json(&status));
    if let Value::Object(map) = &mut value {
        map.insert("status".to_owned(), status.unwrap_or(Value::Null));
    }
    value
}

/// Apply the store's configs to the manager; an always-on server just created or switched
/// on starts (in the background).
async fn reload(state: &AppState) -> Result<(), ApiError> {
    state.manager.load_configs().await?;
    state.manager.reach_always_on();
    // A server added or changed gets its tools listed for its new config, in the background.
    state.manager.list_unlisted();
    Ok(())
}

pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let servers = state.store.servers().await?;
    Ok(Json(Value::Array(
        servers.iter().map(|s| with_status(&state, s)).collect(),
    )))
}

pub async fn create(
    State(state): State<AppState>,
    body: Result<Json<McpServerSpec>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(spec) = body?;
    let server = state.store.create_server(&spec).await?;
    reload(&state).await?;
    Ok((StatusCode::CREATED, Json(with_status(&state, &server))).into_response())
}

pub async fn get(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let server = find_server(&state.store, &key).await?;
    Ok(Json(with_status(&state, &server)))
}

pub async fn update(
    State(state): State<AppState>,
    Path(key): Path<String>,
    body: Result<Json<McpServerSpec>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(spec) = body?;
    let server = find_server(&state.store, &key).await?;
    let spec = keep_hidden_values(spec, &server)?;
    let updated = state.store.update_server(&server.id, &spec).await?;
    reload(&state).await?;
    Ok(Json(with_status(&state, &updated)))
}

pub async fn delete(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<StatusCode, ApiError> {
    let server = find_server(&state.store, &key).await?;
    state.store.delete_server(&server.id).await?;
    reload(&state).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/servers/import`: the body is an `mcpServers` document (Claude Desktop, Cursor,
/// VS Code); stdio and remote servers are created or updated, the rest reported as skipped.
/// `POST /api/servers/import?name=&prefer=`: the query's options for a `server.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportOptions {
    /// The server's name (default: the part after the `/` of the registry name).
    name: Option<String>,
    /// `package` (default) or `remote`: which kind of entry to take first.
    prefer: Option<String>,
    /// A `server.json` may replace a server of the same name only when this is `true`: the
    /// server's command, env and sandbox become the document's.
    replace: Option<bool>,
}

/// An `mcpServers` document (Claude Desktop, Cursor, VS Code) or an MCP Registry
/// `server.json` (bare or as the registry API wraps it), told apart by their shape.
pub async fn import(
    State(state): State<AppState>,
    options: Result<axum::extract::Query<ImportOptions>, axum::extract::rejection::QueryRejection>,
    body: Result<Json<Value>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let axum::extract::Query(options) = options?;
    let Json(document) = body?;
    // The query's options are for a `server.json`: a request that gives them (as
    // `servers import-registry` does) never takes another shape, such as an `mcpServers`
    // document a registry answered with instead.
    if (options.name.is_some() || options.prefer.is_some() || options.replace.is_some())
        && !store::is_server_json(&document)
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "not_server_json",
            "name, prefer and replace are for an MCP Registry server.json, and this body is not one",
        ));
    }
    let registry = store::is_server_json(&document);
    let (plan, notes) = if registry {
        let prefer = match options.prefer.as_deref() {
            None | Some("package") => store::RegistryPreference::Package,
            Some("remote") => store::RegistryPreference::Remote,
            Some(other) => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    format!("prefer is \"package\" or \"remote\", not {other:?}"),
                ));
            }
        };
        store::parse_server_json(&document, options.name.as_deref(), prefer).map_err(|error| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "not_importable",
                error.to_string(),
            )
        })?
    } else {
        let plan = store::parse_mcp_servers(&document.to_string()).map_err(|error| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "not_mcp_servers",
                error.to_string(),
            )
        })?;
        (plan, Vec::new())
    };
    // A third-party document never takes over a server unasked (a registry entry named
    // `forge-filesystem` would keep that server's sandbox and bindings and set its env).
    let update = if registry {
        // A variable is the server's own: a document whose placeholders another server
        // already refers to (two names that read the same, `github_mcp_server` and
        // `github-mcp-server`) would read that server's secret.
        let others = state.store.servers().await?;
        for spec in &plan.servers {
            let wanted = spec.variable_references();
            for other in others.iter().filter(|other| other.name != spec.name) {
                let theirs = other.spec();
                if let Some(shared) = theirs.variable_references().intersection(&wanted).next() {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "variable_shared",
                        format!(
                            "the imported server would read ${{{shared}}}, which server {:?} uses: import it under another name (name=, --as)",
                            other.name
                        ),
                    ));
                }
            }
        }
        if options.replace != Some(true) {
            for spec in &plan.servers {
                if state.store.server_by_name(&spec.name).await?.is_some() {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "server_exists",
                        format!(
                            "a server named {:?} exists: import under another name (name=, --as) or replace it (replace=true, --replace: its command, env and sandbox become the document's)",
                            spec.name
                        ),
                    ));
                }
            }
        }
        store::ImportUpdate::Replace
    } else {
        store::ImportUpdate::KeepSettings
    };
    let report = state.store.import_servers_as(&plan, update).await?;
    reload(&state).await?;
    let skipped: Vec<Value> = report
        .skipped
        .iter()
        .map(|skip| json!({"name": skip.name, "reason": skip.reason.to_string()}))
        .collect();
    Ok(Json(json!({
        "created": report.created,
        "updated": report.updated,
        "skipped": skipped,
        "notes": notes,
    })))
}

/// The server's name, known to the manager (configs reloaded if the store has it but the
/// manager does not yet).
pub(crate) async fn managed_name(state: &AppState, key: &str) -> Result<String, ApiError> {
    let server = find_server(&state.store, key).await?;
    let known = state
        .manager
        .get_all_statuses()
        .iter()
        .any(|status| status.name == server.name);
    if !known {
        reload(state).await?;
    }
    Ok(server.name)
}

pub(crate) fn status_of(state: &AppState, name: &str) -> Json<Value> {
    let status = state
        .manager
        .get_all_statuses()
        .into_iter()
        .find(|status| status.name == name)
        .map(|status| status_json(&status))
        .unwrap_or(Value::Null);
    Json(json!({"name": name, "status": status}))
}

pub async fn start(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    state.manager.start_server(&name).await?;
    Ok(status_of(&state, &name))
}

pub async fn stop(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    state.manager.stop_server(&name).await?;
    Ok(status_of(&state, &name))
}

pub async fn restart(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    state.manager.restart_server(&name).await?;
    Ok(status_of(&state, &name))
}

/// The last stderr lines of the server (running, or as it ended).
pub async fn logs(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    // A server may print what it was given (a key in an error, say): BotCraft's own secret
    // values never leave through its logs.
    let lines: Vec<String> = state
        .manager
        .stderr_tail(&name)?
        .iter()
        .map(|line| state.config.redactor.redact(line))
        .collect();
    Ok(Json(json!({"name": name, "lines": lines})))
}

/// The server's tools, as `tools/list` gave them (the server is started if needed).
pub async fn tools(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    let tools = state.manager.get_tools(&name).await?;
    Ok(Json(json!({"name": name, "tools": tools.as_ref()})))
}

/// `POST /api/servers/{server}/tools/refresh`: list the server's tools now (a stopped server
/// is started, listed and stopped again); `{name, toolCount}`.
pub async fn refresh_tools(
    State(state): State<AppState>,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let name = managed_name(&state, &key).await?;
    let count = state.manager.refresh_tools(&name).await?;
    Ok(Json(json!({"name": name, "toolCount": count})))
}

/// The body of a test tool call.
#[derive(Debug, Deserialize)]
pub struct CallBody {
    #[serde(default)]
    pub arguments: Option<JsonObject>,
}

/// `tools/call` on the server, under its timeout; the result as the server sent it (a tool
/// that failed answers 200 with `isError: true`).
pub async fn call_tool(
    State(state): State<AppState>,
    Path((key, tool)): Path<(String, String)>,
    body: Result<Json<CallBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body?;
    let name = managed_name(&state, &key).await?;
    // A tool the server does not list is the caller's mistake (404), not a server failure.
    let tools = state.manager.get_tools(&name).await?;
    if !tools.iter().any(|listed| listed.name == tool) {
        return Err(ApiError::not_found(
            "unknown_tool",
            format!("MCP server {name:?} has no tool {tool:?}; see GET /api/servers/{name}/tools"),
        ));
    }
    let started = std::time::Instant::now();
    let result = state.manager.call_tool(&name, &tool, body.arguments).await;
    let outcome = match &result {
        Ok(result) if result.is_error == Some(true) => observability::ToolCallOutcome::ToolError,
        Ok(_) => observability::ToolCallOutcome::Ok,
        Err(LifecycleError::CallTimeout { .. }) => observability::ToolCallOutcome::Timeout,
        Err(_) => observability::ToolCallOutcome::Failed,
    };
    state.metrics.tool_call(
        observability::CallPath::Admin,
        &name,
        &tool,
        outcome,
        started.elapsed(),
    );
    Ok(Json(serde_json::to_value(result?).unwrap_or(Value::Null)))
}

/// The query of [`resource`].
#[derive(Debug, Deserialize)]
pub struct ResourceQuery {
    pub uri: String,
}

/// `resources/read` of `uri` on the server (started if needed): the first contents as bytes
/// (a blob decoded) under the resource's MIME type, always as an attachment with
/// `nosniff`, and under a sandboxing CSP (`sandbox; default-src 'none'`) and
/// `Cross-Origin-Resource-Policy: same-origin`, so a resource is never rendered as a page
/// of BotCraft's origin, nor embedded by another site. The link a
/// chat tool result gives for a binary resource.
pub async fn resource(
    State(state): State<AppState>,
    Path(key): Path<String>,
    query: Result<axum::extract::Query<ResourceQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    use base64::Engine;
    use mcp_lifecycle::ResourceContents;
    use rmcp::model::{
        ClientRequest, ReadResourceRequest, ReadResourceRequestParams, ServerResult,
    };
    let axum::extract::Query(query) = query.map_err(|error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_query",
            format!("expected ?uri=RESOURCE_URI: {error}"),
        )
    })?;
    let name = managed_name(&state, &key).await?;
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
        ReadResourceRequestParams::new(query.uri.clone()),
    ));
    let answer = state
        .manager
        .forward(
            &name,
            request,
            mcp_lifecycle::ForwardFor::default(),
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .map_err(|error| match error {
            // The server's own refusal (an unknown URI): the caller's mistake.
            // Its message is the server's words: BotCraft's secret values are cut out.
            LifecycleError::Refused { error, .. } => ApiError::not_found(
                "unknown_resource",
                format!(
                    "MCP server {name:?} cannot read {:?}: {}",
                    query.uri,
                    state.config.redactor.redact(&error.message)
                ),
            ),
            other => other.into(),
        })?;
    let ServerResult::ReadResourceResult(result) = answer else {
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "server_failed",
            format!("MCP server {name:?} answered resources/read with something else"),
        ));
    };
    let unknown = || {
        ApiError::not_found(
            "unknown_resource",
            format!("MCP server {name:?} has no contents for {:?}", query.uri),
        )
    };
    let (mime, bytes) = match result.contents.into_iter().next().ok_or_else(unknown)? {
        ResourceContents::BlobResourceContents {
            blob, mime_type, ..
        } => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob.as_bytes())
                .map_err(|error| {
                    ApiError::new(
                        StatusCode::BAD_GATEWAY,
                        "server_failed",
                        format!("MCP server {name:?} sent a blob that is not base64: {error}"),
                    )
                })?;
            (
                mime_type.unwrap_or_else(|| "application/octet-stream".to_owned()),
                bytes,
            )
        }
        ResourceContents::TextResourceContents {
            text, mime_type, ..
        } => (
            mime_type.unwrap_or_else(|| "text/plain; charset=utf-8".to_owned()),
            text.into_bytes(),
        ),
        _ => return Err(unknown()),
    };
    let mime = axum::http::HeaderValue::from_str(&mime).unwrap_or(
        axum::http::HeaderValue::from_static("application/octet-stream"),
    );
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, mime),
            (
                axum::http::header::CONTENT_DISPOSITION,
                axum::http::HeaderValue::from_static("attachment"),
            ),
            (
                axum::http::header::X_CONTENT_TYPE_OPTIONS,
                axum::http::HeaderValue::from_static("nosniff"),
            ),
            // Should a browser render it anyway (an HTML or SVG resource), it runs nothing
            // and reads nothing of BotCraft's origin, and no other site embeds it.
            (
                axum::http::header::CONTENT_SECURITY_POLICY,
                axum::http::HeaderValue::from_static("sandbox; default-src 'none'"),
            ),
            (
                axum::http::HeaderName::from_static("cross-origin-resource-policy"),
                axum::http::HeaderValue::from_static("same-origin"),
            ),
        ],
        bytes,
    )
        .into_response())
}
