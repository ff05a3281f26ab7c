//! [`ApprovalNow`]: a bot's approval policies as last written, to gate calls of a toolset
//! taken earlier (a chat turn reads them again before each step's calls).

use std::collections::HashMap;

use store::{ApprovalPolicy, BotMcpServer};

use crate::set::BotTool;

/// A bot's approval policies at one moment: its native tools' and each enabled binding's.
#[derive(Debug, Clone)]
pub struct ApprovalNow {
    native: ApprovalPolicy,
    /// The enabled bindings, by server id, with the server's name now.
    bindings: HashMap<String, (String, BotMcpServer)>,
}

impl ApprovalNow {
    pub(crate) fn new(
        native: ApprovalPolicy,
        bindings: impl IntoIterator<Item = (String, (String, BotMcpServer))>,
    ) -> Self {
        Self {
            native,
            bindings: bindings.into_iter().collect(),
        }
    }

    /// Whether a call of `tool` asks now: its binding's policy as written now. A binding
    /// gone, disabled, or whose filter now leaves the tool out asks (the call would be
    /// refused anyway), and so does a server renamed since (a call goes by the name, which
    /// may now be another server's): nothing runs unasked on a word that is no longer true.
    pub fn asks(&self, tool: &BotTool) -> bool {
        match self.bindings.get(&tool.server_id) {
            Some((name, binding))
                if *name == tool.route.server && binding.allows(&tool.route.tool) =>
            {
                binding.approval.asks(&tool.route.tool, tool.read_only())
            }
            _ => true,
        }
    }

    /// Whether the bot's native tool `name`, which declares `read_only`, asks now.
    pub fn native_asks(&self, name: &str, read_only: bool) -> bool {
        self.native.asks(name, read_only)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::naming::ToolRoute;

    fn tool(name: &str, read_only: bool) -> BotTool {
        let tool: mcp_lifecycle::Tool = serde_json::from_value(serde_json::json!({
            "name": name,
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": read_only},
        }))
        .expect("a tool");
        BotTool {
            qualified: format!("s__{name}"),
            route: ToolRoute::new("s", name),
            server_id: "id-s".into(),
            tool,
            pinned: false,
            asks_approval: false,
            server_instructions: String::new(),
        }
    }

    fn binding(enabled: bool, filter: &[&str], approval: ApprovalPolicy) -> BotMcpServer {
        BotMcpServer {
            id: "b".into(),
            bot_id: "bot".into(),
            mcp_server_id: "id-s".into(),
            enabled,
            tool_filter: filter.iter().map(|t| (*t).to_owned()).collect(),
            pinned_tools: Vec::new(),
            approval,
        }
    }

    #[test]
    fn a_call_asks_by_its_binding_now_and_whenever_the_binding_no_longer_allows_it() {
        let read = tool("read", true);
        let write = tool("write", false);
        let cases = [
            (
                Some(binding(true, &[], ApprovalPolicy::Never)),
                [false, false],
            ),
            (
                Some(binding(true, &[], ApprovalPolicy::Writes)),
                [false, true],
            ),
            (
                Some(binding(true, &[], ApprovalPolicy::Always)),
                [true, true],
            ),
            // Gone, disabled, or filtering the tool out: asks.
            (None, [true, true]),
            (
                Some(binding(false, &[], ApprovalPolicy::Never)),
                [true, true],
            ),
            (
                Some(binding(true, &["read"], ApprovalPolicy::Never)),
                [false, true],
            ),
        ];
        for (bound, expected) in cases {
            let now = ApprovalNow::new(
                ApprovalPolicy::Never,
                bound
                    .clone()
                    .map(|b| ("id-s".to_owned(), ("s".to_owned(), b))),
            );
            assert_eq!([now.asks(&read), now.asks(&write)], expected, "{bound:?}");
        }
        // The server renamed since the toolset was taken: asks.
        let renamed = ApprovalNow::new(
            ApprovalPolicy::Never,
            [(
                "id-s".to_owned(),
                ("t".to_owned(), binding(true, &[], ApprovalPolicy::Never)),
            )],
        );
        assert!(renamed.asks(&read));
        let native = ApprovalNow::new(ApprovalPolicy::Writes, []);
        assert_eq!(
            [
                native.native_asks("look", true),
                native.native_asks("act", false)
            ],
            [false, true]
        );
    }
}
