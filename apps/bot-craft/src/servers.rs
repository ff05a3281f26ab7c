//! `botcraft servers list | add | import | import-registry | start | stop | restart | refresh-tools | status | logs | remove`.

use std::path::PathBuf;

use anyhow::Context;
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::remote::{Remote, print_json, segment};
use crate::terminal::printable;

#[derive(Debug, clap::Subcommand)]
pub enum ServersCommand {
    /// Every MCP server with its state.
    List,
    /// Add an MCP server: a program run over stdio (`--command`), or a remote server at a
    /// URL (`--endpoint`, over `--transport`).
    #[command(group = clap::ArgGroup::new("how").required(true).args(["command", "endpoint"]))]
    Add {
        name: String,
        /// The program to run (a stdio server).
        #[arg(long)]
        command: Option<String>,
        /// One argument (repeat for each).
        #[arg(
            long = "arg",
            value_name = "ARG",
            allow_hyphen_values = true,
            requires = "command"
        )]
        args: Vec<String>,
        /// `KEY=VALUE` for the server's environment; `${VAR}` resolves at spawn (repeat).
        #[arg(long = "env", value_name = "KEY=VALUE", requires = "command")]
        env: Vec<String>,
        /// The URL of a remote server (`--url` is BotCraft's own address).
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
        /// How the remote server is spoken to.
        #[arg(long, value_enum, default_value_t = RemoteTransportArg::StreamableHttp, requires = "endpoint")]
        transport: RemoteTransportArg,
        /// `NAME=VALUE` HTTP header for a remote server; `${VAR}` resolves at connect (repeat).
        #[arg(long = "header", value_name = "NAME=VALUE", requires = "endpoint")]
        headers: Vec<String>,
        /// Tool-call timeout, ms.
        #[arg(long)]
        timeout: Option<i64>,
        /// Start with BotCraft and keep running (connected, for a remote server).
        #[arg(long)]
        always_on: bool,
        #[arg(long)]
        instructions: Option<String>,
        /// The sandbox policy of a stdio server, as JSON (default `{}`: confined, network
        /// open, no Unix sockets), e.g. `{"network": "none", "readWrite": ["/srv/cache"]}`;
        /// a browser needs `{"unixSockets": true}`.
        #[arg(long, value_name = "JSON")]
        sandbox: Option<String>,
    },
    /// Import an `mcpServers` JSON file (Claude Desktop, Cursor, VS Code) or an MCP Registry
    /// `server.json`.
    Import { file: PathBuf },
    /// Import a server from the MCP Registry by its name (`io.github.user/weather`): its
    /// `server.json` is fetched and imported (a package run here, else a remote).
    ImportRegistry {
        /// The registry name of the server.
        name: String,
        /// A published version (default: the latest).
        #[arg(long)]
        version: Option<String>,
        /// The registry's base URL.
        #[arg(
            long,
            env = "BOTCRAFT_REGISTRY_URL",
            default_value = "https://registry.modelcontextprotocol.io"
        )]
        registry_url: String,
        /// The name in BotCraft (default: the part after the `/`).
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
        /// Take a remote before a package.
        #[arg(long)]
        remote: bool,
        /// Replace a server of the same name (its command, env and sandbox become the
        /// registry's); without it, an existing name is refused.
        #[arg(long)]
        replace: bool,
    },
    /// Start a server.
    Start { name: String },
    /// Stop a server and its process tree.
    Stop { name: String },
    /// Stop, then start a server.
    Restart { name: String },
    /// List a server's tools again now (every server's without NAME): a running server is
    /// asked again; a stopped one is started, listed and stopped again.
    RefreshTools { name: Option<String> },
    /// The health document: every server's state, pid, uptime, restarts, tools, last error.
    Status,
    /// The last lines a server wrote on stderr.
    Logs { name: String },
    /// Delete a server config (and stop it).
    Remove { name: String },
}

/// The transports of a remote server, as `--transport` takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RemoteTransportArg {
    /// Streamable HTTP (MCP 2025-03-26 and later).
    StreamableHttp,
    /// HTTP+SSE (MCP 2024-11-05).
    Sse,
}

impl RemoteTransportArg {
    fn as_str(self) -> &'static str {
        match self {
            Self::StreamableHttp => store::Transport::StreamableHttp.as_str(),
            Self::Sse => store::Transport::Sse.as_str(),
        }
    }
}

/// `KEY=VALUE` pairs of `flag` as a JSON object.
fn pairs(flag: &str, pairs: Vec<String>) -> anyhow::Result<Map<String, Value>> {
    let mut map = Map::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("{flag} {pair:?} is not NAME=VALUE"))?;
        map.insert(key.to_owned(), Value::String(value.to_owned()));
    }
    Ok(map)
}

