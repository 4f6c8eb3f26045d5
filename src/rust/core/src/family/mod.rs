//! The component families (DESIGN §3, §11: "a family is one thing"): the
//! trait `ComponentFamily` (component.rs), one implementation per family
//! (invgauss.rs, normal.rs, gamma.rs; the t and the ex-Gaussian, which
//! are not of its form, in student.rs and exgauss.rs), and here the one
//! place where the runtime tag
//! `Family` (params.rs) meets them, `with_family!`, with the functions that
//! take the tag for code that is not generic over the trait.

use crate::limits::MAX_COMPONENTS;
use crate::params::{Family, Params};

pub(crate) mod component;
pub(crate) mod gamma;
pub(crate) mod invgauss;
pub(crate) mod normal;

pub use component::{CdfDerivatives, ComponentFamily, Terms, LN_2PI};
pub use invgauss::InvGauss;
pub use normal::Normal;

/// The one place the runtime tag meets the implementations: `$body` with
/// `$F` naming the family's type, e.g. `with_family!(family, F => F::sd(mu,
/// shape))`. A new family adds its arm here.
macro_rules! with_family {
    ($family:expr, $F:ident => $body:expr) => {
        match $family {
            $crate::params::Family::InvGauss => {
                type $F = $crate::family::invgauss::InvGauss;
                $body
            }
            $crate::params::Family::Gamma => {
                type $F = $crate::family::gamma::Gamma;
                $body
            }
            // fitted as the Normal on log x (Prepared holds the logarithms);
            // the t's rescaling, starts and screen are the Normal's, and
            // what depends on ν branches to student.rs first
            // (and the ex-Gaussian's: exgauss.rs)
            $crate::params::Family::Normal
            | $crate::params::Family::Lognormal
            | $crate::params::Family::StudentT
            | $crate::params::Family::ExGauss => {
                type $F = $crate::family::normal::Normal;
                $body
            }
        }
    };
}
pub(crate) use with_family;

/// The common shape of components of shapes `shapes` and weights `w`
/// (their S0 in the M-step, their α in a start): the w-weighted average of
/// their `pooled_statistic` mapped back (for the t's scale, the Normal's:
/// σ² pooled).
pub(crate) fn pool<F: ComponentFamily>(w: &[f64], shapes: &[f64]) -> f64 {
    let total: f64 = w.iter().sum();
    let v: f64 = w.iter().zip(shapes).map(|(w, &s)| w * F::pooled_statistic(s)).sum::<f64>() / total;
    F::from_pooled(v)
}

/// `pool` for the runtime tag.
pub(crate) fn pooled_shape(family: Family, w: &[f64], shapes: &[f64]) -> f64 {
    with_family!(family, F => pool::<F>(w, shapes))
}

/// The per-observation value `g` (ComponentFamily::aux).
#[inline(always)]
pub fn aux(family: Family, x: f64) -> f64 {
    with_family!(family, F => F::aux(x))
}

/// The parameter-free part of the log-density, h(x) (ComponentFamily::log_h).
#[inline(always)]
pub fn log_h(family: Family, x: f64) -> f64 {
    with_family!(family, F => F::log_h(x))
}

/// Whether a value `x` of the data is in the family's support
/// (ComponentFamily::in_support; the lognormal's: positive and finite).
pub fn in_support(family: Family, x: f64) -> bool {
    if family.on_log_scale() {
        return x > 0.0 && x.is_finite();
    }
    with_family!(family, F => F::in_support(x))
}

/// The E-step's per-component constants of `p` (ComponentFamily::terms).
pub fn terms(family: Family, p: &Params) -> Terms {
    with_family!(family, F => F::terms(p))
}

/// log p(x | μ, shape) of one component at a value `x` of the data,
/// straight from the formula (ComponentFamily::log_density; the lognormal's
/// is the Normal's of log x less log x). NaN for Student's t and the
/// ex-Gaussian, whose densities need a third parameter: student.rs's and
/// exgauss.rs's log_density.
pub fn log_density(family: Family, x: f64, mu: f64, shape: f64) -> f64 {
    if family.has_third() {
        return f64::NAN;
    }
    if family.on_log_scale() {
        return Normal::log_density(x.ln(), mu, shape) - x.ln();
    }
    with_family!(family, F => F::log_density(x, mu, shape))
}

