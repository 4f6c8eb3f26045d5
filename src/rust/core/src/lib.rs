//! bulkem-core: EM for many small univariate mixtures of inverse Gaussian or
//! Gaussian components, with many random starts per dataset. Pure Rust, no R:
//! the R glue hands it a `Job` and gets one `Fit` per dataset back.
//!
//! Layers, each using only those above it in this list:
//! - types and limits: `limits`, `error`, `params`, `outcome`, `tuning`;
//! - mathematics: `mathx`, `linalg`; the noise component's density, `noise`;
//!   a component family's, behind one trait:
//!   `family::component` (the trait), `family::invgauss` and
//!   `family::normal` (one implementation each), `family` (the runtime tag
//!   meets them); Student's t, whose third parameter the trait has not:
//!   `student`; then `estep`, `mstep`, `screen`; the job, `job` (its
//!   settings hold the screen's thresholds); `dataset`, `starts`,
//!   `refine`, `information`;
//! - one start's EM: `em`; a converged winner taken to the maximum itself
//!   by Newton steps: `polish`; continuing a fit stuck at a saddle point:
//!   `saddle`; samples from a fitted mixture: `simulate`;
//! - the GPU (context, kernels, their prelude): `gpu`;
//! - the engines behind one trait, with one work queue and one set of
//!   counters: `engine`;
//! - the call: its fits as they become final, `finals`; one dataset's fit
//!   from its best start, `finish`; restart and refinement rounds, `restarts`; short runs
//!   whose best are continued (emEM), `short`; choosing K,
//!   `choose_k`; the call over them, `call`; values far from the rest of
//!   their dataset, which R names: `far`; the parametric bootstrap's bulk
//!   job: `bootstrap`.

// `!(x > 0.0)` is how this crate says "not positive, or NaN": the negated
// comparison is the point, and partial_cmp would hide it. Loops over
// components index several parallel arrays at once, as the CUDA kernel does;
// iterator zips of four arrays read worse and are not faster here.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

mod bootstrap;
mod call;
mod choose_k;
mod constrained;
mod dataset;
mod em;
mod engine;
mod error;
pub mod estep;
#[cfg(target_arch = "x86_64")]
mod estep_avx2;
#[cfg(target_arch = "x86_64")]
mod estep_avx512;
pub mod exgauss;
pub mod family;
pub mod far;
mod finals;
mod finish;
mod fixed;
pub mod gpu;
pub mod information;
mod job;
pub mod limits;
mod linalg;
pub mod mathx;
pub mod mstep;
pub mod mv;
pub mod noise;
mod outcome;
mod params;
mod polish;
mod refine;
mod restarts;
mod saddle;
pub mod screen;
mod short;
mod simulate;
pub mod special;
mod starts;
pub mod student;
pub mod truncation;
mod truncation_constrained;
pub mod tuning;

pub use bootstrap::{bootstrap, Bootstrap, Refit, Refits};
pub use call::{default_threads, fit, fit_into};
pub use engine::counters::Counters;
pub use engine::queue::drop_in_background;
pub use engine::EngineKind;
pub use error::{Error, Unavailable};
pub use finals::Finals;
pub use fixed::Fixed;
pub use job::{Criterion, Fit, Job, KSummary, Settings, ShortRuns};
pub use limits::MAX_COMPONENTS;
pub use mv::{fit_mv, Matrix, Model, MvFit, MvJob, MvParams, Structure};
pub use noise::Support;
pub use outcome::{Outcome, StartRecord, Status};
pub use params::{free_parameter_names, parameter_names, Covariance, Family, Params, Singular, StartScheme};
pub use truncation::{Censored, Window};
pub use tuning::{ResultDuring, Tuning};
