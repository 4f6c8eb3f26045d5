//! The E-step: one pass over a dataset that returns the log-likelihood of the
//! current parameters and the sufficient statistics of the next M-step,
//! without ever storing an N × M responsibility matrix.
//!
//! Observations are taken in blocks of `BLOCK` so that each stage (component
//! log-densities, their maximum, the exponentials, the weighted sums) is a
//! plain loop over a small array that the compiler vectorises. Per
//! observation: l_m = c_m − k_m q(x, μ_m) (the family's terms and q,
//! family/component.rs), lse = max + log Σ exp(l_m − max), r_m = exp(l_m −
//! max) / Σ. The log of each Σ is not taken one by one: Σ lies in [1, M], so
//! the product of a block's Σs stays finite and one logarithm per block
//! serves (the same value up to rounding). The loops are generic over the
//! family (ComponentFamily), monomorphised per family.

use crate::family::{with_family, ComponentFamily};
use crate::limits::{ESTEP_BLOCK as BLOCK, ESTEP_LANES as LANES, MAX_COMPONENTS};
use crate::mathx::{block_log_likelihood, exp_nonpos, exp_nonpos_all, weighted_block};
use crate::noise::Support;
use crate::params::{Family, Params, Stats};
use crate::{exgauss, student};

/// Log-likelihood (without Σh) and sufficient statistics of `p` on (x, g)
/// (on their common length, should they differ).
pub fn e_step(family: Family, x: &[f64], g: &[f64], p: &Params) -> Stats {
    // the vector passes read x and g in step: never past either's end
    let n = x.len().min(g.len());
    let (x, g) = (&x[..n], &g[..n]);
    if family.has_df() {
        return student::e_step(x, None, p);
    }
    if family == Family::ExGauss {
        return exgauss::e_step(x, None, None, p);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(pass) = vector_pass::<false, false>(family) {
        // SAFETY: vector_pass gives only a pass the CPU has the instructions
        // for (the feature checks in it), and x and g have the same length
        // (t is not read without a noise component, w without weights)
        if let Some(st) = unsafe { pass(x, g, &[], &[], p) } {
            return st;
        }
    }
    e_step_blocked(family, x, g, p)
}

/// A vector E-step (x, g, t, w, p) for 2 ≤ K ≤ 8, with a noise component
/// (its t(x) in t) for 1 ≤ K ≤ 8 (None for another K), with weights (w)
/// if it is a weighted pass; unsafe: the CPU must have its instructions,
/// and x, g (and with a noise component t, with weights w) the same length.
#[cfg(target_arch = "x86_64")]
pub(crate) type VectorPass = unsafe fn(&[f64], &[f64], &[f64], &[f64], &Params) -> Option<Stats>;

/// The widest vector instructions the E-step may use, in bits (512, 256,
/// or 0 for the block loops). All give the same bits, so this is for tests
/// and benchmarks; process-wide, as the CPU is: the glue sets it once, from
/// `BULKEM_CPU_VECTORS` ("avx2", "none"), before the first E-step.
static VECTOR_CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Caps the E-step's vector width at `bits`; only the first call of a
/// process counts, and only before the first E-step.
pub fn cap_vector_width(bits: usize) {
    let _ = VECTOR_CAP.set(bits);
}

/// The widest vector E-step this CPU has instructions for, if any, at most
/// VECTOR_CAP; with a noise component if `N`, weighted if `WT`.
#[cfg(target_arch = "x86_64")]
fn vector_pass<const N: bool, const WT: bool>(family: Family) -> Option<VectorPass> {
    use crate::{estep_avx2 as avx2, estep_avx512 as avx512};
    with_family!(family, F => match vector_width() {
        512 => Some(avx512::e_step::<F, N, WT> as VectorPass),
        256 => Some(avx2::e_step::<F, N, WT> as VectorPass),
        _ => None,
    })
}

/// The widest vector instructions this CPU has, at most VECTOR_CAP: 512,
/// 256 or 0 bits.
#[cfg(target_arch = "x86_64")]
fn vector_width() -> usize {
    static WIDTH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WIDTH.get_or_init(|| {
        let cap = VECTOR_CAP.get().copied().unwrap_or(512);
        let has = if std::arch::is_x86_feature_detected!("avx512f") {
            512
        } else if std::arch::is_x86_feature_detected!("avx2") {
            256
        } else {
            0
        };
        has.min(cap)
    })
}

/// e_step by the block loops, for any K and CPU (estep_avx512.rs and
/// estep_avx2.rs give K ≥ 2 the same bits, faster, where the CPU has
/// AVX-512F or AVX2).
pub fn e_step_blocked(family: Family, x: &[f64], g: &[f64], p: &Params) -> Stats {
    if family.has_df() {
        return student::e_step(&x[..x.len().min(g.len())], None, p);
    }
    if family == Family::ExGauss {
        return exgauss::e_step(&x[..x.len().min(g.len())], None, None, p);
    }
    with_family!(family, F => dispatch::<F, false, false>(x, g, &[], &[], p))
}

/// e_step of a mixture with a noise component (noise.rs): `t` holds each
/// observation's t(x), the noise's log-density less h, and `p.noise` its
/// weight; the noise is one more term of each observation's log-sum-exp,
/// the last. By the vector passes where the CPU has them (the same bits),
/// else the block loops.
pub fn e_step_noisy(family: Family, x: &[f64], g: &[f64], t: &[f64], p: &Params) -> Stats {
    let n = x.len().min(g.len()).min(t.len());
    let (x, g, t) = (&x[..n], &g[..n], &t[..n]);
    if family.has_df() {
        return student::e_step(x, Some(t), p);
    }
    if family == Family::ExGauss {
        return exgauss::e_step(x, Some(t), None, p);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(pass) = vector_pass::<true, false>(family) {
        // SAFETY: vector_pass gives only a pass the CPU has the instructions
        // for, and x, g and t have the same length
        if let Some(st) = unsafe { pass(x, g, t, &[], p) } {
            return st;
        }
    }
    e_step_noisy_blocked(family, x, g, t, p)
}

/// e_step_noisy by the block loops, for any K and CPU.
pub fn e_step_noisy_blocked(family: Family, x: &[f64], g: &[f64], t: &[f64], p: &Params) -> Stats {
    let n = x.len().min(g.len()).min(t.len());
    let (x, g, t) = (&x[..n], &g[..n], &t[..n]);
    if family.has_df() {
        return student::e_step(x, Some(t), p);
    }
    if family == Family::ExGauss {
        return exgauss::e_step(x, Some(t), None, p);
    }
    with_family!(family, F => dispatch::<F, true, false>(x, g, t, &[], p))
}

/// e_step (with a noise component if `t` is given) of data whose
/// observations have weights `w` (frequency or case weights, as long as
/// x): every sum weighted, S0 = Σ w r, S1 = Σ w r x, S2 = Σ w r g, and the
/// log-likelihood Σ w log f(x). By the block loops.
pub fn e_step_weighted(family: Family, x: &[f64], g: &[f64], t: Option<&[f64]>, w: &[f64], p: &Params) -> Stats {
    let n = x.len().min(g.len()).min(w.len()).min(t.map_or(usize::MAX, <[f64]>::len));
    let (x, g, w) = (&x[..n], &g[..n], &w[..n]);
    if family.has_df() {
        return student::e_step_weighted(x, t.map(|t| &t[..n]), w, p);
    }
    if family == Family::ExGauss {
        return exgauss::e_step(x, t.map(|t| &t[..n]), Some(w), p);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let pass = match t {
            Some(_) => vector_pass::<true, true>(family),
            None => vector_pass::<false, true>(family),
        };
        if let Some(pass) = pass {
            // SAFETY: vector_pass gives only a pass the CPU has the
            // instructions for, and x, g, w (and t) have the same length
            if let Some(st) = unsafe { pass(x, g, t.map_or(&[][..], |t| &t[..n]), w, p) } {
                return st;
            }
        }
    }
    e_step_weighted_blocked(family, x, g, t.map(|t| &t[..n]), w, p)
}

/// e_step_weighted by the block loops, for any K and CPU (the vector
/// passes give the same bits where the CPU has them).
pub fn e_step_weighted_blocked(
    family: Family,
    x: &[f64],
    g: &[f64],
    t: Option<&[f64]>,
    w: &[f64],
    p: &Params,
) -> Stats {
    let n = x.len().min(g.len()).min(w.len()).min(t.map_or(usize::MAX, <[f64]>::len));
    let (x, g, w) = (&x[..n], &g[..n], &w[..n]);
    if family.has_df() {
        return student::e_step_weighted(x, t.map(|t| &t[..n]), w, p);
    }
    if family == Family::ExGauss {
        return exgauss::e_step(x, t.map(|t| &t[..n]), Some(w), p);
    }
    match t {
        Some(t) => with_family!(family, F => dispatch::<F, true, true>(x, g, &t[..n], w, p)),
        None => with_family!(family, F => dispatch::<F, false, true>(x, g, &[], w, p)),
    }
}

fn dispatch<F: ComponentFamily, const NOISY: bool, const W: bool>(
    x: &[f64],
    g: &[f64],
    t: &[f64],
    w: &[f64],
    p: &Params,
) -> Stats {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above). The code is
            // the same; plain multiplies and adds are never fused, so the
            // result is bitwise the same as the baseline build's.
            return unsafe { e_step_avx2::<F, NOISY, W>(x, g, t, w, p) };
        }
    }
    e_step_blocks::<F, NOISY, W>(x, g, t, w, p)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn e_step_avx2<F: ComponentFamily, const NOISY: bool, const W: bool>(
    x: &[f64],
    g: &[f64],
    t: &[f64],
    w: &[f64],
    p: &Params,
) -> Stats {
    e_step_blocks::<F, NOISY, W>(x, g, t, w, p)
}

