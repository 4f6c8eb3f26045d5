//! Errors become R condition objects here, the one place that names their
//! classes. A glue function returns the condition as its value instead of
//! failing: extendr would raise an `Err` itself, and R would show it as
//! "Error in .Call(...)"; R raises the condition after the `.Call` has
//! returned (R/conditions.R), with no internal call, and code that catches it
//! decides by class.

use bulkem_core::{Error, Unavailable};
use extendr_api::prelude::{extendr, extendr_module, List, Robj};
use extendr_api::GetSexp;
use extendr_ffi::{R_ClassSymbol, R_NamesSymbol, Rf_setAttrib};

/// The classes every error of bulkem ends with.
const ERROR: [&str; 3] = ["bulkem_error", "error", "condition"];
/// A bad argument, whether R's checks or the core's found it.
const ARGUMENT: &str = "bulkem_error_argument";
/// The GPU engines cannot run here. The driver's absence has a class of its
/// own because under `use.gpu = NA` R falls back to the CPU silently for it (a
/// machine without a GPU) and with a message otherwise (a GPU seems to be
/// there but cannot be used).
const GPU_UNAVAILABLE: &str = "bulkem_error_gpu_unavailable";
const GPU_NO_DRIVER: &str = "bulkem_error_gpu_no_driver";
/// A GPU failed during a run; under `use.gpu = NA` R refits on the CPU.
const GPU: &str = "bulkem_error_gpu";
const INTERNAL: &str = "bulkem_error_internal";
/// Fits that ended at max.iters, failed, were marked spurious or were invalid.
const WARNING_CONVERGENCE: [&str; 4] = ["bulkem_warning_convergence", "bulkem_warning", "warning", "condition"];

/// Why a glue function stops early: an error of the core (or of the glue),
/// or a condition R raised while the call ran (Ctrl-C, a time limit).
pub enum Stop {
    Core(Error),
    R(Robj),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Core(e)
    }
}

/// Building the result while the workers ran met an R error (or a bug).
impl From<crate::interrupt::Guarded> for Stop {
    fn from(g: crate::interrupt::Guarded) -> Self {
        match g {
            crate::interrupt::Guarded::R(cond) => Stop::R(cond),
            crate::interrupt::Guarded::Panicked => Stop::Core(Error::Internal("building the result panicked".into())),
        }
    }
}

/// extendr fails only where R handed the glue something its R caller
/// should have ruled out, or on a bug: either way not the user's doing.
impl From<extendr_api::Error> for Stop {
    fn from(e: extendr_api::Error) -> Self {
        Stop::Core(Error::Internal(e.to_string()))
    }
}

/// The R condition for a core error: `list(message, call = NULL)` with the
/// classes of its kind, most specific first. A GPU-unavailable condition also
/// carries `reason`, the cause alone, so that R can say which argument asked
/// for the GPU without taking the message apart.
pub fn condition(e: &Error) -> Robj {
    let own: &[&str] = match e {
        Error::Argument { .. } => &[ARGUMENT],
        Error::GpuUnavailable(Unavailable::NoDriver) => &[GPU_NO_DRIVER, GPU_UNAVAILABLE],
        Error::GpuUnavailable(_) => &[GPU_UNAVAILABLE],
        Error::Gpu(_) => &[GPU],
        Error::Internal(_) => &[INTERNAL],
        // reaches R only if the core stopped without being asked to; an
        // interrupt itself comes back as R's own condition
        Error::Cancelled => &[],
    };
    let reason = match e {
        Error::GpuUnavailable(why) => Some(why.to_string()),
        _ => None,
    };
    build(&e.to_string(), own, reason.as_deref())
}

/// The value of a glue function: `r`'s value, or its error as a condition.
pub fn or_condition<T: Into<Robj>, E: Into<Stop>>(r: Result<T, E>) -> Robj {
    match r.map_err(Into::into) {
        Ok(value) => value.into(),
        Err(Stop::Core(e)) => condition(&e),
        Err(Stop::R(cond)) => cond,
    }
}

fn build(message: &str, own: &[&str], reason: Option<&str>) -> Robj {
    let mut names = vec!["message", "call"];
    let mut values = vec![Robj::from(message), Robj::default()];
    if let Some(reason) = reason {
        names.push("reason");
        values.push(Robj::from(reason));
    }
    let classes: Vec<&str> = own.iter().chain(ERROR.iter()).copied().collect();
    condition_object(&classes, names, values)
}

/// A condition with just a message and no call.
fn build_classes(message: &str, classes: &[&str]) -> Robj {
    condition_object(classes, vec!["message", "call"], vec![Robj::from(message), Robj::default()])
}

fn condition_object(classes: &[&str], names: Vec<&str>, values: Vec<Robj>) -> Robj {
    let list = Robj::from(List::from_values(values));
    let names = Robj::from(names);
    let classes = Robj::from(classes);
    // SAFETY: three protected objects on R's main thread (every glue function
    // runs there); setting names and class on a fresh list cannot fail.
    unsafe {
        Rf_setAttrib(list.get(), R_NamesSymbol, names.get());
        Rf_setAttrib(list.get(), R_ClassSymbol, classes.get());
    }
    list
}

/// An argument error for R's own checks (stop_arg() in R/conditions.R), with
/// the classes the core's argument errors get.
/// @noRd
#[extendr]
fn argument_condition_(message: &str) -> Robj {
    build(message, &[ARGUMENT], None)
}

/// The one warning a call gives about fits that did not end well
/// (warn_convergence() in R/conditions.R).
/// @noRd
#[extendr]
fn convergence_warning_(message: &str) -> Robj {
    build_classes(message, &WARNING_CONVERGENCE)
}

extendr_module! {
    mod error;
    fn argument_condition_;
    fn convergence_warning_;
}
