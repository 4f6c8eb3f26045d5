//! `fit_()`: R vectors in, a `bulkem_core::Job` to the engine on a worker
//! thread while R's main thread watches for interrupts (watch.rs) and turns
//! each fit that is final into its R list, R lists back.

use std::sync::atomic::Ordering;

use bulkem_core::{Counters, EngineKind, Finals, Job, ResultDuring};
use extendr_api::prelude::*;

use crate::convert::FitLists;
use crate::datasets::borrow_doubles;
use crate::error::{or_condition, Stop};
use crate::interrupt::guarded;
use crate::settings::Call;
use crate::watch::{run_watched, timings};

/// Fits every dataset of `datasets`, a list of double vectors (or NULLs)
/// checked by bulkem() in R; they are read in place, not copied, as are
/// `weights` (an empty list, or one weight vector, or NULL, per dataset:
/// each observation's weight). `settings`
/// is the named list R's core_settings() makes (converted once, by
/// settings.rs); every K of its `num.components` is fitted, and with
/// several each dataset keeps its fit of lowest BIC. `report` draws the
/// progress. Returns the fits, or the condition that stopped the call, for
/// R to raise (R/conditions.R).
/// @noRd
#[extendr]
fn fit_(datasets: List, weights: List, settings: List, report: Robj) -> Robj {
    or_condition(fit(datasets, weights, settings, report))
}

fn fit(datasets: List, weights: List, settings: List, report: Robj) -> Result<List, Stop> {
    let started = std::time::Instant::now();
    let mut call = Call::from_r(&settings)?;
    let datasets = borrow_doubles(&datasets)?;
    let noise_supports = call.noise_supports_for(datasets.len());
    let given_starts = call.given_starts_for(datasets.len())?;
    let fixed = call.fixed_for(datasets.len())?;
    let truncation = call.truncation_for(datasets.len());
    let censored = std::mem::take(&mut call.censored);
    let weights = borrow_doubles(&weights)?.into_iter().map(|w| (!w.is_empty()).then_some(w)).collect();
    let Call { settings, engine, threads, tuning, .. } = call;
    let keep_starts = settings.keep_starts;
    let during = tuning.result_during;
    let job = Job {
        datasets,
        settings,
        inits: Vec::new(),
        tuning,
        noise_supports,
        given_starts,
        weights,
        fixed,
        truncation,
        censored,
    };
    let counters = Counters::default();
    let report = Function::try_from(report).ok();
    let choice = job.settings.components.len() > 1;
    let n = job.datasets.len();
    let finals = Finals::new(n);
    let one_k = job.settings.components.first().copied().filter(|_| !choice);
    let df = job.settings.family.has_third() && job.settings.df.is_empty();
    let s = &job.settings;
    let mut lists = FitLists::new(n, s.family, s.noise, df, one_k, s.criterion, s.standard_errors);
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

extendr_module! {
    mod fit;
    fn fit_;
}
