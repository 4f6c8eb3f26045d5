//! EM from one starting point to convergence, max.iters or degeneracy.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::dataset::Prepared;
use crate::estep::e_step;
use crate::job::{Family, Params};
use crate::mstep::{m_step, Degenerate};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    Converged,
    MaxIters,
    Failed(Degenerate),
    /// The call was cancelled while this start ran; its result is meaningless.
    Cancelled,
}

/// A start's end state, on the rescaled data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartFit {
    pub params: Params,
    /// Log-likelihood of `params` on the rescaled data.
    pub loglik: f64,
    /// EM updates applied.
    pub iterations: u32,
    pub outcome: Outcome,
}

/// How far the log-likelihood may fall before it is more than rounding: the
/// E-step's sum of N terms carries relative error of order N·ε.
fn fall_tolerance(loglik: f64, n: usize) -> f64 {
    1e-10 * (loglik.abs() + n as f64)
}

/// Runs EM on `ds` from `init`. The log-likelihood of every iterate is
/// computed by the E-step that also gathers the next M-step's statistics,
/// so the returned `loglik` always belongs to the returned `params`.
pub fn run_em(
    family: Family,
    ds: &Prepared,
    init: Params,
    max_iters: u32,
    epsilon: f64,
    cancel: &AtomicBool,
) -> StartFit {
    let n = ds.x.len();
    let mut params = init;
    let mut previous: Option<f64> = None;
    let mut iterations = 0;
    let end = |params, loglik, iterations, outcome| StartFit { params, loglik, iterations, outcome };
    loop {
        if cancel.load(Ordering::Relaxed) {
            return end(params, f64::NAN, iterations, Outcome::Cancelled);
        }
        let stats = e_step(family, &ds.x, &ds.g, &params);
        let loglik = stats.ll + ds.h_sum;
        if !loglik.is_finite() {
            return end(params, loglik, iterations, Outcome::Failed(Degenerate::NotFinite));
        }
        if let Some(prev) = previous {
            if loglik < prev - fall_tolerance(prev, n) {
                return end(params, loglik, iterations, Outcome::Failed(Degenerate::LoglikFell));
            }
            if loglik - prev < epsilon {
                return end(params, loglik, iterations, Outcome::Converged);
            }
        }
        if iterations >= max_iters {
            return end(params, loglik, iterations, Outcome::MaxIters);
        }
        match m_step(family, params.k, &stats, n, ds.spread) {
            Ok(next) => params = next,
            Err(why) => return end(params, loglik, iterations, Outcome::Failed(why)),
        }
        iterations += 1;
        previous = Some(loglik);
    }
}
