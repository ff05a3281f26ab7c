//! What a process tree spends: CPU time (user + system, every thread, exited threads
//! included: each process's CPU clock, in nanoseconds) and peak resident memory (`VmHWM` of
//! `/proc`), summed over each root and its descendants.

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
    tree(roots).into_iter().filter_map(process_cpu_micros).sum()
}

/// One process's CPU time so far, in microseconds: its CPU clock (`clock_getcpuclockid`,
/// which the kernel keeps in nanoseconds, threads that exited included, children reaped
/// not, as for `/proc/PID/stat`), else that file's ticks. Ticks are 10 ms: over 3,000
/// calls a tree's CPU per call moved in steps of 3.3 µs, as coarse as the differences the
/// faces' table is read for.
pub fn process_cpu_micros(pid: u32) -> Option<u64> {
    clock_micros(pid).or_else(|| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(ticks(&stat)? * (1_000_000 / TICKS_PER_SECOND))
    })
}

/// The highest pid Linux gives (`PID_MAX_LIMIT` on 64-bit).
const PID_MAX: u32 = 4_194_304;

/// The CPU clock of process `pid`, in microseconds; `None` when it cannot be read (no such
/// process: Linux lets any user read another's CPU clock). Pid 0 would name the calling
/// process, and a pid above [`PID_MAX`] another one (a clock's id keeps 29 bits of it):
/// neither is read.
fn clock_micros(pid: u32) -> Option<u64> {
    if pid == 0 || pid > PID_MAX {
        return None;
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).ok()?);
    let clock = nix::time::clock_getcpuclockid(pid).ok()?;
    let spent = nix::time::clock_gettime(clock).ok()?;
    let seconds = u64::try_from(spent.tv_sec()).ok()?;
    let nanos = u64::try_from(spent.tv_nsec()).ok()?;
    Some(seconds * 1_000_000 + nanos / 1_000)
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

    /// The CPU clock counts in microseconds, not in 10 ms ticks: the first change seen while
    /// spending CPU in small steps is far below a tick (a tick counter's first change is a
    /// whole tick, 10,000 µs, at least).
    #[test]
    fn cpu_is_counted_finer_than_a_tick() {
        let me = std::process::id();
        let start = process_cpu_micros(me).expect("this process's CPU time");
        let mut x = 0u64;
        let mut moved = None;
        for step in 0..1_000_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(step);
            if step % 10_000 == 0 {
                let now = process_cpu_micros(me).expect("this process's CPU time");
                if now > start {
                    moved = Some(now - start);
                    break;
                }
            }
        }
        std::hint::black_box(x);
        let moved = moved.expect("no CPU counted for a billion steps of work");
        assert!(moved < 10_000, "the first change was {moved} µs");
        // A process that exited and was reaped has no clock, and no `/proc` entry to fall
        // back on.
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let gone = child.id();
        child.wait().expect("wait for true");
        assert_eq!(process_cpu_micros(gone), None);
        // Pids that would name another process's clock: 0 is the caller's, and 2^29 more
        // than this process's pid wraps onto this process's clock.
        assert_eq!(clock_micros(0), None);
        assert_eq!(clock_micros((1 << 29) + me), None);
    }

    #[test]
    fn this_process_has_a_tree_cpu_and_memory() {
        let me = std::process::id();
        assert!(tree(&[me]).contains(&me));
        assert!(peak_rss_kib(&[me]) > 0);
        // Spend CPU until the counter moves; a counter that never moves fails after a
        // billion steps, whatever the machine's load.
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
