//! Samples from a fitted mixture, for the parametric bootstrap: replicate b
//! of a dataset is drawn from a generator that is a pure function of (seed,
//! the dataset's values, b), so it is the same on every engine, with any
//! number of threads, datasets or replicates in the call, and in any shard.

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::family::{with_family, ComponentFamily};
use crate::limits::TRUNCATED_DRAWS_PER_VALUE;
use crate::mathx::mix64;
use crate::noise::Support;
use crate::params::{Family, Params};
use crate::student;
use crate::truncation::Window;

/// The generator of replicate `replicate` under a `k`-component null of the
/// dataset whose values hash to `data_hash`. Its state is derived with
/// another constant than a start's (starts.rs), so replicate b and start b
/// of one dataset are unrelated, and so are the replicates of one dataset
/// under nulls of different K (the tests K = 1 vs 2 and 2 vs 3).
pub fn replicate_rng(seed: u64, data_hash: u64, k: usize, replicate: u32) -> Pcg64 {
    let hi = mix64(seed ^ 0x1319_8a2e_0370_7344);
    let lo = mix64(mix64(data_hash ^ hi) ^ k as u64);
    Pcg64::new(((hi as u128) << 64) | lo as u128, replicate as u128)
}

/// `n` draws from the mixture `p` of `family` (with its noise component, a
/// uniform over `noise`, where `p.noise` > 0): for each, a component by its
/// weight, then a value from it (ComponentFamily::draw, student::draw, or
/// the uniform's).
pub fn draw_mixture(family: Family, p: &Params, noise: Option<&Support>, n: usize, rng: &mut Pcg64) -> Vec<f64> {
    if family.has_df() {
        return draw_mixture_with(p, noise, n, rng, |m, rng| student::draw(p.mu[m], p.shape[m], p.df[m], rng));
    }
    if family == Family::ExGauss {
        return draw_mixture_with(p, noise, n, rng, |m, rng| crate::exgauss::draw(p.mu[m], p.shape[m], p.df[m], rng));
    }
    with_family!(family, F => draw_mixture_of::<F>(p, noise, family.on_log_scale(), n, rng))
}

/// `n` draws from the mixture `p` kept to `window` (a truncated fit's
/// replicate: the truncated mixture, by rejection): rounds of
/// `draw_mixture` for the values still missing, those inside the window
/// kept in order, until there are `n` or TRUNCATED_DRAWS_PER_VALUE · n
/// draws were made (then fewer than `n`).
pub fn draw_mixture_within(
    family: Family,
    p: &Params,
    noise: Option<&Support>,
    window: &Window,
    n: usize,
    rng: &mut Pcg64,
) -> Vec<f64> {
    let mut kept = Vec::with_capacity(n);
    let mut budget = n.saturating_mul(TRUNCATED_DRAWS_PER_VALUE);
    while kept.len() < n && budget > 0 {
        let round = (n - kept.len()).min(budget);
        budget -= round;
        kept.extend(
            draw_mixture(family, p, noise, round, rng).into_iter().filter(|&x| window.lo <= x && x <= window.hi),
        );
    }
    kept.truncate(n);
    kept
}

/// `draw_mixture` for the family `F` (fitted on the logarithms when
/// `on_log`: its draws are of them).
fn draw_mixture_of<F: ComponentFamily>(
    p: &Params,
    noise: Option<&Support>,
    on_log: bool,
    n: usize,
    rng: &mut Pcg64,
) -> Vec<f64> {
    draw_mixture_with(p, noise, n, rng, |m, rng| {
        let v = F::draw(p.mu[m], p.shape[m], rng);
        if on_log {
            v.exp()
        } else {
            v
        }
    })
}

