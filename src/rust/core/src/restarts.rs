//! Rounds after the first. Restart rounds (control$restarts): a dataset
//! whose starts all collapsed or were rejected by the screen gets the next
//! `starts` starts, round after round, until it has a winner or the rounds
//! run out. Then one refinement round (control$refine, refine.rs): every
//! dataset with a winner gets starts from its winner with one component
//! moved to a region the winner explains least. Given rounds come first:
//! the starting values the user gives (Job::given_starts), one start per
//! dataset and round.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::dataset::Prepared;
use crate::engine::best::Bests;
use crate::engine::counters::Counters;
use crate::engine::queue;
use crate::engine::{Engine, Work};
use crate::error::Error;
use crate::job::{ShortRuns, Task};
use crate::params::Params;
use crate::refine::refinement;
use crate::short::run_short_runs;

/// Runs `w` on `engine`, then up to `restarts` restart rounds, each adding
/// its work to `counters.total`; stops early when `cancel` is set (the
/// caller then discards what was recorded). With `short` runs for its K
/// (ShortRuns::for_k), the starts are the best of the short runs,
/// continued, and the restart rounds run the draws not continued yet
/// (short.rs).
pub(crate) fn run_with_restarts(
    engine: &dyn Engine,
    w: &Work,
    restarts: u32,
    short: ShortRuns,
    bests: &Bests,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
    let runs = short.for_k(w.task.k, w.task.starts);
    if runs > 0 {
        return run_short_runs(engine, w, restarts, (runs, short.iters), bests, cancel, counters);
    }
    engine.run(w, bests, cancel, counters)?;
    for round in 1..=restarts {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let again = restart_round(w, round, bests);
        if again.start_fits() == 0 {
            break;
        }
        counters.total.fetch_add(again.start_fits(), Ordering::Relaxed);
        engine.run(&again, bests, cancel, counters)?;
    }
    Ok(())
}

/// Restart round `round` of `w`: the next `starts` starts of every dataset
/// whose starts so far all collapsed or were rejected by the screen. Which
/// datasets these are depends only on their own starts, so a dataset's fit
/// still depends only on its values, the seed and the settings.
fn restart_round<'a>(w: &Work<'a>, round: u32, bests: &Bests) -> Work<'a> {
    let datasets =
        w.datasets.iter().enumerate().map(|(d, ds)| ds.filter(|_| bests.with(d, |b| b.winner.is_none()))).collect();
    Work::new(Task { first_start: round * w.task.starts, ..w.task }, datasets)
}

/// Runs the refinement round of `w` (control$refine = `regions`, after
/// `restarts` restart rounds) on `engine`, its starts found on `threads`
/// threads, adding its work to `counters.total`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_refinement(
    engine: &dyn Engine,
    w: &Work,
    regions: u32,
    restarts: u32,
    bests: &Bests,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
    if regions == 0 || w.task.k == 1 || cancel.load(Ordering::Relaxed) {
        return Ok(());
    }
    let again = refinement_round(w, regions, restarts, bests, threads, cancel)?;
    if again.start_fits() == 0 {
        return Ok(());
    }
    counters.total.fetch_add(again.start_fits(), Ordering::Relaxed);
    engine.run(&again, bests, cancel, counters)
}

/// The refinement round of `w`: `regions` × K starts, numbered after every
/// restart round's, for each dataset whose winner leaves a region of its
/// data less well explained than chance allows (refine.rs). Which datasets
/// these are, and their starts, depend only on their own winners.
fn refinement_round<'a>(
    w: &Work<'a>,
    regions: u32,
    restarts: u32,
    bests: &Bests,
    threads: usize,
    cancel: &AtomicBool,
) -> Result<Work<'a>, Error> {
    let t = &w.task;
    let refine = queue::map(w.datasets.len(), threads, cancel, |d| {
        let ds = w.datasets[d]?;
        let centre = bests.with(d, |b| b.winner.as_ref().map(|win| win.fit.params))?;
        refinement(t.family, ds, &centre, regions)
    })?;
    let datasets = w.datasets.iter().zip(&refine).map(|(ds, r)| ds.filter(|_| r.is_some())).collect();
    let task = Task { first_start: (restarts + 1) * t.starts, starts: regions * t.k as u32, ..*t };
    Ok(Work { refine, ..Work::new(task, datasets) })
}

/// Runs the user's starts of `w`'s K (`given[d]`, the data's units, each
/// start of any K) on `engine`: round j runs the j-th start of this K of
/// every dataset that has one, as start `first + j`, adding its work to
/// `counters.total`. `first` is numbered after every random, restart and
/// refinement start (Settings::start_count_before_given), so a given start
/// never takes a random start's index, and a tie goes to the random one.
pub(crate) fn run_given(
    engine: &dyn Engine,
    w: &Work,
    given: &[Vec<Params>],
    first: u32,
    bests: &Bests,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
    let k = w.task.k;
    let of_k = |d: usize| given.get(d).map_or(&[][..], Vec::as_slice).iter().filter(move |p| p.k == k);
    let rounds = (0..w.datasets.len()).map(|d| of_k(d).count()).max().unwrap_or(0);
    for j in 0..rounds {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let start = |d: usize, ds: &Prepared| of_k(d).nth(j).map(|p| ds.rescale(p));
        let starts: Vec<Option<Params>> =
            w.datasets.iter().enumerate().map(|(d, ds)| ds.and_then(|ds| start(d, ds))).collect();
        let datasets = w.datasets.iter().zip(&starts).map(|(ds, p)| ds.filter(|_| p.is_some())).collect();
        let task = Task { first_start: first + j as u32, starts: 1, ..w.task };
        let round = Work { given: starts, ..Work::new(task, datasets) };
        counters.total.fetch_add(round.start_fits(), Ordering::Relaxed);
        engine.run(&round, bests, cancel, counters)?;
    }
    Ok(())
}
