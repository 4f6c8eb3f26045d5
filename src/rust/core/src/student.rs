//! Student's t components (issue 32): location μ, scale σ and degrees of
//! freedom ν per component,
//!
//!   log p(x) = log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) − log σ
//!              − (ν+1)/2 · log(1 + δ/ν),   δ = (x − μ)²/σ².
//!
//! The t is a Normal whose precision is scaled by a latent weight
//! W ~ Gamma(ν/2, rate ν/2); EM treats W as missing data too (McLachlan &
//! Peel 2000, §7.5): the E-step gives, besides the responsibilities r, each
//! observation's expected weight u = (ν+1)/(ν + δ) per component, and
//! gathers S0 = Σr, Su = Σr·u, S1 = Σr·u·x, S2 = Σr·u·x² and the ν step's
//! statistic Σr·(log u − u) (with log u = log((ν+1)/ν) − log(1 + δ/ν), the
//! logarithm the density takes already). The M-step is the Normal's
//! weighted by u, μ = S1/Su, σ² = (S2 − μ·S1)/S0, and ν, unless fixed,
//! the root of
//!
//!   log(ν/2) − ψ(ν/2) = −1 − [Σr·(log u − u)]/S0 − ψ((ν₀+1)/2) + log((ν₀+1)/2)
//!
//! (ν₀ the pass's ν): the gamma's shape equation (special.rs's
//! gamma_shape) in ν/2, one root per component and pass, clamped to
//! [DF_MIN, DF_MAX]. This conditional step (ECM) raises the likelihood at
//! every pass as EM's does; the polish (polish.rs) then takes the winner to
//! the maximum in all parameters at once.
//!
//! Everything else is the Normal's (family/mod.rs's `with_family!` names
//! the Normal for the t): the data are standardised, starts are the
//! Normal's with ν = DF_START (or the user's ν), and the screen and the
//! collapse guard read σ. What depends on ν branches to this module.

use rand_pcg::Pcg64;

use crate::family::component::standard_normal;
use crate::family::component::ComponentFamily;
use crate::family::gamma::Gamma;
use crate::limits::{DF_MAX, DF_MIN, ESTEP_BLOCK as BLOCK, ESTEP_LANES as LANES, MAX_COMPONENTS};
use crate::mathx::{block_log_likelihood, exp_nonpos_all, ln_ge1, ln_ge1_all, normalise, weighted_block};
use crate::params::{Params, Stats, SumRow};
use crate::special::{digammas, gamma_shape, ln_gamma};

/// log π (the kernels' LN_PI too: gpu/prelude.rs)
pub(crate) const LN_PI: f64 = 1.144_729_885_849_400_2;

/// log p(x | μ, σ, ν), straight from the formula.
pub fn log_density(x: f64, mu: f64, sigma: f64, df: f64) -> f64 {
    let z = (x - mu) / sigma;
    ln_gamma((df + 1.0) / 2.0)
        - ln_gamma(df / 2.0)
        - 0.5 * (df.ln() + LN_PI)
        - sigma.ln()
        - (df + 1.0) / 2.0 * (z * z / df).ln_1p()
}

/// Per component: log α + log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) − log σ,
/// and what each observation needs beside it: μ, (ν+1)/2, 1/(νσ²),
/// (ν+1)/ν and its logarithm.
pub(crate) struct Terms {
    c: [f64; MAX_COMPONENTS],
    mu: [f64; MAX_COMPONENTS],
    half: [f64; MAX_COMPONENTS],
    inv_scale: [f64; MAX_COMPONENTS],
    u0: [f64; MAX_COMPONENTS],
    log_u0: [f64; MAX_COMPONENTS],
}

