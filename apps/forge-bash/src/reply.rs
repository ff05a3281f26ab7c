//! The reply text of `run`:
//!
//! ```text
//! {stdout}{stderr}{truncation notice}{limit notice}[exit:N | Xms]
//! ```
//!
//! Stdout, then stderr (see [`crate::capture`]), each part ending with a
//! newline, then the notices (one line each, when they apply), then the
//! footer with no newline after it. N is the exit code (128 + N for a shell
//! killed by signal N), or `timeout`, `max_buffer` or `cancelled` when
//! forge-bash stopped the command; X is the wall time in milliseconds.

use std::time::Duration;

use crate::audit::Outcome;
use crate::capture::{Captured, Saved, Truncation};
use crate::config::{MAX_BUFFER_VAR, TIMEOUT_VAR};
use crate::exec::Ending;

impl From<Ending> for Outcome {
    fn from(ending: Ending) -> Self {
        match ending {
            Ending::Exited(code) => Outcome::Exit(code),
            Ending::TimedOut => Outcome::Timeout,
            Ending::BufferExceeded => Outcome::MaxBuffer,
            Ending::Cancelled => Outcome::Cancelled,
        }
    }
}

/// The limits named in the notices.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_buffer_bytes: u64,
}

/// `[exit:N | Xms]`
pub fn footer(outcome: Outcome, elapsed: Duration) -> String {
    format!("[exit:{outcome} | {}ms]", elapsed.as_millis())
}

/// The truncation notice (one line, no newline).
pub fn truncation_notice(truncation: &Truncation) -> String {
    let where_ = match &truncation.saved {
        Saved::File(path) => format!("Full output: {}", path.display()),
        Saved::NotSaved(reason) => format!("Full output not saved: {reason}"),
    };
    format!(
        "[output truncated: {} lines, {} bytes in all; showing the first {} lines ({} bytes). {where_}]",
        truncation.total_lines,
        truncation.total_bytes,
        truncation.shown_lines,
        truncation.shown_bytes
    )
}

/// The notice for a command forge-bash stopped (one line, no newline).
pub fn limit_notice(ending: Ending, limits: Limits) -> Option<String> {
    let what = match ending {
        Ending::Exited(_) => return None,
        Ending::TimedOut => format!(
            "the command ran past the {}s time limit ({TIMEOUT_VAR})",
            limits.timeout.as_secs()
        ),
        Ending::BufferExceeded => format!(
            "the command printed more than {} bytes ({MAX_BUFFER_VAR})",
            limits.max_buffer_bytes
        ),
        Ending::Cancelled => "the request was cancelled".to_owned(),
    };
    Some(format!(
        "[killed: {what}; its whole process group was stopped]"
    ))
}

/// The whole reply.
pub fn render(captured: &Captured, ending: Ending, elapsed: Duration, limits: Limits) -> String {
    let mut text = captured.body.clone();
    if let Some(truncation) = &captured.truncation {
        text.push_str(&truncation_notice(truncation));
        text.push('\n');
    }
    if let Some(notice) = limit_notice(ending, limits) {
        text.push_str(&notice);
        text.push('\n');
    }
    text.push_str(&footer(ending.into(), elapsed));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const LIMITS: Limits = Limits {
        timeout: Duration::from_secs(300),
        max_buffer_bytes: 52_428_800,
    };

    fn captured(body: &str) -> Captured {
        Captured {
            body: body.to_owned(),
            truncation: None,
        }
    }

    #[test]
    fn footer_follows_the_output() {
        let cases = [
            ("hi\n", Ending::Exited(0), "hi\n[exit:0 | 12ms]"),
            ("", Ending::Exited(1), "[exit:1 | 12ms]"),
            ("", Ending::Exited(137), "[exit:137 | 12ms]"),
        ];
        for (body, ending, expected) in cases {
            assert_eq!(
                render(&captured(body), ending, Duration::from_millis(12), LIMITS),
                expected
            );
        }
    }

    #[test]
    fn notices_come_before_the_footer() {
        let text = render(
            &Captured {
                body: "a\n".to_owned(),
                truncation: Some(Truncation {
                    total_lines: 300,
                    total_bytes: 1200,
                    shown_lines: 200,
                    shown_bytes: 800,
                    saved: Saved::NotSaved("disk full".to_owned()),
                }),
            },
            Ending::TimedOut,
            Duration::from_millis(300_001),
            LIMITS,
        );
        assert_eq!(
            text,
            "a\n[output truncated: 300 lines, 1200 bytes in all; showing the first 200 lines (800 bytes). Full output not saved: disk full]\n\
             [killed: the command ran past the 300s time limit (FORGE_BASH_TIMEOUT_SECS); its whole process group was stopped]\n\
             [exit:timeout | 300001ms]"
        );
    }
}
