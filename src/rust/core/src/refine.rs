//! Refinement starts (control$refine; issue 31): after a
//! dataset's random starts, its best fit is restarted with one component
//! moved to a region of the data the fit explains least. Random and
//! partition starts seed a minor mode (a few percent of the data, at an
//! edge or between larger ones) rarely, and the fits that miss it spend a
//! component elsewhere, typically on a second copy of a large mode; such a
//! fit leaves the minor mode's region with many more observations than it
//! expects there. A refinement start replaces component m of the best fit
//! by the ML estimate of that region's observations, every m in turn, so
//! EM starts next to the better optimum wherever the fit had the spare
//! component. Deterministic: no random draw, so the same for any seed.

use crate::dataset::Prepared;
use crate::family::{self, with_family, ComponentFamily};
use crate::limits::{REFINE_WINDOW_FRACTION, REFINE_WINDOW_MAX, REFINE_WINDOW_MIN, REFINE_Z};
use crate::mstep::check_component;
use crate::params::{Family, Params};

/// A dataset's best fit (rescaled units) and the components to move into
/// it: one (α, μ, shape) per under-explained region, most surprising first.
#[derive(Clone, Debug, PartialEq)]
pub struct Refinement {
    pub centre: Params,
    pub seeds: Vec<(f64, f64, f64)>,
}

impl Refinement {
    /// Refinement start `j` (0-based within its round): the centre with
    /// component j mod K replaced by the seed of region j / K (regions
    /// repeat when there are fewer than the round asks for), the other
    /// weights scaled to make room.
    pub fn start(&self, j: u32) -> Option<Params> {
        let k = self.centre.k;
        let j = j as usize;
        let &(alpha, mu, shape) = self.seeds.get((j / k) % self.seeds.len().max(1))?;
        let m = j % k;
        let mut p = self.centre;
        // the components' share: all but a noise component's weight
        let total = 1.0 - p.noise;
        let rest = total - p.alpha[m];
        if !(rest > 0.0) {
            return None;
        }
        for i in 0..k {
            p.alpha[i] *= (total - alpha) / rest;
        }
        p.alpha[m] = alpha;
        p.mu[m] = mu;
        p.shape[m] = shape;
        Some(p)
    }
}