/// The block loops; with `NOISY`, row k of `l` is the noise's term
/// log π0 + t(x) (`t` is read only then); with `W`, each observation's
/// responsibilities and log-density weighted by its `wt` (read only then).
#[inline(always)]
fn e_step_blocks<F: ComponentFamily, const NOISY: bool, const W: bool>(
    x: &[f64],
    g: &[f64],
    nt: &[f64],
    wt: &[f64],
    p: &Params,
) -> Stats {
    let k = p.k;
    let rows = k + NOISY as usize;
    let terms = F::terms(p);
    let log_noise = p.noise.ln();
    let mut l = [[0.0f64; BLOCK]; MAX_COMPONENTS + 1];
    // Padding observations (x = g = 1) of the last, short block are
    // computed and then given weight 0; full blocks are read in place.
    let mut x_pad = [1.0f64; BLOCK];
    let mut g_pad = [1.0f64; BLOCK];
    let mut t_pad = [0.0f64; BLOCK];
    let mut s0 = [[0.0f64; LANES]; MAX_COMPONENTS + 1];
    let mut s1 = [[0.0f64; LANES]; MAX_COMPONENTS];
    let mut s2 = [[0.0f64; LANES]; MAX_COMPONENTS];
    let mut ll_max = [0.0f64; LANES];
    let mut ll_log = 0.0f64;

    for (i, (xc, gc)) in x.chunks(BLOCK).zip(g.chunks(BLOCK)).enumerate() {
        let len = xc.len();
        let (xb, gb): (&[f64; BLOCK], &[f64; BLOCK]) = match (xc.try_into(), gc.try_into()) {
            (Ok(xb), Ok(gb)) => (xb, gb),
            _ => {
                x_pad[..len].copy_from_slice(xc);
                g_pad[..len].copy_from_slice(gc);
                (&x_pad, &g_pad)
            }
        };
        let t = &terms;
        for m in 0..k {
            let (c, km, mu) = (t.c[m], t.k[m], t.mu[m]);
            for j in 0..BLOCK {
                l[m][j] = c - km * F::q(xb[j], gb[j], mu);
            }
        }
        if NOISY {
            let tc = &nt[i * BLOCK..i * BLOCK + len];
            t_pad[..len].copy_from_slice(tc);
            for j in 0..BLOCK {
                l[k][j] = log_noise + t_pad[j];
            }
        }
        let mut mx = [0.0f64; BLOCK];
        let mut sum = [0.0f64; BLOCK];
        // The exponentials have a loop of their own: inside the loop that
        // picks the larger term, the compiler turned that choice into a
        // branch, mispredicted for about half the observations (IG, K = 2:
        // 15.4 ns per observation before, 9.1 after; examples/estep_timing.rs).
        if rows == 2 && !NOISY {
            // one exponential per observation: the larger term's is exp(0) = 1
            let [l0, l1, ..] = &mut l;
            let mut e = [0.0f64; BLOCK];
            for j in 0..BLOCK {
                let first = l0[j] >= l1[j];
                mx[j] = if first { l0[j] } else { l1[j] };
                e[j] = if first { l1[j] - l0[j] } else { l0[j] - l1[j] };
            }
            exp_nonpos_all(&mut e);
            for j in 0..BLOCK {
                let first = l0[j] >= l1[j];
                sum[j] = 1.0 + e[j];
                l0[j] = if first { 1.0 } else { e[j] };
                l1[j] = if first { e[j] } else { 1.0 };
            }
        } else if k == 2 && NOISY {
            // two exponentials per observation, not three: the pair's
            // (their larger term's is 1) and the noise's against the pair's
            // larger term; whichever of these two is the largest is 1
            let [l0, l1, ln, ..] = &mut l;
            let (mut e, mut f) = ([0.0f64; BLOCK], [0.0f64; BLOCK]);
            for j in 0..BLOCK {
                let first = l0[j] >= l1[j];
                let pair = if first { l0[j] } else { l1[j] };
                e[j] = if first { l1[j] - l0[j] } else { l0[j] - l1[j] };
                let noise_top = ln[j] > pair;
                mx[j] = if noise_top { ln[j] } else { pair };
                f[j] = if noise_top { pair - ln[j] } else { ln[j] - pair };
            }
            exp_nonpos_all(&mut e);
            exp_nonpos_all(&mut f);
            for j in 0..BLOCK {
                let first = l0[j] >= l1[j];
                let noise_top = ln[j] > (if first { l0[j] } else { l1[j] });
                let big = if noise_top { f[j] } else { 1.0 };
                let small = e[j] * big;
                let noise = if noise_top { 1.0 } else { f[j] };
                sum[j] = (big + small) + noise;
                l0[j] = if first { big } else { small };
                l1[j] = if first { small } else { big };
                ln[j] = noise;
            }
        } else {
            mx = l[0];
            for lm in &l[1..rows] {
                for j in 0..BLOCK {
                    mx[j] = if lm[j] > mx[j] { lm[j] } else { mx[j] };
                }
            }
            for lm in &mut l[..rows] {
                for j in 0..BLOCK {
                    lm[j] -= mx[j];
                }
                exp_nonpos_all(lm);
                for j in 0..BLOCK {
                    sum[j] += lm[j];
                }
            }
        }
        let mut inv = [0.0f64; BLOCK];
        for j in 0..len {
            inv[j] = 1.0 / sum[j];
        }
        if W {
            weighted_block(&mx, &mut sum, &mut inv, &wt[i * BLOCK..i * BLOCK + len], &mut ll_max);
        } else {
            ll_log += block_log_likelihood(&mut mx, &mut sum, len, &mut ll_max);
        }
        for m in 0..k {
            let lm = &l[m];
            for j in (0..BLOCK).step_by(LANES) {
                for lane in 0..LANES {
                    let r = lm[j + lane] * inv[j + lane];
                    s0[m][lane] += r;
                    s1[m][lane] += r * xb[j + lane];
                    s2[m][lane] += r * gb[j + lane];
                }
            }
        }
        if NOISY {
            let lm = &l[k];
            for j in (0..BLOCK).step_by(LANES) {
                for lane in 0..LANES {
                    s0[k][lane] += lm[j + lane] * inv[j + lane];
                }
            }
        }
    }

    let fold = |a: &[f64; LANES]| (a[0] + a[1]) + (a[2] + a[3]);
    let mut st = Stats::zero();
    st.ll = fold(&ll_max) + ll_log;
    for m in 0..k {
        st.s0[m] = fold(&s0[m]);
        st.s1[m] = fold(&s1[m]);
        st.s2[m] = fold(&s2[m]);
    }
    if NOISY {
        st.s0_noise = fold(&s0[k]);
    }
    st
}

