//! Standard errors (DESIGN §3): the observed information of the mixture
//! log-likelihood at a fit's parameters, exact and in one pass over the
//! data, and its inverse (by linalg.rs). saddle.rs reads the same
//! information for the way out of a saddle point.
//!
//! The free parameters, in this order, are θ = (α_1..α_{K−1}, μ_1..μ_K,
//! s_1..s_K), s being λ (inverse Gaussian) or σ (Normal), and α_K = 1 − Σ α_j.
//! With f = Σ_m α_m p_m, responsibilities r_m = α_m p_m / f, and g_m, H_m the
//! gradient and Hessian of log(α_m p_m) in θ, the Hessian of one
//! observation's log f is
//!
//!   ∇² log f = Σ_m r_m (H_m + g_m g_mᵀ) − g gᵀ,   g = Σ_m r_m g_m = ∇ log f,
//!
//! and the observed information is I = −Σ_i ∇² log f(x_i). Here
//! H_m + g_m g_mᵀ = ∇²(α_m p_m) / (α_m p_m), which has a simple pattern:
//! α_m p_m is linear in the α's, so its α–α block is zero; its α_j–(μ_m, s_m)
//! entries are (∂α_m/∂α_j)/α_m · ∂ log p_m (∂α_m/∂α_j is δ_jm for m < K and
//! −1 for m = K), so, summed over observations, they are the sums of the
//! score's (μ_m, s_m) entries divided by ±α_m; and its (μ_m, s_m) block is
//! h_m + u_m u_mᵀ, with u_m and h_m the gradient and Hessian of log p_m in
//! (μ_m, s_m). One pass accumulates Σ g gᵀ, Σ g and the K blocks.
//!
//! u and h per component are the family's (ComponentFamily::derivatives and
//! derivative_constants; their formulas are in family/invgauss.rs and
//! family/normal.rs); the pass is generic over the family.
//!
//! Everything is computed on the dataset's rescaled data (x' = (x − shift) /
//! scale) with the parameters in the same units, where squares and
//! reciprocals stay inside double precision whatever the data's scale. The
//! log-likelihood in the original units differs from the rescaled one by a
//! constant (−N log scale), and θ' = (α, (μ − shift)/scale, s/scale) is
//! affine in θ (both families are location-scale: ComponentFamily::rescale;
//! a family that is not needs its own Jacobian here) with the diagonal
//! Jacobian J = diag(1, 1/scale, 1/scale), so
//! I = J I' J and the covariance is V = J⁻¹ V' J⁻¹: entries for μ and s are
//! multiplied by the scale once per index, and the standard errors are
//! √V'_aa · scale without ever squaring the scale.

use crate::constrained::Constraint;
pub(crate) use crate::constrained::Layout;
use crate::dataset::Prepared;
use crate::family::{with_family, ComponentFamily};
use crate::fixed::Fixed;
use crate::limits::MAX_COMPONENTS;
use crate::linalg::{dot, invert, sum};
use crate::mathx::exp_nonpos;
use crate::params::{Covariance, Family, Params, Singular};
use crate::student;
use crate::truncation::QDerivatives;

impl Information {
    /// The information of the free parameters under `c`
    /// (Constraint::contract); its `layout` is still θ's.
    pub(crate) fn constrained(&self, c: &Constraint) -> Information {
        let (observed, complete, score) = c.contract(&self.observed, &self.complete, &self.score);
        Information { observed, complete, score, loglik: self.loglik, layout: self.layout }
    }
}

/// `p` moved by `t` along `d` (a direction in the free parameters θ, with a
/// noise component's weight among them if `noise`), the dependent weight
/// following; `None` unless every weight stays in (0, 1) and every
/// component stays usable (mstep::check_component) on data of spread
/// `spread`.
pub fn moved(family: Family, p: &Params, noise: bool, d: &[f64], t: f64, spread: f64) -> Option<Params> {
    let k = p.k;
    let at = Layout { k, noise, df: p.estimates_df() };
    let mut q = *p;
    for j in 0..at.weights() {
        q.alpha[j] += t * d[at.alpha(j)];
    }
    let rest = 1.0 - q.alpha[..at.weights()].iter().sum::<f64>();
    if noise {
        q.noise = rest;
    } else {
        q.alpha[k - 1] = rest;
    }
    for m in 0..k {
        q.mu[m] += t * d[at.mu(m)];
        q.shape[m] += t * d[at.shape(m)];
        if at.df {
            q.df[m] += t * d[at.df(m)];
        }
    }
    let df_ok = !at.df || q.df[..k].iter().all(|&v| family.third_ok(v));
    let weights_ok = (q.alpha[..k].iter().all(|&a| a > 0.0 && a < 1.0) || (k == 1 && !noise))
        && (!noise || (q.noise > 0.0 && q.noise < 1.0));
    let usable = (0..k).all(|m| crate::mstep::check_component(family, q.mu[m], q.shape[m], spread).is_ok());
    (weights_ok && usable && df_ok).then_some(q)
}

/// The observed information, −∇² ℓ(θ), of the mixture `p` on data `xs` (in
/// the units of `p`; `noise`, the noise component's t(x) per observation,
/// if it has one): the free parameters in the order of `Layout`, a full
/// symmetric matrix, column-major.
pub fn observed_information(family: Family, xs: &[f64], noise: Option<&[f64]>, p: &Params) -> Vec<f64> {
    information(family, xs, noise, None, p).observed
}