/// The refinement of the fit `centre` of the prepared dataset `ds`: up to
/// `regions` windows of the sorted data whose counts exceed what `centre`
/// expects by more than REFINE_Z Poisson standard deviations, each not
/// overlapping one before it, with the ML estimate of its observations.
/// `None` when no region is that surprising (the fit explains the data).
pub fn refinement(family: Family, ds: &Prepared, centre: &Params, regions: u32) -> Option<Refinement> {
    let n = ds.x.len();
    // the observations in ascending order, by index (a noise component's
    // density is known per observation)
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| ds.x[a].total_cmp(&ds.x[b]));
    let sorted: Vec<f64> = order.iter().map(|&i| ds.x[i]).collect();
    let half = ((n as f64 * REFINE_WINDOW_FRACTION).round() as usize).clamp(REFINE_WINDOW_MIN, REFINE_WINDOW_MAX);
    if n < 2 * half + 1 {
        return None;
    }
    // the fit's density where it is fitted (the logarithms, for the
    // lognormal) at the i-th smallest observation, a noise component's
    // included (its t(x) + h(x) is its log-density there, noise.rs)
    let density = |i: usize| -> f64 {
        let x = sorted[i];
        with_family!(family, F => {
            let log_density = |m: usize| match family.has_third() {
                true => crate::family::log_density_with(family, x, centre.mu[m], centre.shape[m], centre.df[m]),
                false => F::log_density(x, centre.mu[m], centre.shape[m]),
            };
            let components: f64 = (0..centre.k).map(|m| centre.alpha[m] * log_density(m).exp()).sum();
            let noise = ds.noise.as_ref().map_or(0.0, |nz| centre.noise * (nz.terms[order[i]] + F::log_h(x)).exp());
            components + noise
        })
    };
    // each window's surprise: (count − E) / √(E + 1), E = n f(x) width
    let mut surprise: Vec<(f64, usize)> = (half..n - half)
        .filter_map(|i| {
            let (lo, hi) = (sorted[i - half], sorted[i + half]);
            let width = hi - lo;
            if !(width > 0.0) {
                return None;
            }
            let count = (2 * half + 1) as f64;
            let expected = n as f64 * density(i) * width;
            let z = (count - expected) / (expected + 1.0).sqrt();
            (z > REFINE_Z).then_some((z, i))
        })
        .collect();
    surprise.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut taken: Vec<usize> = Vec::new();
    let mut seeds = Vec::new();
    for &(_, i) in &surprise {
        if seeds.len() >= regions as usize {
            break;
        }
        if taken.iter().any(|&t| t.abs_diff(i) <= 2 * half) {
            continue;
        }
        taken.push(i);
        let block = &sorted[i - half..=i + half];
        let Some((mu, shape)) = family::ml_estimate(family, block) else { continue };
        if check_component(family, mu, shape, ds.spread).is_err() {
            continue;
        }
        seeds.push((block.len() as f64 / n as f64, mu, shape));
    }
    (!seeds.is_empty()).then_some(Refinement { centre: *centre, seeds })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::prepare;
    use crate::information::tests::{draw, params};

    #[test]
    fn a_fit_that_misses_a_minor_mode_is_refined_toward_it() {
        // 97% around 0, 3% around 8 (an edge mode of 30 observations)
        let xs = draw(Family::Normal, &params(&[0.97, 0.03], &[0.0, 8.0], &[1.0, 0.4]), 1000, 3);
        let ds = prepare(&xs, Family::Normal).expect("valid data");
        // the fit that spends both components on the large mode
        let missed = ds.rescale(&params(&[0.5, 0.5], &[-0.6, 0.9], &[0.8, 1.6]));
        let r = refinement(Family::Normal, &ds, &missed, 2).expect("the minor mode is a surprise");
        let (alpha, mu, shape) = r.seeds[0];
        let unscaled = ds.unscale(&params(&[1.0], &[mu], &[shape]));
        assert!((unscaled.mu[0] - 8.0).abs() < 1.0, "seeded at {}", unscaled.mu[0]);
        assert!(alpha > 0.0 && alpha < 0.1);
        // its starts: each component in turn replaced, weights summing to 1
        for j in 0..4 {
            let p = r.start(j).expect("a start");
            let m = j as usize % 2;
            let (_, mu_j, _) = r.seeds[(j as usize / 2) % r.seeds.len()];
            assert_eq!(p.mu[m], mu_j);
            assert_eq!(p.mu[1 - m], missed.mu[1 - m]);
            assert!((p.alpha[0] + p.alpha[1] - 1.0).abs() < 1e-15);
        }
        // and the fit with the minor mode leaves no region as surprising there
        let found = ds.rescale(&params(&[0.97, 0.03], &[0.0, 8.0], &[1.0, 0.4]));
        let near_minor = |r: &Refinement| {
            r.seeds.iter().any(|&(_, mu, _)| (ds.unscale(&params(&[1.0], &[mu], &[1.0])).mu[0] - 8.0).abs() < 1.0)
        };
        assert!(refinement(Family::Normal, &ds, &found, 2).is_none_or(|r| !near_minor(&r)));
        // a pure function of its inputs
        assert_eq!(refinement(Family::Normal, &ds, &missed, 2), Some(r));
    }

    #[test]
    fn a_noise_component_explains_the_outliers_it_expects() {
        // 1,000 observations around 0 and 40 gross outliers over [10, 60]:
        // a fit with their noise weight leaves no surprise among them, one
        // without a noise component finds them all surprising
        let mut xs = draw(Family::Normal, &params(&[0.5, 0.5], &[-0.5, 0.5], &[0.9, 0.9]), 1000, 9);
        xs.extend((0..40).map(|i| 10.0 + 50.0 * ((i as f64 + 0.5) / 40.0)));
        let support = crate::noise::Support::range_of(&xs).expect("a range");
        let plain = prepare(&xs, Family::Normal).expect("valid data");
        let noisy = prepare(&xs, Family::Normal).expect("valid data").with_noise(support, &xs);
        let fit = params(&[0.5, 0.5], &[-0.5, 0.5], &[0.9, 0.9]);
        let among_outliers = |ds: &crate::dataset::Prepared, r: &Option<Refinement>| {
            r.as_ref().is_some_and(|r| {
                r.seeds.iter().any(|&(_, mu, _)| ds.unscale(&params(&[1.0], &[mu], &[1.0])).mu[0] > 8.0)
            })
        };
        let without = refinement(Family::Normal, &plain, &plain.rescale(&fit), 2);
        assert!(among_outliers(&plain, &without));
        let mut with_noise = fit;
        for m in 0..2 {
            with_noise.alpha[m] *= 1000.0 / 1040.0;
        }
        with_noise.noise = 40.0 / 1040.0;
        let with = refinement(Family::Normal, &noisy, &noisy.rescale(&with_noise), 2);
        assert!(!among_outliers(&noisy, &with), "{with:?}");
    }
}
