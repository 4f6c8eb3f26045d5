//! One start's EM: from its starting point to convergence, max.iters or degeneracy.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::dataset::Prepared;
use crate::estep::e_step;
use crate::limits::FALL_TOLERANCE;
use crate::mstep::m_step;
use crate::outcome::{Degenerate, Outcome, StartFit};
use crate::params::{Family, Params, Stats};

/// How far the log-likelihood may fall before it is more than rounding.
fn fall_tolerance(loglik: f64, n: usize) -> f64 {
    FALL_TOLERANCE * (loglik.abs() + n as f64)
}

/// One start's EM between E-steps. Engines compute the E-step wherever they
/// like (CPU pass, GPU kernels) and hand its statistics to `advance`, which
/// applies the convergence rule, the guards and the M-step: every engine
/// makes the same decisions from the same numbers.
#[derive(Clone, Copy, Debug)]
pub struct EmState {
    pub params: Params,
    previous: Option<f64>,
    pub iterations: u32,
}

impl EmState {
    pub fn new(init: Params) -> EmState {
        EmState { params: init, previous: None, iterations: 0 }
    }

    /// Takes the E-step statistics of `self.params`. Returns the start's end
    /// state when it stops; otherwise moves `params` to the M-step's update.
    pub fn advance(&mut self, family: Family, ds: &Prepared, stats: &Stats, max_iters: u32, epsilon: f64) -> Option<StartFit> {
        let loglik = stats.ll + ds.h_sum;
        let end = |outcome| Some(StartFit { params: self.params, loglik, iterations: self.iterations, outcome });
        if !loglik.is_finite() {
            return end(Outcome::Failed(Degenerate::NotFinite));
        }
        if let Some(prev) = self.previous {
            if loglik < prev - fall_tolerance(prev, ds.x.len()) {
                return end(Outcome::Failed(Degenerate::LoglikFell));
            }
            if loglik - prev < epsilon {
                return end(Outcome::Converged);
            }
        }
        if self.iterations >= max_iters {
            return end(Outcome::MaxIters);
        }
        match m_step(family, self.params.k, stats, ds.x.len(), ds.spread) {
            Ok(next) => self.params = next,
            Err(why) => return end(Outcome::Failed(why)),
        }
        self.iterations += 1;
        self.previous = Some(loglik);
        None
    }
}

/// Runs EM on `ds` from `init` with the CPU E-step. The log-likelihood of
/// every iterate comes from the E-step that also gathers the next M-step's
/// statistics, so the returned `loglik` always belongs to the returned `params`.
pub fn run_em(
    family: Family,
    ds: &Prepared,
    init: Params,
    max_iters: u32,
    epsilon: f64,
    cancel: &AtomicBool,
) -> StartFit {
    let mut state = EmState::new(init);
    loop {
        if cancel.load(Ordering::Relaxed) {
            return StartFit { params: state.params, loglik: f64::NAN, iterations: state.iterations, outcome: Outcome::Cancelled };
        }
        let stats = e_step(family, &ds.x, &ds.g, &state.params);
        if let Some(done) = state.advance(family, ds, &stats, max_iters, epsilon) {
            return done;
        }
    }
}
