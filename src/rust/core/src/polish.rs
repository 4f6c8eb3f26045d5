//! A converged winner at the maximum itself (issue 31): EM's stop rule
//! leaves a start wherever its trajectory was when the log-likelihood's
//! relative change fell below epsilon, and SQUAREM's trajectories differ by
//! engine in their last bits; Newton steps on the observed information
//! from there converge quadratically to the same maximum whichever engine
//! (or start) arrived. It runs on the host after every engine, like
//! saddle.rs, so every engine's winner is finished alike.

use crate::dataset::Prepared;
use crate::em::fall_tolerance;
use crate::information::{information, moved, Information};
use crate::limits::{POLISH_SETTLED, POLISH_STEPS};
use crate::linalg::invert;
use crate::outcome::{Outcome, StartFit};
use crate::params::Family;

/// A polished fit, with the information at its parameters when the polish
/// computed it there (the standard errors' pass, already made).
pub struct Polished {
    pub fit: StartFit,
    pub information: Option<Information>,
}

/// `at` (a converged start, on the rescaled data of `ds`) moved by Newton
/// steps δ = I⁻¹ ∇ℓ until the next step would be shorter than
/// POLISH_SETTLED complete-data standard errors in every parameter. A step
/// that loses more log-likelihood than rounding is taken back, and the
/// polish ends there, as it does where the information is not positive
/// definite (a saddle point, a parameter not identified) or a step would
/// leave the parameter space: the last point reached is returned, `at`
/// itself when no step was kept. Each pass over the data gives the
/// information, the score and the log-likelihood together, so a fit that
/// needs no step costs the one pass its standard errors need anyway.
pub fn polish(family: Family, ds: &Prepared, at: &StartFit) -> Polished {
    if at.outcome != Outcome::Converged {
        return Polished { fit: *at, information: None };
    }
    let tolerance = |ll: f64| fall_tolerance(ll, ds.x.len());
    let mut fit = *at;
    let mut here = information(family, &ds.x, ds.noise_terms(), &fit.params);
    here.loglik += ds.h_sum;
    let mut before: Option<(StartFit, Information)> = None;
    for _ in 0..POLISH_STEPS {
        if let Some((b, bi)) = before.take() {
            if !(here.loglik >= b.loglik - tolerance(b.loglik)) {
                return Polished { fit: b, information: Some(bi) };
            }
        }
        fit.loglik = here.loglik;
        let Some(delta) = newton_step(&here) else { break };
        if delta.iter().zip(&here.complete).all(|(d, c)| d.abs() * c.sqrt() < POLISH_SETTLED) {
            break;
        }
        let Some(q) = moved(family, &fit.params, ds.noise.is_some(), &delta, 1.0, ds.spread) else { break };
        let mut next = information(family, &ds.x, ds.noise_terms(), &q);
        next.loglik += ds.h_sum;
        before = Some((fit, std::mem::replace(&mut here, next)));
        fit.params = q;
    }
    match before {
        // POLISH_STEPS taken: the last one kept if it lost nothing
        Some((b, bi)) if !(here.loglik >= b.loglik - tolerance(b.loglik)) => Polished { fit: b, information: Some(bi) },
        _ => {
            fit.loglik = here.loglik;
            Polished { fit, information: Some(here) }
        }
    }
}

