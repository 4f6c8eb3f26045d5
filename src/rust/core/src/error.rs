//! Errors that stop a whole call. A bad dataset is not one of them: it gets
//! its own `Status::Invalid` while the rest of the call goes on.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A setting outside what the core supports (the R layer checks first;
    /// this is the core defending itself).
    BadSetting(String),
    /// The user interrupted the call (Ctrl-C, `setTimeLimit`).
    Cancelled,
    /// A worker thread panicked: a bug, reported instead of crashing R.
    Internal(String),
    /// CUDA is missing or failed (driver, NVRTC, compile, launch, memory).
    Gpu(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadSetting(m) => write!(f, "{m}"),
            Error::Cancelled => write!(f, "bulkem() was interrupted; no fits were returned"),
            Error::Internal(m) => write!(f, "internal error in bulkem (please report it): {m}"),
            Error::Gpu(m) => write!(f, "GPU error: {m}"),
        }
    }
}

impl std::error::Error for Error {}
