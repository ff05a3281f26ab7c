//! [`BotToolset`]: what one bot may use right now, as an immutable snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_lifecycle::Tool;
use store::BoundServer;

use crate::naming::{QualifiedToolNames, ToolRoute};

/// One tool the bot may use.
#[derive(Debug, Clone, PartialEq)]
pub struct BotTool {
    /// The name every face offers it under (`server__tool`).
    pub qualified: String,
    pub route: ToolRoute,
    /// The id of the server the route names (another server under the same name has another).
    pub server_id: String,
    /// The tool as its server lists it (raw name).
    pub tool: Tool,
    /// Offered even when the bot's tools are loaded on demand.
    pub pinned: bool,
    /// A call waits for a person's approval: the binding's policy
    /// ([`store::ApprovalPolicy::asks`]) applied to the tool's name and its `readOnlyHint`.
    pub asks_approval: bool,
    /// The server's `instructions` (empty when it has none).
    pub server_instructions: String,
}

/// The tool's `readOnlyHint` (the server's claim), `false` when it makes none.
fn read_only(tool: &Tool) -> bool {
    tool.annotations
        .as_ref()
        .and_then(|annotations| annotations.read_only_hint)
        .unwrap_or(false)
}

impl BotTool {
    /// The tool's `readOnlyHint` (the server's claim), `false` when it makes none.
    pub fn read_only(&self) -> bool {
        read_only(&self.tool)
    }

    pub fn description(&self) -> &str {
        self.tool.description.as_deref().unwrap_or_default()
    }

    /// The input schema as JSON.
    pub fn input_schema(&self) -> serde_json::Value {
        serde_json::Value::Object(self.tool.input_schema.as_ref().clone())
    }
}

/// A server's `instructions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInstructions {
    pub server: String,
    pub text: String,
}

/// A bound server whose tools could not be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnavailableServer {
    pub server: String,
    pub reason: String,
}

/// The tools of one bot: its enabled bindings' servers' tools, each cut to its binding's
/// tool filter, named for the model.
#[derive(Debug, Clone)]
pub struct BotToolset {
    /// The bot's id (empty for [`crate::Toolsets::everything`]).
    pub bot_id: String,
    /// The bot's name (`*` for [`crate::Toolsets::everything`]).
    pub bot_name: String,
    pub names: QualifiedToolNames,
    /// In qualified-name order.
    pub tools: Vec<BotTool>,
    /// Instructions of the enabled servers that have some, in server-name order.
    pub instructions: Vec<ServerInstructions>,
    /// Per enabled server: a call's deadline (its timeout plus its init timeout, since a
    /// lazy start may come first).
    pub deadlines: BTreeMap<String, Duration>,
    /// The enabled servers, in server-name order.
    pub servers: Vec<String>,
    pub unavailable: Vec<UnavailableServer>,
    /// A digest of every (qualified name, tool) pair: equal digests, equal tools.
    pub hash: String,
    /// What the snapshot was built from, to tell whether it is still current.
    pub(crate) bindings: Arc<Vec<BoundServer>>,
    pub(crate) sources: Vec<Option<Arc<Vec<Tool>>>>,
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

impl BotToolset {
    /// The system prompt of a chat with this bot: `prompt` (the bot's own), then a section
    /// per server that declared instructions, in server-name order.
    pub fn system_prompt(&self, prompt: &str) -> String {
        system_prompt(prompt, &self.instructions)
    }

