//! R glue for bulkem: extendr entry points only; the numerics live in bulkem-core.

use extendr_api::prelude::*;

mod bootstrap;
mod convert;
mod datasets;
mod error;
mod fit;
mod fit_mv;
mod gpu;
pub mod interrupt;
mod limits;
mod mixture;
mod settings;
mod watch;

/// Version of the glue crate (placeholder until bulkem-core exposes its own).
/// @noRd
#[extendr]
fn bulkem_core_version_() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Called once from `R_init_bulkem` (src/entrypoint.c).
///
/// extendr already turns every panic into an R error with the panic message;
/// the default hook would additionally print "thread panicked at ..." plus a
/// backtrace (RUST_BACKTRACE is often set) to the console. Keep the R error,
/// drop the noise, unless BULKEM_RUST_PANIC_VERBOSE=1 (read at panic time so
/// it can be switched on with Sys.setenv() in a running session).
#[no_mangle]
pub extern "C" fn bulkem_init_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("BULKEM_RUST_PANIC_VERBOSE").is_some_and(|v| v == "1") {
            default_hook(info);
        }
    }));
}

extendr_module! {
    mod bulkem;
    use datasets;
    fn bulkem_core_version_;
    use bootstrap;
    use error;
    use fit;
    use fit_mv;
    use gpu;
    use limits;
    use mixture;
}
