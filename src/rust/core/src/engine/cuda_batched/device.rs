//! One chunk on the device: upload, launch em_batched, follow it while it
//! runs (progress, interrupts), download what the host needs; and the gather
//! of the winners' parameters.
//!
//! While the kernel runs, the worker talks to it through a second stream
//! (the compute stream is busy until the kernel ends): it reads the fit
//! queue's counter for the progress bar and, on an interrupt, writes the stop
//! flag. This is a deliberate asynchronous protocol on two words (see the top
//! of em_batched.cu): the counter only grows, so any value read is a valid
//! lower bound; the flag is read by the kernel through a volatile pointer at
//! the end of every pass, so a late read costs one pass. cudarc's event
//! tracking, which would order the two streams, is off (gpu/mod.rs); every
//! other buffer is used by the compute stream alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
};

use super::pack::Packed;
use super::Mapping;
use crate::engine::counters::Counters;
use crate::gpu::kernels::{as_int, Batched};
use crate::gpu::prelude::BATCHED_THREADS;
pub use crate::gpu::prelude::FIT_INFO as INFO;
use crate::gpu::staging::{HostBuf, Staging};
use crate::gpu::{contained, fault_injected, Gpu};
use crate::job::Task;

/// How often a running kernel's progress is read back.
const PROGRESS_POLL: Duration = Duration::from_millis(200);

/// The kernels' argument block: `struct Batch` of em_batched.cu, field for field.
#[repr(C)]
#[derive(Clone, Copy)]
struct BatchArgs {
    obs: u64,
    obs32: u64,
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
    screen_ratio: f64,
    screen_count: f64,
    screen_count_ratio: f64,
    next: u64,
    stop: u64,
    group: i32,
    finish: i32,
    screen_distinct: i32,
    noise_t: u64,
    df_fixed: i32,
    weights: u64,
    ds_total: u64,
    equal_scale: i32,
    fixed: u64,
}

// SAFETY: plain old data with the C layout of `struct Batch`.
unsafe impl DeviceRepr for BatchArgs {}

/// What came back of a chunk: per fit, log-likelihood and (iterations,
/// outcome) on the host, the parameters still on the device; and the fits
/// counted in `counters.in_flight` while the kernel ran.
pub struct Ran {
    pub ll: Vec<f64>,
    pub info: Vec<i32>,
    pub params: CudaSlice<f64>,
    pub in_flight: usize,
}

fn fail(what: &'static str) -> impl Fn(DriverError) -> String {
    move |err| format!("{what}: {err:?}")
}

/// Blocks of BATCHED_THREADS that `f` runs at once on `gpu`: its grid when
/// the GPU is full.
fn resident_blocks(gpu: &Gpu, f: &CudaFunction) -> Result<u32, String> {
    let sms = gpu
        .ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(fail("querying the GPU"))?;
    let per_sm = f
        .occupancy_max_active_blocks_per_multiprocessor(BATCHED_THREADS, 0, None)
        .map_err(fail("querying occupancy"))?;
    Ok(sms.max(1) as u32 * per_sm.max(1))
}

/// Fits the lane kernel of `kernel` runs at once on `gpu` (a lane each).
pub fn lanes_in_flight(gpu: &Gpu, kernel: &Batched) -> Result<usize, String> {
    Ok(resident_blocks(gpu, &kernel.lane)? as usize * BATCHED_THREADS as usize)
}

/// Mixed precision's second launch: the fp64 kernels, which finish every
/// fit the fp32 ones ran (see the top of em_batched.cu), and the stream
/// they run on.
pub struct Finisher {
    pub kernels: Batched,
    pub stream: Arc<CudaStream>,
}

/// A stream at the highest priority. The other workers' kernels hold every
/// SM until their queues run dry, and kernels start in the order they were
/// launched: at the priority of a chunk's first launch, its finishing
/// launch would wait for all of them, and its chunk's recording with it.
/// At the highest priority its blocks take the first SMs freed.
pub fn priority_stream(gpu: &Gpu) -> Result<Arc<CudaStream>, String> {
    contained("creating a CUDA stream", || {
        let (_, highest) =
            cudarc::driver::result::stream::get_priority_range().map_err(fail("creating a CUDA stream"))?;
        gpu.ctx.new_stream_with_priority(highest).map_err(fail("creating a CUDA stream"))
    })
}

