//! The whole call: check and rescale every dataset, run the starts on an
//! engine, and turn each dataset's best start into a `Fit` in the data's
//! own units.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::dataset::{prepare, Prepared};
use crate::engine::{cpu, cuda_batched, cuda_streams, pool, Best, StartRecord};
use crate::error::Error;
use crate::family;
use crate::job::{Fit, Job, Status};
use crate::start::Outcome;

/// Progress and work counters of a call, readable from another thread while
/// it runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Start-fits to run (known once the datasets are checked).
    pub total: AtomicUsize,
    /// Start-fits finished.
    pub done: AtomicUsize,
    /// Start-fits a running GPU kernel has finished, about (not yet in `done`).
    pub in_flight: AtomicUsize,
    /// E-step passes over a dataset, summed over all starts.
    pub em_iterations: AtomicUsize,
    /// CUDA kernel launches (GPU engines only).
    pub kernel_launches: AtomicUsize,
    /// Wall time of the call's phases, in seconds, in the order they first
    /// ran (summed over chunks and workers where a phase repeats): checking
    /// and rescaling the datasets, the engine and its own phases, turning the
    /// best starts into fits.
    pub phases: std::sync::Mutex<Vec<(&'static str, f64)>>,
}

impl Progress {
    /// Adds the time since `since` to phase `name`; returns now.
    pub fn lap(&self, name: &'static str, since: std::time::Instant) -> std::time::Instant {
        let now = std::time::Instant::now();
        let secs = now.duration_since(since).as_secs_f64();
        let mut phases = self.phases.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match phases.iter_mut().find(|(n, _)| *n == name) {
            Some((_, total)) => *total += secs,
            None => phases.push((name, secs)),
        }
        now
    }
}

/// Which engine runs the starts; every engine gives the same answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Cpu,
    CudaStreams,
    CudaBatched,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::Cpu, Engine::CudaStreams, Engine::CudaBatched];

    pub fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The name R uses for the engine (control$engine).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Cpu => "cpu",
            Engine::CudaStreams => "cuda-streams",
            Engine::CudaBatched => "cuda-batched",
        }
    }
}

/// Fits every dataset of `job` with `engine`, using `threads` host threads
/// (CPU workers, or GPU stream workers). Setting `cancel` makes it return
/// `Error::Cancelled` soon after.
pub fn fit(job: &Job, engine: Engine, threads: usize, cancel: &AtomicBool, progress: &Progress) -> Result<Vec<Fit>, Error> {
    job.validate()?;
    // Set up the GPU before any work, so an unusable one fails fast.
    let gpu = match engine {
        Engine::Cpu => None,
        Engine::CudaStreams | Engine::CudaBatched => Some(crate::gpu::gpu().map_err(Error::GpuUnavailable)?),
    };
    let clock = std::time::Instant::now();
    let prepared = parallel_map(job.num_datasets(), threads, cancel, |d| {
        prepare(job.dataset(d), job.family, job.components)
    })?;
    let clock = progress.lap("prepare", clock);
    let valid = prepared.iter().filter(|p| p.is_ok()).count();
    // added, not stored: one call may run several jobs (one per K)
    progress.total.fetch_add(valid * job.starts as usize, Ordering::Relaxed);
    let bests = match (engine, &gpu) {
        (Engine::CudaStreams, Some(gpu)) => cuda_streams::run(job, &prepared, gpu, threads, cancel, progress)?,
        (Engine::CudaBatched, Some(gpu)) => cuda_batched::run(job, &prepared, gpu, threads, cancel, progress)?,
        _ => cpu::run(job, &prepared, threads, cancel, progress)?,
    };
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    let clock = progress.lap("engine", clock);
    let fits = parallel_map(bests.len(), threads, cancel, |d| finish(job, d, &prepared[d], &bests[d]))?;
    progress.lap("finish", clock);
    Ok(fits)
}

/// One dataset's result from its best start.
fn finish(job: &Job, d: usize, prepared: &Result<Prepared, String>, best: &Best) -> Fit {
    let values = job.dataset(d);
    let n = values.len();
    let ds = match prepared {
        Ok(ds) => ds,
        Err(why) => return Fit::without_params(n, Status::Invalid, format!("dataset {why}"), 0),
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
    let Some(w) = &best.winner else {
        let reason = best.first_failure.map_or("", |(_, why)| why.describe());
        let message = format!("all {} random starts failed (the first because {reason})", job.starts);
        return Fit { starts, ..Fit::without_params(n, Status::Failed, message, best.starts_ok) };
    };
    let params = ds.unscale(&w.fit.params);
    let order = params.order_by_mu();
    let params = params.permuted(&order);
    let init = ds.unscale(&w.init).permuted(&order);
    let loglik = original_loglik(job, values, ds, &params);
    if !loglik.is_finite() {
        let message = "the best start's log-likelihood is not finite on the original data".to_string();
        return Fit::without_params(n, Status::Failed, message, best.starts_ok);
    }
    let (status, message) = match w.fit.outcome {
        Outcome::Converged => (Status::Converged, String::new()),
        _ => (
            Status::MaxIters,
            format!("stopped after max.iters = {} iterations before the log-likelihood settled", job.max_iters),
        ),
    };
    Fit {
        n,
        status,
        message,
        params: Some(params),
        init: Some(init),
        loglik,
        iterations: w.fit.iterations,
        best_start: Some(w.start),
        starts_ok: best.starts_ok,
        starts,
    }
}

/// Log-likelihood of `params` (original units) on the original `values`,
/// recomputed on the CPU whichever engine fitted them: one E-step pass, plus
/// the parameter-free Σh, which follows from the rescaled data's (for the
/// inverse Gaussian Σ −3/2 log x = Σ −3/2 log x' − 3/2 N log scale).
fn original_loglik(job: &Job, values: &[f64], ds: &Prepared, params: &crate::job::Params) -> f64 {
    let g: Vec<f64> = values.iter().map(|&x| family::aux(job.family, x)).collect();
    let h_sum = match job.family {
        crate::job::Family::InvGauss => ds.h_sum - 1.5 * values.len() as f64 * ds.scale.ln(),
        crate::job::Family::Normal => 0.0,
    };
    crate::estep::e_step(job.family, values, &g, params).ll + h_sum
}

/// All the cores this process may use (cgroup and affinity limits included).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f(0..n)` computed on `threads` threads, in index order.
fn parallel_map<T: Send + Sync>(
    n: usize,
    threads: usize,
    cancel: &AtomicBool,
    f: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>, Error> {
    let slots: Vec<OnceLock<T>> = (0..n).map(|_| OnceLock::new()).collect();
    pool::for_each_index(n, threads, cancel, |i| {
        let _ = slots[i].set(f(i));
    })?;
    let out: Option<Vec<T>> = slots.into_iter().map(OnceLock::into_inner).collect();
    out.ok_or(Error::Cancelled)
}
