//! One start's EM for a multivariate Normal or t mixture on standardised
//! data: the E-step (a triangular solve per observation and component, in
//! blocks of observations so that the loops run over contiguous values),
//! the M-step of each covariance structure, and the stop rule the
//! univariate starts share (em.rs): the log-likelihood rose by less than
//! epsilon.
//!
//! t components are Normal ones whose precision is scaled by a latent
//! weight W ~ Gamma(ν/2, rate ν/2), missing data beside the component
//! labels (student.rs, McLachlan & Peel 2000 §7.5): the E-step gives each
//! observation's expected weight u = (ν+d)/(ν+δ) per component, the sums
//! S1 and S2 weigh r by u, Su = Σ r·u, and the ν step reads
//! B = Σ r·log(1 + δ/ν) and Σ r·u². The M-step is the Normal's with μ = centre + S1/Su
//! and Σ = (S2 − S1 S1ᵀ/Su)/S0, and ν, unless fixed, by `df_step`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::data::MvData;
use super::model::{cholesky, terms, Model, MvParams, Structure, Term};
use crate::em::fall_tolerance;
use crate::limits::{DF_STEP_MAX, MIN_COMPONENT_OBS, MIN_RELATIVE_SD};
use crate::outcome::{Degenerate, Outcome};
use crate::special::digammas;
use crate::student::df_root;

/// Observations the E-step takes at once.
const BLOCK: usize = 64;

/// The E-step's sums, about the means of the parameters they were taken
/// at (`centre`), so that a component's covariance is not the difference
/// of two large numbers: S0 = Σ r, S1 = Σ r (z − centre), S2 = Σ r (z −
/// centre)(z − centre)ᵀ (lower triangle used, column-major); for t, r·u
/// in S1 and S2's r.
#[derive(Clone, Debug)]
pub struct MvStats {
    pub s0: Vec<f64>,
    pub s1: Vec<f64>,
    pub s2: Vec<f64>,
    pub centre: Vec<f64>,
    /// t only (empty for Normal components): Su = Σ r·u, B = Σ r·log(1 +
    /// δ/ν), Σ r·u², and the ν the sums were taken at.
    pub su: Vec<f64>,
    pub s_l1p: Vec<f64>,
    pub s_u2: Vec<f64>,
    pub df: Vec<f64>,
    /// Σ of the noise component's responsibilities (0 without one).
    pub s_noise: f64,
    pub loglik: f64,
    /// Σ log of each observation's largest responsibility (the noise's
    /// included): ICL's classification term. The largest is exp(0) / Σ.
    pub log_map: f64,
}

