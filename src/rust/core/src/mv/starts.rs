//! A multivariate start: K seeds drawn by D² weighting (k-means++: each
//! next seed an observation drawn with probability proportional to its
//! squared distance from the nearest seed so far, so that small groups
//! away from the bulk are seeded), every observation given to its nearest
//! seed, and the M-step of that partition. The generator is starts.rs's,
//! a pure function of (seed, start index, the dataset's values), so a
//! start never depends on threads, order, chunking or engine. A t
//! mixture's start is the Normal's with every ν at its start value.
//! Weighted data (MvData::w) draw each seed with probability proportional
//! to its weight times its D² (the first by weight alone), so that a row of
//! weight c is drawn as c repeated rows would be, and a row of weight 0
//! never; the partition's M-step weighs its rows.

use rand::RngExt;

use super::data::MvData;
use super::em::{constrain, m_step, MvStats};
use super::model::{terms, Model, MvParams, Structure};
use crate::limits::NOISE_START;
use crate::starts::start_rng;

/// Draws a start makes before it gives up (each a fresh set of seeds); a
/// draw fails when a block of the partition is too small for a covariance.
const TRIES: usize = 20;

/// Start `start` of `data` for `k` components, or `None` if no usable
/// partition was drawn; `df`: t's ν per component (empty: Normal).
pub fn initial_params(
    data: &MvData,
    k: usize,
    structure: Structure,
    df: &[f64],
    seed: u64,
    start: u32,
) -> Option<MvParams> {
    let rng = &mut start_rng(seed, data.hash, start);
    let mut p = (0..TRIES).find_map(|_| {
        let (seeds, block) = d2_partition(data, k, rng)?;
        partition_params(data, &seeds, &block, structure)
    })?;
    p.df = df.to_vec();
    Some(p)
}

/// K observations' indices by D² weighting, and the partition that gives
/// each observation to its nearest seed (ties to the first): each seed's
/// distances are taken once, for the next draw's weights and the
/// partition alike. `None` when the data have fewer than K distinct
/// points.
fn d2_partition(data: &MvData, k: usize, rng: &mut rand_pcg::Pcg64) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = data.n;
    let first = match &data.w {
        None => rng.random_range(0..n),
        Some(w) => pick(w.iter().copied(), rng.random::<f64>() * data.total, n)?,
    };
    let mut seeds = vec![first];
    let mut nearest = vec![f64::INFINITY; n];
    let mut block = vec![0usize; n];
    let mut dist = vec![0.0; n];
    loop {
        let m = seeds.len() - 1;
        squared_distances(data, seeds[m], &mut dist);
        for ((best, b), &d) in nearest.iter_mut().zip(block.iter_mut()).zip(&dist) {
            if d < *best {
                *best = d;
                *b = m;
            }
        }
        if seeds.len() == k {
            return Some((seeds, block));
        }
        let next = match &data.w {
            None => {
                let total: f64 = nearest.iter().sum();
                if !(total > 0.0 && total.is_finite()) {
                    return None;
                }
                pick(nearest.iter().copied(), rng.random::<f64>() * total, n)?
            }
            Some(w) => {
                let weighted = || nearest.iter().zip(w).map(|(d, w)| d * w);
                let total: f64 = weighted().sum();
                if !(total > 0.0 && total.is_finite()) {
                    return None;
                }
                pick(weighted(), rng.random::<f64>() * total, n)?
            }
        };
        seeds.push(next);
    }
}

/// The index `target` falls on when the n `weights` are laid end to end
/// (the last positive one where rounding leaves it past the end); `None`
/// if none is positive.
fn pick(weights: impl Iterator<Item = f64> + Clone, mut target: f64, n: usize) -> Option<usize> {
    weights
        .clone()
        .position(|w| {
            target -= w;
            target < 0.0 && w > 0.0
        })
        .or_else(|| weights.take(n).enumerate().filter(|&(_, w)| w > 0.0).map(|(i, _)| i).last())
}