pub(crate) fn terms(p: &Params) -> Terms {
    let mut t = Terms {
        c: [0.0; MAX_COMPONENTS],
        mu: p.mu,
        half: [0.0; MAX_COMPONENTS],
        inv_scale: [0.0; MAX_COMPONENTS],
        u0: [0.0; MAX_COMPONENTS],
        log_u0: [0.0; MAX_COMPONENTS],
    };
    for m in 0..p.k {
        let (sigma, df) = (p.shape[m], p.df[m]);
        t.half[m] = (df + 1.0) / 2.0;
        t.c[m] = p.alpha[m].ln() + ln_gamma(t.half[m]) - ln_gamma(df / 2.0) - 0.5 * (df.ln() + LN_PI) - sigma.ln();
        t.inv_scale[m] = 1.0 / (df * sigma * sigma);
        t.u0[m] = (df + 1.0) / df;
        t.log_u0[m] = t.u0[m].ln();
    }
    t
}

/// One observation's responsibilities: log(α_m p_m(x)) per component in
/// `r` (the noise's last when `noise_term`, log π₀ + t(x), is given), with
/// z = δ/ν per component in `z` and log(1 + z) in `log1p`, then `r` made
/// the responsibilities. Returns the observation's log f(x).
#[inline(always)]
pub(crate) fn responsibilities(
    x: f64,
    t: &Terms,
    k: usize,
    noise_term: Option<f64>,
    r: &mut [f64],
    z: &mut [f64],
    log1p: &mut [f64],
) -> f64 {
    for m in 0..k {
        let d = x - t.mu[m];
        z[m] = d * d * t.inv_scale[m];
        log1p[m] = ln_ge1(1.0 + z[m]);
        r[m] = t.c[m] - t.half[m] * log1p[m];
    }
    let rows = match noise_term {
        Some(v) => {
            r[k] = v;
            k + 1
        }
        None => k,
    };
    normalise(&mut r[..rows])
}

/// The E-step of a t mixture `p` on data `x` (`noise`: the noise
/// component's t(x) per observation, if it has one): log-likelihood and
/// the sums of the module docs. By blocks of BLOCK observations, each stage
/// a loop the compiler vectorises (estep.rs's layout), in AVX2 where the
/// CPU has it (the same bits: plain multiplies and adds are never fused).
pub fn e_step(x: &[f64], noise: Option<&[f64]>, p: &Params) -> Stats {
    match noise {
        Some(t) => dispatch::<true, false>(x, t, &[], p),
        None => dispatch::<false, false>(x, &[], &[], p),
    }
}

/// e_step of observations with weights `w` (as long as x): every sum and
/// the log-likelihood weighted (estep.rs's e_step_weighted).
pub fn e_step_weighted(x: &[f64], noise: Option<&[f64]>, w: &[f64], p: &Params) -> Stats {
    let n = x.len().min(w.len());
    match noise {
        Some(t) => dispatch::<true, true>(&x[..n], t, &w[..n], p),
        None => dispatch::<false, true>(&x[..n], &[], &w[..n], p),
    }
}

fn dispatch<const NOISY: bool, const W: bool>(x: &[f64], nt: &[f64], wt: &[f64], p: &Params) -> Stats {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above)
        return unsafe { e_step_avx2::<NOISY, W>(x, nt, wt, p) };
    }
    e_step_blocks::<NOISY, W>(x, nt, wt, p)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn e_step_avx2<const NOISY: bool, const W: bool>(x: &[f64], nt: &[f64], wt: &[f64], p: &Params) -> Stats {
    e_step_blocks::<NOISY, W>(x, nt, wt, p)
}

