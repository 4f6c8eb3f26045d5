//! Which datasets go into which launch: chunks bounded in device memory and
//! in the kernels' `int` fit indices.

use super::super::Work;

/// Most device memory one chunk may take (besides the free-memory bound), so
/// that even a huge call is several chunks that overlap.
const CHUNK_BYTES_MAX: usize = 2 << 30;

/// One launch's worth of work: datasets (indices into the call) and their fits.
pub struct Chunk {
    pub datasets: Vec<usize>,
    pub fits: usize,
}

/// Chunks of at most `budget` bytes (and of CHUNK_BYTES_MAX, or less with
/// BULKEM_CHUNK_BYTES, so tests can check that results do not depend on
/// chunking), and small enough that the work makes at least `pieces` of
/// them where it can, longest datasets first: lanes that take fits from
/// the queue together then run passes of similar length.
pub fn plan(work: &Work, budget: usize, pieces: usize) -> Vec<Chunk> {
    let k = work.task.k;
    let starts = work.task.starts as usize;
    let len = |d: usize| work.datasets[d].map_or(0, |p| p.x.len());
    let mut order = work.valid();
    order.sort_by_key(|&d| std::cmp::Reverse(len(d)));
    let limit = std::env::var("BULKEM_CHUNK_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(CHUNK_BYTES_MAX);
    // per fit: init and out_params (3k each), log-likelihood, info (2 ints), dataset index
    let fit_bytes = (6 * k + 4) * 8;
    let need = |d: usize| 16 * len(d) + 32 + starts * fit_bytes;
    let total: usize = order.iter().map(|&d| need(d)).sum();
    let chunk_bytes = budget.min(limit).min(total.div_ceil(pieces.max(1)).max(1));
    // fit indices are `int` in the kernels (and the queue counter unsigned)
    let max_fits = i32::MAX as usize / 2;
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut current = Chunk { datasets: Vec::new(), fits: 0 };
    let mut bytes = 0;
    for d in order {
        let need = need(d);
        if !current.datasets.is_empty() && (bytes + need > chunk_bytes || current.fits + starts > max_fits) {
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
    chunks
}