/// What one pass over the data gives at a point θ, each in the order of
/// the module docs.
pub(crate) struct Information {
    /// The observed information −∇² ℓ(θ), full, column-major.
    pub observed: Vec<f64>,
    /// The diagonal of the complete-data information Σ_i Σ_m r_m g_m g_mᵀ
    /// (what the data would tell about each parameter if every
    /// observation's component were known): the yardstick for "no
    /// information left".
    pub complete: Vec<f64>,
    /// The score ∇ ℓ(θ).
    pub score: Vec<f64>,
    /// The log-likelihood ℓ(θ) without the parameter-free Σ h(x) (as
    /// Stats::ll).
    pub loglik: f64,
    /// Where the free parameters are (Layout).
    pub layout: Layout,
}

/// The observed information, the complete-data diagonal and the score of
/// the mixture `p` on data `xs` (in the units of `p`; `noise` as for
/// `observed_information`; `w`, each observation's weight, if they have
/// any: every sum, the log-likelihood's too, weighted).
pub(crate) fn information(
    family: Family,
    xs: &[f64],
    noise: Option<&[f64]>,
    w: Option<&[f64]>,
    p: &Params,
) -> Information {
    if family.has_third() {
        return information_third(family, xs, noise, w, p);
    }
    with_family!(family, F => information_of::<F>(xs, noise, w, p))
}

/// The information of `p` (fitted units) on the dataset `ds`: its data,
/// noise component and weights, the log-likelihood with Σ h, and with
/// truncation the value, score and Hessian of its −N log Q added, and
/// those of each censored group's count·log Q_j (truncation.rs).
pub(crate) fn on_dataset(family: Family, ds: &Prepared, p: &Params) -> Information {
    let mut info = information(family, &ds.x, ds.noise_terms(), ds.w.as_deref(), p);
    info.loglik += ds.h_sum;
    if let Some(w) = &ds.truncation {
        let noise = ds.noise_ln_mass(w);
        let QDerivatives { grad, hess, .. } = w.ln_q_derivatives(family, p, info.layout, noise);
        let n = ds.total;
        info.loglik -= n * w.ln_mixture_mass(family, p, noise);
        for (s, g) in info.score.iter_mut().zip(&grad) {
            *s -= n * g;
        }
        for (o, h) in info.observed.iter_mut().zip(&hess) {
            *o += n * h;
        }
    }
    // each censored group: count·log Q_j, a term of the data's (and its
    // complete-data information, the yardstick of "no information left")
    for g in &ds.censored {
        let noise = ds.noise_ln_mass(&g.window);
        let QDerivatives { grad, hess, complete } = g.window.ln_q_derivatives(family, p, info.layout, noise);
        info.loglik += g.count * g.window.ln_mixture_mass(family, p, noise);
        for (s, v) in info.score.iter_mut().zip(&grad) {
            *s += g.count * v;
        }
        for (o, h) in info.observed.iter_mut().zip(&hess) {
            *o -= g.count * h;
        }
        for (c, v) in info.complete.iter_mut().zip(complete) {
            *c += g.count * v;
        }
    }
    info
}

/// Observations per block of the pass: each block's per-observation terms
/// are computed component by component across the block and laid out
/// column by column, then summed column against column, so both the terms
/// and the sums run over contiguous memory (as the E-step does).
const BLOCK: usize = 64;

fn information_of<F: ComponentFamily>(xs: &[f64], noise: Option<&[f64]>, w: Option<&[f64]>, p: &Params) -> Information {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above). The code is
            // the same; plain multiplies and adds are never fused, so the
            // result is bitwise the same as the baseline build's.
            return unsafe { information_avx2::<F>(xs, noise, w, p) };
        }
    }
    information_blocks::<F>(xs, noise, w, p)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn information_avx2<F: ComponentFamily>(
    xs: &[f64],
    noise: Option<&[f64]>,
    w: Option<&[f64]>,
    p: &Params,
) -> Information {
    information_blocks::<F>(xs, noise, w, p)
}

