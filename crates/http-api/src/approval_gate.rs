//! [`LiveGate`]: which calls of a chat turn wait for a person, by the policies as they are
//! when the calls come. The turn asks it to read them again before each step's calls, so
//! a binding's `approval` or a bot's `nativeToolApproval` tightened while a long turn runs
//! (a step can wait minutes on a tool) applies to the turn's next calls.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock};

use futures::future::BoxFuture;
use inference::{ApprovalGate, NativeToolRegistry};
use toolset::{ApprovalNow, BotToolset, Toolsets};

/// How long reading the policies again may take (a store that does not answer holds no
/// turn): past it, every call asks.
const POLICY_READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The turn's approval gate: the asking names, read again on each [`ApprovalGate::refresh`].
pub struct LiveGate {
    toolsets: Arc<Toolsets>,
    toolset: Arc<BotToolset>,
    /// The native tools that may ask (`tool_search` never does), with their read-only claim.
    native: Vec<(String, bool)>,
    asking: RwLock<BTreeSet<String>>,
}

impl LiveGate {
    /// The gate of a turn of `toolset`'s bot, whose native tools are `native` and whose
    /// native tools' policy is `native_policy` now.
    pub fn new(
        toolsets: Arc<Toolsets>,
        toolset: Arc<BotToolset>,
        native: &NativeToolRegistry,
        native_policy: &store::ApprovalPolicy,
    ) -> Self {
        let native: Vec<(String, bool)> = native
            .names()
            .filter(|name| *name != inference::TOOL_SEARCH)
            .filter_map(|name| Some((name.to_owned(), native.get(name)?.read_only())))
            .collect();
        let mut asking: BTreeSet<String> = toolset
            .tools
            .iter()
            .filter(|tool| tool.asks_approval)
            .map(|tool| tool.qualified.clone())
            .collect();
        asking.extend(
            native
                .iter()
                .filter(|(name, read_only)| native_policy.asks(name, *read_only))
                .map(|(name, _)| name.clone()),
        );
        Self {
            toolsets,
            toolset,
            native,
            asking: RwLock::new(asking),
        }
    }

    /// The asking names under `now`; every name when the policies could not be read.
    fn asking_under(&self, now: Option<&ApprovalNow>) -> BTreeSet<String> {
        let tools = self
            .toolset
            .tools
            .iter()
            .filter(|tool| now.is_none_or(|now| now.asks(tool)))
            .map(|tool| tool.qualified.clone());
        let native = self
            .native
            .iter()
            .filter(|(name, read_only)| now.is_none_or(|now| now.native_asks(name, *read_only)))
            .map(|(name, _)| name.clone());
        tools.chain(native).collect()
    }
}

impl ApprovalGate for LiveGate {
    fn asks(&self, name: &str) -> bool {
        self.asking
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let read = tokio::time::timeout(
                POLICY_READ_LIMIT,
                self.toolsets.approval_now(&self.toolset.bot_id),
            );
            let now = match read.await {
                Ok(Ok(now)) => Some(now),
                Ok(Err(error)) => {
                    tracing::warn!(
                        bot = %self.toolset.bot_name,
                        %error,
                        "the approval policies could not be read again: every call asks"
                    );
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        bot = %self.toolset.bot_name,
                        "the approval policies were not read in time: every call asks"
                    );
                    None
                }
            };
            let asking = self.asking_under(now.as_ref());
            *self.asking.write().unwrap_or_else(PoisonError::into_inner) = asking;
        })
    }
}