    /// Build from `bound` (every binding of the bot, by server name) and, for each enabled
    /// one in that order, its tool list (`Err`: why it has none).
    pub(crate) fn build(
        bot: (&str, &str),
        bindings: Arc<Vec<BoundServer>>,
        lists: Vec<Result<Arc<Vec<Tool>>, String>>,
        reserved: &[String],
    ) -> Self {
        let enabled: Vec<&BoundServer> = bindings.iter().filter(|b| b.binding.enabled).collect();
        let mut instructions = Vec::new();
        let mut deadlines = BTreeMap::new();
        let mut servers = Vec::new();
        let mut unavailable = Vec::new();
        let mut sources = Vec::new();
        let mut described: BTreeMap<ToolRoute, (Tool, bool, bool, String, String)> =
            BTreeMap::new();
        for (bound, list) in enabled.iter().zip(lists) {
            let server = &bound.server;
            servers.push(server.name.clone());
            deadlines.insert(
                server.name.clone(),
                millis(server.timeout) + millis(server.init_timeout),
            );
            let text = server.instructions.clone().unwrap_or_default();
            if !text.trim().is_empty() {
                instructions.push(ServerInstructions {
                    server: server.name.clone(),
                    text: text.clone(),
                });
            }
            let tools = match list {
                Ok(tools) => tools,
                Err(reason) => {
                    unavailable.push(UnavailableServer {
                        server: server.name.clone(),
                        reason,
                    });
                    sources.push(None);
                    continue;
                }
            };
            for tool in tools.iter() {
                let name = tool.name.as_ref();
                if !bound.binding.allows(name) {
                    continue;
                }
                let pinned = bound.binding.pinned_tools.iter().any(|p| p == name);
                let asks = bound.binding.approval.asks(name, read_only(tool));
                described
                    .entry(ToolRoute::new(&server.name, name))
                    .or_insert_with(|| {
                        (tool.clone(), pinned, asks, text.clone(), server.id.clone())
                    });
            }
            sources.push(Some(tools));
        }
        let names = QualifiedToolNames::build_with_reserved(
            reserved.iter().map(String::as_str),
            described.keys().cloned(),
        );
        let mut digest = canonical_json::Fingerprint::new();
        let mut tools = Vec::with_capacity(described.len());
        for (qualified, route) in names.iter() {
            let Some((tool, pinned, asks_approval, text, server_id)) = described.remove(route)
            else {
                continue;
            };
            digest
                .value(&serde_json::json!([qualified, pinned, asks_approval]))
                .json_text(&serde_json::to_string(&tool).unwrap_or_default());
            tools.push(BotTool {
                qualified: qualified.to_owned(),
                route: route.clone(),
                server_id,
                tool,
                pinned,
                asks_approval,
                server_instructions: text,
            });
        }
        Self {
            bot_id: bot.0.to_owned(),
            bot_name: bot.1.to_owned(),
            names,
            tools,
            instructions,
            deadlines,
            servers,
            unavailable,
            hash: digest.finish(),
            bindings,
            sources,
        }
    }

    /// The tool a qualified name leads to, if it is one of this bot's.
    pub fn resolve(&self, qualified: &str) -> Option<&BotTool> {
        let route = self.names.resolve(qualified)?;
        self.tools.iter().find(|t| &t.route == route)
    }

    /// The deadline of a call of a tool of `server`.
    pub fn deadline(&self, server: &str) -> Option<Duration> {
        self.deadlines.get(server).copied()
    }

    /// Qualified names of the pinned tools.
    pub fn pinned(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| t.pinned)
            .map(|t| t.qualified.clone())
            .collect()
    }

    /// Whether this snapshot was built from exactly these bindings and tool lists.
    pub(crate) fn built_from(
        &self,
        bindings: &Arc<Vec<BoundServer>>,
        lists: &[Result<Arc<Vec<Tool>>, String>],
    ) -> bool {
        Arc::ptr_eq(&self.bindings, bindings)
            && self.sources.len() == lists.len()
            && self
                .sources
                .iter()
                .zip(lists)
                .all(|(old, new)| match (old, new) {
                    (Some(old), Ok(new)) => Arc::ptr_eq(old, new),
                    (None, Err(_)) => true,
                    _ => false,
                })
    }
}

fn system_prompt(prompt: &str, instructions: &[ServerInstructions]) -> String {
    let mut sections = Vec::new();
    if !prompt.trim().is_empty() {
        sections.push(prompt.trim().to_owned());
    }
    for server in instructions {
        if !server.text.trim().is_empty() {
            sections.push(format!(
                "## Instructions for the tools of `{}`\n\n{}",
                server.server,
                server.text.trim()
            ));
        }
    }
    sections.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_system_prompt_is_the_bots_then_each_servers_instructions() {
        let instructions = |pairs: &[(&str, &str)]| -> Vec<ServerInstructions> {
            pairs
                .iter()
                .map(|(server, text)| ServerInstructions {
                    server: (*server).into(),
                    text: (*text).into(),
                })
                .collect()
        };
        for (prompt, servers, expected) in [
            ("", instructions(&[]), ""),
            ("  You help.\n", instructions(&[]), "You help."),
            (
                "You help.",
                instructions(&[("forge-bash", " Prefer short commands.\n"), ("fs", "  ")]),
                "You help.\n\n## Instructions for the tools of `forge-bash`\n\nPrefer short commands.",
            ),
            (
                " ",
                instructions(&[("a", "First."), ("b", "Second.")]),
                "## Instructions for the tools of `a`\n\nFirst.\n\n## Instructions for the tools of `b`\n\nSecond.",
            ),
        ] {
            assert_eq!(system_prompt(prompt, &servers), expected, "{prompt:?}");
        }
    }
}
