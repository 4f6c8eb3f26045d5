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
}

#[derive(Clone, Debug, PartialEq)]
pub struct Winner {
    pub start: u32,
    pub init: Params,
    pub fit: StartFit,
}

impl Best {
    /// Records start `start` (begun at `init`; `None` if no start could be drawn).
    pub fn record(&mut self, start: u32, init: Option<Params>, fit: Option<StartFit>) {
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