/// Every observation's squared distance from observation `from`, into
/// `out`: a pass over each variable's contiguous values (the variables
/// summed in order, from 0).
fn squared_distances(data: &MvData, from: usize, out: &mut [f64]) {
    out.iter_mut().for_each(|v| *v = 0.0);
    for j in 0..data.d {
        let col = &data.z[j * data.n..(j + 1) * data.n];
        let s = data.at(from, j);
        for (o, &x) in out.iter_mut().zip(col) {
            *o += (x - s) * (x - s);
        }
    }
}

/// The M-step of the partition `block` (each observation's seed).
fn partition_params(data: &MvData, seeds: &[usize], block: &[usize], structure: Structure) -> Option<MvParams> {
    let (n, d, k) = (data.n, data.d, seeds.len());
    let centre: Vec<f64> = seeds.iter().flat_map(|&s| (0..d).map(move |j| data.at(s, j))).collect();
    let mut st = MvStats {
        s0: vec![0.0; k],
        s1: vec![0.0; k * d],
        s2: vec![0.0; k * d * d],
        centre,
        su: Vec::new(),
        s_l1p: Vec::new(),
        s_u2: Vec::new(),
        df: Vec::new(),
        s_noise: 0.0,
        loglik: 0.0,
        log_map: 0.0,
    };
    // one pass over the observations, each sum taken over them in order
    // (each term times the row's weight: 1 without weights, the same bits)
    let mut c = vec![0.0; d];
    let mut members = vec![0usize; k];
    for (i, &m) in block.iter().enumerate().take(n) {
        let w = data.weight(i);
        st.s0[m] += w;
        members[m] += usize::from(w > 0.0);
        let centre = &st.centre[m * d..(m + 1) * d];
        for (j, cj) in c.iter_mut().enumerate() {
            *cj = data.at(i, j) - centre[j];
        }
        let s1 = &mut st.s1[m * d..(m + 1) * d];
        let s2 = &mut st.s2[m * d * d..(m + 1) * d * d];
        for j in 0..d {
            let wc = w * c[j];
            s1[j] += wc;
            for l in 0..=j {
                s2[j + d * l] += wc * c[l];
            }
        }
    }
    // a block needs more observations (of positive weight) than dimensions
    // for a covariance
    if members.iter().any(|&c| c < d + 1) && structure != Structure::Tied {
        return None;
    }
    let mut p = m_step(&st, data.total, d, Model::normal(structure)).ok()?;
    // a noise component starts small, the components where the partition
    // put them (as univariate starts, limits::NOISE_START)
    if data.log_noise.is_some() {
        p.alpha.iter_mut().for_each(|a| *a *= 1.0 - NOISE_START);
        p.noise = NOISE_START;
    }
    Some(p)
}

