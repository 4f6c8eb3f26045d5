//! The renormalised M-step of truncation.rs under constraints: one shape
//! shared by the components (`equal.scale`) and values held fixed
//! (`fixed =`). Their components' objectives no longer separate: the
//! shared log shape enters every one, and a held mean or shape is no
//! coordinate. So one Newton step moves all the free coordinates together,
//! on the sum of the components' renormalised objectives (each component's
//! gradient and Hessian as `Renormalised::slope` gives them, summed where
//! a coordinate is shared), with the same rules as the separate steps: a
//! step of at most one sd (and a factor e in the shape), halved until the
//! sum gains, ended by the first full Newton step that gains (a
//! generalised EM). The weights are mapped back as there; with weights
//! held fixed the free ones take what the untruncated M-step gives them
//! (`weights_given`).
//!
//! Weights held fixed in a truncation window take an ECM of their own: the
//! weights are no longer the observed population's shares mapped back, so
//! the window's −N log Q, Q = Σ_m α_m P_m (+ π_0 U), does not split into
//! the components' −S0_m log P_m. The components' step maximises the
//! E-step's bound with the weights where they were (`Coupling`: each
//! component's objective with its −S0_m log P_m replaced by the shared
//! −N log Q, whose Hessian couples them), and the free weights then
//! maximise the log-likelihood given the components (`weights_in_window`).
//! Both steps gain, so the log-likelihood rises every pass.

/// Points of the grid in log(s + min P) along the curve the free weights'
/// maximum lies on in a truncation window (`weights_in_window`), and the
/// golden-section steps after it.
const WINDOW_WEIGHT_GRID: usize = 64;
const WINDOW_WEIGHT_STEPS: usize = 60;

use crate::family::{with_family, ComponentFamily};
use crate::fixed::Fixed;
use crate::limits::{MAX_COMPONENTS, TRUNCATED_SETTLED, TRUNCATED_STEPS};
use crate::linalg::invert;
use crate::mstep::check_component;
use crate::outcome::Degenerate;
use crate::params::{Family, Params, Stats};
use crate::truncation::{Derivatives, Masses, Renormalised, Window, WindowTerms};

/// A window's log P at a component with its gradient and Hessian in (μ,
/// log shape), as `Window::ln_mass_slope` gives them.
type LnMassSlope = (f64, [f64; 2], [f64; 3]);

/// Where component m's mean and log shape are in the free coordinates
/// (`None`: held fixed).
#[derive(Clone, Copy, Debug)]
struct Slot {
    mu: Option<usize>,
    shape: Option<usize>,
}

/// The free coordinates of a K-component mixture whose shapes are shared
/// (`equal_scale`) or whose values are `fixed`: each free mean, and each
/// free shape (one for all with equal_scale).
fn slots(k: usize, equal_scale: bool, fixed: Option<&Fixed>) -> (Vec<Slot>, usize) {
    let mut n = 0;
    let mut next = || {
        n += 1;
        n - 1
    };
    let shape_fixed = |m: usize| fixed.and_then(|f| f.shape(m)).is_some();
    let shared = (equal_scale && !(0..k).any(shape_fixed)).then(&mut next);
    let mut out = Vec::with_capacity(k);
    for m in 0..k {
        let mu = fixed.and_then(|f| f.mu(m)).is_none().then(&mut next);
        let shape = match equal_scale {
            true => shared,
            false => (!shape_fixed(m)).then(&mut next),
        };
        out.push(Slot { mu, shape });
    }
    (out, n)
}

/// The constrained M-step: `Renormalised::m_step`'s, with the components'
/// means and shapes moved together (the module docs), and the weights
/// mapped back as there, or with fixed weights by `weights_given`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn m_step(
    r: &Renormalised,
    family: Family,
    st: &Stats,
    free: &Params,
    from: &Params,
    spread: f64,
    equal_scale: bool,
    fixed: Option<&Fixed>,
) -> Result<(Params, Option<Masses>), Degenerate> {
    with_family!(family, F => m_step_of::<F>(r, family, st, free, from, spread, equal_scale, fixed))
}

