//! Each dataset's running best start. Every engine records its starts here,
//! so every engine selects winners by the same rule.

use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError};

use super::queue;

use crate::error::Error;
use crate::limits::SAME_OPTIMUM;
use crate::outcome::{Degenerate, Outcome, StartFit, StartRecord};
use crate::params::Params;

/// Running summary of one dataset's starts. Merging is order-independent:
/// the winner is the highest log-likelihood among the admissible starts (the
/// screen of screen.rs), ties to the lowest start index, and likewise the
/// best spurious start; the failure kept is the lowest-indexed one. So
/// results never depend on which thread ran which start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Best {
    /// The best admissible start. Boxed, like `spurious`: a call holds one
    /// `Best` per dataset, and hundreds of thousands of them inline (900
    /// bytes each) cost more to first touch than the fits to fill them.
    pub winner: Option<Box<Winner>>,
    /// The best start the screen rejected.
    pub spurious: Option<Box<Winner>>,
    pub spurious_starts: u32,
    /// Starts recorded, whatever their end.
    pub starts_run: u32,
    /// Final log-likelihood of every finished start and whether it was
    /// spurious, for counting the starts that reached the winner's.
    pub finished: Vec<(f64, bool)>,
    pub starts_ok: u32,
    pub first_failure: Option<(u32, Degenerate)>,
    /// Every start, when the call keeps them (control$keep.starts); in the
    /// order recorded, sorted by start when the fit is finished.
    pub starts: Option<Vec<StartRecord>>,
    /// A short-run round's (control$short.runs, short.rs): its best
    /// starts, to be continued; `None` in every other round, and then
    /// nothing else but the counts and the first failure is kept.
    pub leaders: Option<Leaders>,
}

/// The best `keep` finished starts of a short-run round: admissible ones
/// before those the screen rejects, then by log-likelihood, ties to the
/// lowest start index. A total order, so which starts are kept does not
/// depend on the order they were recorded in (threads, chunks, engines).
/// Only their indices and ranks are kept (16 bytes a start, not the
/// end states' hundreds): a call holds one per dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaders {
    keep: usize,
    /// Best first: (start, spurious, log-likelihood at its end).
    pub runs: Vec<(u32, bool, f64)>,
}

impl Leaders {
    pub fn new(keep: usize) -> Leaders {
        Leaders { keep, runs: Vec::with_capacity(keep + 1) }
    }

    pub(crate) fn offer(&mut self, start: u32, spurious: bool, loglik: f64) {
        // ahead of this start: admissible before spurious, then a higher
        // log-likelihood, then a lower index
        let ahead =
            |&(s, sp, ll): &(u32, bool, f64)| sp.cmp(&spurious).then(loglik.total_cmp(&ll)).then(s.cmp(&start)).is_lt();
        let at = self.runs.partition_point(ahead);
        if at < self.keep {
            self.runs.insert(at, (start, spurious, loglik));
            self.runs.truncate(self.keep);
        }
    }
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

    /// Records start `start` (begun at `init`; `None` if no start could be
    /// drawn); `spurious`: its end state fails the screen.
    pub fn record(&mut self, start: u32, init: Option<Params>, fit: Option<StartFit>, spurious: bool) {
        self.starts_run += 1;
        if let Some(leaders) = &mut self.leaders {
            match fit.map(|f| (f.outcome, f.loglik)) {
                Some((Outcome::Converged | Outcome::MaxIters, loglik)) => leaders.offer(start, spurious, loglik),
                Some((Outcome::Failed(why), _)) => self.record_failure(start, why),
                Some((Outcome::Cancelled, _)) => {}
                None => self.record_failure(start, Degenerate::NoStart),
            }
            return;
        }
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
                self.finished.push((fit.loglik, spurious));
                let slot = if spurious {
                    self.spurious_starts += 1;
                    &mut self.spurious
                } else {
                    &mut self.winner
                };
                let better = match slot {
                    None => true,
                    Some(w) => fit.loglik > w.fit.loglik || (fit.loglik == w.fit.loglik && start < w.start),
                };
                if better {
                    match slot {
                        Some(w) => **w = Winner { start, init, fit },
                        None => *slot = Some(Box::new(Winner { start, init, fit })),
                    }
                }
            }
        }
    }

    /// The start to report: the best admissible one, else the best spurious
    /// one (`true`: it is spurious).
    pub fn returned(&self) -> Option<(&Winner, bool)> {
        self.winner.as_deref().map(|w| (w, false)).or_else(|| self.spurious.as_deref().map(|w| (w, true)))
    }

    /// Starts of the returned start's kind (admissible or spurious) whose
    /// log-likelihood reached its within SAME_OPTIMUM.
    pub fn starts_at_best(&self) -> u32 {
        let Some((w, spurious)) = self.returned() else { return 0 };
        let tol = SAME_OPTIMUM * (1.0 + w.fit.loglik.abs());
        self.finished.iter().filter(|&&(ll, s)| s == spurious && ll >= w.fit.loglik - tol).count() as u32
    }

    fn record_failure(&mut self, start: u32, why: Degenerate) {
        if self.first_failure.is_none_or(|(s, _)| start < s) {
            self.first_failure = Some((start, why));
        }
    }
}

/// Called with each dataset (index and summary) whose starts an engine has
/// all recorded in this round, so that its fit can be finished while the
/// engine goes on.
pub type Settled<'a> = &'a (dyn Fn(usize, &Best) + Sync);