/// The block loops; with `NOISY`, row K of `l` is the noise's term
/// log π₀ + t(x), read from `nt` (as long as `x`); with `W`, each
/// observation's responsibilities and log-density weighted by its `wt`.
#[inline(always)]
fn e_step_blocks<const NOISY: bool, const W: bool>(x: &[f64], nt: &[f64], wt: &[f64], p: &Params) -> Stats {
    let k = p.k;
    let rows = k + NOISY as usize;
    let t = terms(p);
    let log_noise = p.noise.ln();
    let n = if NOISY { x.len().min(nt.len()) } else { x.len() };
    let mut l = [[0.0f64; BLOCK]; MAX_COMPONENTS + 1];
    // 1 + δ/ν and its logarithm per component
    let mut w = [[0.0f64; BLOCK]; MAX_COMPONENTS];
    let mut lw = [[0.0f64; BLOCK]; MAX_COMPONENTS];
    // the last, short block padded with x = 0 (and t = 0), weight 0
    let mut x_pad = [0.0f64; BLOCK];
    let mut t_pad = [0.0f64; BLOCK];
    // the sums in LANES interleaved accumulators, so that they vectorise:
    // Σr, Σr·u, Σr·u·x, Σr·u·x², Σr·(log u − u)
    let mut acc = [[[0.0f64; LANES]; 5]; MAX_COMPONENTS];
    let mut noise_acc = [0.0f64; LANES];
    let mut ll_max = [0.0f64; LANES];
    let mut ll_log = 0.0;
    for start in (0..n).step_by(BLOCK) {
        let len = (n - start).min(BLOCK);
        x_pad[..len].copy_from_slice(&x[start..start + len]);
        x_pad[len..].fill(0.0);
        let xb = &x_pad;
        for m in 0..k {
            let (mu, inv_scale) = (t.mu[m], t.inv_scale[m]);
            for j in 0..BLOCK {
                let d = xb[j] - mu;
                w[m][j] = 1.0 + d * d * inv_scale;
            }
            lw[m] = w[m];
            ln_ge1_all(&mut lw[m]);
            let (c, half) = (t.c[m], t.half[m]);
            for j in 0..BLOCK {
                l[m][j] = c - half * lw[m][j];
            }
        }
        if NOISY {
            t_pad[..len].copy_from_slice(&nt[start..start + len]);
            t_pad[len..].fill(0.0);
            for j in 0..BLOCK {
                l[k][j] = log_noise + t_pad[j];
            }
        }
        let mut mx = l[0];
        for lm in &l[1..rows] {
            for j in 0..BLOCK {
                mx[j] = if lm[j] > mx[j] { lm[j] } else { mx[j] };
            }
        }
        let mut sum = [0.0f64; BLOCK];
        for lm in &mut l[..rows] {
            for j in 0..BLOCK {
                lm[j] -= mx[j];
            }
            exp_nonpos_all(lm);
            for j in 0..BLOCK {
                sum[j] += lm[j];
            }
        }
        let mut inv = [0.0f64; BLOCK];
        for j in 0..BLOCK {
            inv[j] = if j < len { 1.0 / sum[j] } else { 0.0 };
        }
        if W {
            weighted_block(&mx, &mut sum, &mut inv, &wt[start..start + len], &mut ll_max);
        } else {
            ll_log += block_log_likelihood(&mut mx, &mut sum, len, &mut ll_max);
        }
        for m in 0..k {
            let (u0, log_u0) = (t.u0[m], t.log_u0[m]);
            let [s0, su, s1, s2, sl] = &mut acc[m];
            for j in (0..BLOCK).step_by(LANES) {
                for lane in 0..LANES {
                    let i = j + lane;
                    let r = l[m][i] * inv[i];
                    let u = u0 / w[m][i];
                    let ru = r * u;
                    s0[lane] += r;
                    su[lane] += ru;
                    s1[lane] += ru * xb[i];
                    s2[lane] += ru * xb[i] * xb[i];
                    sl[lane] += r * (log_u0 - lw[m][i] - u);
                }
            }
        }
        if NOISY {
            for j in (0..BLOCK).step_by(LANES) {
                for lane in 0..LANES {
                    noise_acc[lane] += l[k][j + lane] * inv[j + lane];
                }
            }
        }
    }
    const _: () = assert!(LANES == 4, "the lanes are summed as four");
    let total = |v: &[f64; LANES]| (v[0] + v[1]) + (v[2] + v[3]);
    let mut st = Stats::zero();
    let mut s_log = [0.0; MAX_COMPONENTS];
    for m in 0..k {
        let [s0, su, s1, s2, sl] = &acc[m];
        (st.s0[m], st.su[m], st.s1[m], st.s2[m], s_log[m]) = (total(s0), total(su), total(s1), total(s2), total(sl));
    }
    st.s0_noise = total(&noise_acc);
    st.ll = total(&ll_max) + ll_log;
    finish_stats(st, &s_log, p)
}

