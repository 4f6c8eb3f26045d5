//! `fit_()`: R vectors in, a `bulkem_core::Job` to the engine on a worker
//! thread while R's main thread watches for interrupts and turns each fit
//! that is final into its R list, R lists back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bulkem_core::{Counters, EngineKind, Finals, Job, ResultDuring};
use extendr_api::prelude::*;

use crate::convert::FitLists;
use crate::error::{or_condition, Stop};
use crate::interrupt::{call_watched, guarded, interrupt_pending};
use crate::settings::Call;

/// How often R's main thread checks for Ctrl-C while the engine works.
const POLL: Duration = Duration::from_millis(25);
/// How often the progress callback runs.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// Fits every dataset of `datasets`, a list of double vectors (or NULLs)
/// checked by bulkem() in R; they are read in place, not copied. `settings`
/// is the named list R's core_settings() makes (converted once, by
/// settings.rs); every K of its `num.components` is fitted, and with
/// several each dataset keeps its fit of lowest BIC. `report` draws the
/// progress. Returns the fits, or the condition that stopped the call, for
/// R to raise (R/conditions.R).
/// @noRd
#[extendr]
fn fit_(datasets: List, settings: List, report: Robj) -> Robj {
    or_condition(fit(datasets, settings, report))
}

fn fit(datasets: List, settings: List, report: Robj) -> Result<List, Stop> {
    let started = std::time::Instant::now();
    let Call { settings, engine, threads, tuning } = Call::from_r(&settings)?;
    let keep_starts = settings.keep_starts;
    let during = tuning.result_during;
    let job = Job { datasets: borrow_doubles(&datasets)?, settings, inits: Vec::new(), tuning };
    let counters = Counters::default();
    let report = Function::try_from(report).ok();
    let choice = job.settings.components.len() > 1;
    let n = job.datasets.len();
    let finals = Finals::new(n);
    let one_k = job.settings.components.first().copied().filter(|_| !choice);
    let mut lists = FitLists::new(n, job.settings.family, one_k, job.settings.standard_errors);
    let mut building = Building::default();
    // Lists of fits to come are reserved only while a GPU works: the CPU
    // engine keeps every core busy, and R's main thread would take one from
    // it for work it can do as well afterwards. Tuning::result_during
    // changes that, for the tests and inst/bench/result-during.R.
    let reserving = match during {
        ResultDuring::Reserve => true,
        ResultDuring::After | ResultDuring::Ahead => false,
        ResultDuring::Auto => engine != EngineKind::Cpu,
    };
    if during == ResultDuring::Ahead {
        guarded(&mut || {
            lists.reserve(usize::MAX);
        })
        .map_err(Stop::from)?;
    }
    // reading the datasets, the result's list (R may collect garbage here)
    counters.lap("setup", started);
    let ended = std::sync::OnceLock::new();
    run_watched(
        &counters,
        report.as_ref(),
        |cancel| {
            let fitted = bulkem_core::fit_into(&job, engine, threads, cancel, &counters, &finals);
            let _ = ended.set(std::time::Instant::now());
            fitted
        },
        || {
            if during == ResultDuring::After {
                return Ok(false);
            }
            // fits made final first; then lists for those to come. The
            // guarded call checks for interrupts again: only when there is work
            if building.waiting(&finals) {
                guarded(&mut || building.step(&finals, &mut lists, BUILD_AT_ONCE)).map_err(Stop::from)?;
                return Ok(true);
            }
            if !reserving || !lists.reserving() {
                return Ok(false);
            }
            let mut made = 0;
            guarded(&mut || made = lists.reserve(RESERVE_AT_ONCE)).map_err(Stop::from)?;
            Ok(made > 0)
        },
    )?;
    // from the engine's end: R's main thread may still have been building
    // (and collecting garbage) when the engine ended
    let clock = ended.get().copied().unwrap_or_else(std::time::Instant::now);
    building.rest(&finals, &mut lists);
    let done = finals.into_fits().ok_or(bulkem_core::Error::Cancelled)?;
    let starts: Robj = if keep_starts { crate::convert::starts_to_r(&done) } else { Robj::default() };
    let outcomes = crate::convert::outcome_counts(&done);
    let fits = lists.into_robj();
    counters.lap("result", clock);
    bulkem_core::drop_in_background(done);
    let count = |c: &std::sync::atomic::AtomicUsize| Robj::from(c.load(Ordering::Relaxed) as f64);
    Ok(List::from_names_and_values(
        ["fits", "starts", "threads", "em_iterations", "kernel_launches", "kernel_seconds", "timings", "outcomes"],
        [
            fits,
            starts,
            Robj::from(threads as i32),
            count(&counters.em_iterations),
            count(&counters.kernel_launches),
            Robj::from(counters.kernel_seconds()),
            timings(&counters)?,
            outcomes,
        ],
    )?)
}