/// The E-step at `p` (standardised units), with its log-likelihood on the
/// standardised data (each observation's terms weighted by its weight);
/// `None` if some covariance is not positive definite.
pub fn e_step(data: &MvData, p: &MvParams) -> Option<MvStats> {
    let (n, d, k) = (data.n, data.d, p.k);
    let terms = terms(p)?;
    let t = !p.df.is_empty();
    let kt = if t { k } else { 0 };
    let mut st = MvStats {
        s0: vec![0.0; k],
        s1: vec![0.0; k * d],
        s2: vec![0.0; k * d * d],
        centre: p.mu.clone(),
        su: vec![0.0; kt],
        s_l1p: vec![0.0; kt],
        s_u2: vec![0.0; kt],
        df: p.df.clone(),
        s_noise: 0.0,
        loglik: 0.0,
        log_map: 0.0,
    };
    // the noise component's log(weight · density), where it has weight
    let noise = data.log_noise.filter(|_| p.noise > 0.0).map(|l| p.noise.ln() + l);
    // per component: the centred values (d × BLOCK) and the log-densities
    let mut centred = vec![0.0; k * d * BLOCK];
    let mut ll = vec![0.0; k * BLOCK];
    let mut y = vec![0.0; d * BLOCK];
    let mut rc = vec![0.0; BLOCK];
    // t: per component u and log(1 + δ/ν) of the block's observations, and r·u
    let mut u = vec![0.0; kt * BLOCK];
    let mut l1p = vec![0.0; kt * BLOCK];
    let mut ru = vec![0.0; if t { BLOCK } else { 0 }];
    let mut start = 0;
    while start < n {
        let b = BLOCK.min(n - start);
        for (m, t) in terms.iter().enumerate() {
            component_block(data, t, start, b, &mut centred[m * d * BLOCK..(m + 1) * d * BLOCK], &mut y);
            let q = &mut ll[m * BLOCK..m * BLOCK + b];
            q.iter_mut().for_each(|v| *v = 0.0);
            for j in 0..d {
                for (qi, yi) in q.iter_mut().zip(&y[j * BLOCK..j * BLOCK + b]) {
                    *qi += yi * yi;
                }
            }
            match &t.t {
                None => q.iter_mut().for_each(|v| *v = t.log_const - 0.5 * *v),
                Some(tt) => {
                    let u = &mut u[m * BLOCK..m * BLOCK + b];
                    let l1p = &mut l1p[m * BLOCK..m * BLOCK + b];
                    for ((v, u), lp) in q.iter_mut().zip(u).zip(l1p) {
                        let z = *v * tt.inv_df;
                        *lp = z.ln_1p();
                        *u = tt.u0 / (1.0 + z);
                        *v = t.log_const - tt.half * *lp;
                    }
                }
            }
        }
        for i in 0..b {
            let mut top = (0..k).map(|m| ll[m * BLOCK + i]).fold(f64::NEG_INFINITY, f64::max);
            if let Some(t) = noise {
                top = top.max(t);
            }
            let mut total = 0.0;
            for m in 0..k {
                let e = (ll[m * BLOCK + i] - top).exp();
                ll[m * BLOCK + i] = e;
                total += e;
            }
            let e_noise = noise.map(|t| (t - top).exp());
            if let Some(e) = e_noise {
                total += e;
            }
            let log_total = total.ln();
            // weighted, every sum below takes r · w
            let w = data.weight(start + i);
            st.loglik += w * (top + log_total);
            st.log_map -= w * log_total;
            let inv = w / total;
            for m in 0..k {
                ll[m * BLOCK + i] *= inv;
            }
            if let Some(e) = e_noise {
                st.s_noise += e * inv;
            }
        }
        for m in 0..k {
            let r = &ll[m * BLOCK..m * BLOCK + b];
            let c = &centred[m * d * BLOCK..(m + 1) * d * BLOCK];
            st.s0[m] += r.iter().sum::<f64>();
            // the weights of S1 and S2: r, or for t r·u
            let w = if t {
                let (u, l1p) = (&u[m * BLOCK..m * BLOCK + b], &l1p[m * BLOCK..m * BLOCK + b]);
                let ru = &mut ru[..b];
                let (mut s_l1p, mut s_u2) = (0.0, 0.0);
                for (((v, r), u), lp) in ru.iter_mut().zip(r).zip(u).zip(l1p) {
                    *v = r * u;
                    s_l1p += r * lp;
                    s_u2 += *v * u;
                }
                st.su[m] += ru.iter().sum::<f64>();
                st.s_l1p[m] += s_l1p;
                st.s_u2[m] += s_u2;
                &ru[..]
            } else {
                r
            };
            for j in 0..d {
                let cj = &c[j * BLOCK..j * BLOCK + b];
                let rc = &mut rc[..b];
                for ((v, r), c) in rc.iter_mut().zip(w).zip(cj) {
                    *v = r * c;
                }
                st.s1[m * d + j] += rc.iter().sum::<f64>();
                for l in 0..=j {
                    let cl = &c[l * BLOCK..l * BLOCK + b];
                    st.s2[m * d * d + j + d * l] += rc.iter().zip(cl).map(|(a, b)| a * b).sum::<f64>();
                }
            }
        }
        start += b;
    }
    Some(st)
}

