//! The `cuda-batched` engine: whole EM fits on the device. One launch takes a
//! chunk of datasets (packed end to end, longest first) and all their starts,
//! and runs every (dataset, start) fit to its end inside the kernel
//! (kernels/em_batched.cu): launches do not grow with iterations or starts.
//! Starting values come from the CPU (the same generator as every engine);
//! only each start's final parameters, log-likelihood, iterations and outcome
//! come back, and the winner is chosen on the host by the shared `Best` rule.
//! Two host workers with a stream each take chunks in turn, so one chunk's
//! transfers overlap the other's compute.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

use super::{pool, Best};
use crate::dataset::Prepared;
use crate::error::Error;
use crate::fit::Progress;
use crate::gpu::kernels::Batched;
use crate::gpu::{contained, fault_injected, Gpu};
use crate::init::initial_params;
use crate::job::{Job, Params};
use crate::start::{Outcome, StartFit};

const THREADS_PER_BLOCK: u32 = 128; // = __launch_bounds__ in em_batched.cu
/// From this mean dataset size on, a warp per fit beats a lane per fit (below
/// it a warp's shuffles cost more than its share of a pass).
const WARP_MIN_MEAN_N: usize = 256;

/// The kernels' argument block: `struct Batch` of em_batched.cu, field for field.
#[repr(C)]
#[derive(Clone, Copy)]
struct BatchArgs {
    obs: u64,
    ds_offset: u64,
    ds_n: u64,
    ds_hsum: u64,
    ds_spread: u64,
    fit_ds: u64,
    init: u64,
    out_params: u64,
    out_ll: u64,
    out_info: u64,
    n_fits: i32,
    max_iters: i32,
    epsilon: f64,
    next: u64,
    stop: u64,
}

// SAFETY: plain old data with the C layout of `struct Batch`.
unsafe impl DeviceRepr for BatchArgs {}

/// How fits map onto threads (em_batched.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mapping {
    Lane,
    Warp,
}
const WORKERS: usize = 2;
/// How often a running kernel's progress is read back.
const PROGRESS_POLL: Duration = Duration::from_millis(200);
/// Most device memory one chunk may take (besides the free-memory bound), so
/// that even a huge call is several chunks that overlap.
const CHUNK_BYTES_MAX: usize = 2 << 30;

/// One launch's worth of work: datasets (indices into the job) and their fits.
struct Chunk {
    datasets: Vec<usize>,
    fits: usize,
}

pub fn run(
    job: &Job,
    prepared: &[Result<Prepared, String>],
    gpu: &Arc<Gpu>,
    threads: usize,
    cancel: &AtomicBool,
    progress: &Progress,
) -> Result<Vec<Best>, Error> {
    let k = job.components;
    let starts = job.starts as usize;
    // longest datasets first: lanes that take fits from the queue together
    // then run passes of similar length
    let mut order: Vec<usize> = (0..prepared.len()).filter(|&d| prepared[d].is_ok()).collect();
    let len = |d: usize| prepared[d].as_ref().map_or(0, |p| p.x.len());
    order.sort_by_key(|&d| std::cmp::Reverse(len(d)));

    let free = contained("querying GPU memory", || gpu.ctx.mem_get_info().map_err(|e| format!("{e:?}")))
        .map_err(Error::Gpu)?
        .0;
    // BULKEM_CHUNK_BYTES lowers the bound, so tests can check that results do
    // not depend on chunking
    let limit = std::env::var("BULKEM_CHUNK_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(CHUNK_BYTES_MAX);
    let chunk_bytes = (free / (2 * WORKERS)).min(limit);
    let fit_bytes = (6 * k + 4) * 8;
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut current = Chunk { datasets: Vec::new(), fits: 0 };
    let mut bytes = 0;
    for d in order {
        let need = 16 * len(d) + 32 + starts * fit_bytes;
        if !current.datasets.is_empty() && (bytes + need > chunk_bytes || current.fits + starts > i32::MAX as usize / 2) {
            chunks.push(std::mem::replace(&mut current, Chunk { datasets: Vec::new(), fits: 0 }));
            bytes = 0;
        }
        bytes += need;
        current.fits += starts;
        current.datasets.push(d);
    }
    if !current.datasets.is_empty() {
        chunks.push(current);
    }

    let bests: Vec<Mutex<Best>> = prepared.iter().map(|_| Mutex::new(Best::new(job.keep_starts))).collect();
    let kernel = gpu.kernels.batched(job.family, k, job.mixed_precision).map_err(Error::Gpu)?;
    // One mapping for the whole call, so results do not depend on chunking.
    // A warp per fit won wherever datasets are not tiny, a lane per fit on
    // B5's 100-observation datasets (inst/bench/results-batched-mapping.md);
    // BULKEM_MAPPING forces one, for that measurement.
    let (valid, obs) = prepared.iter().flatten().fold((0, 0), |(v, o), ds| (v + 1, o + ds.x.len()));
    let mapping = match std::env::var("BULKEM_MAPPING").as_deref() {
        Ok("lane") => Mapping::Lane,
        Ok("warp") => Mapping::Warp,
        _ if obs >= WARP_MIN_MEAN_N * valid => Mapping::Warp,
        _ => Mapping::Lane,
    };
    let next_chunk = AtomicUsize::new(0);
    let host_threads = threads.max(1);
    let worker = || -> Result<(), Error> {
        let stream = contained("creating a CUDA stream", || {
            gpu.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
            gpu.ctx.new_stream().map_err(|e| format!("{e:?}"))
        })
        .map_err(Error::Gpu)?;
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            let Some(chunk) = chunks.get(next_chunk.fetch_add(1, Ordering::Relaxed)) else { return Ok(()) };
            run_chunk(job, prepared, chunk, gpu, &kernel, mapping, &stream, host_threads, &bests, cancel, progress)?;
        }
    };
    pool::run_workers(WORKERS.min(chunks.len().max(1)), "cuda-batched", worker)?;
    Ok(bests.into_iter().map(|b| b.into_inner().unwrap_or_else(PoisonError::into_inner)).collect())
}

