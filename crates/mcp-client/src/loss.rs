//! How a connection ends: [`ExitInfo`] (a process's exit status; a remote connection's loss
//! is an exit without one) and [`ConnectionLoss`], the "exit" of a remote connection.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

/// How a server ended: its exit code or the signal that killed it (neither for a remote
/// connection that was lost, or a server that ended without a status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// An end without a status (a lost connection, an aborted in-process server).
    pub const NONE: Self = Self {
        code: None,
        signal: None,
    };
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(signal)) => write!(f, "killed by signal {signal}"),
            (None, None) => f.write_str("unknown exit"),
        }
    }
}

/// How a remote connection ends: its "exit" (the watch every waiter of the server holds),
/// and whether the server refused the session (an error answer without an id, as a server
/// that restarted and forgot the session gives): then no request in flight on it was
/// processed, and each may be sent again on a new connection.
#[derive(Debug)]
pub struct ConnectionLoss {
    exit: watch::Sender<Option<ExitInfo>>,
    refused: AtomicBool,
    /// The server may use OAuth: a `401`/`403` challenge makes it `needs-auth`.
    pub oauth: bool,
}

impl ConnectionLoss {
    pub fn new(oauth: bool) -> (Arc<Self>, watch::Receiver<Option<ExitInfo>>) {
        let (exit, receiver) = watch::channel(None);
        let loss = Self {
            exit,
            refused: AtomicBool::new(false),
            oauth,
        };
        (Arc::new(loss), receiver)
    }

    /// The connection is gone (first call wins).
    pub fn lose(&self) {
        self.exit.send_if_modified(|exit| {
            let first = exit.is_none();
            if first {
                *exit = Some(ExitInfo::NONE);
            }
            first
        });
    }

    /// The server refused the session: lost, and nothing in flight was processed.
    pub fn refuse(&self) {
        self.refused.store(true, Ordering::SeqCst);
        self.lose();
    }

    pub fn was_refused(&self) -> bool {
        self.refused.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn an_exit_reads_as_its_code_its_signal_or_neither() {
        let cases = [
            (Some(3), None, "exit code 3"),
            (None, Some(9), "killed by signal 9"),
            (None, None, "unknown exit"),
        ];
        for (code, signal, shown) in cases {
            assert_eq!(ExitInfo { code, signal }.to_string(), shown);
        }
    }

    #[test]
    fn a_refused_session_is_lost_once_and_says_it_was_refused() {
        let (loss, exit) = ConnectionLoss::new(false);
        assert_eq!((*exit.borrow(), loss.was_refused()), (None, false));
        loss.refuse();
        loss.lose();
        assert_eq!(
            (*exit.borrow(), loss.was_refused()),
            (Some(ExitInfo::NONE), true)
        );
    }
}
