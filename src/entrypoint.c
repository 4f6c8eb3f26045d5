// C entry points of bulkem.so. Routine registration is forwarded to Rust
// (extendr_module! generates R_init_bulkem_extendr); calling it from here also
// keeps the linker from dropping the Rust static library.

#include <setjmp.h>
#include <Rinternals.h>
#include <R_ext/Rdynload.h>
#include <R_ext/Utils.h>

void R_init_bulkem_extendr(DllInfo *dll);
void bulkem_init_panic_hook(void);
void bulkem_init_process_knobs(void);

void R_init_bulkem(DllInfo *dll) {
    R_init_bulkem_extendr(dll);
    // Panics already become R errors (extendr catches them); the hook only
    // silences Rust's "thread panicked at ..." report on stderr.
    bulkem_init_panic_hook();
    // The E-step's vector width and injected CUDA faults, for tests and
    // benchmarks: process-wide, so read once, here (src/rust/src/settings.rs).
    bulkem_init_process_knobs();
}

// R's main thread hands control to R while bulkem's workers run: to check
// for Ctrl-C and time limits (R_CheckUserInterrupt) and to report progress
// (R/progress.R). Whatever R raises then must not longjmp over the Rust frames of the
// call, and must reach the user as R's own condition once the workers have
// stopped. So it is caught here, as a condition, and returned to Rust.
struct watched {
    void (*fn)(void *); // called first, unless NULL, with `data`
    void *data;
    SEXP expr;   // evaluated next, unless R_NilValue
    SEXP caught; // what R raised, preserved; R_NilValue if nothing
};

static SEXP watched_body(void *data) {
    struct watched *w = data;
    if (w->fn) w->fn(w->data);
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

// What a jump out of the progress callback becomes: an error that says so
// (the jump itself cannot go on over the Rust frames of the call).
static SEXP jump_condition(void) {
    SEXP cond = PROTECT(Rf_allocVector(VECSXP, 2));
    SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_STRING_ELT(names, 0, Rf_mkChar("message"));
    SET_STRING_ELT(names, 1, Rf_mkChar("call"));
    Rf_setAttrib(cond, R_NamesSymbol, names);
    SET_VECTOR_ELT(cond, 0, Rf_mkString(
        "a condition handler left bulkem's progress report by a jump (a restart or an exiting "
        "handler), which cannot cross the running fit; the fit was stopped"));
    SEXP classes = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_STRING_ELT(classes, 0, Rf_mkChar("error"));
    SET_STRING_ELT(classes, 1, Rf_mkChar("condition"));
    Rf_classgets(cond, classes);
    UNPROTECT(3);
    return cond;
}

// A jump out of R_UnwindProtect() lands here instead of going on over the
// Rust frames of the call: the cleanup escapes to the setjmp() of
// watched_expr(), and the jump is abandoned, as R_ToplevelExec abandons one.
static void escape_jump(void *data, Rboolean jump) {
    if (jump) longjmp(*(jmp_buf *) data, 1);
}

static SEXP watched_expr_body(void *data) {
    watched_run(data);
    return R_NilValue;
}

// Evaluates `expr` (the progress callback) with the caller's condition
// handlers in place, unlike R_ToplevelExec (which empties the handler
// stack): progressr signals its progress as conditions, which reach the
// handlers of with_progress() or handlers(global = TRUE) only so. Errors and
// interrupts are caught as conditions (watched_run); any other jump (a
// restart invoked from `expr`, an exiting handler of the caller's) is caught
// by R_UnwindProtect and stops the fit with an error (jump_condition).
static void watched_expr(struct watched *w) {
    jmp_buf escape;
    SEXP cont = PROTECT(R_MakeUnwindCont());
    if (setjmp(escape)) {
        UNPROTECT(1);
        w->caught = PROTECT(jump_condition());
        R_PreserveObject(w->caught);
        UNPROTECT(1);
        return;
    }
    R_UnwindProtect(watched_expr_body, w, escape_jump, &escape, cont);
    UNPROTECT(1);
}

// watched_run under R_ToplevelExec, which stops any jump that is not a
// condition its handler sees (an interrupt in the few evaluations before
// the handler is set up); such a jump means "stop" too, reported as an
// interrupt. Returns what was caught, preserved, or R_NilValue.
static SEXP watched_toplevel(struct watched *w) {
    if (!R_ToplevelExec(watched_run, w) && w->caught == R_NilValue) {
        w->caught = PROTECT(interrupt_condition());
        R_PreserveObject(w->caught);
        UNPROTECT(1);
    }
    return w->caught;
}

// Called from Rust (src/rust/src/interrupt.rs) on R's main thread. Returns
// the condition R raised, preserved with R_PreserveObject (the caller
// releases it), or R_NilValue. `expr` runs first (watched_expr); then the
// check for an interrupt (watched_toplevel).
SEXP bulkem_watched_eval(SEXP expr) {
    struct watched w = { NULL, NULL, expr, R_NilValue };
    if (expr != R_NilValue) {
        watched_expr(&w);
        if (w.caught != R_NilValue) return w.caught;
        w.expr = R_NilValue;
    }
    return watched_toplevel(&w);
}

// Called from Rust (src/rust/src/interrupt.rs) on R's main thread, which
// builds the R result of a call's finished fits while the workers still
// run: fn(data), then the check for an interrupt, as bulkem_watched_eval
// checks, so that what R raises in either (an allocation that fails, Ctrl-C)
// is returned as a condition, preserved, instead of longjmping over the
// running call; R_NilValue if nothing.
SEXP bulkem_guarded_call(void (*fn)(void *), void *data) {
    struct watched w = { fn, data, R_NilValue, R_NilValue };
    return watched_toplevel(&w);
}
