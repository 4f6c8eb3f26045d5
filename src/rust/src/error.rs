//! Errors become R condition objects here. This file holds the one table of
//! the classes of every condition bulkem gives (`KINDS`): the glue builds its
//! conditions from it, and R builds every condition it raises itself from it
//! too, through `condition_classes_()` (bulkem_condition() in
//! R/conditions.R), so neither side names a class anywhere else. A glue
//! function returns the condition as its value instead of failing: extendr
//! would raise an `Err` itself, and R would show it as "Error in
//! .Call(...)"; R raises the condition after the `.Call` has returned
//! (R/conditions.R), with no internal call, and code that catches it decides
//! by class.

use bulkem_core::{Error, Unavailable};
use extendr_api::prelude::{extendr, extendr_module, List, Robj};
use extendr_api::GetSexp;
use extendr_ffi::{R_ClassSymbol, R_NamesSymbol, Rf_setAttrib};

/// A kind of condition: the name R looks it up by, and its classes, most
/// specific first.
struct Kind {
    name: &'static str,
    classes: &'static [&'static str],
}

/// A bad argument, whether R's checks or the core's found it.
const ARGUMENT: Kind =
    Kind { name: "argument", classes: &["bulkem_error_argument", "bulkem_error", "error", "condition"] };
/// The GPU engines cannot run here. The driver's absence has a class of its
/// own because under `use.gpu = NA` R falls back to the CPU silently for it (a
/// machine without a GPU) and with a message otherwise (a GPU seems to be
/// there but cannot be used).
const GPU_UNAVAILABLE: Kind =
    Kind { name: "gpu_unavailable", classes: &["bulkem_error_gpu_unavailable", "bulkem_error", "error", "condition"] };
const GPU_NO_DRIVER: Kind = Kind {
    name: "gpu_no_driver",
    classes: &["bulkem_error_gpu_no_driver", "bulkem_error_gpu_unavailable", "bulkem_error", "error", "condition"],
};
/// A GPU failed during a run; under `use.gpu = NA` R refits on the CPU.
const GPU: Kind = Kind { name: "gpu", classes: &["bulkem_error_gpu", "bulkem_error", "error", "condition"] };
/// A shard of a call sharded over future workers failed (raised by R only,
/// R/future.R).
const FUTURE: Kind = Kind { name: "future", classes: &["bulkem_error_future", "bulkem_error", "error", "condition"] };
/// A bug in bulkem.
const INTERNAL: Kind =
    Kind { name: "internal", classes: &["bulkem_error_internal", "bulkem_error", "error", "condition"] };
/// The classes every error of bulkem ends with, alone: an error of no more
/// specific kind (the core stopped without being asked to).
const ERROR: Kind = Kind { name: "error", classes: &["bulkem_error", "error", "condition"] };
/// Fits that ended at max.iters, failed, were marked spurious or were invalid.
const WARNING_CONVERGENCE: Kind = Kind {
    name: "warning_convergence",
    classes: &["bulkem_warning_convergence", "bulkem_warning", "warning", "condition"],
};

/// Every kind, for R (`condition_classes_()`).
const KINDS: [&Kind; 8] =
    [&ARGUMENT, &GPU_UNAVAILABLE, &GPU_NO_DRIVER, &GPU, &FUTURE, &INTERNAL, &ERROR, &WARNING_CONVERGENCE];

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
    let kind = match e {
        Error::Argument { .. } => &ARGUMENT,
        Error::GpuUnavailable(Unavailable::NoDriver) => &GPU_NO_DRIVER,
        Error::GpuUnavailable(_) => &GPU_UNAVAILABLE,
        Error::Gpu(_) => &GPU,
        Error::Internal(_) => &INTERNAL,
        // reaches R only if the core stopped without being asked to; an
        // interrupt itself comes back as R's own condition
        Error::Cancelled => &ERROR,
    };
    let reason = match e {
        Error::GpuUnavailable(why) => Some(why.to_string()),
        _ => None,
    };
    build(&e.to_string(), kind, reason.as_deref())
}

/// The value of a glue function: `r`'s value, or its error as a condition.
pub fn or_condition<T: Into<Robj>, E: Into<Stop>>(r: Result<T, E>) -> Robj {
    match r.map_err(Into::into) {
        Ok(value) => value.into(),
        Err(Stop::Core(e)) => condition(&e),
        Err(Stop::R(cond)) => cond,
    }
}

fn build(message: &str, kind: &Kind, reason: Option<&str>) -> Robj {
    let mut names = vec!["message", "call"];
    let mut values = vec![Robj::from(message), Robj::default()];
    if let Some(reason) = reason {
        names.push("reason");
        values.push(Robj::from(reason));
    }
    condition_object(kind.classes, names, values)
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

/// `list(<kind> = <classes>, ...)`: the classes of every kind of condition,
/// most specific first, from the table `KINDS` of src/rust/src/error.rs. R
/// builds the conditions it raises from these (bulkem_condition() in
/// R/conditions.R).
/// @noRd
#[extendr]
fn condition_classes_() -> List {
    let names = KINDS.iter().map(|k| k.name);
    let values = KINDS.iter().map(|k| Robj::from(k.classes));
    // the names are as many as the values: from_names_and_values cannot fail
    List::from_names_and_values(names, values).unwrap_or_default()
}

extendr_module! {
    mod error;
    fn condition_classes_;
}
