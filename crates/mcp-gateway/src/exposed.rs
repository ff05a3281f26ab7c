//! A bot's tools as the gateway exposes them: each under its qualified name
//! (`server__tool`, the rule of `toolset::naming`, the same names the chat model sees),
//! sorted by that name, with the reverse map that routes a call. Routing only ever goes
//! through the map: a name is never split or matched by prefix.
//!
//! The same function names the tools of a committed bot manifest ([`crate::manifest`]), so
//! the manifest and the live `tools/list` cannot disagree on naming.

use std::collections::BTreeMap;

use rmcp::model::Tool;
use toolset::naming::{QualifiedToolNames, ToolRoute};

use crate::backend::{ExposedTool, ServerInstructions};

/// The exposed tools of one bot and the route of each.
#[derive(Debug, Clone, Default)]
pub struct ExposedTools {
    tools: Vec<Tool>,
    routes: BTreeMap<String, ToolRoute>,
}

impl ExposedTools {
    /// Names `tools` (server, raw tool) with the toolset's rule (a committed manifest's
    /// tools). A tool listed twice by one server is kept once.
    pub fn build<'a>(tools: impl IntoIterator<Item = (&'a str, &'a Tool)>) -> Self {
        let mut by_route: BTreeMap<ToolRoute, &Tool> = BTreeMap::new();
        for (server, tool) in tools {
            by_route
                .entry(ToolRoute::new(server, tool.name.to_string()))
                .or_insert(tool);
        }
        let names = QualifiedToolNames::build(by_route.keys().cloned());
        let exposed: Vec<ExposedTool> = names
            .iter()
            .filter_map(|(qualified, route)| {
                Some(ExposedTool {
                    qualified: qualified.to_owned(),
                    route: route.clone(),
                    tool: (*by_route.get(route)?).clone(),
                })
            })
            .collect();
        Self::from_backend(&exposed)
    }

    /// A backend's tools, already named: renamed to their qualified names and routed, in
    /// name order.
    pub fn from_backend(tools: &[ExposedTool]) -> Self {
        let mut routes = BTreeMap::new();
        let mut exposed: Vec<Tool> = Vec::with_capacity(tools.len());
        for t in tools {
            if routes
                .insert(t.qualified.clone(), t.route.clone())
                .is_none()
            {
                let mut tool = t.tool.clone();
                tool.name = t.qualified.clone().into();
                exposed.push(tool);
            }
        }
        exposed.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            tools: exposed,
            routes,
        }
    }

    /// Every tool under its qualified name, sorted by name.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Where a qualified name leads, if it is one of these tools.
    pub fn resolve(&self, qualified: &str) -> Option<&ToolRoute> {
        self.routes.get(qualified)
    }

    /// The qualified name of a server's tool.
    pub fn qualified(&self, server: &str, tool: &str) -> Option<&str> {
        self.routes
            .iter()
            .find(|(_, route)| route.server == server && route.tool == tool)
            .map(|(name, _)| name.as_str())
    }
}

/// The gateway's `initialize` instructions for bot `bot`: how tools are named, then each
/// server's own instructions under its name.
pub fn combined_instructions(bot: &str, servers: &[ServerInstructions]) -> String {
    let mut text = format!(
        "BotCraft bot \"{bot}\". Tools are named SERVER__TOOL; each belongs to one of the MCP \
         servers below."
    );
    for server in servers {
        let body = server.text.trim();
        if body.is_empty() {
            continue;
        }
        text.push_str("\n\n## ");
        text.push_str(&server.server);
        text.push('\n');
        text.push_str(body);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::sync::Arc;

    fn tool(name: &str) -> Tool {
        Tool::new(
            name.to_owned(),
            format!("does {name}"),
            Arc::new(Default::default()),
        )
    }

    #[test]
    fn tools_are_renamed_sorted_and_routed() {
        let run = tool("run");
        let read = tool("read.file");
        let again = tool("run");
        let listing =
            ExposedTools::build([("forge-bash", &run), ("fs", &read), ("forge-bash", &again)]);
        let names: Vec<String> = listing.tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["forge-bash__run", "fs__read_file"]);
        assert_eq!(
            listing.resolve("fs__read_file"),
            Some(&ToolRoute::new("fs", "read.file"))
        );
        assert_eq!(listing.resolve("fs__read"), None);
        assert_eq!(
            listing.qualified("forge-bash", "run"),
            Some("forge-bash__run")
        );
        assert_eq!(
            listing.tools()[1].description.as_deref(),
            Some("does read.file")
        );
    }

    #[test]
    fn instructions_name_each_server_and_skip_empty_ones() {
        let text = combined_instructions(
            "forge",
            &[
                ServerInstructions {
                    server: "a".into(),
                    text: "Use a.\n".into(),
                },
                ServerInstructions {
                    server: "b".into(),
                    text: "  ".into(),
                },
            ],
        );
        assert_eq!(
            text,
            "BotCraft bot \"forge\". Tools are named SERVER__TOOL; each belongs to one of the MCP servers below.\n\n## a\nUse a."
        );
    }
}
