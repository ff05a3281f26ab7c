//! The bridge's reason-coded failures (seed 001): a failed call is a tool result with
//! `isError: true` stating the cause, plus one stderr line
//! `botcraft-mcp-stdio: reason=stdio.CODE tool=TOOL MESSAGE`. The codes are server-kit's
//! [`ReasonCode`]s (seed 001's, which the forge servers write too); the line's name tells the
//! bridge's failures from the forge servers' own.

use server_kit::{ReasonCode, STDERR_MESSAGE_CHARS};

/// The name on the bridge's stderr lines.
pub const BRIDGE_NAME: &str = "botcraft-mcp-stdio";

/// A tools/call of the bridge that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BridgeFailure {
    pub code: ReasonCode,
    pub message: String,
    /// BotCraft (or the server behind it) answered with this JSON-RPC error: code, message,
    /// data — passed on unchanged (`mcp-stdio --server`).
    pub refused: Option<(i32, String, Option<serde_json::Value>)>,
}

impl BridgeFailure {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            refused: None,
        }
    }

    /// BotCraft refused the request with `error`.
    pub fn refused(error: rmcp::ErrorData) -> Self {
        Self {
            code: ReasonCode::ToolError,
            message: error.message.to_string(),
            refused: Some((error.code.0, error.message.to_string(), error.data)),
        }
    }

    /// The JSON-RPC error BotCraft answered with, if that is what failed.
    pub fn refusal(&self) -> Option<&(i32, String, Option<serde_json::Value>)> {
        self.refused.as_ref()
    }

    /// The failure as the stdio client's JSON-RPC error: BotCraft's own, or one stating the
    /// cause.
    pub fn into_error(self) -> rmcp::ErrorData {
        match self.refused {
            Some((code, message, data)) => {
                rmcp::ErrorData::new(rmcp::model::ErrorCode(code), message, data)
            }
            None => rmcp::ErrorData::internal_error(self.message, None),
        }
    }

    /// `stdio.not_configured`, …
    pub fn reason(&self) -> &'static str {
        self.code.as_str()
    }

    /// The one stderr line for this failure: the tool (the client's name for it) and the
    /// message each on one line ([`server_kit::one_line`]: control characters escaped), the
    /// message cut at [`STDERR_MESSAGE_CHARS`] characters.
    pub fn stderr_line(&self, tool: &str) -> String {
        format!(
            "{BRIDGE_NAME}: reason={} tool={} {}",
            self.reason(),
            server_kit::one_word(tool, STDERR_MESSAGE_CHARS),
            server_kit::one_line(&self.message, STDERR_MESSAGE_CHARS)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn codes_are_the_seeds_and_lines_are_single() {
        let reasons: Vec<&str> = ReasonCode::ALL
            .iter()
            .map(|code| BridgeFailure::new(*code, "").reason())
            .collect();
        assert_eq!(
            reasons,
            [
                "stdio.not_configured",
                "stdio.upstream_unreachable",
                "stdio.upstream_http_error",
                "stdio.upstream_bad_payload",
                "stdio.tool_error"
            ]
        );
        let failure = BridgeFailure::new(ReasonCode::ToolError, "a\nb");
        assert_eq!(
            failure.stderr_line("forge-bash__run"),
            "botcraft-mcp-stdio: reason=stdio.tool_error tool=forge-bash__run a\\nb"
        );
    }
}