/// The E-step's sums `st` (S0, Su, S1, S2 and the rest; cuda-streams's
/// from `SUM_ROWS`) completed: the ν step's statistic from Σr·(log u − u)
/// (`s_log`), and the pass's ν.
pub(crate) fn finish_stats(mut st: Stats, s_log: &[f64], p: &Params) -> Stats {
    for m in 0..p.k {
        let half = (p.df[m] + 1.0) / 2.0;
        let (di, _) = digammas(half);
        st.s_df[m] = s_log[m] + st.s0[m] * (di - half.ln());
    }
    st.df = p.df;
    st.df_fixed = p.df_fixed;
    st
}

/// cuda-streams: one start's terms as em_obs_terms reads them, one row of
/// MAX_COMPONENTS each (gpu/prelude.rs's TERMS_PER_START): c, μ,
/// (ν+1)/2, 1/(νσ²), (ν+1)/ν, its logarithm.
pub(crate) fn kernel_rows(p: &Params) -> [[f64; MAX_COMPONENTS]; 6] {
    let t = terms(p);
    [t.c, t.mu, t.half, t.inv_scale, t.u0, t.log_u0]
}

/// cuda-streams: the order of em_fused_sum's rows of k sums after the
/// log-likelihood (S0, Su, S1, S2, then Σr·(log u − u), which `finish_stats`
/// takes).
pub(crate) const SUM_ROWS: [SumRow; 5] = [SumRow::S0, SumRow::Su, SumRow::S1, SumRow::S2, SumRow::Other];

/// The row of SUM_ROWS that holds Σr·(log u − u).
pub(crate) const LOG_U_ROW: usize = 4;

/// One component's M-step (mstep.rs applies the guards): μ = S1/Su,
/// σ² = (S2 − μ·S1)/S0, and ν by its root, or the pass's ν when fixed.
pub fn component_m_step(st: &Stats, m: usize) -> (f64, f64, f64) {
    let s0 = st.s0[m];
    let mu = st.s1[m] / st.su[m];
    let sigma = ((st.s2[m] - mu * st.s1[m]) / s0).sqrt();
    let df = if st.df_fixed { st.df[m] } else { df_root(-1.0 - st.s_df[m] / s0) };
    (mu, sigma, df)
}

/// `component_m_step` with the user's fixed location and/or scale: a
/// fixed μ's scale is σ² = Σr·u (x − μ)²/S0 = (S2 − 2μ S1 + μ² Su)/S0
/// (the update given the weights u is the Normal's), a fixed σ leaves μ's
/// and ν's updates as they are.
pub fn component_m_step_fixed(st: &Stats, m: usize, mu: Option<f64>, sigma: Option<f64>) -> (f64, f64, f64) {
    let (free_mu, free_sigma, df) = component_m_step(st, m);
    let Some(mu) = mu else { return (free_mu, sigma.unwrap_or(free_sigma), df) };
    let given = || ((st.s2[m] - 2.0 * mu * st.s1[m] + mu * mu * st.su[m]) / st.s0[m]).sqrt();
    (mu, sigma.unwrap_or_else(given), df)
}

/// ν with log(ν/2) − ψ(ν/2) = y, in [DF_MIN, DF_MAX]. y is positive in
/// exact arithmetic (log u − u ≤ −1 and ψ(a) < log a); y ≤ 0, from
/// rounding where ν is already huge, is ν = DF_MAX.
pub(crate) fn df_root(y: f64) -> f64 {
    let half = gamma_shape(y);
    if half.is_nan() {
        return if y.is_nan() { f64::NAN } else { DF_MAX };
    }
    (2.0 * half).clamp(DF_MIN, DF_MAX)
}

/// Whether ν is a usable degrees of freedom (Family::third_ok's).
pub fn df_ok(df: f64) -> bool {
    crate::params::Family::StudentT.third_ok(df)
}

