//! Truncated data (issue 34): a dataset observed only inside a window
//! [lo, hi] (response-time cut-offs), its likelihood renormalised over the
//! window. With P_m = F_m(hi) − F_m(lo) the window's mass under component
//! m and Q = Σ_m α_m P_m the mixture's,
//!
//!   ℓ_T(θ) = Σ_i log Σ_m α_m p_m(x_i) − N log Q(θ),
//!
//! the α being the weights of the untruncated mixture (what a user reads:
//! the population before the cut-offs). Written with the weights of the
//! observed population, π_m = α_m P_m / Q, the same likelihood is
//! Σ_i log Σ_m π_m p_m(x_i)/P_m, whose complete-data log-likelihood
//! separates the π from each component's (μ_m, shape_m) (McLachlan & Peel
//! 2000, §2.20). So EM stays exact with three changes, none in the E-step:
//!
//! - the E-step's responsibilities are the untruncated mixture's
//!   (π_m p_m/P_m ∝ α_m p_m), and its log-likelihood takes −N log Q (`term`);
//! - the M-step's π_m is S0_m/N as before, and each component's (μ, shape)
//!   moves toward the maximum of S0·c − k·Σr q − S0 log P_m, its expected
//!   complete-data log-likelihood renormalised, by a Newton step in
//!   (μ, log shape) from where it was (`m_step`): a generalised EM
//!   (Lange 1995) with EM's fixed points, which the polish then settles
//!   to the maximum itself;
//! - α_m ∝ π_m / P_m maps the weights back.
//!
//! Censored observations (a response deadline: a value known only to exceed
//! it; or below a detection limit) are windows too: each group of `count`
//! observations known to lie in the window W_j adds count·log Q_j, Q_j =
//! Σ_m α_m P_jm (intersected with the truncation window, if any, and
//! renormalised with the rest). Their E-step is done here on the host
//! (`censored_e_step`: responsibilities α_m P_jm / Q_j), beside any engine's
//! pass over the exact values; the M-step's objective for component m takes
//! Σ_j count·τ_jm log P_jm, and its weight π_m counts them too.
//!
//! A noise component (noise.rs), a uniform over its support in the data's
//! units, has the constant mass U (its support's share inside a window,
//! `Prepared::noise_ln_mass`) in every window: Q = Σ_m α_m P_m + π_0 U, its
//! censored groups' expected count beside the components', and its weight
//! mapped back as theirs, α_0 ∝ π_0 / U (`map_weights`).
//!
//! The information (information.rs) takes the Hessian of −N log Q, and the
//! standard errors follow. Everything is in the fitted units: the rescaled
//! data (the logarithms for the lognormal), where the window is rescaled
//! with the data (`Window::fitted`); P is invariant under that map.

use crate::constrained::Layout;
use crate::family::{with_family, CdfDerivatives, ComponentFamily};
use crate::limits::{MAX_COMPONENTS, TRUNCATED_DIFFERENCE, TRUNCATED_SETTLED, TRUNCATED_STEPS};
use crate::mathx::log_sum_exp;
use crate::mstep::check_component;
use crate::outcome::Degenerate;
use crate::params::{Family, Params, Stats};
use crate::special::ln_1m_exp;

/// The window [lo, hi] the data were observed in (−∞ and ∞ for an open
/// side).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub lo: f64,
    pub hi: f64,
}

impl Window {
    /// The window in the units a family is fitted in: (v − shift) / scale,
    /// of the logarithms for a family fitted on them (a lower bound ≤ 0
    /// then open).
    pub fn fitted(&self, logs: bool, shift: f64, scale: f64) -> Window {
        let map = |v: f64| {
            let v = if logs {
                if v > 0.0 {
                    v.ln()
                } else {
                    f64::NEG_INFINITY
                }
            } else {
                v
            };
            (v - shift) / scale
        };
        Window { lo: map(self.lo), hi: map(self.hi) }
    }

    /// The part of the window inside `other`; `None` where they do not
    /// overlap in more than a point.
    pub fn within(&self, other: &Window) -> Option<Window> {
        let w = Window { lo: self.lo.max(other.lo), hi: self.hi.min(other.hi) };
        (w.lo < w.hi).then_some(w)
    }

    /// Whether `x` (in the window's units) lies inside it.
    pub fn holds(&self, x: f64) -> bool {
        x >= self.lo && x <= self.hi
    }

    /// log P, the window's mass under the component (μ, shape) of `family`.
    pub fn ln_mass(&self, family: Family, mu: f64, shape: f64) -> f64 {
        with_family!(family, F => self.ln_mass_of::<F>(mu, shape))
    }

    /// `ln_mass` for the family `F`: F(hi) − F(lo), or S(lo) − S(hi) where
    /// the window lies in the upper half, so that neither cancels.
    pub fn ln_mass_of<F: ComponentFamily>(&self, mu: f64, shape: f64) -> f64 {
        let lo = match self.lo == f64::NEG_INFINITY {
            true => (f64::NEG_INFINITY, 0.0),
            false => F::ln_cdfs(self.lo, mu, shape),
        };
        let hi = match self.hi == f64::INFINITY {
            true => (0.0, f64::NEG_INFINITY),
            false => F::ln_cdfs(self.hi, mu, shape),
        };
        ln_mass_between(lo, hi)
    }

    /// `ln_mass_of` with log P's gradient and Hessian in (μ, log shape)
    /// ((∂μ, ∂s), (∂μμ, ∂μs, ∂ss)) from the family's closed-form cdf
    /// derivatives: P'/P and P''/P are the bounds' terms, each e^(scale −
    /// log P) times its derivatives, and log P's Hessian is P''/P less the
    /// gradient's outer product. `None` for a family without them, or
    /// where a ratio is not finite (a window where P underflows).
    pub fn ln_mass_with_derivatives<F: ComponentFamily>(
        &self,
        mu: f64,
        shape: f64,
    ) -> Option<(f64, [f64; 2], [f64; 3])> {
        // an open bound: F is 0 or 1 there whatever (μ, shape)
        let at = |x: f64, open: (f64, f64)| match x.is_finite() {
            true => F::cdf_derivatives(x, mu, shape),
            false => Some(CdfDerivatives::constant(open)),
        };
        let lo = at(self.lo, (f64::NEG_INFINITY, 0.0))?;
        let hi = at(self.hi, (0.0, f64::NEG_INFINITY))?;
        let ln_p = ln_mass_between(lo.ln_cdfs, hi.ln_cdfs);
        let (mut g, mut h) = ([0.0; 2], [0.0; 3]);
        for (d, sign) in [(hi, 1.0), (lo, -1.0)] {
            if d.scale == f64::NEG_INFINITY {
                continue;
            }
            let w = sign * (d.scale - ln_p).exp();
            for i in 0..2 {
                g[i] += w * d.grad[i];
            }
            for i in 0..3 {
                h[i] += w * d.hess[i];
            }
        }
        let h = [h[0] - g[0] * g[0], h[1] - g[0] * g[1], h[2] - g[1] * g[1]];
        (g.iter().chain(&h).all(|v| v.is_finite()) && ln_p.is_finite()).then_some((ln_p, g, h))
    }

