//! A chunk laid out in em_batched's arrays (see the layout at the top of
//! kernels/em_batched.cu), with every fit's starting values drawn on the CPU
//! by the generator every engine uses. The three large arrays go into the
//! GPU's pinned buffers where it has them free (gpu/staging.rs).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use super::super::{queue, Work};
use super::chunks::Chunk;
use crate::dataset::Prepared;
use crate::error::Error;
use crate::gpu::kernels::as_int;
use crate::gpu::staging::{HostBuf, Staging};
use crate::params::Params;

pub struct Packed {
    /// x, g interleaved
    pub obs: HostBuf<f64>,
    /// `obs` rounded to f32, for mixed precision's fp32 passes (else empty)
    pub obs32: HostBuf<f32>,
    pub ds_offset: Vec<i64>,
    pub ds_n: Vec<i32>,
    pub ds_hsum: Vec<f64>,
    pub ds_spread: Vec<f64>,
    pub fit_ds: Vec<i32>,
    /// 3k values per fit: alpha, mu, shape
    pub init: HostBuf<f64>,
    /// whether each fit's start could be drawn
    pub drawn: Vec<bool>,
}

impl Packed {
    pub fn fits(&self) -> usize {
        self.fit_ds.len()
    }

    /// Fit `f`'s row of a 3k-wide array (`init`, or parameters from the device).
    pub fn params_of(v: &[f64], f: usize, k: usize) -> Params {
        let row = &v[f * 3 * k..(f + 1) * 3 * k];
        let mut out = Params::zeroed(k);
        out.alpha[..k].copy_from_slice(&row[..k]);
        out.mu[..k].copy_from_slice(&row[k..2 * k]);
        out.shape[..k].copy_from_slice(&row[2 * k..]);
        out
    }
}

/// Packs the chunk in parallel, dataset by dataset, straight into the
/// kernel's arrays: observations as (x, g) pairs, and the starting values of
/// fits j*S .. (j+1)*S of the chunk's dataset j (its starts first_start + 0..S). A start that could not be
/// drawn keeps NaN parameters (the kernel fails it at once) and is recorded
/// as such. `staging`: the GPU's pinned buffers (None: ordinary memory).
pub fn pack(
    work: &Work,
    chunk: &Chunk,
    threads: usize,
    cancel: &AtomicBool,
    staging: Option<&Arc<Staging>>,
) -> Result<Packed, Error> {
    let t = &work.task;
    let (k, starts) = (t.k, t.starts as usize);
    let sets: Vec<&Prepared> = chunk.datasets.iter().filter_map(|&d| work.datasets[d]).collect();
    let nd = sets.len();
    if nd != chunk.datasets.len() {
        return Err(Error::Internal("an invalid dataset reached cuda-batched".into()));
    }
    let n_fits = nd * starts;
    let ds_n = sets.iter().map(|ds| as_int(ds.x.len(), "observations in a dataset")).collect::<Result<Vec<i32>, _>>();
    let mut total = 0usize;
    let mut ds_offset = Vec::with_capacity(nd);
    for ds in &sets {
        ds_offset.push(total as i64);
        total += ds.x.len();
    }
    // every value of obs and obs32 is written below; init keeps NaN where
    // no start is drawn
    let mut init = HostBuf::take(staging, n_fits * 3 * k);
    init.fill(f64::NAN);
    let mut p = Packed {
        obs: HostBuf::take(staging, 2 * total),
        obs32: HostBuf::take(staging, if t.mixed_precision { 2 * total } else { 0 }),
        ds_offset,
        ds_n: ds_n.map_err(Error::Gpu)?,
        ds_hsum: sets.iter().map(|ds| ds.h_sum).collect(),
        ds_spread: sets.iter().map(|ds| ds.spread).collect(),
        fit_ds: vec![0; n_fits],
        init,
        drawn: vec![false; n_fits],
    };
    let (mut obs, mut obs32) = (&mut p.obs[..], &mut p.obs32[..]);
    let (mut fit_ds, mut init, mut drawn) = (&mut p.fit_ds[..], &mut p.init[..], &mut p.drawn[..]);
    let mut pieces = Vec::with_capacity(nd);
    for ds in &sets {
        let (o, rest_o) = std::mem::take(&mut obs).split_at_mut(2 * ds.x.len());
        let (o32, rest_o32) =
            std::mem::take(&mut obs32).split_at_mut(if t.mixed_precision { 2 * ds.x.len() } else { 0 });
        let (f, rest_f) = std::mem::take(&mut fit_ds).split_at_mut(starts);
        let (i, rest_i) = std::mem::take(&mut init).split_at_mut(starts * 3 * k);
        let (d, rest_d) = std::mem::take(&mut drawn).split_at_mut(starts);
        pieces.push(Mutex::new((o, o32, f, i, d)));
        (obs, obs32, fit_ds, init, drawn) = (rest_o, rest_o32, rest_f, rest_i, rest_d);
    }
    queue::for_each_light(nd, threads, cancel, |j| {
        let ds = sets[j];
        let mut piece = pieces[j].lock().unwrap_or_else(PoisonError::into_inner);
        let (obs, obs32, fit_ds, init, drawn) = &mut *piece;
        for (i, (x, g)) in ds.x.iter().zip(&ds.g).enumerate() {
            obs[2 * i] = *x;
            obs[2 * i + 1] = *g;
        }
        for (o32, o) in obs32.iter_mut().zip(obs.iter()) {
            *o32 = *o as f32;
        }
        for s in 0..starts {
            fit_ds[s] = j as i32;
            if let Some(start) = work.initial_params(chunk.datasets[j], t.first_start + s as u32) {
                let row = &mut init[s * 3 * k..(s + 1) * 3 * k];
                row[..k].copy_from_slice(&start.alpha[..k]);
                row[k..2 * k].copy_from_slice(&start.mu[..k]);
                row[2 * k..].copy_from_slice(&start.shape[..k]);
                drawn[s] = true;
            }
        }
    })?;
    drop(pieces);
    Ok(p)
}