/// Posterior probabilities of the components (N × K column-major, or
/// N × (K + 1) with the noise's t(x) in `noise`), as estep::posterior; NaN
/// for a value that is not finite.
pub fn posterior(xs: &[f64], p: &Params, noise: Option<&[f64]>) -> Vec<f64> {
    let k = p.k;
    let rows = k + noise.is_some() as usize;
    let t = terms(p);
    let log_noise = p.noise.ln();
    let mut out = vec![f64::NAN; xs.len() * rows];
    let mut r = [0.0; MAX_COMPONENTS + 1];
    let (mut z, mut log1p) = ([0.0; MAX_COMPONENTS], [0.0; MAX_COMPONENTS]);
    for (i, &x) in xs.iter().enumerate() {
        if !x.is_finite() {
            continue;
        }
        let noise_term = noise.map(|nt| log_noise + nt.get(i).copied().unwrap_or(f64::NEG_INFINITY));
        responsibilities(x, &t, k, noise_term, &mut r, &mut z, &mut log1p);
        for m in 0..rows {
            out[m * xs.len() + i] = r[m];
        }
    }
    out
}

/// A draw of t(μ, σ, ν): μ + σ·Z/√W, Z standard Normal, W ~ Gamma(ν/2,
/// rate ν/2) (mean 1, the gamma family's draw).
pub fn draw(mu: f64, sigma: f64, df: f64, rng: &mut Pcg64) -> f64 {
    let w = Gamma::draw(1.0, df / 2.0, rng);
    mu + sigma * standard_normal(rng) / w.sqrt()
}

/// Per-component constants of `derivatives`: ½[ψ((ν+1)/2) − ψ(ν/2)] + ½,
/// ¼[ψ′((ν+1)/2) − ψ′(ν/2)], 1/σ, 1/σ², ν, ν + 1, ½ log ν.
pub(crate) fn derivative_constants(sigma: f64, df: f64) -> [f64; 7] {
    let (d1, t1) = digammas((df + 1.0) / 2.0);
    let (d0, t0) = digammas(df / 2.0);
    [0.5 * (d1 - d0) + 0.5, 0.25 * (t1 - t0), 1.0 / sigma, 1.0 / (sigma * sigma), df, df + 1.0, 0.5 * df.ln()]
}

