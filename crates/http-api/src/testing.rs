//! A state over an in-memory store and an empty manager, for unit tests of the router.

use std::sync::Arc;

use inference::{ProviderSettings, Providers};
use mcp_lifecycle::{ManagerSettings, McpServerManager};
use tokio_util::sync::CancellationToken;

use crate::native_tools::default_native_tools;
use crate::state::{ApiConfig, AppState};

pub async fn state() -> anyhow::Result<AppState> {
    let store = store::Store::connect("sqlite::memory:").await?;
    let manager = McpServerManager::new(
        server_records::records(store.clone()),
        ManagerSettings::default(),
    );
    let toolsets = crate::new_toolsets(&store, &manager, &default_native_tools());
    Ok(AppState {
        toolsets,
        store,
        manager,
        providers: Providers::new(ProviderSettings::default())?,
        native: default_native_tools(),
        config: Arc::new(ApiConfig::default()),
        shutdown: CancellationToken::new(),
        metrics: observability::BotCraftMetrics::new()?,
    })
}
