//! The engines, behind one interface. Each gets one K's task and the
//! prepared datasets, runs every start of every valid dataset, and records
//! each start into the shared `Bests`; the work queue, the counters and the
//! winner rule are shared, so an engine holds only what is its own.

pub mod best;
pub mod counters;
pub(crate) mod cpu;
mod cuda_batched;
mod cuda_streams;
pub mod queue;

use std::sync::atomic::AtomicBool;

use crate::dataset::Prepared;
use crate::error::Error;
use crate::job::Task;
use crate::params::Params;
use crate::refine::Refinement;
use crate::starts::initial_params;
use crate::tuning::Tuning;
use best::Bests;
use counters::Counters;

/// What an engine runs: one K's task over the call's datasets, `None` where
/// a dataset cannot be fitted with this K.
pub struct Work<'a> {
    pub task: Task,
    pub datasets: Vec<Option<&'a Prepared>>,
    /// A refinement round's (refine.rs): per dataset, the best fit and the
    /// components to move into it; empty for every other round.
    pub refine: Vec<Option<Refinement>>,
    /// A continuation round's (control$short.runs, short.rs): per dataset,
    /// the draws of the short runs to continue, start `first_start + j`
    /// being draw `picks[d][j]`; empty for every other round.
    pub picks: Vec<Option<Vec<u32>>>,
    /// A given round's (Job::given_starts, restarts.rs): per dataset, the
    /// user's start it runs (rescaled units), one start each; empty for
    /// every other round.
    pub given: Vec<Option<Params>>,
}

impl<'a> Work<'a> {
    /// The work of `task` on `datasets`, its starts drawn by the task's scheme.
    pub fn new(task: Task, datasets: Vec<Option<&'a Prepared>>) -> Work<'a> {
        Work { task, datasets, refine: Vec::new(), picks: Vec::new(), given: Vec::new() }
    }

    /// The initial parameters of start `start` of dataset `d` (rescaled
    /// units), what every engine starts from: drawn by the task's scheme
    /// (starts.rs), or in a refinement round the refinement's start; with
    /// the noise component's weight where the dataset has one
    /// (Prepared::start). In a continuation round, the draw of the short
    /// run it continues; in a given round, the user's start.
    pub fn initial_params(&self, d: usize, start: u32) -> Option<Params> {
        let t = &self.task;
        let ds = self.datasets.get(d).copied().flatten()?;
        if let Some(given) = self.given.get(d) {
            return given.filter(|_| start == t.first_start).map(|p| ds.start(p));
        }
        let draw = match self.picks.get(d) {
            Some(picks) => *picks.as_ref()?.get(start.checked_sub(t.first_start)? as usize)?,
            None => start,
        };
        let p = match self.refine.get(d) {
            Some(r) => r.as_ref()?.start(start - t.first_start),
            None => initial_params(t.family, t.start_scheme, ds, t.k, t.seed, draw),
        };
        p.map(|p| ds.start(p))
    }

    /// Indices of the datasets to fit.
    pub fn valid(&self) -> Vec<usize> {
        (0..self.datasets.len()).filter(|&d| self.datasets[d].is_some()).collect()
    }

    /// Start-fits this work runs.
    pub fn start_fits(&self) -> usize {
        self.datasets.iter().flatten().count() * self.task.starts as usize
    }
}

/// Every engine gives the same answers (the CPU engine is the reference).
pub trait Engine: Sync {
    /// Runs every start of every valid dataset of `work`, recording each
    /// into `bests`, counting into `counters`; returns soon after `cancel`
    /// is set (the caller then discards what was recorded).
    fn run(&self, work: &Work, bests: &Bests, cancel: &AtomicBool, counters: &Counters) -> Result<(), Error>;
}

/// The engines by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Cpu,
    CudaStreams,
    CudaBatched,
}

impl EngineKind {
    pub const ALL: [EngineKind; 3] = [EngineKind::Cpu, EngineKind::CudaStreams, EngineKind::CudaBatched];

    pub fn from_name(name: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The name R uses for the engine (control$engine).
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Cpu => "cpu",
            EngineKind::CudaStreams => "cuda-streams",
            EngineKind::CudaBatched => "cuda-batched",
        }
    }

    /// The engine, ready to run with `threads` host threads (CPU workers, GPU
    /// stream workers, or threads packing the GPU's work) on the GPUs
    /// `devices` (CUDA ordinals; empty: every GPU). cuda-batched shares its
    /// chunks among them; cuda-streams, the 2015 design, uses the first. A
    /// GPU engine sets its GPUs up first, so an unusable one fails before
    /// any work.
    /// `tuning` lays cuda-batched's work out.
    pub fn engine(self, threads: usize, devices: &[usize], tuning: &Tuning) -> Result<Box<dyn Engine>, Error> {
        if self == EngineKind::Cpu {
            return Ok(Box::new(cpu::Cpu { threads }));
        }
        let count = crate::gpu::device_count().map_err(Error::GpuUnavailable)?;
        if let Some(&bad) = devices.iter().find(|&&d| d >= count) {
            return Err(Error::Argument {
                arg: "control$devices",
                message: format!("names GPU {bad}, but the GPUs here are numbered 0 to {}", count.saturating_sub(1)),
            });
        }
        let gpus = crate::gpu::gpu_devices(devices).map_err(Error::GpuUnavailable)?;
        let first = gpus.first().cloned().ok_or(Error::GpuUnavailable(crate::error::Unavailable::NoDevice))?;
        Ok(match self {
            EngineKind::Cpu => Box::new(cpu::Cpu { threads }),
            EngineKind::CudaStreams => Box::new(cuda_streams::CudaStreams { gpu: first, workers: threads }),
            EngineKind::CudaBatched => {
                Box::new(cuda_batched::CudaBatched { gpus, host_threads: threads, tuning: tuning.clone() })
            }
        })
    }
}
