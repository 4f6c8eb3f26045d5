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
use crate::fixed::Fixed;
use crate::gpu::kernels::as_int;
use crate::gpu::staging::{HostBuf, Staging};
use crate::params::Params;

pub struct Packed {
    /// x, g interleaved
    pub obs: HostBuf<f64>,
    /// `obs` rounded to f32, for mixed precision's fp32 passes (else empty)
    pub obs32: HostBuf<f32>,
    /// the noise component's t(x) per observation, laid out as `obs` (empty
    /// without one)
    pub noise_t: HostBuf<f64>,
    /// each observation's weight, laid out as `obs` (1 for a dataset
    /// without weights; empty unless the call has weights)
    pub weights: HostBuf<f64>,
    /// the sum of each dataset's weights (empty unless the call has them)
    pub ds_total: Vec<f64>,
    /// each dataset's values fixed (Prepared::fixed), K weights, K means
    /// and K shapes, NaN where free (empty unless the call fixes values)
    pub ds_fixed: Vec<f64>,
    pub ds_offset: Vec<i64>,
    pub ds_n: Vec<i32>,
    pub ds_hsum: Vec<f64>,
    pub ds_spread: Vec<f64>,
    pub fit_ds: Vec<i32>,
    /// one `row` per fit
    pub init: HostBuf<f64>,
    /// whether each fit's start could be drawn
    pub drawn: Vec<bool>,
    /// how each fit's parameters lie in `init` and the kernel's `out_params`
    pub row: Row,
}

impl Packed {
    pub fn fits(&self) -> usize {
        self.fit_ds.len()
    }
}

/// A fit's parameters as em_batched.cu reads and writes them (its
/// row_width): alpha, mu and shape of each component, for Student's t each
/// df, then a noise component's weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub k: usize,
    pub df: bool,
    pub noise: bool,
    /// the t's df fixed by the user (bulkem(df = )), the same for every
    /// dataset of a call
    pub df_fixed: bool,
}

impl Row {
    pub fn width(&self) -> usize {
        (3 + self.df as usize) * self.k + self.noise as usize
    }

    fn noise_at(&self) -> usize {
        (3 + self.df as usize) * self.k
    }

    /// `p` into `dst` (one row).
    fn write(&self, p: &Params, dst: &mut [f64]) {
        let k = self.k;
        let mut rows = dst.chunks_exact_mut(k);
        for src in [&p.alpha[..k], &p.mu[..k], &p.shape[..k]] {
            if let Some(d) = rows.next() {
                d.copy_from_slice(src);
            }
        }
        if let (true, Some(d)) = (self.df, rows.next()) {
            d.copy_from_slice(&p.df[..k]);
        }
        if let (true, Some(d)) = (self.noise, dst.get_mut(self.noise_at())) {
            *d = p.noise;
        }
    }

    /// Row `f` of `v` (`init`, or parameters from the device); NaN where
    /// `v` is short of it.
    pub fn params(&self, v: &[f64], f: usize) -> Params {
        let (k, w) = (self.k, self.width());
        let at = |j: usize| v.get(f * w + j).copied().unwrap_or(f64::NAN);
        let mut out = Params::zeroed(k);
        for m in 0..k {
            out.alpha[m] = at(m);
            out.mu[m] = at(k + m);
            out.shape[m] = at(2 * k + m);
            if self.df {
                out.df[m] = at(3 * k + m);
            }
        }
        if self.noise {
            out.noise = at(self.noise_at());
        }
        out.df_fixed = self.df_fixed;
        out
    }
}