/// Posterior probabilities of the components for each observation (N × K,
/// column-major, as R stores a matrix; with a noise component over
/// `noise`, N × (K + 1), the noise's column last), by the E-step's
/// arithmetic: the responsibilities r_m = exp(l_m − max) / Σ exp(l_m' −
/// max). NaN for an observation outside the family's support or not
/// finite. `xs` are values of the data (a family fitted on the logarithms
/// takes them here).
pub fn posterior(family: Family, xs: &[f64], p: &Params, noise: Option<&Support>) -> Vec<f64> {
    let fitted: Vec<f64>;
    let zs = if family.on_log_scale() {
        // log of a value <= 0 is NaN or -inf: outside the support below
        fitted = xs.iter().map(|&x| if x > 0.0 { x.ln() } else { f64::NAN }).collect();
        &fitted
    } else {
        xs
    };
    let terms = noise.map(|s| s.terms(family, xs, zs, 1.0));
    if family.has_df() {
        return student::posterior(zs, p, terms.as_deref());
    }
    if family == Family::ExGauss {
        return exgauss::posterior(zs, p, terms.as_deref());
    }
    with_family!(family, F => posterior_of::<F>(zs, p, terms.as_deref()))
}

/// Σ over `xs` of the log of each observation's largest posterior
/// probability (`posterior`'s, the noise's column included): ICL's
/// classification term; with weights `w`, each observation's log weighted
/// by its own. Observations outside the support add nothing.
pub fn map_log_posterior(family: Family, xs: &[f64], p: &Params, noise: Option<&Support>, w: Option<&[f64]>) -> f64 {
    let z = posterior(family, xs, p, noise);
    let n = xs.len();
    let rows = z.len().checked_div(n).unwrap_or(0);
    let weight = |i: usize| w.map_or(1.0, |w| w.get(i).copied().unwrap_or(0.0));
    (0..n)
        .map(|i| (i, (0..rows).map(|m| z[m * n + i]).fold(f64::NAN, f64::max)))
        .filter(|(_, top)| top.is_finite())
        .map(|(i, top)| weight(i) * top.ln())
        .sum()
}