/// One `Best` per dataset of a call, shared by an engine's workers.
pub struct Bests<'a> {
    slots: Vec<Mutex<Best>>,
    settled: Option<Settled<'a>>,
}

impl<'a> Bests<'a> {
    pub fn new(datasets: usize, keep_starts: bool) -> Bests<'a> {
        Bests { slots: (0..datasets).map(|_| Mutex::new(Best::new(keep_starts))).collect(), settled: None }
    }

    /// Like `new` (no start kept), each dataset keeping the ranks of its
    /// best `keep` starts (`Best::leaders`), for a short-run round.
    pub fn with_leaders(datasets: usize, keep: usize) -> Bests<'a> {
        let slots =
            (0..datasets).map(|_| Mutex::new(Best { leaders: Some(Leaders::new(keep)), ..Best::new(false) })).collect();
        Bests { slots, settled: None }
    }

    /// Like `new`, with `settled` called on the datasets an engine settles.
    pub fn with_settled(datasets: usize, keep_starts: bool, settled: Settled<'a>) -> Bests<'a> {
        Bests { settled: Some(settled), ..Bests::new(datasets, keep_starts) }
    }

    /// Runs `f` on dataset `d`'s summary, holding its lock.
    pub fn with<R>(&self, d: usize, f: impl FnOnce(&mut Best) -> R) -> R {
        f(&mut self.slots[d].lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every start of `datasets` is recorded: no engine records more of
    /// them in this round. Calls the `settled` callback on each, on up to
    /// `threads` threads.
    pub fn settle(&self, datasets: &[usize], threads: usize, cancel: &AtomicBool) -> Result<(), Error> {
        if self.settled.is_none() {
            return Ok(());
        }
        queue::for_each_light(datasets.len(), threads, cancel, |j| self.settle_one(datasets[j]))
    }

    /// The datasets' summaries, without the `settled` callback, to be
    /// dropped elsewhere (queue::drop_in_background): a call's are ~10^6 heap
    /// blocks for 200,000 datasets.
    pub fn into_summaries(self) -> Vec<Mutex<Best>> {
        self.slots
    }

    /// `settle` for dataset `d` alone, on the calling thread.
    pub fn settle_one(&self, d: usize) {
        if let Some(f) = self.settled {
            self.with(d, |b| f(d, b));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(loglik: f64) -> Option<StartFit> {
        Some(StartFit { params: Params::zeroed(2), loglik, iterations: 3, outcome: Outcome::Converged })
    }

    #[test]
    fn the_best_admissible_start_wins_whatever_the_order() {
        let init = Some(Params::zeroed(2));
        let records = [(0, -10.0, false), (1, -5.0, true), (2, -10.0, false), (3, -12.0, false), (4, -4.0, true)];
        let mut orders = vec![records.to_vec()];
        orders.push(records.iter().rev().copied().collect());
        for order in orders {
            let mut b = Best::new(false);
            for (s, ll, spurious) in order {
                b.record(s, init, fit(ll), spurious);
            }
            let (w, spurious) = b.returned().unwrap();
            assert_eq!((w.start, spurious), (0, false), "ties go to the lowest start");
            assert_eq!(b.spurious.as_ref().map(|w| w.start), Some(4));
            assert_eq!(b.spurious_starts, 2);
            assert_eq!(b.starts_at_best(), 2);
            assert_eq!(b.starts_ok, 5);
        }
    }

    #[test]
    fn with_no_admissible_start_the_best_spurious_one_is_returned() {
        let mut b = Best::new(false);
        b.record(0, Some(Params::zeroed(2)), fit(-3.0), true);
        b.record(1, Some(Params::zeroed(2)), fit(-3.0 - 1e-9), true);
        b.record(2, None, None, false);
        let (w, spurious) = b.returned().unwrap();
        assert_eq!((w.start, spurious), (0, true));
        assert_eq!(b.starts_at_best(), 2);
        assert_eq!(b.first_failure, Some((2, Degenerate::NoStart)));
    }

    #[test]
    fn the_leaders_are_the_best_admissible_starts_whatever_the_order() {
        let records = [(0, -10.0, false), (1, -5.0, true), (2, -10.0, false), (3, -12.0, false), (4, -4.0, true)];
        let mut orders = vec![records.to_vec()];
        orders.push(records.iter().rev().copied().collect());
        orders.push(vec![records[3], records[1], records[4], records[0], records[2]]);
        let failed = Some(StartFit {
            params: Params::zeroed(2),
            loglik: 1.0,
            iterations: 2,
            outcome: Outcome::Failed(Degenerate::NotFinite),
        });
        for order in orders {
            let mut b = Best { leaders: Some(Leaders::new(4)), ..Best::new(false) };
            b.record(5, Some(Params::zeroed(2)), None, false);
            for (s, ll, spurious) in order {
                b.record(s, Some(Params::zeroed(2)), fit(ll), spurious);
            }
            b.record(6, Some(Params::zeroed(2)), failed, false);
            // admissible first, by log-likelihood, ties to the lowest start;
            // the failed starts 5 and 6 are never continued, the first kept
            assert_eq!(b.first_failure, Some((5, Degenerate::NoStart)));
            assert_eq!(b.starts_run, 7);
            assert!(b.winner.is_none() && b.finished.is_empty());
            let kept: Vec<(u32, bool)> = b.leaders.unwrap().runs.iter().map(|&(s, sp, _)| (s, sp)).collect();
            assert_eq!(kept, [(0, false), (2, false), (3, false), (4, true)]);
        }
    }
}