/// Packs the chunk in parallel, dataset by dataset, straight into the
/// kernel's arrays: observations as (x, g) pairs, and the starting values of
/// fits j*S .. (j+1)*S of the chunk's dataset j (its starts first_start + 0..S). A start that could not be
/// drawn keeps NaN parameters (the kernel fails it at once) and is recorded
/// as such. `weighted`: the call has weights (Task::weighted). `staging`:
/// the GPU's pinned buffers (None: ordinary memory).
pub fn pack(
    work: &Work,
    chunk: &Chunk,
    weighted: bool,
    threads: usize,
    cancel: &AtomicBool,
    staging: Option<&Arc<Staging>>,
) -> Result<Packed, Error> {
    let t = &work.task;
    let starts = t.starts as usize;
    let sets: Vec<&Prepared> = chunk.datasets.iter().filter_map(|&d| work.datasets[d]).collect();
    let nd = sets.len();
    if nd != chunk.datasets.len() {
        return Err(Error::Internal("an invalid dataset reached cuda-batched".into()));
    }
    if t.noise && sets.iter().any(|ds| ds.noise.is_none()) {
        return Err(Error::Internal("a dataset without its noise component reached cuda-batched".into()));
    }
    let df_fixed = sets.first().is_some_and(|ds| !ds.fixed_df.is_empty());
    if sets.iter().any(|ds| ds.fixed_df.is_empty() == df_fixed) {
        return Err(Error::Internal("datasets of one call with and without a fixed df reached cuda-batched".into()));
    }
    let row = Row { k: t.k, df: t.family.has_third(), noise: t.noise, df_fixed };
    let w = row.width();
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
    let mut init = HostBuf::take(staging, n_fits * w);
    init.fill(f64::NAN);
    let mut p = Packed {
        obs: HostBuf::take(staging, 2 * total),
        obs32: HostBuf::take(staging, if t.mixed_precision { 2 * total } else { 0 }),
        noise_t: HostBuf::take(staging, if t.noise { total } else { 0 }),
        weights: HostBuf::take(staging, if weighted { total } else { 0 }),
        ds_total: if weighted { sets.iter().map(|ds| ds.total).collect() } else { Vec::new() },
        // a row per dataset when any has one (all NaN: nothing fixed there)
        ds_fixed: if sets.iter().any(|ds| ds.fixed.is_some()) {
            sets.iter()
                .map(|ds| ds.fixed.unwrap_or_else(|| Fixed::none(t.k)))
                .flat_map(|f| [&f.0.alpha[..t.k], &f.0.mu[..t.k], &f.0.shape[..t.k]].concat())
                .collect()
        } else {
            Vec::new()
        },
        ds_offset,
        ds_n: ds_n.map_err(Error::Gpu)?,
        ds_hsum: sets.iter().map(|ds| ds.h_sum).collect(),
        ds_spread: sets.iter().map(|ds| ds.spread).collect(),
        fit_ds: vec![0; n_fits],
        init,
        drawn: vec![false; n_fits],
        row,
    };
    let (mut obs, mut obs32, mut noise_t) = (&mut p.obs[..], &mut p.obs32[..], &mut p.noise_t[..]);
    let mut weights = &mut p.weights[..];
    let (mut fit_ds, mut init, mut drawn) = (&mut p.fit_ds[..], &mut p.init[..], &mut p.drawn[..]);
    let mut pieces = Vec::with_capacity(nd);
    for ds in &sets {
        let (o, rest_o) = std::mem::take(&mut obs).split_at_mut(2 * ds.x.len());
        let (o32, rest_o32) =
            std::mem::take(&mut obs32).split_at_mut(if t.mixed_precision { 2 * ds.x.len() } else { 0 });
        let (nt, rest_nt) = std::mem::take(&mut noise_t).split_at_mut(if t.noise { ds.x.len() } else { 0 });
        let (wt, rest_wt) = std::mem::take(&mut weights).split_at_mut(if weighted { ds.x.len() } else { 0 });
        weights = rest_wt;
        let (f, rest_f) = std::mem::take(&mut fit_ds).split_at_mut(starts);
        let (i, rest_i) = std::mem::take(&mut init).split_at_mut(starts * w);
        let (d, rest_d) = std::mem::take(&mut drawn).split_at_mut(starts);
        pieces.push(Mutex::new((o, o32, nt, wt, f, i, d)));
        (obs, obs32, noise_t, fit_ds, init, drawn) = (rest_o, rest_o32, rest_nt, rest_f, rest_i, rest_d);
    }
    queue::for_each_light(nd, threads, cancel, |j| {
        let ds = sets[j];
        let mut piece = pieces[j].lock().unwrap_or_else(PoisonError::into_inner);
        let (obs, obs32, noise_t, weights, fit_ds, init, drawn) = &mut *piece;
        for (i, (x, g)) in ds.x.iter().zip(&ds.g).enumerate() {
            obs[2 * i] = *x;
            obs[2 * i + 1] = *g;
        }
        for (o32, o) in obs32.iter_mut().zip(obs.iter()) {
            *o32 = *o as f32;
        }
        if let Some(t) = ds.noise_terms() {
            noise_t.copy_from_slice(&t[..noise_t.len()]);
        }
        match &ds.w {
            Some(w) => weights.copy_from_slice(&w[..weights.len()]),
            None => weights.fill(1.0),
        }
        for s in 0..starts {
            fit_ds[s] = j as i32;
            if let Some(start) = work.initial_params(chunk.datasets[j], t.first_start + s as u32) {
                row.write(&start, &mut init[s * w..(s + 1) * w]);
                drawn[s] = true;
            }
        }
    })?;
    drop(pieces);
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows round-trip, in em_batched.cu's order: alpha, mu, shape, the t's
    /// df, the noise's weight last.
    #[test]
    fn rows_hold_what_the_kernel_reads_in_its_order() {
        let mut p = Params::zeroed(2);
        p.alpha[..2].copy_from_slice(&[0.3, 0.6]);
        p.mu[..2].copy_from_slice(&[-1.0, 4.0]);
        p.shape[..2].copy_from_slice(&[0.5, 2.0]);
        p.df[..2].copy_from_slice(&[3.0, 30.0]);
        p.noise = 0.1;
        for (df, noise, want) in [
            (false, false, vec![0.3, 0.6, -1.0, 4.0, 0.5, 2.0]),
            (false, true, vec![0.3, 0.6, -1.0, 4.0, 0.5, 2.0, 0.1]),
            (true, false, vec![0.3, 0.6, -1.0, 4.0, 0.5, 2.0, 3.0, 30.0]),
            (true, true, vec![0.3, 0.6, -1.0, 4.0, 0.5, 2.0, 3.0, 30.0, 0.1]),
        ] {
            let row = Row { k: 2, df, noise, df_fixed: df };
            assert_eq!(row.width(), want.len());
            let mut v = vec![f64::NAN; 2 * row.width()];
            row.write(&p, &mut v[row.width()..]);
            assert_eq!(&v[row.width()..], &want[..]);
            let back = row.params(&v, 1);
            let mut expected = Params::zeroed(2);
            expected.alpha = p.alpha;
            expected.mu = p.mu;
            expected.shape = p.shape;
            if df {
                expected.df = p.df;
            }
            if noise {
                expected.noise = p.noise;
            }
            expected.df_fixed = df;
            assert_eq!(back, expected);
            // a row past the end reads as NaN, not a panic
            assert!(row.params(&v, 5).alpha[0].is_nan());
        }
    }
}
