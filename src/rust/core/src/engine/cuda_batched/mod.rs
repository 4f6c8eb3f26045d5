//! The `cuda-batched` engine: whole EM fits on the device. One launch takes a
//! chunk of datasets (packed end to end, longest first) and all their starts,
//! and runs every (dataset, start) fit to its end inside the kernel
//! (kernels/em_batched.cu): launches do not grow with iterations or starts.
//! Starting values come from the CPU (the same generator as every engine);
//! each start's log-likelihood, iterations and outcome come back, then its
//! parameters, and the winner is chosen on the host by the shared `Best`
//! rule. Nothing but em_batched runs on the device: a second kernel (a
//! memset, a gather) would wait for the other workers' kernels to leave the
//! SMs. Four host workers per GPU, each with a stream, take
//! chunks from the shared queue, so one chunk's host work and transfers
//! overlap the others' kernels, and one kernel's tail (its last, slowest
//! fits) the others' blocks.
//!
//! A chunk goes through four steps, one module each: `chunks` plans them,
//! `pack` lays a chunk out in the kernel's arrays, `device` uploads, runs and
//! downloads it, `record` turns its results into the datasets' bests.

mod chunks;
mod device;
mod pack;
mod record;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::best::Bests;
use super::counters::Counters;
use super::{queue, Engine, Work};
use crate::error::Error;
use crate::gpu::{contained, Gpu};
use crate::tuning::Tuning;

/// From this mean dataset size on, a warp per fit beats a lane per fit (below
/// it a warp's shuffles cost more than its share of a pass).
const WARP_MIN_MEAN_N: usize = 256;
/// Most observation steps one fit may take (max.iters x mean n) for a lane
/// per fit: a lane runs its fit alone, so the kernel lasts at least as long
/// as its slowest fit, 32 times longer than on a warp. 100 passes of 256
/// observations; the 2015 default of 100 iterations stays under it at
/// n < 256, the default of 5000 does not.
const LANE_MAX_FIT_STEPS: usize = 100 * WARP_MIN_MEAN_N;
/// Lanes per fit where a lane each does not suit, narrowest first. Every
/// lane of a group repeats the end of a pass (M-step, logarithms, SQUAREM's
/// extrapolation), so narrower groups spend less of each pass on it; but a
/// fit's passes take longer in proportion, and a kernel lasts as long as its
/// slowest fit. So the narrowest group is taken whose units (groups
/// resident on the GPUs, per worker) each get at least GROUP_MIN_FITS fits
/// of the call: then most of a kernel is throughput, not tail.
const GROUP_WIDTHS: [u32; 3] = [8, 16, 32];
const GROUP_MIN_FITS: usize = 8;
/// Host workers per GPU, each with its own stream, and the chunks each gets
/// at least, where the work allows. Each chunk's kernel lasts as long as its
/// slowest fit, and with SQUAREM and max.iters 5000 (the defaults) passes
/// per fit spread widely; kernels of several streams fill one another's
/// tails. On one H200, 10,000 datasets of 500 observations (20 starts,
/// SQUAREM): engine 0.36-0.37 s with 4 workers x 1 chunk, 0.47-0.50 with
/// 2 x 2, 0.66-0.69 with 2 x 8; the plain-EM benchmarks B2-B5 and the
/// bootstrap LRT are the same within their spread (results-engines-gpu.md).
/// Tuning's `workers` and `chunk_pieces` (workers x chunks) override them,
/// for that measurement.
const WORKERS: usize = 4;
const CHUNKS_PER_WORKER: usize = 1;

pub struct CudaBatched {
    /// The GPUs sharing the chunks; each has WORKERS host workers.
    pub gpus: Vec<Arc<Gpu>>,
    /// Threads packing chunks and recording results.
    pub host_threads: usize,
    /// How the work is laid out, where not the measured defaults.
    pub tuning: Tuning,
}

/// How fits map onto threads (em_batched.cu): a lane each, or a group of
/// lanes each (a power of two, at most a warp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mapping {
    Lane,
    Group(u32),
}

const WARP: Mapping = Mapping::Group(32);