/// `posterior` for the family `F`, `terms` the noise's t(x) if any.
fn posterior_of<F: ComponentFamily>(xs: &[f64], p: &Params, terms: Option<&[f64]>) -> Vec<f64> {
    let k = p.k;
    let rows = k + terms.is_some() as usize;
    let t = F::terms(p);
    let mut out = vec![f64::NAN; xs.len() * rows];
    let mut l = [0.0f64; MAX_COMPONENTS + 1];
    for (i, &x) in xs.iter().enumerate() {
        if !F::in_support(x) {
            continue;
        }
        let g = F::aux(x);
        for m in 0..k {
            let q = F::q(x, g, t.mu[m]);
            l[m] = t.c[m] - t.k[m] * q;
        }
        if let Some(terms) = terms {
            l[k] = p.noise.ln() + terms[i];
        }
        let mx = l[..rows].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = l[..rows].iter().map(|&v| exp_nonpos(v - mx)).sum();
        for m in 0..rows {
            out[m * xs.len() + i] = exp_nonpos(l[m] - mx) / sum;
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::family;
    use crate::mathx::{self, log_sum_exp, EXP_FLOOR};

    fn same(a: &Stats, b: &Stats) -> bool {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        a.ll.to_bits() == b.ll.to_bits()
            && bits(&a.s0) == bits(&b.s0)
            && bits(&a.s1) == bits(&b.s1)
            && bits(&a.s2) == bits(&b.s2)
    }

    /// A vector pass (`ig`, `normal`: its two families) against the block
    /// loops, bit for bit: K 2-8, lengths around the edges of blocks and
    /// vectors, random parameters over wide ranges (far-away components
    /// underflow to EXP_FLOOR), ties; and None for K = 1. The caller has
    /// checked that the CPU has the pass's instructions.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn assert_pass_is_blocked(ig: VectorPass, normal: VectorPass) {
        let mut seed = 7u64;
        let mut unif = || {
            seed = mathx::mix64(seed);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [0usize, 1, 3, 4, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 200, 2000, 2001] {
            let xs: Vec<f64> = (0..n).map(|_| 1e-3 + 20.0 * unif() * unif()).collect();
            for k in 2..=MAX_COMPONENTS {
                for trial in 0..10 {
                    let mut p = Params::zeroed(k);
                    let mut total = 0.0;
                    for m in 0..k {
                        p.alpha[m] = 0.01 + unif();
                        total += p.alpha[m];
                        p.mu[m] = 10f64.powf(4.0 * unif() - 2.0);
                        p.shape[m] = 10f64.powf(6.0 * unif() - 3.0);
                    }
                    for m in 0..k {
                        p.alpha[m] /= total;
                    }
                    if trial == 0 {
                        // two equal components: ties in the maximum
                        p.mu[1] = p.mu[0];
                        p.shape[1] = p.shape[0];
                        p.alpha[1] = p.alpha[0];
                    }
                    for (family, pass) in [(Family::InvGauss, ig), (Family::Normal, normal)] {
                        let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                        // SAFETY: the caller checked the CPU
                        let fast = unsafe { pass(&xs, &g, &[], &[], &p) }.expect("K in 2..=8 has a vector pass");
                        let blocked = e_step_blocked(family, &xs, &g, &p);
                        assert!(same(&fast, &blocked), "n={n} k={k} trial={trial} {family:?}: {fast:?} vs {blocked:?}");
                    }
                }
            }
        }
        // K = 1 is left to the block loops
        // SAFETY: as above
        assert!(unsafe { ig(&[1.0], &[1.0], &[], &[], &Params::zeroed(1)) }.is_none());
    }

    /// A noisy vector pass against the noisy block loops, bit for bit: K
    /// 1-8, lengths around the edges of blocks and vectors, noise terms
    /// finite and −∞ (outside the support), weights down to 1e-300.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn assert_noisy_pass_is_blocked(ig: VectorPass, normal: VectorPass) {
        let mut seed = 11u64;
        let mut unif = || {
            seed = mathx::mix64(seed);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [0usize, 1, 3, 5, 8, 9, 31, 33, 63, 64, 65, 129, 200, 2001] {
            let xs: Vec<f64> = (0..n).map(|_| 1e-3 + 20.0 * unif() * unif()).collect();
            let t: Vec<f64> =
                xs.iter().map(|&x| if x > 15.0 { f64::NEG_INFINITY } else { -3.0 + 1.5 * x.ln() }).collect();
            for k in 1..=MAX_COMPONENTS {
                for trial in 0..6 {
                    let mut p = Params::zeroed(k);
                    let mut total = 0.0;
                    for m in 0..k {
                        p.alpha[m] = 0.01 + unif();
                        total += p.alpha[m];
                        p.mu[m] = 10f64.powf(4.0 * unif() - 2.0);
                        p.shape[m] = 10f64.powf(6.0 * unif() - 3.0);
                    }
                    p.noise = if trial == 0 { 1e-300 } else { 0.5 * unif() };
                    for m in 0..k {
                        p.alpha[m] *= (1.0 - p.noise) / total;
                    }
                    for (family, pass) in [(Family::InvGauss, ig), (Family::Normal, normal)] {
                        let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                        // SAFETY: the caller checked the CPU
                        let fast = unsafe { pass(&xs, &g, &t, &[], &p) }.expect("K in 1..=8 has a noisy pass");
                        let blocked = e_step_noisy_blocked(family, &xs, &g, &t, &p);
                        assert!(
                            same(&fast, &blocked) && fast.s0_noise.to_bits() == blocked.s0_noise.to_bits(),
                            "n={n} k={k} trial={trial} {family:?}: {fast:?} vs {blocked:?}"
                        );
                    }
                }
            }
        }
    }

    /// Weighted vector passes against the weighted block loops, bit for bit:
    /// each (family, noise, pass) of `passes` over lengths around the
    /// blocks' edges, K 1-8 (K = 1 only with noise), random parameters and
    /// weights (zeros and fractions among them).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn assert_weighted_pass_is_blocked(passes: [(Family, bool, VectorPass); 4]) {
        let mut seed = 11u64;
        let mut unif = || {
            seed = mathx::mix64(seed);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [0usize, 1, 3, 5, 8, 9, 31, 33, 63, 64, 65, 129, 200, 2001] {
            let xs: Vec<f64> = (0..n).map(|_| 1e-3 + 20.0 * unif() * unif()).collect();
            let t: Vec<f64> = xs.iter().map(|&x| -3.0 + 1.5 * x.ln()).collect();
            let w: Vec<f64> = (0..n).map(|i| if i % 7 == 3 { 0.0 } else { 3.0 * unif() }).collect();
            for k in 1..=MAX_COMPONENTS {
                for trial in 0..4 {
                    let mut p = Params::zeroed(k);
                    let mut total = 0.0;
                    for m in 0..k {
                        p.alpha[m] = 0.01 + unif();
                        total += p.alpha[m];
                        p.mu[m] = 10f64.powf(3.0 * unif() - 1.5);
                        p.shape[m] = 10f64.powf(4.0 * unif() - 2.0);
                    }
                    for (family, noisy, pass) in passes {
                        let mut q = p;
                        q.noise = if noisy { 0.05 + 0.4 * unif() } else { 0.0 };
                        for m in 0..k {
                            q.alpha[m] = p.alpha[m] * (1.0 - q.noise) / total;
                        }
                        let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                        let tt: &[f64] = if noisy { &t } else { &[] };
                        // SAFETY: the caller checked the CPU; x, g, t, w as long
                        let Some(fast) = (unsafe { pass(&xs, &g, tt, &w, &q) }) else {
                            assert!(k == 1 && !noisy, "k={k} noisy={noisy} has a pass");
                            continue;
                        };
                        let blocked = e_step_weighted_blocked(family, &xs, &g, noisy.then_some(&t[..]), &w, &q);
                        assert!(
                            same(&fast, &blocked) && fast.s0_noise.to_bits() == blocked.s0_noise.to_bits(),
                            "n={n} k={k} trial={trial} {family:?} noise={noisy}: {fast:?} vs {blocked:?}"
                        );
                    }
                }
            }
        }
    }

    /// A vector exponential of W values against mathx::exp_nonpos, bit for
    /// bit, over 100,000 values in [-710, 0] and the edges.
    pub(crate) fn assert_exp_is_exp_nonpos<const W: usize>(exp: impl Fn([f64; W]) -> [f64; W]) {
        let mut xs: Vec<f64> = (0..100_000).map(|i| -(i as f64) * 0.0071).collect();
        xs.extend([
            0.0,
            -0.0,
            -1e-300,
            EXP_FLOOR,
            EXP_FLOOR - 1e-9,
            -709.0,
            -745.2,
            -1e300,
            f64::NEG_INFINITY,
            f64::NAN,
        ]);
        for c in xs.chunks(W) {
            let mut v = [0.0; W];
            v[..c.len()].copy_from_slice(c);
            let out = exp(v);
            for i in 0..c.len() {
                let want = mathx::exp_nonpos(v[i]);
                assert!(
                    out[i].to_bits() == want.to_bits() || (out[i].is_nan() && want.is_nan()),
                    "{}: {} vs {}",
                    v[i],
                    out[i],
                    want
                );
            }
        }
    }

    /// The E-step written out per observation with libm and an explicit
    /// log-sum-exp: the reference the blocked version must match.
    fn reference(family: Family, xs: &[f64], p: &Params) -> Stats {
        let mut st = Stats::zero();
        let mut l = [0.0; MAX_COMPONENTS];
        for &x in xs {
            for m in 0..p.k {
                l[m] = p.alpha[m].ln() + family::log_density(family, x, p.mu[m], p.shape[m]) - family::log_h(family, x);
            }
            let lse = log_sum_exp(&l[..p.k]);
            st.ll += lse;
            for m in 0..p.k {
                let r = (l[m] - lse).exp();
                st.s0[m] += r;
                st.s1[m] += r * x;
                st.s2[m] += r * family::aux(family, x);
            }
        }
        st
    }

    fn params(alpha: &[f64], mu: &[f64], shape: &[f64]) -> Params {
        let mut p = Params::zeroed(alpha.len());
        p.alpha[..alpha.len()].copy_from_slice(alpha);
        p.mu[..mu.len()].copy_from_slice(mu);
        p.shape[..shape.len()].copy_from_slice(shape);
        p
    }

    #[test]
    fn blocked_e_step_matches_the_reference() {
        // lengths around the block size, 1 to 8 components, both families
        for n in [1usize, 3, 63, 64, 65, 200, 1031] {
            let xs: Vec<f64> = (0..n).map(|i| 0.05 + ((i * 7919) % 1000) as f64 / 250.0).collect();
            for k in 1..=MAX_COMPONENTS {
                let alpha: Vec<f64> = (0..k).map(|m| (m + 1) as f64).collect();
                let total: f64 = alpha.iter().sum();
                let alpha: Vec<f64> = alpha.iter().map(|a| a / total).collect();
                let mu: Vec<f64> = (0..k).map(|m| 0.3 + 0.5 * m as f64).collect();
                let shape: Vec<f64> = (0..k).map(|m| 0.4 + 0.3 * m as f64).collect();
                let p = params(&alpha, &mu, &shape);
                for family in [Family::InvGauss, Family::Normal] {
                    let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                    let fast = e_step(family, &xs, &g, &p);
                    let slow = reference(family, &xs, &p);
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
                    assert!(close(fast.ll, slow.ll), "n={n} k={k} {family:?}: {} vs {}", fast.ll, slow.ll);
                    for m in 0..k {
                        assert!(close(fast.s0[m], slow.s0[m]), "s0 n={n} k={k} m={m}");
                        assert!(close(fast.s1[m], slow.s1[m]), "s1 n={n} k={k} m={m}");
                        assert!(close(fast.s2[m], slow.s2[m]), "s2 n={n} k={k} m={m}");
                    }
                    // responsibilities sum to one per observation
                    let s0: f64 = fast.s0[..k].iter().sum();
                    assert!((s0 - n as f64).abs() < 1e-10 * n as f64);
                }
            }
        }
    }

    #[test]
    fn integer_weights_are_repeated_observations() {
        // every family, with and without a noise component, K 1 to 4,
        // lengths around the block size: the weighted pass's sums and
        // log-likelihood are the expanded data's (to rounding), and zero
        // weights leave observations out
        for n in [1usize, 5, 63, 64, 65, 130] {
            let xs: Vec<f64> = (0..n).map(|i| 0.05 + ((i * 7919) % 1000) as f64 / 250.0).collect();
            let w: Vec<f64> = (0..n).map(|i| (i % 4) as f64).collect();
            let expanded: Vec<usize> = (0..n).flat_map(|i| std::iter::repeat_n(i, i % 4)).collect();
            let t_of = |v: &[f64]| v.iter().map(|x| -0.3 - 0.1 * x).collect::<Vec<f64>>();
            for k in 1..=4 {
                let alpha = vec![1.0 / k as f64; k];
                let mu: Vec<f64> = (0..k).map(|m| 0.3 + 0.7 * m as f64).collect();
                let shape: Vec<f64> = (0..k).map(|m| 0.5 + 0.4 * m as f64).collect();
                for family in [Family::InvGauss, Family::Normal, Family::Gamma, Family::StudentT] {
                    let mut p = params(&alpha, &mu, &shape);
                    if family.has_df() {
                        p.df[..k].iter_mut().enumerate().for_each(|(m, v)| *v = 3.0 + 5.0 * m as f64);
                    }
                    let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                    let ex: Vec<f64> = expanded.iter().map(|&i| xs[i]).collect();
                    let eg: Vec<f64> = expanded.iter().map(|&i| g[i]).collect();
                    for noisy in [false, true] {
                        let mut q = p;
                        if noisy {
                            q.noise = 0.1;
                            q.alpha[..k].iter_mut().for_each(|a| *a *= 0.9);
                        }
                        let (t, et) = (t_of(&xs), t_of(&ex));
                        let weighted = e_step_weighted(family, &xs, &g, noisy.then_some(&t[..]), &w, &q);
                        let plain =
                            if noisy { e_step_noisy(family, &ex, &eg, &et, &q) } else { e_step(family, &ex, &eg, &q) };
                        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
                        let what = format!("n={n} k={k} {family:?} noise={noisy}");
                        assert!(close(weighted.ll, plain.ll), "{what}: {} vs {}", weighted.ll, plain.ll);
                        assert!(close(weighted.s0_noise, plain.s0_noise), "{what}");
                        for m in 0..k {
                            for (a, b) in [
                                (weighted.s0[m], plain.s0[m]),
                                (weighted.s1[m], plain.s1[m]),
                                (weighted.s2[m], plain.s2[m]),
                                (weighted.su[m], plain.su[m]),
                                (weighted.s_df[m], plain.s_df[m]),
                            ] {
                                assert!(close(a, b), "{what} m={m}: {a} vs {b}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_noise_is_one_more_term_of_each_observation() {
        // e_step_noisy against the reference log-sum-exp with the noise's
        // l_0 = log π0 + t(x) beside the components', t = −∞ for some
        use crate::noise::Support;
        let xs: Vec<f64> = (0..203).map(|i| 0.05 + ((i * 7919) % 1000) as f64 / 200.0).collect();
        let support = Support::new(0.5, 4.0).expect("a support");
        for family in Family::FITTED {
            for k in 1..=MAX_COMPONENTS {
                let mut p = params(
                    &vec![0.9 / k as f64; k],
                    &(0..k).map(|m| 0.4 + 0.6 * m as f64).collect::<Vec<_>>(),
                    &(0..k).map(|m| 0.5 + 0.4 * m as f64).collect::<Vec<_>>(),
                );
                p.noise = 0.1;
                let g: Vec<f64> = xs.iter().map(|&x| family::aux(family, x)).collect();
                let t = support.terms(family, &xs, &xs, 1.0);
                let fast = e_step_noisy(family, &xs, &g, &t, &p);
                let mut slow = Stats::zero();
                for (i, &x) in xs.iter().enumerate() {
                    let mut l: Vec<f64> = (0..k)
                        .map(|m| {
                            p.alpha[m].ln() + family::log_density(family, x, p.mu[m], p.shape[m])
                                - family::log_h(family, x)
                        })
                        .collect();
                    l.push(p.noise.ln() + t[i]);
                    let lse = log_sum_exp(&l);
                    slow.ll += lse;
                    for m in 0..k {
                        let r = (l[m] - lse).exp();
                        slow.s0[m] += r;
                        slow.s1[m] += r * x;
                        slow.s2[m] += r * g[i];
                    }
                    slow.s0_noise += (l[k] - lse).exp();
                }
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + b.abs());
                assert!(close(fast.ll, slow.ll), "{family:?} k={k}: {} vs {}", fast.ll, slow.ll);
                assert!(close(fast.s0_noise, slow.s0_noise), "{family:?} k={k}");
                for m in 0..k {
                    assert!(close(fast.s0[m], slow.s0[m]) && close(fast.s1[m], slow.s1[m]));
                    assert!(close(fast.s2[m], slow.s2[m]), "{family:?} k={k} m={m}");
                }
                let total: f64 = fast.s0[..k].iter().sum::<f64>() + fast.s0_noise;
                assert!((total - xs.len() as f64).abs() < 1e-9);
                // outside the support no observation is noise
                assert!(fast.s0_noise < xs.iter().filter(|&&x| support.contains(x)).count() as f64);
            }
        }
    }

    #[test]
    fn unequal_lengths_use_the_common_prefix() {
        // the vector passes must not read past the shorter slice
        let xs: Vec<f64> = (0..70).map(|i| 0.1 + i as f64 / 10.0).collect();
        let g: Vec<f64> = xs.iter().map(|&x| 1.0 / x).collect();
        let p = params(&[0.4, 0.6], &[1.0, 4.0], &[2.0, 5.0]);
        let short = e_step(Family::InvGauss, &xs[..67], &g[..67], &p);
        assert_eq!(e_step(Family::InvGauss, &xs, &g[..67], &p), short);
        assert_eq!(e_step(Family::InvGauss, &xs[..67], &g, &p), short);
    }

    #[test]
    fn posteriors_are_the_reference_responsibilities() {
        let p = params(&[0.3, 0.7], &[1.0, 3.0], &[30.0, 0.2]);
        let xs = [0.5, 1.0, 2.0, 9.0, -1.0];
        let post = posterior(Family::InvGauss, &xs, &p, None);
        for (i, &x) in xs.iter().enumerate().take(4) {
            let l: Vec<f64> = (0..2)
                .map(|m| p.alpha[m].ln() + family::log_density(Family::InvGauss, x, p.mu[m], p.shape[m]))
                .collect();
            let lse = log_sum_exp(&l);
            for m in 0..2 {
                assert!((post[m * 5 + i] - (l[m] - lse).exp()).abs() < 1e-14);
            }
        }
        assert!(post[4].is_nan() && post[9].is_nan());
    }

    #[test]
    fn far_away_observations_do_not_underflow() {
        // Every component gives x = 50 a density far below the smallest double;
        // the log domain keeps the log-likelihood finite and exact.
        let p = params(&[0.5, 0.5], &[0.0, 1.0], &[0.01, 0.02]);
        let xs = [50.0, 0.5];
        let g: Vec<f64> = xs.iter().map(|x| x * x).collect();
        let fast = e_step(Family::Normal, &xs, &g, &p);
        let slow = reference(Family::Normal, &xs, &p);
        assert!(fast.ll.is_finite() && fast.ll < -1e6);
        assert!((fast.ll - slow.ll).abs() < 1e-12 * slow.ll.abs());
        assert!((fast.s0[1] + fast.s0[0] - 2.0).abs() < 1e-12);
    }
}
