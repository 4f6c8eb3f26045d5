//! The parametric bootstrap as one bulk job: B replicates of every dataset
//! drawn from its fitted mixture (simulate.rs), each refitted with K0 + e
//! components for every e asked for, on one engine, block by block so that
//! the replicates of a block (of GPU_BLOCKS_IN_FLIGHT smaller ones on a
//! GPU), not of the whole call, are held at a time.
//! A replicate and its refits depend only on the seed, its dataset's values,
//! K0 and its index, so they are the same on every engine, with any blocks,
//! and whatever else the call holds.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::call;
use crate::dataset::{hash_values, Invalid};
use crate::engine::counters::Counters;
use crate::engine::{queue, Engine, EngineKind};
use crate::error::Error;
use crate::family::{component_sd, with_family, ComponentFamily};
use crate::job::{Fit, Job, Settings};
use crate::limits::{BOOTSTRAP_BLOCK_VALUES, MAX_COMPONENTS};
use crate::noise::Support;
use crate::outcome::Status;
use crate::params::{Family, Params};
use crate::simulate::{draw_mixture, draw_mixture_within, replicate_rng};

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
            return bad(
                "fits",
                format!("a fit of {} components cannot be refitted with {} (at most {MAX_COMPONENTS})", p.k, p.k + top),
            );
        }
        if self.job.censored.iter().any(|c| !c.is_empty()) {
            return bad("fits", "fits of censored data cannot be bootstrapped yet".into());
        }
        // each dataset's fixed values go with its null's K (its refits')
        for (f, p) in self.job.fixed.iter().zip(&self.null) {
            if let (Some(f), Some(p)) = (f, p) {
                let settings = Settings { components: vec![p.k], ..self.job.settings.clone() };
                if let Some(message) = (f.k() != p.k)
                    .then(|| "values for another K than the fit's".to_string())
                    .or_else(|| settings.fixed_problem(f))
                {
                    return bad("fits", format!("fixed: {message}"));
                }
            }
        }
        Job {
            settings: Settings { components: vec![1], ..self.job.settings.clone() },
            fixed: Vec::new(),
            censored: Vec::new(),
            ..self.job.clone()
        }
        .validate()
    }
}

/// Draws and refits every replicate of `b` on `kind` with `threads` host
/// threads. Setting `cancel` makes it return `Error::Cancelled` soon after.
pub fn bootstrap(
    b: &Bootstrap,
    kind: EngineKind,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<Vec<Refits>, Error> {
    b.validate()?;
    call::supported(&b.job, kind)?;
    let engine = kind.engine(threads, &b.job.settings.devices, &b.job.tuning)?;
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
    let in_flight = match kind {
        EngineKind::Cpu => 1,
        _ => job.tuning.blocks_in_flight.unwrap_or(GPU_BLOCKS_IN_FLIGHT),
    };
    refit_blocks(b, engine.as_ref(), threads, cancel, counters, BOOTSTRAP_BLOCK_VALUES / in_flight, in_flight)
}

/// `bootstrap` in blocks of at most `block_values` replicate values,
/// `in_flight` blocks at a time.
fn refit_blocks(
    b: &Bootstrap,
    engine: &dyn Engine,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
    block_values: usize,
    in_flight: usize,
) -> Result<Vec<Refits>, Error> {
    let job = &b.job;
    let reps = b.replicates as usize;
    let nd = job.datasets.len();
    let mut out: Vec<Refits> = b
        .extra
        .iter()
        .map(|&extra| Refits { extra, refits: vec![Refit::NONE; nd * reps], observed: vec![Refit::NONE; nd] })
        .collect();
    // the datasets with a null, in order, each with its null
    let nulls: Vec<(usize, Params)> = b.null.iter().enumerate().filter_map(|(d, p)| p.map(|p| (d, p))).collect();
    let blocks = plan_blocks(&nulls, |d| job.datasets[d].len() * reps, block_values);
    let done = Mutex::new(&mut out);
    queue::run(
        blocks.len(),
        in_flight,
        cancel,
        || Ok(()),
        |_, i| {
            let block = &nulls[blocks[i].clone()];
            let refits = refit_block(b, block, engine, threads, cancel, counters)?;
            let mut out = done.lock().unwrap_or_else(PoisonError::into_inner);
            for (slot, refits) in refits.into_iter().enumerate() {
                for (d, r, refit) in refits {
                    let target =
                        if r == 0 { out[slot].observed.get_mut(d) } else { out[slot].refits.get_mut(d * reps + r - 1) };
                    if let Some(target) = target {
                        *target = refit;
                    }
                }
            }
            Ok(())
        },
    )?;
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    Ok(out)
}

/// Blocks refitted at once on a GPU engine, each on its own host thread:
/// one block's host work (drawing, preparing, packing, uploading,
/// recording) overlaps the others' kernels; one block at a time left the GPU
/// idle between engine calls. Each holds BOOTSTRAP_BLOCK_VALUES /
/// GPU_BLOCKS_IN_FLIGHT values, so the memory held stays the same. On one
/// H200, LRT of 1,000 datasets x B = 199: 24.1-24.3 s with 1, 21.9-22.1
/// with 2, 20.5-20.6 with 3 (inst/bench/results-bootstrap.md); at B = 999,
/// 4 or 6 are no faster than 3 (the kernel is then the limit).
/// Tuning::blocks_in_flight overrides it, for that measurement.
const GPU_BLOCKS_IN_FLIGHT: usize = 3;

/// Consecutive ranges of `nulls`, each of datasets with at most `limit`
/// replicate values in all (`values(d)` for dataset d), at least one.
fn plan_blocks(nulls: &[(usize, Params)], values: impl Fn(usize) -> usize, limit: usize) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let mut next = 0;
    while next < nulls.len() {
        let (first, mut held) = (next, 0);
        while next < nulls.len() && (next == first || held + values(nulls[next].0) <= limit) {
            held += values(nulls[next].0);
            next += 1;
        }
        blocks.push(first..next);
    }
    blocks
}

