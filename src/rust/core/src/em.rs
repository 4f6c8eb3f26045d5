//! One start's EM: from its starting point to convergence, max.iters or
//! degeneracy, optionally accelerated by squared extrapolation (SQUAREM).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::dataset::Prepared;
use crate::limits::{FALL_TOLERANCE, MAX_COMPONENTS, MIN_COMPONENT_OBS, SQUAREM_STEP_GROWTH};
use crate::mstep::{check_component, m_step, weight_ok};
use crate::outcome::{Degenerate, Outcome, StartFit};
use crate::params::{Family, Params, Stats};
use crate::truncation::{CensoredStats, Masses, Renormalised};
use crate::truncation_constrained;

/// How far the log-likelihood may fall before it is more than rounding.
pub(crate) fn fall_tolerance(loglik: f64, n: f64) -> f64 {
    FALL_TOLERANCE * (loglik.abs() + n)
}

/// Where an accelerated start is in its cycle of three E-step passes: the
/// passes of θ0 and of θ1 = M(θ0) are plain EM steps; the third pass is of
/// the extrapolated θ' (Varadhan & Roland 2008, SqS3), computed from θ0, θ1
/// and θ2 = M(θ1).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// `params` is θ0 of a cycle.
    First,
    /// `params` is θ1; `keep` holds θ0.
    Second,
    /// `params` is θ'; `keep` holds θ2, `ll1` is ℓ(θ1).
    Extrapolated,
}

/// SQUAREM's state between passes.
#[derive(Clone, Copy, Debug)]
struct Squarem {
    phase: Phase,
    keep: Params,
    ll1: f64,
    /// The step length of θ'.
    step: f64,
    /// The longest step allowed: starts at SQUAREM_STEP_GROWTH, grows by
    /// that factor when an accepted step reached it, shrinks by it (not
    /// below where it started) when a step that reached it was rejected.
    step_max: f64,
}

/// One start's EM between E-steps. Engines compute the E-step wherever they
/// like (CPU pass, GPU kernels) and hand its statistics to `advance`, which
/// applies the convergence rule, the guards, the M-step and, when
/// accelerated, the extrapolation: every engine makes the same decisions
/// from the same numbers (the cuda-batched kernel mirrors this line for line).
#[derive(Clone, Copy, Debug)]
pub struct EmState {
    pub params: Params,
    /// ℓ of the parameters whose M-step gave `params`; `None` at the start
    /// and after an extrapolation, whose pass is not an EM step.
    previous: Option<f64>,
    /// E-step passes that moved the parameters (plain EM: M-steps applied).
    pub iterations: u32,
    squarem: Option<Squarem>,
    /// The truncation masses of the last M-step's parameters (truncation.rs:
    /// the log-likelihood of the pass after it reuses them).
    masses: Option<Masses>,
}

impl EmState {
    pub fn new(init: Params, accelerate: bool) -> EmState {
        let squarem = accelerate.then_some(Squarem {
            phase: Phase::First,
            keep: init,
            ll1: 0.0,
            step: 1.0,
            step_max: SQUAREM_STEP_GROWTH,
        });
        EmState { params: init, previous: None, iterations: 0, squarem, masses: None }
    }

