//! Running an engine while R's main thread watches: the engine works on a
//! worker thread, and R's main thread polls for interrupts, reports
//! progress from the engine's counters and does work of its own meanwhile;
//! afterwards the counters' timings go back to R.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bulkem_core::Counters;
use extendr_api::prelude::*;

use crate::error::Stop;
use crate::interrupt::{call_watched, interrupt_pending};

/// How often R's main thread checks for Ctrl-C while the engine works.
const POLL: Duration = Duration::from_millis(25);
/// How often the progress callback runs.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// Runs `work` (the engine) on a worker thread; the calling (R main) thread
/// polls for interrupts, and on one sets the cancel flag and waits for the
/// workers to stop before returning the condition R raised, which R signals
/// again once the `.Call` has returned. Every REPORT_EVERY it calls
/// `report(done, total)` (an R function that draws the progress bar).
/// Between polls it runs `meanwhile` (work of its own on R's main thread:
/// true if it did some, and then it does not sleep; an error stops the call
/// as an interrupt does). No R API is used off this thread.
pub(crate) fn run_watched<T: Send>(
    counters: &Counters,
    report: Option<&Function>,
    work: impl FnOnce(&AtomicBool) -> Result<T, bulkem_core::Error> + Send,
    mut meanwhile: impl FnMut() -> Result<bool, Stop>,
) -> Result<T, Stop> {
    let cancel = AtomicBool::new(false);
    let main = std::thread::current();
    let mut interrupt = None;
    let mut stopped = None;
    // Set by the worker just before it wakes this thread. The thread's own
    // is_finished() turns true only after the wake-up, and a loop that
    // checked it could miss the wake-up and sleep a whole POLL longer (a
    // quarter of B1's calls took 25 ms more on a 2-core machine).
    let finished = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let result = work(&cancel);
            finished.store(true, Ordering::Release);
            main.unpark();
            result
        });
        let mut reported = std::time::Instant::now();
        // the first look is at once: `meanwhile` may have work before the
        // engine has any result (fit.rs reserves lists)
        let mut busy = true;
        // (is_finished() still ends the loop if the work panics)
        while !finished.load(Ordering::Acquire) && !worker.is_finished() {
            if !busy {
                std::thread::park_timeout(POLL);
            }
            busy = false;
            if interrupt.is_some() || stopped.is_some() {
                continue;
            }
            interrupt = match report {
                Some(f) if reported.elapsed() >= REPORT_EVERY => {
                    let done =
                        (counters.done.load(Ordering::Relaxed) + counters.in_flight.load(Ordering::Relaxed)) as f64;
                    let total = counters.total.load(Ordering::Relaxed) as f64;
                    reported = std::time::Instant::now();
                    call_watched(f, done, total)
                }
                _ => interrupt_pending(),
            };
            if interrupt.is_none() {
                match meanwhile() {
                    Ok(more) => busy = more,
                    Err(stop) => stopped = Some(stop),
                }
            }
            if interrupt.is_some() || stopped.is_some() {
                cancel.store(true, Ordering::Relaxed);
            }
        }
        worker.join()
    });
    // the user asked to stop: that is the answer, even if the engine
    // finished meanwhile
    if let Some(cond) = interrupt {
        return Err(Stop::R(cond));
    }
    if let Some(stop) = stopped {
        return Err(stop);
    }
    match outcome {
        Ok(result) => result.map_err(Stop::from),
        Err(_) => Err(bulkem_core::Error::Internal("the engine thread panicked".into()).into()),
    }
}

/// Seconds by phase, named.
pub(crate) fn timings(counters: &Counters) -> Result<Robj, Stop> {
    let phases = counters.phases();
    let mut timings = Robj::from(phases.iter().map(|p| p.1).collect::<Vec<f64>>());
    timings.set_names(phases.iter().map(|p| p.0).collect::<Vec<&str>>())?;
    Ok(timings)
}
