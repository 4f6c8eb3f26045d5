//! bulkem-core: EM for many small univariate mixtures of inverse Gaussian or
//! Gaussian components, with many random starts per dataset. Pure Rust, no R:
//! the R glue hands it a `Job` and gets one `Fit` per dataset back.

mod dataset;
pub mod engine;
mod error;
pub mod estep;
pub mod family;
mod fit;
pub mod gpu;
pub mod init;
pub mod job;
pub mod mathx;
pub mod mstep;
pub mod start;

pub use error::{Error, Unavailable};
pub use fit::{default_threads, fit, Engine, Progress};
pub use job::{Family, Fit, Job, Params, Status, MAX_COMPONENTS};
