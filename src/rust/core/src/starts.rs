//! Random starts (DESIGN §3, §5): the 2015 "subset" scheme, each start drawn
//! from a generator that is a pure function of (seed, start index, the
//! dataset's values), so a dataset's fit never depends on anything else in
//! the call, on threads or on the engine.

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::dataset::Prepared;
use crate::family;
use crate::limits::{MAX_DRAWS, OBS_PER_COMPONENT};
use crate::mathx::mix64;
use crate::mstep::check_component;
use crate::params::{Family, Params};

/// The generator of start `start` of the dataset whose values hash to
/// `data_hash`: the state comes from the seed and the data, the stream
/// (PCG's increment) from the start index.
pub fn start_rng(seed: u64, data_hash: u64, start: u32) -> Pcg64 {
    let hi = mix64(seed ^ 0x243f_6a88_85a3_08d3);
    let lo = mix64(data_hash ^ hi);
    let state = ((hi as u128) << 64) | lo as u128;
    Pcg64::new(state, start as u128)
}

/// One random start on (rescaled) data `x`: for each component, the ML
/// estimate of 3 distinct observations (redrawn while degenerate), equal
/// weights. `None` if some component found no usable subset.
pub fn draw_start(family: Family, x: &[f64], k: usize, spread: f64, rng: &mut Pcg64) -> Option<Params> {
    let n = x.len();
    if n < OBS_PER_COMPONENT {
        return None;
    }
    let mut p = Params::zeroed(k);
    for m in 0..k {
        let (mu, shape) = (0..MAX_DRAWS).find_map(|_| {
            let i = rng.random_range(0..n);
            let j = loop {
                let j = rng.random_range(0..n);
                if j != i {
                    break j;
                }
            };
            let l = loop {
                let l = rng.random_range(0..n);
                if l != i && l != j {
                    break l;
                }
            };
            let (mu, shape) = family::ml_estimate(family, &[x[i], x[j], x[l]])?;
            check_component(family, mu, shape, spread).ok().map(|_| (mu, shape))
        })?;
        p.alpha[m] = 1.0 / k as f64;
        p.mu[m] = mu;
        p.shape[m] = shape;
    }
    Some(p)
}

/// The initial parameters of start `start` of a prepared dataset, on its
/// rescaled data; what every engine starts from. Start 0 is the dataset's
/// given initial parameters where it has some of this K (Job::inits).
pub fn initial_params(family: Family, ds: &Prepared, k: usize, seed: u64, start: u32) -> Option<Params> {
    if let Some(p) = ds.init.filter(|p| start == 0 && p.k == k) {
        return Some(p);
    }
    draw_start(family, &ds.x, k, ds.spread, &mut start_rng(seed, ds.hash, start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn generators_are_pure_functions_of_their_inputs() {
        let draw = |seed, hash, s| start_rng(seed, hash, s).random::<u64>();
        assert_eq!(draw(1, 2, 3), draw(1, 2, 3));
        assert_ne!(draw(1, 2, 3), draw(1, 2, 4));
        assert_ne!(draw(1, 2, 3), draw(1, 5, 3));
        assert_ne!(draw(1, 2, 3), draw(7, 2, 3));
        // neighbouring starts give unrelated sequences
        let a: Vec<u64> = (0..4).map(|_| 0).scan(start_rng(9, 9, 0), |r, _: u64| Some(r.random())).collect();
        let b: Vec<u64> = (0..4).map(|_| 0).scan(start_rng(9, 9, 1), |r, _: u64| Some(r.random())).collect();
        assert!(a.iter().all(|v| !b.contains(v)));
    }

    #[test]
    fn starts_are_ml_estimates_of_three_distinct_observations() {
        let x: Vec<f64> = (1..=30).map(|i| i as f64 / 10.0).collect();
        for family in [Family::InvGauss, Family::Normal] {
            for s in 0..20 {
                let p = draw_start(family, &x, 3, 1.0, &mut start_rng(42, 7, s)).unwrap();
                for m in 0..3 {
                    assert_eq!(p.alpha[m], 1.0 / 3.0);
                    // μ is the mean of 3 of the values, on the grid of thirds of a tenth
                    let three_sum = p.mu[m] * 3.0 * 10.0;
                    assert!((three_sum - three_sum.round()).abs() < 1e-9);
                    // and some triple of distinct values reproduces (μ, shape) (to rounding:
                    // the draw sums them in another order)
                    let found = (0..30).any(|i| {
                        (i + 1..30).any(|j| {
                            (j + 1..30).any(|l| {
                                family::ml_estimate(family, &[x[i], x[j], x[l]]).is_some_and(|(mu, sh)| {
                                    (mu - p.mu[m]).abs() < 1e-12 && (sh - p.shape[m]).abs() < 1e-9 * sh
                                })
                            })
                        })
                    });
                    assert!(found, "{family:?} start {s} component {m}");
                }
            }
        }
    }

    #[test]
    fn ml_estimates_are_the_closed_forms() {
        let xs = [1.0, 2.0, 4.0];
        let (mu, lambda) = family::ml_estimate(Family::InvGauss, &xs).unwrap();
        let mean = 7.0 / 3.0;
        let inv_lambda = ((1.0 + 0.5 + 0.25) / 3.0) - 1.0 / mean;
        assert!((mu - mean).abs() < 1e-15);
        assert!((lambda - 1.0 / inv_lambda).abs() < 1e-12);
        let (mu, sigma) = family::ml_estimate(Family::Normal, &xs).unwrap();
        let var = ((1.0 - mean) * (1.0 - mean) + (2.0 - mean) * (2.0 - mean) + (4.0 - mean) * (4.0 - mean)) / 3.0;
        assert!((mu - mean).abs() < 1e-15 && (sigma - var.sqrt()).abs() < 1e-15);
        assert!(family::ml_estimate(Family::Normal, &[2.0, 2.0, 2.0]).is_none());
        assert!(family::ml_estimate(Family::InvGauss, &[2.0, 2.0, 2.0]).is_none());
    }

    #[test]
    fn hopeless_data_gives_no_start() {
        // 3 observations, two equal: every subset is the same triple, fine;
        // but with k = 2 and a tiny spread yardstick violated it must give up.
        let x = [1.0, 1.0, 1.0, 1.0 + 1e-12];
        assert!(draw_start(Family::Normal, &x, 2, 1.0, &mut start_rng(1, 1, 0)).is_none());
    }
}