    /// log Q = log Σ_m α_m P_m of the mixture `p`, with its noise
    /// component's π_0 U where `noise` is log U, the share of the noise's
    /// support inside the window (Prepared::noise_ln_mass).
    pub fn ln_mixture_mass(&self, family: Family, p: &Params, noise: Option<f64>) -> f64 {
        self.ln_mixture_mass_known(family, p, None, noise)
    }

    /// `ln_mixture_mass`, each P_m taken from `known` where it holds p's
    /// component m (the same computation, done before: the same bits).
    fn ln_mixture_mass_known(&self, family: Family, p: &Params, known: Option<&Masses>, noise: Option<f64>) -> f64 {
        let mut l = [0.0; MAX_COMPONENTS + 1];
        for m in 0..p.k {
            let ln_p = known.and_then(|k| k.of(p, m)).unwrap_or_else(|| self.ln_mass(family, p.mu[m], p.shape[m]));
            l[m] = p.alpha[m].ln() + ln_p;
        }
        match noise {
            Some(ln_u) => {
                l[p.k] = p.noise.ln() + ln_u;
                log_sum_exp(&l[..=p.k])
            }
            None => log_sum_exp(&l[..p.k]),
        }
    }

    /// log Q from the components' log P (`ln_p`) and the noise's log U.
    fn ln_mixture_mass_with(&self, p: &Params, ln_p: &[f64], noise: Option<f64>) -> f64 {
        let mut l: Vec<f64> = (0..p.k).map(|m| p.alpha[m].ln() + ln_p[m]).collect();
        if let Some(ln_u) = noise {
            l.push(p.noise.ln() + ln_u);
        }
        log_sum_exp(&l)
    }

    /// What truncation adds to the log-likelihood of `p` on `total`
    /// observations (Σ w with weights): −N log Q, with the masses `known`
    /// already (the M-step's that made `p`: em.rs) and the noise's log U.
    pub fn term(&self, family: Family, p: &Params, total: f64, known: Option<&Masses>, noise: Option<f64>) -> f64 {
        -total * self.ln_mixture_mass_known(family, p, known, noise)
    }

    /// The gradient and Hessian of log Q in the free parameters of the
    /// layout `at` (information.rs's θ: K − 1 weights, the μ, the shapes;
    /// no noise component, no ν), the Hessian full and column-major, and
    /// the complete-data information's diagonal of an observation known to
    /// lie in the window. With ρ_m = P_m/Q, r_m = α_m ρ_m (the component's
    /// share of the window) and g_m, H_m log P_m's gradient and Hessian in
    /// (μ_m, shape_m): ∂/∂α_j = ρ_j − ρ_K, ∂/∂(μ_m, s_m) = r_m g_m;
    /// ∇²Q/Q has α_j–(μ_m, s_m) entries (δ_jm − δ_Km) ρ_m g_m, (μ_m, s_m)
    /// blocks r_m (H_m + g_m g_mᵀ) and no α–α entries; ∇² log Q is that
    /// less the gradient's outer product. The complete-data diagonal is
    /// Σ_m r_m times the square of log(α_m P_m)'s gradient
    /// ((δ_jm − δ_Km)/α_m in α_j).
    pub(crate) fn ln_q_derivatives(&self, family: Family, p: &Params, at: Layout, noise: Option<f64>) -> QDerivatives {
        let (k, np) = (p.k, at.len());
        let masses: Vec<_> = (0..k).map(|m| self.ln_mass_derivatives(family, p.mu[m], p.shape[m])).collect();
        let ln_q = self.ln_mixture_mass_with(p, &masses.iter().map(|m| m.0).collect::<Vec<f64>>(), noise);
        let rho: Vec<f64> = masses.iter().map(|(l, _, _)| (l - ln_q).exp()).collect();
        // with a noise component (the weight the others determine), its
        // share of the window ρ_0 = U/Q
        let rho_noise = noise.map(|ln_u| (ln_u - ln_q).exp());
        let mut grad = vec![0.0; np];
        let mut hess = vec![0.0; np * np];
        let mut complete = vec![0.0; np];
        let mut add = |i: usize, j: usize, v: f64| {
            hess[i + j * np] += v;
            if i != j {
                hess[j + i * np] += v;
            }
        };
        for m in 0..k {
            let (_, g, h) = masses[m];
            let r = p.alpha[m] * rho[m];
            let own = [at.mu(m), at.shape(m)];
            grad[own[0]] = r * g[0];
            grad[own[1]] = r * g[1];
            add(own[0], own[0], r * (h[0] + g[0] * g[0]));
            add(own[0], own[1], r * (h[1] + g[0] * g[1]));
            add(own[1], own[1], r * (h[2] + g[1] * g[1]));
            complete[own[0]] += r * g[0] * g[0];
            complete[own[1]] += r * g[1] * g[1];
            for j in 0..at.weights() {
                let sign = weight_sign(m, j, k, rho_noise.is_some());
                for (c, gc) in own.iter().zip(g) {
                    add(at.alpha(j), *c, sign * rho[m] * gc);
                }
                complete[at.alpha(j)] += r * (sign / p.alpha[m]).powi(2);
            }
        }
        for j in 0..at.weights() {
            grad[at.alpha(j)] = rho[j] - rho_noise.unwrap_or(rho[k - 1]);
        }
        // the noise's complete-data term: its share π_0 ρ_0 times the
        // square of ∂ log π_0/∂α_j = −1/π_0
        if let Some(rho0) = rho_noise {
            for j in 0..at.weights() {
                complete[at.alpha(j)] += rho0 / p.noise;
            }
        }
        for i in 0..np {
            for j in 0..np {
                hess[i + j * np] -= grad[i] * grad[j];
            }
        }
        QDerivatives { grad, hess, complete }
    }

