//! `mcp-conformance-client URL`: the client under test in the MCP conformance suite's client
//! scenarios (`conformance client --command "mcp-conformance-client"`), built on BotCraft's
//! own `McpServerManager`, so what the suite checks is what BotCraft does with a remote
//! server:
//!
//! 1. the server at `URL` is added as a streamable-HTTP server of a fresh store;
//! 2. its tools are listed (connect, `initialize`, `tools/list`);
//! 3. each tool is called once, with arguments made from its input schema;
//! 4. whenever the manager says the server `needs-auth`, the OAuth flow BotCraft's dashboard
//!    drives is run here headless: `oauth_start`, a GET of the authorization URL (the suite's
//!    authorization server redirects at once), `oauth_complete` with the redirect's `code`,
//!    `state` and `iss`; then the step is retried, at most [`MAX_AUTHORIZATIONS`] times.
//!
//! `MCP_CONFORMANCE_SCENARIO` names the scenario (only logged); a `client_id` (and
//! `client_secret`) in `MCP_CONFORMANCE_CONTEXT` is set as the server's pre-registered
//! client first. Logs go to stderr; the exit status is 0 when every step worked.

use anyhow::{Context, bail};
use mcp_lifecycle::{LifecycleError, ManagerSettings, McpServerManager, OAuthSettings};
use serde_json::{Map, Value, json};
use std::sync::Arc;

const SERVER: &str = "under-test";
/// Authorizations one run may do (a scope step-up needs a second; a server that never
/// accepts must not be retried forever).
const MAX_AUTHORIZATIONS: usize = 3;
/// The client ID metadata document the suite's CIMD scenarios expect a client to use.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()))
        .init();
    let url = std::env::args()
        .nth(1)
        .context("usage: mcp-conformance-client SERVER_URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!(
        "mcp-conformance-client: scenario {scenario:?}, server {}",
        mcp_lifecycle::shown_url(&url)
    );

    let dir = std::env::temp_dir().join(format!("mcp-conformance-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run(&url, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run(url: &str, dir: &std::path::Path) -> anyhow::Result<()> {
    let store = store::Store::connect(&store::sqlite_url(&dir.join("store.db"))).await?;
    store
        .create_server(&store::McpServerSpec::remote(
            SERVER,
            store::Transport::StreamableHttp,
            url,
        ))
        .await?;
    let key = secrets::SecretKey::from_value(
        &hex::encode(rand::random::<[u8; 32]>()),
        "a random key",
        secrets::KeySource::Variable,
    )?;
    let settings = ManagerSettings {
        oauth: Some(OAuthSettings {
            // Never reached: the redirect is read from the authorization server's answer.
            redirect_uri: "http://127.0.0.1:9/oauth/callback".to_owned(),
            sealer: key.sealer(),
            client_name: "BotCraft conformance client".to_owned(),
            client_metadata_url: Some(CLIENT_METADATA_URL.to_owned()),
            reconnect_hint: None,
        }),
        ..ManagerSettings::default()
    };
    let manager = McpServerManager::new(server_records::records(store), settings);
    manager.load_configs().await?;
    // A scenario with a pre-registered client says so in its context, as an operator would
    // with PUT /api/servers/{server}/oauth/client.
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    if let Some(client_id) = context.get("client_id").and_then(Value::as_str) {
        let secret = context.get("client_secret").and_then(Value::as_str);
        manager.oauth_set_client(SERVER, client_id, secret).await?;
    }
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let mut authorizations = 0;
    let outcome = steps(&manager, &browser, &context, &mut authorizations).await;
    manager.stop_all().await;
    outcome
}

async fn steps(
    manager: &Arc<McpServerManager>,
    browser: &reqwest::Client,
    context: &Value,
    authorizations: &mut usize,
) -> anyhow::Result<()> {
    let tools = loop {
        match manager.get_tools(SERVER).await {
            Ok(tools) => break tools,
            Err(LifecycleError::NeedsAuth { .. }) => {
                authorize(manager, browser, authorizations).await?
            }
            Err(error) => bail!("tools/list: {error}"),
        }
    };
    eprintln!("mcp-conformance-client: {} tools", tools.len());
    let calls = planned_calls(&tools, context);
    for (name, arguments) in calls {
        let result = loop {
            match manager
                .call_tool(SERVER, &name, Some(arguments.clone()))
                .await
            {
                Ok(result) => break result,
                Err(LifecycleError::NeedsAuth { .. }) => {
                    authorize(manager, browser, authorizations).await?;
                }
                Err(error) => bail!("tools/call {name}: {error}"),
            }
        };
        eprintln!(
            "mcp-conformance-client: {} answered{}",
            name,
            if result.is_error == Some(true) {
                " with a tool error"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Run the OAuth flow as a browser would, with an authorization server that approves at once.
async fn authorize(
    manager: &Arc<McpServerManager>,
    browser: &reqwest::Client,
    authorizations: &mut usize,
) -> anyhow::Result<()> {
    *authorizations += 1;
    if *authorizations > MAX_AUTHORIZATIONS {
        bail!(
            "the server still needs authorization after {MAX_AUTHORIZATIONS} authorizations; giving up"
        );
    }
    let url = manager.oauth_start(SERVER).await?;
    let answer = browser.get(&url).send().await?;
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .context("the authorization endpoint did not redirect")?;
    let redirect = reqwest::Url::parse(location).context("the redirect is not a URL")?;
    let query = |name: &str| {
        redirect
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    if let Some(error) = query("error") {
        bail!("the authorization server refused: {error}");
    }
    let code = query("code").context("the redirect carries no code")?;
    let state = query("state").context("the redirect carries no state")?;
    manager
        .oauth_complete(&code, &state, query("iss").as_deref())
        .await?;
    eprintln!("mcp-conformance-client: authorized ({authorizations})");
    Ok(())
}

/// The calls to make: those the scenario's context lists (`toolCalls`, with their
/// arguments), else one per tool. An argument described as the schema "passed back
/// verbatim" of another tool gets that tool's `inputSchema` as BotCraft's manager holds it
/// (what a schema-preservation scenario checks); the rest are made from the schema.
fn planned_calls(
    tools: &[mcp_lifecycle::Tool],
    context: &Value,
) -> Vec<(String, Map<String, Value>)> {
    if let Some(listed) = context.get("toolCalls").and_then(Value::as_array) {
        return listed
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?.to_owned();
                let arguments = call
                    .get("arguments")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                Some((name, arguments))
            })
            .collect();
    }
    tools
        .iter()
        .map(|tool| {
            let mut arguments = arguments_for(&tool.input_schema);
            let properties = tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object);
            for (name, property) in properties.into_iter().flatten() {
                let description = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !description.contains("passed back verbatim") {
                    continue;
                }
                let echoed = tools.iter().find(|other| {
                    other.name != tool.name && description.contains(other.name.as_ref())
                });
                if let Some(other) = echoed {
                    arguments.insert(name.clone(), Value::Object((*other.input_schema).clone()));
                }
            }
            (tool.name.to_string(), arguments)
        })
        .collect()
}

/// Arguments that satisfy `schema`'s required properties: numbers 1, strings "test",
/// booleans true, arrays and objects empty.
fn arguments_for(schema: &Map<String, Value>) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    required
        .into_iter()
        .map(|name| {
            let kind = properties
                .and_then(|p| p.get(name))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("string");
            let value = match kind {
                "number" | "integer" => json!(1),
                "boolean" => json!(true),
                "array" => json!([]),
                "object" => json!({}),
                _ => json!("test"),
            };
            (name.to_owned(), value)
        })
        .collect()
}
