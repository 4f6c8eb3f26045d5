//! A converged winner at the maximum itself (issue 31): EM's stop rule
//! leaves a start wherever its trajectory was when the log-likelihood's
//! relative change fell below epsilon, and SQUAREM's trajectories differ by
//! engine in their last bits; Newton steps on the observed information
//! from there converge quadratically to the same maximum whichever engine
//! (or start) arrived. It runs on the host after every engine, like
//! saddle.rs, so every engine's winner is finished alike.

use crate::constrained::Constraint;
use crate::dataset::Prepared;
use crate::em::fall_tolerance;
use crate::fixed::Fixed;
use crate::information::{moved, on_dataset, Information, Layout};
use crate::limits::{DF_MAX, DF_MIN, POLISH_SETTLED, POLISH_STEPS, POLISH_STEPS_DF};
use crate::linalg::invert;
use crate::outcome::{Outcome, StartFit};
use crate::params::{Family, Params, Singular};

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
///
/// Student's t's ν lives in [DF_MIN, DF_MAX], and its maximum is often on
/// the bound (ν heading for DF_MAX on data with Normal tails), where EM
/// creeps and stops wherever the stop rule finds it, its information all
/// but gone: a ν whose step leaves the range, or whose information is
/// lost, goes to the bound its score points to and stays there while the
/// other parameters take their Newton step given it (`bounded_step`).
pub fn polish(family: Family, ds: &Prepared, at: &StartFit, fixed: Option<&Fixed>) -> Polished {
    if at.outcome != Outcome::Converged {
        return Polished { fit: *at, information: None };
    }
    let tolerance = |ll: f64| fall_tolerance(ll, ds.total);
    let mut fit = *at;
    let mut here = on_dataset(family, ds, &fit.params);
    let mut before: Option<(StartFit, Information)> = None;
    let steps = if fit.params.estimates_df() { POLISH_STEPS_DF } else { POLISH_STEPS };
    // (the ex-Gaussian's τ has no bounds: a step that leaves τ > 0 ends the
    // polish, as any step out of the parameter space does)
    let bounded = family.has_df();
    for _ in 0..steps {
        if let Some((b, bi)) = before.take() {
            if !(here.loglik >= b.loglik - tolerance(b.loglik)) {
                return Polished { fit: b, information: Some(bi) };
            }
        }
        fit.loglik = here.loglik;
        let step = match Constraint::of(here.layout, ds.equal_scale, fixed) {
            // one shape shared or values fixed: the step in the free
            // parameters, every shape then moved alike, the fixed not at all
            // (ν is never constrained: each its own free parameter)
            Some(c) => bounded_step(&here.constrained(&c), &fit.params, bounded, &|m| c.column(here.layout.df(m)))
                .map(|s| Step { delta: c.expand(&s.delta), bounds: s.bounds }),
            None => bounded_step(&here, &fit.params, bounded, &|m| here.layout.df(m)),
        };
        let Some(Step { delta, bounds }) = step else { break };
        let settled = delta.iter().zip(&here.complete).all(|(d, c)| d.abs() * c.sqrt() < POLISH_SETTLED);
        if settled && bounds.iter().all(|&(m, b)| fit.params.df[m] == b) {
            break;
        }
        let Some(mut q) = moved(family, &fit.params, ds.noise.is_some(), &delta, 1.0, ds.spread) else { break };
        if let Some(f) = fixed {
            // (a weight 1 − Σ of the others moves by rounding only)
            q = f.impose(&q);
        }
        for &(m, b) in &bounds {
            q.df[m] = b;
        }
        let next = on_dataset(family, ds, &q);
        before = Some((fit, std::mem::replace(&mut here, next)));
        fit.params = q;
    }
    match before {
        // every step taken: the last one kept if it lost nothing
        Some((b, bi)) if !(here.loglik >= b.loglik - tolerance(b.loglik)) => Polished { fit: b, information: Some(bi) },
        _ => {
            fit.loglik = here.loglik;
            Polished { fit, information: Some(here) }
        }
    }
}

/// A polish step: δ in the free parameters, and the components whose ν it
/// puts on a bound, with the bound.
struct Step {
    delta: Vec<f64>,
    bounds: Vec<(usize, f64)>,
}

