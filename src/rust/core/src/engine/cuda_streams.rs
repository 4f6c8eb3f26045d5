//! The `cuda-streams` engine: the 2015 bulkem design, done right. Host worker
//! threads each own a CUDA stream and take whole datasets from a shared
//! counter. A dataset is uploaded once; then every EM iteration of its active
//! starts is one em_obs_terms launch, ONE em_fused_sum launch that reduces all
//! 1 + 3K sums of every active start, one small copy back, and the M-step and
//! convergence test on the host through the same `EmState` as the CPU engine.
//! Starts come from the same generator as the CPU engine's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::best::{Best, Bests};
use super::counters::Counters;
use super::{queue, Engine, Work};
use crate::dataset::Prepared;
use crate::em::EmState;
use crate::error::Error;
use crate::family;
use crate::gpu::kernels::{MAX_GRID_Y, TERMS_PER_START};
use crate::gpu::{contained, fault_injected, Gpu};

use crate::limits::MAX_COMPONENTS;
use crate::outcome::Outcome;
use crate::params::{Family, Params, Stats, SumRow};
use crate::{exgauss, student};

/// Device memory one worker may use for per-observation terms; starts beyond
/// it are processed in several chunks per iteration.
const WORKER_BUDGET_BYTES: usize = 512 << 20;

pub struct CudaStreams {
    pub gpu: Arc<Gpu>,
    pub workers: usize,
}

impl Engine for CudaStreams {
    fn run(&self, work: &Work, bests: &Bests, cancel: &AtomicBool, counters: &Counters) -> Result<(), Error> {
        let gpu = &self.gpu;
        let valid = work.valid();
        let free = contained("querying GPU memory", || gpu.ctx.mem_get_info().map_err(|e| format!("{e:?}")))
            .map(|(free, _)| free)
            .map_err(Error::Gpu)?;
        let workers = self.workers.clamp(1, valid.len().max(1));
        let budget = (free / (2 * workers)).min(WORKER_BUDGET_BYTES);
        // each worker: its own stream and buffers, datasets from the queue
        let setup = || {
            contained("creating a CUDA stream", || {
                gpu.ctx.bind_to_thread().map_err(|e| format!("binding the CUDA context: {e:?}"))?;
                let stream = gpu.ctx.new_stream().map_err(|e| format!("creating a CUDA stream: {e:?}"))?;
                Ok((stream, Buffers::default()))
            })
            .map_err(Error::Gpu)
        };
        queue::run(valid.len(), workers, cancel, setup, |(stream, bufs), i| {
            let d = valid[i];
            let Some(ds) = work.datasets[d] else { return Ok(()) };
            // a restart round adds to what the rounds before recorded
            let before = bests.with(d, |b| b.clone());
            let best = contained("running the cuda-streams engine", || {
                fit_dataset(work, d, ds, before, gpu, stream, bufs, budget, cancel, counters)
            })
            .map_err(Error::Gpu)?;
            bests.with(d, |b| *b = best);
            Ok(())
        })
    }
}

/// One worker's device buffers, grown as datasets need and reused.
#[derive(Default)]
struct Buffers {
    x: Option<CudaSlice<f64>>,
    g: Option<CudaSlice<f64>>,
    noise_t: Option<CudaSlice<f64>>,
    w: Option<CudaSlice<f64>>,
    terms: Option<CudaSlice<f64>>,
    per_obs: Option<CudaSlice<f64>>,
    sums: Option<CudaSlice<f64>>,
}

/// A buffer of at least `len` values on `stream`, reallocated only to grow.
fn ensure<'a>(
    slot: &'a mut Option<CudaSlice<f64>>,
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<&'a mut CudaSlice<f64>, String> {
    if slot.as_ref().is_none_or(|b| b.len() < len) {
        *slot = None; // free the old buffer first
        let len = if fault_injected("oom") { 1 << 60 } else { len.max(1) };
        *slot = Some(
            stream
                .alloc_zeros::<f64>(len)
                .map_err(|e| format!("allocating {} MB on the GPU: {e:?}", (len * 8) >> 20))?,
        );
    }
    slot.as_mut().ok_or_else(|| "buffer missing".to_string())
}