/// Uploads a packed chunk, runs em_batched over it, downloads the results.
/// With mixed precision, `kernels` are the fp32 ones and `finisher`'s the
/// fp64 ones, launched after them over the same arrays to finish every fit.
#[allow(clippy::too_many_arguments)]
pub fn run(
    gpu: &Gpu,
    kernels: &Batched,
    finisher: Option<&Finisher>,
    mapping: Mapping,
    stream: &Arc<CudaStream>,
    p: &Packed,
    t: &Task,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<Ran, String> {
    contained("running the cuda-batched engine", || {
        let n_fits = p.fits();
        let clock = Instant::now();
        let up = |v: &[f64]| stream.clone_htod(v).map_err(fail("uploading a chunk"));
        if fault_injected("oom") {
            stream.alloc_zeros::<f64>(1 << 60).map_err(fail("allocating GPU memory"))?;
        }
        let obs = up(&p.obs)?;
        // a null pointer unless the kernel is a mixed-precision one
        let obs32 = if p.obs32.is_empty() {
            None
        } else {
            Some(stream.clone_htod(&p.obs32[..]).map_err(fail("uploading a chunk"))?)
        };
        let ds_offset = stream.clone_htod(&p.ds_offset).map_err(fail("uploading a chunk"))?;
        let ds_n = stream.clone_htod(&p.ds_n).map_err(fail("uploading a chunk"))?;
        let ds_hsum = up(&p.ds_hsum)?;
        let ds_spread = up(&p.ds_spread)?;
        let fit_ds = stream.clone_htod(&p.fit_ds).map_err(fail("uploading a chunk"))?;
        let init = up(&p.init)?;
        // a null pointer unless the fits have a noise component
        let noise_t = if p.noise_t.is_empty() { None } else { Some(up(&p.noise_t)?) };
        // null pointers unless the call has weights
        let weights = if p.weights.is_empty() { None } else { Some(up(&p.weights)?) };
        let ds_total = if p.ds_total.is_empty() { None } else { Some(up(&p.ds_total)?) };
        // a null pointer unless the call fixes values
        let fixed = if p.ds_fixed.is_empty() { None } else { Some(up(&p.ds_fixed)?) };
        // Nothing here is set on the device: a memset is a kernel, and it
        // would wait for the other workers' kernels, which hold every SM
        // until their queues run dry (uploads took a third of each worker's
        // time in the bootstrap that way). Copies go by the copy engines.
        // SAFETY: uninitialised, and never read before written: the kernel
        // writes a fit's row of out_params (its SQUAREM store, then its
        // result) and its out_ll before anything reads them, and the host
        // reads only fits whose out_info says they finished.
        let out_params: CudaSlice<f64> =
            unsafe { stream.alloc(n_fits * p.row.width()) }.map_err(fail("allocating GPU memory"))?;
        let out_ll: CudaSlice<f64> = unsafe { stream.alloc(n_fits) }.map_err(fail("allocating GPU memory"))?;
        // -1 marks a fit the kernel never finished
        let out_info: CudaSlice<i32> =
            stream.clone_htod(&vec![-1i32; INFO * n_fits]).map_err(fail("allocating GPU memory"))?;
        let mut stop: CudaSlice<i32> = stream.clone_htod(&[0i32]).map_err(fail("allocating GPU memory"))?;

        let (pick, per_unit): (fn(&Batched) -> &CudaFunction, u32) = match mapping {
            Mapping::Lane => (|k| &k.lane, 1),
            Mapping::Group(width) => (|k| &k.group, width),
        };
        let units_per_block = BATCHED_THREADS / per_unit;
        let n_fits_int = as_int(n_fits, "fits in one em_batched launch")?;
        // a kernel's grid (its resident blocks at most) and the units it
        // launches, at which its fit queue starts
        let grid = |kernel: &CudaFunction| -> Result<(LaunchConfig, u32), String> {
            let blocks = (n_fits_int as u32).div_ceil(units_per_block).min(resident_blocks(gpu, kernel)?);
            let cfg = LaunchConfig {
                grid_dim: (if fault_injected("launch") { 0 } else { blocks }, 1, 1),
                block_dim: (BATCHED_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            Ok((cfg, blocks * units_per_block))
        };
        let kernel = pick(kernels);
        let (cfg, units) = grid(kernel)?;
        let next: CudaSlice<u32> = stream.clone_htod(&[units]).map_err(fail("uploading a chunk"))?;
        let ptr = |p: (u64, _)| p.0;
        let args = BatchArgs {
            obs: ptr(obs.device_ptr(stream)),
            obs32: obs32.as_ref().map_or(0, |o| ptr(o.device_ptr(stream))),
            ds_offset: ptr(ds_offset.device_ptr(stream)),
            ds_n: ptr(ds_n.device_ptr(stream)),
            ds_hsum: ptr(ds_hsum.device_ptr(stream)),
            ds_spread: ptr(ds_spread.device_ptr(stream)),
            fit_ds: ptr(fit_ds.device_ptr(stream)),
            init: ptr(init.device_ptr(stream)),
            out_params: ptr(out_params.device_ptr(stream)),
            out_ll: ptr(out_ll.device_ptr(stream)),
            out_info: ptr(out_info.device_ptr(stream)),
            n_fits: n_fits_int,
            max_iters: i32::try_from(t.max_iters).unwrap_or(i32::MAX),
            epsilon: t.epsilon,
            screen_ratio: t.screen.ratio,
            screen_count: t.screen.count,
            screen_count_ratio: t.screen.count_ratio,
            next: ptr(next.device_ptr(stream)),
            stop: ptr(stop.device_ptr(stream)),
            group: per_unit as i32,
            finish: 0,
            // a whole number from 0 to SPURIOUS_DISTINCT_MAX (Screen::check)
            screen_distinct: t.screen.distinct as i32,
            noise_t: noise_t.as_ref().map_or(0, |o| ptr(o.device_ptr(stream))),
            df_fixed: p.row.df_fixed as i32,
            weights: weights.as_ref().map_or(0, |o| ptr(o.device_ptr(stream))),
            ds_total: ds_total.as_ref().map_or(0, |o| ptr(o.device_ptr(stream))),
            equal_scale: t.equal_scale as i32,
            fixed: fixed.as_ref().map_or(0, |o| ptr(o.device_ptr(stream))),
        };
        stream.synchronize().map_err(fail("uploading a chunk"))?;
        counters.lap("batched: upload", clock);
        // SAFETY: `args` is em_batched's `struct Batch` (same fields, order
        // and C layout); its pointers are live device buffers of this chunk
        // (they outlive the kernel: all are dropped after the final
        // synchronize): obs holds the chunk's observations as (x, g) pairs,
        // obs32 the same in f32 when the kernel is a mixed-precision one,
        // every per-dataset array one value per dataset, fit_ds n_fits indices
        // below the dataset count, init and out_params p.row's width (the
        // kernel's row_width for its K, family and N) per fit, noise_t one value per observation when the kernel has N = 1,
        // weights one per observation and ds_total one per dataset when it has W = 1,
        // out_info INFO per fit; next starts at the number of lanes or warps
        // launched.
        unsafe { stream.launch_builder(kernel).arg(&args).launch(cfg) }.map_err(fail("launching em_batched"))?;
        counters.kernel_launches.fetch_add(1, Ordering::Relaxed);
        let launched = Instant::now();
        let in_flight = follow(gpu, stream, &next, &mut stop, units as usize, n_fits, cancel, Some(counters))?;
        let mut clock = counters.lap_kernel("batched: kernel", launched);
        if let (Some(finisher), false) = (finisher, cancel.load(Ordering::Relaxed)) {
            let kernel = pick(&finisher.kernels);
            let (cfg, units) = grid(kernel)?;
            let next: CudaSlice<u32> = stream.clone_htod(&[units]).map_err(fail("uploading a chunk"))?;
            let fast = &finisher.stream;
            fast.join(stream).map_err(fail("ordering CUDA streams"))?;
            let args = BatchArgs { init: args.out_params, next: next.device_ptr(stream).0, finish: 1, ..args };
            // SAFETY: as for the first launch, which `fast` waits for; init
            // is out_params, of which each fit reads its own row before it
            // writes it, and out_info holds every fit's iterations and
            // FIT_SWITCHED from that launch.
            unsafe { fast.launch_builder(kernel).arg(&args).launch(cfg) }.map_err(fail("launching em_batched"))?;
            counters.kernel_launches.fetch_add(1, Ordering::Relaxed);
            let launched = Instant::now();
            // the first launch's progress stands for both
            follow(gpu, fast, &next, &mut stop, units as usize, n_fits, cancel, None)?;
            stream.join(fast).map_err(fail("ordering CUDA streams"))?;
            clock = counters.lap_kernel("batched: kernel (fp64 finish)", launched);
        }
        let ll = stream.clone_dtoh(&out_ll).map_err(fail("downloading results"))?;
        let info = stream.clone_dtoh(&out_info).map_err(fail("downloading results"))?;
        stream.synchronize().map_err(fail("running em_batched"))?;
        counters.lap("batched: download", clock);
        Ok(Ran { ll, info, params: out_params, in_flight })
    })
}

/// Waits for the kernel just launched on `stream`, reading its fit queue
/// every PROGRESS_POLL and setting its stop flag once `cancel` is set, both
/// through a side stream (the protocol of the module docs). Returns the fits
/// it added to `counters.in_flight` (none without `counters`).
#[allow(clippy::too_many_arguments)]
fn follow(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    next: &CudaSlice<u32>,
    stop: &mut CudaSlice<i32>,
    units: usize,
    n_fits: usize,
    cancel: &AtomicBool,
    counters: Option<&Counters>,
) -> Result<usize, String> {
    let done = stream.record_event(None).map_err(fail("recording an event"))?;
    let side = gpu.ctx.new_stream().map_err(fail("creating a CUDA stream"))?;
    let mut stopping = false;
    let mut polled = Instant::now();
    let mut taken = [0u32];
    let mut reported = 0usize;
    while !done.try_is_complete().map_err(fail("running em_batched"))? {
        if cancel.load(Ordering::Relaxed) && !stopping {
            side.memcpy_htod(&[1i32], stop).map_err(fail("stopping em_batched"))?;
            side.synchronize().map_err(fail("stopping em_batched"))?;
            stopping = true;
        }
        if let (Some(counters), true) = (counters, polled.elapsed() >= PROGRESS_POLL) {
            // fits taken from the queue beyond the first `units`: about as
            // many have finished, which is what the progress bar shows
            side.memcpy_dtoh(next, &mut taken).map_err(fail("reading progress"))?;
            side.synchronize().map_err(fail("reading progress"))?;
            let finished = (taken[0] as usize).saturating_sub(units).min(n_fits);
            if finished > reported {
                counters.in_flight.fetch_add(finished - reported, Ordering::Relaxed);
                reported = finished;
            }
            polled = Instant::now();
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(reported)
}

/// The rows `idx` (of `width` values) of `src`. Every row comes back by
/// the copy engines and the rows are picked here: a gathering kernel would
/// wait for the other workers' kernels to give up their SMs (see `run`).
/// They come back into one of the GPU's pinned buffers where it has one
/// free (`staging`; gpu/staging.rs): a fresh pageable copy of every fit's
/// parameters (B5: 96 MB a call) would be first touched page by page.
pub fn gather(
    stream: &Arc<CudaStream>,
    src: &CudaSlice<f64>,
    idx: &[i32],
    width: usize,
    staging: Option<&Arc<Staging>>,
) -> Result<Vec<f64>, String> {
    if idx.is_empty() {
        return Ok(Vec::new());
    }
    contained("downloading the winning starts", || {
        let mut all = HostBuf::<f64>::take(staging, src.len());
        stream.memcpy_dtoh(src, &mut all[..]).map_err(fail("downloading winners"))?;
        stream.synchronize().map_err(fail("downloading winners"))?;
        let mut rows = Vec::with_capacity(idx.len() * width);
        for &i in idx {
            let row = usize::try_from(i)
                .ok()
                .and_then(|i| all.get(i * width..(i + 1) * width))
                .ok_or("a winner outside its chunk")?;
            rows.extend_from_slice(row);
        }
        Ok(rows)
    })
}