    /// log P with its gradient and Hessian in (μ, shape), (∂μ, ∂s) and
    /// (∂μμ, ∂μs, ∂ss), for the information: `ln_mass_with_derivatives`' closed
    /// forms in (μ, log shape) taken to the shape (∂s = ∂ls/s, ∂ss =
    /// (∂ls ls − ∂ls)/s²), or where the family has none, central
    /// differences (steps of TRUNCATED_DIFFERENCE of the sd and of the
    /// shape).
    pub fn ln_mass_derivatives(&self, family: Family, mu: f64, shape: f64) -> (f64, [f64; 2], [f64; 3]) {
        if let Some((ln_p, g, h)) = with_family!(family, F => self.ln_mass_with_derivatives::<F>(mu, shape)) {
            return (ln_p, [g[0], g[1] / shape], [h[0], h[1] / shape, (h[2] - g[1]) / (shape * shape)]);
        }
        let h = [TRUNCATED_DIFFERENCE * with_family!(family, F => F::sd(mu, shape)), TRUNCATED_DIFFERENCE * shape];
        let at = |d0: f64, d1: f64| self.ln_mass(family, mu + d0 * h[0], shape + d1 * h[1]);
        let ln_p = at(0.0, 0.0);
        let (g, h) = differences(at, ln_p, h, false);
        (ln_p, g, h)
    }
}

impl Window {
    /// log P at x = (μ, log shape) with its gradient and Hessian there:
    /// `ln_mass_with_derivatives`' closed forms, or where the family has
    /// none central differences (steps of TRUNCATED_DIFFERENCE of the sd in
    /// μ and in log shape). `None` where log P is not finite.
    pub(crate) fn ln_mass_slope<F: ComponentFamily>(&self, x: [f64; 2]) -> Option<(f64, [f64; 2], [f64; 3])> {
        let shape = x[1].exp();
        if let Some(terms) = self.ln_mass_with_derivatives::<F>(x[0], shape) {
            return terms.0.is_finite().then_some(terms);
        }
        let ln_p = self.ln_mass_of::<F>(x[0], shape);
        if !ln_p.is_finite() {
            return None;
        }
        let h = [TRUNCATED_DIFFERENCE * F::sd(x[0], shape), TRUNCATED_DIFFERENCE];
        let at = |d0: f64, d1: f64| self.ln_mass_of::<F>(x[0] + d0 * h[0], (x[1] + d1 * h[1]).exp());
        let (g, hess) = differences(at, ln_p, h, false);
        Some((ln_p, g, hess))
    }
}

/// `Window::ln_q_derivatives`: of log Q, the gradient and the Hessian
/// (column-major) in the free parameters, and of one observation in the
/// window, the complete-data information's diagonal.
pub(crate) struct QDerivatives {
    pub grad: Vec<f64>,
    pub hess: Vec<f64>,
    pub complete: Vec<f64>,
}

/// log(F(hi) − F(lo)) from each bound's (log F, log(1 − F)): as
/// F(hi) − F(lo), or (1 − F(lo)) − (1 − F(hi)) where the window lies in the
/// upper half, so that neither cancels.
fn ln_mass_between(lo: (f64, f64), hi: (f64, f64)) -> f64 {
    let ((f_lo, s_lo), (f_hi, s_hi)) = (lo, hi);
    if f_lo < -std::f64::consts::LN_2 {
        f_hi + ln_1m_exp((f_lo - f_hi).min(0.0))
    } else {
        s_lo + ln_1m_exp((s_hi - s_lo).min(0.0))
    }
}

/// Central differences of `f` at the point it takes as offsets (d0, d1) in
/// steps of `h` (`here` = f(0, 0)): its gradient and Hessian (∂00, ∂01,
/// ∂11), the cross term from four corners, or from one where it only
/// steers a Newton step (`one_corner`).
fn differences(f: impl Fn(f64, f64) -> f64, here: f64, h: [f64; 2], one_corner: bool) -> ([f64; 2], [f64; 3]) {
    let (p0, m0, p1, m1) = (f(1.0, 0.0), f(-1.0, 0.0), f(0.0, 1.0), f(0.0, -1.0));
    let g = [(p0 - m0) / (2.0 * h[0]), (p1 - m1) / (2.0 * h[1])];
    let h00 = (p0 - 2.0 * here + m0) / (h[0] * h[0]);
    let h11 = (p1 - 2.0 * here + m1) / (h[1] * h[1]);
    let h01 = if one_corner {
        (f(1.0, 1.0) - p0 - p1 + here) / (h[0] * h[1])
    } else {
        (f(1.0, 1.0) - f(1.0, -1.0) - f(-1.0, 1.0) + f(-1.0, -1.0)) / (4.0 * h[0] * h[1])
    };
    (g, [h00, h01, h11])
}

/// ∂α_m/∂α_j of the weights' layout (α_K = 1 − Σ_j α_j): 1 for m = j, −1
/// for m = K, else 0; with a noise component every α is free (π_0 the
/// determined one): 1 for m = j, else 0.
fn weight_sign(m: usize, j: usize, k: usize, noise: bool) -> f64 {
    if m == j {
        1.0
    } else if m == k - 1 && !noise {
        -1.0
    } else {
        0.0
    }
}

/// Observations known only to lie in a window (censored, or binned):
/// `count` of them in `window`, in the fitted units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Censored {
    pub window: Window,
    pub count: f64,
}

/// The censored observations' E-step: their log-likelihood Σ_j count·log Q_j
/// and each group's expected counts by component, count·τ_jm (`w`), with
/// their sums over the groups (`total`).
#[derive(Clone, Debug, PartialEq)]
pub struct CensoredStats {
    pub ll: f64,
    pub w: Vec<[f64; MAX_COMPONENTS]>,
    pub total: [f64; MAX_COMPONENTS],
    /// The noise component's expected count over the groups (0 without).
    pub total_noise: f64,
}

/// The E-step of the censored groups `groups` under the mixture `p`, with
/// its noise component where `noise` gives each group's log U (the share of
/// the noise's support inside its window).
pub fn censored_e_step(family: Family, groups: &[Censored], p: &Params, noise: Option<&[f64]>) -> CensoredStats {
    let mut out =
        CensoredStats { ll: 0.0, w: Vec::with_capacity(groups.len()), total: [0.0; MAX_COMPONENTS], total_noise: 0.0 };
    let mut l = [0.0; MAX_COMPONENTS + 1];
    let k = p.k + noise.is_some() as usize;
    for (j, g) in groups.iter().enumerate() {
        for m in 0..p.k {
            l[m] = p.alpha[m].ln() + g.window.ln_mass(family, p.mu[m], p.shape[m]);
        }
        if let Some(u) = noise {
            l[p.k] = p.noise.ln() + u.get(j).copied().unwrap_or(f64::NEG_INFINITY);
        }
        let lq = log_sum_exp(&l[..k]);
        out.ll += g.count * lq;
        let mut w = [0.0; MAX_COMPONENTS];
        for m in 0..p.k {
            w[m] = g.count * (l[m] - lq).exp();
            out.total[m] += w[m];
        }
        if noise.is_some() {
            out.total_noise += g.count * (l[p.k] - lq).exp();
        }
        out.w.push(w);
    }
    out
}

