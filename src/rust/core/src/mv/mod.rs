//! Multivariate Normal and Student's t mixtures (issue 33): n observations
//! of d variables per dataset, K components with full, tied, diagonal or
//! spherical covariance (t: scale) matrices, fitted by exact EM in fp64 on standardised data
//! with the covariances held as Cholesky factors, many starts per dataset
//! on every core. A layer of its own beside the univariate one: its data
//! (`data`), parameters and structures (`model`), one start's EM (`em`),
//! its starts (`starts`), its screen (`screen`), its standard errors
//! (`information`), the GPU engine (`device`,
//! kernels/em_mv.cu), and the call (`call`).

mod call;
mod data;
mod device;
mod em;
pub mod information;
mod model;
mod screen;
mod starts;

pub use call::{fit_mv, Matrix, MvFit, MvJob};
pub use model::{Model, MvParams, Structure};
