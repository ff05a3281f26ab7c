//! The `prctl(2)` settings BotCraft sets on itself or on a child: one checked call.

/// `prctl(option, arg, 0, 0, 0)`, its failure as the OS error.
#[allow(unsafe_code)]
pub(crate) fn set(option: libc::c_int, arg: libc::c_ulong) -> std::io::Result<()> {
    // SAFETY: prctl(2) with integer arguments only; async-signal-safe, so callable between
    // fork and exec.
    let result = unsafe {
        libc::prctl(
            option,
            arg,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
