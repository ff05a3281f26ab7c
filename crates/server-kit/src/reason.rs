//! Reason codes and tool failures (seed 001: "a missing dependency fails one
//! call with a stated cause and a reason code on stderr").

use std::fmt;

/// Longest message, in characters, written on a failure's stderr line.
pub const STDERR_MESSAGE_CHARS: usize = 500;

/// Why a tool call failed. The code is stable and machine-readable; the
/// message of the [`ToolFailure`] that carries it is for people and models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasonCode {
    /// A setting the call needs (an env var, a path) is missing.
    NotConfigured,
    /// The upstream service could not be reached (connect error, timeout).
    UpstreamUnreachable,
    /// The upstream answered with a non-success status.
    UpstreamHttpError,
    /// The upstream answered with something we could not understand.
    UpstreamBadPayload,
    /// The tool ran and failed: bad input, a refused path, a blocked command.
    ToolError,
}

impl ReasonCode {
    /// The code as written on stderr: seed 001's codes, word for word.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::NotConfigured => "stdio.not_configured",
            ReasonCode::UpstreamUnreachable => "stdio.upstream_unreachable",
            ReasonCode::UpstreamHttpError => "stdio.upstream_http_error",
            ReasonCode::UpstreamBadPayload => "stdio.upstream_bad_payload",
            ReasonCode::ToolError => "stdio.tool_error",
        }
    }

    /// Every code, in a fixed order.
    pub const ALL: [ReasonCode; 5] = [
        ReasonCode::NotConfigured,
        ReasonCode::UpstreamUnreachable,
        ReasonCode::UpstreamHttpError,
        ReasonCode::UpstreamBadPayload,
        ReasonCode::ToolError,
    ];
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call that failed in a way the model should see. It becomes a tool
/// result with `isError: true` whose text is `message`, and one stderr line
/// with `code`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolFailure {
    pub code: ReasonCode,
    pub message: String,
}

impl ToolFailure {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The tool ran and failed (bad input, refused path, blocked command).
    pub fn tool(message: impl Into<String>) -> Self {
        Self::new(ReasonCode::ToolError, message)
    }

    /// A setting is missing; `message` should name the variable to set.
    pub fn not_configured(message: impl Into<String>) -> Self {
        Self::new(ReasonCode::NotConfigured, message)
    }

    /// The one stderr line that reports this failure: the server, the code,
    /// the tool and the message, with newlines escaped so it stays one line (and every
    /// other control or line-breaking character written `\u{…}`, so a command's output in
    /// the message cannot rewrite the line or fake another: `\r`, ESC, U+2028), and cut at
    /// [`STDERR_MESSAGE_CHARS`] characters (a tool's whole reply can be its failure message;
    /// the log needs only its start).
    pub fn stderr_line(&self, server: &str, tool: &str) -> String {
        format!(
            "{server}: reason={} tool={} {}",
            self.code.as_str(),
            one_word(tool, STDERR_MESSAGE_CHARS),
            one_line(&self.message, STDERR_MESSAGE_CHARS)
        )
    }
}

/// `text` for one stderr line: `\` and newlines escaped, every other control,
/// line-breaking or direction-changing character written `\u{…}` (so text from a command or
/// a client cannot rewrite the line, fake another, or reorder what it shows: `\r`, ESC,
/// U+2028, U+202E), cut at `max` characters (then ending in `…`). Every failure line of
/// BotCraft's stdio servers and its bridge goes through it.
pub fn one_line(text: &str, max: usize) -> String {
    escaped(text, max, |_| false)
}

/// [`one_line`] for a field that ends at a space (a tool's name in a failure line): its
/// spaces written `\u{20}` too, so that it cannot write a field of its own
/// (`tool=x reason=…`).
pub fn one_word(text: &str, max: usize) -> String {
    escaped(text, max, |c| c == ' ')
}

fn escaped(text: &str, max: usize, also: impl Fn(char) -> bool) -> String {
    let mut line = String::with_capacity(text.len().min(max * 2));
    for c in text.chars() {
        match c {
            '\\' => line.push_str("\\\\"),
            '\n' => line.push_str("\\n"),
            c if c.is_control()
                || also(c)
                || matches!(
                    c,
                    '\u{2028}'
                        | '\u{2029}'
                        | '\u{061c}'
                        | '\u{200e}'
                        | '\u{200f}'
                        | '\u{202a}'..='\u{202e}'
                        | '\u{2066}'..='\u{2069}'
                ) =>
            {
                line.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => line.push(c),
        }
    }
    if let Some((cut, _)) = line.char_indices().nth(max) {
        line.truncate(cut);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn codes_are_the_seed_codes() {
        let codes: Vec<&str> = ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            codes,
            [
                "stdio.not_configured",
                "stdio.upstream_unreachable",
                "stdio.upstream_http_error",
                "stdio.upstream_bad_payload",
                "stdio.tool_error"
            ]
        );
    }

    #[test]
    fn stderr_line_is_capped() {
        let failure = ToolFailure::tool("x".repeat(2000));
        let line = failure.stderr_line("forge-bash", "run");
        assert_eq!(
            line,
            format!(
                "forge-bash: reason=stdio.tool_error tool=run {}…",
                "x".repeat(STDERR_MESSAGE_CHARS)
            )
        );
    }

    #[test]
    fn stderr_line_is_one_line() {
        let failure = ToolFailure::not_configured("set TYPESENSE_URL\nand TYPESENSE_SEARCH_KEY");
        assert_eq!(
            failure.stderr_line("forge-typesense", "search_knowledge"),
            "forge-typesense: reason=stdio.not_configured tool=search_knowledge set TYPESENSE_URL\\nand TYPESENSE_SEARCH_KEY"
        );
        let spoof = ToolFailure::tool("out\r\u{1b}[2Kforge-bash: reason=stdio.x\u{2028}y\\z");
        assert_eq!(
            spoof.stderr_line("forge-bash", "run"),
            "forge-bash: reason=stdio.tool_error tool=run out\\u{d}\\u{1b}[2Kforge-bash: reason=stdio.x\\u{2028}y\\\\z"
        );
        let reordered = ToolFailure::tool("a\u{202e}b");
        assert_eq!(
            reordered.stderr_line("forge-bash", "x reason=stdio.fake"),
            "forge-bash: reason=stdio.tool_error tool=x\\u{20}reason=stdio.fake a\\u{202e}b"
        );
    }
}
