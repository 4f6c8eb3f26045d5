//! The parametric bootstrap as one bulk job: B replicates of every dataset
//! drawn from its fitted mixture (simulate.rs), each refitted with K0 + e
//! components for every e asked for, on one engine, block by block so that
//! the replicates of a block, not of the whole call, are held at a time.
//! A replicate and its refits depend only on the seed, its dataset's values,
//! K0 and its index, so they are the same on every engine, with any blocks,
//! and whatever else the call holds.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::call;
use crate::dataset::{hash_values, Invalid};
use crate::engine::counters::Counters;
use crate::engine::{queue, EngineKind};
use crate::error::Error;
use crate::job::{Fit, Job};
use crate::limits::{BOOTSTRAP_BLOCK_VALUES, MAX_COMPONENTS};
use crate::outcome::Status;
use crate::family::component_sd;
use crate::params::{Family, Params};
use crate::simulate::{draw_mixture, replicate_rng};

/// What to bootstrap: `job` holds the datasets (the replicates' sizes and
/// the seeds' source) and the refits' settings; its `components`, `inits`,
/// `keep_starts` and `standard_errors` are ignored.
#[derive(Clone, Debug)]
pub struct Bootstrap<'a> {
    pub job: Job<'a>,
    /// The mixture each dataset's replicates are drawn from (its fit, in
    /// its units); `None`: that dataset gets no replicates.
    pub null: Vec<Option<Params>>,
    /// Replicates per dataset, B.
    pub replicates: u32,
    /// Each replicate, and each dataset's own data, is refitted with K0 + e
    /// components for every e here (K0: its null's K). Start 0 is the
    /// null's parameters for e = 0 and the null with its heaviest component
    /// split in two for e = 1 (`split_heaviest`), so that the larger model's
    /// fit starts where the smaller one's is; the other starts are random.
    pub extra: Vec<usize>,
}

/// The outcome of one refit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Refit {
    pub status: Status,
    pub spurious: bool,
    /// NaN without a fit.
    pub loglik: f64,
    pub params: Option<Params>,
}

impl Refit {
    /// No replicate (the dataset has no null fit).
    pub const NONE: Refit = Refit { status: Status::Invalid, spurious: false, loglik: f64::NAN, params: None };

    fn of(f: &Fit) -> Refit {
        Refit { status: f.status, spurious: f.spurious, loglik: f.loglik, params: f.params }
    }
}

/// The refits with K0 + `extra` components, replicate b of dataset d at
/// d·B + b, and the same refit of each dataset's own data (the observed
/// statistic of a test is then computed exactly as its null replicates').
#[derive(Clone, Debug)]
pub struct Refits {
    pub extra: usize,
    pub refits: Vec<Refit>,
    pub observed: Vec<Refit>,
}

impl Bootstrap<'_> {
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |arg, message: String| Err(Error::Argument { arg, message });
        if self.null.len() != self.job.datasets.len() {
            return bad("fits", format!("{} null fits for {} datasets", self.null.len(), self.job.datasets.len()));
        }
        if self.replicates < 1 {
            return bad("B", "must be at least 1".into());
        }
        let top = self.extra.iter().max().copied().unwrap_or(0);
        if let Some(p) = self.null.iter().flatten().find(|p| p.k < 1 || p.k + top > MAX_COMPONENTS) {
            return bad("fits", format!("a fit of {} components cannot be refitted with {} (at most {MAX_COMPONENTS})", p.k, p.k + top));
        }
        Job { components: vec![1], ..self.job.clone() }.validate()
    }
}

