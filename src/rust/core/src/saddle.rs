//! Fits that converged to a saddle point of the likelihood (the observed
//! information not positive definite: typically two components merged
//! across two groups, where EM's steps shrink to nothing) are continued from
//! there: EM from points a step away on either side along the direction in
//! which the log-likelihood curves up most (information::ascent_direction),
//! the best admissible end that beats the saddle replacing it. It runs on
//! the host after every engine, so every engine continues alike.

use std::sync::atomic::AtomicBool;

use crate::dataset::Prepared;
use crate::em::run_em;
use crate::information::{ascent_direction, moved};
use crate::job::Task;
use crate::limits::{SADDLE_STEPS, SAME_OPTIMUM};
use crate::outcome::{Outcome, StartFit};

/// The maximum EM reaches from near the saddle point `at` (converged, on
/// the rescaled data of `ds`), when it is admissible and beats `at` by more
/// than SAME_OPTIMUM; its iterations include those that reached `at`.
/// `None` when `at` is not a saddle point or no step leads higher.
pub fn escape(t: &Task, ds: &Prepared, at: &StartFit, cancel: &AtomicBool) -> Option<StartFit> {
    if at.outcome != Outcome::Converged {
        return None;
    }
    let d = ascent_direction(t.family, &ds.x, &at.params)?;
    let floor = at.loglik + SAME_OPTIMUM * (1.0 + at.loglik.abs());
    let mut best: Option<StartFit> = None;
    for step in SADDLE_STEPS {
        for sign in [1.0, -1.0] {
            let Some(init) = moved(t.family, &at.params, &d, sign * step, ds.spread) else { continue };
            let f = run_em(t.family, ds, init, t.max_iters, t.epsilon, t.accelerate, cancel);
            let sound = f.outcome == Outcome::Converged && !t.screen.spurious(t.family, &f.params, ds.x.len());
            if sound && f.loglik > floor && best.is_none_or(|b| f.loglik > b.loglik) {
                best = Some(f);
            }
        }
    }
    best.map(|f| StartFit { iterations: at.iterations.saturating_add(f.iterations), ..f })
}