fn or_dash(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

pub async fn run(remote: &Remote, command: ServersCommand) -> anyhow::Result<()> {
    match command {
        ServersCommand::List => {
            let servers = remote.get("/api/servers").await?;
            println!(
                "{:<20} {:<9} {:<9} {:<8} {:<6} {:<16} command",
                "name", "state", "always-on", "pid", "tools", "sandbox"
            );
            for server in servers.as_array().into_iter().flatten() {
                let status = &server["status"];
                println!(
                    "{:<20} {:<9} {:<9} {:<8} {:<6} {:<16} {}",
                    or_dash(&server["name"]),
                    or_dash(&status["state"]),
                    or_dash(&server["alwaysOn"]),
                    or_dash(&status["pid"]),
                    or_dash(&status["toolCount"]),
                    sandbox_summary(server),
                    printable(
                        &match server["url"].as_str() {
                            Some(url) => format!("{url} ({})", or_dash(&server["transport"])),
                            None => or_dash(&server["command"]),
                        },
                        true
                    ),
                );
            }
        }
        ServersCommand::Add {
            name,
            command,
            args,
            env,
            endpoint,
            transport,
            headers,
            timeout,
            always_on,
            instructions,
            sandbox,
        } => {
            let mut body = match (command, endpoint) {
                (Some(command), _) => json!({
                    "name": name, "command": command, "args": args,
                    "env": pairs("--env", env)?,
                }),
                (None, Some(url)) => json!({
                    "name": name, "transport": transport.as_str(), "url": url,
                    "headers": pairs("--header", headers)?,
                }),
                (None, None) => anyhow::bail!("give --command or --endpoint"),
            };
            body["alwaysOn"] = json!(always_on);
            body["instructions"] = json!(instructions);
            if let Some(policy) = sandbox {
                body["sandbox"] = serde_json::from_str(&policy)
                    .map_err(|error| anyhow::anyhow!("--sandbox is not JSON: {error}"))?;
            }
            if let Some(timeout) = timeout {
                body["timeout"] = json!(timeout);
            }
            print_json(
                &remote
                    .send(Method::POST, "/api/servers", Some(&body))
                    .await?,
            );
        }
        ServersCommand::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("read {}", file.display()))?;
            let document: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            print_json(
                &remote
                    .send(Method::POST, "/api/servers/import", Some(&document))
                    .await?,
            );
        }
        ServersCommand::ImportRegistry {
            name,
            version,
            registry_url,
            as_name,
            remote: prefer_remote,
            replace,
        } => {
            let document = fetch_server_json(&registry_url, &name, version.as_deref()).await?;
            let mut target = reqwest::Url::parse("http://botcraft/api/servers/import")?;
            target
                .query_pairs_mut()
                .append_pair("prefer", if prefer_remote { "remote" } else { "package" })
                .extend_pairs(as_name.iter().map(|as_name| ("name", as_name)));
            if replace {
                target.query_pairs_mut().append_pair("replace", "true");
            }
            let path = format!("{}?{}", target.path(), target.query().unwrap_or_default());
            print_json(&remote.send(Method::POST, &path, Some(&document)).await?);
        }
        ServersCommand::Start { name } => control(remote, &name, "start").await?,
        ServersCommand::Stop { name } => control(remote, &name, "stop").await?,
        ServersCommand::Restart { name } => control(remote, &name, "restart").await?,
        ServersCommand::RefreshTools { name } => refresh_tools(remote, name).await?,
        ServersCommand::Status => {
            let health = remote.get("/api/health").await?;
            println!(
                "status: {} (tools not yet listed: {})",
                or_dash(&health["status"]),
                or_dash(&health["toolsNotListed"])
            );
            for (name, server) in health["mcpServers"].as_object().into_iter().flatten() {
                println!(
                    "{name:<20} {:<9} always-on={:<5} pid={:<7} uptime={}s restarts={} tools={} listed={} {}",
                    or_dash(&server["state"]),
                    or_dash(&server["alwaysOn"]),
                    or_dash(&server["pid"]),
                    or_dash(&server["uptime"]),
                    or_dash(&server["restarts"]),
                    or_dash(&server["toolCount"]),
                    or_dash(&server["toolsListed"]),
                    server["lastError"]
                        .as_str()
                        .map(|e| format!("last error: {}", printable(e, true)))
                        .unwrap_or_default(),
                );
            }
        }
        ServersCommand::Logs { name } => {
            let logs = remote
                .get(&format!("/api/servers/{}/logs", segment(&name)))
                .await?;
            // A server's stderr: its bytes could drive the terminal.
            for line in logs["lines"].as_array().into_iter().flatten() {
                println!("{}", printable(line.as_str().unwrap_or_default(), true));
            }
        }
        ServersCommand::Remove { name } => {
            remote
                .send(
                    Method::DELETE,
                    &format!("/api/servers/{}", segment(&name)),
                    None,
                )
                .await?;
            println!("removed {name}");
        }
    }
    Ok(())
}

