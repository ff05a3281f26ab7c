//! The bounds of a walk through folders (`list_directory`, `search_files`): how many lines an
//! answer shows, how many bytes it holds, how many folder entries one call reads and for how
//! long. A walk that reaches a bound stops and answers what it has, saying which bound it
//! reached; a cancelled call (`notifications/cancelled`, the client's timeout) stops too.
//!
//! Folder entries are counted as they are read, so the memory a walk holds (the entries of
//! the folders on its current path) is bounded by [`WalkLimits::max_walk_entries`] whatever
//! the tree; time is looked at every [`CHECK_EVERY`] entries.

use std::fmt;
use std::time::{Duration, Instant};

use server_kit::CancellationToken;

use crate::answer::escaped_size;

/// How many entries are read between two looks at the clock and the cancel token.
pub const CHECK_EVERY: u64 = 1024;

/// The variable capping the lines of a listing and the matches of a search.
pub const MAX_ENTRIES_VAR: &str = "FORGE_FS_MAX_ENTRIES";
/// Its default.
pub const DEFAULT_MAX_ENTRIES: u64 = 10_000;
/// The variable capping the folder entries one walk reads.
pub const MAX_WALK_ENTRIES_VAR: &str = "FORGE_FS_MAX_WALK_ENTRIES";
/// Its default: at most ~20 MiB of names held at once.
pub const DEFAULT_MAX_WALK_ENTRIES: u64 = 250_000;
/// The variable capping how long one walk runs, in seconds.
pub const MAX_SECONDS_VAR: &str = "FORGE_FS_MAX_SECONDS";
/// Its default: below BotCraft's default call timeout (30 s), so the caller gets what was
/// found rather than a timeout.
pub const DEFAULT_MAX_SECONDS: u64 = 20;

/// The bounds of one walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Lines of a listing, matches of a search (`FORGE_FS_MAX_ENTRIES`).
    pub max_entries: u64,
    /// Bytes of one answer (`FORGE_FS_MAX_READ_BYTES`, the cap of a read).
    pub max_bytes: u64,
    /// Folder entries read by one call (`FORGE_FS_MAX_WALK_ENTRIES`).
    pub max_walk_entries: u64,
    /// How long one call walks (`FORGE_FS_MAX_SECONDS`).
    pub max_time: Duration,
}

impl Default for WalkLimits {
    fn default() -> Self {
        Self {
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: crate::config::DEFAULT_MAX_READ_BYTES,
            max_walk_entries: DEFAULT_MAX_WALK_ENTRIES,
            max_time: Duration::from_secs(DEFAULT_MAX_SECONDS),
        }
    }
}

/// Which bound stopped a walk early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The answer holds `max_entries` lines or matches.
    Entries(u64),
    /// The answer reached `max_bytes`.
    Bytes(u64),
    /// `max_walk_entries` folder entries were read.
    WalkEntries(u64),
    /// The walk ran for `max_time`.
    Time(Duration),
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Entries(max) => write!(f, "one answer shows at most {max} ({MAX_ENTRIES_VAR})"),
            Self::Bytes(max) => write!(
                f,
                "one answer holds at most {max} bytes (FORGE_FS_MAX_READ_BYTES)"
            ),
            Self::WalkEntries(max) => write!(
                f,
                "one call reads at most {max} folder entries ({MAX_WALK_ENTRIES_VAR})"
            ),
            Self::Time(max) => write!(
                f,
                "one call walks for at most {} s ({MAX_SECONDS_VAR})",
                max.as_secs()
            ),
        }
    }
}

/// Why a walk stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A bound: answer what was found, and say so.
    Bound(Bound),
    /// The call was cancelled: nobody waits for an answer.
    Cancelled,
}

/// One call's walk: counts the entries it reads and watches the clock and the cancel token.
#[derive(Debug)]
pub struct Walk<'a> {
    limits: WalkLimits,
    started: Instant,
    read: u64,
    cancel: &'a CancellationToken,
}