impl Engine for CudaBatched {
    fn run(&self, work: &Work, bests: &Bests, cancel: &AtomicBool, counters: &Counters) -> Result<(), Error> {
        let t = &work.task;
        // chunks sized for the GPU with the least free memory, and at least
        // CHUNKS_PER_WORKER per worker where the work allows, so that every
        // worker of every GPU gets work and one chunk's packing, transfers,
        // recording and finishing overlap the others' kernels. Results do
        // not depend on chunking or on which GPU runs a chunk.
        let mut free = usize::MAX;
        for gpu in &self.gpus {
            let f = contained("querying GPU memory", || gpu.ctx.mem_get_info().map_err(|e| format!("{e:?}")))
                .map_err(Error::Gpu)?
                .0;
            free = free.min(f);
        }
        let per_gpu = self.tuning.workers.unwrap_or(WORKERS);
        let workers = per_gpu * self.gpus.len();
        let pieces = self.tuning.chunk_pieces.unwrap_or(CHUNKS_PER_WORKER * workers);
        let chunks = chunks::plan(work, free / (2 * per_gpu), pieces, &self.tuning);
        // false packs into ordinary memory, for the measurement of gpu/staging.rs
        let pinned = self.tuning.pinned;
        let weighted = t.weighted;
        let mut lanes = 0;
        for gpu in &self.gpus {
            let kernel = gpu
                .kernels
                .batched(t.family, t.k, t.mixed_precision, t.accelerate, t.noise, weighted)
                .map_err(Error::Gpu)?;
            lanes +=
                device::lanes_in_flight(gpu, &kernel).map_err(|e| Error::Gpu(format!("GPU {}: {e}", gpu.ordinal)))?;
        }
        let mapping = mapping(work, lanes, per_gpu, self.tuning.mapping.as_deref());
        // worker w runs on GPU w mod #GPUs, with that GPU's compiled kernel
        let next_worker = std::sync::atomic::AtomicUsize::new(0);
        let setup = || {
            let w = next_worker.fetch_add(1, Ordering::Relaxed);
            let gpu = &self.gpus[w % self.gpus.len()];
            let kernel = gpu
                .kernels
                .batched(t.family, t.k, t.mixed_precision, t.accelerate, t.noise, weighted)
                .map_err(Error::Gpu)?;
            let on_gpu = |e: String| Error::Gpu(format!("GPU {}: {e}", gpu.ordinal));
            let stream = contained("creating a CUDA stream", || {
                gpu.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
                gpu.ctx.new_stream().map_err(|e| format!("{e:?}"))
            })
            .map_err(on_gpu)?;
            // mixed precision's fits are finished by the fp64 kernels, on a
            // stream of their own (device::run says why)
            let finisher = match t.mixed_precision {
                true => Some(device::Finisher {
                    kernels: gpu
                        .kernels
                        .batched(t.family, t.k, false, t.accelerate, t.noise, weighted)
                        .map_err(Error::Gpu)?,
                    stream: device::priority_stream(gpu).map_err(on_gpu)?,
                }),
                false => None,
            };
            Ok((gpu.clone(), kernel, finisher, stream))
        };
        let ran = queue::run(chunks.len(), workers, cancel, setup, |(gpu, kernel, finisher, stream), c| {
            let chunk = &chunks[c];
            let clock = std::time::Instant::now();
            let packed = pack::pack(work, chunk, weighted, self.host_threads, cancel, pinned.then_some(&gpu.staging))?;
            counters.lap("batched: starts and packing", clock);
            if packed.fits() == 0 || cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            let on_gpu = |e: String| Error::Gpu(format!("GPU {}: {e}", gpu.ordinal));
            let ran = device::run(gpu, kernel, finisher.as_ref(), mapping, stream, &packed, t, cancel, counters)
                .map_err(on_gpu)?;
            if cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            record::record(
                work,
                chunk,
                &packed,
                &ran,
                stream,
                pinned.then_some(&gpu.staging),
                bests,
                self.host_threads,
                cancel,
                counters,
            )
        });
        // buffers pinned now, not while the workers' uploads would wait for them
        for gpu in &self.gpus {
            gpu.staging.pin_wanted();
        }
        ran
    }
}

