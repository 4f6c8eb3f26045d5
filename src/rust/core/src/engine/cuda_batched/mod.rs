//! The `cuda-batched` engine: whole EM fits on the device. One launch takes a
//! chunk of datasets (packed end to end, longest first) and all their starts,
//! and runs every (dataset, start) fit to its end inside the kernel
//! (kernels/em_batched.cu): launches do not grow with iterations or starts.
//! Starting values come from the CPU (the same generator as every engine);
//! only each start's log-likelihood, iterations and outcome come back, plus
//! the winners' parameters, and the winner is chosen on the host by the
//! shared `Best` rule. Two host workers with a stream each take chunks from
//! the shared queue, so one chunk's transfers overlap the other's compute.
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

/// From this mean dataset size on, a warp per fit beats a lane per fit (below
/// it a warp's shuffles cost more than its share of a pass).
const WARP_MIN_MEAN_N: usize = 256;
/// Host workers, each with its own stream: two, so that one chunk's packing
/// and transfers overlap the other's kernel.
const WORKERS: usize = 2;

pub struct CudaBatched {
    /// The GPUs sharing the chunks; each has WORKERS host workers.
    pub gpus: Vec<Arc<Gpu>>,
    /// Threads packing chunks and recording results.
    pub host_threads: usize,
}

/// How fits map onto threads (em_batched.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mapping {
    Lane,
    Warp,
}

impl Engine for CudaBatched {
    fn run(&self, work: &Work, bests: &Bests, cancel: &AtomicBool, counters: &Counters) -> Result<(), Error> {
        let t = &work.task;
        // chunks sized for the GPU with the least free memory, and at least
        // two per worker where the work allows, so that every GPU gets work
        // and one chunk's packing, transfers and recording overlap another's
        // kernel (B2 on one H200: 0.53 -> 0.44-0.48 s; results-engines-gpu.md;
        // BULKEM_CHUNK_PIECES sets the number, for that measurement). Results
        // do not depend on chunking or on which GPU runs a chunk.
        let mut free = usize::MAX;
        for gpu in &self.gpus {
            let f = contained("querying GPU memory", || gpu.ctx.mem_get_info().map_err(|e| format!("{e:?}")))
                .map_err(Error::Gpu)?
                .0;
            free = free.min(f);
        }
        let workers = WORKERS * self.gpus.len();
        let pieces = std::env::var("BULKEM_CHUNK_PIECES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2 * workers);
        let chunks = chunks::plan(work, free / (2 * WORKERS), pieces);
        let mapping = mapping(work);
        // worker w runs on GPU w mod #GPUs, with that GPU's compiled kernel
        let next_worker = std::sync::atomic::AtomicUsize::new(0);
        let setup = || {
            let w = next_worker.fetch_add(1, Ordering::Relaxed);
            let gpu = &self.gpus[w % self.gpus.len()];
            let kernel = gpu.kernels.batched(t.family, t.k, t.mixed_precision, t.accelerate).map_err(Error::Gpu)?;
            let stream = contained("creating a CUDA stream", || {
                gpu.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
                gpu.ctx.new_stream().map_err(|e| format!("{e:?}"))
            })
            .map_err(|e| Error::Gpu(format!("GPU {}: {e}", gpu.ordinal)))?;
            Ok((gpu.clone(), kernel, stream))
        };
        queue::run(chunks.len(), workers, cancel, setup, |(gpu, kernel, stream), c| {
            let chunk = &chunks[c];
            let clock = std::time::Instant::now();
            let packed = pack::pack(work, chunk, self.host_threads, cancel)?;
            counters.lap("batched: starts and packing", clock);
            if packed.fits() == 0 || cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            let on_gpu = |e: String| Error::Gpu(format!("GPU {}: {e}", gpu.ordinal));
            let ran = device::run(gpu, kernel, mapping, stream, &packed, t, cancel, counters).map_err(on_gpu)?;
            if cancel.load(Ordering::Relaxed) {
                return Ok(());
            }
            record::record(work, chunk, &packed, &ran, kernel, stream, bests, self.host_threads, cancel, counters)
        })
    }
}

/// One mapping for the whole call, so results do not depend on chunking. A
/// warp per fit won wherever datasets are not tiny, a lane per fit on B5's
/// 100-observation datasets (inst/bench/results-batched-mapping.md);
/// BULKEM_MAPPING forces one, for that measurement.
fn mapping(work: &Work) -> Mapping {
    let (valid, obs) = work.datasets.iter().flatten().fold((0, 0), |(v, o), ds| (v + 1, o + ds.x.len()));
    match std::env::var("BULKEM_MAPPING").as_deref() {
        Ok("lane") => Mapping::Lane,
        Ok("warp") => Mapping::Warp,
        _ if obs >= WARP_MIN_MEAN_N * valid => Mapping::Warp,
        _ => Mapping::Lane,
    }
}
