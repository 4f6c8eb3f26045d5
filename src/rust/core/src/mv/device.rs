//! Multivariate fits on GPUs (control$engine = "cuda-batched"): every
//! (dataset, start) fit of a round runs whole on the device, a warp each
//! (kernels/em_mv.cu, which mirrors em.rs), from the starts the host draws
//! (starts.rs). Datasets go up in chunks of at most CHUNK_VALUES values,
//! the starts of a dataset side by side (the warps of a block read the
//! same observations); with several GPUs each takes every other chunk. The
//! fits' ends come back as `MvStartFit`s and are recorded on the host as
//! the CPU engine's are.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig, PushKernelArg};

use super::data::MvData;
use super::em::MvStartFit;
use super::model::{Model, MvParams};
use crate::engine::counters::Counters;
use crate::engine::queue;
use crate::error::Error;
use crate::gpu::kernels::{as_int, MV_MAX_VARIABLES};
use crate::gpu::prelude::MV_THREADS;
use crate::gpu::{contained, gpu_devices, Gpu};
use crate::outcome::Outcome;

/// Values of data one launch takes at most (512 MiB).
const CHUNK_VALUES: usize = 1 << 26;
/// Fits one launch takes at most: the call checks for an interrupt between
/// launches (the kernel has no stop flag yet), so a launch is kept to about
/// a second of M1's fits (65,536 of them: 0.45 s on an H100).
const CHUNK_FITS: usize = 1 << 16;

/// The GPUs multivariate fits run on.
pub struct MvGpus {
    gpus: Vec<Arc<Gpu>>,
}

/// One fit to run: its dataset (an index into the prepared datasets), its
/// start's initial parameters.
pub struct Item {
    pub dataset: usize,
    pub init: MvParams,
}

fn fail(what: &'static str) -> impl Fn(DriverError) -> String {
    move |err| format!("{what}: {err:?}")
}

impl MvGpus {
    /// The GPUs of `devices` (every GPU when empty), set up.
    pub fn new(devices: &[usize], d: usize) -> Result<MvGpus, Error> {
        if d > MV_MAX_VARIABLES {
            return Err(Error::Argument {
                arg: "control$engine",
                message: format!(
                    "= \"cuda-batched\" fits at most {MV_MAX_VARIABLES} variables; these data have {d}: use engine = \"cpu\""
                ),
            });
        }
        let gpus = gpu_devices(devices).map_err(Error::GpuUnavailable)?;
        Ok(MvGpus { gpus })
    }