/// Draws and refits every replicate of `b` on `kind` with `threads` host
/// threads. Setting `cancel` makes it return `Error::Cancelled` soon after.
pub fn bootstrap(b: &Bootstrap, kind: EngineKind, threads: usize, cancel: &AtomicBool, counters: &Counters) -> Result<Vec<Refits>, Error> {
    b.validate()?;
    let engine = kind.engine(threads, &b.job.devices)?;
    let job = &b.job;
    let reps = b.replicates as usize;
    let nd = job.datasets.len();
    counters.total.store(
        (0..nd)
            .filter_map(|d| b.null[d].map(|p| (d, p.k)))
            .map(|(d, k)| {
                let fits = |e: &usize| Invalid::too_short(job.datasets[d].len(), k + e).is_none();
                b.extra.iter().filter(|e| fits(e)).map(|&e| job.task(k + e).starts as usize).sum::<usize>() * (reps + 1)
            })
            .sum(),
        Ordering::Relaxed,
    );
    let mut out: Vec<Refits> =
        b.extra.iter().map(|&extra| Refits { extra, refits: vec![Refit::NONE; nd * reps], observed: vec![Refit::NONE; nd] }).collect();
    // the datasets with a null, in order, each with its null
    let nulls: Vec<(usize, Params)> = b.null.iter().enumerate().filter_map(|(d, p)| p.map(|p| (d, p))).collect();
    let mut next = 0;
    while next < nulls.len() {
        // the next block: datasets up to BOOTSTRAP_BLOCK_VALUES replicate values, at least one
        let mut values = 0;
        let first = next;
        while next < nulls.len() && (next == first || values + job.datasets[nulls[next].0].len() * reps <= BOOTSTRAP_BLOCK_VALUES) {
            values += job.datasets[nulls[next].0].len() * reps;
            next += 1;
        }
        let block = &nulls[first..next];
        let clock = std::time::Instant::now();
        let hashes: Vec<u64> = block.iter().map(|&(d, _)| hash_values(job.datasets[d])).collect();
        let drawn = queue::map(block.len() * reps, threads, cancel, |j| {
            let (i, r) = (j / reps, j % reps);
            let (d, null) = block[i];
            let mut rng = replicate_rng(job.seed, hashes[i], null.k, r as u32);
            draw_mixture(job.family, &null, job.datasets[d].len(), &mut rng)
        })?;
        counters.lap("simulate", clock);
        let mut ks: Vec<usize> = block.iter().map(|(_, p)| p.k).collect();
        ks.sort_unstable();
        ks.dedup();
        for &k in &ks {
            let members: Vec<usize> = (0..block.len()).filter(|&i| block[i].1.k == k).collect();
            // each member's own data, then its replicates
            let per = reps + 1;
            let datasets: Vec<&[f64]> = members
                .iter()
                .flat_map(|&i| std::iter::once(job.datasets[block[i].0]).chain(drawn[i * reps..(i + 1) * reps].iter().map(Vec::as_slice)))
                .collect();
            for (slot, &e) in b.extra.iter().enumerate() {
                let init = |i: usize| match e {
                    0 => Some(block[i].1),
                    1 => Some(split_heaviest(job.family, &block[i].1)),
                    _ => None,
                };
                let inits = members.iter().flat_map(|&i| std::iter::repeat_n(init(i), per)).collect();
                let refit = Job {
                    datasets: datasets.clone(),
                    components: vec![k + e],
                    inits,
                    keep_starts: false,
                    standard_errors: false,
                    ..job.clone()
                };
                let fits = call::run(&refit, engine.as_ref(), threads, cancel, counters, false)?;
                for (j, f) in fits.iter().enumerate() {
                    let (d, r) = (block[members[j / per]].0, j % per);
                    let target = if r == 0 { out[slot].observed.get_mut(d) } else { out[slot].refits.get_mut(d * reps + r - 1) };
                    if let Some(target) = target {
                        *target = Refit::of(f);
                    }
                }
            }
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
    }
    Ok(out)
}

/// A start for K + 1 components next to a K-component fit: its heaviest
/// component split into two of half its weight, at μ ∓ sd/2 (kept positive
/// for the inverse Gaussian) with its shape.
pub fn split_heaviest(family: Family, p: &Params) -> Params {
    let mut q = *p;
    if p.k >= MAX_COMPONENTS || p.k == 0 {
        return q;
    }
    let h = (0..p.k).fold(0, |h, m| if p.alpha[m] > p.alpha[h] { m } else { h });
    let half = component_sd(family, p.mu[h], p.shape[h]) / 2.0;
    let (lo, hi) = match family {
        Family::Normal => (p.mu[h] - half, p.mu[h] + half),
        Family::InvGauss => (p.mu[h] * (-half / p.mu[h]).exp(), p.mu[h] * (half / p.mu[h]).exp()),
    };
    q.k = p.k + 1;
    q.alpha[h] = p.alpha[h] / 2.0;
    q.alpha[p.k] = p.alpha[h] / 2.0;
    q.mu[h] = lo;
    q.mu[p.k] = hi;
    q.shape[p.k] = p.shape[h];
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_the_mixture_mean_and_positive_means() {
        for family in [Family::Normal, Family::InvGauss] {
            let p = Params::from_slices(&[0.3, 0.7], &[1.0, 3.0], &[30.0, 0.2]).unwrap();
            let q = split_heaviest(family, &p);
            assert_eq!(q.k, 3);
            assert!((q.alpha[..3].iter().sum::<f64>() - 1.0).abs() < 1e-15);
            assert_eq!((q.alpha[1], q.alpha[2], q.shape[2]), (0.35, 0.35, 0.2));
            assert!(q.mu[1] < 3.0 && q.mu[2] > 3.0 && q.mu[1] > 0.0);
            if family == Family::Normal {
                let mean = |p: &Params| (0..p.k).map(|m| p.alpha[m] * p.mu[m]).sum::<f64>();
                assert!((mean(&q) - mean(&p)).abs() < 1e-12);
            }
        }
    }
}
