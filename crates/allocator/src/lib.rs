//! What the process's allocator (glibc malloc) gives back to the system: buffers above a
//! size mapped on their own, and the free pages of every arena returned after a burst. Both
//! are no-ops where the C library is not glibc.

/// Buffers of at least `bytes` are mapped on their own and unmapped when freed, instead of
/// staying in glibc's per-thread arenas; a fixed threshold also stops glibc from raising it
/// after the first large free. Call it in `main` before any other thread exists.
pub fn large_buffers_return_to_the_system(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only changes allocator tuning, with a documented parameter and a
        // positive value; it is called before other threads allocate.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// Return the free pages of every arena to the system; whether any were returned. It takes
/// each arena's lock in turn: call it after a burst, from a blocking thread.
pub fn give_back_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim(0) only releases free memory back to the system; it is safe to
        // call from any thread at any time (it locks each arena itself).
        #[allow(unsafe_code)]
        let released = unsafe { libc::malloc_trim(0) };
        released == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// This process's resident memory in KiB (`VmRSS` of `/proc/self/status`), if it can be read.
pub fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_memory_goes_back_after_a_trim() {
        // Many small blocks (below any mmap threshold) allocated on this thread, then freed:
        // the arena keeps them until a trim.
        let before = resident_kib().expect("VmRSS");
        let blocks: Vec<Vec<u8>> = (0..200_000).map(|i| vec![(i % 251) as u8; 512]).collect();
        let grown = resident_kib().expect("VmRSS");
        assert!(grown > before + 50_000, "{before} → {grown} KiB");
        // Keep one block in 64: the freed runs between them (32 KiB each) are holes no
        // top-of-heap trim reaches, yet whole pages a trim can give back.
        let kept: Vec<Vec<u8>> = blocks.into_iter().step_by(64).collect();
        let freed = resident_kib().expect("VmRSS");
        give_back_free_memory();
        let trimmed = resident_kib().expect("VmRSS");
        assert!(
            trimmed + 20_000 < freed,
            "a trim gave back little: {freed} → {trimmed} KiB"
        );
        drop(kept);
    }
}
