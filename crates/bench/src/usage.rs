//! What a process tree spends, read from `/proc`: CPU time (user + system, every thread,
//! exited threads included) and peak resident memory (`VmHWM`), summed over each root and
//! its descendants.

use std::collections::BTreeSet;

/// `/proc/PID/stat` counts CPU in USER_HZ ticks, which the Linux ABI fixes at 100 a second.
const TICKS_PER_SECOND: u64 = 100;

/// The processes of the trees under `roots` (each root included), once each.
pub fn tree(roots: &[u32]) -> BTreeSet<u32> {
    let mut pids = BTreeSet::new();
    for root in roots {
        pids.insert(*root);
        pids.extend(proc_tree::descendants(*root).into_iter().map(|p| p.pid));
    }
    pids
}

/// CPU time used so far by the trees under `roots`, in microseconds.
pub fn cpu_micros(roots: &[u32]) -> u64 {
    tree(roots)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| ticks(&stat))
        .sum::<u64>()
        * (1_000_000 / TICKS_PER_SECOND)
}

/// utime + stime of one `/proc/PID/stat` line (fields 14 and 15; the name in field 2 may
/// hold spaces and parentheses, so fields are counted after its last `)`).
fn ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name, field 3 (state) is index 0: utime (14) is index 11, stime (15) 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Peak resident memory of the trees under `roots`: each process's `VmHWM`, summed, in KiB.
pub fn peak_rss_kib(roots: &[u32]) -> u64 {
    tree(roots).into_iter().filter_map(vm_hwm_kib).sum()
}

/// One process's peak resident memory (`VmHWM` of `/proc/PID/status`), in KiB.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_counted_after_the_last_parenthesis() {
        let stat = "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(ticks(stat), Some(10));
        assert_eq!(ticks("garbage"), None);
    }

    #[test]
    fn this_process_has_a_tree_cpu_and_memory() {
        let me = std::process::id();
        assert!(tree(&[me]).contains(&me));
        assert!(peak_rss_kib(&[me]) > 0);
        // Spend CPU until the counter moves (a tick is 10 ms of CPU); a counter that never
        // moves fails after a billion steps, whatever the machine's load.
        let start = cpu_micros(&[me]);
        let mut x = 0u64;
        let mut moved = false;
        for step in 0..1_000_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(step);
            if step % 1_000_000 == 0 && cpu_micros(&[me]) > start {
                moved = true;
                break;
            }
        }
        std::hint::black_box(x);
        assert!(moved, "no CPU counted for a billion steps of work");
    }
}