#[allow(clippy::too_many_arguments)]
fn m_step_of<F: ComponentFamily>(
    r: &Renormalised,
    family: Family,
    st: &Stats,
    free: &Params,
    from: &Params,
    spread: f64,
    equal_scale: bool,
    fixed: Option<&Fixed>,
) -> Result<(Params, Option<Masses>), Degenerate> {
    let k = free.k;
    let sums: Vec<[f64; 4]> = (0..k)
        .map(|m| {
            let censored = r.stats.map_or(0.0, |c| c.total[m]);
            [st.s0[m], st.s1[m], st.s2[m], st.s0[m] + censored]
        })
        .collect();
    let (slots, n) = slots(k, equal_scale, fixed);
    // each component's count (exact and censored) and the noise's
    let counts: Vec<f64> = sums.iter().map(|s| s[3]).collect();
    let noise_count = st.s0_noise + r.stats.map_or(0.0, |c| c.total_noise);
    let coupling = match (fixed.filter(|f| f.any_weight()), r.truncation) {
        (Some(_), Some(window)) => Some(Coupling {
            window,
            alpha: from.alpha[..k].to_vec(),
            noise: r.noise.map_or(0.0, |ln_u| from.noise * ln_u.exp()),
            n: counts.iter().sum::<f64>() + r.noise.map_or(0.0, |_| noise_count),
            counts: counts.clone(),
        }),
        _ => None,
    };
    // every component at (μ, log shape), from where it was, else from the
    // closed-form constrained M-step (both obey the constraints)
    let point = |p: &Params| -> Vec<[f64; 2]> { (0..k).map(|m| [p.mu[m], p.shape[m].ln()]).collect() };
    let total = |x: &[[f64; 2]]| -> (f64, Vec<Option<WindowTerms>>) {
        let mut v = 0.0;
        let mut masses = Vec::with_capacity(k);
        for (m, xm) in x.iter().enumerate() {
            let (vm, mass) = r.objective::<F>(m, sums[m], xm[0], xm[1]);
            v += vm;
            masses.push(mass);
        }
        if let Some(c) = &coupling {
            v = c.coupled(v, &masses);
        }
        (v, masses)
    };
    let mut x = point(from);
    let (mut here, mut masses) = total(&x);
    if !here.is_finite() {
        x = point(free);
        (here, masses) = total(&x);
    }
    if here.is_finite() && n > 0 {
        for _ in 0..TRUNCATED_STEPS {
            let Some((d, newton)) = direction::<F>(r, &sums, &slots, n, &x, coupling.as_ref()) else { break };
            let move_by = |t: f64| -> Vec<[f64; 2]> {
                x.iter()
                    .zip(&slots)
                    .map(|(xm, slot)| {
                        [xm[0] + slot.mu.map_or(0.0, |i| t * d[i]), xm[1] + slot.shape.map_or(0.0, |i| t * d[i])]
                    })
                    .collect()
            };
            // the step's reach in sds (μ) and in log shape
            let reach = x
                .iter()
                .zip(&slots)
                .map(|(xm, slot)| {
                    let sd = F::sd(xm[0], xm[1].exp());
                    let mu = slot.mu.map_or(0.0, |i| d[i].abs() / sd);
                    mu.max(slot.shape.map_or(0.0, |i| d[i].abs()))
                })
                .fold(0.0, f64::max);
            if !reach.is_finite() {
                break;
            }
            if newton && reach < TRUNCATED_SETTLED {
                x = move_by(1.0);
                masses = vec![None; k];
                break;
            }
            let mut t = if reach > 1.0 { 1.0 / reach } else { 1.0 };
            let mut moved = false;
            while t > 1e-10 {
                let y = move_by(t);
                let (v, at_y) = total(&y);
                if v > here {
                    (x, here, masses, moved) = (y, v, at_y, true);
                    break;
                }
                t *= 0.5;
            }
            // a full Newton step taken (not one cut to the reach): enough
            // for this pass
            if !moved || (newton && t == 1.0) {
                break;
            }
        }
    }
    let mut p = *free;
    let mut out = Masses::empty();
    let mut ln_p = [0.0; MAX_COMPONENTS];
    for m in 0..k {
        let (mu, shape) = (x[m][0], x[m][1].exp());
        check_component(family, mu, shape, spread)?;
        (p.mu[m], p.shape[m]) = (mu, shape);
        if let Some(w) = r.truncation {
            let (mass, derivatives) = masses[m].unwrap_or_else(|| (w.ln_mass_of::<F>(mu, shape), None));
            out.set(m, mu, shape, mass, derivatives);
            ln_p[m] = mass;
        }
    }
    // the held values exactly as given (exp of their log may differ in the
    // last bit)
    if let Some(f) = fixed {
        for m in 0..k {
            p.mu[m] = f.mu(m).unwrap_or(p.mu[m]);
            p.shape[m] = f.shape(m).unwrap_or(p.shape[m]);
        }
    }
    match fixed.filter(|f| f.any_weight()) {
        Some(f) => match (r.truncation, r.noise) {
            (Some(_), noise) => {
                let noise = noise.map(|ln_u| (noise_count, ln_u));
                weights_in_window(&mut p, f, &counts, &ln_p[..k], noise, from)
            }
            (None, noise) => weights_given(&mut p, f, &counts, noise.map(|_| noise_count)),
        },
        None => {
            let l: Vec<f64> = (0..k).map(|m| counts[m].ln() - ln_p[m]).collect();
            r.map_weights(&mut p, st, &l);
        }
    }
    // (the masses are of the parameters as they end: a held value put back
    // exactly may differ from its round trip, and is then computed again)
    Ok((p, r.truncation.map(|_| out)))
}

