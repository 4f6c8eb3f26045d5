//! The whole call: prepare every dataset once, count every K's work, run
//! each K on the engine, turn each dataset's best start into a `Fit` in the
//! data's own units, and, with several Ks, keep each dataset's fit of lowest
//! BIC.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::dataset::{prepare, Invalid, Prepared};
use crate::engine::best::{Best, Bests};
use crate::engine::counters::Counters;
use crate::engine::{queue, Engine, EngineKind, Work};
use crate::error::Error;
use crate::information;
use crate::job::{Fit, Job, Task};
use crate::outcome::{Outcome, StartFit, StartRecord, Status};
use crate::params::Singular;
use crate::saddle;

/// Fits every dataset of `job` with every K it asks for on `kind`, using
/// `threads` host threads. Setting `cancel` makes it return
/// `Error::Cancelled` soon after. Each fit is boxed, allocated by the thread
/// that finishes it: side by side, a call's 200,000 fits of 600 bytes were
/// 120 MB first touched by one thread, 0.1-0.25 s (B5).
#[allow(clippy::vec_box)]
pub fn fit(
    job: &Job,
    kind: EngineKind,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<Vec<Box<Fit>>, Error> {
    job.validate()?;
    let engine = kind.engine(threads, &job.settings.devices, &job.tuning)?;
    run(job, engine.as_ref(), threads, cancel, counters, true)
}

/// `fit`, each fit going into `finals` as soon as it is final, so that
/// another thread can take it while the call runs (R's main thread builds
/// the R result of a call meanwhile).
pub fn fit_into(
    job: &Job,
    kind: EngineKind,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
    finals: &Finals,
) -> Result<(), Error> {
    job.validate()?;
    let engine = kind.engine(threads, &job.settings.devices, &job.tuning)?;
    run_into(job, engine.as_ref(), threads, cancel, counters, true, finals)
}

/// A call's fits, one per dataset, each set once, when it is final, and the
/// datasets in the order their fits became final. With one K a fit is final
/// when it is finished, which for engines that settle datasets in chunks is
/// while later chunks run; with several, once K is chosen.
pub struct Finals {
    fits: Vec<OnceLock<Box<Fit>>>,
    ready: Mutex<Vec<usize>>,
}

impl Finals {
    pub fn new(datasets: usize) -> Finals {
        Finals { fits: (0..datasets).map(|_| OnceLock::new()).collect(), ready: Mutex::new(Vec::new()) }
    }

    /// Dataset `d`'s fit, if it is final.
    pub fn get(&self, d: usize) -> Option<&Fit> {
        self.fits.get(d).and_then(OnceLock::get).map(|f| &**f)
    }

    /// The datasets whose fits became final since the last call, in the
    /// order they did.
    pub fn take_ready(&self) -> Vec<usize> {
        std::mem::take(&mut *self.ready.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every fit, in dataset order; `None` if any is missing (a cancelled call).
    #[allow(clippy::vec_box)]
    pub fn into_fits(self) -> Option<Vec<Box<Fit>>> {
        self.fits.into_iter().map(OnceLock::into_inner).collect()
    }

    fn is_set(&self, d: usize) -> bool {
        self.get(d).is_some()
    }

    /// Sets `d`'s fit unless it has one.
    fn set(&self, d: usize, fit: Box<Fit>) {
        if self.fits.get(d).is_some_and(|slot| slot.set(fit).is_ok()) {
            self.ready.lock().unwrap_or_else(PoisonError::into_inner).push(d);
        }
    }
}

/// `fit` on an engine made already (its fits boxed, as `fit` says). With
/// `count`, the work is added to `counters.total` once the datasets are
/// checked; without, the caller counted it (restart rounds always add
/// theirs).
#[allow(clippy::vec_box)]
pub(crate) fn run(
    job: &Job,
    engine: &dyn Engine,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
    count: bool,
) -> Result<Vec<Box<Fit>>, Error> {
    let finals = Finals::new(job.datasets.len());
    run_into(job, engine, threads, cancel, counters, count, &finals)?;
    finals.into_fits().ok_or(Error::Cancelled)
}

/// `run`, its fits going into `finals` as `fit_into` says.
fn run_into(
    job: &Job,
    engine: &dyn Engine,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
    count: bool,
    finals: &Finals,
) -> Result<(), Error> {
    let clock = std::time::Instant::now();
    let prepared = queue::map(job.datasets.len(), threads, cancel, |d| {
        prepare(job.datasets[d], job.settings.family).map(|mut ds| {
            ds.init = job.inits.get(d).copied().flatten().map(|p| ds.rescale(&p));
            ds
        })
    })?;
    let clock = counters.lap("prepare", clock);
    let works: Vec<Work> = job.settings.components.iter().map(|&k| work(job.task(k), job, &prepared)).collect();
    if count {
        counters.total.fetch_add(works.iter().map(Work::start_fits).sum(), Ordering::Relaxed);
    }
    // with one K its fits are the call's; with several each K has its own
    let one_k = works.len() == 1;
    let mut per_k = Vec::with_capacity(works.len());
    let mut clock = clock;
    for w in &works {
        let n = job.datasets.len();
        let own = (!one_k).then(|| Finals::new(n));
        let fits = own.as_ref().unwrap_or(finals);
        // a dataset whose starts are all recorded and that has an admissible
        // winner is final (restart rounds take only the others): engines
        // that run datasets in chunks have it finished here while later
        // chunks run; every other dataset is finished after the engine
        let early = |d: usize, b: &Best| {
            if b.winner.is_some() && !fits.is_set(d) {
                fits.set(d, Box::new(finish(job, &w.task, d, &prepared[d], b, cancel)));
            }
        };
        let bests = Bests::with_settled(n, w.task.keep_starts, &early);
        engine.run(w, &bests, cancel, counters)?;
        for round in 1..=job.settings.restarts {
            if cancel.load(Ordering::Relaxed) {
                break;
            }
            let again = restart_round(w, round, &bests);
            if again.start_fits() == 0 {
                break;
            }
            counters.total.fetch_add(again.start_fits(), Ordering::Relaxed);
            engine.run(&again, &bests, cancel, counters)?;
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        clock = counters.lap("engine", clock);
        queue::for_each_light(n, threads, cancel, |d| {
            if !fits.is_set(d) {
                fits.set(d, Box::new(bests.with(d, |b| finish(job, &w.task, d, &prepared[d], b, cancel))));
            }
        })?;
        queue::drop_in_background(bests.into_summaries());
        if let Some(own) = own {
            per_k.push(own.into_fits().ok_or(Error::Cancelled)?);
        } else if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        clock = counters.lap("finish", clock);
    }
    if !one_k {
        for (d, fit) in choose_k(per_k).into_iter().enumerate() {
            finals.set(d, fit);
        }
    }
    counters.lap("choose K", clock);
    drop(works);
    queue::drop_in_background(prepared);
    Ok(())
}

/// The work of one K: the datasets long enough for it.
fn work<'a>(task: Task, job: &Job, prepared: &'a [Result<Prepared, Invalid>]) -> Work<'a> {
    let datasets = prepared
        .iter()
        .zip(&job.datasets)
        .map(|(p, values)| if Invalid::too_short(values.len(), task.k).is_some() { None } else { p.as_ref().ok() })
        .collect();
    Work { task, datasets }
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

/// With one K, its fits; with several, each dataset's fit of lowest BIC among
/// the converged fits that pass the screen (the lowest K among equals), with
/// every K's summary in `by_k`. Where no K gave such a fit, the lowest BIC of
/// any fit (the lowest K if none has one), its message saying so.
#[allow(clippy::vec_box)]
fn choose_k(mut per_k: Vec<Vec<Box<Fit>>>) -> Vec<Box<Fit>> {
    if per_k.len() <= 1 {
        return per_k.pop().unwrap_or_default();
    }
    let n = per_k.first().map_or(0, Vec::len);
    let mut chosen = Vec::with_capacity(n);
    let mut columns: Vec<std::vec::IntoIter<Box<Fit>>> = per_k.into_iter().map(Vec::into_iter).collect();
    for _ in 0..n {
        let fits: Vec<Box<Fit>> = columns.iter_mut().filter_map(Iterator::next).collect();
        let by_k: Vec<_> = fits.iter().map(|f| f.summary()).collect();
        let sound = |i: usize| fits[i].status == Status::Converged && !fits[i].spurious;
        let lowest_bic = |eligible: &dyn Fn(usize) -> bool| {
            (0..fits.len()).filter(|&i| eligible(i) && !by_k[i].bic.is_nan()).fold(None, |best: Option<usize>, i| {
                match best {
                    Some(b) if by_k[b].bic <= by_k[i].bic => Some(b),
                    _ => Some(i),
                }
            })
        };
        let (best, none_sound) = match lowest_bic(&sound) {
            Some(i) => (i, false),
            None => (lowest_bic(&|_| true).unwrap_or(0), true),
        };
        let mut others: Vec<Fit> = Vec::with_capacity(fits.len().saturating_sub(1));
        let mut chosen_fit = None;
        for (i, f) in fits.into_iter().enumerate() {
            if i == best {
                chosen_fit = Some(f);
            } else {
                others.push(*f);
            }
        }
        let Some(mut fit) = chosen_fit else { break };
        if none_sound && fit.params.is_some() {
            let why = "no K gave a converged fit that passes the spurious-solution screen; this is the lowest BIC of the others";
            fit.message = if fit.message.is_empty() { why.to_string() } else { format!("{}; {why}", fit.message) };
        }
        fit.by_k = by_k;
        fit.other_k = others;
        chosen.push(fit);
    }
    chosen
}

/// One dataset's result for task `t` from its best start.
fn finish(
    job: &Job,
    t: &Task,
    d: usize,
    prepared: &Result<Prepared, Invalid>,
    best: &Best,
    cancel: &AtomicBool,
) -> Fit {
    let values = job.datasets[d];
    let n = values.len();
    let invalid = |why: &Invalid| Fit::without_params(n, t.k, Status::Invalid, format!("dataset {why}"), 0, 0);
    if let Some(short) = Invalid::too_short(n, t.k) {
        return invalid(&short);
    }
    let ds = match prepared {
        Ok(ds) => ds,
        Err(why) => return invalid(why),
    };
    // every start in the data's units: parameters mapped back, and the
    // log-likelihood shifted by the rescaling's Jacobian (−N log scale)
    let starts = best.starts.as_ref().map(|records| {
        let mut out: Vec<_> = records
            .iter()
            .map(|r| StartRecord {
                init: r.init.map(|p| ds.unscale(&p)),
                loglik: r.loglik - n as f64 * ds.scale.ln(),
                ..*r
            })
            .collect();
        out.sort_by_key(|r| r.start);
        out
    });
    let Some((w, spurious)) = best.returned() else {
        let reason = best.first_failure.map_or("", |(_, why)| why.describe());
        let message = format!("all {} random starts failed (the first because {reason})", best.starts_run);
        return Fit { starts, ..Fit::without_params(n, t.k, Status::Failed, message, best.starts_run, best.starts_ok) };
    };
    let jacobian = n as f64 * ds.scale.ln();
    // every parameter in the data's units, components by ascending mu
    let in_units = |f: &StartFit| {
        let p = ds.unscale(&f.params);
        let order = p.order_by_mu();
        (p.permuted(&order), order)
    };
    let mut fit = w.fit;
    let (mut params, mut order) = in_units(&fit);
    let mut covariance =
        job.settings.standard_errors.then(|| information::covariance(job.settings.family, ds, &params));
    // an admissible winner that converged to a saddle point goes on from
    // there (saddle.rs); found only where the information is computed
    let at_saddle = matches!(covariance, Some(Err(Singular::Indefinite { .. })));
    let escaped = if at_saddle && !spurious { saddle::escape(t, ds, &fit, cancel) } else { None };
    if let Some(f) = escaped {
        fit = f;
        (params, order) = in_units(&fit);
        covariance = Some(information::covariance(job.settings.family, ds, &params));
    }
    // a rejected start that beat the returned one, in the data's units
    let loglik_spurious =
        best.spurious.as_ref().filter(|s| !spurious && s.fit.loglik > fit.loglik).map(|s| s.fit.loglik - jacobian);
    let init = ds.unscale(&w.init).permuted(&order);
    let loglik = ds.log_likelihood(job.settings.family, values, &params);
    if !loglik.is_finite() {
        let message = "the best start's log-likelihood is not finite on the original data".to_string();
        return Fit { starts, ..Fit::without_params(n, t.k, Status::Failed, message, best.starts_run, best.starts_ok) };
    }
    let (status, mut message) = match fit.outcome {
        Outcome::Converged => (Status::Converged, String::new()),
        _ => (
            Status::MaxIters,
            format!("stopped after max.iters = {} iterations before the log-likelihood settled", t.max_iters),
        ),
    };
    if spurious {
        let why = format!(
            "spurious: every start that finished has a component far narrower than the others \
             (the screen of control$spurious.*; {} of {} starts)",
            best.spurious_starts, best.starts_run
        );
        message = if message.is_empty() { why } else { format!("{message}; {why}") };
    }
    if escaped.is_some() {
        message = format!("continued from a saddle point (log-likelihood {:.4}) to a maximum", w.fit.loglik - jacobian);
    }
    if let Some(Err(why)) = covariance {
        let sep = if message.is_empty() { "" } else { "; " };
        message = format!("{message}{sep}no standard errors: {}", why.describe(job.settings.family, t.k));
    }
    Fit {
        n,
        k: t.k,
        status,
        message,
        params: Some(params),
        init: Some(init),
        loglik,
        iterations: fit.iterations,
        best_start: Some(w.start),
        starts_run: best.starts_run,
        starts_ok: best.starts_ok,
        // the continued start is the one that reached its maximum
        starts_at_best: if escaped.is_some() { 1 } else { best.starts_at_best() },
        spurious,
        spurious_starts: best.spurious_starts,
        loglik_spurious,
        starts,
        by_k: Vec::new(),
        other_k: Vec::new(),
        covariance,
    }
}

/// All the cores this process may use (cgroup and affinity limits included).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::Cpu;
    use crate::job::Settings;
    use crate::params::Family;
    use crate::tuning::Tuning;

    /// The CPU engine, then every dataset settled in chunks of three, as
    /// cuda-batched settles its chunks: the fits of datasets with a winner
    /// are then finished inside the engine's run.
    struct Settling(Cpu);

    impl Engine for Settling {
        fn run(&self, work: &Work, bests: &Bests, cancel: &AtomicBool, counters: &Counters) -> Result<(), Error> {
            self.0.run(work, bests, cancel, counters)?;
            for chunk in work.valid().chunks(3) {
                bests.settle(chunk, 2, cancel)?;
            }
            Ok(())
        }
    }

    #[test]
    fn fits_finished_while_the_engine_runs_are_those_finished_after() {
        let smooth = |n: usize, shift: f64| -> Vec<f64> {
            (0..n).map(|i| shift + (i as f64 * 0.618_034).fract() * (1.0 + (i % 3) as f64)).collect()
        };
        // three distinct values: every start of K = 3 collapses, round after round
        let tied: Vec<f64> = (0..30).map(|i| (i % 3) as f64).collect();
        let data =
            [smooth(200, 0.0), tied, smooth(150, 5.0), vec![1.0, f64::NAN, 2.0], smooth(120, -2.0), smooth(90, 1.0)];
        for components in [vec![3], vec![2, 3]] {
            let job = Job {
                datasets: data.iter().map(|d| d.as_slice()).collect(),
                inits: Vec::new(),
                settings: Settings {
                    family: Family::Normal,
                    components: components.clone(),
                    max_iters: 300,
                    epsilon: 1e-8,
                    starts: 3,
                    seed: 11,
                    mixed_precision: false,
                    accelerate: true,
                    keep_starts: true,
                    screen: Default::default(),
                    restarts: 2,
                    devices: Vec::new(),
                    standard_errors: true,
                },
                tuning: Tuning::default(),
            };
            let cancel = AtomicBool::new(false);
            let after = run(&job, &Cpu { threads: 2 }, 2, &cancel, &Counters::default(), true).unwrap();
            let during = run(&job, &Settling(Cpu { threads: 2 }), 2, &cancel, &Counters::default(), true).unwrap();
            // Debug prints every float exactly (and NaN equal to NaN)
            assert_eq!(format!("{during:?}"), format!("{after:?}"));
            if components == [3] {
                let tied = &after[1];
                assert!(
                    tied.starts_run == 3 * (1 + job.settings.restarts) && tied.params.is_none(),
                    "the tied dataset was not restarted"
                );
            }
            assert!(after.iter().filter(|f| f.params.is_some()).count() >= 4);
        }
    }
}
