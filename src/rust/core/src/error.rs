//! Errors that stop a whole call, as values: the glue turns each kind into a
//! classed R condition, and R decides by class, never by message text. A bad
//! dataset is not one of them: it gets its own `Status::Invalid` while the
//! rest of the call goes on.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A setting outside what the core supports, naming the R argument (R
    /// checks first; this is the core defending itself).
    Argument { arg: &'static str, message: String },
    /// The user interrupted the call (Ctrl-C, `setTimeLimit`).
    Cancelled,
    /// The GPU engines cannot run on this machine.
    GpuUnavailable(Unavailable),
    /// A GPU failed while running (launch, memory, a kernel's result).
    Gpu(String),
    /// A bug: a worker panicked or an invariant broke; reported instead of
    /// crashing R.
    Internal(String),
}

/// Why the GPU engines cannot run.
#[derive(Debug, Clone, PartialEq)]
pub enum Unavailable {
    /// No NVIDIA driver library (libcuda) at all: a machine without a GPU.
    NoDriver,
    /// The driver is there but NVRTC (the runtime compiler) is not.
    NoCompiler,
    /// The driver lists no GPU.
    NoDevice,
    /// Setting the GPU up failed (context, compilation, ...).
    Setup(String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NoDriver => write!(
                f,
                "the CUDA driver library (libcuda.so) was not found: no NVIDIA driver is installed \
                 or it is not on the library path"
            ),
            Unavailable::NoCompiler => write!(
                f,
                "the CUDA runtime compiler library (libnvrtc.so, CUDA 12 or 13) was not found: \
                 install the CUDA toolkit's NVRTC or put it on LD_LIBRARY_PATH"
            ),
            Unavailable::NoDevice => write!(f, "the CUDA driver found no GPU"),
            Unavailable::Setup(why) => write!(f, "{why}"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Argument { arg, message } => write!(f, "`{arg}` {message}"),
            Error::Cancelled => write!(f, "bulkem() was interrupted; no fits were returned"),
            Error::GpuUnavailable(why) => write!(f, "no usable GPU: {why}"),
            Error::Gpu(m) => write!(f, "GPU error: {m}"),
            Error::Internal(m) => write!(f, "internal error in bulkem (please report it): {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// The message of a caught panic's payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a worker thread panicked".to_string()
    }
}