/// The truncation window's log-masses log P_m of a mixture's components
/// (μ_m, shape_m), as the truncated M-step computed them for its weights:
/// the next pass's log-likelihood needs the same ones (−N log Q), and
/// takes them from here (em.rs) instead of computing them again.
/// The next M-step starts each component's Newton step where this one
/// ended, so it also keeps log P's gradient and Hessian there where the
/// line search computed them (`WindowTerms`).
#[derive(Clone, Copy, Debug)]
pub struct Masses {
    mu: [f64; MAX_COMPONENTS],
    shape: [f64; MAX_COMPONENTS],
    ln_p: [f64; MAX_COMPONENTS],
    derivatives: [Option<Derivatives>; MAX_COMPONENTS],
}

/// log P's gradient and Hessian in (μ, log shape): ((∂μ, ∂s), (∂μμ, ∂μs,
/// ∂ss)).
pub(crate) type Derivatives = ([f64; 2], [f64; 3]);

/// A window's log P at a component, with its `Derivatives` where the
/// family has them in closed form.
pub(crate) type WindowTerms = (f64, Option<Derivatives>);

impl Masses {
    /// No component's yet.
    pub(crate) fn empty() -> Masses {
        Masses {
            mu: [0.0; MAX_COMPONENTS],
            shape: [0.0; MAX_COMPONENTS],
            ln_p: [0.0; MAX_COMPONENTS],
            derivatives: [None; MAX_COMPONENTS],
        }
    }

    /// Component m's log P (and its derivatives) at (μ, shape).
    pub(crate) fn set(&mut self, m: usize, mu: f64, shape: f64, ln_p: f64, derivatives: Option<Derivatives>) {
        (self.mu[m], self.shape[m], self.ln_p[m], self.derivatives[m]) = (mu, shape, ln_p, derivatives);
    }

    /// log P of `p`'s component m, if these are its masses (the same μ and
    /// shape, bit for bit).
    fn of(&self, p: &Params, m: usize) -> Option<f64> {
        self.at(m, *p.mu.get(m)?, *p.shape.get(m)?).map(|(ln_p, _)| ln_p)
    }

    /// log P and its derivatives at component m's (μ, shape), if these are
    /// its masses there (bit for bit).
    fn at(&self, m: usize, mu: f64, shape: f64) -> Option<WindowTerms> {
        (mu.to_bits() == self.mu.get(m)?.to_bits() && shape.to_bits() == self.shape.get(m)?.to_bits())
            .then(|| Some((*self.ln_p.get(m)?, *self.derivatives.get(m)?)))
            .flatten()
    }
}

/// What the M-step of a dataset with truncation or censored observations
/// takes beside the E-step's sums over its exact values.
pub(crate) struct Renormalised<'a> {
    pub truncation: Option<&'a Window>,
    pub censored: &'a [Censored],
    /// `censored_e_step` of `censored` (`None`: there are none).
    pub stats: Option<&'a CensoredStats>,
    /// With a noise component, its log U in the truncation window (0
    /// without one: the whole support).
    pub noise: Option<f64>,
}