/// `draw_mixture` with `component(m, rng)` drawing from component m.
fn draw_mixture_with(
    p: &Params,
    noise: Option<&Support>,
    n: usize,
    rng: &mut Pcg64,
    component: impl Fn(usize, &mut Pcg64) -> f64,
) -> Vec<f64> {
    let k = p.k.max(1);
    let noise = noise.filter(|_| p.noise > 0.0);
    let weights: f64 = p.alpha[..k].iter().sum();
    let total = if noise.is_some() { weights + p.noise } else { weights };
    (0..n)
        .map(|_| {
            let mut u = rng.random::<f64>() * total;
            if let Some(s) = noise.filter(|_| u >= weights) {
                return s.draw(rng);
            }
            let mut m = 0;
            while m + 1 < k && u >= p.alpha[m] {
                u -= p.alpha[m];
                m += 1;
            }
            component(m, rng)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(alpha: &[f64], mu: &[f64], shape: &[f64]) -> Params {
        Params::from_slices(alpha, mu, shape).unwrap()
    }

    fn mean_var(x: &[f64]) -> (f64, f64) {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        (m, x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0))
    }

    #[test]
    fn replicates_are_pure_functions_of_seed_data_and_index() {
        let p = params(&[0.3, 0.7], &[1.0, 3.0], &[30.0, 0.2]);
        let draw = |seed, hash, b| draw_mixture(Family::InvGauss, &p, None, 50, &mut replicate_rng(seed, hash, 2, b));
        assert_eq!(draw(1, 2, 3), draw(1, 2, 3));
        assert_ne!(draw(1, 2, 3), draw(1, 2, 4));
        assert_ne!(draw(1, 2, 3), draw(1, 5, 3));
        assert_ne!(draw(1, 2, 3), draw(6, 2, 3));
        let other_k = draw_mixture(Family::InvGauss, &p, None, 50, &mut replicate_rng(1, 2, 3, 3));
        assert_ne!(draw(1, 2, 3), other_k);
    }

    #[test]
    fn window_draws_are_the_truncated_mixture() {
        // N(2, 1) kept to [1, 3]: mean 2, variance 1 − 2φ(1)/(2Φ(1) − 1)
        let p = params(&[1.0], &[2.0], &[1.0]);
        let w = Window { lo: 1.0, hi: 3.0 };
        let n = 400_000;
        let x = draw_mixture_within(Family::Normal, &p, None, &w, n, &mut replicate_rng(3, 4, 1, 0));
        assert_eq!(x.len(), n);
        assert!(x.iter().all(|&v| (1.0..=3.0).contains(&v)));
        let (m, v) = mean_var(&x);
        let var = 0.291_125_094_772_793_1;
        assert!((m - 2.0).abs() < 4.0 * (var / n as f64).sqrt(), "mean {m}");
        assert!((v / var - 1.0).abs() < 0.01, "variance {v} against {var}");
        // a pure function of the generator, as every replicate
        let again = draw_mixture_within(Family::Normal, &p, None, &w, n, &mut replicate_rng(3, 4, 1, 0));
        assert_eq!(x, again);
        // a window holding almost nothing of the mixture: a short replicate
        // after the draws' budget, not an endless loop
        let far = Window { lo: 40.0, hi: 41.0 };
        let few = draw_mixture_within(Family::Normal, &p, None, &far, 100, &mut replicate_rng(3, 4, 1, 0));
        assert!(few.is_empty());
    }

    // moments against the closed forms: mixture mean Σαμ; variance
    // Σα(v + μ²) − mean², v = σ² or μ³/λ (standard errors of the sample
    // moments at n = 400,000 are below a quarter of the tolerances)
    #[test]
    fn moments_match_the_mixture() {
        let n = 400_000;
        for (family, p) in [
            (Family::Normal, params(&[0.25, 0.75], &[-1.0, 4.0], &[0.5, 2.0])),
            (Family::InvGauss, params(&[0.3, 0.7], &[1.0, 3.0], &[30.0, 5.0])),
            (Family::InvGauss, params(&[1.0], &[2.0], &[0.05])),
            (Family::Gamma, params(&[0.4, 0.6], &[1.0, 5.0], &[4.0, 0.6])),
        ] {
            let x = draw_mixture(family, &p, None, n, &mut replicate_rng(7, 11, p.k, 0));
            let (m, v) = mean_var(&x);
            let comp_var = |j: usize| match family {
                Family::Normal | Family::Lognormal => p.shape[j] * p.shape[j],
                Family::Gamma => p.mu[j] * p.mu[j] / p.shape[j],
                Family::InvGauss => p.mu[j].powi(3) / p.shape[j],
                Family::StudentT => p.shape[j] * p.shape[j] * p.df[j] / (p.df[j] - 2.0),
                Family::ExGauss => unreachable!("not among the cases"),
            };
            let mean: f64 = (0..p.k).map(|j| p.alpha[j] * p.mu[j]).sum();
            let var: f64 = (0..p.k).map(|j| p.alpha[j] * (comp_var(j) + p.mu[j] * p.mu[j])).sum::<f64>() - mean * mean;
            assert!((m - mean).abs() < 4.0 * (var / n as f64).sqrt(), "{family:?} mean {m} vs {mean}");
            // the variance of the sample variance needs the fourth moment;
            // a relative 3% bound is several of its standard errors here
            // except for the heavy-tailed λ = 0.05 case, checked loosely
            let tol = if p.shape[0] < 0.1 { 0.15 } else { 0.03 };
            assert!((v / var - 1.0).abs() < tol, "{family:?} variance {v} vs {var}");
            if family != Family::Normal {
                assert!(x.iter().all(|&v| v > 0.0 && v.is_finite()));
            }
        }
    }
}