    /// Runs the fit of every (dataset, start) of `work` (a dataset's starts
    /// consecutive) on the GPUs, in launches of CHUNK_FITS fits at most, one
    /// wave of launches (one per GPU) at a time. While a wave runs, the host
    /// threads draw the next wave's starts (`draw`: the same draws as the
    /// CPU engine's) and record the last wave's fits (`record`; a start
    /// that could not be drawn is recorded as `None`), so that on M1 the
    /// starts and the recording cost little beyond the kernels.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        prepared: &[Result<MvData, String>],
        work: &[(usize, u32)],
        draw: impl Fn(usize, u32) -> Option<MvParams> + Sync,
        record: impl Fn(usize, u32, Option<MvStartFit>) + Sync,
        (k, model, max_iters, epsilon): (usize, Model, u32, f64),
        threads: usize,
        cancel: &AtomicBool,
        counters: &Counters,
    ) -> Result<(), Error> {
        let launches = chunks(prepared, work);
        let waves: Vec<&[Range<usize>]> = launches.chunks(self.gpus.len().max(1)).collect();
        // the starts of one wave's launches, on every thread
        let draw_wave = |wave: &[Range<usize>]| -> Result<Vec<Launch>, Error> {
            let clock = Instant::now();
            let mut out = Vec::with_capacity(wave.len());
            for range in wave {
                let inits = queue::map(range.len(), threads, cancel, |i| {
                    work.get(range.start + i).and_then(|&(d, start)| draw(d, start))
                })?;
                let mut launch = Launch { items: Vec::with_capacity(inits.len()), keys: Vec::new() };
                for (&(dataset, start), init) in work[range.clone()].iter().zip(inits) {
                    match init {
                        Some(init) => {
                            launch.items.push(Item { dataset, init });
                            launch.keys.push((dataset, start));
                        }
                        None => {
                            record(dataset, start, None);
                            counters.done.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                out.push(launch);
            }
            counters.lap("cuda-batched: starts", clock);
            Ok(out)
        };
        let record_wave = |fitted: Vec<Ran>| -> Result<(), Error> {
            let clock = Instant::now();
            for Ran { keys, fits } in fitted {
                let fits: Vec<Mutex<Option<MvStartFit>>> = fits.into_iter().map(|f| Mutex::new(Some(f))).collect();
                queue::for_each_light(keys.len(), threads, cancel, |i| {
                    let fit = fits.get(i).and_then(|f| f.lock().unwrap_or_else(PoisonError::into_inner).take());
                    if let (Some(&(d, start)), Some(fit)) = (keys.get(i), fit) {
                        record(d, start, Some(fit));
                    }
                })?;
            }
            counters.lap("cuda-batched: record", clock);
            Ok(())
        };
        let mut next = match waves.first() {
            Some(wave) => draw_wave(wave)?,
            None => return Ok(()),
        };
        let mut fitted = Vec::new();
        for w in 0..waves.len() {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let current = std::mem::take(&mut next);
            let clock = Instant::now();
            let (ran, host) = std::thread::scope(|scope| {
                let handles: Vec<_> = current
                    .iter()
                    .zip(&self.gpus)
                    .map(|(launch, gpu)| {
                        scope.spawn(move || {
                            run_chunk(gpu, prepared, &launch.items, k, model, max_iters, epsilon)
                                .map_err(|e| Error::Gpu(format!("GPU {}: {e}", gpu.ordinal)))
                        })
                    })
                    .collect();
                // meanwhile, on the host: the last wave's fits recorded, the
                // next wave's starts drawn
                let host = record_wave(std::mem::take(&mut fitted))
                    .and_then(|()| waves.get(w + 1).map_or(Ok(Vec::new()), |wave| draw_wave(wave)));
                let ran: Vec<Result<Vec<MvStartFit>, Error>> = handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(Error::Internal("a GPU worker panicked".into()))))
                    .collect();
                (ran, host)
            });
            counters.lap_kernel("cuda-batched: kernels", clock);
            next = host?;
            for (launch, fits) in current.into_iter().zip(ran) {
                let fits = fits?;
                if fits.len() != launch.keys.len() {
                    return Err(Error::Internal("a launch returned another number of fits".into()));
                }
                counters.kernel_launches.fetch_add(1, Ordering::Relaxed);
                counters.done.fetch_add(fits.len(), Ordering::Relaxed);
                fitted.push(Ran { keys: launch.keys, fits });
            }
        }
        record_wave(fitted)
    }
}

/// One launch's fits to run, and the (dataset, start) each is.
#[derive(Default)]
struct Launch {
    items: Vec<Item>,
    keys: Vec<(usize, u32)>,
}

/// One launch's fits as they came back, and the (dataset, start) each is.
struct Ran {
    keys: Vec<(usize, u32)>,
    fits: Vec<MvStartFit>,
}

/// The work cut into launches: consecutive fits (a dataset's starts are
/// consecutive) until a launch holds CHUNK_VALUES values or CHUNK_FITS fits.
fn chunks(prepared: &[Result<MvData, String>], work: &[(usize, u32)]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut values, mut last) = (0, 0usize, usize::MAX);
    for (i, &(dataset, _)) in work.iter().enumerate() {
        let size = prepared
            .get(dataset)
            .and_then(|p| p.as_ref().ok())
            .map_or(0, |m| m.z.len() + m.w.as_ref().map_or(0, Vec::len));
        let new_dataset = dataset != last;
        if i > start && ((new_dataset && values + size > CHUNK_VALUES) || i - start >= CHUNK_FITS) {
            out.push(start..i);
            start = i;
            values = 0;
            last = usize::MAX;
        }
        if dataset != last {
            values += size;
            last = dataset;
        }
    }
    if start < work.len() {
        out.push(start..work.len());
    }
    out
}