/// Observations start..start+b of `data` centred on component `t`'s mean
/// (into `centred`, d × BLOCK) and solved against its Cholesky factor (into
/// `y`): |y_i|² is the observation's squared Mahalanobis distance.
fn component_block(data: &MvData, t: &Term, start: usize, b: usize, centred: &mut [f64], y: &mut [f64]) {
    let (n, d) = (data.n, data.d);
    for j in 0..d {
        let z = &data.z[j * n + start..j * n + start + b];
        let cj = &mut centred[j * BLOCK..j * BLOCK + b];
        for (c, v) in cj.iter_mut().zip(z) {
            *c = v - t.mean[j];
        }
        let (done, rest) = y.split_at_mut(j * BLOCK);
        let yj = &mut rest[..b];
        yj.copy_from_slice(cj);
        for l in 0..j {
            let f = t.chol[j + d * l];
            for (a, yl) in yj.iter_mut().zip(&done[l * BLOCK..l * BLOCK + b]) {
                *a -= f * yl;
            }
        }
        let s = t.inv_diag[j];
        yj.iter_mut().for_each(|a| *a *= s);
    }
}

/// The M-step from the E-step's sums: the next parameters, or why the fit
/// degenerated (a component of fewer than MIN_COMPONENT_OBS expected
/// observations, a covariance that lost a direction, a ν that is not a
/// number). `n` is the data's total weight (MvData::total).
pub fn m_step(st: &MvStats, n: f64, d: usize, model: Model) -> Result<MvParams, Degenerate> {
    let k = st.s0.len();
    let t = !st.su.is_empty();
    let mut p = MvParams {
        k,
        d,
        alpha: vec![0.0; k],
        mu: vec![0.0; k * d],
        sigma: vec![0.0; k * d * d],
        noise: st.s_noise / n,
        df: st.df.clone(),
    };
    for m in 0..k {
        let nk = st.s0[m];
        if !(nk >= MIN_COMPONENT_OBS) {
            return Err(if nk.is_finite() { Degenerate::WeightCollapsed } else { Degenerate::NotFinite });
        }
        p.alpha[m] = nk / n;
        // Normal: Su = S0, and su / nk is exactly 1
        let su = if t { st.su[m] } else { nk };
        let shift: Vec<f64> = (0..d).map(|j| st.s1[m * d + j] / su).collect();
        for j in 0..d {
            p.mu[m * d + j] = st.centre[m * d + j] + shift[j];
        }
        let cov = &mut p.sigma[m * d * d..(m + 1) * d * d];
        for j in 0..d {
            for l in 0..=j {
                let v = st.s2[m * d * d + j + d * l] / nk - shift[j] * shift[l] * (su / nk);
                cov[j + d * l] = v;
                cov[l + d * j] = v;
            }
        }
        if t && !model.df_fixed {
            let df = df_step(st.df[m], d, nk, st.su[m], st.s_l1p[m], st.s_u2[m]);
            if !crate::student::df_ok(df) {
                return Err(Degenerate::NotFinite);
            }
            p.df[m] = df;
        }
    }
    constrain(&mut p, model.structure);
    for m in 0..k {
        let c = cholesky(p.cov(m), d).ok_or(Degenerate::SpreadCollapsed)?;
        // the data are standardised: a pivot is a standard deviation left
        // given the variables before it, in units of the data's own
        if (0..d).any(|j| !(c[j + d * j] >= MIN_RELATIVE_SD)) {
            return Err(Degenerate::SpreadCollapsed);
        }
    }
    Ok(p)
}