/// The Newton direction in the free coordinates from each component's
/// gradient and Hessian (summed where a coordinate is shared), and whether
/// it is Newton's (the Hessian negative definite); else a gradient step
/// scaled by the Hessian's diagonal. `None` where it is not finite.
fn direction<F: ComponentFamily>(
    r: &Renormalised,
    sums: &[[f64; 4]],
    slots: &[Slot],
    n: usize,
    x: &[[f64; 2]],
    coupling: Option<&Coupling>,
) -> Option<(Vec<f64>, bool)> {
    let mut g = vec![0.0; n];
    let mut h = vec![0.0; n * n];
    // the truncation window's log P with its derivatives where `evaluate`
    // computed them (the coupling's, not computed again)
    let mut window_terms: Vec<Option<LnMassSlope>> = Vec::with_capacity(slots.len());
    for (m, slot) in slots.iter().enumerate() {
        // the value with all its windows' derivatives, in one pass
        let (here, truncation, window) = r.evaluate::<F>(m, sums[m], x[m], None);
        window_terms.push(truncation.and_then(|(ln_p, d)| d.map(|(wg, wh)| (ln_p, wg, wh))));
        let (gm, hm): Derivatives = r.slope::<F>(m, sums[m], x[m], here, window);
        let at = [slot.mu, slot.shape];
        for a in 0..2 {
            let Some(i) = at[a] else { continue };
            g[i] += gm[a];
            for b in 0..2 {
                let Some(j) = at[b] else { continue };
                // (μμ, μs, ss)
                h[i + n * j] += hm[a + b];
            }
        }
    }
    if let Some(c) = coupling {
        c.add_derivatives::<F>(slots, n, x, &window_terms, &mut g, &mut h)?;
    }
    // Newton's step on −H, where −H is positive definite
    let neg: Vec<f64> = h.iter().map(|v| -v).collect();
    let diag: Vec<f64> = (0..n).map(|i| neg[i + n * i]).collect();
    let newton =
        invert(&neg, &diag).ok().map(|inv| (0..n).map(|i| (0..n).map(|j| inv[i + n * j] * g[j]).sum()).collect());
    let (d, is_newton): (Vec<f64>, bool) = match newton {
        Some(d) => (d, true),
        None => ((0..n).map(|i| g[i] / h[i + n * i].abs().max(f64::MIN_POSITIVE)).collect(), false),
    };
    d.iter().all(|v| v.is_finite()).then_some((d, is_newton))
}

/// The components' objective under weights held fixed in a truncation
/// window (module docs): their separate objectives, each with its
/// −S0_m log P_m (S0_m: `counts`) replaced by the shared −N log Q, Q =
/// Σ_m α_m P_m + `noise` (π_0 U), the weights where the last M-step left
/// them.
struct Coupling<'a> {
    window: &'a Window,
    alpha: Vec<f64>,
    noise: f64,
    counts: Vec<f64>,
    n: f64,
}

