//! The whole call: prepare every dataset once, count every K's work, run
//! each K on the engine (with its restart rounds, restarts.rs), turn each
//! dataset's best start into a `Fit` in the data's own units (finish.rs)
//! and, with several Ks, keep each dataset's fit of lowest BIC
//! (choose_k.rs); each fit goes into `Finals` (finals.rs) once final.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::choose_k::choose_k;
use crate::dataset::{prepare, Invalid, Prepared};
use crate::engine::best::{Best, Bests};
use crate::engine::counters::Counters;
use crate::engine::{queue, Engine, EngineKind, Work};
use crate::error::Error;
use crate::finals::Finals;
use crate::finish::finish;
use crate::fixed::Fixed;
use crate::job::{Fit, Job, Task};
use crate::noise::Support;
use crate::params::Family;
use crate::restarts::{run_given, run_refinement, run_with_restarts};

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
    supported(job, kind)?;
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
    supported(job, kind)?;
    let engine = kind.engine(threads, &job.settings.devices, &job.tuning)?;
    run_into(job, engine.as_ref(), threads, cancel, counters, true, finals)
}

/// Whether the engine `kind` fits what `job` asks for: a noise component
/// and Student's t only in fp64 (mixed precision's fp32 passes have
/// neither).
pub(crate) fn supported(job: &Job, kind: EngineKind) -> Result<(), Error> {
    let s = &job.settings;
    if kind == EngineKind::CudaBatched && job.censored.iter().any(|c| !c.is_empty()) {
        return Err(Error::Argument {
            arg: "engine",
            message: "\"cuda-batched\" does not fit censored data yet: use engine = \"cuda-streams\" or \"cpu\"".into(),
        });
    }
    if kind == EngineKind::CudaBatched && job.truncation.iter().any(Option::is_some) {
        return Err(Error::Argument {
            arg: "engine",
            message: "\"cuda-batched\" does not fit truncated data (truncation =) yet: use engine = \"cuda-streams\" \
                      or \"cpu\""
                .into(),
        });
    }
    if s.mixed_precision && kind == EngineKind::CudaBatched && job.weights.iter().any(Option::is_some) {
        return Err(Error::Argument {
            arg: "control$precision",
            message: "= \"mixed\" does not fit weights: use precision = \"double\"".into(),
        });
    }
    if s.mixed_precision && kind == EngineKind::CudaBatched && job.fixed.iter().any(Option::is_some) {
        return Err(Error::Argument {
            arg: "control$precision",
            message: "= \"mixed\" does not fit values held fixed (fixed =): use precision = \"double\"".into(),
        });
    }
    if s.mixed_precision && kind == EngineKind::CudaBatched {
        let what = match (s.noise, s.family) {
            (true, _) => Some("a noise component (noise = TRUE)"),
            (false, Family::StudentT) => Some("Student's t components (family = \"t\")"),
            (false, Family::ExGauss) => Some("ex-Gaussian components (family = \"exgauss\")"),
            (false, _) => None,
        };
        if let Some(what) = what {
            return Err(Error::Argument {
                arg: "control$precision",
                message: format!("= \"mixed\" does not fit {what}: use precision = \"double\""),
            });
        }
    }
    Ok(())
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
        let values = job.datasets[d];
        let ds = prepare(values, job.settings.family);
        // (binned data: every exact value a bin's midpoint of weight 0,
        // the bins' counts in their windows)
        let censored = job.censored.get(d).filter(|c| !c.is_empty());
        let ds = match job.weights.get(d).copied().flatten() {
            Some(w) => ds.and_then(|ds| ds.with_weights(w, values, censored.is_some())),
            None => ds,
        };
        let ds = match job.truncation.get(d).copied().flatten() {
            Some(window) => ds.and_then(|ds| ds.with_truncation(window, values)),
            None => ds,
        };
        let ds = match censored {
            Some(groups) => ds.and_then(|ds| ds.with_censoring(groups)),
            None => ds,
        };
        ds.map(|mut ds| {
            ds.init = job.inits.get(d).copied().flatten().map(|p| ds.rescale(&p));
            ds.fixed_df.clone_from(&job.settings.df);
            ds.equal_scale = job.settings.equal_scale;
            ds.fixed = job.fixed.get(d).copied().flatten().map(|f| Fixed(ds.rescale(&f.0)));
            if !job.settings.noise {
                return ds;
            }
            // a valid dataset's values are not all equal: it has a range
            match job.noise_supports.get(d).copied().flatten().or_else(|| Support::range_of(values)) {
                Some(support) => ds.with_noise(support, values),
                None => ds,
            }
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
        // (with a refinement round to come, not before it)
        let refining = job.settings.refine > 0 && w.task.k > 1;
        // the given rounds run first: no dataset is final until the random
        // round settles it
        let finishing = AtomicBool::new(false);
        let early = |d: usize, b: &Best| {
            if finishing.load(Ordering::Acquire) && b.winner.is_some() && !fits.is_set(d) {
                fits.set(d, Box::new(finish(job, &w.task, d, &prepared[d], b, cancel)));
            }
        };
        let bests = Bests::with_settled(n, w.task.keep_starts, &early);
        let (restarts, refine) = (job.settings.restarts, job.settings.refine);
        let first_given = u32::try_from(job.settings.start_count_before_given()).unwrap_or(u32::MAX);
        run_given(engine, w, &job.given_starts, first_given, &bests, cancel, counters)?;
        finishing.store(!refining, Ordering::Release);
        run_with_restarts(engine, w, restarts, job.settings.short_runs, &bests, cancel, counters)?;
        finishing.store(true, Ordering::Release);
        run_refinement(engine, w, refine, restarts, &bests, threads, cancel, counters)?;
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
        for (d, fit) in choose_k(per_k, job.settings.criterion).into_iter().enumerate() {
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
    Work::new(task, datasets)
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

    /// Plain settings of `family` for `components`, which the tests vary.
    fn settings(family: Family, components: Vec<usize>) -> Settings {
        Settings {
            family,
            components,
            max_iters: 300,
            epsilon: 1e-8,
            starts: 3,
            seed: 11,
            start_scheme: Default::default(),
            mixed_precision: false,
            accelerate: false,
            keep_starts: false,
            screen: Default::default(),
            restarts: 0,
            refine: 0,
            short_runs: Default::default(),
            devices: Vec::new(),
            standard_errors: false,
            noise: false,
            df: Vec::new(),
            criterion: Default::default(),
            equal_scale: false,
        }
    }

    #[test]
    fn mixed_precision_on_cuda_batched_refuses_noise_and_t_by_name() {
        let x = [1.0, 2.0, 3.0];
        let job = |family: Family, noise: bool, mixed_precision: bool| Job {
            datasets: vec![&x[..]],
            inits: Vec::new(),
            settings: Settings { mixed_precision, noise, ..settings(family, vec![1]) },
            tuning: Tuning::default(),
            noise_supports: Vec::new(),
            given_starts: Vec::new(),
            weights: Vec::new(),
            fixed: Vec::new(),
            truncation: Vec::new(),
            censored: Vec::new(),
        };
        let refused = |j: &Job| match supported(j, EngineKind::CudaBatched) {
            Err(Error::Argument { arg, message }) => format!("{arg} {message}"),
            other => format!("{other:?}"),
        };
        assert!(refused(&job(Family::StudentT, false, true))
            .starts_with("control$precision = \"mixed\" does not fit Student's t"));
        assert!(
            refused(&job(Family::Normal, true, true)).starts_with("control$precision = \"mixed\" does not fit a noise")
        );
        for (family, noise, mixed) in [(Family::StudentT, true, false), (Family::Normal, false, true)] {
            assert!(supported(&job(family, noise, mixed), EngineKind::CudaBatched).is_ok());
        }
        for kind in [EngineKind::Cpu, EngineKind::CudaStreams] {
            assert!(supported(&job(Family::StudentT, true, true), kind).is_ok());
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
                    accelerate: true,
                    keep_starts: true,
                    restarts: 2,
                    standard_errors: true,
                    ..settings(Family::Normal, components.clone())
                },
                tuning: Tuning::default(),
                noise_supports: Vec::new(),
                given_starts: Vec::new(),
                weights: Vec::new(),
                fixed: Vec::new(),
                truncation: Vec::new(),
                censored: Vec::new(),
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