/// The gradient (∂μ, ∂σ, ∂ν) and the Hessian (μμ, μσ, μν, σσ, σν, νν) of
/// log p(x | μ, σ, ν). With d = x − μ, δ = d²/σ², w = ν + δ and
/// u = (ν+1)/w:
///   ∂μ = u d/σ²,  ∂σ = (uδ − 1)/σ,
///   ∂ν = ½[ψ((ν+1)/2) − ψ(ν/2) + log(ν/w) + 1 − u],
///   μμ = (u/σ²)(2δ/w − 1),  μσ = (2ud/σ³)(δ/w − 1),  μν = d(δ − 1)/(σ² w²),
///   σσ = (2uδ/σ²)(δ/w − 1) − (uδ − 1)/σ²,  σν = δ(δ − 1)/(σ w²),
///   νν = ¼[ψ′((ν+1)/2) − ψ′(ν/2)] + ½[1/ν − 1/w − (δ − 1)/w²].
#[inline(always)]
pub(crate) fn derivatives(x: f64, mu: f64, c: &[f64; 7]) -> ([f64; 3], [f64; 6]) {
    let (half_di, quarter_tri, inv_s, inv_s2, df, df1, half_log_df) = (c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
    let d = x - mu;
    let delta = d * d * inv_s2;
    let w = df + delta;
    let inv_w = 1.0 / w;
    let u = df1 * inv_w;
    let ud = u * delta;
    let grad = [u * d * inv_s2, (ud - 1.0) * inv_s, half_di + half_log_df - 0.5 * w.ln() - 0.5 * u];
    let dw = delta * inv_w;
    let e = (delta - 1.0) * inv_w * inv_w;
    let hess = [
        u * inv_s2 * (2.0 * dw - 1.0),
        2.0 * u * d * inv_s2 * inv_s * (dw - 1.0),
        d * inv_s2 * e,
        (2.0 * ud * (dw - 1.0) - (ud - 1.0)) * inv_s2,
        delta * inv_s * e,
        quarter_tri + 0.5 * (1.0 / df - inv_w - e),
    ];
    (grad, hess)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::prepare;
    use crate::em::run_em;
    use crate::params::Family;
    use rand_pcg::Pcg64;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn the_log_u_row_is_the_one_the_stats_do_not_take() {
        assert_eq!(SUM_ROWS[LOG_U_ROW], SumRow::Other);
        assert_eq!(SUM_ROWS.iter().filter(|&&r| r == SumRow::Other).count(), 1);
    }

    fn mixture(alpha: &[f64], mu: &[f64], sigma: &[f64], df: &[f64]) -> Params {
        let mut p = Params::from_slices(alpha, mu, sigma).expect("a mixture");
        p.df[..df.len()].copy_from_slice(df);
        p
    }

    fn sample(p: &Params, n: usize, seed: u128) -> Vec<f64> {
        let mut rng = Pcg64::new(seed, 7);
        crate::simulate::draw_mixture(Family::StudentT, p, None, n, &mut rng)
    }

    #[test]
    fn the_density_is_the_textbook_t() {
        // t with ν = 1 is the Cauchy: 1/(πσ(1 + z²)); ν = 3 at 0: 2/(π√3)
        let cauchy = log_density(2.0, 0.5, 1.5, 1.0);
        assert!((cauchy - (1.0 / (std::f64::consts::PI * 1.5 * (1.0 + 1.0))).ln()).abs() < 1e-14);
        let t3 = log_density(0.0, 0.0, 1.0, 3.0);
        assert!((t3 - (2.0 / (std::f64::consts::PI * 3f64.sqrt())).ln()).abs() < 1e-14);
    }

    #[test]
    fn the_e_step_sums_are_brute_force_sums() {
        let p = mixture(&[0.3, 0.7], &[-1.0, 2.0], &[0.5, 1.2], &[3.0, 12.0]);
        let xs = sample(&p, 500, 1);
        let st = e_step(&xs, None, &p);
        assert!((st.ll - crate::family::log_likelihood(Family::StudentT, &xs, &p)).abs() < 1e-10 * st.ll.abs());
        let mut want = Stats::zero();
        let mut s_log = [0.0; 2];
        for &x in &xs {
            let l: Vec<f64> = (0..2).map(|m| p.alpha[m].ln() + log_density(x, p.mu[m], p.shape[m], p.df[m])).collect();
            let lse = crate::mathx::log_sum_exp(&l);
            for m in 0..2 {
                let r = (l[m] - lse).exp();
                let delta = ((x - p.mu[m]) / p.shape[m]).powi(2);
                let u = (p.df[m] + 1.0) / (p.df[m] + delta);
                want.s0[m] += r;
                want.su[m] += r * u;
                want.s1[m] += r * u * x;
                want.s2[m] += r * u * x * x;
                s_log[m] += r * (u.ln() - u);
            }
        }
        for m in 0..2 {
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-11 * (1.0 + b.abs());
            assert!(close(st.s0[m], want.s0[m]) && close(st.su[m], want.su[m]));
            assert!(close(st.s1[m], want.s1[m]) && close(st.s2[m], want.s2[m]));
            let a = (p.df[m] + 1.0) / 2.0;
            let (di, _) = digammas(a);
            assert!(close(st.s_df[m], s_log[m] + want.s0[m] * (di - a.ln())));
        }
    }

    #[test]
    fn the_df_root_solves_its_equation_and_stays_in_range() {
        for y in [1e-4, 0.01, 0.1, 0.5, 2.0] {
            let df = df_root(y);
            let (di, _) = digammas(df / 2.0);
            if df > DF_MIN && df < DF_MAX {
                assert!(((df / 2.0).ln() - di - y).abs() < 1e-12, "y {y}: ν {df}");
            }
        }
        assert_eq!(df_root(1e-9), DF_MAX);
        assert_eq!(df_root(0.0), DF_MAX);
        assert_eq!(df_root(50.0), DF_MIN);
    }

    #[test]
    fn derivatives_are_central_differences_of_the_density() {
        for &(x, mu, sigma, df) in &[(0.3, -0.2, 0.8, 4.0), (3.5, 0.1, 1.3, 1.5), (-2.0, 0.0, 0.4, 25.0)] {
            let c = derivative_constants(sigma, df);
            let (g, h) = derivatives(x, mu, &c);
            let f = |t: [f64; 3]| log_density(x, t[0], t[1], t[2]);
            let theta = [mu, sigma, df];
            let step = |i: usize| 1e-5 * theta[i].abs().max(0.1);
            let grad = |t: [f64; 3], i: usize| {
                let (mut up, mut down) = (t, t);
                up[i] += step(i);
                down[i] -= step(i);
                (f(up) - f(down)) / (2.0 * step(i))
            };
            for i in 0..3 {
                assert!((g[i] - grad(theta, i)).abs() < 1e-6 * (1.0 + g[i].abs()), "∂{i} at x {x}");
            }
            // (μμ, μσ, μν, σσ, σν, νν) against central differences of the
            // gradient just checked
            for (e, &(a, b)) in [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)].iter().enumerate() {
                let at = |s: f64| {
                    let mut t = theta;
                    t[b] += s;
                    derivatives(x, t[0], &derivative_constants(t[1], t[2])).0[a]
                };
                let num = (at(step(b)) - at(-step(b))) / (2.0 * step(b));
                assert!((h[e] - num).abs() < 1e-6 * (1.0 + h[e].abs()), "h{a}{b} at x {x}: {} vs {num}", h[e]);
            }
        }
    }

    #[test]
    fn em_climbs_and_finds_the_tails() {
        // heavy-tailed components, ν 3 and 8: every pass raises the
        // log-likelihood, and the fit lands near the truth
        let truth = mixture(&[0.4, 0.6], &[-3.0, 3.0], &[1.0, 1.5], &[3.0, 8.0]);
        let xs = sample(&truth, 4000, 5);
        let ds = prepare(&xs, Family::StudentT).expect("valid data");
        let mut start = ds.rescale(&mixture(&[0.5, 0.5], &[-1.0, 1.0], &[2.0, 2.0], &[0.0, 0.0]));
        start.df = [0.0; crate::limits::MAX_COMPONENTS];
        let start = ds.start(start);
        assert_eq!(start.df[..2], [crate::limits::DF_START; 2]);
        let mut p = start;
        let mut last = f64::NEG_INFINITY;
        for _ in 0..200 {
            let st = ds.e_step(&p);
            assert!(st.ll >= last - 1e-9 * st.ll.abs(), "the log-likelihood fell: {last} -> {}", st.ll);
            last = st.ll;
            p = crate::mstep::m_step(Family::StudentT, 2, &st, xs.len() as f64, ds.spread, false, None)
                .expect("a usable M-step");
        }
        let never = AtomicBool::new(false);
        let fit = ds.unscale(&run_em(Family::StudentT, &ds, start, 5000, 1e-10, true, &never).params);
        let order = fit.order_by_mu();
        let fit = fit.permuted(&order);
        for m in 0..2 {
            assert!((fit.mu[m] - truth.mu[m]).abs() < 0.15, "μ{m} {}", fit.mu[m]);
            assert!((fit.shape[m] / truth.shape[m] - 1.0).abs() < 0.15, "σ{m} {}", fit.shape[m]);
            assert!(fit.df[m] > truth.df[m] / 2.0 && fit.df[m] < truth.df[m] * 2.0, "ν{m} {}", fit.df[m]);
        }
    }

    #[test]
    fn a_fixed_df_stays_fixed() {
        let truth = mixture(&[1.0], &[0.0], &[1.0], &[4.0]);
        let xs = sample(&truth, 500, 9);
        let mut ds = prepare(&xs, Family::StudentT).expect("valid data");
        ds.fixed_df = vec![7.0];
        let start = ds.start(ds.rescale(&mixture(&[1.0], &[0.3], &[2.0], &[0.0])));
        assert!(start.df_fixed && start.df[0] == 7.0);
        let never = AtomicBool::new(false);
        let fit = run_em(Family::StudentT, &ds, start, 1000, 1e-10, true, &never);
        assert_eq!(fit.params.df[0], 7.0);
        assert!(fit.params.df_fixed);
    }
}