impl Coupling<'_> {
    /// The coupled objective from the separate objectives' sum `separate`
    /// and each component's truncation terms (−∞ where one has none).
    fn coupled(&self, separate: f64, masses: &[Option<WindowTerms>]) -> f64 {
        let mut v = separate;
        let mut q = self.noise;
        for (m, mass) in masses.iter().enumerate() {
            let Some((ln_p, _)) = mass else { return f64::NEG_INFINITY };
            v += self.counts[m] * ln_p;
            q += self.alpha[m] * ln_p.exp();
        }
        let v = v - self.n * q.ln();
        if v.is_nan() {
            f64::NEG_INFINITY
        } else {
            v
        }
    }

    /// Adds to the separate objectives' gradient `g` and Hessian `h` (n
    /// free coordinates) what the coupling changes: S0_m ∇L_m back, and −N
    /// log Q's, −N w_m ∇L_m with w_m = α_m P_m / Q, and in the Hessian −N
    /// w_m (∇²L_m + ∇L_m ∇L_mᵀ) on each component's block and N w_m w_l
    /// ∇L_m ∇L_lᵀ across any two (L_m = log P_m; `known`, each
    /// component's where already computed at x). `None` where a log P is
    /// not finite.
    fn add_derivatives<F: ComponentFamily>(
        &self,
        slots: &[Slot],
        n: usize,
        x: &[[f64; 2]],
        known: &[Option<LnMassSlope>],
        g: &mut [f64],
        h: &mut [f64],
    ) -> Option<()> {
        let terms: Vec<LnMassSlope> = x
            .iter()
            .zip(known)
            .map(|(xm, k)| k.filter(|t| t.0.is_finite()).or_else(|| self.window.ln_mass_slope::<F>(*xm)))
            .collect::<Option<_>>()?;
        let q = self.noise + terms.iter().zip(&self.alpha).map(|(t, a)| a * t.0.exp()).sum::<f64>();
        let w: Vec<f64> = terms.iter().zip(&self.alpha).map(|(t, a)| a * t.0.exp() / q).collect();
        let at = |m: usize| [slots[m].mu, slots[m].shape];
        for (m, (_, gl, hl)) in terms.iter().enumerate() {
            let a_m = at(m);
            for a in 0..2 {
                let Some(i) = a_m[a] else { continue };
                g[i] += (self.counts[m] - self.n * w[m]) * gl[a];
                for b in 0..2 {
                    let Some(j) = a_m[b] else { continue };
                    h[i + n * j] += (self.counts[m] - self.n * w[m]) * hl[a + b] - self.n * w[m] * gl[a] * gl[b];
                }
            }
            for (l, (_, gl2, _)) in terms.iter().enumerate() {
                let a_l = at(l);
                for a in 0..2 {
                    let Some(i) = a_m[a] else { continue };
                    for b in 0..2 {
                        let Some(j) = a_l[b] else { continue };
                        h[i + n * j] += self.n * w[m] * w[l] * gl[a] * gl2[b];
                    }
                }
            }
        }
        g.iter().chain(h.iter()).all(|v| v.is_finite()).then_some(())
    }
}

/// The weights under fixed weights without a truncation window, where
/// every P_m is 1 and the weights' objective is Σ_free c_m log α_m: the
/// fixed ones as given,
/// the free ones (and the noise's, its count `noise`) sharing what they
/// leave in proportion to their counts (exact and censored), as
/// `Fixed::weights` does for the exact values.
fn weights_given(p: &mut Params, f: &Fixed, counts: &[f64], noise: Option<f64>) {
    let k = counts.len();
    let left = 1.0 - (0..k).filter_map(|m| f.alpha(m)).sum::<f64>();
    let free: f64 = (0..k).filter(|&m| f.alpha(m).is_none()).map(|m| counts[m]).sum::<f64>() + noise.unwrap_or(0.0);
    for m in 0..k {
        p.alpha[m] = f.alpha(m).unwrap_or(left * counts[m] / free);
    }
    if let Some(c0) = noise {
        p.noise = left * c0 / free;
    }
}

