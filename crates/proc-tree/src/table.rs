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

/// Every live descendant of `root`.
pub fn descendants(root: u32) -> BTreeSet<ProcessId> {
    below(&subtree(root), root)
}

/// Every process below `root`, zombies included, each with its parent. Read from the
/// `children` files of `/proc/PID/task/*/`, so the cost follows the size of the tree, not of
/// the machine's process table; on a kernel without them (no `CONFIG_PROC_CHILDREN`), from
/// the whole table.
pub fn subtree(root: u32) -> Vec<Entry> {
    if !children_files() {
        let table = process_table();
        let found = below_all(&table, root);
        return table
            .into_iter()
            .filter(|row| found.contains(&row.process.pid))
            .collect();
    }
    let mut rows = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for child in children(parent) {
            // A child that exited and was reaped between the two reads is simply not there.
            if let Some(row) = entry(child)
                && row.ppid == parent
            {
                frontier.push(child);
                rows.push(row);
            }
        }
    }
    rows
}

/// Whether this kernel lists each task's children (`/proc/self/task/TID/children`).
fn children_files() -> bool {
    static KNOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KNOWN.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// The children of `pid`, from every one of its tasks (a child is listed under the thread
/// that forked it, or that it was re-parented to).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The pids below `root` in `table`, zombies included.
fn below_all(table: &[Entry], root: u32) -> std::collections::HashSet<u32> {
    let mut found = std::collections::HashSet::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for row in table {
            if row.ppid == parent && found.insert(row.process.pid) {
                frontier.push(row.process.pid);
            }
        }
    }
    found
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
    fn the_subtree_holds_children_and_grandchildren_as_the_table_does() {
        use std::io::BufRead;
        // The shell prints its child's pid once it has forked it: a readiness signal.
        let mut shell = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("sleep 30 & echo $!; wait")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let mut line = String::new();
        std::io::BufReader::new(shell.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the grandchild's pid");
        let grandchild: u32 = line.trim().parse().expect("a pid");
        let me = std::process::id();
        let from_files = descendants(me);
        let from_table = below(&process_table(), me);
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(grandchild).expect("pid")),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = shell.wait();
        for found in [&from_files, &from_table] {
            let pids: Vec<u32> = found.iter().map(|p| p.pid).collect();
            assert!(pids.contains(&shell.id()), "{pids:?}");
            assert!(pids.contains(&grandchild), "{pids:?}");
        }
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