impl Renormalised<'_> {
    /// The M-step: `free`, the plain M-step's parameters from the exact
    /// values' statistics `st` (closed-form μ and shape), moved toward the
    /// maximum of each component's renormalised expected log-likelihood by
    /// `step` from where it was, `from` (the parameters whose E-step gave
    /// `st`), or from the closed form where that is no component; the
    /// weights of the observed population π_m = (S0_m + W_m)/N (W_m: the
    /// censored groups' expected count), mapped back to the untruncated
    /// mixture's (α_m ∝ π_m / P_m).
    /// With the parameters, their truncation masses (`None` without a
    /// truncation window).
    /// `known`: the truncation masses of the M-step that made `from` (its
    /// window terms reused where a step starts at the same point).
    pub fn m_step(
        &self,
        family: Family,
        st: &Stats,
        free: &Params,
        from: &Params,
        spread: f64,
        known: Option<&Masses>,
    ) -> Result<(Params, Option<Masses>), Degenerate> {
        with_family!(family, F => self.m_step_of::<F>(family, st, free, from, spread, known))
    }

    fn m_step_of<F: ComponentFamily>(
        &self,
        family: Family,
        st: &Stats,
        free: &Params,
        from: &Params,
        spread: f64,
        known: Option<&Masses>,
    ) -> Result<(Params, Option<Masses>), Degenerate> {
        let mut p = *free;
        let mut l = [0.0; MAX_COMPONENTS];
        let mut masses = Masses::empty();
        for m in 0..p.k {
            let censored = self.stats.map_or(0.0, |c| c.total[m]);
            let s = [st.s0[m], st.s1[m], st.s2[m], st.s0[m] + censored];
            let starts = [(from.mu[m], from.shape[m]), (free.mu[m], free.shape[m])];
            let (mu, shape, at_end) = self.step::<F>(m, s, starts, known);
            check_component(family, mu, shape, spread)?;
            (p.mu[m], p.shape[m]) = (mu, shape);
            // the line search's last point is the step's end: its mass
            // (and its derivatives) computed there already
            let (mass, derivatives) = match self.truncation {
                None => (0.0, None),
                Some(w) => at_end.unwrap_or_else(|| (w.ln_mass_of::<F>(mu, shape), None)),
            };
            masses.set(m, mu, shape, mass, derivatives);
            l[m] = s[3].ln() - mass;
        }
        self.map_weights(&mut p, st, &l);
        Ok((p, self.truncation.map(|_| masses)))
    }

    /// The weights of the untruncated mixture from `l`, each component's
    /// log(S0_m + W_m) − log P_m: α_m ∝ π_m / P_m, and with a noise
    /// component π_0 / U, its count the exact values' and the censored
    /// groups' together.
    pub(crate) fn map_weights(&self, p: &mut Params, st: &Stats, l: &[f64]) {
        let k = p.k;
        let mut all = [0.0; MAX_COMPONENTS + 1];
        all[..k].copy_from_slice(&l[..k]);
        let n = k + self.noise.is_some() as usize;
        if let Some(ln_u) = self.noise {
            let count = st.s0_noise + self.stats.map_or(0.0, |c| c.total_noise);
            all[k] = count.ln() - ln_u;
        }
        let total = log_sum_exp(&all[..n]);
        for m in 0..k {
            p.alpha[m] = (all[m] - total).exp();
        }
        if self.noise.is_some() {
            p.noise = (all[k] - total).exp();
        }
    }

    /// Component m's expected complete-data log-likelihood, renormalised,
    /// at (μ, e^ls): S0·c − k·Σr q (the exact values, `s` = S0, S1, S2),
    /// plus its `windows` terms' coefficients times their log P; −∞ where
    /// that is no component.
    /// With the value, the truncation window's log P there (`None`
    /// without one, or where the value is −∞ before it), and its
    /// derivatives where the family has them in closed form (the same log
    /// P: `ln_mass_with_derivatives`'s is `ln_mass_of`'s, bit for bit), for
    /// the next M-step's first point.
    pub(crate) fn objective<F: ComponentFamily>(
        &self,
        m: usize,
        s: [f64; 4],
        mu: f64,
        ls: f64,
    ) -> (f64, Option<WindowTerms>) {
        let mut v = Self::observed::<F>(s, mu, ls);
        if v == f64::NEG_INFINITY {
            return (v, None);
        }
        let shape = ls.exp();
        let mut truncation = None;
        for (c, w, is_truncation) in self.windows(m, s[3]) {
            let ln_p = if is_truncation {
                let terms = match w.ln_mass_with_derivatives::<F>(mu, shape) {
                    Some((ln_p, g, h)) => (ln_p, Some((g, h))),
                    None => (w.ln_mass_of::<F>(mu, shape), None),
                };
                truncation = Some(terms);
                terms.0
            } else {
                w.ln_mass_of::<F>(mu, shape)
            };
            v += c * ln_p;
        }
        if v.is_nan() {
            (f64::NEG_INFINITY, truncation)
        } else {
            (v, truncation)
        }
    }

    /// The windows in component m's objective with their coefficients: each
    /// censored group's expected count w_jm (Σ_j w_jm log P_jm), then the
    /// truncation window's −(S0 + W_m) (`s3`), marked `true`.
    fn windows(&self, m: usize, s3: f64) -> impl Iterator<Item = (f64, &Window, bool)> {
        let groups = self.stats.map(|st| self.censored.iter().zip(&st.w)).into_iter().flatten();
        groups.map(move |(g, w)| (w[m], &g.window, false)).chain(self.truncation.map(|w| (-s3, w, true)))
    }

    /// `objective`'s observed part, S0·c − k·Σr q at (μ, e^ls) (no cdf
    /// in it); −∞ where that is no component.
    fn observed<F: ComponentFamily>(s: [f64; 4], mu: f64, ls: f64) -> f64 {
        let shape = ls.exp();
        if !(F::mean_ok(mu) && mu.is_finite() && shape > 0.0 && shape.is_finite()) {
            return f64::NEG_INFINITY;
        }
        let (c, k) = F::constants(mu, shape);
        s[0] * c - k * F::q_sum(s[0], s[1], s[2], mu)
    }

    /// The gradient and Hessian in (μ, log shape) of `objective`'s window
    /// terms from the family's closed-form cdf derivatives; `None` where it
    /// has none.
    fn window_derivatives<F: ComponentFamily>(
        &self,
        m: usize,
        s: [f64; 4],
        mu: f64,
        ls: f64,
    ) -> Option<([f64; 2], [f64; 3])> {
        let shape = ls.exp();
        let (mut g, mut h) = ([0.0; 2], [0.0; 3]);
        for (c, w, _) in self.windows(m, s[3]) {
            let (_, wg, wh) = w.ln_mass_with_derivatives::<F>(mu, shape)?;
            for i in 0..2 {
                g[i] += c * wg[i];
            }
            for i in 0..3 {
                h[i] += c * wh[i];
            }
        }
        Some((g, h))
    }

    /// `objective` at x = (μ, log shape) and `window_derivatives` there in
    /// one pass over the windows, where the family has closed forms (their
    /// log P the same bits as `ln_mass_of`'s, so the same value); else
    /// `objective` alone, without derivatives.
    #[allow(clippy::type_complexity)]
    pub(crate) fn evaluate<F: ComponentFamily>(
        &self,
        m: usize,
        s: [f64; 4],
        x: [f64; 2],
        known: Option<&Masses>,
    ) -> (f64, Option<WindowTerms>, Option<([f64; 2], [f64; 3])>) {
        let observed = Self::observed::<F>(s, x[0], x[1]);
        if observed != f64::NEG_INFINITY {
            let shape = x[1].exp();
            let (mut v, mut truncation, mut g, mut h) = (observed, None, [0.0; 2], [0.0; 3]);
            let mut closed = true;
            for (c, w, is_truncation) in self.windows(m, s[3]) {
                // the truncation window's terms where the last M-step
                // ended here (the same computation, done there)
                let cached = match is_truncation {
                    true => known.and_then(|k| k.at(m, x[0], shape)).and_then(|(ln_p, d)| d.map(|(g, h)| (ln_p, g, h))),
                    false => None,
                };
                let Some((ln_p, wg, wh)) = cached.or_else(|| w.ln_mass_with_derivatives::<F>(x[0], shape)) else {
                    closed = false;
                    break;
                };
                if is_truncation {
                    truncation = Some((ln_p, Some((wg, wh))));
                }
                v += c * ln_p;
                for i in 0..2 {
                    g[i] += c * wg[i];
                }
                for i in 0..3 {
                    h[i] += c * wh[i];
                }
            }
            if closed {
                return (if v.is_nan() { f64::NEG_INFINITY } else { v }, truncation, Some((g, h)));
            }
        }
        let (v, truncation) = self.objective::<F>(m, s, x[0], x[1]);
        (v, truncation, None)
    }

    /// The gradient and Hessian of component m's `objective` in (μ, log
    /// shape) at `x`, where its value is `here`: the window terms' from
    /// `window` (computed with the value) or `window_derivatives`, the
    /// observed part (no cdf) by central differences, a third of the cdfs
    /// of differencing it all; where the family has no closed forms, all
    /// by differences. Steps of TRUNCATED_DIFFERENCE of the component's sd
    /// in μ and of 1 in log shape; one corner for the cross term, which
    /// only steers the step whose length the central gradient decides.
    pub(crate) fn slope<F: ComponentFamily>(
        &self,
        m: usize,
        s: [f64; 4],
        x: [f64; 2],
        here: f64,
        window: Option<Derivatives>,
    ) -> Derivatives {
        let sd = F::sd(x[0], x[1].exp());
        let h = [TRUNCATED_DIFFERENCE * sd, TRUNCATED_DIFFERENCE];
        match window.or_else(|| self.window_derivatives::<F>(m, s, x[0], x[1])) {
            Some((wg, wh)) => {
                let at = |d0: f64, d1: f64| Self::observed::<F>(s, x[0] + d0 * h[0], x[1] + d1 * h[1]);
                let (og, oh) = differences(at, at(0.0, 0.0), h, true);
                ([og[0] + wg[0], og[1] + wg[1]], [oh[0] + wh[0], oh[1] + wh[1], oh[2] + wh[2]])
            }
            None => {
                let at = |d0: f64, d1: f64| self.objective::<F>(m, s, x[0] + d0 * h[0], x[1] + d1 * h[1]).0;
                differences(at, here, h, true)
            }
        }
    }

    /// (μ, shape) moved from the first of `starts` where `objective` is
    /// finite (where the component was; else the closed-form M-step's
    /// point) toward its maximum: Newton's method in (μ, log shape), the
    /// window terms' derivatives in closed form where the family has them
    /// (`window_derivatives`) and the rest by central differences (steps
    /// of TRUNCATED_DIFFERENCE of the component's sd in μ, of 1 in log
    /// shape), each step halved until it gains; where the Hessian is not
    /// negative definite, a gradient step scaled by its diagonal. Ends
    /// after the first full Newton step that gains (every M-step a gain: a
    /// generalised EM whose fixed points are EM's), or a Newton step
    /// shorter than TRUNCATED_SETTLED (in sds and in log shape), taken
    /// without a look; also when no step gains, or after TRUNCATED_STEPS.
    /// With the end point, the truncation window's log P (and its
    /// derivatives) there where the step computed it (the end of a line
    /// search; `None` otherwise). `known`: the last M-step's masses.
    fn step<F: ComponentFamily>(
        &self,
        m: usize,
        s: [f64; 4],
        starts: [(f64, f64); 2],
        known: Option<&Masses>,
    ) -> (f64, f64, Option<WindowTerms>) {
        let f = |x: [f64; 2]| self.objective::<F>(m, s, x[0], x[1]);
        let mut x = [starts[0].0, starts[0].1.ln()];
        let (mut here, mut mass, mut derivatives) = self.evaluate::<F>(m, s, x, known);
        if !here.is_finite() {
            let (mu, shape) = starts[1];
            x = [mu, shape.ln()];
            (here, mass, derivatives) = self.evaluate::<F>(m, s, x, None);
            if !here.is_finite() {
                return (mu, shape, None);
            }
        }
        for _ in 0..TRUNCATED_STEPS {
            let sd = F::sd(x[0], x[1].exp());
            // (the first point's window derivatives came with its value)
            let (g, [h00, h01, h11]) = self.slope::<F>(m, s, x, here, derivatives.take());
            let det = h00 * h11 - h01 * h01;
            let newton = h00 < 0.0 && det > 0.0;
            let mut d = if newton {
                [-(h11 * g[0] - h01 * g[1]) / det, -(h00 * g[1] - h01 * g[0]) / det]
            } else {
                [g[0] / h00.abs().max(f64::MIN_POSITIVE), g[1] / h11.abs().max(f64::MIN_POSITIVE)]
            };
            if !(d[0].is_finite() && d[1].is_finite()) {
                break;
            }
            // a step of at most one sd and a factor e in the shape
            let reach = (d[0].abs() / sd).max(d[1].abs());
            if newton && reach < TRUNCATED_SETTLED {
                x = [x[0] + d[0], x[1] + d[1]];
                mass = None;
                break;
            }
            if reach > 1.0 {
                d = [d[0] / reach, d[1] / reach];
            }
            let mut t = 1.0;
            let mut moved = false;
            while t > 1e-10 {
                let y = [x[0] + t * d[0], x[1] + t * d[1]];
                let (v, at_y) = f(y);
                if v > here {
                    (x, here, mass, moved) = (y, v, at_y, true);
                    break;
                }
                t *= 0.5;
            }
            // a full Newton step taken: enough for this pass (Lange's EM
            // gradient algorithm, one Newton step per M-step, converges as
            // fast as EM near the maximum, at a seventh of the M-step's cost
            // of solving it out; results-truncation.md)
            if !moved || (newton && t == 1.0) {
                break;
            }
        }
        (x[0], x[1].exp(), mass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family;

    /// ∫ p over [lo, hi] by Simpson's rule on a fine grid.
    fn integral(family: Family, mu: f64, shape: f64, lo: f64, hi: f64) -> f64 {
        let steps = 200_000;
        let h = (hi - lo) / steps as f64;
        let p = |x: f64| family::log_density(family, x, mu, shape).exp();
        (0..=steps)
            .map(|i| {
                let w = if i == 0 || i == steps {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                w * p(lo + i as f64 * h)
            })
            .sum::<f64>()
            * h
            / 3.0
    }

    #[test]
    fn window_masses_are_the_densities_integrals() {
        for (family, mu, shape, lo, hi) in [
            (Family::Normal, 0.3, 1.2, -0.5, 2.0),
            (Family::Normal, 0.0, 1.0, 3.0, 9.0),
            (Family::InvGauss, 1.0, 3.0, 0.4, 2.5),
            (Family::InvGauss, 1.0, 300.0, 1.1, 1.6),
            (Family::InvGauss, 2.0, 0.5, 1e-6, 0.3),
            (Family::Gamma, 1.0, 2.5, 0.2, 1.7),
            (Family::Gamma, 3.0, 0.7, 0.05, 0.5),
            (Family::Gamma, 1.0, 40.0, 1.2, 3.0),
        ] {
            let w = Window { lo, hi };
            let exact = w.ln_mass(family, mu, shape).exp();
            let numeric = integral(family, mu, shape, lo, hi);
            assert!(
                (exact - numeric).abs() < 1e-8 * numeric.max(1e-3),
                "{family:?} {mu} {shape} [{lo}, {hi}]: {exact} vs {numeric}"
            );
        }
        // where the density is unbounded at 0 (mpmath's incomplete gamma)
        let near0 = Window { lo: 1e-8, hi: 0.5 }.ln_mass(Family::Gamma, 3.0, 0.7).exp();
        assert!((near0 - 0.233_276_297_456_990_32).abs() < 1e-13, "{near0}");
        // open sides, and a tail far below the smallest double
        let open = Window { lo: f64::NEG_INFINITY, hi: 0.0 };
        assert!((open.ln_mass(Family::Normal, 0.0, 1.0) - 0.5f64.ln()).abs() < 1e-15);
        let far = Window { lo: 40.0, hi: f64::INFINITY };
        assert!((far.ln_mass(Family::Normal, 0.0, 1.0) + 804.608_442_013_754).abs() < 1e-9);
        assert_eq!(Window { lo: 0.0, hi: f64::INFINITY }.ln_mass(Family::InvGauss, 1.0, 2.0), 0.0);
    }

    #[test]
    fn the_truncated_m_step_maximises_the_renormalised_likelihood() {
        // one component's weighted data inside the window: M-steps from
        // the closed form repeated (each a Newton step) settle where
        // perturbing μ or shape either way lowers Σ r log(p(x)/P)
        let w = Window { lo: 0.5, hi: 2.2 };
        let xs: Vec<f64> = (0..80).map(|i| 0.55 + 1.6 * ((i as f64 * 0.618_034).fract())).collect();
        let r: Vec<f64> = xs.iter().map(|x| 0.2 + 0.8 / (1.0 + (2.0 * (x - 1.2)).exp())).collect();
        for fam in Family::FITTED {
            let mut st = Stats::zero();
            for (x, r) in xs.iter().zip(&r) {
                st.s0[0] += r;
                st.s1[0] += r * x;
                st.s2[0] += r * family::aux(fam, *x);
            }
            let free = crate::mstep::m_step(fam, 1, &st, st.s0[0], 0.1, false, None).unwrap();
            let renormalised = Renormalised { truncation: Some(&w), censored: &[], stats: None, noise: None };
            let mut p = renormalised.m_step(fam, &st, &free, &free, 0.1, None).unwrap().0;
            for _ in 0..20 {
                p = renormalised.m_step(fam, &st, &free, &p, 0.1, None).unwrap().0;
            }
            assert!((p.alpha[0] - 1.0).abs() < 1e-15);
            let q = |mu: f64, shape: f64| {
                xs.iter().zip(&r).map(|(x, r)| r * family::log_density(fam, *x, mu, shape)).sum::<f64>()
                    - st.s0[0] * w.ln_mass(fam, mu, shape)
            };
            let best = q(p.mu[0], p.shape[0]);
            assert!(best > q(free.mu[0], free.shape[0]), "{fam:?}");
            for f in [0.9999, 1.0001] {
                assert!(q(p.mu[0] * f, p.shape[0]) < best, "{fam:?} mu");
                assert!(q(p.mu[0], p.shape[0] * f) < best, "{fam:?} shape");
            }
        }
    }

    #[test]
    fn the_weights_map_back_to_the_untruncated_mixture() {
        // two Normal components, the window cutting the second's upper half
        let w = Window { lo: -10.0, hi: 3.0 };
        let mut st = Stats::zero();
        let (n0, n1) = (60.0, 40.0);
        (st.s0[0], st.s1[0], st.s2[0]) = (n0, 0.0, n0 * 1.0);
        (st.s0[1], st.s1[1], st.s2[1]) = (n1, n1 * 2.2, n1 * (2.2 * 2.2 + 0.4));
        let free = crate::mstep::m_step(Family::Normal, 2, &st, 100.0, 1.0, false, None).unwrap();
        let r = Renormalised { truncation: Some(&w), censored: &[], stats: None, noise: None };
        let p = r.m_step(Family::Normal, &st, &free, &free, 1.0, None).unwrap().0;
        let pm: Vec<f64> = (0..2).map(|m| w.ln_mass(Family::Normal, p.mu[m], p.shape[m]).exp()).collect();
        let q = p.alpha[0] * pm[0] + p.alpha[1] * pm[1];
        // π_m = α_m P_m / Q is the observed share S0_m/N
        assert!((p.alpha[0] * pm[0] / q - 0.6).abs() < 1e-12 && (p.alpha[1] * pm[1] / q - 0.4).abs() < 1e-12);
        assert!((p.alpha[0] + p.alpha[1] - 1.0).abs() < 1e-15 && p.alpha[1] > 0.4);
    }

    #[test]
    fn a_noise_component_takes_its_share_of_each_window() {
        // π_0 U_j beside the components' α_m P_jm: the counts, the
        // log-likelihood, and log Q's gradient in the noise layout (every α
        // free, π_0 = 1 − Σα) against central differences
        let mut p = Params::zeroed(2);
        p.alpha[..2].copy_from_slice(&[0.3, 0.6]);
        p.noise = 0.1;
        p.mu[..2].copy_from_slice(&[1.0, 2.5]);
        p.shape[..2].copy_from_slice(&[4.0, 20.0]);
        let groups = [
            Censored { window: Window { lo: 3.0, hi: f64::INFINITY }, count: 5.0 },
            Censored { window: Window { lo: 0.0, hi: 0.4 }, count: 2.0 },
        ];
        let u = [(0.25f64).ln(), (0.1f64).ln()];
        let st = censored_e_step(Family::InvGauss, &groups, &p, Some(&u));
        let mut ll = 0.0;
        let mut noise = 0.0;
        for (j, g) in groups.iter().enumerate() {
            let q: Vec<f64> =
                (0..2).map(|m| p.alpha[m] * g.window.ln_mass(Family::InvGauss, p.mu[m], p.shape[m]).exp()).collect();
            let q0 = p.noise * u[j].exp();
            ll += g.count * (q[0] + q[1] + q0).ln();
            noise += g.count * q0 / (q[0] + q[1] + q0);
        }
        assert!((st.ll - ll).abs() < 1e-12 * ll.abs());
        assert!((st.total_noise - noise).abs() < 1e-12);
        assert!((st.total[0] + st.total[1] + st.total_noise - 7.0).abs() < 1e-12);
        let at = Layout { k: 2, noise: true, df: false };
        let w = Window { lo: 0.3, hi: 2.8 };
        let d = w.ln_q_derivatives(Family::InvGauss, &p, at, Some(u[0]));
        let lq = |q: &Params| w.ln_mixture_mass(Family::InvGauss, q, Some(u[0]));
        let set = |q: &mut Params, i: usize, v: f64| match i {
            0 | 1 => {
                q.alpha[i] += v;
                q.noise -= v;
            }
            2 | 3 => q.mu[i - 2] += v,
            _ => q.shape[i - 4] += v,
        };
        for i in 0..6 {
            let h = 1e-6;
            let (mut a, mut b) = (p, p);
            set(&mut a, i, h);
            set(&mut b, i, -h);
            let numeric = (lq(&a) - lq(&b)) / (2.0 * h);
            assert!((d.grad[i] - numeric).abs() < 1e-6 * numeric.abs().max(1.0), "{i}: {} vs {numeric}", d.grad[i]);
        }
    }

    #[test]
    fn censored_groups_add_their_window_masses_and_share_their_counts() {
        let mut p = Params::zeroed(2);
        p.alpha[..2].copy_from_slice(&[0.3, 0.7]);
        p.mu[..2].copy_from_slice(&[1.0, 2.5]);
        p.shape[..2].copy_from_slice(&[4.0, 20.0]);
        let groups = [
            Censored { window: Window { lo: 3.0, hi: f64::INFINITY }, count: 5.0 },
            Censored { window: Window { lo: 0.0, hi: 0.4 }, count: 2.0 },
        ];
        let st = censored_e_step(Family::InvGauss, &groups, &p, None);
        let mut ll = 0.0;
        for (j, g) in groups.iter().enumerate() {
            // Q_j by Simpson's rule over the window (the upper tail to 40,
            // the lower from 1e-9: the density's log is NaN at 0)
            let (lo, hi) = (g.window.lo.max(1e-9), g.window.hi.min(40.0));
            let q: Vec<f64> =
                (0..2).map(|m| p.alpha[m] * integral(Family::InvGauss, p.mu[m], p.shape[m], lo, hi)).collect();
            ll += g.count * (q[0] + q[1]).ln();
            for m in 0..2 {
                assert!((st.w[j][m] - g.count * q[m] / (q[0] + q[1])).abs() < 1e-7, "group {j}, component {m}");
            }
        }
        assert!((st.ll - ll).abs() < 1e-7 * ll.abs(), "{} vs {ll}", st.ll);
        assert!((st.total[0] + st.total[1] - 7.0).abs() < 1e-12);
    }

    #[test]
    fn mass_derivatives_match_the_closed_form_of_the_normal() {
        // d/dμ log(Φ(b) − Φ(a)) = (φ(a) − φ(b)) / (σ P), a, b standardised
        let w = Window { lo: -0.7, hi: 1.9 };
        let (mu, sigma) = (0.4, 0.8);
        let (a, b) = ((w.lo - mu) / sigma, (w.hi - mu) / sigma);
        let phi = |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let p = w.ln_mass(Family::Normal, mu, sigma).exp();
        let (_, g, _) = w.ln_mass_derivatives(Family::Normal, mu, sigma);
        assert!((g[0] - (phi(a) - phi(b)) / (sigma * p)).abs() < 1e-8);
        assert!((g[1] - (a * phi(a) - b * phi(b)) / (sigma * p)).abs() < 1e-8);
    }

    #[test]
    fn closed_form_mass_derivatives_match_differences_of_the_mass() {
        // log P's gradient and Hessian in (μ, log shape) against fourth-order
        // central differences of ln_mass_of; windows in the middle, one-sided,
        // far in a tail (P ~ 1e-7 and 1e-40), and the IG's from 0
        fn check<F: ComponentFamily>(w: Window, mu: f64, shape: f64) {
            let f = |a: f64, b: f64| w.ln_mass_of::<F>(a, b.exp());
            let (ls, hm, hs) = (shape.ln(), 1e-3 * F::sd(mu, shape), 1e-3);
            let d1 = |g: &dyn Fn(f64) -> f64, h: f64| (8.0 * (g(h) - g(-h)) - (g(2.0 * h) - g(-2.0 * h))) / (12.0 * h);
            let gm = |a: f64, b: f64| d1(&|e| f(a + e, b), hm);
            let gs = |a: f64, b: f64| d1(&|e| f(a, b + e), hs);
            let want_g = [gm(mu, ls), gs(mu, ls)];
            let want_h = [d1(&|e| gm(mu + e, ls), hm), d1(&|e| gm(mu, ls + e), hs), d1(&|e| gs(mu, ls + e), hs)];
            let (ln_p, g, h) = w.ln_mass_with_derivatives::<F>(mu, shape).expect("closed form");
            assert_eq!(ln_p.to_bits(), w.ln_mass_of::<F>(mu, shape).to_bits());
            let scale = [1.0 / F::sd(mu, shape), 1.0];
            for i in 0..2 {
                assert!(
                    (g[i] - want_g[i]).abs() < 1e-7 * (1.0 + want_g[i].abs()),
                    "{w:?} g{i}: {} vs {}",
                    g[i],
                    want_g[i]
                );
            }
            for (i, (a, b)) in [(0, 0), (0, 1), (1, 1)].into_iter().enumerate() {
                let tol = 1e-5 * (1.0 + want_h[i].abs()) / (scale[a] * scale[b]).max(1.0);
                assert!((h[i] - want_h[i]).abs() < tol, "{w:?} h{i}: {} vs {}", h[i], want_h[i]);
            }
        }
        use crate::family::{InvGauss, Normal};
        for w in [
            Window { lo: -0.7, hi: 1.9 },
            Window { lo: f64::NEG_INFINITY, hi: 0.2 },
            Window { lo: 1.1, hi: f64::INFINITY },
            Window { lo: 5.0, hi: 6.0 },
            Window { lo: -15.0, hi: -14.0 },
        ] {
            check::<Normal>(w, 0.4, 0.8);
            check::<Normal>(w, -1.0, 2.5);
        }
        for w in [
            Window { lo: 0.1, hi: 8.0 },
            Window { lo: 0.0, hi: 0.3 },
            Window { lo: 0.0, hi: f64::INFINITY },
            Window { lo: 2.0, hi: f64::INFINITY },
            Window { lo: 6.0, hi: 9.0 },
            Window { lo: 0.3, hi: 3.0 },
        ] {
            check::<InvGauss>(w, 1.0, 30.0);
            check::<InvGauss>(w, 3.0, 0.2);
            check::<InvGauss>(w, 0.5, 4.0);
        }
        // the gamma has none: the step differences log P
        let w = Window { lo: 0.1, hi: 8.0 };
        assert!(w.ln_mass_with_derivatives::<crate::family::gamma::Gamma>(1.0, 2.0).is_none());
    }
}
