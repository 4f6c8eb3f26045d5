//! emEM (control$short.runs; issue 31): a dataset's starts are first run as
//! many short runs of a few EM iterations each, and only the best
//! random.inits of them are run on to convergence (Biernacki, Celeux &
//! Govaert 2003's "em-EM"). A minor mode's basin holds a percent or two of
//! the drawn starts: twenty starts miss it more often than not, hundreds
//! do not, and a few iterations tell many of the short runs that head to a
//! better optimum from those that do not, at a fraction of a full run's
//! passes.
//!
//! The short runs are a round of the engine like any other (the task's
//! max_iters cut to control$short.iters), so every engine runs them; the
//! best random.inits by rank are kept in `Best::leaders`, whose order is
//! total, so the starts continued depend only on the dataset, the seed and
//! the settings. A continued start is the short run's draw run again from
//! its beginning with the full max.iters: it redoes the short run's
//! iterations (their passes are counted again), and in exchange a call
//! keeps 16 bytes per leader, not its end state, and a fit's `init` is
//! its draw.
//!
//! Short runs heading to a degenerate fit (a component collapsing onto a
//! few observations) climb fastest and rank first, so the best
//! random.inits may all fail: airquality$Ozone as three inverse Gaussians,
//! where the best 100 of 200 partition short runs all collapse onto the
//! same five smallest values, so that continuing the next-ranked left it
//! without any fit (results-starts.md). A restart round (control$restarts)
//! therefore runs, for a dataset with no admissible fit yet, the scheme's
//! next random.inits draws in index order, skipping those continued
//! already, as a round without short runs would. The continuation of the
//! j-th short run by rank is recorded as start j, restart round r's j-th
//! start as r·random.inits + j: the numbering of the rounds without short
//! runs, so refinement rounds keep theirs. Only the continued starts are
//! recorded in the dataset's `Best` (its winner, control$keep.starts);
//! every short run's E-step passes are counted in
//! `Counters::em_iterations` like every other pass.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::best::Bests;
use crate::engine::counters::Counters;
use crate::engine::{Engine, Work};
use crate::error::Error;
use crate::job::Task;

/// Runs `w`'s starts as `runs` short runs of `iters` EM iterations and
/// their best continued, then up to
/// `restarts` rounds of the scheme's draws not continued yet, in index
/// order, for the datasets with no admissible fit, recording every
/// continued start into `bests`. The caller has counted the first round's
/// starts in `counters.total`; the short runs and later rounds are added
/// here.
pub(crate) fn run_short_runs(
    engine: &dyn Engine,
    w: &Work,
    restarts: u32,
    (runs, iters): (u32, u32),
    bests: &Bests,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
    let t = &w.task;
    let task = Task { starts: runs, max_iters: iters.min(t.max_iters), keep_starts: false, ..*t };
    let runs = Work::new(task, w.datasets.clone());
    counters.total.fetch_add(runs.start_fits(), Ordering::Relaxed);
    let ranked = Bests::with_leaders(w.datasets.len(), t.starts as usize);
    engine.run(&runs, &ranked, cancel, counters)?;
    drop(runs);
    // per dataset, its short runs' draws, best first
    let order: Vec<Vec<u32>> = (0..w.datasets.len())
        .map(|d| ranked.with(d, |b| b.leaders.as_ref().map_or(Vec::new(), |l| l.runs.iter().map(|r| r.0).collect())))
        .collect();
    // a dataset none of whose short runs finished has their failures as its
    // record (its message names the first one's reason), and none of the
    // first round's starts the caller counted; restart rounds take it like
    // any other without a fit
    for (d, ds) in w.datasets.iter().enumerate() {
        if ds.is_some() && order[d].is_empty() {
            // saturating: a caller that counted otherwise (the bootstrap)
            // must not see the total wrap
            let less = |total: usize| Some(total.saturating_sub(t.starts as usize));
            let _ = counters.total.fetch_update(Ordering::Relaxed, Ordering::Relaxed, less);
            let (run, failure) = ranked.with(d, |b| (b.starts_run, b.first_failure));
            bests.with(d, |b| {
                b.starts_run += run;
                b.first_failure = failure;
            });
        }
    }
    drop(ranked);
    let m = t.starts as usize;
    for round in 0..=restarts {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let picks: Vec<Option<Vec<u32>>> = (0..w.datasets.len())
            .map(|d| match round {
                0 => (w.datasets[d].is_some() && !order[d].is_empty()).then(|| order[d].clone()),
                _ => (w.datasets[d].is_some() && bests.with(d, |b| b.winner.is_none())).then(|| {
                    // the (round − 1)-th m draws of those not continued in round 0
                    let skip = (round as usize - 1) * m;
                    (0..u32::MAX).filter(|i| !order[d].contains(i)).skip(skip).take(m).collect()
                }),
            })
            .collect();
        let datasets: Vec<_> = w.datasets.iter().zip(&picks).map(|(ds, p)| ds.filter(|_| p.is_some())).collect();
        let again = Work { picks, ..Work::new(Task { first_start: round * t.starts, ..*t }, datasets) };
        if again.start_fits() == 0 {
            if round == 0 {
                continue;
            }
            break;
        }
        if round > 0 {
            counters.total.fetch_add(again.start_fits(), Ordering::Relaxed);
        }
        engine.run(&again, bests, cancel, counters)?;
    }
    Ok(())
}