/// The chunk's inputs in the kernel's layout (see em_batched.cu).
struct Packed {
    obs: Vec<f64>, // x, g interleaved
    ds_offset: Vec<i64>,
    ds_n: Vec<i32>,
    ds_hsum: Vec<f64>,
    ds_spread: Vec<f64>,
    fit_ds: Vec<i32>,
    init: Vec<f64>,
    /// whether each fit's start could be drawn
    drawn: Vec<bool>,
}

#[allow(clippy::too_many_arguments)]
fn run_chunk(
    job: &Job,
    prepared: &[Result<Prepared, String>],
    chunk: &Chunk,
    gpu: &Gpu,
    kernel: &Batched,
    mapping: Mapping,
    stream: &Arc<CudaStream>,
    host_threads: usize,
    bests: &[Mutex<Best>],
    cancel: &AtomicBool,
    progress: &Progress,
) -> Result<(), Error> {
    let k = job.components;
    let starts = job.starts as usize;
    let clock = std::time::Instant::now();
    // Pack the chunk in parallel, dataset by dataset, straight into the
    // kernel's arrays: observations as (x, g) pairs, and the starting values
    // of fits j*S .. (j+1)*S of the chunk's dataset j, drawn on the CPU (the
    // same generator as every engine). A start that could not be drawn keeps
    // NaN parameters (the kernel fails it at once) and is recorded as such.
    let nd = chunk.datasets.len();
    let n_fits = nd * starts;
    let sets: Vec<&Prepared> = chunk.datasets.iter().filter_map(|&d| prepared[d].as_ref().ok()).collect();
    if sets.len() != nd {
        return Err(Error::Internal("an invalid dataset reached cuda-batched".into()));
    }
    let mut p = Packed {
        obs: Vec::new(),
        ds_offset: Vec::with_capacity(nd),
        ds_n: sets.iter().map(|ds| ds.x.len() as i32).collect(),
        ds_hsum: sets.iter().map(|ds| ds.h_sum).collect(),
        ds_spread: sets.iter().map(|ds| ds.spread).collect(),
        fit_ds: vec![0; n_fits],
        init: vec![f64::NAN; n_fits * 3 * k],
        drawn: vec![false; n_fits],
    };
    let mut total = 0usize;
    for ds in &sets {
        p.ds_offset.push(total as i64);
        total += ds.x.len();
    }
    p.obs = vec![0.0f64; 2 * total];
    {
        let (mut obs, mut fit_ds, mut init, mut drawn) =
            (&mut p.obs[..], &mut p.fit_ds[..], &mut p.init[..], &mut p.drawn[..]);
        let mut pieces = Vec::with_capacity(nd);
        for ds in &sets {
            let (o, rest_o) = std::mem::take(&mut obs).split_at_mut(2 * ds.x.len());
            let (f, rest_f) = std::mem::take(&mut fit_ds).split_at_mut(starts);
            let (i, rest_i) = std::mem::take(&mut init).split_at_mut(starts * 3 * k);
            let (d, rest_d) = std::mem::take(&mut drawn).split_at_mut(starts);
            pieces.push(Mutex::new((o, f, i, d)));
            (obs, fit_ds, init, drawn) = (rest_o, rest_f, rest_i, rest_d);
        }
        pool::for_each_index(nd, host_threads, cancel, |j| {
            let ds = sets[j];
            let mut piece = pieces[j].lock().unwrap_or_else(PoisonError::into_inner);
            let (obs, fit_ds, init, drawn) = &mut *piece;
            for (i, (x, g)) in ds.x.iter().zip(&ds.g).enumerate() {
                obs[2 * i] = *x;
                obs[2 * i + 1] = *g;
            }
            for s in 0..starts {
                fit_ds[s] = j as i32;
                if let Some(start) = initial_params(job.family, ds, k, job.seed, s as u32) {
                    let row = &mut init[s * 3 * k..(s + 1) * 3 * k];
                    row[..k].copy_from_slice(&start.alpha[..k]);
                    row[k..2 * k].copy_from_slice(&start.mu[..k]);
                    row[2 * k..].copy_from_slice(&start.shape[..k]);
                    drawn[s] = true;
                }
            }
        })?;
    }
    progress.lap("batched: starts and packing", clock);
    if n_fits == 0 || cancel.load(Ordering::Relaxed) {
        return Ok(());
    }
    let (ll, info, out_params, in_flight) = launch(gpu, kernel, mapping, stream, &p, job, cancel, progress).map_err(Error::Gpu)?;
    if cancel.load(Ordering::Relaxed) {
        return Ok(());
    }
    let clock = std::time::Instant::now();
    // each dataset's fits are contiguous: record them dataset by dataset, in
    // parallel; only log-likelihoods and outcomes came back, so the winners'
    // parameters are fetched afterwards
    let failed = AtomicBool::new(false);
    let params_of = |v: &[f64], f: usize| {
        let mut out = Params::zeroed(k);
        out.alpha[..k].copy_from_slice(&v[f * 3 * k..f * 3 * k + k]);
        out.mu[..k].copy_from_slice(&v[f * 3 * k + k..f * 3 * k + 2 * k]);
        out.shape[..k].copy_from_slice(&v[f * 3 * k + 2 * k..f * 3 * k + 3 * k]);
        out
    };
    pool::for_each_index(nd, host_threads, cancel, |j| {
        let mut best = bests[chunk.datasets[j]].lock().unwrap_or_else(PoisonError::into_inner);
        let mut passes = 0;
        for s in 0..starts {
            let f = j * starts + s;
            if !p.drawn[f] {
                best.record(s as u32, None, None);
                continue;
            }
            let iterations = info[2 * f].max(0) as u32;
            let Some(outcome) = Outcome::from_code(info[2 * f + 1]) else {
                failed.store(true, Ordering::Relaxed);
                return;
            };
            passes += iterations as usize + 1;
            let fit = StartFit { params: Params::zeroed(k), loglik: ll[f], iterations, outcome };
            best.record(s as u32, Some(params_of(&p.init, f)), Some(fit));
        }
        progress.em_iterations.fetch_add(passes, Ordering::Relaxed);
    })?;
    if failed.load(Ordering::Relaxed) {
        return Err(Error::Gpu("em_batched left a fit without a result".into()));
    }
    let winners: Vec<(usize, i32)> = chunk
        .datasets
        .iter()
        .enumerate()
        .filter_map(|(j, &d)| {
            let best = bests[d].lock().unwrap_or_else(PoisonError::into_inner);
            best.winner.as_ref().map(|w| (d, (j * starts + w.start as usize) as i32))
        })
        .collect();
    let idx: Vec<i32> = winners.iter().map(|w| w.1).collect();
    let rows = gather(progress, kernel, stream, &out_params, &idx, 3 * k).map_err(Error::Gpu)?;
    for (i, &(d, _)) in winners.iter().enumerate() {
        if let Some(w) = bests[d].lock().unwrap_or_else(PoisonError::into_inner).winner.as_mut() {
            w.fit.params = params_of(&rows, i);
        }
    }
    progress.lap("batched: recording", clock);
    // done first, then the estimate out: the bar never steps back
    progress.done.fetch_add(n_fits, Ordering::Relaxed);
    progress.in_flight.fetch_sub(in_flight, Ordering::Relaxed);
    Ok(())
}

