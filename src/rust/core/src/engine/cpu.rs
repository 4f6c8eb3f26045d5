//! The CPU engine: every (dataset, start) pair is one work item of the
//! shared queue, so one large dataset cannot leave cores idle. The worker
//! that records a dataset's last start settles it (best.rs), so its fit is
//! finished while the engine goes on, and R's main thread can build its R
//! list meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::best::Bests;
use super::counters::Counters;
use super::{queue, Engine, Work};
use crate::em::run_em;
use crate::error::Error;

pub struct Cpu {
    pub threads: usize,
}

impl Engine for Cpu {
    fn run(&self, work: &Work, bests: &Bests, cancel: &AtomicBool, counters: &Counters) -> Result<(), Error> {
        let t = &work.task;
        let valid = work.valid();
        let starts = t.starts as usize;
        let unrecorded: Vec<AtomicU32> = valid.iter().map(|_| AtomicU32::new(t.starts)).collect();
        queue::for_each_index(valid.len() * starts, self.threads, cancel, |item| {
            let d = valid[item / starts];
            let start = t.first_start + (item % starts) as u32;
            let Some(ds) = work.datasets[d] else { return };
            let init = work.initial_params(d, start);
            let fit = init.map(|p| run_em(t.family, ds, p, t.max_iters, t.epsilon, t.accelerate, cancel));
            if let Some(f) = &fit {
                counters.em_iterations.fetch_add(f.iterations as usize + 1, Ordering::Relaxed);
            }
            let spurious = fit.is_some_and(|f| t.screen.spurious_on(t.family, &f.params, &ds.x, ds.total));
            bests.with(d, |b| b.record(start, init, fit, spurious));
            counters.done.fetch_add(1, Ordering::Relaxed);
            if unrecorded[item / starts].fetch_sub(1, Ordering::AcqRel) == 1 {
                bests.settle_one(d);
            }
        })
    }
}
