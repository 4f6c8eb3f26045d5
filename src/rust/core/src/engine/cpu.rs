//! The CPU engine: every (dataset, start) pair is one work item shared among
//! all threads, so one large dataset cannot leave cores idle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use super::{pool, Best};
use crate::dataset::Prepared;
use crate::error::Error;
use crate::fit::Progress;
use crate::init::initial_params;
use crate::job::Job;
use crate::start::run_em;

/// Runs every start of every valid dataset; one `Best` per dataset
/// (untouched for invalid ones), counting progress as it goes.
pub fn run(
    job: &Job,
    prepared: &[Result<Prepared, String>],
    threads: usize,
    cancel: &AtomicBool,
    progress: &Progress,
) -> Result<Vec<Best>, Error> {
    let valid: Vec<usize> = (0..prepared.len()).filter(|&d| prepared[d].is_ok()).collect();
    let starts = job.starts as usize;
    let bests: Vec<Mutex<Best>> = prepared.iter().map(|_| Mutex::new(Best::new(job.keep_starts))).collect();
    pool::for_each_index(valid.len() * starts, threads, cancel, |item| {
        let d = valid[item / starts];
        let start = (item % starts) as u32;
        let Ok(ds) = &prepared[d] else { return };
        let init = initial_params(job.family, ds, job.components, job.seed, start);
        let fit = init.map(|p| run_em(job.family, ds, p, job.max_iters, job.epsilon, cancel));
        if let Some(f) = &fit {
            progress.em_iterations.fetch_add(f.iterations as usize + 1, Ordering::Relaxed);
        }
        bests[d].lock().unwrap_or_else(PoisonError::into_inner).record(start, init, fit);
        progress.done.fetch_add(1, Ordering::Relaxed);
    })?;
    Ok(bests.into_iter().map(|b| b.into_inner().unwrap_or_else(PoisonError::into_inner)).collect())
}