/// Per fit: log-likelihood and (iterations, outcome) on the host, the
/// parameters still on the device; and the fits counted in
/// `progress.in_flight` while the kernel ran.
type Results = (Vec<f64>, Vec<i32>, CudaSlice<f64>, usize);

/// The rows `idx` (of `width` values) of `src`, gathered on the device and
/// copied back.
fn gather(
    progress: &Progress,
    kernels: &Batched,
    stream: &Arc<CudaStream>,
    src: &CudaSlice<f64>,
    idx: &[i32],
    width: usize,
) -> Result<Vec<f64>, String> {
    if idx.is_empty() {
        return Ok(Vec::new());
    }
    contained("gathering the winning starts", || {
        let e = |what: &'static str| move |err: cudarc::driver::DriverError| format!("{what}: {err:?}");
        let idx_dev = stream.clone_htod(idx).map_err(e("uploading winners"))?;
        let total = idx.len() * width;
        let mut dst: CudaSlice<f64> = stream.alloc_zeros(total).map_err(e("allocating GPU memory"))?;
        let cfg = LaunchConfig { grid_dim: ((total as u32).div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let (n, w) = (idx.len() as i32, width as i32);
        // SAFETY: arguments match gather_rows(src, idx, n, width, dst); every
        // idx is a fit of this chunk, so below src's row count; dst holds
        // n * width values.
        unsafe { stream.launch_builder(&kernels.gather).arg(src).arg(&idx_dev).arg(&n).arg(&w).arg(&mut dst).launch(cfg) }
            .map_err(e("launching gather_rows"))?;
        progress.kernel_launches.fetch_add(1, Ordering::Relaxed);
        let rows = stream.clone_dtoh(&dst).map_err(e("downloading winners"))?;
        stream.synchronize().map_err(e("gathering winners"))?;
        Ok(rows)
    })
}

/// Uploads a packed chunk, runs em_batched over it, downloads the results.
/// While the kernel runs, the worker polls `cancel` and on an interrupt sets
/// the kernel's stop flag through a second stream.
#[allow(clippy::too_many_arguments)]
fn launch(
    gpu: &Gpu,
    kernels: &Batched,
    mapping: Mapping,
    stream: &Arc<CudaStream>,
    p: &Packed,
    job: &Job,
    cancel: &AtomicBool,
    progress: &Progress,
) -> Result<Results, String> {
    contained("running the cuda-batched engine", || {
        let k = job.components;
        let n_fits = p.fit_ds.len();
        let clock = std::time::Instant::now();
        let e = |what: &'static str| move |err: cudarc::driver::DriverError| format!("{what}: {err:?}");
        let up = |v: &[f64]| stream.clone_htod(v).map_err(e("uploading a chunk"));
        if fault_injected("oom") {
            stream.alloc_zeros::<f64>(1 << 60).map_err(e("allocating GPU memory"))?;
        }
        let obs = up(&p.obs)?;
        let ds_offset = stream.clone_htod(&p.ds_offset).map_err(e("uploading a chunk"))?;
        let ds_n = stream.clone_htod(&p.ds_n).map_err(e("uploading a chunk"))?;
        let ds_hsum = up(&p.ds_hsum)?;
        let ds_spread = up(&p.ds_spread)?;
        let fit_ds = stream.clone_htod(&p.fit_ds).map_err(e("uploading a chunk"))?;
        let init = up(&p.init)?;
        let out_params: CudaSlice<f64> = stream.alloc_zeros(n_fits * 3 * k).map_err(e("allocating GPU memory"))?;
        let out_ll: CudaSlice<f64> = stream.alloc_zeros(n_fits).map_err(e("allocating GPU memory"))?;
        // -1 marks a fit the kernel never finished
        let out_info: CudaSlice<i32> = stream.clone_htod(&vec![-1i32; 2 * n_fits]).map_err(e("allocating GPU memory"))?;
        let mut stop: CudaSlice<i32> = stream.alloc_zeros(1).map_err(e("allocating GPU memory"))?;

        let sms = gpu.ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(e("querying the GPU"))?;
        let occupancy = |f: &cudarc::driver::CudaFunction| {
            f.occupancy_max_active_blocks_per_multiprocessor(THREADS_PER_BLOCK, 0, None).map_err(e("querying occupancy"))
        };
        let (kernel, per_unit) = match mapping {
            Mapping::Lane => (&kernels.lane, 1u32),
            Mapping::Warp => (&kernels.warp, 32u32),
        };
        let units_per_block = THREADS_PER_BLOCK / per_unit;
        let blocks = (n_fits as u32).div_ceil(units_per_block).min(sms.max(1) as u32 * occupancy(kernel)?.max(1));
        let units = blocks * units_per_block;
        let next: CudaSlice<u32> = stream.clone_htod(&[units]).map_err(e("uploading a chunk"))?;
        let cfg = LaunchConfig {
            grid_dim: (if fault_injected("launch") { 0 } else { blocks }, 1, 1),
            block_dim: (THREADS_PER_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let ptr = |p: (u64, _)| p.0;
        let args = BatchArgs {
            obs: ptr(obs.device_ptr(stream)),
            ds_offset: ptr(ds_offset.device_ptr(stream)),
            ds_n: ptr(ds_n.device_ptr(stream)),
            ds_hsum: ptr(ds_hsum.device_ptr(stream)),
            ds_spread: ptr(ds_spread.device_ptr(stream)),
            fit_ds: ptr(fit_ds.device_ptr(stream)),
            init: ptr(init.device_ptr(stream)),
            out_params: ptr(out_params.device_ptr(stream)),
            out_ll: ptr(out_ll.device_ptr(stream)),
            out_info: ptr(out_info.device_ptr(stream)),
            n_fits: n_fits as i32,
            max_iters: job.max_iters.min(i32::MAX as u32) as i32,
            epsilon: job.epsilon,
            next: ptr(next.device_ptr(stream)),
            stop: ptr(stop.device_ptr(stream)),
        };
        stream.synchronize().map_err(e("uploading a chunk"))?;
        progress.lap("batched: upload", clock);
        // SAFETY: `args` is em_batched's `struct Batch` (same fields, order
        // and C layout); its pointers are live device buffers of this chunk
        // (they outlive the kernel: all are dropped after the final
        // synchronize): obs holds the chunk's observations as (x, g) pairs,
        // every per-dataset array one value per dataset, fit_ds n_fits indices
        // below the dataset count, init and out_params 3k values per fit,
        // out_info 2 per fit; next starts at the number of lanes or warps
        // launched.
        unsafe { stream.launch_builder(kernel).arg(&args).launch(cfg) }.map_err(e("launching em_batched"))?;
        progress.kernel_launches.fetch_add(1, Ordering::Relaxed);
        let launched = std::time::Instant::now();

        let done = stream.record_event(None).map_err(e("recording an event"))?;
        // a second stream: the compute stream is busy until the kernel ends
        let side = gpu.ctx.new_stream().map_err(e("creating a CUDA stream"))?;
        let mut stopping = false;
        let mut polled = std::time::Instant::now();
        let mut taken = [0u32];
        let mut reported = 0usize;
        while !done.try_is_complete().map_err(e("running em_batched"))? {
            if cancel.load(Ordering::Relaxed) && !stopping {
                side.memcpy_htod(&[1i32], &mut stop).map_err(e("stopping em_batched"))?;
                side.synchronize().map_err(e("stopping em_batched"))?;
                stopping = true;
            }
            if polled.elapsed() >= PROGRESS_POLL {
                // fits taken from the queue beyond the first `units`: about as
                // many have finished, which is what the progress bar shows
                side.memcpy_dtoh(&next, &mut taken).map_err(e("reading progress"))?;
                side.synchronize().map_err(e("reading progress"))?;
                let finished = (taken[0].saturating_sub(units) as usize).min(n_fits);
                if finished > reported {
                    progress.in_flight.fetch_add(finished - reported, Ordering::Relaxed);
                    reported = finished;
                }
                polled = std::time::Instant::now();
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let clock = progress.lap("batched: kernel", launched);
        let ll = stream.clone_dtoh(&out_ll).map_err(e("downloading results"))?;
        let info = stream.clone_dtoh(&out_info).map_err(e("downloading results"))?;
        stream.synchronize().map_err(e("running em_batched"))?;
        progress.lap("batched: download", clock);
        Ok((ll, info, out_params, reported))
    })
}