/// log p(x | μ, shape, third) of one component of any family: `log_density`,
/// or with the third parameter (ν, τ) student.rs's or exgauss.rs's.
pub fn log_density_with(family: Family, x: f64, mu: f64, shape: f64, third: f64) -> f64 {
    match family {
        Family::StudentT => crate::student::log_density(x, mu, shape, third),
        Family::ExGauss => crate::exgauss::log_density(x, mu, shape, third),
        _ => log_density(family, x, mu, shape),
    }
}

/// Log-likelihood of a mixture on values of the data, observation by observation with libm
/// and log-sum-exp: the reference the reported log-likelihood (computed by
/// the E-step: Prepared::log_likelihood) is tested against.
pub fn log_likelihood(family: Family, xs: &[f64], p: &Params) -> f64 {
    let mut l = [0.0; MAX_COMPONENTS];
    let mut total = 0.0;
    for &x in xs {
        for m in 0..p.k {
            l[m] = p.alpha[m].ln() + log_density_with(family, x, p.mu[m], p.shape[m], p.df[m]);
        }
        total += crate::mathx::log_sum_exp(&l[..p.k]);
    }
    total
}

/// Maximum-likelihood (μ, shape) of one component from a few observations,
/// as used for random starts. `None` when the estimate is not a valid
/// component (all values equal, non-finite, λ ≤ 0).
pub fn ml_estimate(family: Family, xs: &[f64]) -> Option<(f64, f64)> {
    with_family!(family, F => F::ml_estimate(xs))
}

/// Standard deviation of one component: √(μ³/λ) or σ.
pub fn component_sd(family: Family, mu: f64, shape: f64) -> f64 {
    with_family!(family, F => F::sd(mu, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ∫ x^j p(x) dx by the trapezoid rule on a fine grid.
    fn moment(family: Family, mu: f64, shape: f64, j: i32, lo: f64, hi: f64) -> f64 {
        let steps = 400_000;
        let h = (hi - lo) / steps as f64;
        (0..=steps)
            .map(|i| {
                let x = lo + i as f64 * h;
                let w = if i == 0 || i == steps { 0.5 } else { 1.0 };
                w * x.powi(j) * log_density(family, x, mu, shape).exp()
            })
            .sum::<f64>()
            * h
    }

    #[test]
    fn densities_integrate_to_one_with_the_right_moments() {
        // IG(μ, λ): mean μ, variance μ³/λ. Normal(μ, σ): mean μ, variance σ².
        for (mu, lambda) in [(1.0, 30.0), (3.0, 5.0), (0.5, 2.0)] {
            let f = |j| moment(Family::InvGauss, mu, lambda, j, 1e-9, 60.0 * mu);
            assert!((f(0) - 1.0).abs() < 1e-7, "IG({mu}, {lambda}) mass {}", f(0));
            assert!((f(1) - mu).abs() < 1e-6 * mu);
            assert!((f(2) - mu * mu - mu.powi(3) / lambda).abs() < 1e-5 * (mu * mu));
        }
        let f = |j| moment(Family::Normal, 2.0, 0.5, j, -8.0, 12.0);
        assert!((f(0) - 1.0).abs() < 1e-9 && (f(1) - 2.0).abs() < 1e-9 && (f(2) - 4.25).abs() < 1e-8);
    }

    #[test]
    fn density_terms_reassemble_the_density() {
        // c − k·q + h equals log α + log p, for every component
        let mut p = Params::zeroed(2);
        p.alpha[..2].copy_from_slice(&[0.25, 0.75]);
        p.mu[..2].copy_from_slice(&[1.3, 0.4]);
        p.shape[..2].copy_from_slice(&[2.0, 0.7]);
        for family in [Family::InvGauss, Family::Normal] {
            let t = terms(family, &p);
            for x in [0.1, 0.9, 2.5] {
                let g = aux(family, x);
                for m in 0..2 {
                    let split = t.c[m] - t.k[m] * with_family!(family, F => F::q(x, g, p.mu[m])) + log_h(family, x);
                    let direct = p.alpha[m].ln() + log_density(family, x, p.mu[m], p.shape[m]);
                    assert!((split - direct).abs() < 1e-13 * (1.0 + direct.abs()), "{family:?} x={x} m={m}");
                }
            }
        }
    }
}