/// The Newton step δ = I⁻¹ ∇ℓ from `info` at `p`, and the components
/// whose ν it puts on a bound (which): each such ν's entry of δ is 0 (the
/// caller sets it), and the others' step is the quadratic model's maximum
/// given ν there, δ_F = I_FF⁻¹ (∇ℓ_F − I_FB (b − ν_B)). A ν goes to its bound when
/// it is there already with its score pointing out, when its step would
/// cross it, or when its information is lost (by the sign of its score).
/// `None` where the information of the other parameters is not positive
/// definite or the step is not finite. `info` is in the free parameters,
/// where component m's ν is `nu_at(m)`; without `bounded` (a third
/// parameter that is not the t's ν) no parameter has bounds.
fn bounded_step(info: &Information, p: &Params, bounded: bool, nu_at: &dyn Fn(usize) -> usize) -> Option<Step> {
    let np = info.score.len();
    let layout: Layout = info.layout;
    let bounded = bounded && layout.df;
    let df_at = |j: usize| (0..p.k).find(|&m| bounded && nu_at(m) == j);
    let toward = |m: usize| match info.score[nu_at(m)] {
        s if s > 0.0 => Some(DF_MAX),
        s if s < 0.0 => Some(DF_MIN),
        _ => None,
    };
    let mut bounds: Vec<(usize, f64)> = Vec::new();
    if bounded {
        for m in 0..p.k {
            let (v, s) = (p.df[m], info.score[nu_at(m)]);
            if (v >= DF_MAX && s > 0.0) || (v <= DF_MIN && s < 0.0) {
                bounds.push((m, v.clamp(DF_MIN, DF_MAX)));
            }
        }
    }
    // each pass puts one more ν on a bound, or ends
    for _ in 0..=p.k {
        let free: Vec<usize> = (0..np).filter(|&j| df_at(j).is_none_or(|m| bounds.iter().all(|b| b.0 != m))).collect();
        let nf = free.len();
        let sub: Vec<f64> = (0..nf * nf).map(|i| info.observed[free[i % nf] + np * free[i / nf]]).collect();
        let complete: Vec<f64> = free.iter().map(|&j| info.complete[j]).collect();
        let inverse = match invert(&sub, &complete) {
            Ok(v) => v,
            Err(Singular::Collinear { at } | Singular::Indefinite { at }) => {
                let m = df_at(*free.get(at)?)?;
                bounds.push((m, toward(m)?));
                continue;
            }
            Err(Singular::NotFinite) => return None,
        };
        // the score of the free parameters less what the bounded ν's moves
        // take of it
        let rhs: Vec<f64> = free
            .iter()
            .map(|&j| {
                let held: f64 = bounds.iter().map(|&(m, b)| info.observed[j + np * nu_at(m)] * (b - p.df[m])).sum();
                info.score[j] - held
            })
            .collect();
        let mut delta = vec![0.0; np];
        for (a, &ja) in free.iter().enumerate() {
            delta[ja] = (0..nf).map(|b| inverse[a + nf * b] * rhs[b]).sum();
        }
        if !delta.iter().all(|d| d.is_finite()) {
            return None;
        }
        let crossing = (0..p.k).filter(|&m| bounded && bounds.iter().all(|b| b.0 != m)).find_map(|m| {
            let v = p.df[m] + delta[nu_at(m)];
            (v > DF_MAX).then_some((m, DF_MAX)).or((v < DF_MIN).then_some((m, DF_MIN)))
        });
        match crossing {
            Some(b) => bounds.push(b),
            None => return Some(Step { delta, bounds }),
        }
    }
    None
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
                let polished = polish(family, &ds, &loose, ds.fixed.as_ref()).fit;
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
    fn constrained_t_fits_are_polished_to_one_maximum_in_their_free_parameters() {
        // one shared scale, and a fixed location: loose and tight stops of
        // both paths end at one point, which keeps the constraint
        let cancel = AtomicBool::new(false);
        let truth = params(&[0.5, 0.5], &[0.0, 4.0], &[1.0, 1.3]);
        let xs = draw(Family::Normal, &truth, 2000, 29);
        for constraint in 0..2 {
            let mut ds = prepare(&xs, Family::StudentT).expect("valid data");
            if constraint == 0 {
                ds.equal_scale = true;
            } else {
                let mut f = crate::fixed::Fixed::none(2);
                f.0.mu[0] = 0.1;
                ds.fixed = Some(crate::fixed::Fixed(ds.rescale(&f.0)));
            }
            let mut init = ds.rescale(&params(&[0.5, 0.5], &[-1.0, 5.0], &[2.0, 2.0]));
            init.df = [0.0; crate::limits::MAX_COMPONENTS];
            let init = ds.start(init);
            let mut ends = Vec::new();
            for (accelerate, epsilon) in [(true, 1e-6), (false, 1e-6), (false, 1e-4), (true, 1e-3)] {
                let fit = run_em(Family::StudentT, &ds, init, 100_000, epsilon, accelerate, &cancel);
                assert_eq!(fit.outcome, Outcome::Converged);
                let polished = polish(Family::StudentT, &ds, &fit, ds.fixed.as_ref()).fit;
                assert!(polished.loglik >= fit.loglik - 1e-9 * fit.loglik.abs());
                let p = polished.params;
                match &ds.fixed {
                    Some(f) => assert_eq!(p.mu[0], f.0.mu[0]),
                    None => assert_eq!(p.shape[0], p.shape[1]),
                }
                ends.push(p);
            }
            for j in 1..4 {
                let far = (0..2)
                    .flat_map(|m| {
                        let (a, b) = (&ends[0], &ends[j]);
                        [(a.alpha[m], b.alpha[m]), (a.mu[m], b.mu[m]), (a.shape[m], b.shape[m]), (a.df[m], b.df[m])]
                    })
                    .map(|(x, y)| (x - y).abs() / y.abs().max(1e-300))
                    .fold(0.0, f64::max);
                assert!(far < 1e-7, "constraint {constraint}, path {j}: {far:e}");
            }
        }
    }

    #[test]
    fn a_t_whose_df_heads_for_the_bound_is_polished_onto_it() {
        // Normal components: ν's maximum is at DF_MAX, where EM creeps and
        // stops wherever its stop rule finds it, by a path that differs
        // with SQUAREM and without
        let cancel = AtomicBool::new(false);
        let truth = params(&[0.4, 0.6], &[0.0, 5.0], &[1.0, 1.5]);
        let xs = draw(Family::Normal, &truth, 3000, 23);
        let ds = prepare(&xs, Family::StudentT).expect("valid data");
        let mut init = ds.rescale(&params(&[0.5, 0.5], &[-1.0, 6.0], &[2.0, 2.0]));
        init.df = [0.0; crate::limits::MAX_COMPONENTS];
        let init = ds.start(init);
        let mut loose = Vec::new();
        let mut ends = Vec::new();
        for (accelerate, epsilon) in [(true, 1e-6), (false, 1e-6), (false, 1e-4), (true, 1e-3)] {
            let fit = run_em(Family::StudentT, &ds, init, 100_000, epsilon, accelerate, &cancel);
            assert_eq!(fit.outcome, Outcome::Converged);
            let polished = polish(Family::StudentT, &ds, &fit, ds.fixed.as_ref()).fit;
            assert!(polished.loglik >= fit.loglik - 1e-9 * fit.loglik.abs());
            // on this sample the first component's ν heads for the bound,
            // the second's maximum is inside (about 31.5)
            assert_eq!(polished.params.df[0], DF_MAX, "accelerate {accelerate}");
            assert!(polished.params.df[1] > 20.0 && polished.params.df[1] < 50.0);
            loose.push(fit.params);
            ends.push(polished.params);
        }
        let far = |a: &Params, b: &Params| {
            (0..2)
                .flat_map(|m| {
                    [(a.alpha[m], b.alpha[m]), (a.mu[m], b.mu[m]), (a.shape[m], b.shape[m]), (a.df[m], b.df[m])]
                })
                .map(|(x, y)| (x - y).abs() / y.abs().max(1e-300))
                .fold(0.0, f64::max)
        };
        // the looser stop left ν₁ short of the bound, and the paths apart
        assert!(loose[2].df[0] < DF_MAX - 1.0, "ν₁ {}", loose[2].df[0]);
        for j in 1..4 {
            assert!(far(&loose[0], &loose[j]) > 1e-6, "the paths stopped close: {}", far(&loose[0], &loose[j]));
            assert!(far(&ends[0], &ends[j]) < 1e-8, "{}", far(&ends[0], &ends[j]));
        }
        // the maximum given ν₁ = DF_MAX: the gradient in μ, σ and the
        // inner ν₂ vanishes
        let ll = |p: &Params| crate::student::e_step(&ds.x, None, p).ll;
        let p = ends[0];
        for m in 0..2 {
            for which in 0..3 {
                if which == 2 && m == 0 {
                    continue;
                }
                let (mut up, mut down) = (p, p);
                let h = if which == 2 { 1e-3 } else { 1e-6 };
                let (u, d) = match which {
                    0 => (&mut up.mu[m], &mut down.mu[m]),
                    1 => (&mut up.shape[m], &mut down.shape[m]),
                    _ => (&mut up.df[m], &mut down.df[m]),
                };
                *u += h;
                *d -= h;
                let slope = (ll(&up) - ll(&down)) / (2.0 * h);
                assert!(slope.abs() < 1e-3, "dℓ/dθ{which},{m} = {slope}");
            }
        }
        // and ν₁ would rise further if it could
        let mut wider = p;
        wider.df[0] = 2.0 * DF_MAX;
        assert!(ll(&wider) > ll(&p));
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
        assert_eq!(polish(Family::Normal, &ds, &at, None).fit.params, at.params);
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
        let left = polish(Family::Normal, &ds, &short, None);
        assert_eq!(left.fit, short);
        assert!(left.information.is_none());
    }
}