/// List the tools of `name` (every server without one) again, one line each; fails when any
/// could not be listed (after trying the others).
async fn refresh_tools(remote: &Remote, name: Option<String>) -> anyhow::Result<()> {
    let names: Vec<String> = match name {
        Some(name) => vec![name],
        None => remote
            .get("/api/servers")
            .await?
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|server| server["name"].as_str().map(str::to_owned))
            .collect(),
    };
    let mut failed = Vec::new();
    for name in names {
        let path = format!("/api/servers/{}/tools/refresh", segment(&name));
        match remote.send(Method::POST, &path, None).await {
            Ok(reply) => println!("{name}: {} tools", or_dash(&reply["toolCount"])),
            Err(error) => {
                println!(
                    "{name}: not listed: {}",
                    printable(&format!("{error:#}"), true)
                );
                failed.push(name);
            }
        }
    }
    anyhow::ensure!(failed.is_empty(), "tools not listed: {}", failed.join(", "));
    Ok(())
}

async fn control(remote: &Remote, name: &str, action: &str) -> anyhow::Result<()> {
    let reply = remote
        .send(
            Method::POST,
            &format!("/api/servers/{}/{action}", segment(name)),
            None,
        )
        .await?;
    let status = &reply["status"];
    println!(
        "{name}: {} (pid {})",
        or_dash(&status["state"]),
        or_dash(&status["pid"])
    );
    Ok(())
}

/// `name`'s `server.json` from the registry at `base` (its API `v0.1`), as the registry
/// wraps it.
async fn fetch_server_json(base: &str, name: &str, version: Option<&str>) -> anyhow::Result<Value> {
    let mut url = reqwest::Url::parse(base)
        .with_context(|| format!("the registry URL {base:?} is not a URL"))?;
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("the registry URL {base:?} cannot have a path"))?
        .pop_if_empty()
        .extend([
            "v0.1",
            "servers",
            name,
            "versions",
            version.unwrap_or("latest"),
        ]);
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()?;
    let answer = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .with_context(|| format!("reach the MCP Registry at {base}"))?;
    let status = answer.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        anyhow::bail!(
            "the MCP Registry at {base} has no server {name:?} (version {})",
            version.unwrap_or("latest")
        );
    }
    if !status.is_success() {
        anyhow::bail!("the MCP Registry at {base} answered {status} for {name:?}");
    }
    // A registry's answer is a document of kilobytes: read at most a few megabytes of it.
    let mut answer = answer;
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .with_context(|| format!("read the MCP Registry's answer for {name:?}"))?
    {
        if body.len() + chunk.len() > MAX_REGISTRY_ANSWER_BYTES {
            anyhow::bail!(
                "the MCP Registry's answer for {name:?} is larger than {MAX_REGISTRY_ANSWER_BYTES} bytes"
            );
        }
        body.extend_from_slice(&chunk);
    }
    let document: Value = serde_json::from_slice(&body)
        .with_context(|| format!("the MCP Registry's answer for {name:?} is not JSON"))?;
    // Only the server asked for: a registry (or whatever answers at its address) that sends
    // another document, or another server, imports nothing.
    if !store::is_server_json(&document) {
        anyhow::bail!("the MCP Registry's answer for {name:?} is not a server.json");
    }
    let named = document
        .get("server")
        .unwrap_or(&document)
        .get("name")
        .and_then(Value::as_str);
    if named != Some(name) {
        anyhow::bail!(
            "the MCP Registry answered with server {named:?} when asked for {name:?}; nothing imported"
        );
    }
    Ok(document)
}

/// The largest registry answer `servers import-registry` reads.
const MAX_REGISTRY_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A server's sandbox in a column: `off`, or `net:all`, `net:none`, `net:PORTS`, plus `+rw`
/// when it names read-write paths, `+unix` when it may make Unix sockets (`-` for a remote
/// server). The API's server shows it whole.
fn sandbox_summary(server: &serde_json::Value) -> String {
    if server["url"].is_string() {
        return "-".to_owned();
    }
    let policy = &server["sandbox"];
    if policy["enabled"] == serde_json::Value::Bool(false) {
        return "off".to_owned();
    }
    let network = match &policy["network"] {
        serde_json::Value::Array(ports) => ports
            .iter()
            .map(|port| {
                port.as_str()
                    .map_or_else(|| port.to_string(), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join(","),
        serde_json::Value::String(word) => word.clone(),
        _ => "all".to_owned(),
    };
    let writes = policy["readWrite"]
        .as_array()
        .is_some_and(|paths| !paths.is_empty());
    let sockets = policy["unixSockets"] == serde_json::Value::Bool(true);
    format!(
        "net:{network}{}{}",
        if writes { " +rw" } else { "" },
        if sockets { " +unix" } else { "" }
    )
}
