//! Engines run the starts of prepared datasets and keep each dataset's best.
//! They share `Best` so every engine selects winners by the same rule.

pub mod cpu;
pub mod cuda_batched;
pub mod cuda_streams;
pub mod pool;

use crate::job::Params;
use crate::mstep::Degenerate;
use crate::start::{Outcome, StartFit};

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

/// One start's summary, on the rescaled data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartRecord {
    pub start: u32,
    pub init: Option<Params>,
    pub loglik: f64,
    pub iterations: u32,
    /// `None` if no starting point could be drawn.
    pub outcome: Option<Outcome>,
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
