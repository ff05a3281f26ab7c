//! The MCP methods the stdio framing knows, for one rule: a line that does not decode and
//! names a method MCP does not have is ignored when it is a notification (an editor's LSP
//! traffic on the same pipe, say), and so is any undecodable `notifications/…` MCP does not
//! define, where other undecodable messages are answered `Invalid request`.

use serde_json::Value;

const REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "completion/complete",
    "elicitation/create",
    "logging/setLevel",
    "roots/list",
    "sampling/createMessage",
];

const NOTIFICATIONS: &[&str] = &[
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/subscriptions/acknowledged",
    "notifications/tools/list_changed",
];

fn is_notification_method(method: &str) -> bool {
    NOTIFICATIONS.contains(&method)
}

fn is_mcp_method(method: &str) -> bool {
    REQUESTS.contains(&method) || is_notification_method(method)
}

/// Whether an undecodable `line` is to be ignored rather than answered.
pub(crate) fn ignorable(line: &[u8]) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return false;
    };
    let notification = !message.contains_key("id");
    (notification && !is_mcp_method(method))
        || (method.starts_with("notifications/") && !is_notification_method(method))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_lines_are_ignored() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":1}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/custom","id":1}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":1}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"tools/call","params":1}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","method":"other","id":3}"#, false),
            (r#"{"jsonrpc":"2.0","result":{}}"#, false),
            (r#"[1]"#, false),
        ];
        for (line, expected) in cases {
            assert_eq!(ignorable(line.as_bytes()), expected, "{line}");
        }
    }
}
