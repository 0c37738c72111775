//! The probe's one way to stop a process: a line on standard error, then `abort`, without
//! allocating (a misconfigured probe must not measure silently wrong figures).

/// Writes `msg` to standard error and aborts.
pub fn fatal(msg: &[u8]) -> ! {
    // SAFETY: writes `msg.len()` bytes from `msg`; aborting needs no precondition.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}