/// One mapping for the whole call, so results do not depend on chunking
/// (`lanes`: lanes the GPUs run at once, `workers`: host workers per GPU,
/// whose kernels share them). A lane per fit only on small datasets (B5's
/// 100 observations) when fits are short (at most LANE_MAX_FIT_STEPS: with
/// max.iters = 5000, fits that creep leave one lane running long after the
/// others, 4 to 10 times slower than a warp) and many enough to give every
/// lane one; otherwise a group of lanes, the narrowest of GROUP_WIDTHS that
/// the call's fits keep busy (inst/bench/results-batched-mapping.md).
/// `forced` (Tuning::mapping: `lane`, `warp`, `group8`, ...) forces one, for
/// that measurement.
fn mapping(work: &Work, lanes: usize, workers: usize, forced: Option<&str>) -> Mapping {
    let (valid, obs) = work.datasets.iter().flatten().fold((0, 0), |(v, o), ds| (v + 1, o + ds.x.len()));
    let mean_n = obs / valid.max(1);
    let fits = valid * work.task.starts as usize;
    let short = (work.task.max_iters as usize).saturating_mul(mean_n) <= LANE_MAX_FIT_STEPS;
    match forced {
        Some("lane") => return Mapping::Lane,
        Some("warp") => return WARP,
        Some(g) => {
            if let Some(w) =
                g.strip_prefix("group").and_then(|w| w.parse::<u32>().ok()).filter(|w| w.is_power_of_two() && *w <= 32)
            {
                return Mapping::Group(w);
            }
        }
        None => {}
    }
    if mean_n < WARP_MIN_MEAN_N && short && fits >= lanes {
        return Mapping::Lane;
    }
    let units = |width: u32| (lanes * workers.max(1) / width as usize).max(1);
    GROUP_WIDTHS.into_iter().find(|&w| fits / units(w) >= GROUP_MIN_FITS).map_or(WARP, Mapping::Group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{prepare, Prepared};
    use crate::job::Task;
    use crate::params::Family;

    /// Normal K = 2 work on `prepared` (also for chunks.rs's tests).
    pub(super) fn work(prepared: &[Prepared], starts: u32, max_iters: u32) -> Work<'_> {
        let task = Task {
            family: Family::Normal,
            k: 2,
            starts,
            first_start: 0,
            max_iters,
            epsilon: 1e-6,
            seed: 1,
            start_scheme: Default::default(),
            mixed_precision: false,
            accelerate: false,
            keep_starts: false,
            screen: Default::default(),
            noise: false,
            weighted: false,
            equal_scale: false,
        };
        Work::new(task, prepared.iter().map(Some).collect())
    }

    #[test]
    fn lanes_only_for_many_short_fits_of_small_datasets_and_narrow_groups_only_for_many_fits() {
        let of = |n: usize| {
            prepare(&(0..n).map(|i| (i as f64 * 0.618_034).fract()).collect::<Vec<_>>(), Family::Normal).unwrap()
        };
        let small: Vec<Prepared> = (0..1000).map(|_| of(100)).collect();
        let large: Vec<Prepared> = (0..1000).map(|_| of(300)).collect();
        // one H200: 132 SMs x 5 blocks of 128 threads
        let h200 = 84_480;
        // B5's shape: 100 observations, 100 iterations at most, plenty of fits
        assert_eq!(mapping(&work(&small, 10, 100), 5_000, 4, None), Mapping::Lane);
        // too few fits to give every lane one, or every warp 8
        assert_eq!(mapping(&work(&small, 10, 100), h200, 4, None), WARP);
        // fits that may creep for thousands of passes: no lanes
        assert_eq!(mapping(&work(&small, 10, 5000), 5_000, 1, None), Mapping::Group(8));
        assert_eq!(mapping(&work(&small, 10, 256), 5_000, 1, None), Mapping::Lane);
        assert_eq!(mapping(&work(&small, 10, 257), 5_000, 1, None), Mapping::Group(8));
        // larger datasets: never lanes; the narrowest group that gets 8 fits
        // per unit of every worker (h200 x 4 workers / 8 lanes = 42,240 units)
        assert_eq!(mapping(&work(&large, 10, 50), 5_000, 4, None), Mapping::Group(16));
        assert_eq!(mapping(&work(&large, 400, 5000), h200, 4, None), Mapping::Group(8));
        assert_eq!(mapping(&work(&large, 200, 5000), h200, 4, None), Mapping::Group(16));
        assert_eq!(mapping(&work(&large, 100, 5000), h200, 4, None), WARP);
        assert_eq!(mapping(&work(&large, 100, 5000), h200, 2, None), Mapping::Group(16));
    }
}