/// A component's next ν from the E-step's sums at ν₀ (S0 = `nk`, Su, B =
/// Σ r·log(1 + δ/ν₀), Σ r·u²).
///
/// ECM's step (student.rs's root with d for 1: the maximum over ν of the
/// expected complete-data log-likelihood, latent weights u included,
///
///   log(ν/2) − ψ(ν/2) = −1 − [Σ r·(log u − u)]/S0 − ψ((ν₀+d)/2) + log((ν₀+d)/2))
///
/// crawls where ν is large: the weights carry most of the information
/// about ν, and a Gaussian-like component takes over a thousand passes to
/// reach DF_MAX (inst/bench/results-mv-gpu.md). So ν takes a Newton step
/// in log ν on the observed log-likelihood's own ν-dependence given the
/// responsibilities, Σ r·log t_d(x; μ, Σ, ν) (ECME's conditional step,
/// Liu & Rubin 1994), whose derivatives at ν₀ come from the same sums:
///
///   ∂/∂ν  = ½[S0(ψ(h) − ψ(ν/2)) − B + S0 − Su],  h = (ν+d)/2
///   ∂²/∂ν² = ½[½S0(ψ′(h) − ψ′(ν/2)) + S0/ν + (Σ r·u² − 2 Su)/(ν+d)]
///
/// with the step bounded by DF_STEP_MAX; where that function is not
/// concave in log ν at ν₀, ECM's step.
pub(crate) fn df_step(df0: f64, d: usize, nk: f64, su: f64, b: f64, su2: f64) -> f64 {
    let dd = d as f64;
    let half = (df0 + dd) / 2.0;
    let (g, h) = df_derivatives(df0, d, nk, su, b, su2);
    // in η = log ν
    let (g_eta, h_eta) = (df0 * g, df0 * df0 * h + df0 * g);
    if h_eta < 0.0 && g_eta.is_finite() {
        let step = (-g_eta / h_eta).clamp(-DF_STEP_MAX, DF_STEP_MAX);
        return (df0 * step.exp()).clamp(crate::limits::DF_MIN, crate::limits::DF_MAX);
    }
    // Σ r·(log u − u) = S0·log((ν₀+d)/ν₀) − B − Su
    let s_log = nk * ((df0 + dd) / df0).ln() - b - su;
    let (di_h, _) = digammas(half);
    df_root(-1.0 - (s_log + nk * (di_h - half.ln())) / nk)
}

/// The first and second derivatives in ν of Σ r·log t_d(x; μ, Σ, ν) at ν₀
/// (`df_step`'s formulas).
fn df_derivatives(df0: f64, d: usize, nk: f64, su: f64, b: f64, su2: f64) -> (f64, f64) {
    let dd = d as f64;
    let (di_h, tri_h) = digammas((df0 + dd) / 2.0);
    let (di_0, tri_0) = digammas(df0 / 2.0);
    let g = 0.5 * (nk * (di_h - di_0) - b + nk - su);
    let h = 0.5 * (0.5 * nk * (tri_h - tri_0) + nk / df0 + (su2 - 2.0 * su) / (df0 + dd));
    (g, h)
}

/// Each component's own covariance made into the structure's.
pub(super) fn constrain(p: &mut MvParams, structure: Structure) {
    let (k, d) = (p.k, p.d);
    match structure {
        Structure::Full => {}
        Structure::Tied => {
            let mut pooled = vec![0.0; d * d];
            for m in 0..k {
                for (s, c) in pooled.iter_mut().zip(p.cov(m)) {
                    *s += p.alpha[m] * c;
                }
            }
            // the components' share of the data, without the noise's
            if p.noise > 0.0 {
                let share: f64 = p.alpha.iter().sum();
                pooled.iter_mut().for_each(|s| *s /= share);
            }
            for m in 0..k {
                p.sigma[m * d * d..(m + 1) * d * d].copy_from_slice(&pooled);
            }
        }
        Structure::Diagonal | Structure::Spherical => {
            for m in 0..k {
                let cov = &mut p.sigma[m * d * d..(m + 1) * d * d];
                let mean_var = (0..d).map(|j| cov[j + d * j]).sum::<f64>() / d as f64;
                for j in 0..d {
                    for l in 0..d {
                        if j != l {
                            cov[j + d * l] = 0.0;
                        } else if structure == Structure::Spherical {
                            cov[j + d * l] = mean_var;
                        }
                    }
                }
            }
        }
    }
}

/// How one start ended: the parameters its last E-step was taken at, their
/// log-likelihood (standardised units), the updates applied.
#[derive(Clone, Debug)]
pub struct MvStartFit {
    pub params: MvParams,
    pub loglik: f64,
    pub iterations: u32,
    pub outcome: Outcome,
}

