//! `serve`'s `/mcp`: the gateway over the bots' toolsets, its keys (`BOTCRAFT_BOT_KEYS` and
//! the store's bot keys), allowed hosts and session limits (the body cap is `serve`'s, in
//! front of every route).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::ServeArgs;

/// The `/mcp` routes; `sessions` ends every session at shutdown.
pub(super) fn router(
    args: &ServeArgs,
    toolsets: &Arc<toolset::Toolsets>,
    metrics: &observability::BotCraftMetrics,
    store: &store::Store,
    sessions: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<axum::Router> {
    // /mcp: bot keys from BOTCRAFT_BOT_KEYS and from the store (`botcraft keys create --role bot`).
    let keys = mcp_gateway::BotKeys::parse(args.bot_keys.as_deref().unwrap_or_default())
        .context("BOTCRAFT_BOT_KEYS")?;
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    hosts.extend(args.allowed_hosts.iter().cloned());
    let config = mcp_gateway::GatewayConfig {
        allowed_hosts: Some(hosts),
        shutdown: sessions.clone(),
        key_store: Some(store.clone()),
        max_sessions_per_bot: args.mcp_max_sessions_per_bot,
        max_body_bytes: args.max_body_bytes,
        session_timeout: Duration::from_secs(args.mcp_session_idle_seconds.max(1)),
        ..mcp_gateway::GatewayConfig::default()
    };
    let backend = Arc::new(
        mcp_gateway::ToolsetBackend::new(Arc::clone(toolsets)).with_metrics(metrics.clone()),
    );
    eprintln!("botcraft: MCP gateway at /mcp (bot keys: BOTCRAFT_BOT_KEYS and `botcraft keys`)");
    // A declared body over the limit is refused in front of every route (`serve`'s layers).
    Ok(mcp_gateway::mcp_router(
        backend,
        mcp_gateway::KeyPolicy::Keys(keys),
        &config,
    ))
}
