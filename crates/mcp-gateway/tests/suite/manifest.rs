//! The committed manifest of the seeded `forge` bot is what the gateway serves for it: the
//! forge servers' committed tool manifests, named and ordered by the gateway, with their
//! instructions combined. Fails on drift; refresh with
//! `BOTCRAFT_UPDATE_MANIFESTS=1 cargo test -p mcp-gateway --test all manifest`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use mcp_gateway::manifest::{BotManifest, ServerTools, check};
use mcp_gateway::{BotKeys, KeyPolicy};
use pretty_assertions::assert_eq;
use rmcp::model::Tool;

use super::harness::{FakeBackend, FakeBot, Http, Served};

const REFRESH: &str = "BOTCRAFT_UPDATE_MANIFESTS=1 cargo test -p mcp-gateway --test all manifest";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn committed_forge_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/forge.json")
}

/// The seeded forge bot's servers that ship a committed tool manifest: (name, tools,
/// instructions). Playwright is third-party: its tools arrive with the bridge's live refresh.
fn forge_servers() -> anyhow::Result<Vec<ServerTools>> {
    let mut servers = Vec::new();
    for spec in store::SeedConfig::new("bin").servers() {
        let path = workspace()
            .join("apps")
            .join(&spec.name)
            .join("tools.manifest.json");
        if !path.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let value: serde_json::Value = serde_json::from_str(&text)?;
        let tools: Vec<Tool> = serde_json::from_value(value["tools"].clone())
            .with_context(|| format!("tools of {}", path.display()))?;
        servers.push((spec.name.clone(), tools, spec.instructions.clone()));
    }
    Ok(servers)
}

#[tokio::test]
async fn the_committed_forge_manifest_is_what_the_gateway_serves() -> anyhow::Result<()> {
    let servers = forge_servers()?;
    let mut bot = FakeBot::default();
    for (server, tools, instructions) in &servers {
        for tool in tools {
            bot.tools.push((server.clone(), tool.clone(), true));
        }
        if let Some(text) = instructions {
            bot = bot.instructions(server, text);
        }
    }
    let backend = FakeBackend::new([("forge", bot)]);
    let served = Served::start(
        backend,
        KeyPolicy::Keys(BotKeys::default().with("forge", "k")),
        0,
    )
    .await?;
    let http = Http::new(&served.url);
    let init = http.initialize(Some("k")).await?;
    let listed = http.list(Some("k"), init.session.as_deref()).await?;
    served.stop().await;
    let served_manifest = BotManifest {
        bot: "forge".to_owned(),
        instructions: init.body["result"]["instructions"]
            .as_str()
            .map(str::to_owned),
        tools: serde_json::from_value(listed.body["result"]["tools"].clone())?,
    };
    assert_eq!(
        served_manifest,
        BotManifest::from_servers("forge", &servers),
        "the manifest builder names tools as the gateway does"
    );
    let path = committed_forge_manifest();
    if std::env::var_os("BOTCRAFT_UPDATE_MANIFESTS").is_some() {
        served_manifest.save(&path)?;
    }
    check(&path, &served_manifest, REFRESH)?;
    Ok(())
}