/// The weights under fixed weights in a truncation window: the free ones
/// (and the noise's) maximise the log-likelihood's weight terms given the
/// components, Σ_free c_m log α_m − N log Q with Q = Σ_m α_m P_m (+ π_0 U)
/// and N every count, the fixed ones as given: an ECME step, as
/// `map_weights`' closed form is without fixed weights. Lagrange's
/// condition puts every stationary point on the curve α_m ∝ c_m / (P_m +
/// s), s > −min P (the free ones scaled to share what the fixed leave), so
/// the maximum is sought along it: a grid in log(s + min P), then
/// golden-section search around the grid's best. The result replaces the
/// weights of `from` only where it gains on them (so the step never loses).
/// `ln_p`: each component's log P; `noise`: its count and log U.
fn weights_in_window(
    p: &mut Params,
    f: &Fixed,
    counts: &[f64],
    ln_p: &[f64],
    noise: Option<(f64, f64)>,
    from: &Params,
) {
    let k = counts.len();
    let left = f.weight_left();
    let mass: Vec<f64> = ln_p.iter().map(|l| l.exp()).collect();
    // the free members: (count, P), the components' then the noise's
    let mut free: Vec<(f64, f64)> = (0..k).filter(|&m| f.alpha(m).is_none()).map(|m| (counts[m], mass[m])).collect();
    if let Some((c0, ln_u)) = noise {
        free.push((c0, ln_u.exp()));
    }
    // one free member: it takes what the fixed leave, nothing to search
    if free.len() == 1 {
        for m in 0..k {
            p.alpha[m] = f.alpha(m).unwrap_or(left);
        }
        if noise.is_some() {
            p.noise = left;
        }
        return;
    }
    let q_fixed: f64 = (0..k).filter_map(|m| f.alpha(m).map(|a| a * mass[m])).sum();
    let n: f64 = counts.iter().sum::<f64>() + noise.map_or(0.0, |c| c.0);
    let objective = |a: &[f64]| -> f64 {
        let q = q_fixed + a.iter().zip(&free).map(|(a, (_, pm))| a * pm).sum::<f64>();
        a.iter().zip(&free).map(|(a, (c, _))| if *c > 0.0 { c * a.ln() } else { 0.0 }).sum::<f64>() - n * q.ln()
    };
    let p_min = free.iter().map(|m| m.1).fold(f64::INFINITY, f64::min);
    let on_curve = |t: f64| -> Vec<f64> {
        let s = t.exp() - p_min;
        let raw: Vec<f64> = free.iter().map(|(c, pm)| c / (pm + s)).collect();
        let sum: f64 = raw.iter().sum();
        raw.iter().map(|v| left * v / sum).collect()
    };
    let value = |t: f64| {
        let v = objective(&on_curve(t));
        if v.is_finite() {
            v
        } else {
            f64::NEG_INFINITY
        }
    };
    // t from where s is within 1e-12 P of −min P up to s = 1e6 (α ∝ c)
    let (lo, hi) = ((p_min * 1e-12).ln(), (1e6 + p_min).ln());
    let step = (hi - lo) / (WINDOW_WEIGHT_GRID - 1) as f64;
    let grid: Vec<f64> = (0..WINDOW_WEIGHT_GRID).map(|i| lo + step * i as f64).collect();
    let best = (0..grid.len()).max_by(|&a, &b| value(grid[a]).total_cmp(&value(grid[b]))).unwrap_or(0);
    let (mut a, mut b) = (grid[best.saturating_sub(1)], grid[(best + 1).min(grid.len() - 1)]);
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..WINDOW_WEIGHT_STEPS {
        let (x1, x2) = (b - golden * (b - a), a + golden * (b - a));
        if value(x1) >= value(x2) {
            b = x2;
        } else {
            a = x1;
        }
    }
    let t = 0.5 * (a + b);
    let candidate = if value(t) >= value(grid[best]) { on_curve(t) } else { on_curve(grid[best]) };
    // the weights the step started from, in the same order
    let before: Vec<f64> =
        (0..k).filter(|&m| f.alpha(m).is_none()).map(|m| from.alpha[m]).chain(noise.map(|_| from.noise)).collect();
    let chosen = if objective(&before) > objective(&candidate) { before } else { candidate };
    let mut it = chosen.into_iter();
    for m in 0..k {
        p.alpha[m] = match f.alpha(m) {
            Some(a) => a,
            None => it.next().unwrap_or(p.alpha[m]),
        };
    }
    if noise.is_some() {
        p.noise = it.next().unwrap_or(p.noise);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family;
    use crate::truncation::Window;

    /// Two components' weighted sums over the same values inside `w`.
    fn two_components(fam: Family) -> (Vec<f64>, [Vec<f64>; 2], Stats) {
        let xs: Vec<f64> = (0..120).map(|i| 0.55 + 1.6 * ((i as f64 * 0.618_034).fract())).collect();
        let r0: Vec<f64> = xs.iter().map(|x| 1.0 / (1.0 + (4.0 * (x - 1.1)).exp())).collect();
        let r1: Vec<f64> = r0.iter().map(|r| 1.0 - r).collect();
        let mut st = Stats::zero();
        for (m, r) in [&r0, &r1].into_iter().enumerate() {
            for (x, r) in xs.iter().zip(r) {
                st.s0[m] += r;
                st.s1[m] += r * x;
                st.s2[m] += r * family::aux(fam, *x);
            }
        }
        (xs, [r0, r1], st)
    }

    #[test]
    fn constrained_m_steps_settle_at_the_constrained_maximum() {
        // the sum of the components' renormalised objectives, Σ_m Σ r_m
        // log p_m − S0_m log P_m: repeated constrained M-steps (each a
        // joint Newton step) settle where moving any free coordinate either
        // way lowers it, a held mean stays put, and the shape stays shared
        let w = Window { lo: 0.5, hi: 2.2 };
        for fam in Family::FITTED {
            let (xs, r, st) = two_components(fam);
            let q = |p: &Params| -> f64 {
                (0..2)
                    .map(|m| {
                        xs.iter()
                            .zip(&r[m])
                            .map(|(x, r)| r * family::log_density(fam, *x, p.mu[m], p.shape[m]))
                            .sum::<f64>()
                            - st.s0[m] * w.ln_mass(fam, p.mu[m], p.shape[m])
                    })
                    .sum()
            };
            let renormalised = Renormalised { truncation: Some(&w), censored: &[], stats: None, noise: None };
            let n = st.s0[0] + st.s0[1];
            // one shape shared
            let free = crate::mstep::m_step(fam, 2, &st, n, 0.1, true, None).unwrap();
            let mut p = free;
            for _ in 0..40 {
                p = m_step(&renormalised, fam, &st, &free, &p, 0.1, true, None).unwrap().0;
            }
            assert_eq!(p.shape[0].to_bits(), p.shape[1].to_bits(), "{fam:?}");
            let best = q(&p);
            assert!(best >= q(&free), "{fam:?}");
            for f in [0.9999, 1.0001] {
                for m in 0..2 {
                    let mut moved = p;
                    moved.mu[m] *= f;
                    assert!(q(&moved) < best, "{fam:?} mu{m}");
                }
                let mut moved = p;
                moved.shape[0] *= f;
                moved.shape[1] *= f;
                assert!(q(&moved) < best, "{fam:?} shared shape");
            }
            // the second mean held
            let mut held = Fixed::none(2);
            held.0.mu[1] = p.mu[1] * 1.02;
            let free = crate::mstep::m_step(fam, 2, &st, n, 0.1, false, Some(&held)).unwrap();
            let mut p = free;
            for _ in 0..40 {
                p = m_step(&renormalised, fam, &st, &free, &p, 0.1, false, Some(&held)).unwrap().0;
            }
            assert_eq!(p.mu[1].to_bits(), held.0.mu[1].to_bits(), "{fam:?}");
            let best = q(&p);
            for f in [0.9999, 1.0001] {
                for (m, shape) in [(0, false), (0, true), (1, true)] {
                    let mut moved = p;
                    if shape {
                        moved.shape[m] *= f;
                    } else {
                        moved.mu[m] *= f;
                    }
                    assert!(q(&moved) < best, "{fam:?} held mean: component {m} shape {shape}");
                }
            }
        }
    }

    #[test]
    fn free_coordinates_skip_what_is_held_and_share_one_shape() {
        let mut f = Fixed::none(3);
        f.0.mu[1] = 2.0;
        let (s, n) = slots(3, true, Some(&f));
        assert_eq!(n, 3);
        assert_eq!(s.iter().map(|x| x.mu).collect::<Vec<_>>(), vec![Some(1), None, Some(2)]);
        assert!(s.iter().all(|x| x.shape == Some(0)));
        f.0.shape[2] = 1.5;
        let (s, n) = slots(3, false, Some(&f));
        assert_eq!(n, 4);
        assert_eq!(s[2].shape, None);
        assert_eq!(s[1].mu, None);
    }
}