/// The pass. With a noise component its responsibility takes row K of `r`
/// and, as the dependent weight, the place of α_K: ∂ log f / ∂α_j =
/// r_j/α_j − r_0/π_0 for every j ≤ K, and no mean or shape of its own.
/// With weights `w`, each observation's terms are weighted by its own.
#[inline(always)]
fn information_blocks<F: ComponentFamily>(
    xs: &[f64],
    noise: Option<&[f64]>,
    w: Option<&[f64]>,
    p: &Params,
) -> Information {
    let k = p.k;
    let at = Layout { k, noise: noise.is_some(), df: false };
    let np = at.len();
    let rows = k + at.noise as usize;
    let t = F::terms(p);
    // the dependent weight's row: α_K's, or the noise's
    let last = rows - 1;
    let log_noise = p.noise.ln();
    let mut consts = [[0.0; 6]; MAX_COMPONENTS];
    let mut inv_alpha = [0.0; MAX_COMPONENTS + 1];
    for m in 0..k {
        consts[m] = F::derivative_constants(p.mu[m], p.shape[m]);
        inv_alpha[m] = 1.0 / p.alpha[m];
    }
    if at.noise {
        inv_alpha[k] = 1.0 / p.noise;
    }
    // Σ g gᵀ (upper triangle, row a holding columns b ≥ a), Σ g, the (μ, s)
    // blocks Σ r (h + u uᵀ), and the complete-data diagonal
    let mut gg = vec![0.0; np * np];
    let mut g_sum = vec![0.0; np];
    let mut blocks = [[0.0; 3]; MAX_COMPONENTS];
    let mut complete = vec![0.0; np];
    let mut loglik = 0.0;
    // one block's terms, column by column: g (np columns), r (h + u uᵀ)
    // (3 per component), and the complete-data diagonal (np columns).
    let mut xb = [1.0f64; BLOCK];
    let mut gb = [1.0f64; BLOCK];
    let mut r = [[0.0f64; BLOCK]; MAX_COMPONENTS + 1];
    let mut g_cols = vec![[0.0f64; BLOCK]; np];
    let mut c_cols = vec![[0.0f64; BLOCK]; np];
    let mut h_cols = vec![[0.0f64; BLOCK]; 3 * k];
    // with weights: the block's, and a column of g times them
    let mut wb = [0.0f64; BLOCK];
    let mut wg = [0.0f64; BLOCK];
    for (i, xc) in xs.chunks(BLOCK).enumerate() {
        let len = xc.len();
        if let Some(w) = w {
            wb[..len].copy_from_slice(&w[i * BLOCK..i * BLOCK + len]);
        }
        xb[..len].copy_from_slice(xc);
        for j in 0..len {
            gb[j] = F::aux(xb[j]);
        }
        // responsibilities in the log domain, relative to the largest term:
        // no underflow however far x is from every component
        for m in 0..k {
            let (c, km, mu) = (t.c[m], t.k[m], t.mu[m]);
            for j in 0..len {
                r[m][j] = c - km * F::q(xb[j], gb[j], mu);
            }
        }
        if let Some(nt) = noise {
            for j in 0..len {
                r[k][j] = log_noise + nt[i * BLOCK + j];
            }
        }
        let mut top = r[0];
        for rm in &r[1..rows] {
            for j in 0..len {
                top[j] = if rm[j] > top[j] { rm[j] } else { top[j] };
            }
        }
        let mut total = [0.0f64; BLOCK];
        for rm in &mut r[..rows] {
            for j in 0..len {
                let e = exp_nonpos(rm[j] - top[j]);
                rm[j] = e;
                total[j] += e;
            }
        }
        let mut inv = [0.0f64; BLOCK];
        for j in 0..len {
            inv[j] = 1.0 / total[j];
            match w {
                None => loglik += top[j] + total[j].ln(),
                Some(_) => loglik += wb[j] * (top[j] + total[j].ln()),
            }
        }
        for rm in &mut r[..rows] {
            for j in 0..len {
                rm[j] *= inv[j];
            }
        }
        // ∂ log f / ∂α_j = r_j/α_j − r_K/α_K (r_0/π_0 with a noise component)
        let (r_k, ia_k) = (r[last], inv_alpha[last]);
        for a in 0..last {
            let ia = inv_alpha[a];
            for j in 0..len {
                let (r_j, r_l) = (r[a][j] * ia, r_k[j] * ia_k);
                g_cols[at.alpha(a)][j] = r_j - r_l;
                c_cols[at.alpha(a)][j] = r_j * ia + r_l * ia_k;
            }
        }
        for m in 0..k {
            let (i_mu, i_s) = (at.mu(m), at.shape(m));
            let (mu, c) = (t.mu[m], &consts[m]);
            for j in 0..len {
                let [u_mu, u_s, h_mumu, h_mus, h_ss] = F::derivatives(xb[j], gb[j], mu, c);
                let rm = r[m][j];
                g_cols[i_mu][j] = rm * u_mu;
                g_cols[i_s][j] = rm * u_s;
                h_cols[3 * m][j] = rm * (h_mumu + u_mu * u_mu);
                h_cols[3 * m + 1][j] = rm * (h_mus + u_mu * u_s);
                h_cols[3 * m + 2][j] = rm * (h_ss + u_s * u_s);
                c_cols[i_mu][j] = rm * u_mu * u_mu;
                c_cols[i_s][j] = rm * u_s * u_s;
            }
        }
        if w.is_some() {
            let wb = &wb[..len];
            for a in 0..np {
                let ga = &g_cols[a][..len];
                for (v, (g, w)) in wg.iter_mut().zip(ga.iter().zip(wb)) {
                    *v = g * w;
                }
                g_sum[a] += sum(&wg[..len]);
                complete[a] += dot(&c_cols[a][..len], wb);
                for b in a..np {
                    gg[a * np + b] += dot(&wg[..len], &g_cols[b][..len]);
                }
            }
            for (m, acc) in blocks[..k].iter_mut().enumerate() {
                for (e, v) in acc.iter_mut().enumerate() {
                    *v += dot(&h_cols[3 * m + e][..len], wb);
                }
            }
            continue;
        }
        for a in 0..np {
            let ga = &g_cols[a][..len];
            g_sum[a] += sum(ga);
            complete[a] += sum(&c_cols[a][..len]);
            for b in a..np {
                gg[a * np + b] += dot(ga, &g_cols[b][..len]);
            }
        }
        for (m, acc) in blocks[..k].iter_mut().enumerate() {
            for (e, v) in acc.iter_mut().enumerate() {
                *v += sum(&h_cols[3 * m + e][..len]);
            }
        }
    }
    let blocks: Vec<[f64; 6]> = blocks[..k].iter().map(|b| [b[0], b[1], b[2], 0.0, 0.0, 0.0]).collect();
    assemble(at, &gg, g_sum, &blocks, &inv_alpha, complete, loglik)
}