    /// Takes the E-step statistics of `self.params`. Returns the start's end
    /// state when it stops; otherwise moves `params` to the next iterate.
    pub fn advance(
        &mut self,
        family: Family,
        ds: &Prepared,
        stats: &Stats,
        max_iters: u32,
        epsilon: f64,
    ) -> Option<StartFit> {
        let censored = ds.censored_stats(&self.params);
        let loglik = stats.ll
            + ds.h_sum
            + ds.truncation_term(&self.params, self.masses.as_ref())
            + censored.as_ref().map_or(0.0, |c| c.ll);
        // the observations' count, Σ w with weights
        let n = ds.total;
        if let Some(sq) = &mut self.squarem {
            if sq.phase == Phase::Extrapolated {
                // Accepted when θ' is at least as likely as θ1 and its
                // M-step is usable; otherwise the cycle ends at θ2, as plain
                // EM would. Either way the next pass is an EM step's.
                let next = if loglik >= sq.ll1 {
                    m_step_on(family, ds, &self.params, stats, censored.as_ref(), self.masses.as_ref()).ok()
                } else {
                    None
                };
                let reached = sq.step >= sq.step_max;
                match next {
                    Some((next, masses)) => {
                        self.params = next;
                        self.masses = masses;
                        self.previous = Some(loglik);
                        if reached {
                            sq.step_max *= SQUAREM_STEP_GROWTH;
                        }
                    }
                    None => {
                        self.params = sq.keep;
                        self.previous = Some(sq.ll1);
                        if reached {
                            sq.step_max = (sq.step_max / SQUAREM_STEP_GROWTH).max(SQUAREM_STEP_GROWTH);
                        }
                    }
                }
                sq.phase = Phase::First;
                self.iterations += 1;
                return None;
            }
        }
        let end = |outcome| Some(StartFit { params: self.params, loglik, iterations: self.iterations, outcome });
        if !loglik.is_finite() {
            return end(Outcome::Failed(Degenerate::NotFinite));
        }
        if let Some(prev) = self.previous {
            if loglik < prev - fall_tolerance(prev, n) {
                return end(Outcome::Failed(Degenerate::LoglikFell));
            }
            if loglik - prev < epsilon {
                return end(Outcome::Converged);
            }
        }
        if self.iterations >= max_iters {
            return end(Outcome::MaxIters);
        }
        let next = match m_step_on(family, ds, &self.params, stats, censored.as_ref(), self.masses.as_ref()) {
            Ok((next, masses)) => {
                self.masses = masses;
                next
            }
            Err(why) => return end(Outcome::Failed(why)),
        };
        self.iterations += 1;
        self.previous = Some(loglik);
        let current = self.params;
        self.params = next;
        let Some(sq) = &mut self.squarem else { return None };
        // (an extrapolated pass returned above)
        if sq.phase == Phase::First {
            sq.keep = current;
            sq.phase = Phase::Second;
            return None;
        }
        sq.phase = Phase::First;
        // the extrapolated pass must not be the last one allowed
        if self.iterations < max_iters {
            if let Some((theta, step)) = extrapolate(family, &sq.keep, &current, &next, sq.step_max, n, ds.spread) {
                sq.step = step;
                sq.keep = next;
                sq.ll1 = loglik;
                sq.phase = Phase::Extrapolated;
                // (a fixed shape's log, extrapolated by a zero step, comes
                // back through exp: put the fixed values back exactly)
                self.params = match &ds.fixed {
                    Some(f) => f.impose(&theta),
                    None => theta,
                };
                self.previous = None;
            }
        }
        None
    }
}

/// The M-step on the dataset `ds` from the statistics of the parameters
/// `from` (and of its censored observations, `censored`): its settings'
/// (mstep.rs), then, with truncation or censoring, the components and
/// weights moved toward the renormalised maximum (truncation.rs), with
/// the truncation masses of the result where there is a window (`known`:
/// those of the M-step that made `from`, reused where they are its).
fn m_step_on(
    family: Family,
    ds: &Prepared,
    from: &Params,
    stats: &Stats,
    censored: Option<&CensoredStats>,
    known: Option<&Masses>,
) -> Result<(Params, Option<Masses>), Degenerate> {
    let free = match censored {
        None => m_step(family, from.k, stats, ds.total, ds.spread, ds.equal_scale, ds.fixed.as_ref())?,
        // the exact values' closed form is not the components' (binned
        // data have none): each component's count is its exact and
        // censored shares together, and the Newton step starts from where
        // the component was
        Some(c) => {
            let mut p = *from;
            for m in 0..from.k {
                weight_ok(stats.s0[m] + c.total[m])?;
                p.alpha[m] = (stats.s0[m] + c.total[m]) / ds.total;
            }
            if ds.noise.is_some() {
                p.noise = (stats.s0_noise + c.total_noise) / ds.total;
            }
            p
        }
    };
    if ds.truncation.is_none() && censored.is_none() {
        return Ok((free, None));
    }
    // the noise's share of the truncation window (all of its support
    // without one)
    let noise = ds.noise.as_ref().map(|_| ds.truncation.as_ref().and_then(|w| ds.noise_ln_mass(w)).unwrap_or(0.0));
    let renormalised =
        Renormalised { truncation: ds.truncation.as_ref(), censored: &ds.censored, stats: censored, noise };
    if ds.equal_scale || ds.fixed.is_some() {
        let fixed = ds.fixed.as_ref();
        return truncation_constrained::m_step(
            &renormalised,
            family,
            stats,
            &free,
            from,
            ds.spread,
            ds.equal_scale,
            fixed,
        );
    }
    renormalised.m_step(family, stats, &free, from, ds.spread, known)
}

