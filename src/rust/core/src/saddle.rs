//! Fits that converged to a saddle point of the likelihood (the observed
//! information not positive definite: typically two components merged
//! across two groups, where EM's steps shrink to nothing) are continued from
//! there: EM from points a step away on either side along the direction in
//! which the log-likelihood curves up most (ascent_direction, below),
//! the best admissible end that beats the saddle replacing it. It runs on
//! the host after every engine, so every engine continues alike.

use std::sync::atomic::AtomicBool;

use crate::dataset::Prepared;
use crate::em::run_em;
use crate::information::{information, moved, Information};
use crate::job::Task;
use crate::limits::{MIN_INFORMATION_LEFT, SADDLE_STEPS, SAME_OPTIMUM};
use crate::linalg::symmetric_eigen;
use crate::outcome::{Outcome, StartFit};
use crate::params::{Family, Params};

/// The maximum EM reaches from near the saddle point `at` (converged, on
/// the rescaled data of `ds`), when it is admissible and beats `at` by more
/// than SAME_OPTIMUM; its iterations include those that reached `at`.
/// `None` when `at` is not a saddle point or no step leads higher.
pub fn escape(t: &Task, ds: &Prepared, at: &StartFit, cancel: &AtomicBool) -> Option<StartFit> {
    if at.outcome != Outcome::Converged {
        return None;
    }
    let d = ascent_direction(t.family, &ds.x, ds.noise_terms(), ds.w.as_deref(), &at.params)?;
    let floor = at.loglik + SAME_OPTIMUM * (1.0 + at.loglik.abs());
    let mut best: Option<StartFit> = None;
    for step in SADDLE_STEPS {
        for sign in [1.0, -1.0] {
            let noise = ds.noise.is_some();
            let Some(init) = moved(t.family, &at.params, noise, &d, sign * step, ds.spread) else { continue };
            let f = run_em(t.family, ds, init, t.max_iters, t.epsilon, t.accelerate, cancel);
            let sound = f.outcome == Outcome::Converged && !t.screen.spurious_on(t.family, &f.params, &ds.x, ds.total);
            if sound && f.loglik > floor && best.is_none_or(|b| f.loglik > b.loglik) {
                best = Some(f);
            }
        }
    }
    best.map(|f| StartFit { iterations: at.iterations.saturating_add(f.iterations), ..f })
}

/// At a point where the information is not positive definite (a saddle
/// point, when EM stopped there), the direction in the free parameters θ
/// along which the log-likelihood curves up most: the eigenvector of the
/// information scaled by the complete-data information (as in `invert`)
/// with the most negative eigenvalue, in θ's units, so that a unit step
/// moves each parameter by about one complete-data standard error. `None`
/// where the information is not finite or has no eigenvalue below
/// −MIN_INFORMATION_LEFT. On the rescaled data of a prepared dataset
/// (`noise`: its noise component's t(x), if it has one; `w`: its weights).
pub fn ascent_direction(
    family: Family,
    xs: &[f64],
    noise: Option<&[f64]>,
    w: Option<&[f64]>,
    p: &Params,
) -> Option<Vec<f64>> {
    let Information { observed: info, complete, .. } = information(family, xs, noise, w, p);
    let np = complete.len();
    if info.iter().chain(&complete).any(|v| !v.is_finite()) || complete.iter().any(|&c| c <= 0.0) {
        return None;
    }
    let root: Vec<f64> = complete.iter().map(|c| c.sqrt()).collect();
    let scaled: Vec<f64> = (0..np * np).map(|i| info[i] / (root[i % np] * root[i / np])).collect();
    let (values, vectors) = symmetric_eigen(scaled, np);
    let (j, &lowest) = values.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1))?;
    if lowest > -MIN_INFORMATION_LEFT {
        return None;
    }
    Some((0..np).map(|a| vectors[a + np * j] / root[a]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family;
    use crate::information::tests::{draw, params};

    #[test]
    fn at_merged_components_the_likelihood_rises_along_the_ascent_direction() {
        // two groups; K = 2 with both components equal to the K = 1 fit is
        // a stationary point of EM, for two separated Normal groups a saddle
        // of the likelihood (for these inverse Gaussian ones it is not: no
        // eigenvalue of the information is negative there)
        for family in Family::FITTED {
            let truth = match family {
                Family::Normal | Family::Lognormal => params(&[0.5, 0.5], &[0.0, 4.0], &[1.0, 1.0]),
                Family::InvGauss => params(&[0.5, 0.5], &[1.0, 8.0], &[50.0, 400.0]),
                Family::Gamma => params(&[0.5, 0.5], &[1.0, 8.0], &[20.0, 20.0]),
                Family::StudentT | Family::ExGauss => unreachable!("not among Family::FITTED"),
            };
            let xs = draw(family, &truth, 2000, 5);
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<f64>() / n;
            let shape = match family {
                Family::Normal | Family::Lognormal => (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt(),
                Family::InvGauss => n / xs.iter().map(|x| 1.0 / x - 1.0 / mean).sum::<f64>(),
                Family::Gamma => crate::special::gamma_shape(mean.ln() - xs.iter().map(|x| x.ln()).sum::<f64>() / n),
                Family::StudentT | Family::ExGauss => unreachable!("not among Family::FITTED"),
            };
            let merged = params(&[0.5, 0.5], &[mean, mean], &[shape, shape]);
            let Some(d) = ascent_direction(family, &xs, None, None, &merged) else {
                assert_ne!(family, Family::Normal, "the merged Normal fit is a saddle");
                continue;
            };
            let ll = |p: &Params| {
                let st = crate::estep::e_step(
                    family,
                    &xs,
                    &xs.iter().map(|&x| family::aux(family, x)).collect::<Vec<_>>(),
                    p,
                );
                st.ll
            };
            let at = ll(&merged);
            for t in [-0.5, 0.5] {
                let q = moved(family, &merged, false, &d, t, 1.0).expect("usable");
                assert!(ll(&q) > at, "{family:?}: the step {t} does not raise the log-likelihood");
            }
            // at the maximum itself there is no ascent direction
            assert!(ascent_direction(family, &xs, None, None, &truth).is_none() || ll(&truth) < at);
        }
    }
}
