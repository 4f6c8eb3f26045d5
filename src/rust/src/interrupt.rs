//! What R raises while the main thread lets it run during a call (Ctrl-C,
//! `setTimeLimit`, an error in the progress callback), caught as a condition
//! object instead of a longjmp over Rust frames.

use extendr_api::prelude::{Function, Language, Robj};
use extendr_api::GetSexp;
use extendr_ffi::{R_NilValue, R_ReleaseObject, SEXP};

// SEXP is a pointer to a struct opaque to Rust, which is all C sees too
// (extendr-ffi declares R's own functions the same way).
#[allow(improper_ctypes)]
extern "C" {
    // src/entrypoint.c: evaluates `expr` (unless R NULL), then
    // R_CheckUserInterrupt(), under an R_tryCatch for interrupts and errors;
    // returns the condition caught, preserved, or R NULL.
    fn bulkem_watched_eval(expr: SEXP) -> SEXP;
}

fn watched(expr: Option<&Robj>) -> Option<Robj> {
    // SAFETY: on R's main thread (see callers), with `expr` protected; the C
    // helper never longjmps out, and its condition stays preserved until
    // Robj has protected it.
    unsafe {
        let cond = bulkem_watched_eval(expr.map_or(R_NilValue, |e| e.get()));
        if cond == R_NilValue {
            return None;
        }
        let cond_robj = Robj::from_sexp(cond);
        R_ReleaseObject(cond);
        Some(cond_robj)
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