#[allow(clippy::too_many_arguments)]
fn fit_dataset(
    work: &Work,
    d: usize,
    ds: &Prepared,
    mut best: Best,
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    bufs: &mut Buffers,
    budget: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<Best, String> {
    let t = &work.task;
    let (n, k) = (ds.x.len(), t.k);
    // with a noise component, one more sum: its S0; Student's t has five
    // sums per component, the ex-Gaussian four
    let noise = ds.noise_terms();
    let per_component = match t.family {
        Family::StudentT => 5,
        Family::ExGauss => 4,
        _ => 3,
    };
    let rows = 1 + per_component * k + noise.is_some() as usize;
    let per_start_bytes = rows * n * std::mem::size_of::<f64>();
    // a launch's starts are its grid's y dimension
    let chunk = (budget / per_start_bytes).clamp(1, (t.starts as usize).min(MAX_GRID_Y));

    let x = ensure(&mut bufs.x, stream, n)?;
    stream.memcpy_htod(&ds.x, &mut x.slice_mut(0..n)).map_err(|e| format!("uploading data: {e:?}"))?;
    let g = ensure(&mut bufs.g, stream, n)?;
    stream.memcpy_htod(&ds.g, &mut g.slice_mut(0..n)).map_err(|e| format!("uploading data: {e:?}"))?;
    if let Some(t) = noise {
        let nt = ensure(&mut bufs.noise_t, stream, n)?;
        stream.memcpy_htod(t, &mut nt.slice_mut(0..n)).map_err(|e| format!("uploading data: {e:?}"))?;
    }
    if let Some(w) = &ds.w {
        let wd = ensure(&mut bufs.w, stream, n)?;
        stream.memcpy_htod(w, &mut wd.slice_mut(0..n)).map_err(|e| format!("uploading weights: {e:?}"))?;
    }
    ensure(&mut bufs.terms, stream, chunk * TERMS_PER_START)?;
    ensure(&mut bufs.per_obs, stream, chunk * rows * n)?;
    ensure(&mut bufs.sums, stream, chunk * rows)?;
    let (Some(x), Some(g), Some(terms_dev), Some(per_obs), Some(sums_dev)) =
        (&bufs.x, &bufs.g, &mut bufs.terms, &mut bufs.per_obs, &mut bufs.sums)
    else {
        return Err("buffer missing".into());
    };
    let noise_t = match noise {
        Some(_) => Some(bufs.noise_t.as_ref().ok_or("buffer missing")?),
        None => None,
    };
    let weights = match &ds.w {
        Some(_) => Some(bufs.w.as_ref().ok_or("buffer missing")?),
        None => None,
    };

    let mut active: Vec<(u32, Params, EmState)> = Vec::with_capacity(t.starts as usize);
    for s in t.first_start..t.first_start + t.starts {
        match work.initial_params(d, s) {
            Some(init) => active.push((s, init, EmState::new(init, t.accelerate))),
            None => {
                best.record(s, None, None, false);
                counters.done.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let mut terms_host = vec![0.0; chunk * TERMS_PER_START];
    let mut sums_host = vec![0.0; chunk * rows];
    while !active.is_empty() {
        if cancel.load(Ordering::Relaxed) {
            return Ok(best);
        }
        let mut still = Vec::with_capacity(active.len());
        for group in active.chunks(chunk) {
            let a = group.len();
            for (j, (_, _, state)) in group.iter().enumerate() {
                let dst = &mut terms_host[j * TERMS_PER_START..(j + 1) * TERMS_PER_START];
                // one row of MAX_COMPONENTS per term, as em_obs_terms reads them
                let put = |rows: &[[f64; MAX_COMPONENTS]], dst: &mut [f64]| {
                    for (row, d) in rows.iter().zip(dst.chunks_exact_mut(MAX_COMPONENTS)) {
                        d.copy_from_slice(row);
                    }
                };
                if t.family.has_df() {
                    put(&student::kernel_rows(&state.params), dst);
                } else if t.family == Family::ExGauss {
                    put(&exgauss::kernel_rows(&state.params), dst);
                } else {
                    let terms = family::terms(t.family, &state.params);
                    put(&[terms.c, terms.k, terms.mu], dst);
                }
                dst[TERMS_PER_START - 1] = state.params.noise.ln();
            }
            stream
                .memcpy_htod(&terms_host[..a * TERMS_PER_START], &mut terms_dev.slice_mut(0..a * TERMS_PER_START))
                .map_err(|e| format!("uploading parameters: {e:?}"))?;
            gpu.kernels.obs_terms(stream, x, g, n, k, t.family, terms_dev, noise_t, weights, per_obs, a)?;
            gpu.kernels.fused_sum(stream, per_obs, n, rows, sums_dev, a)?;
            counters.kernel_launches.fetch_add(2, Ordering::Relaxed);
            stream
                .memcpy_dtoh(&sums_dev.slice(0..a * rows), &mut sums_host[..a * rows])
                .map_err(|e| format!("downloading sums: {e:?}"))?;
            stream.synchronize().map_err(|e| format!("running the EM kernels: {e:?}"))?;
            counters.em_iterations.fetch_add(a, Ordering::Relaxed);
            for (j, &(s, init, mut state)) in group.iter().enumerate() {
                let sums = &sums_host[j * rows..(j + 1) * rows];
                let stats = match t.family {
                    Family::StudentT => {
                        let st = Stats::from_sums(sums, k, &student::SUM_ROWS);
                        student::finish_stats(st, Stats::sum_row(sums, k, student::LOG_U_ROW), &state.params)
                    }
                    Family::ExGauss => Stats { df: state.params.df, ..Stats::from_sums(sums, k, &exgauss::SUM_ROWS) },
                    _ => Stats::from_sums(sums, k, &[SumRow::S0, SumRow::S1, SumRow::S2]),
                };
                match state.advance(t.family, ds, &stats, t.max_iters, t.epsilon) {
                    Some(fit) => {
                        debug_assert!(fit.outcome != Outcome::Cancelled);
                        let spurious = t.screen.spurious_on(t.family, &fit.params, &ds.x, ds.total);
                        best.record(s, Some(init), Some(fit), spurious);
                        counters.done.fetch_add(1, Ordering::Relaxed);
                    }
                    None => still.push((s, init, state)),
                }
            }
        }
        active = still;
    }
    Ok(best)
}