impl<'a> Walk<'a> {
    pub fn new(limits: WalkLimits, cancel: &'a CancellationToken) -> Self {
        Self {
            limits,
            started: Instant::now(),
            read: 0,
            cancel,
        }
    }

    pub fn limits(&self) -> &WalkLimits {
        &self.limits
    }

    /// Count one folder entry read; `Err` when the walk must stop here.
    pub fn entry(&mut self) -> Result<(), Stop> {
        if self.read >= self.limits.max_walk_entries {
            return Err(Stop::Bound(Bound::WalkEntries(
                self.limits.max_walk_entries,
            )));
        }
        self.read += 1;
        if self.read.is_multiple_of(CHECK_EVERY) {
            self.check()?;
        }
        Ok(())
    }

    /// The clock and the cancel token, now.
    pub fn check(&self) -> Result<(), Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if self.started.elapsed() >= self.limits.max_time {
            return Err(Stop::Bound(Bound::Time(self.limits.max_time)));
        }
        Ok(())
    }
}

/// The text of an answer, grown line by line under the entry and byte bounds (bytes as the
/// JSON answer carries them: [`crate::answer`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lines {
    pub text: String,
    pub count: u64,
    /// The JSON-escaped size of `text`.
    escaped: usize,
}

impl Lines {
    /// Add `line` unless a bound says no: then the bound.
    pub fn push(&mut self, line: &str, limits: &WalkLimits) -> Result<(), Bound> {
        if self.count >= limits.max_entries {
            return Err(Bound::Entries(limits.max_entries));
        }
        let separator = if self.count > 0 { 2 } else { 0 };
        let after = self.escaped + separator + escaped_size(line);
        if u64::try_from(after).unwrap_or(u64::MAX) > limits.max_bytes {
            return Err(Bound::Bytes(limits.max_bytes));
        }
        self.escaped = after;
        if self.count > 0 {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.count += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn limits(max_entries: u64, max_bytes: u64, max_walk_entries: u64) -> WalkLimits {
        WalkLimits {
            max_entries,
            max_bytes,
            max_walk_entries,
            max_time: Duration::from_secs(3600),
        }
    }

    #[test]
    fn lines_stop_at_the_entry_or_the_byte_bound() {
        let cases = [
            (
                limits(2, 100, 10),
                vec!["a", "b", "c"],
                "a\nb",
                Bound::Entries(2),
            ),
            // The separator is `\n`, two bytes in JSON: "ab" + "\n" + "c" takes 5.
            (
                limits(9, 5, 10),
                vec!["ab", "c", "d"],
                "ab\nc",
                Bound::Bytes(5),
            ),
            // A control character in a name takes six.
            (
                limits(9, 8, 10),
                vec!["a\u{1}", "b"],
                "a\u{1}",
                Bound::Bytes(8),
            ),
        ];
        for (limits, input, text, bound) in cases {
            let mut lines = Lines::default();
            let mut stopped = None;
            for line in input {
                if let Err(reached) = lines.push(line, &limits) {
                    stopped = Some(reached);
                    break;
                }
            }
            assert_eq!((lines.text.as_str(), stopped), (text, Some(bound)));
        }
    }

    #[test]
    fn a_walk_stops_at_its_entry_bound_on_cancel_and_at_its_deadline() {
        let cancel = CancellationToken::new();
        let mut walk = Walk::new(limits(1, 1, 3), &cancel);
        assert_eq!(
            (0..4).map(|_| walk.entry()).collect::<Vec<_>>(),
            vec![
                Ok(()),
                Ok(()),
                Ok(()),
                Err(Stop::Bound(Bound::WalkEntries(3)))
            ]
        );
        let no_time = WalkLimits {
            max_time: Duration::ZERO,
            ..limits(1, 1, 10)
        };
        assert_eq!(
            Walk::new(no_time, &cancel).check(),
            Err(Stop::Bound(Bound::Time(Duration::ZERO)))
        );
        cancel.cancel();
        assert_eq!(
            Walk::new(limits(1, 1, 10), &cancel).check(),
            Err(Stop::Cancelled)
        );
    }
}