/// A block's refits with K0 + e components for one e: (dataset, r, refit),
/// r = 0 for the dataset's own data and b + 1 for replicate b.
type BlockRefits = Vec<(usize, usize, Refit)>;

/// Draws the replicates of `block` and refits each, and each dataset's own
/// data, with K0 + e components for every e of `b.extra` (one list per e).
fn refit_block(
    b: &Bootstrap,
    block: &[(usize, Params)],
    engine: &dyn Engine,
    threads: usize,
    cancel: &AtomicBool,
    counters: &Counters,
) -> Result<Vec<BlockRefits>, Error> {
    let job = &b.job;
    let reps = b.replicates as usize;
    let clock = std::time::Instant::now();
    let hashes: Vec<u64> = block.iter().map(|&(d, _)| hash_values(job.datasets[d])).collect();
    // the supports the replicates' noise is drawn over, once per dataset
    let supports: Vec<Option<Support>> = block.iter().map(|&(d, _)| noise_support(job, d)).collect();
    let drawn = queue::map(block.len() * reps, threads, cancel, |j| {
        let (i, r) = (j / reps, j % reps);
        let (d, null) = block[i];
        let mut rng = replicate_rng(job.settings.seed, hashes[i], null.k, r as u32);
        let (family, noise, n) = (job.settings.family, supports[i].as_ref(), job.datasets[d].len());
        // a truncated fit's replicates are of its truncated mixture
        match job.truncation.get(d).copied().flatten() {
            Some(w) => draw_mixture_within(family, &null, noise, &w, n, &mut rng),
            None => draw_mixture(family, &null, noise, n, &mut rng),
        }
    })?;
    counters.lap("simulate", clock);
    let mut out: Vec<BlockRefits> = vec![Vec::new(); b.extra.len()];
    let mut ks: Vec<usize> = block.iter().map(|(_, p)| p.k).collect();
    ks.sort_unstable();
    ks.dedup();
    for &k in &ks {
        let members: Vec<usize> = (0..block.len()).filter(|&i| block[i].1.k == k).collect();
        // each member's own data, then its replicates
        let per = reps + 1;
        let datasets: Vec<&[f64]> = members
            .iter()
            .flat_map(|&i| {
                std::iter::once(job.datasets[block[i].0])
                    .chain(drawn[i * reps..(i + 1) * reps].iter().map(Vec::as_slice))
            })
            .collect();
        for (slot, &e) in b.extra.iter().enumerate() {
            let init = |i: usize| match e {
                0 => Some(block[i].1),
                1 => Some(split_heaviest(job.settings.family, &block[i].1)),
                _ => None,
            };
            let inits = members.iter().flat_map(|&i| std::iter::repeat_n(init(i), per)).collect();
            // a support the user gave holds for the replicates too; the
            // default, the data's range, is each replicate's own, as a fit
            // of that replicate would have it
            let given = |i: usize| job.noise_supports.get(block[i].0).copied().flatten();
            let noise_supports = members.iter().flat_map(|&i| std::iter::repeat_n(given(i), per)).collect();
            // a fit's fixed values hold in the refits of its K (not in the
            // K + 1 alternative's)
            let fixed = match job.fixed.is_empty() {
                true => Vec::new(),
                false => members
                    .iter()
                    .flat_map(|&i| {
                        let f = job.fixed.get(block[i].0).copied().flatten().filter(|f| f.k() == k + e);
                        std::iter::repeat_n(f, per)
                    })
                    .collect(),
            };
            // a truncated fit's refits (its data's and its replicates') are
            // truncated to its window
            let truncation = match job.truncation.is_empty() {
                true => Vec::new(),
                false => members
                    .iter()
                    .flat_map(|&i| std::iter::repeat_n(job.truncation.get(block[i].0).copied().flatten(), per))
                    .collect(),
            };
            let refit = Job {
                datasets: datasets.clone(),
                settings: Settings {
                    components: vec![k + e],
                    keep_starts: false,
                    standard_errors: false,
                    ..job.settings.clone()
                },
                inits,
                tuning: job.tuning.clone(),
                noise_supports,
                given_starts: Vec::new(),
                weights: Vec::new(),
                fixed,
                truncation,
                censored: Vec::new(),
            };
            let fits = call::run(&refit, engine, threads, cancel, counters, false)?;
            out[slot].extend(fits.iter().enumerate().map(|(j, f)| (block[members[j / per]].0, j % per, Refit::of(f))));
        }
    }
    Ok(out)
}