/// The coordinates SQUAREM extrapolates in: the weights, the means, the
/// log-shapes (so that any step keeps λ and σ positive) and the t's
/// estimated 1/ν or the ex-Gaussian's log τ (0 otherwise: a coordinate
/// that never moves), all on the rescaled data's scale. ν creeping toward
/// the Normal's ∞ by ECM steps moves far more evenly in 1/ν than in log ν:
/// extrapolated in 1/ν, t fits took 2.0-2.3 times fewer E-step passes to
/// the same maxima (results-robust.md). τ is a scale, as σ is.
fn coordinates(family: Family, p: &Params, m: usize) -> [f64; 4] {
    let third = match (family, p.df[m] > 0.0 && !p.df_fixed) {
        (_, false) => 0.0,
        (Family::ExGauss, true) => p.df[m].ln(),
        (_, true) => 1.0 / p.df[m],
    };
    [p.alpha[m], p.mu[m], p.shape[m].ln(), third]
}

/// SqS3: with r = θ1 − θ0 and v = θ2 − 2θ1 + θ0, the step s = ‖r‖/‖v‖, at
/// least 1 and at most `step_max`, and θ' = θ0 + 2s·r + s²·v (s = 1 gives θ2).
/// `None` when s = 1 or θ' is not a usable mixture (a weight under
/// MIN_COMPONENT_OBS observations, or a component check_component rejects):
/// the cycle then ends at θ2 like plain EM.
fn extrapolate(
    family: Family,
    t0: &Params,
    t1: &Params,
    t2: &Params,
    step_max: f64,
    n: f64,
    spread: f64,
) -> Option<(Params, f64)> {
    let k = t0.k;
    // per component and coordinate: θ0 and the differences r and v
    let mut a = [[0.0; 4]; MAX_COMPONENTS];
    let mut r = [[0.0; 4]; MAX_COMPONENTS];
    let mut v = [[0.0; 4]; MAX_COMPONENTS];
    let (mut rr, mut vv) = (0.0, 0.0);
    for m in 0..k {
        let (c0, c1, c2) = (coordinates(family, t0, m), coordinates(family, t1, m), coordinates(family, t2, m));
        for j in 0..4 {
            a[m][j] = c0[j];
            r[m][j] = c1[j] - c0[j];
            v[m][j] = c2[j] - 2.0 * c1[j] + c0[j];
            rr += r[m][j] * r[m][j];
            vv += v[m][j] * v[m][j];
        }
    }
    // the noise component's weight, a coordinate like the α's (0 without one)
    let (n0, n1, n2) = (t0.noise, t1.noise, t2.noise);
    let (r_noise, v_noise) = (n1 - n0, n2 - 2.0 * n1 + n0);
    rr += r_noise * r_noise;
    vv += v_noise * v_noise;
    if !(vv > 0.0) {
        return None;
    }
    let step = (rr / vv).sqrt().min(step_max);
    if !(step > 1.0) {
        return None;
    }
    let mut p = Params { df: t0.df, df_fixed: t0.df_fixed, ..Params::zeroed(k) };
    if n0 > 0.0 {
        p.noise = n0 + 2.0 * step * r_noise + step * step * v_noise;
        if !(p.noise > 0.0 && p.noise < 1.0) {
            return None;
        }
    }
    for m in 0..k {
        let at = |j: usize| a[m][j] + 2.0 * step * r[m][j] + step * step * v[m][j];
        p.alpha[m] = at(0);
        p.mu[m] = at(1);
        p.shape[m] = at(2).exp();
        if t0.df[m] > 0.0 && !t0.df_fixed {
            p.df[m] = if family == Family::ExGauss { at(3).exp() } else { 1.0 / at(3) };
            if !family.third_ok(p.df[m]) {
                return None;
            }
        }
        if !(p.alpha[m] * n >= MIN_COMPONENT_OBS) || check_component(family, p.mu[m], p.shape[m], spread).is_err() {
            return None;
        }
    }
    Some((p, step))
}

