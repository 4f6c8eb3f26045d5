//! emEM (control$short.runs; issue 31): a round's starts are first run as
//! many short runs of a few EM iterations each, and only the best
//! random.inits of them are continued to convergence (Biernacki, Celeux &
//! Govaert 2003's "em-EM"). A minor mode's basin holds a percent or two of
//! the drawn starts: twenty starts miss it more often than not, hundreds
//! do not, and a few iterations are enough to tell the short runs that
//! head to a better optimum from those that do not, at a fraction of a
//! full run's passes.
//!
//! The short runs are a round of the engine like any other (the task's
//! max_iters cut to control$short.iters), so every engine runs them; their
//! end states are ranked in `Best::leaders`, whose order is total, so the
//! continued starts depend only on the dataset, the seed and the settings.
//! Short run i of round r is start draw r·N + i (N = control$short.runs);
//! the continuation of the j-th best of round r is recorded as start
//! r·random.inits + j, where the start of round r is without short runs,
//! so restart and refinement rounds keep their numbering. Only the
//! continued starts are recorded in the dataset's `Best` (its winner,
//! control$keep.starts); the short runs' E-step passes are counted in
//! `Counters::em_iterations` like every other pass.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::best::Bests;
use crate::engine::counters::Counters;
use crate::engine::{Engine, Work};
use crate::error::Error;
use crate::job::{ShortRuns, Task};
use crate::params::Params;

/// Runs round `round` of `w` (its datasets, `w.task.starts` continued
/// starts numbered from `w.task.first_start`) as short runs and their best
/// continued, recording the continued starts into `bests`. The caller has
/// counted the continued starts in `counters.total`; the short runs are
/// added here.
pub(crate) fn run_short_round(
    engine: &dyn Engine,
    w: &Work,
    round: u32,
    short: ShortRuns,
    bests: &Bests,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
    let t = &w.task;
    let task = Task {
        starts: short.runs,
        first_start: round * short.runs,
        max_iters: short.iters.min(t.max_iters),
        keep_starts: false,
        ..*t
    };
    let runs = Work::new(task, w.datasets.clone());
    counters.total.fetch_add(runs.start_fits(), Ordering::Relaxed);
    let ends = Bests::with_leaders(w.datasets.len(), t.starts as usize);
    engine.run(&runs, &ends, cancel, counters)?;
    if cancel.load(Ordering::Relaxed) {
        return Ok(());
    }
    let resume: Vec<Option<Vec<Params>>> = (0..w.datasets.len())
        .map(|d| {
            ends.with(d, |b| {
                let leaders = b.leaders.as_ref()?;
                (!leaders.runs.is_empty()).then(|| leaders.runs.iter().map(|&(_, _, fit)| fit.params).collect())
            })
        })
        .collect();
    // a dataset none of whose short runs finished has their failures as its
    // record (its message names the first one's reason) and is not
    // continued; restart rounds take it like any dataset without a winner
    for (d, ds) in w.datasets.iter().enumerate() {
        if ds.is_some() && resume[d].is_none() {
            let (run, failure) = ends.with(d, |b| (b.starts_run, b.first_failure));
            bests.with(d, |b| {
                b.starts_run += run;
                if b.first_failure.is_none() {
                    b.first_failure = failure;
                }
            });
        }
    }
    let datasets = w.datasets.iter().zip(&resume).map(|(ds, r)| ds.filter(|_| r.is_some())).collect();
    let again = Work { resume, ..Work::new(*t, datasets) };
    engine.run(&again, bests, cancel, counters)
}
