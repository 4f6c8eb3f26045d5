//! Restart rounds (control$restarts): a dataset whose starts all collapsed
//! or were rejected by the screen gets the next `starts` starts, round
//! after round, until it has a winner or the rounds run out.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::best::Bests;
use crate::engine::counters::Counters;
use crate::engine::{Engine, Work};
use crate::error::Error;
use crate::job::Task;

/// Runs `w` on `engine`, then up to `restarts` restart rounds, each adding
/// its work to `counters.total`; stops early when `cancel` is set (the
/// caller then discards what was recorded).
pub(crate) fn run_with_restarts(
    engine: &dyn Engine,
    w: &Work,
    restarts: u32,
    bests: &Bests,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
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
    Work { task: Task { first_start: round * w.task.starts, ..w.task }, datasets }
}
