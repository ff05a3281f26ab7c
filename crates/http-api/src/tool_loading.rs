//! Which tools a chat turn offers, from the bot's loading mode (seed 000 §9.3, option C):
//! [`TurnTools::plan`] runs `inference::plan_tools` over the bot's [`BotToolset`] and wraps
//! the chosen hook in `MeteredTools`, so each step's tool-definition tokens are known.
//!
//! - `eager`: the native tools and every allowed MCP tool, every step;
//! - `deferred`: the native tools, `tool_search` and the bindings' pinned tools; what a
//!   search found joins from the next step (`DeferredTools` reads the conversation);
//! - `auto`: deferred when every allowed tool's definitions pass
//!   [`crate::ApiConfig::auto_threshold_tokens`], eager below.
//!
//! `tool_search` searches the toolset's catalog (the manager's cached lists, same qualified
//! names as the executor), cached per bot in [`chat_tools::ToolCatalogs`]: a search never
//! starts a server; a found tool's server starts when the tool is called.

use std::sync::Arc;

use inference::{
    ActiveTools, MeteredTools, NativeToolRegistry, ToolCatalog, ToolLoading, ToolSearchTool,
    ToolTokenLog, eager_tokens, plan_tools_counted,
};
use serde_json::{Value, json};
use store::{Bot, ToolLoadingMode};
use toolset::{BotToolset, ListPolicy};

use crate::state::AppState;
use chat_tools::executor::definitions;

/// The tools of one turn.
pub struct TurnTools {
    /// `Eager` or `Deferred`, as decided for this request.
    pub mode: ToolLoading,
    /// The hook for `ChatTurn::with_active_tools` (metered).
    pub active: Arc<dyn ActiveTools>,
    /// The native tools (with `tool_search` when deferred).
    pub native: NativeToolRegistry,
    /// Tool-definition tokens of each step, filled as the turn runs.
    pub tokens: ToolTokenLog,
    /// Tokens of every allowed tool's definition: what eager loading sends each step.
    pub eager_tokens: usize,
}

/// The store's mode as inference's.
pub fn loading_of(mode: ToolLoadingMode) -> ToolLoading {
    match mode {
        ToolLoadingMode::Eager => ToolLoading::Eager,
        ToolLoadingMode::Deferred => ToolLoading::Deferred,
        ToolLoadingMode::Auto => ToolLoading::Auto,
    }
}

impl TurnTools {
    pub async fn plan(state: &AppState, bot: &Bot, toolset: &BotToolset) -> Self {
        let mode = loading_of(bot.tool_loading_mode);
        let catalog = match mode {
            // Never searched: no index to build.
            ToolLoading::Eager => Arc::new(ToolCatalog::build(&[])),
            ToolLoading::Deferred | ToolLoading::Auto => {
                state.config.catalogs.for_bot(toolset).await
            }
        };
        let definitions = definitions(toolset);
        let eager_tokens = state
            .config
            .catalogs
            .eager_tokens(toolset, || eager_tokens(&state.native, &definitions));
        let plan = plan_tools_counted(
            mode,
            state.config.auto_threshold_tokens,
            state.native.clone(),
            Arc::new(ToolSearchTool::new(catalog)),
            definitions,
            toolset.pinned(),
            eager_tokens,
        );
        let (metered, tokens) = MeteredTools::new(plan.active);
        Self {
            mode: plan.mode,
            active: Arc::new(metered),
            native: plan.native,
            tokens,
            eager_tokens: plan.eager_tokens,
        }
    }

    /// What a turn reports about its tools (the SSE `finish` chunk's `messageMetadata`, the
    /// JSON answer): the mode and the tool-definition tokens of each step.
    pub fn report(&self) -> ToolReport {
        ToolReport {
            mode: self.mode,
            tokens: self.tokens.clone(),
            eager_tokens: self.eager_tokens,
        }
    }
}

/// A turn's tool loading, readable after (or while) it runs.
#[derive(Debug, Clone)]
pub struct ToolReport {
    pub mode: ToolLoading,
    pub tokens: ToolTokenLog,
    pub eager_tokens: usize,
}

impl ToolReport {
    /// `{toolLoading, toolDefinitionTokens: [per step], eagerToolDefinitionTokens}`.
    pub fn fields(&self) -> Value {
        json!({
            "toolLoading": self.mode.as_str(),
            "toolDefinitionTokens": self.tokens.steps(),
            "eagerToolDefinitionTokens": self.eager_tokens,
        })
    }

    /// Adds [`Self::fields`] to a JSON object.
    pub fn add_to(&self, object: &mut Value) {
        if let (Some(object), Value::Object(fields)) = (object.as_object_mut(), self.fields()) {
            object.extend(fields);
        }
    }
}

/// Build every deferred or auto bot's `tool_search` index from the cached tool lists, so the
/// first chat request does not wait for the tools to be embedded. Starts no server; a bot
/// whose bindings cannot be read is logged and skipped.
pub async fn warm_tool_search(state: &AppState) {
    let bots = match state.store.bots().await {
        Ok(bots) => bots,
        Err(error) => {
            tracing::warn!(%error, "tool_search warm-up: bots unreadable");
            return;
        }
    };
    for bot in bots {
        if bot.tool_loading_mode == ToolLoadingMode::Eager {
            continue;
        }
        match state.toolsets.load(&bot.id, ListPolicy::CachedOnly).await {
            Ok(toolset) => {
                let catalog = state.config.catalogs.for_bot(&toolset).await;
                tracing::info!(bot = %bot.name, tools = catalog.len(), "tool_search index ready");
            }
            Err(error) => tracing::warn!(bot = %bot.name, %error, "tool_search warm-up skipped"),
        }
    }
}

/// Every [`KEEP_EVERY`] (or a quarter of `retention`, if shorter), from the first call on:
/// forget the indexes of deleted bots, mark the stored vectors of the live `tool_search`
/// indexes used and delete those neither made nor used within `retention`
/// ([`chat_tools::ToolCatalogs::keep_vectors`]). Runs until the task is dropped;
/// a failed round is logged and the next one tries again.
pub async fn keep_tool_vectors(state: &AppState, retention: std::time::Duration) {
    // At least a second apart (a zero period would panic).
    let every = KEEP_EVERY
        .min(retention / 4)
        .max(std::time::Duration::from_secs(1));
    let mut rounds = tokio::time::interval(every);
    rounds.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        rounds.tick().await;
        match state.store.bots().await {
            Ok(bots) => state
                .config
                .catalogs
                .forget_bots_except(&bots.into_iter().map(|bot| bot.id).collect()),
            Err(error) => tracing::warn!(%error, "bots unreadable; their indexes kept"),
        }
        match state.config.catalogs.keep_vectors(retention).await {
            Ok(kept) => tracing::info!(
                touched = kept.touched,
                pruned_vectors = kept.pruned.vectors,
                pruned_sets = kept.pruned.sets,
                "tool vectors kept"
            ),
            Err(error) => tracing::warn!(%error, "tool vectors not kept this round"),
        }
    }
}

/// How often [`keep_tool_vectors`] runs.
pub const KEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(6 * 60 * 60);