/// A start the user gave (`init`, in the data's units) as the fits take
/// it: standardised, its covariances made into the structure's (a full
/// matrix given to a diagonal fit keeps its diagonal), t's ν from `df`
/// where the start has none, and with a noise component a weight for it
/// (NOISE_START, the components' weights scaled to share the rest, where
/// the start has none); `None` if a covariance is not positive definite
/// in the standardised units.
pub fn given_params(data: &MvData, given: &MvParams, structure: Structure, df: &[f64]) -> Option<MvParams> {
    let mut p = given.to_standardised(&data.scaling);
    if p.df.len() != df.len() || p.df.iter().any(|v| !v.is_finite()) {
        p.df = df.to_vec();
    }
    if data.log_noise.is_some() && !(p.noise > 0.0) {
        p.alpha.iter_mut().for_each(|a| *a *= 1.0 - NOISE_START);
        p.noise = NOISE_START;
    }
    constrain(&mut p, structure);
    terms(&p).map(|_| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> MvData {
        let mut x = vec![0.0; 2 * n];
        for i in 0..n {
            let t = (i as f64 * 0.618_033_988_75).fract();
            let c = if i % 10 == 0 { 8.0 } else { 0.0 };
            x[i] = c + t;
            x[n + i] = c + (i as f64 * 0.414_213_562_37).fract();
        }
        MvData::prepare(&x, n, 2, None, false, false).unwrap()
    }

    #[test]
    fn starts_are_pure_functions_of_seed_start_and_data() {
        let d = data(200);
        let a = initial_params(&d, 3, Structure::Full, &[], 7, 4).unwrap();
        assert_eq!(Some(a.clone()), initial_params(&d, 3, Structure::Full, &[], 7, 4));
        assert_ne!(Some(a), initial_params(&d, 3, Structure::Full, &[], 7, 5));
    }

    #[test]
    fn a_small_group_away_from_the_bulk_is_seeded() {
        let d = data(300);
        // the 10% group sits far out: D² seeding finds it in most starts
        let seeded = (0..20)
            .filter(|&s| {
                let p = initial_params(&d, 2, Structure::Full, &[], 1, s).unwrap();
                (0..2).any(|m| (p.alpha[m] - 0.1).abs() < 0.02)
            })
            .count();
        assert!(seeded >= 15, "{seeded}");
    }

    #[test]
    fn a_given_start_is_standardised_and_made_into_the_structure() {
        let d = data(200);
        let (c, s) = (&d.scaling.center, &d.scaling.scale);
        let given = MvParams {
            k: 1,
            d: 2,
            alpha: vec![1.0],
            mu: vec![c[0] + s[0], c[1]],
            sigma: vec![s[0] * s[0], 0.5 * s[0] * s[1], 0.5 * s[0] * s[1], 4.0 * s[1] * s[1]],
            noise: 0.0,
            df: Vec::new(),
        };
        let p = given_params(&d, &given, Structure::Full, &[]).unwrap();
        assert!((p.mu[0] - 1.0).abs() < 1e-12 && p.mu[1].abs() < 1e-12);
        assert!((p.sigma[1] - 0.5).abs() < 1e-12 && (p.sigma[3] - 4.0).abs() < 1e-12);
        let back = p.to_data_units(&d.scaling);
        assert!(back.mu.iter().zip(&given.mu).all(|(a, b)| (a - b).abs() < 1e-12 * (1.0 + b.abs())));
        let diagonal = given_params(&d, &given, Structure::Diagonal, &[]).unwrap();
        assert_eq!(diagonal.sigma[1], 0.0);
        assert!((diagonal.sigma[3] - 4.0).abs() < 1e-12);
        let spherical = given_params(&d, &given, Structure::Spherical, &[]).unwrap();
        assert!((spherical.sigma[0] - 2.5).abs() < 1e-12 && (spherical.sigma[3] - 2.5).abs() < 1e-12);
        // t: the call's ν where the start has none
        assert_eq!(given_params(&d, &given, Structure::Full, &[7.0]).unwrap().df, vec![7.0]);
        // not positive definite: no start
        let mut singular = given.clone();
        singular.sigma = vec![1.0, 2.0, 2.0, 1.0];
        assert!(given_params(&d, &singular, Structure::Full, &[]).is_none());
    }

    #[test]
    fn weighted_rows_are_seeded_by_weight_and_rows_of_weight_0_never() {
        let n = 300;
        let plain = data(n);
        let x: Vec<f64> = (0..2)
            .flat_map(|j| (0..n).map(move |i| (j, i)))
            .map(|(j, i)| plain.scaling.center[j] + plain.scaling.scale[j] * plain.at(i, j))
            .collect();
        // the far group (every tenth row) weighted 0: never a seed, and the
        // partition's weights are the rest's alone
        let w: Vec<f64> = (0..n).map(|i| if i % 10 == 0 { 0.0 } else { 1.0 + (i % 3) as f64 }).collect();
        let d = MvData::prepare(&x, n, 2, Some(&w), false, false).unwrap();
        for start in 0..30 {
            let mut rng = start_rng(1, d.hash, start);
            let (seeds, _) = d2_partition(&d, 3, &mut rng).unwrap();
            assert!(seeds.iter().all(|&s| w[s] > 0.0), "start {start}: {seeds:?}");
            let p = initial_params(&d, 2, Structure::Full, &[], 1, start).unwrap();
            assert!((p.alpha.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn too_few_distinct_points_give_no_start() {
        let x = [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0];
        let d = MvData::prepare(&x, 4, 2, None, false, false).unwrap();
        assert!(initial_params(&d, 3, Structure::Full, &[], 1, 0).is_none());
    }
}
