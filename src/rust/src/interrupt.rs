//! What R raises while the main thread lets it run during a call (Ctrl-C,
//! `setTimeLimit`, an error in the progress callback), caught as a condition
//! object instead of a longjmp over Rust frames.

use extendr_api::prelude::{Function, Language, Robj};
use extendr_api::GetSexp;
use extendr_ffi::{R_NilValue, R_ReleaseObject, SEXP};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

// SEXP is a pointer to a struct opaque to Rust, which is all C sees too
// (extendr-ffi declares R's own functions the same way).
#[allow(improper_ctypes)]
extern "C" {
    // src/entrypoint.c: evaluates `expr` (unless R NULL), then
    // R_CheckUserInterrupt(), under an R_tryCatch for interrupts and errors;
    // returns the condition caught, preserved, or R NULL.
    fn bulkem_watched_eval(expr: SEXP) -> SEXP;
    // src/entrypoint.c: runs `f(data)`, then R_CheckUserInterrupt(), as
    // bulkem_watched_eval does; returns the condition caught, preserved, or
    // R NULL.
    fn bulkem_guarded_call(f: extern "C" fn(*mut c_void), data: *mut c_void) -> SEXP;
}

fn watched(expr: Option<&Robj>) -> Option<Robj> {
    // SAFETY: on R's main thread (see callers), with `expr` protected; the C
    // helper never longjmps out.
    unsafe { caught(bulkem_watched_eval(expr.map_or(R_NilValue, |e| e.get()))) }
}

/// A condition the C helpers preserved, as an Robj (or None for R NULL).
///
/// # Safety
/// On R's main thread, with `cond` preserved by R_PreserveObject or R NULL.
unsafe fn caught(cond: SEXP) -> Option<Robj> {
    if cond == R_NilValue {
        return None;
    }
    // the condition stays preserved until Robj has protected it
    let cond_robj = Robj::from_sexp(cond);
    R_ReleaseObject(cond);
    Some(cond_robj)
}

/// What `guarded` ran into: a condition R raised, or a panic.
pub enum Guarded {
    R(Robj),
    Panicked,
}

/// Runs `f`, which uses R's API, on R's main thread while the workers of a
/// call run, then checks for an interrupt as interrupt_pending() does:
/// whatever R raises (an allocation that fails, Ctrl-C) is caught as a
/// condition instead of a longjmp over the Rust frames of the call. A
/// longjmp out of `f` skips its frames, so they must own nothing that needs
/// dropping.
pub fn guarded(f: &mut dyn FnMut()) -> Result<(), Guarded> {
    struct Call<'a> {
        f: &'a mut dyn FnMut(),
        panicked: bool,
    }
    extern "C" fn trampoline(data: *mut c_void) {
        // SAFETY: `data` is the `Call` that `guarded` passed, alive for the
        // whole C call
        let call = unsafe { &mut *(data as *mut Call) };
        call.panicked = catch_unwind(AssertUnwindSafe(|| (call.f)())).is_err();
    }
    let mut call = Call { f, panicked: false };
    // SAFETY: on R's main thread; the C helper never longjmps out
    let cond = unsafe { caught(bulkem_guarded_call(trampoline, &mut call as *mut Call as *mut c_void)) };
    match cond {
        Some(cond) => Err(Guarded::R(cond)),
        None if call.panicked => Err(Guarded::Panicked),
        None => Ok(()),
    }
}

/// The condition R raised if the user asked it to stop (Ctrl-C: an
/// `interrupt`; a time limit: R's error); `None` otherwise.
///
/// Call only from R's main thread. The check consumes the request: the caller
/// must stop its workers and hand the condition back to R, which signals it
/// again (R/conditions.R).
pub fn interrupt_pending() -> Option<Robj> {
    watched(None)
}

/// Calls `f(a, b)` in R, then checks for an interrupt as interrupt_pending()
/// does. An interrupt or time limit can fire inside `f` as well; so any error
/// or interrupt raised there is returned to stop the call, rather than lost.
pub fn call_watched(f: &Function, a: f64, b: f64) -> Option<Robj> {
    let expr = Language::from_values([Robj::from(f.clone()), Robj::from(a), Robj::from(b)]);
    watched(Some(&Robj::from(expr)))
}
