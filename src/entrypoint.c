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

static void chk_fn(void *data) {
    (void) data;
    R_CheckUserInterrupt();
}

// Called from Rust (src/rust/src/interrupt.rs) on R's main thread.
// R_CheckUserInterrupt() longjmps when an interrupt (or an error, such as
// setTimeLimit()'s) is pending; a longjmp across Rust frames is undefined
// behaviour, so it runs under R_ToplevelExec(), which absorbs the jump and
// returns FALSE. Returns 1 if R wants the computation stopped.
int bulkem_check_interrupt(void) {
    return R_ToplevelExec(chk_fn, NULL) ? 0 : 1;
}