/// Fits R's main thread turns into R lists between its checks for
/// interrupts while the workers run: about 5-10 ms of work.
const BUILD_AT_ONCE: usize = 2048;
/// Lists of fits to come R's main thread makes at once meanwhile (a little
/// less work each than a fit's list).
const RESERVE_AT_ONCE: usize = 2048;

/// The fits made final and not yet built into R lists: `ready` from `next`
/// on. Finals lists each dataset once, when its fit is set, so every fit
/// passes through here exactly once.
#[derive(Default)]
struct Building {
    ready: Vec<usize>,
    next: usize,
}

impl Building {
    /// Whether a fit waits to be built (takes the newly final ones).
    fn waiting(&mut self, finals: &Finals) -> bool {
        if self.next == self.ready.len() {
            self.ready = finals.take_ready();
            self.next = 0;
        }
        self.next < self.ready.len()
    }

    /// Builds the R lists of up to `at_most` waiting fits. On R's main thread.
    fn step(&mut self, finals: &Finals, lists: &mut FitLists, at_most: usize) {
        if !self.waiting(finals) {
            return;
        }
        let end = self.ready.len().min(self.next.saturating_add(at_most));
        for &d in self.ready.get(self.next..end).unwrap_or(&[]) {
            if let Some(f) = finals.get(d) {
                lists.put(d, f);
            }
        }
        self.next = end;
    }

    /// Builds every waiting fit's R list (the call has ended).
    fn rest(&mut self, finals: &Finals, lists: &mut FitLists) {
        while self.waiting(finals) {
            self.step(finals, lists, usize::MAX);
        }
    }
}

/// Seconds by phase, named.
pub(crate) fn timings(counters: &Counters) -> Result<Robj, Stop> {
    let phases = counters.phases();
    let mut timings = Robj::from(phases.iter().map(|p| p.1).collect::<Vec<f64>>());
    timings.set_names(phases.iter().map(|p| p.0).collect::<Vec<&str>>())?;
    Ok(timings)
}

/// The list's vectors as slices of R's own memory, through R's C API: one
/// extendr object per element would cost microseconds each, and calls hold
/// hundreds of thousands of datasets.
pub(crate) fn borrow_doubles(list: &List) -> extendr_api::Result<Vec<&[f64]>> {
    use extendr_ffi::{Rf_xlength, REAL, SEXPTYPE, TYPEOF, VECTOR_ELT};
    // SAFETY: `list` is a protected VECSXP (an argument of this .Call); its
    // elements stay alive and unmodified for the whole call, which is what
    // the returned slices borrow; empty vectors are not dereferenced.
    unsafe {
        let sexp = list.get();
        (0..Rf_xlength(sexp))
            .map(|i| {
                let v = VECTOR_ELT(sexp, i);
                match TYPEOF(v) {
                    SEXPTYPE::NILSXP => Ok(&[][..]),
                    SEXPTYPE::REALSXP => {
                        let n = Rf_xlength(v) as usize;
                        Ok(if n == 0 { &[][..] } else { std::slice::from_raw_parts(REAL(v), n) })
                    }
                    _ => Err(Error::Other(format!("datasets[[{}]] is not a double vector", i + 1))),
                }
            })
            .collect()
    }
}

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

extendr_module! {
    mod fit;
    fn fit_;
}