/// Runs EM on `ds` from `init` with the CPU E-step. The log-likelihood of
/// every iterate comes from the E-step that also gathers the next M-step's
/// statistics, so the returned `loglik` always belongs to the returned `params`.
pub fn run_em(
    family: Family,
    ds: &Prepared,
    init: Params,
    max_iters: u32,
    epsilon: f64,
    accelerate: bool,
    cancel: &AtomicBool,
) -> StartFit {
    let mut state = EmState::new(init, accelerate);
    loop {
        if cancel.load(Ordering::Relaxed) {
            return StartFit {
                params: state.params,
                loglik: f64::NAN,
                iterations: state.iterations,
                outcome: Outcome::Cancelled,
            };
        }
        let stats = ds.e_step(&state.params);
        if let Some(done) = state.advance(family, ds, &stats, max_iters, epsilon) {
            return done;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::prepare;

    /// The log-likelihoods along an accelerated path: of every pass but the
    /// rejected extrapolations, with how many extrapolations were accepted
    /// and rejected.
    fn path(family: Family, data: &[f64], init: Params) -> (Vec<f64>, usize, usize) {
        let ds = prepare(data, family).expect("valid data");
        let init = ds.rescale(&init);
        let mut state = EmState::new(init, true);
        let (mut lls, mut accepted, mut rejected) = (Vec::new(), 0, 0);
        loop {
            let stats = ds.e_step(&state.params);
            let ll = stats.ll + ds.h_sum;
            let before = state.squarem.expect("accelerated");
            let done = state.advance(family, &ds, &stats, 10_000, 1e-12);
            if before.phase == Phase::Extrapolated {
                if state.params == before.keep {
                    rejected += 1;
                    continue;
                }
                accepted += 1;
            }
            lls.push(ll);
            if done.is_some() {
                return (lls, accepted, rejected);
            }
        }
    }

    #[test]
    fn accelerated_paths_never_lose_likelihood() {
        // Data of two overlapping Normals, started far from the maximum so
        // that long steps overshoot: those must be rejected, and every
        // log-likelihood kept on the path must be at least the one before.
        let data: Vec<f64> = (0..400)
            .map(|i| {
                let u = (i as f64 + 0.5) / 400.0;
                let z = (u * 7.0).sin() + 2.0 * (u * 13.0).cos() * u;
                if i % 3 == 0 {
                    1.8 + 0.8 * z
                } else {
                    0.6 * z
                }
            })
            .collect();
        for family in [Family::Normal] {
            let init = Params::from_slices(&[0.9, 0.1], &[-2.0, 3.0], &[0.2, 3.0]).expect("params");
            let (lls, accepted, rejected) = path(family, &data, init);
            assert!(accepted > 0 && rejected > 0, "{accepted} extrapolations accepted, {rejected} rejected");
            for w in lls.windows(2) {
                assert!(w[1] >= w[0] - 1e-9 * w[0].abs(), "fell from {} to {}", w[0], w[1]);
            }
        }
    }
}
