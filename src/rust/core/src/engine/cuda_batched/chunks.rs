//! Which datasets go into which launch: chunks bounded in device memory and
//! in the kernels' `int` fit indices.

use super::super::Work;
use crate::tuning::Tuning;

/// Most device memory one chunk may take (besides the free-memory bound), so
/// that even a huge call is several chunks that overlap.
const CHUNK_BYTES_MAX: usize = 2 << 30;

/// One launch's worth of work: datasets (indices into the call) and their fits.
pub struct Chunk {
    pub datasets: Vec<usize>,
    pub fits: usize,
}

/// The first and the last chunk are this many times smaller than the
/// others: the first kernel starts once a small part of the call is packed
/// and uploaded, not a worker's whole share, and what follows the last
/// kernel (download, recording, finishing) is a small part too.
const RAMP: usize = 8;

/// Chunks of at most `budget` bytes (and of CHUNK_BYTES_MAX, or less with
/// `tuning.chunk_bytes`, so tests can check that results do not depend on
/// chunking), and small enough that the work makes at least `pieces` of
/// them where it can, besides a first and a last one RAMP times smaller
/// (`tuning.chunk_ramp` = 1: none), longest datasets first: lanes that take
/// fits from the queue together then run passes of similar length.
pub fn plan(work: &Work, budget: usize, pieces: usize, tuning: &Tuning) -> Vec<Chunk> {
    let k = work.task.k;
    let starts = work.task.starts as usize;
    let len = |d: usize| work.datasets[d].map_or(0, |p| p.x.len());
    let mut order = work.valid();
    order.sort_by_key(|&d| std::cmp::Reverse(len(d)));
    let limit = tuning.chunk_bytes.unwrap_or(CHUNK_BYTES_MAX);
    // per fit: init and out_params (3k each, and a noise weight), log-likelihood,
    // info (2 ints), dataset index; per observation (x, g), t(x) with noise
    // and its weight with weights
    let noise = work.task.noise as usize;
    let weighted = work.task.weighted as usize;
    let fit_bytes = (6 * k + 2 * noise + 4) * 8;
    let need = |d: usize| (16 + 8 * noise + 8 * weighted) * len(d) + 32 + starts * fit_bytes;
    let total: usize = order.iter().map(|&d| need(d)).sum();
    let chunk_bytes = budget.min(limit).min(total.div_ceil(pieces.max(1)).max(1));
    let ramp = tuning.chunk_ramp.unwrap_or(RAMP);
    let small = (chunk_bytes / ramp).max(1);
    // fit indices are `int` in the kernels (and the queue counter unsigned)
    let max_fits = i32::MAX as usize / 2;
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut current = Chunk { datasets: Vec::new(), fits: 0 };
    let mut bytes = 0;
    // The first chunk is small; once what is left (`left`: bytes of the
    // datasets not in a finished chunk) fits in a chunk and a small one,
    // the next to last takes all but a small one, and the last the rest
    // (still at most chunk_bytes, the memory bound, if datasets were too
    // large to split so).
    let mut left = total;
    let mut last = false;
    let mut target = small;
    for d in order {
        let need = need(d);
        if !current.datasets.is_empty() && (bytes + need > target || current.fits + starts > max_fits) {
            chunks.push(std::mem::replace(&mut current, Chunk { datasets: Vec::new(), fits: 0 }));
            left -= bytes;
            bytes = 0;
            target = if last {
                chunk_bytes
            } else if left <= chunk_bytes + small {
                last = true;
                left.saturating_sub(small).max(1)
            } else {
                chunk_bytes
            };
        }
        bytes += need;
        current.fits += starts;
        current.datasets.push(d);
    }
    if !current.datasets.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::super::tests::work;
    use super::*;
    use crate::dataset::{prepare, Prepared};
    use crate::params::Family;

    #[test]
    fn every_dataset_once_with_a_small_first_and_last_chunk() {
        let prepared: Vec<Prepared> = (0..800)
            .map(|d| {
                prepare(&(0..50 + d % 7).map(|i| (i as f64 * 0.618_034).fract()).collect::<Vec<_>>(), Family::Normal)
                    .unwrap()
            })
            .collect();
        let work = work(&prepared, 10, 100);
        for pieces in [1, 4, 16] {
            let chunks = plan(&work, usize::MAX, pieces, &Tuning::default());
            let mut seen: Vec<usize> = chunks.iter().flat_map(|c| c.datasets.iter().copied()).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..800).collect::<Vec<_>>(), "pieces {pieces}");
            assert!(chunks.iter().all(|c| c.fits == 10 * c.datasets.len()));
            let sizes: Vec<usize> = chunks.iter().map(|c| c.datasets.len()).collect();
            // pieces even chunks (the next to last a little less), and the
            // first and last about RAMP times smaller
            assert_eq!(sizes.len(), pieces + 2, "{sizes:?}");
            let even = 800 / pieces;
            for &s in [sizes[0], sizes[sizes.len() - 1]].iter() {
                assert!(s * RAMP >= even * 3 / 4 && s * RAMP <= even * 5 / 4, "{sizes:?}");
            }
            assert!(sizes[1..sizes.len() - 1].iter().all(|&s| s <= even + 1), "{sizes:?}");
        }
        // every chunk within the memory bound, whatever the ramp leaves
        let budget = 40_000;
        for pieces in [1, 3, 7] {
            let chunks = plan(&work, budget, pieces, &Tuning::default());
            assert_eq!(chunks.iter().map(|c| c.datasets.len()).sum::<usize>(), 800);
            let bytes = |c: &Chunk| {
                c.datasets.iter().map(|&d| 16 * prepared[d].x.len() + 32 + 10 * (6 * 2 + 4) * 8).sum::<usize>()
            };
            assert!(chunks.iter().all(|c| bytes(c) <= budget), "pieces {pieces}");
        }
    }
}