/// The Newton step δ = I⁻¹ ∇ℓ from `info`; `None` where the information
/// is not positive definite or the step is not finite.
fn newton_step(info: &Information) -> Option<Vec<f64>> {
    let inverse = invert(&info.observed, &info.complete).ok()?;
    let np = info.score.len();
    let delta: Vec<f64> = (0..np).map(|a| (0..np).map(|b| inverse[a + np * b] * info.score[b]).sum()).collect();
    delta.iter().all(|d| d.is_finite()).then_some(delta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::prepare;
    use crate::em::run_em;
    use crate::estep::e_step;
    use crate::information::tests::{draw, params};
    use crate::params::Params;
    use std::sync::atomic::AtomicBool;

    /// The largest relative difference between two parameter sets.
    fn farthest(a: &Params, b: &Params) -> f64 {
        (0..a.k)
            .flat_map(|m| [(a.alpha[m], b.alpha[m]), (a.mu[m], b.mu[m]), (a.shape[m], b.shape[m])])
            .map(|(x, y)| (x - y).abs() / y.abs().max(1e-300))
            .fold(0.0, f64::max)
    }

    #[test]
    fn loose_stops_of_different_paths_are_polished_to_one_maximum() {
        // overlapping components, where EM crawls and its stop rule leaves
        // the accelerated and the plain path at points 1e-3 apart
        let cancel = AtomicBool::new(false);
        for (family, truth, init) in [
            (
                Family::Normal,
                params(&[0.6, 0.4], &[0.0, 1.5], &[1.0, 0.8]),
                params(&[0.5, 0.5], &[-0.5, 2.0], &[1.2, 1.2]),
            ),
            (
                Family::InvGauss,
                params(&[0.3, 0.4, 0.3], &[1.0, 3.0, 8.0], &[30.0, 5.0, 20.0]),
                params(&[0.3, 0.3, 0.4], &[0.8, 2.5, 9.0], &[10.0, 10.0, 10.0]),
            ),
        ] {
            let xs = draw(family, &truth, 3000, 17);
            let ds = prepare(&xs, family).expect("valid data");
            let init = ds.rescale(&init);
            // the reference: plain EM run until the log-likelihood stops moving
            // EM run until the log-likelihood stops moving is still 1e-5
            // from the maximum here: the yardstick for "far"
            let exact = run_em(family, &ds, init, 200_000, 1e-15, false, &cancel);
            let mut ends = Vec::new();
            for accelerate in [true, false] {
                let loose = run_em(family, &ds, init, 10_000, 1e-6, accelerate, &cancel);
                assert_eq!(loose.outcome, Outcome::Converged);
                let polished = polish(family, &ds, &loose).fit;
                assert!(polished.loglik >= loose.loglik - 1e-9 * loose.loglik.abs());
                assert!(farthest(&loose.params, &exact.params) > 1e-4, "the stop rule left it close");
                assert!(farthest(&polished.params, &exact.params) < 1e-4);
                // the maximum is a fixed point of EM: one plain step stays put
                let again = run_em(family, &ds, polished.params, 1, 1e-300, false, &cancel);
                assert!(
                    farthest(&again.params, &polished.params) < 1e-10,
                    "{family:?}, accelerate {accelerate}: one EM step moves the polished point {}",
                    farthest(&again.params, &polished.params)
                );
                // where the stop rule left it, it does move
                let moving = run_em(family, &ds, loose.params, 1, 1e-300, false, &cancel);
                assert!(farthest(&moving.params, &loose.params) > 1e-8);
                ends.push(polished.params);
            }
            assert!(farthest(&ends[0], &ends[1]) < 1e-8, "{family:?}: {}", farthest(&ends[0], &ends[1]));
            // at the maximum, the numerical gradient of the log-likelihood vanishes
            let ll = |p: &Params| e_step(family, &ds.x, &ds.g, p).ll;
            let p = ends[0];
            for m in 0..p.k {
                let h = 1e-6 * p.mu[m].abs().max(1.0);
                let (mut up, mut down) = (p, p);
                up.mu[m] += h;
                down.mu[m] -= h;
                let slope = (ll(&up) - ll(&down)) / (2.0 * h);
                assert!(slope.abs() < 1e-3, "{family:?}: dℓ/dμ{m} = {slope}");
            }
        }
    }

    #[test]
    fn unconverged_fits_and_saddle_points_are_left_where_they_are() {
        let cancel = AtomicBool::new(false);
        let truth = params(&[0.5, 0.5], &[0.0, 4.0], &[1.0, 1.0]);
        let xs = draw(Family::Normal, &truth, 2000, 5);
        let ds = prepare(&xs, Family::Normal).expect("valid data");
        let n = ds.x.len() as f64;
        let mean = ds.x.iter().sum::<f64>() / n;
        let sd = (ds.x.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        // both components at the K = 1 fit: a saddle point, where EM stays
        let merged = params(&[0.5, 0.5], &[mean, mean], &[sd, sd]);
        let at = run_em(Family::Normal, &ds, merged, 100, 1e-8, false, &cancel);
        assert_eq!(polish(Family::Normal, &ds, &at).fit.params, at.params);
        let short = run_em(
            Family::Normal,
            &ds,
            ds.rescale(&params(&[0.5, 0.5], &[-1.0, 5.0], &[2.0, 2.0])),
            2,
            1e-12,
            false,
            &cancel,
        );
        assert_eq!(short.outcome, Outcome::MaxIters);
        let left = polish(Family::Normal, &ds, &short);
        assert_eq!(left.fit, short);
        assert!(left.information.is_none());
    }
}
