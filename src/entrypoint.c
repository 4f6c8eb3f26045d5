// C entry points of bulkem.so. Routine registration is forwarded to Rust
// (extendr_module! generates R_init_bulkem_extendr); calling it from here also
// keeps the linker from dropping the Rust static library.

#include <Rinternals.h>
#include <R_ext/Rdynload.h>
#include <R_ext/Utils.h>

void R_init_bulkem_extendr(DllInfo *dll);
void bulkem_init_panic_hook(void);

void R_init_bulkem(DllInfo *dll) {
    R_init_bulkem_extendr(dll);
    // Panics already become R errors (extendr catches them); the hook only
    // silences Rust's "thread panicked at ..." report on stderr.
    bulkem_init_panic_hook();
}

// R's main thread hands control to R while bulkem's workers run: to check
// for Ctrl-C and time limits (R_CheckUserInterrupt) and to draw the progress
// bar. Whatever R raises then must not longjmp over the Rust frames of the
// call, and must reach the user as R's own condition once the workers have
// stopped. So it is caught here, as a condition, and returned to Rust.
struct watched {
    SEXP expr;   // evaluated first, unless R_NilValue
    SEXP caught; // what R raised, preserved; R_NilValue if nothing
};

static SEXP watched_body(void *data) {
    struct watched *w = data;
    if (w->expr != R_NilValue) Rf_eval(w->expr, R_GlobalEnv);
    R_CheckUserInterrupt();
    return R_NilValue;
}

static SEXP watched_handler(SEXP cond, void *data) {
    (void) data;
    return cond;
}

// An exiting handler for "interrupt" (Ctrl-C) and "error" (setTimeLimit's,
// or one raised by `expr`): R jumps to it without printing anything, which an
// unhandled error would.
static void watched_run(void *data) {
    struct watched *w = data;
    SEXP classes = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_STRING_ELT(classes, 0, Rf_mkChar("interrupt"));
    SET_STRING_ELT(classes, 1, Rf_mkChar("error"));
    SEXP caught = PROTECT(R_tryCatch(watched_body, w, classes, watched_handler, NULL, NULL, NULL));
    if (caught != R_NilValue) {
        R_PreserveObject(caught);
        w->caught = caught;
    }
    UNPROTECT(2);
}

// The condition R signals on Ctrl-C: list() of class c("interrupt", "condition").
static SEXP interrupt_condition(void) {
    SEXP cond = PROTECT(Rf_allocVector(VECSXP, 0));
    SEXP classes = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_STRING_ELT(classes, 0, Rf_mkChar("interrupt"));
    SET_STRING_ELT(classes, 1, Rf_mkChar("condition"));
    Rf_classgets(cond, classes);
    UNPROTECT(2);
    return cond;
}

// Called from Rust (src/rust/src/interrupt.rs) on R's main thread. Returns
// the condition R raised, preserved with R_PreserveObject (the caller
// releases it), or R_NilValue. R_ToplevelExec stops any jump that is not a
// condition the handler sees (a restart invoked from `expr`, an interrupt in
// the few evaluations before the handler is set up); such a jump means "stop"
// too, reported as an interrupt.
SEXP bulkem_watched_eval(SEXP expr) {
    struct watched w = { expr, R_NilValue };
    if (!R_ToplevelExec(watched_run, &w) && w.caught == R_NilValue) {
        w.caught = PROTECT(interrupt_condition());
        R_PreserveObject(w.caught);
        UNPROTECT(1);
    }
    return w.caught;
}
