//! The M-step: new parameters from one E-step's sufficient statistics, in
//! closed form (DESIGN §3), and the guards that declare a start degenerate.

use crate::family::{self, with_family, ComponentFamily};
use crate::fixed::Fixed;
use crate::limits::{MIN_COMPONENT_OBS, MIN_RELATIVE_SD};
use crate::outcome::Degenerate;
use crate::params::{Family, Params, Stats};
use crate::{exgauss, student};

/// Checks one component's (μ, shape) for use: finite, positive where it must
/// be, and not collapsed relative to `spread` (the data's standard deviation).
pub fn check_component(family: Family, mu: f64, shape: f64, spread: f64) -> Result<(), Degenerate> {
    with_family!(family, F => check_component_of::<F>(mu, shape, spread))
}

/// `check_component` for the family `F`.
fn check_component_of<F: ComponentFamily>(mu: f64, shape: f64, spread: f64) -> Result<(), Degenerate> {
    let mu_ok = F::mean_ok(mu);
    if !(mu.is_finite() && shape.is_finite() && shape > 0.0 && mu_ok) {
        return Err(Degenerate::NotFinite);
    }
    let sd = F::sd(mu, shape);
    if !(sd >= MIN_RELATIVE_SD * spread) {
        return Err(Degenerate::SpreadCollapsed);
    }
    Ok(())
}

/// α = S0/N (the noise component's weight likewise), and each component's
/// (μ, shape) from the family's M-step (ComponentFamily::component_m_step);
/// with `equal_scale`, one shape shared by the components (family::pool); with
/// `fixed`, the fixed values kept and the others' updates given them
/// (`update`, Fixed::weights).
pub fn m_step(
    family: Family,
    k: usize,
    st: &Stats,
    n: f64,
    spread: f64,
    equal_scale: bool,
    fixed: Option<&Fixed>,
) -> Result<Params, Degenerate> {
    let mut p = if family.has_third() {
        m_step_third(family, k, st, n, spread, equal_scale, fixed)
    } else {
        with_family!(family, F => m_step_of::<F>(k, st, n, spread, equal_scale, fixed))
    }?;
    if let Some(f) = fixed {
        f.weights(&mut p, st);
    }
    Ok(p)
}

/// Component m's new (μ, shape) from its sums: the family's M-step, or
/// with a fixed mean the shape given it, a fixed shape kept.
fn update<F: ComponentFamily>(st: &Stats, m: usize, fixed: Option<&Fixed>) -> (f64, f64) {
    let (s0, s1, s2) = (st.s0[m], st.s1[m], st.s2[m]);
    let Some(f) = fixed else { return F::component_m_step(s0, s1, s2) };
    match (f.mu(m), f.shape(m)) {
        (Some(mu), Some(shape)) => (mu, shape),
        (Some(mu), None) => (mu, F::shape_given_mean(s0, s1, s2, mu)),
        (None, shape) => {
            let (mu, free) = F::component_m_step(s0, s1, s2);
            (mu, shape.unwrap_or(free))
        }
    }
}

/// `m_step` for the families with a third parameter, Student's t
/// (student.rs) and the ex-Gaussian (exgauss.rs): the same guards, and ν
/// or τ.
fn m_step_third(
    family: Family,
    k: usize,
    st: &Stats,
    n: f64,
    spread: f64,
    equal_scale: bool,
    fixed: Option<&Fixed>,
) -> Result<Params, Degenerate> {
    let mut p = Params::zeroed(k);
    for m in 0..k {
        weight_ok(st.s0[m])?;
        let (mu, sigma, df) = match (family, fixed) {
            (Family::ExGauss, Some(f)) => exgauss::component_m_step_fixed(st, m, f.mu(m), f.shape(m)),
            (Family::ExGauss, None) => exgauss::component_m_step(st, m),
            (_, Some(f)) => student::component_m_step_fixed(st, m, f.mu(m), f.shape(m)),
            (_, None) => student::component_m_step(st, m),
        };
        if !equal_scale {
            check_component(family, mu, sigma, spread)?;
        }
        if !family.third_ok(df) {
            return Err(Degenerate::NotFinite);
        }
        p.alpha[m] = st.s0[m] / n;
        p.mu[m] = mu;
        p.shape[m] = sigma;
        p.df[m] = df;
    }
    if equal_scale {
        // the scale's update given the weights u (the t's) or the
        // exponential parts (the ex-Gaussian's) is the Normal's: σ² pooled
        let common = family::pool::<crate::family::Normal>(&st.s0[..k], &p.shape[..k]);
        for m in 0..k {
            p.shape[m] = common;
            check_component(family, p.mu[m], common, spread)?;
        }
    }
    p.noise = st.s0_noise / n;
    p.df_fixed = st.df_fixed;
    Ok(p)
}