/// The observed information I = Σ g gᵀ − Σ ∇²f/f from a pass's sums: `gg`
/// (Σ g gᵀ, upper triangle by rows), `g_sum` (the score), per component the
/// upper triangle of Σ r (h + u uᵀ) over its own parameters (Layout::own:
/// (μμ, μs, ss) or (μμ, μs, μν, ss, sν, νν)), and 1/α per row.
fn assemble(
    at: Layout,
    gg: &[f64],
    g_sum: Vec<f64>,
    blocks: &[[f64; 6]],
    inv_alpha: &[f64],
    complete: Vec<f64>,
    loglik: f64,
) -> Information {
    let (k, np) = (at.k, at.len());
    let last = k - 1 + at.noise as usize;
    let mut info = vec![0.0; np * np];
    for a in 0..np {
        for b in a..np {
            info[a + np * b] = gg[a * np + b];
        }
    }
    for m in 0..k {
        let (own, count) = at.own(m);
        let mut e = 0;
        for a in 0..count {
            for b in a..count {
                info[own[a] + np * own[b]] -= blocks[m][e];
                e += 1;
            }
        }
        // α_j–(μ_m, s_m, ν_m): Σ score / α_m, with ∂α_m/∂α_j = δ_jm, or −1
        // for m = K when α_K is the dependent weight
        for j in 0..last {
            let da = if m == last {
                -1.0
            } else if m == j {
                1.0
            } else {
                continue;
            };
            for &i in &own[..count] {
                info[at.alpha(j) + np * i] -= da * g_sum[i] * inv_alpha[m];
            }
        }
    }
    for b in 0..np {
        for a in b + 1..np {
            info[a + np * b] = info[b + np * a];
        }
    }
    Information { observed: info, complete, score: g_sum, loglik, layout: at }
}

/// The pass for Student's t (student.rs), one observation at a time: the
/// same sums as information_blocks', with ν among a component's own
/// parameters when it is estimated; with weights `w`, each observation's
/// terms weighted by its own (a weight of 1 changes no bit).
/// The per-component constants of `information_third`'s responsibilities.
enum ThirdTerms {
    Student(student::Terms),
    ExGauss(crate::exgauss::Terms),
}

/// `information` for the families with a third parameter (ν or τ): one
/// observation at a time, each component's derivatives from student.rs or
/// exgauss.rs.
fn information_third(family: Family, xs: &[f64], noise: Option<&[f64]>, w: Option<&[f64]>, p: &Params) -> Information {
    let exgauss = family == Family::ExGauss;
    let k = p.k;
    let at = Layout { k, noise: noise.is_some(), df: p.estimates_df() };
    let np = at.len();
    let rows = k + at.noise as usize;
    let last = rows - 1;
    let terms = match exgauss {
        true => ThirdTerms::ExGauss(crate::exgauss::terms(p)),
        false => ThirdTerms::Student(student::terms(p)),
    };
    let log_noise = p.noise.ln();
    let mut consts = [[0.0; 7]; MAX_COMPONENTS];
    let mut inv_alpha = [0.0; MAX_COMPONENTS + 1];
    for m in 0..k {
        if !exgauss {
            consts[m] = student::derivative_constants(p.shape[m], p.df[m]);
        }
        inv_alpha[m] = 1.0 / p.alpha[m];
    }
    if at.noise {
        inv_alpha[k] = 1.0 / p.noise;
    }
    let mut gg = vec![0.0; np * np];
    let mut g_sum = vec![0.0; np];
    let mut complete = vec![0.0; np];
    let mut blocks = vec![[0.0; 6]; k];
    let mut loglik = 0.0;
    let mut g = vec![0.0; np];
    let mut r = [0.0; MAX_COMPONENTS + 1];
    let (mut z, mut log1p) = ([0.0; MAX_COMPONENTS], [0.0; MAX_COMPONENTS]);
    for (i, &x) in xs.iter().enumerate() {
        let noise_term = noise.map(|nt| log_noise + nt.get(i).copied().unwrap_or(f64::NEG_INFINITY));
        let wi = w.map_or(1.0, |w| w.get(i).copied().unwrap_or(0.0));
        loglik += wi
            * match &terms {
                ThirdTerms::Student(t) => student::responsibilities(x, t, k, noise_term, &mut r, &mut z, &mut log1p),
                ThirdTerms::ExGauss(t) => {
                    crate::exgauss::responsibilities(x, t, k, noise_term, &mut r, &mut z, &mut log1p)
                }
            };
        let (r_l, ia_l) = (r[last], inv_alpha[last]);
        for a in 0..last {
            let (r_j, r_k) = (r[a] * inv_alpha[a], r_l * ia_l);
            g[at.alpha(a)] = r_j - r_k;
            complete[at.alpha(a)] += wi * (r_j * inv_alpha[a] + r_k * ia_l);
        }
        for m in 0..k {
            let (grad, hess) = match exgauss {
                true => crate::exgauss::derivatives(x, p.mu[m], p.shape[m], p.df[m]),
                false => student::derivatives(x, p.mu[m], &consts[m]),
            };
            let (own, count) = at.own(m);
            let rm = r[m];
            // (μμ, μσ, μν, σσ, σν, νν) of h (ν: τ for the ex-Gaussian),
            // and the same pairs of u uᵀ
            let pairs: &[(usize, usize, usize)] = if count == 3 {
                &[(0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 1, 3), (1, 2, 4), (2, 2, 5)]
            } else {
                &[(0, 0, 0), (0, 1, 1), (1, 1, 3)]
            };
            for (e, &(a, b, h)) in pairs.iter().enumerate() {
                blocks[m][e] += wi * (rm * (hess[h] + grad[a] * grad[b]));
            }
            for a in 0..count {
                g[own[a]] = rm * grad[a];
                complete[own[a]] += wi * (rm * grad[a] * grad[a]);
            }
        }
        for a in 0..np {
            g_sum[a] += wi * g[a];
            for b in a..np {
                gg[a * np + b] += wi * (g[a] * g[b]);
            }
        }
    }
    assemble(at, &gg, g_sum, &blocks, &inv_alpha, complete, loglik)
}

