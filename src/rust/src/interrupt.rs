//! Polling R for a user interrupt without letting R longjmp over Rust frames.

use std::os::raw::c_int;

extern "C" {
    // Defined in src/entrypoint.c: runs R_CheckUserInterrupt() inside
    // R_ToplevelExec(), so the longjmp of an interrupt (or of an error raised
    // while checking, e.g. setTimeLimit()'s) stops there, not in our frames.
    fn bulkem_check_interrupt() -> c_int;
}

/// `true` if the user asked R to stop (Ctrl-C, or a time limit expired).
///
/// Call only from R's main thread (never from a worker). The interrupt is
/// consumed by the check: the caller must stop its workers and return an
/// error to R, which then reports it.
pub fn interrupt_pending() -> bool {
    // SAFETY: the C helper takes no arguments and cannot longjmp past its own
    // R_ToplevelExec; the main-thread requirement is documented above.
    unsafe { bulkem_check_interrupt() != 0 }
}