/// The noise component's support of dataset `d` of `job` (None without a
/// noise component): the one given, or the data's range.
fn noise_support(job: &Job, d: usize) -> Option<Support> {
    if !job.settings.noise {
        return None;
    }
    job.noise_supports.get(d).copied().flatten().or_else(|| Support::range_of(job.datasets[d]))
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
    let (lo, hi) = with_family!(family, F => F::split_means(p.mu[h], half));
    q.k = p.k + 1;
    q.alpha[h] = p.alpha[h] / 2.0;
    q.alpha[p.k] = p.alpha[h] / 2.0;
    q.mu[h] = lo;
    q.mu[p.k] = hi;
    q.shape[p.k] = p.shape[h];
    q.df[p.k] = p.df[h];
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cpu::Cpu;
    use crate::tuning::Tuning;

    #[test]
    fn refits_do_not_depend_on_the_blocks_or_how_many_run_at_once() {
        let smooth = |n: usize, shift: f64| -> Vec<f64> {
            (0..n).map(|i| shift + (i as f64 * 0.618_034).fract() * (1.0 + (i % 3) as f64)).collect()
        };
        let data = [smooth(120, 0.0), smooth(90, 3.0), smooth(60, -1.0), vec![1.0, 2.5], smooth(100, 2.0)];
        let job = Job {
            datasets: data.iter().map(|d| d.as_slice()).collect(),
            inits: Vec::new(),
            settings: Settings {
                family: Family::Normal,
                components: vec![1],
                max_iters: 300,
                epsilon: 1e-8,
                starts: 3,
                seed: 5,
                start_scheme: Default::default(),
                mixed_precision: false,
                accelerate: true,
                keep_starts: false,
                screen: Default::default(),
                restarts: 1,
                refine: 0,
                short_runs: Default::default(),
                devices: Vec::new(),
                standard_errors: false,
                noise: false,
                df: Vec::new(),
                criterion: Default::default(),
                equal_scale: false,
            },
            tuning: Tuning::default(),
            noise_supports: Vec::new(),
            given_starts: Vec::new(),
            weights: Vec::new(),
            fixed: Vec::new(),
            truncation: Vec::new(),
            censored: Vec::new(),
        };
        let one = Params::from_slices(&[1.0], &[1.0], &[0.8]).unwrap();
        let two = Params::from_slices(&[0.4, 0.6], &[0.5, 2.5], &[0.4, 0.6]).unwrap();
        // dataset 3 is too short for two components; dataset 2 has no null
        let b = Bootstrap {
            job,
            null: vec![Some(one), Some(two), None, Some(one), Some(two)],
            replicates: 7,
            extra: vec![0, 1],
        };
        let cancel = AtomicBool::new(false);
        let engine = Cpu { threads: 2 };
        let whole = refit_blocks(&b, &engine, 2, &cancel, &Counters::default(), usize::MAX, 1).unwrap();
        let nulls: Vec<(usize, Params)> = b.null.iter().enumerate().filter_map(|(d, p)| p.map(|p| (d, p))).collect();
        assert_eq!(plan_blocks(&nulls, |d| data[d].len() * 7, 500).len(), 4, "one block per dataset with a null");
        for in_flight in [1, 2, 3] {
            let blocks = refit_blocks(&b, &engine, 2, &cancel, &Counters::default(), 500, in_flight).unwrap();
            // Debug prints every float exactly (and NaN equal to NaN)
            assert_eq!(format!("{blocks:?}"), format!("{whole:?}"));
        }
        // every replicate of a dataset with a null got refits of both Ks; the others none
        assert!(
            whole[0].refits[7..14].iter().all(|r| r.params.is_some())
                && whole[1].refits[7..14].iter().all(|r| r.params.is_some())
        );
        assert!(whole[0].refits[14..21].iter().all(|r| r.params.is_none()) && whole[0].observed[2].params.is_none());
    }

    #[test]
    fn with_noise_the_replicates_and_refits_have_it() {
        // two normal bumps and a few gross outliers
        let mut data: Vec<f64> = (0..300)
            .map(|i| {
                let u = (i as f64 * 0.618_034).fract();
                if i % 2 == 0 {
                    -2.0 + u
                } else {
                    2.0 + u
                }
            })
            .collect();
        data.extend([-40.0, -25.0, 30.0, 45.0]);
        let job = |noise: bool, support: Option<Support>| Job {
            datasets: vec![data.as_slice()],
            inits: Vec::new(),
            settings: Settings {
                family: Family::Normal,
                components: vec![2],
                max_iters: 500,
                epsilon: 1e-8,
                starts: 3,
                seed: 3,
                start_scheme: Default::default(),
                mixed_precision: false,
                accelerate: true,
                keep_starts: false,
                screen: Default::default(),
                restarts: 1,
                refine: 0,
                short_runs: Default::default(),
                devices: Vec::new(),
                standard_errors: false,
                noise,
                df: Vec::new(),
                criterion: Default::default(),
                equal_scale: false,
            },
            tuning: Tuning::default(),
            noise_supports: vec![support],
            given_starts: Vec::new(),
            weights: Vec::new(),
            fixed: Vec::new(),
            truncation: Vec::new(),
            censored: Vec::new(),
        };
        let mut null = Params::from_slices(&[0.49, 0.49], &[-1.5, 2.5], &[0.3, 0.3]).unwrap();
        null.noise = 0.02;
        let run = |job: Job| {
            let b = Bootstrap { job, null: vec![Some(null)], replicates: 6, extra: vec![0, 1] };
            bootstrap(&b, EngineKind::Cpu, 2, &AtomicBool::new(false), &Counters::default()).unwrap()
        };
        let weights = |r: &Refits| -> Vec<f64> {
            r.observed.iter().chain(&r.refits).map(|f| f.params.map_or(f64::NAN, |p| p.noise)).collect()
        };
        for refits in [run(job(true, None)), run(job(true, Support::new(-100.0, 100.0)))] {
            for r in &refits {
                let w = weights(r);
                assert!(w.iter().all(|&w| w > 0.0 && w < 0.2), "every refit fits a noise weight: {w:?}");
            }
        }
        // without noise, the same null's noise weight is neither drawn nor fitted
        for r in &run(job(false, None)) {
            assert!(weights(r).iter().all(|&w| w == 0.0 || w.is_nan()));
        }
    }

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
