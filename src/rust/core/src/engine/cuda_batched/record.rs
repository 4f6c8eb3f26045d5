//! A chunk's results into its datasets' bests: every start's log-likelihood
//! and outcome, then the winners' parameters from the device.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::super::best::Bests;
use super::super::counters::Counters;
use super::super::{queue, Work};
use super::chunks::Chunk;
use super::device::{gather, Ran, INFO};
use super::pack::Packed;
use crate::error::Error;
use crate::gpu::staging::Staging;
use crate::outcome::{Outcome, StartFit};
use crate::params::Params;

#[allow(clippy::too_many_arguments)]
pub fn record(
    work: &Work,
    chunk: &Chunk,
    p: &Packed,
    ran: &Ran,
    stream: &Arc<CudaStream>,
    staging: Option<&Arc<Staging>>,
    bests: &Bests,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<(), Error> {
    let (k, starts, first) = (work.task.k, work.task.starts as usize, work.task.first_start);
    let clock = std::time::Instant::now();
    // each dataset's fits are contiguous: record them dataset by dataset, in
    // parallel; the winners' parameters are filled in afterwards
    let unfinished = AtomicBool::new(false);
    // E-step passes per fit besides its iterations: the last one's, and in
    // mixed precision also the fp32 pass at which the fit switched, which
    // the fp64 launch computes again (em_batched.cu)
    let extra_passes = 1 + usize::from(work.task.mixed_precision);
    queue::for_each_light(chunk.datasets.len(), threads, cancel, |j| {
        bests.with(chunk.datasets[j], |best| {
            let mut passes = 0;
            for s in 0..starts {
                let f = j * starts + s;
                if !p.drawn[f] {
                    best.record(first + s as u32, None, None, false);
                    continue;
                }
                let info = &ran.info[INFO * f..INFO * (f + 1)];
                let iterations = info[0].max(0) as u32;
                let Some(outcome) = Outcome::from_code(info[1]) else {
                    unfinished.store(true, Ordering::Relaxed);
                    return;
                };
                passes += iterations as usize + extra_passes;
                let fit = StartFit { params: Params::zeroed(k), loglik: ran.ll[f], iterations, outcome };
                // the kernel applied the screen to the fit's final parameters
                best.record(first + s as u32, Some(p.row.params(&p.init, f)), Some(fit), info[2] != 0);
            }
            counters.em_iterations.fetch_add(passes, Ordering::Relaxed);
        })
    })?;
    if unfinished.load(Ordering::Relaxed) {
        return Err(Error::Gpu("em_batched left a fit without a result".into()));
    }
    // the start each dataset returns: its best admissible one, or else its
    // best spurious one (Best::returned), whose parameters are needed too
    // unless an earlier restart round ran it (and gathered them)
    let winners: Vec<(usize, i32)> = chunk
        .datasets
        .iter()
        .enumerate()
        .filter_map(|(j, &d)| {
            let start = bests.with(d, |b| b.returned().map(|(w, _)| w.start))?;
            let s = start.checked_sub(first).filter(|&s| (s as usize) < starts)?;
            Some((d, (j * starts + s as usize) as i32))
        })
        .collect();
    let idx: Vec<i32> = winners.iter().map(|w| w.1).collect();
    let rows = gather(stream, &ran.params, &idx, p.row.width(), staging).map_err(Error::Gpu)?;
    for (i, &(d, _)) in winners.iter().enumerate() {
        bests.with(d, |b| {
            if let Some(w) = b.winner.as_deref_mut().or(b.spurious.as_deref_mut()) {
                w.fit.params = p.row.params(&rows, i);
            }
        });
    }
    let clock = counters.lap("batched: recording", clock);
    // done first, then the estimate out: the bar never steps back
    counters.done.fetch_add(p.fits(), Ordering::Relaxed);
    counters.in_flight.fetch_sub(ran.in_flight, Ordering::Relaxed);
    // the chunk held every start of its datasets
    bests.settle(&chunk.datasets, threads, cancel)?;
    counters.lap("batched: finishing", clock);
    Ok(())
}