/// `m_step` for the family `F`: each component's update (`update`), its
/// weight S0/N, the guards; with `equal_scale` the shapes pooled (family::pool)
/// before the components are checked.
fn m_step_of<F: ComponentFamily>(
    k: usize,
    st: &Stats,
    n: f64,
    spread: f64,
    equal_scale: bool,
    fixed: Option<&Fixed>,
) -> Result<Params, Degenerate> {
    let mut p = Params::zeroed(k);
    for m in 0..k {
        weight_ok(st.s0[m])?;
        (p.mu[m], p.shape[m]) = update::<F>(st, m, fixed);
        if !equal_scale {
            check_component_of::<F>(p.mu[m], p.shape[m], spread)?;
        }
        p.alpha[m] = st.s0[m] / n;
    }
    if equal_scale {
        let common = family::pool::<F>(&st.s0[..k], &p.shape[..k]);
        for m in 0..k {
            p.shape[m] = common;
            check_component_of::<F>(p.mu[m], common, spread)?;
        }
    }
    p.noise = st.s0_noise / n;
    Ok(p)
}

/// A component's expected count S0 is enough to go on with.
pub(crate) fn weight_ok(s0: f64) -> Result<(), Degenerate> {
    match s0 >= MIN_COMPONENT_OBS {
        true => Ok(()),
        false if s0.is_nan() => Err(Degenerate::NotFinite),
        false => Err(Degenerate::WeightCollapsed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family;

    /// Weighted ML of one component by brute force: maximise the weighted
    /// log-likelihood directly (μ = weighted mean; then the shape from the
    /// textbook weighted formulas with the new μ, summed term by term).
    fn brute_force(family: Family, xs: &[f64], r: &[f64]) -> (f64, f64, f64) {
        let w: f64 = r.iter().sum();
        let mu = xs.iter().zip(r).map(|(x, r)| r * x).sum::<f64>() / w;
        let shape = match family {
            Family::InvGauss => w / xs.iter().zip(r).map(|(x, r)| r * (x - mu) * (x - mu) / (mu * mu * x)).sum::<f64>(),
            Family::Gamma => {
                crate::special::gamma_shape(mu.ln() - xs.iter().zip(r).map(|(x, r)| r * x.ln()).sum::<f64>() / w)
            }
            Family::Normal | Family::Lognormal => {
                (xs.iter().zip(r).map(|(x, r)| r * (x - mu) * (x - mu)).sum::<f64>() / w).sqrt()
            }
            Family::StudentT | Family::ExGauss => unreachable!("their M-steps are tested in student.rs and exgauss.rs"),
        };
        (w / xs.len() as f64, mu, shape)
    }

    #[test]
    fn closed_forms_match_brute_force_weighted_sums() {
        let xs: Vec<f64> = (0..200).map(|i| 0.2 + (i as f64 * 0.37).sin().abs() * 3.0 + i as f64 * 0.01).collect();
        let r0: Vec<f64> = xs.iter().map(|x| 1.0 / (1.0 + (3.0 * (x - 1.5)).exp())).collect();
        for family in Family::FITTED {
            let mut st = Stats::zero();
            for (i, &x) in xs.iter().enumerate() {
                for (m, r) in [r0[i], 1.0 - r0[i]].into_iter().enumerate() {
                    st.s0[m] += r;
                    st.s1[m] += r * x;
                    st.s2[m] += r * family::aux(family, x);
                }
            }
            let p = m_step(family, 2, &st, xs.len() as f64, 1.0, false, None).unwrap();
            let r1: Vec<f64> = r0.iter().map(|r| 1.0 - r).collect();
            for (m, r) in [&r0, &r1].into_iter().enumerate() {
                let (alpha, mu, shape) = brute_force(family, &xs, r);
                assert!((p.alpha[m] - alpha).abs() < 1e-13, "{family:?} alpha");
                assert!((p.mu[m] - mu).abs() < 1e-12 * mu.abs(), "{family:?} mu");
                assert!((p.shape[m] - shape).abs() < 1e-10 * shape, "{family:?} shape {} vs {}", p.shape[m], shape);
            }
        }
    }

    #[test]
    fn the_shape_update_maximises_the_weighted_likelihood() {
        // Perturbing the M-step's λ or σ either way must lower the weighted
        // log-likelihood of the component.
        let xs = [0.3, 0.9, 1.4, 2.2, 0.7, 1.1, 3.5, 0.5];
        let r = [0.9, 0.8, 0.4, 0.1, 0.95, 0.6, 0.05, 0.85];
        for family in [Family::InvGauss, Family::Normal] {
            let mut st = Stats::zero();
            for (x, w) in xs.iter().zip(r) {
                st.s0[0] += w;
                st.s1[0] += w * x;
                st.s2[0] += w * family::aux(family, *x);
            }
            // N = 1 so the weight guard does not apply to this tiny example
            let p = m_step(family, 1, &st, 1.0, 0.0, false, None).unwrap();
            let q = |mu: f64, shape: f64| {
                xs.iter().zip(r).map(|(x, w)| w * family::log_density(family, *x, mu, shape)).sum::<f64>()
            };
            let best = q(p.mu[0], p.shape[0]);
            for f in [0.999, 1.001] {
                assert!(q(p.mu[0] * f, p.shape[0]) < best);
                assert!(q(p.mu[0], p.shape[0] * f) < best);
            }
        }
    }

    #[test]
    fn a_fixed_mean_gets_the_shape_that_maximises_the_weighted_likelihood_given_it() {
        let xs = [0.3, 0.9, 1.4, 2.2, 0.7, 1.1, 3.5, 0.5];
        let r = [0.9, 0.8, 0.4, 0.1, 0.95, 0.6, 0.05, 0.85];
        for family in Family::FITTED {
            let mut st = Stats::zero();
            for (x, w) in xs.iter().zip(r) {
                st.s0[0] += w;
                st.s1[0] += w * x;
                st.s2[0] += w * family::aux(family, *x);
            }
            let mut f = Fixed::none(1);
            f.0.mu[0] = 1.7;
            let p = m_step(family, 1, &st, 1.0, 0.0, false, Some(&f)).unwrap();
            assert_eq!(p.mu[0], 1.7);
            let q = |shape: f64| {
                xs.iter().zip(r).map(|(x, w)| w * family::log_density(family, *x, 1.7, shape)).sum::<f64>()
            };
            for g in [0.999, 1.001] {
                assert!(q(p.shape[0] * g) < q(p.shape[0]), "{family:?}");
            }
            // a fixed shape leaves the mean's update alone
            let free = m_step(family, 1, &st, 1.0, 0.0, false, None).unwrap();
            let mut f = Fixed::none(1);
            f.0.shape[0] = 0.8;
            let p = m_step(family, 1, &st, 1.0, 0.0, false, Some(&f)).unwrap();
            assert_eq!((p.mu[0], p.shape[0]), (free.mu[0], 0.8));
        }
    }

    #[test]
    fn guards_reject_collapse() {
        let mut st = Stats::zero();
        st.s0[0] = 1.5; // under two observations' worth
        st.s1[0] = 1.5;
        st.s2[0] = 1.6;
        assert_eq!(m_step(Family::InvGauss, 1, &st, 100.0, 1.0, false, None), Err(Degenerate::WeightCollapsed));
        // all weight on one value: S2 − S0²/S1 = 0, λ infinite
        st.s0[0] = 10.0;
        st.s1[0] = 10.0;
        st.s2[0] = 10.0;
        assert_eq!(m_step(Family::InvGauss, 1, &st, 100.0, 1.0, false, None), Err(Degenerate::NotFinite));
        // Normal with σ tiny relative to the data's spread
        st.s2[0] = 10.0 * (1.0 + 1e-14);
        assert_eq!(m_step(Family::Normal, 1, &st, 100.0, 1.0, false, None), Err(Degenerate::SpreadCollapsed));
        st.s0[0] = f64::NAN;
        assert_eq!(m_step(Family::Normal, 1, &st, 100.0, 1.0, false, None), Err(Degenerate::NotFinite));
    }
}