/// The covariance of a fit's parameters `params` (in the data's own units)
/// and their standard errors, from the observed information on the prepared
/// dataset `ds` (with its noise component, if it has one); or why there
/// are none.
pub fn covariance(
    family: Family,
    ds: &Prepared,
    params: &Params,
    fixed: Option<&Fixed>,
) -> Result<Covariance, Singular> {
    covariance_from(ds, &on_dataset(family, ds, &ds.rescale(params)), fixed)
}

/// The covariance and standard errors, in the data's own units, from the
/// information `info` computed on the rescaled data of `ds`.
pub(crate) fn covariance_from(
    ds: &Prepared,
    info: &Information,
    fixed: Option<&Fixed>,
) -> Result<Covariance, Singular> {
    let np = info.complete.len();
    let at = info.layout;
    let (k, noise) = (at.k, at.noise);
    let v = match Constraint::of(at, ds.equal_scale, fixed) {
        Some(c) => c.invert(&info.observed, &info.complete)?,
        None => invert(&info.observed, &info.complete)?,
    };
    // the Jacobian's inverse: 1 for the weights, the scale for μ and for a
    // shape that is a scale (1 for one that is not: the gamma's), and for
    // the ex-Gaussian's τ (1 for the t's ν)
    let shape_unit = if with_family!(ds.family, F => F::SHAPE_IS_SCALE) { ds.scale } else { 1.0 };
    let third_unit = if ds.family == Family::ExGauss { ds.scale } else { 1.0 };
    let unit = |a: usize| {
        if a < at.mu(0) {
            1.0
        } else if a < at.shape(0) {
            ds.scale
        } else if a < at.df(0) {
            shape_unit
        } else {
            third_unit
        }
    };
    let mut vcov = vec![0.0; np * np];
    for b in 0..np {
        for a in 0..np {
            vcov[a + np * b] = v[a + np * b] * unit(a) * unit(b);
        }
    }
    // in the order of parameter_names: α_1..α_K, μ, shapes, ν, the noise
    let per = 3 + at.df as usize;
    let mut se = vec![0.0; per * k + noise as usize];
    let weights = at.weights();
    let mut dependent_var = 0.0;
    for j in 0..weights {
        se[j] = v[j + np * j].sqrt();
        dependent_var += (0..weights).map(|i| v[i + np * j]).sum::<f64>();
    }
    // Var(1 − Σ α_j) = 1ᵀ V_αα 1 (zero for K = 1 without noise: α_1 = 1 is
    // not estimated)
    let dependent = if noise { per * k } else { k - 1 };
    se[dependent] = dependent_var.max(0.0).sqrt();
    for m in 0..k {
        se[k + m] = v[at.mu(m) * (np + 1)].sqrt() * ds.scale;
        se[2 * k + m] = v[at.shape(m) * (np + 1)].sqrt() * shape_unit;
        if at.df {
            se[3 * k + m] = v[at.df(m) * (np + 1)].sqrt() * third_unit;
        }
    }
    // a fixed value has no standard error
    if let Some(f) = fixed {
        for m in 0..k {
            for (at, fixed) in [(m, f.alpha(m)), (k + m, f.mu(m)), (2 * k + m, f.shape(m))] {
                if fixed.is_some() {
                    se[at] = f64::NAN;
                }
            }
        }
    }
    Ok(Covariance { vcov, se })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dataset::prepare;
    use crate::family;
    use crate::limits::free_parameters;
    use rand::RngExt;
    use rand_pcg::Pcg64;

    pub(crate) fn params(alpha: &[f64], mu: &[f64], shape: &[f64]) -> Params {
        let mut p = Params::zeroed(alpha.len());
        p.alpha[..alpha.len()].copy_from_slice(alpha);
        p.mu[..mu.len()].copy_from_slice(mu);
        p.shape[..shape.len()].copy_from_slice(shape);
        p
    }

    /// n draws from a mixture: the inverse Gaussian by Michael, Schucany &
    /// Haas (1976), normals by Box–Muller.
    pub(crate) fn draw(family: Family, p: &Params, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Pcg64::new(seed as u128, 0xa02b_dbf7_bb3c_0a75);
        (0..n)
            .map(|_| {
                let u: f64 = rng.random_range(0.0..1.0);
                let mut m = 0;
                let mut acc = p.alpha[0];
                while u > acc && m + 1 < p.k {
                    m += 1;
                    acc += p.alpha[m];
                }
                let (u1, u2): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random_range(0.0..1.0));
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                match family {
                    Family::Normal | Family::Lognormal => p.mu[m] + p.shape[m] * z,
                    Family::StudentT => crate::student::draw(p.mu[m], p.shape[m], p.df[m], &mut rng),
                    Family::ExGauss => crate::exgauss::draw(p.mu[m], p.shape[m], p.df[m], &mut rng),
                    Family::Gamma => {
                        <crate::family::gamma::Gamma as ComponentFamily>::draw(p.mu[m], p.shape[m], &mut rng)
                    }
                    Family::InvGauss => {
                        let (mu, lambda, y) = (p.mu[m], p.shape[m], z * z);
                        let x = mu + mu * mu * y / (2.0 * lambda)
                            - mu / (2.0 * lambda) * (4.0 * mu * lambda * y + mu * mu * y * y).sqrt();
                        if rng.random_range(0.0..1.0) <= mu / (mu + x) {
                            x
                        } else {
                            mu * mu / x
                        }
                    }
                }
            })
            .collect()
    }

    /// θ → parameters, α_K = 1 − Σ α_j.
    fn from_theta(theta: &[f64], k: usize) -> Params {
        let mut p = Params::zeroed(k);
        let mut rest = 1.0;
        for (a, &t) in p.alpha.iter_mut().zip(&theta[..k - 1]) {
            *a = t;
            rest -= t;
        }
        p.alpha[k - 1] = rest;
        for m in 0..k {
            p.mu[m] = theta[Layout { k, noise: false, df: false }.mu(m)];
            p.shape[m] = theta[Layout { k, noise: false, df: false }.shape(m)];
        }
        p
    }

    fn to_theta(p: &Params) -> Vec<f64> {
        let k = p.k;
        let mut theta = vec![0.0; free_parameters(k, false, false)];
        theta[..k - 1].copy_from_slice(&p.alpha[..k - 1]);
        for m in 0..k {
            theta[Layout { k, noise: false, df: false }.mu(m)] = p.mu[m];
            theta[Layout { k, noise: false, df: false }.shape(m)] = p.shape[m];
        }
        theta
    }

    /// −∇²ℓ by central differences of the reference log-likelihood
    /// (family::log_likelihood), steps relative to each parameter, with one
    /// Richardson extrapolation (steps h and 2h): smaller steps would drown
    /// the smallest entries in the rounding of a sum of N terms.
    fn numerical_information(family: Family, xs: &[f64], p: &Params) -> Vec<f64> {
        let fine = differences(family, xs, p, 5e-4);
        let coarse = differences(family, xs, p, 1e-3);
        fine.iter().zip(&coarse).map(|(f, c)| (4.0 * f - c) / 3.0).collect()
    }

    fn differences(family: Family, xs: &[f64], p: &Params, rel: f64) -> Vec<f64> {
        let k = p.k;
        let theta = to_theta(p);
        let np = theta.len();
        let h: Vec<f64> = theta.iter().map(|t| rel * t.abs().max(1e-3)).collect();
        let f = |steps: &[(usize, f64)]| {
            let mut t = theta.clone();
            for &(a, s) in steps {
                t[a] += s;
            }
            family::log_likelihood(family, xs, &from_theta(&t, k))
        };
        let mut out = vec![0.0; np * np];
        for a in 0..np {
            for b in a..np {
                let v = if a == b {
                    (f(&[(a, h[a])]) - 2.0 * f(&[]) + f(&[(a, -h[a])])) / (h[a] * h[a])
                } else {
                    (f(&[(a, h[a]), (b, h[b])]) - f(&[(a, h[a]), (b, -h[b])]) - f(&[(a, -h[a]), (b, h[b])])
                        + f(&[(a, -h[a]), (b, -h[b])]))
                        / (4.0 * h[a] * h[b])
                };
                out[a + np * b] = -v;
                out[b + np * a] = -v;
            }
        }
        out
    }

    /// The largest |A − B|_ab relative to √(|B_aa B_bb|): a relative error
    /// that does not depend on the units of each parameter.
    fn worst(a: &[f64], b: &[f64], np: usize) -> f64 {
        let mut w: f64 = 0.0;
        for i in 0..np {
            for j in 0..np {
                let scale = (b[i + np * i] * b[j + np * j]).abs().sqrt();
                w = w.max((a[i + np * j] - b[i + np * j]).abs() / scale);
            }
        }
        w
    }

    /// Mixtures of 1 to 4 overlapping components, the data drawn from them,
    /// the parameters a little off (the identity holds anywhere, not only at
    /// the maximum).
    fn cases(family: Family) -> Vec<(Vec<f64>, Params)> {
        let alpha: [&[f64]; 4] = [&[1.0], &[0.35, 0.65], &[0.2, 0.5, 0.3], &[0.1, 0.3, 0.4, 0.2]];
        let mu: [&[f64]; 4] = [&[2.0], &[1.0, 2.5], &[0.8, 2.0, 4.0], &[0.5, 1.5, 3.0, 5.0]];
        let shape: [&[f64]; 4] = match family {
            Family::InvGauss => [&[3.0], &[8.0, 6.0], &[10.0, 12.0, 20.0], &[4.0, 15.0, 25.0, 40.0]],
            Family::Gamma => [&[2.5], &[9.0, 5.0], &[12.0, 10.0, 18.0], &[6.0, 14.0, 22.0, 30.0]],
            Family::Normal | Family::Lognormal | Family::StudentT | Family::ExGauss => {
                [&[0.7], &[0.3, 0.6], &[0.3, 0.5, 0.8], &[0.2, 0.4, 0.5, 0.9]]
            }
        };
        (0..4)
            .map(|i| {
                let p = params(alpha[i], mu[i], shape[i]);
                let xs = draw(family, &p, 400, 7 + i as u64);
                let mut off = p;
                for m in 0..p.k {
                    off.mu[m] *= 1.0 + 0.03 * (m as f64 - 1.0);
                    off.shape[m] *= 1.05;
                }
                (xs, off)
            })
            .collect()
    }

    /// The same cases at their maximum-likelihood estimates (EM from the
    /// truth, run to a standstill), where the information is positive definite.
    fn mle_cases(family: Family) -> Vec<(Vec<f64>, Params)> {
        cases(family)
            .into_iter()
            .map(|(xs, start)| {
                let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                let mut p = start;
                let mut previous = f64::NEG_INFINITY;
                for _ in 0..20_000 {
                    let st = crate::estep::e_step(family, &xs, &g, &p);
                    if st.ll - previous < 1e-13 {
                        break;
                    }
                    previous = st.ll;
                    p = crate::mstep::m_step(family, p.k, &st, xs.len() as f64, 1.0, false, None).unwrap();
                }
                (xs, p)
            })
            .collect()
    }

    #[test]
    fn the_pass_gives_the_e_steps_log_likelihood_and_a_central_difference_score() {
        for family in Family::FITTED {
            for (xs, p) in cases(family) {
                let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                let ll = |p: &Params| crate::estep::e_step(family, &xs, &g, p).ll;
                let info = information(family, &xs, None, None, &p);
                assert!((info.loglik - ll(&p)).abs() < 1e-11 * ll(&p).abs(), "{family:?} K = {}", p.k);
                // ∂ℓ/∂μ_m and ∂ℓ/∂s_m by central differences
                for m in 0..p.k {
                    for (at, field) in [
                        (Layout { k: p.k, noise: false, df: false }.mu(m), 0),
                        (Layout { k: p.k, noise: false, df: false }.shape(m), 1),
                    ] {
                        let (mut up, mut down) = (p, p);
                        let v = if field == 0 { &mut up.mu[m] } else { &mut up.shape[m] };
                        let h = 1e-6 * v.abs();
                        *v += h;
                        let v = if field == 0 { &mut down.mu[m] } else { &mut down.shape[m] };
                        *v -= h;
                        let numeric = (ll(&up) - ll(&down)) / (2.0 * h);
                        let scale = info.complete[at].sqrt();
                        assert!(
                            (info.score[at] - numeric).abs() < 1e-5 * scale,
                            "{family:?} K = {} parameter {at}: {} against {numeric}",
                            p.k,
                            info.score[at]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn information_matches_a_numerical_hessian() {
        for family in Family::FITTED {
            for (xs, p) in cases(family) {
                let np = free_parameters(p.k, false, false);
                let exact = observed_information(family, &xs, None, &p);
                let numeric = numerical_information(family, &xs, &p);
                let w = worst(&exact, &numeric, np);
                eprintln!("{family:?} K = {}: worst relative difference {w:.2e}", p.k);
                assert!(w < 1e-5, "{family:?} K = {}: worst relative difference {w:e}", p.k);
            }
        }
    }

    #[test]
    fn student_information_matches_a_numerical_hessian() {
        // θ = (α1, [α2,] μ, σ, ν[, noise dependent]) with ν estimated, and
        // (α1, μ, σ) with ν fixed; the reference log-likelihood from
        // student::log_density term by term
        let mut truth = params(&[0.35, 0.65], &[-1.0, 1.5], &[0.6, 1.0]);
        truth.df[..2].copy_from_slice(&[3.0, 9.0]);
        let mut rng = Pcg64::new(11, 3);
        let xs = crate::simulate::draw_mixture(Family::StudentT, &truth, None, 600, &mut rng);
        let mut off = truth;
        off.mu[0] += 0.05;
        off.shape[1] *= 1.04;
        off.df[0] *= 1.2;
        for fixed in [false, true] {
            let p = Params { df_fixed: fixed, ..off };
            let at = Layout { k: 2, noise: false, df: !fixed };
            let np = at.len();
            let to_params = |theta: &[f64]| {
                let mut q = p;
                q.alpha[0] = theta[0];
                q.alpha[1] = 1.0 - theta[0];
                for m in 0..2 {
                    q.mu[m] = theta[at.mu(m)];
                    q.shape[m] = theta[at.shape(m)];
                    if !fixed {
                        q.df[m] = theta[at.df(m)];
                    }
                }
                q
            };
            let mut theta = vec![p.alpha[0], p.mu[0], p.mu[1], p.shape[0], p.shape[1]];
            if !fixed {
                theta.extend_from_slice(&p.df[..2]);
            }
            let ll = |t: &[f64]| crate::family::log_likelihood(Family::StudentT, &xs, &to_params(t));
            let h: Vec<f64> = theta.iter().map(|t| 1e-4 * t.abs().max(0.1)).collect();
            let mut numeric = vec![0.0; np * np];
            for a in 0..np {
                for b in 0..np {
                    let f = |sa: f64, sb: f64| {
                        let mut t = theta.clone();
                        t[a] += sa;
                        t[b] += sb;
                        ll(&t)
                    };
                    numeric[a + np * b] =
                        -(f(h[a], h[b]) - f(h[a], -h[b]) - f(-h[a], h[b]) + f(-h[a], -h[b])) / (4.0 * h[a] * h[b]);
                }
            }
            let info = information(Family::StudentT, &xs, None, None, &p);
            assert!((info.loglik - ll(&theta)).abs() < 1e-9 * info.loglik.abs());
            let w = worst(&info.observed, &numeric, np);
            assert!(w < 1e-4, "fixed ν {fixed}: worst relative difference {w:e}");
        }
    }

    #[test]
    fn covariance_is_the_inverse_and_maps_to_the_data_units() {
        // Without rescaling, on the data as they are: the inverse of the
        // information in the original units must equal covariance()'s vcov,
        // which went through the rescaled data and the Jacobian (a shift and
        // a scale for the Normal, a scale for the inverse Gaussian).
        for family in Family::FITTED {
            for (xs, p) in mle_cases(family) {
                let k = p.k;
                let np = free_parameters(k, false, false);
                let ds = prepare(&xs, family).unwrap();
                let cov = covariance(family, &ds, &p, None).unwrap();
                let info = observed_information(family, &xs, None, &p);
                // V I = identity
                for a in 0..np {
                    for b in 0..np {
                        let vi: f64 = (0..np).map(|c| cov.vcov[a + np * c] * info[c + np * b]).sum();
                        let want = if a == b { 1.0 } else { 0.0 };
                        let scale = (cov.vcov[a + np * a] * info[b + np * b]).sqrt();
                        assert!((vi - want).abs() < 1e-8 * scale.max(1.0), "{family:?} K={k} ({a},{b}): {vi}");
                    }
                }
                // se: √diag, and α_K by the delta method
                for j in 0..k - 1 {
                    assert!((cov.se[j] - cov.vcov[j * (np + 1)].sqrt()).abs() <= 1e-15 * cov.se[j]);
                }
                let sum_alpha: f64 =
                    (0..k - 1).flat_map(|a| (0..k - 1).map(move |b| (a, b))).map(|(a, b)| cov.vcov[a + np * b]).sum();
                assert!((cov.se[k - 1] - sum_alpha.sqrt()).abs() <= 1e-12 * cov.se[k - 1].max(1e-300));
                for m in 0..k {
                    let (i, s) =
                        (Layout { k, noise: false, df: false }.mu(m), Layout { k, noise: false, df: false }.shape(m));
                    assert!((cov.se[k + m] / cov.vcov[i * (np + 1)].sqrt() - 1.0).abs() < 1e-12);
                    assert!((cov.se[2 * k + m] / cov.vcov[s * (np + 1)].sqrt() - 1.0).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn standard_errors_scale_with_the_data_at_any_scale() {
        // data × c, parameters × c (μ and s): α's standard errors unchanged,
        // μ's and s's multiplied by c, from 1e-300 to 1e300
        for family in Family::FITTED {
            for (xs, p) in mle_cases(family) {
                let k = p.k;
                let base = covariance(family, &prepare(&xs, family).unwrap(), &p, None).unwrap();
                for c in [1e-300, 3e-200, 1e-3, 7e3, 7e153, 1e300] {
                    let scaled: Vec<f64> = xs.iter().map(|v| v * c).collect();
                    let mut pc = p;
                    // the gamma's shape does not scale with the data
                    let shape_scales = with_family!(family, F => F::SHAPE_IS_SCALE);
                    for m in 0..k {
                        pc.mu[m] *= c;
                        if shape_scales {
                            pc.shape[m] *= c;
                        }
                    }
                    let cov = covariance(family, &prepare(&scaled, family).unwrap(), &pc, None).unwrap();
                    for (i, (a, b)) in cov.se.iter().zip(&base.se).enumerate() {
                        let want = if i < k || (i >= 2 * k && !shape_scales) { *b } else { b * c };
                        assert!((a - want).abs() <= 1e-9 * want, "{family:?} K={k} c={c} se[{i}]: {a} vs {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn identical_components_are_reported_singular() {
        for family in Family::FITTED {
            let truth = params(&[1.0], &[2.0], &[if family == Family::Normal { 0.5 } else { 6.0 }]);
            let xs = draw(family, &truth, 500, 3);
            let ds = prepare(&xs, family).unwrap();
            for alpha in [[0.5, 0.5], [0.3, 0.7]] {
                let p = params(&alpha, &[2.0, 2.0], &[truth.shape[0]; 2]);
                let why = covariance(family, &ds, &p, None).unwrap_err();
                assert_eq!(why, Singular::Collinear { at: 0 }, "{family:?} {alpha:?}");
                assert_eq!(
                    why.describe(family, 2, false, false),
                    "the observed information is singular (first at alpha1)"
                );
            }
            // the same data fitted by one component is fine
            let mut one = truth;
            one.mu[0] = xs.iter().sum::<f64>() / xs.len() as f64;
            assert!(covariance(family, &ds, &one, None).is_ok());
        }
    }

    #[test]
    fn away_from_a_maximum_the_information_is_indefinite() {
        // σ ten times the data's spread: ∂²ℓ/∂σ² = Σ (1/σ² − 3d²/σ⁴) > 0
        let truth = params(&[1.0], &[0.0], &[1.0]);
        let xs = draw(Family::Normal, &truth, 300, 5);
        let ds = prepare(&xs, Family::Normal).unwrap();
        let wide = params(&[1.0], &[0.0], &[10.0]);
        let why = covariance(Family::Normal, &ds, &wide, None).unwrap_err();
        assert_eq!(why, Singular::Indefinite { at: 1 });
        assert!(why.describe(Family::Normal, 1, false, false).contains("(first at sigma1)"));
        // and non-finite parameters give a non-finite information
        let nan = params(&[1.0], &[f64::NAN], &[1.0]);
        assert_eq!(covariance(Family::Normal, &ds, &nan, None).unwrap_err(), Singular::NotFinite);
    }

    #[test]
    fn parameter_names_follow_the_free_parameters() {
        use crate::params::parameter_names;
        assert_eq!(
            parameter_names(Family::InvGauss, 2, false, false),
            ["alpha1", "alpha2", "mu1", "mu2", "lambda1", "lambda2"]
        );
        assert_eq!(
            Singular::Collinear { at: 1 }.describe(Family::Normal, 2, false, false),
            "the observed information is singular (first at mu1)"
        );
        assert_eq!(
            Singular::Collinear { at: 4 }.describe(Family::Normal, 2, false, false),
            "the observed information is singular (first at sigma2)"
        );
        assert!(Singular::Collinear { at: 9 }.describe(Family::Normal, 2, false, false).contains("parameter 10"));
    }
}
