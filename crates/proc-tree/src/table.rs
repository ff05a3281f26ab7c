//! The `/proc` process table: who is alive, with which parent, since when.

use std::collections::BTreeSet;

/// A process, named by pid and start time (clock ticks since boot) against pid reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProcessId {
    pub pid: u32,
    pub start_time: u64,
}

/// One row of [`process_table`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub process: ProcessId,
    pub ppid: u32,
    /// The state letter of `/proc/PID/stat` (`R`, `S`, `Z`…).
    pub state: char,
}

impl Entry {
    fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

fn entry(pid: u32) -> Option<Entry> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: parse after the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    // Field 22 of stat(5) is the start time; `fields` now stands at field 5.
    let start_time = fields.nth(17)?.parse().ok()?;
    Some(Entry {
        process: ProcessId { pid, start_time },
        ppid,
        state,
    })
}

/// The process `pid` as it is now, if it exists (zombies included).
pub fn identify(pid: u32) -> Option<ProcessId> {
    entry(pid).map(|e| e.process)
}

/// Whether `process` still exists and has not exited (zombies count as gone).
pub fn is_alive(process: ProcessId) -> bool {
    matches!(entry(process.pid), Some(e) if e.process == process && !e.is_zombie())
}

/// Every live descendant of `root`, found by walking parent links in `/proc`.
pub fn descendants(root: u32) -> BTreeSet<ProcessId> {
    below(&process_table(), root)
}

/// Every live process below `root` in `table` (from [`process_table`]).
pub fn below(table: &[Entry], root: u32) -> BTreeSet<ProcessId> {
    let mut found = BTreeSet::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for row in table {
            if row.ppid == parent && !row.is_zombie() && found.insert(row.process) {
                frontier.push(row.process.pid);
            }
        }
    }
    found
}

/// Every process in `/proc` with its parent and state.
pub fn process_table() -> Vec<Entry> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|dirent| dirent.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(entry)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn row(pid: u32, ppid: u32, state: char) -> Entry {
        Entry {
            process: ProcessId {
                pid,
                start_time: u64::from(pid) * 10,
            },
            ppid,
            state,
        }
    }

    #[test]
    fn below_walks_every_generation_and_skips_zombies() {
        let table = [
            row(10, 1, 'S'),
            row(11, 10, 'S'),
            row(12, 11, 'R'),
            row(13, 10, 'Z'),
            row(14, 13, 'S'), // cannot happen (a zombie's children re-parent), but is skipped
            row(20, 1, 'S'),
        ];
        let pids: Vec<u32> = below(&table, 10).iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![11, 12]);
    }

    #[test]
    fn this_process_is_identified_and_alive() {
        let me = identify(std::process::id()).expect("our own /proc entry");
        assert!(is_alive(me));
        let reused = ProcessId {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(!is_alive(reused), "another start time is another process");
    }
}
