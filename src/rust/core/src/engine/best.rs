//! Each dataset's running best start. Every engine records its starts here,
//! so every engine selects winners by the same rule.

use std::sync::{Mutex, PoisonError};

use crate::outcome::{Degenerate, Outcome, StartFit, StartRecord};
use crate::params::Params;

/// Running summary of one dataset's starts. Merging is order-independent:
/// the winner is the highest log-likelihood, ties to the lowest start index;
/// the failure kept is the lowest-indexed one. So results never depend on
/// which thread ran which start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Best {
    pub winner: Option<Winner>,
    pub starts_ok: u32,
    pub first_failure: Option<(u32, Degenerate)>,
    /// Every start, when the call keeps them (control$keep.starts); in the
    /// order recorded, sorted by start when the fit is finished.
    pub starts: Option<Vec<StartRecord>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Winner {
    pub start: u32,
    pub init: Params,
    pub fit: StartFit,
}

impl Best {
    /// An empty summary; `keep_starts` keeps every start's record.
    pub fn new(keep_starts: bool) -> Best {
        Best { starts: keep_starts.then(Vec::new), ..Best::default() }
    }

    /// Records start `start` (begun at `init`; `None` if no start could be drawn).
    pub fn record(&mut self, start: u32, init: Option<Params>, fit: Option<StartFit>) {
        if let Some(starts) = &mut self.starts {
            if fit.is_none_or(|f| f.outcome != Outcome::Cancelled) {
                starts.push(StartRecord {
                    start,
                    init,
                    loglik: fit.map_or(f64::NAN, |f| f.loglik),
                    iterations: fit.map_or(0, |f| f.iterations),
                    outcome: fit.map(|f| f.outcome),
                });
            }
        }
        let (init, fit) = match (init, fit) {
            (Some(init), Some(fit)) => (init, fit),
            _ => return self.record_failure(start, Degenerate::NoStart),
        };
        match fit.outcome {
            Outcome::Failed(why) => self.record_failure(start, why),
            Outcome::Cancelled => {}
            Outcome::Converged | Outcome::MaxIters => {
                self.starts_ok += 1;
                let better = match &self.winner {
                    None => true,
                    Some(w) => fit.loglik > w.fit.loglik || (fit.loglik == w.fit.loglik && start < w.start),
                };
                if better {
                    self.winner = Some(Winner { start, init, fit });
                }
            }
        }
    }

    fn record_failure(&mut self, start: u32, why: Degenerate) {
        if self.first_failure.is_none_or(|(s, _)| start < s) {
            self.first_failure = Some((start, why));
        }
    }
}

/// One `Best` per dataset of a call, shared by an engine's workers.
pub struct Bests(Vec<Mutex<Best>>);

impl Bests {
    pub fn new(datasets: usize, keep_starts: bool) -> Bests {
        Bests((0..datasets).map(|_| Mutex::new(Best::new(keep_starts))).collect())
    }

    /// Runs `f` on dataset `d`'s summary, holding its lock.
    pub fn with<R>(&self, d: usize, f: impl FnOnce(&mut Best) -> R) -> R {
        f(&mut self.0[d].lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn into_vec(self) -> Vec<Best> {
        self.0.into_iter().map(|b| b.into_inner().unwrap_or_else(PoisonError::into_inner)).collect()
    }
}