/// One launch: the chunk's datasets and starts up, em_mv, the fits down.
fn run_chunk(
    gpu: &Gpu,
    prepared: &[Result<MvData, String>],
    items: &[Item],
    k: usize,
    model: Model,
    max_iters: u32,
    epsilon: f64,
) -> Result<Vec<MvStartFit>, String> {
    let d = items.first().map_or(1, |i| i.init.d);
    let noise = items
        .first()
        .and_then(|i| prepared.get(i.dataset))
        .and_then(|p| p.as_ref().ok())
        .is_some_and(|m| m.log_noise.is_some());
    // weighted if a dataset of the chunk is: the others' weights are 1,
    // which leaves their fits as the unweighted kernel's, bit for bit
    let weighted =
        items.iter().any(|i| prepared.get(i.dataset).is_some_and(|p| p.as_ref().is_ok_and(|m| m.w.is_some())));
    // a row: alpha, mu, sigma, t's df, the noise's weight
    let kt = if model.t { k } else { 0 };
    let width = k + k * d + k * d * d + kt + usize::from(noise);
    // the chunk's datasets, each once, in the items' order
    let mut z: Vec<f64> = Vec::new();
    let (mut offset, mut ns, mut fit_ds) = (Vec::new(), Vec::new(), Vec::with_capacity(items.len()));
    let (mut log_noise, mut nobs, mut wt) = (Vec::new(), Vec::new(), Vec::new());
    let mut init = Vec::with_capacity(items.len() * width);
    let mut last = usize::MAX;
    for item in items {
        if item.dataset != last {
            let data =
                prepared.get(item.dataset).and_then(|p| p.as_ref().ok()).ok_or("a fit of an unfitted dataset")?;
            offset.push(z.len() as i64);
            ns.push(data.n as i64);
            log_noise.push(data.log_noise.unwrap_or(0.0));
            nobs.push(data.total);
            z.extend_from_slice(&data.z);
            if weighted {
                match &data.w {
                    Some(w) => wt.extend_from_slice(w),
                    None => wt.extend(std::iter::repeat_n(1.0, data.n)),
                }
            }
            last = item.dataset;
        }
        fit_ds.push(as_int(offset.len() - 1, "datasets in one launch")?);
        let p = &item.init;
        if p.alpha.len() != k || p.mu.len() != k * d || p.sigma.len() != k * d * d || p.df.len() != kt {
            return Err("a start of the wrong shape".into());
        }
        init.extend_from_slice(&p.alpha);
        init.extend_from_slice(&p.mu);
        init.extend_from_slice(&p.sigma);
        init.extend_from_slice(&p.df);
        if noise {
            init.push(item.init.noise);
        }
    }
    let n_fits = as_int(items.len(), "fits in one launch")?;
    let max_iters = as_int(max_iters as usize, "max.iters")?;
    let kernel = gpu.kernels.mv(k, d, model.structure.kernel_code(), noise, model.kernel_family(), weighted)?;
    contained("running em_mv", || {
        let stream = gpu.ctx.default_stream();
        let up = |v: &[f64]| stream.clone_htod(v).map_err(fail("uploading a chunk"));
        let z_dev = up(if z.is_empty() { &[0.0] } else { &z })?;
        let wt_dev = up(if wt.is_empty() { &[0.0] } else { &wt })?;
        let nobs_dev = up(&nobs)?;
        let init_dev = up(&init)?;
        let offset_dev = stream.clone_htod(&offset).map_err(fail("uploading a chunk"))?;
        let n_dev = stream.clone_htod(&ns).map_err(fail("uploading a chunk"))?;
        let log_noise_dev = up(&log_noise)?;
        let fit_ds_dev = stream.clone_htod(&fit_ds).map_err(fail("uploading a chunk"))?;
        let mut out_dev: CudaSlice<f64> = stream.alloc_zeros(init.len()).map_err(fail("allocating GPU memory"))?;
        let mut ll_dev: CudaSlice<f64> = stream.alloc_zeros(items.len()).map_err(fail("allocating GPU memory"))?;
        let mut info_dev: CudaSlice<i32> =
            stream.alloc_zeros(2 * items.len()).map_err(fail("allocating GPU memory"))?;
        let blocks = (items.len() as u32).div_ceil(MV_THREADS / 32);
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (MV_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the arguments are em_mv's (z, wt, ds_offset, ds_n,
        // ds_nobs, ds_log_noise, fit_ds, init, out, out_loglik, out_info,
        // n_fits, max_iters, epsilon) in order and type; z holds every
        // dataset of the chunk (d x n values from its offset), wt (read by
        // the weighted kernel only) n weights per dataset from its offset
        // / d, ds_offset, ds_n, ds_nobs and ds_log_noise one value per
        // dataset,
        // fit_ds n_fits indices below the dataset count, init and out
        // `width` values per fit (the kernel's row for its K, D and N),
        // out_loglik one and out_info two per fit. All stay alive until the
        // synchronize below.
        unsafe {
            stream
                .launch_builder(&kernel)
                .arg(&z_dev)
                .arg(&wt_dev)
                .arg(&offset_dev)
                .arg(&n_dev)
                .arg(&nobs_dev)
                .arg(&log_noise_dev)
                .arg(&fit_ds_dev)
                .arg(&init_dev)
                .arg(&mut out_dev)
                .arg(&mut ll_dev)
                .arg(&mut info_dev)
                .arg(&n_fits)
                .arg(&max_iters)
                .arg(&epsilon)
                .launch(cfg)
        }
        .map_err(fail("launching em_mv"))?;
        let params = stream.clone_dtoh(&out_dev).map_err(fail("downloading the fits"))?;
        let logliks = stream.clone_dtoh(&ll_dev).map_err(fail("downloading the fits"))?;
        let info = stream.clone_dtoh(&info_dev).map_err(fail("downloading the fits"))?;
        stream.synchronize().map_err(fail("running em_mv"))?;
        items
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let row = params.get(i * width..(i + 1) * width).ok_or("a fit's row missing")?;
                let (iterations, code) = (info.get(2 * i).copied(), info.get(2 * i + 1).copied());
                let outcome = code.and_then(Outcome::from_code).ok_or("a fit without an outcome")?;
                Ok(MvStartFit {
                    params: MvParams {
                        k,
                        d,
                        alpha: row[..k].to_vec(),
                        mu: row[k..k + k * d].to_vec(),
                        sigma: row[k + k * d..k + k * d + k * d * d].to_vec(),
                        noise: if noise { row[width - 1] } else { 0.0 },
                        df: row[k + k * d + k * d * d..k + k * d + k * d * d + kt].to_vec(),
                    },
                    loglik: logliks.get(i).copied().unwrap_or(f64::NAN),
                    iterations: iterations.map_or(0, |v| v.max(0) as u32),
                    outcome,
                })
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Result<MvData, String> {
        let x: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.618).fract()).collect();
        MvData::prepare(&x, n, 2, None, false, false)
    }

    #[test]
    fn chunks_keep_a_datasets_starts_together() {
        let prepared = vec![data(10), data(20), data(30)];
        let work: Vec<(usize, u32)> = [0, 0, 1, 1, 2, 2].iter().map(|&dataset| (dataset, 0)).collect();
        assert_eq!(chunks(&prepared, &work), vec![0..6]);
        assert!(chunks(&prepared, &[]).is_empty());
        // a launch holds CHUNK_FITS fits at most, a dataset's starts split if need be
        let many: Vec<(usize, u32)> = (0..CHUNK_FITS as u32 + 5).map(|s| (usize::from(s >= 3), s)).collect();
        assert_eq!(chunks(&prepared, &many), vec![0..CHUNK_FITS, CHUNK_FITS..CHUNK_FITS + 5]);
    }
}