/// EM from `init` until the log-likelihood rises by less than `epsilon`,
/// `max_iters` updates, or degeneration.
pub fn run_em(
    data: &MvData,
    init: MvParams,
    model: Model,
    max_iters: u32,
    epsilon: f64,
    cancel: &AtomicBool,
) -> MvStartFit {
    let mut params = init;
    let mut previous: Option<f64> = None;
    let mut iterations = 0;
    loop {
        let end = |params: MvParams, loglik, outcome| MvStartFit { params, loglik, iterations, outcome };
        if cancel.load(Ordering::Relaxed) {
            return end(params, f64::NAN, Outcome::Cancelled);
        }
        let Some(st) = e_step(data, &params) else {
            return end(params, f64::NAN, Outcome::Failed(Degenerate::SpreadCollapsed));
        };
        let loglik = st.loglik;
        if !loglik.is_finite() {
            return end(params, loglik, Outcome::Failed(Degenerate::NotFinite));
        }
        if let Some(prev) = previous {
            if loglik < prev - fall_tolerance(prev, data.total) {
                return end(params, loglik, Outcome::Failed(Degenerate::LoglikFell));
            }
            if loglik - prev < epsilon {
                return end(params, loglik, Outcome::Converged);
            }
        }
        if iterations >= max_iters {
            return end(params, loglik, Outcome::MaxIters);
        }
        match m_step(&st, data.total, data.d, model) {
            Ok(next) => params = next,
            Err(why) => return end(params, loglik, Outcome::Failed(why)),
        }
        iterations += 1;
        previous = Some(loglik);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log Σ_m α_m N(x_i; μ_m, Σ_m) summed, by the closed-form 2 × 2
    /// inverse and determinant (independent of the Cholesky path).
    fn brute_loglik(data: &MvData, p: &MvParams) -> f64 {
        (0..data.n)
            .map(|i| {
                let f: f64 = (0..p.k)
                    .map(|m| {
                        let s = p.cov(m);
                        let det = s[0] * s[3] - s[1] * s[2];
                        let (a, b) = (data.at(i, 0) - p.mean(m)[0], data.at(i, 1) - p.mean(m)[1]);
                        let q = (s[3] * a * a - 2.0 * s[1] * a * b + s[0] * b * b) / det;
                        p.alpha[m] * (-0.5 * q).exp() / (2.0 * std::f64::consts::PI * det.sqrt())
                    })
                    .sum();
                f.ln()
            })
            .sum()
    }

    fn two_clusters(n: usize) -> MvData {
        // a deterministic scatter: two tilted clouds
        let mut x = vec![0.0; 2 * n];
        for i in 0..n {
            let t = (i as f64 * 0.618_033_988_75).fract() - 0.5;
            let u = (i as f64 * 0.414_213_562_37).fract() - 0.5;
            let c = if i % 3 == 0 { 4.0 } else { 0.0 };
            x[i] = c + t + 0.3 * u;
            x[n + i] = c + 0.5 * t - u;
        }
        MvData::prepare(&x, n, 2, None, false, false).unwrap()
    }

    fn start() -> MvParams {
        MvParams {
            k: 2,
            d: 2,
            alpha: vec![0.5, 0.5],
            mu: vec![-0.5, -0.5, 1.0, 1.0],
            sigma: vec![0.5, 0.1, 0.1, 0.5, 0.4, 0.0, 0.0, 0.4],
            noise: 0.0,
            df: Vec::new(),
        }
    }

    #[test]
    fn e_step_log_likelihood_is_the_mixture_density() {
        let data = two_clusters(150);
        let p = start();
        let st = e_step(&data, &p).unwrap();
        let brute = brute_loglik(&data, &p);
        assert!((st.loglik - brute).abs() < 1e-10 * brute.abs(), "{} {}", st.loglik, brute);
        assert!((st.s0.iter().sum::<f64>() - 150.0).abs() < 1e-10);
    }

    #[test]
    fn a_noise_component_adds_its_uniform_density() {
        let n = 150;
        // a dataset in known units (two_clusters' standardised values)
        let x = two_clusters(n).z;
        let data = MvData::prepare(&x, n, 2, None, false, true).unwrap();
        let mut p = start();
        p.alpha = vec![0.45, 0.45];
        p.noise = 0.1;
        let st = e_step(&data, &p).unwrap();
        // the mixture density in x's units: the parameters mapped back, the
        // uniform over x's bounding box
        let volume: f64 = data.support.iter().map(|(lo, hi)| hi - lo).product();
        let q = p.to_data_units(&data.scaling);
        let brute: f64 = (0..n)
            .map(|i| {
                let comps: f64 = (0..2)
                    .map(|m| {
                        let s = q.cov(m);
                        let det = s[0] * s[3] - s[1] * s[2];
                        let (a, b) = (x[i] - q.mean(m)[0], x[n + i] - q.mean(m)[1]);
                        let qq = (s[3] * a * a - 2.0 * s[1] * a * b + s[0] * b * b) / det;
                        q.alpha[m] * (-0.5 * qq).exp() / (2.0 * std::f64::consts::PI * det.sqrt())
                    })
                    .sum();
                (comps + p.noise / volume).ln()
            })
            .sum();
        let in_x_units = st.loglik - data.scaling.log_jacobian(n as f64);
        assert!((in_x_units - brute).abs() < 1e-9 * brute.abs(), "{in_x_units} {brute}");
        let sum_r: f64 = st.s0.iter().sum::<f64>() + st.s_noise;
        assert!((sum_r - n as f64).abs() < 1e-9);
        let next = m_step(&st, n as f64, 2, Model::normal(Structure::Full)).unwrap();
        assert!((next.alpha.iter().sum::<f64>() + next.noise - 1.0).abs() < 1e-12);
    }

    #[test]
    fn em_climbs_and_converges_under_every_structure() {
        let data = two_clusters(300);
        let never = AtomicBool::new(false);
        for s in Structure::ALL {
            let f = run_em(&data, start(), Model::normal(s), 1000, 1e-10, &never);
            assert_eq!(f.outcome, Outcome::Converged, "{s:?}");
            assert!((f.loglik - brute_loglik(&data, &f.params)).abs() < 1e-9 * f.loglik.abs());
            let c = f.params.cov(0);
            match s {
                Structure::Diagonal => assert_eq!(c[1], 0.0),
                Structure::Spherical => assert!(c[1] == 0.0 && c[0] == c[3]),
                Structure::Tied => assert_eq!(f.params.cov(0), f.params.cov(1)),
                Structure::Full => assert!(c[1] != 0.0),
            }
        }
    }

    #[test]
    fn a_collapsing_component_is_degenerate_not_a_panic() {
        let data = two_clusters(40);
        let mut p = start();
        p.mu[2..].copy_from_slice(&[50.0, 50.0]);
        p.sigma[4..].copy_from_slice(&[1e-4, 0.0, 0.0, 1e-4]);
        let f = run_em(&data, p, Model::normal(Structure::Full), 100, 1e-8, &AtomicBool::new(false));
        assert!(matches!(f.outcome, Outcome::Failed(_)), "{:?}", f.outcome);
    }

    /// log Σ_m α_m t_d(x_i; μ_m, Σ_m, ν_m) summed, by the closed-form 2 × 2
    /// inverse and determinant and std's log Γ-free form of the t's
    /// constant (Γ((ν+2)/2)/Γ(ν/2) = ν/2 exactly when d = 2).
    fn brute_t_loglik(data: &MvData, p: &MvParams) -> f64 {
        (0..data.n)
            .map(|i| {
                let f: f64 = (0..p.k)
                    .map(|m| {
                        let (s, nu) = (p.cov(m), p.df[m]);
                        let det = s[0] * s[3] - s[1] * s[2];
                        let (a, b) = (data.at(i, 0) - p.mean(m)[0], data.at(i, 1) - p.mean(m)[1]);
                        let q = (s[3] * a * a - 2.0 * s[1] * a * b + s[0] * b * b) / det;
                        let c = (nu / 2.0) / (nu * std::f64::consts::PI * det.sqrt());
                        p.alpha[m] * c * (1.0 + q / nu).powf(-(nu + 2.0) / 2.0)
                    })
                    .sum();
                f.ln()
            })
            .sum()
    }

    fn t_start() -> MvParams {
        let mut p = start();
        p.df = vec![4.0, 25.0];
        p
    }

    #[test]
    fn a_t_e_step_log_likelihood_is_the_mixture_density() {
        let data = two_clusters(150);
        let p = t_start();
        let st = e_step(&data, &p).unwrap();
        let brute = brute_t_loglik(&data, &p);
        assert!((st.loglik - brute).abs() < 1e-10 * brute.abs(), "{} {}", st.loglik, brute);
        // u = (ν + d)/(ν + δ): Σ r·u against a direct sum for component 0
        let mut su = 0.0;
        let inv = |s: &[f64]| {
            let det = s[0] * s[3] - s[1] * s[2];
            [s[3] / det, -s[1] / det, s[0] / det]
        };
        let [a11, a12, a22] = inv(p.cov(0));
        let post = |i: usize| {
            let l: Vec<f64> = (0..2)
                .map(|m| {
                    let one = MvParams {
                        k: 1,
                        d: 2,
                        alpha: vec![p.alpha[m]],
                        mu: p.mean(m).to_vec(),
                        sigma: p.cov(m).to_vec(),
                        noise: 0.0,
                        df: vec![p.df[m]],
                    };
                    let single = MvData { n: 1, z: vec![data.at(i, 0), data.at(i, 1)], ..data.clone() };
                    brute_t_loglik(&single, &one).exp()
                })
                .collect();
            l[0] / (l[0] + l[1])
        };
        for i in 0..150 {
            let (a, b) = (data.at(i, 0) - p.mu[0], data.at(i, 1) - p.mu[1]);
            let delta = a11 * a * a + 2.0 * a12 * a * b + a22 * b * b;
            su += post(i) * (4.0 + 2.0) / (4.0 + delta);
        }
        assert!((st.su[0] - su).abs() < 1e-10 * su, "{} {su}", st.su[0]);
    }

    #[test]
    fn t_em_climbs_every_pass_and_estimates_df() {
        let data = two_clusters(300);
        let model = Model { structure: Structure::Full, t: true, df_fixed: false };
        let mut p = t_start();
        let mut last = f64::NEG_INFINITY;
        for _ in 0..200 {
            let st = e_step(&data, &p).unwrap();
            assert!(st.loglik >= last - 1e-9 * last.abs(), "{} < {last}", st.loglik);
            last = st.loglik;
            p = m_step(&st, data.total, 2, model).unwrap();
        }
        assert!(p.df.iter().all(|&v| crate::student::df_ok(v)) && p.df != t_start().df);
        for s in Structure::ALL {
            let m = Model { structure: s, t: true, df_fixed: false };
            let f = run_em(&data, t_start(), m, 5000, 1e-10, &AtomicBool::new(false));
            assert!(matches!(f.outcome, Outcome::Converged), "{s:?} {:?}", f.outcome);
            assert!((f.loglik - brute_t_loglik(&data, &f.params)).abs() < 1e-9 * f.loglik.abs());
        }
        // ν fixed stays put
        let fixed = Model { structure: Structure::Full, t: true, df_fixed: true };
        let f = run_em(&data, t_start(), fixed, 500, 1e-10, &AtomicBool::new(false));
        assert_eq!(f.params.df, t_start().df);
    }

    #[test]
    fn the_df_step_is_bounded_by_a_factor_of_four() {
        assert_eq!(DF_STEP_MAX, 4f64.ln());
    }

    #[test]
    fn the_df_steps_derivatives_are_the_log_likelihoods() {
        // one component: r = 1, and Σ r·log t is the log-likelihood
        let data = two_clusters(200);
        for df in [0.8, 3.0, 12.0, 150.0] {
            let p = MvParams {
                k: 1,
                d: 2,
                alpha: vec![1.0],
                mu: vec![0.1, -0.2],
                sigma: vec![1.2, 0.3, 0.3, 0.9],
                noise: 0.0,
                df: vec![df],
            };
            let st = e_step(&data, &p).unwrap();
            let (g, h) = df_derivatives(df, 2, st.s0[0], st.su[0], st.s_l1p[0], st.s_u2[0]);
            let at = |v: f64| brute_t_loglik(&data, &MvParams { df: vec![v], ..p.clone() });
            let e = 1e-4 * df;
            let g_ref = (at(df + e) - at(df - e)) / (2.0 * e);
            let h_ref = (at(df + e) - 2.0 * at(df) + at(df - e)) / (e * e);
            assert!((g - g_ref).abs() < 1e-6 * (1.0 + g_ref.abs()), "df {df}: {g} {g_ref}");
            assert!((h - h_ref).abs() < 1e-3 * (1.0 + h_ref.abs()), "df {df}: {h} {h_ref}");
        }
    }
}
