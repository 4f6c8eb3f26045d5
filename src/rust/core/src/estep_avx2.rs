//! The E-step for 2 to 8 components in AVX2 vectors, four observations at a
//! time.
//!
//! estep.rs's block loops leave each stage's array (terms, maximum,
//! exponential, sum, reciprocal) in memory for the next stage, and the
//! compiler gathers the exponential's inputs value by value. Here each
//! observation's values stay in registers from the load of x to the sums.
//! Every value gets the operations estep.rs gives it, in the same order, with
//! plain (unfused) multiplies and adds, and vector lane i is estep.rs's
//! accumulator lane i, so the result is the same bit for bit (tests below).
//! A CPU with AVX-512F runs estep_avx512.rs instead, the same at twice the
//! width.

use std::arch::x86_64::*;

use crate::family::ComponentFamily;
use crate::limits::{ESTEP_BLOCK as BLOCK, ESTEP_LANES as LANES};
use crate::mathx::{ln_ge1_all, EXP2_TABLE, EXP_FLOOR, LN2_32_HI, LN2_32_LO, LOG2E_32, ROUND_SHIFT};
use crate::params::{Params, Stats};

// the sums are 4-wide vectors, lane i being the block loops' lane i
const _: () = assert!(LANES == 4);

/// The E-step in AVX2 vectors for 2 ≤ p.k ≤ 8, and with a noise
/// component (`N`; `t` its t(x) per observation, estep.rs's row K) for
/// 1 ≤ p.k ≤ 8; None for another K.
///
/// # Safety
/// The CPU must support AVX2, and `x`, `g` (and with `N`, `t`) must
/// have the same length.
#[target_feature(enable = "avx2")]
pub unsafe fn e_step<F: ComponentFamily, const N: bool, const WT: bool>(
    x: &[f64],
    g: &[f64],
    t: &[f64],
    w: &[f64],
    p: &Params,
) -> Option<Stats> {
    // W groups of four observations in flight, the fastest of 2, 4, 8 and 16
    // on a Zen 5 core (ns per observation against the block loops: IG K = 2
    // 1.65 / 2.23, K = 3 3.76 / 4.45, K = 4 5.08 / 5.71, K = 8 10.0 / 10.8;
    // examples/estep_timing.rs). Wider groups spill out of the 16 vector
    // registers.
    Some(match p.k {
        1 if N => pass::<F, N, WT, 1, 8>(x, g, t, w, p),
        2 => pass::<F, N, WT, 2, 8>(x, g, t, w, p),
        3 => pass::<F, N, WT, 3, 8>(x, g, t, w, p),
        4 => pass::<F, N, WT, 4, 4>(x, g, t, w, p),
        5 => pass::<F, N, WT, 5, 4>(x, g, t, w, p),
        6 => pass::<F, N, WT, 6, 4>(x, g, t, w, p),
        7 => pass::<F, N, WT, 7, 4>(x, g, t, w, p),
        8 => pass::<F, N, WT, 8, 4>(x, g, t, w, p),
        _ => return None,
    })
}

/// The pass for K components, W groups of four observations at a time.
#[inline(always)]
unsafe fn pass<F: ComponentFamily, const N: bool, const WT: bool, const K: usize, const W: usize>(
    x: &[f64],
    g: &[f64],
    nt: &[f64],
    wt: &[f64],
    p: &Params,
) -> Stats {
    debug_assert_eq!(p.k, K);
    let t = F::terms(p);
    let log_noise = _mm256_set1_pd(p.noise.ln());
    let c: [__m256d; K] = std::array::from_fn(|m| _mm256_set1_pd(t.c[m]));
    let k: [__m256d; K] = std::array::from_fn(|m| _mm256_set1_pd(t.k[m]));
    let mu: [__m256d; K] = std::array::from_fn(|m| _mm256_set1_pd(t.mu[m]));
    let one = _mm256_set1_pd(1.0);
    let zero = _mm256_setzero_pd();
    let mut s0 = [zero; K];
    let mut s1 = [zero; K];
    let mut s2 = [zero; K];
    let mut ll_max = zero;
    let mut ll_log = 0.0f64;
    let mut x_pad = [1.0f64; BLOCK];
    let mut g_pad = [1.0f64; BLOCK];
    let mut t_pad = [0.0f64; BLOCK];
    // with WT, the block's weights (padding 0)
    let mut w_pad = [0.0f64; BLOCK];
    let mut s0n = zero;

    for (b, (xc, gc)) in x.chunks(BLOCK).zip(g.chunks(BLOCK)).enumerate() {
        let len = xc.len();
        // the noise's t(x) of the block (padding 0, given weight 0)
        if N {
            t_pad[..len].copy_from_slice(&nt[b * BLOCK..b * BLOCK + len]);
        }
        if WT {
            w_pad[..len].copy_from_slice(&wt[b * BLOCK..b * BLOCK + len]);
            w_pad[len..].fill(0.0);
        }
        let (xb, gb): (&[f64], &[f64]) = if len == BLOCK {
            (xc, gc)
        } else {
            // as estep.rs: padding observations x = g = 1, given weight 0
            x_pad[..len].copy_from_slice(xc);
            g_pad[..len].copy_from_slice(gc);
            (&x_pad, &g_pad)
        };
        let mut prod = one;
        for j in (0..BLOCK).step_by(4 * W) {
            let mut xv = [zero; W];
            let mut gv = [zero; W];
            // the terms l_m, then (in place) the responsibilities' numerators
            let mut l = [[zero; W]; K];
            let mut mx = [zero; W];
            let mut sum = [zero; W];
            let mut ln = [zero; W];
            for w in 0..W {
                // SAFETY: j + 4W <= BLOCK = xb.len() = gb.len()
                xv[w] = _mm256_loadu_pd(xb.as_ptr().add(j + 4 * w));
                gv[w] = _mm256_loadu_pd(gb.as_ptr().add(j + 4 * w));
                for m in 0..K {
                    l[m][w] = term::<F>(xv[w], gv[w], c[m], k[m], mu[m]);
                }
                if N {
                    // SAFETY: as above, t_pad is BLOCK long
                    ln[w] = _mm256_add_pd(log_noise, _mm256_loadu_pd(t_pad.as_ptr().add(j + 4 * w)));
                }
            }
            if K == 2 && !N {
                // estep.rs's one exponential per observation: the larger
                // term's is exp(0) = 1
                let mut first = [zero; W];
                let mut d = [zero; W];
                for w in 0..W {
                    let (l0, l1) = (l[0][w], l[1][w]);
                    first[w] = _mm256_cmp_pd::<_CMP_GE_OQ>(l0, l1);
                    mx[w] = _mm256_blendv_pd(l1, l0, first[w]);
                    d[w] = _mm256_blendv_pd(_mm256_sub_pd(l0, l1), _mm256_sub_pd(l1, l0), first[w]);
                }
                let e = exp_nonpos(d);
                for w in 0..W {
                    sum[w] = _mm256_add_pd(one, e[w]);
                    l[0][w] = _mm256_blendv_pd(e[w], one, first[w]);
                    l[1][w] = _mm256_blendv_pd(one, e[w], first[w]);
                }
            } else if K == 2 && N {
                // estep.rs's two exponentials: the pair's and the noise's
                // against the pair's larger term
                let mut first = [zero; W];
                let mut top = [zero; W];
                let mut d = [zero; W];
                let mut dn = [zero; W];
                for w in 0..W {
                    let (l0, l1) = (l[0][w], l[1][w]);
                    first[w] = _mm256_cmp_pd::<_CMP_GE_OQ>(l0, l1);
                    let pair = _mm256_blendv_pd(l1, l0, first[w]);
                    d[w] = _mm256_blendv_pd(_mm256_sub_pd(l0, l1), _mm256_sub_pd(l1, l0), first[w]);
                    top[w] = _mm256_cmp_pd::<_CMP_GT_OQ>(ln[w], pair);
                    mx[w] = _mm256_blendv_pd(pair, ln[w], top[w]);
                    dn[w] = _mm256_blendv_pd(_mm256_sub_pd(ln[w], pair), _mm256_sub_pd(pair, ln[w]), top[w]);
                }
                let e = exp_nonpos(d);
                let f = exp_nonpos(dn);
                for w in 0..W {
                    let big = _mm256_blendv_pd(one, f[w], top[w]);
                    let small = _mm256_mul_pd(e[w], big);
                    let noise = _mm256_blendv_pd(f[w], one, top[w]);
                    sum[w] = _mm256_add_pd(_mm256_add_pd(big, small), noise);
                    l[0][w] = _mm256_blendv_pd(small, big, first[w]);
                    l[1][w] = _mm256_blendv_pd(big, small, first[w]);
                    ln[w] = noise;
                }
            } else {
                // estep.rs's `if l > mx { l } else { mx }`: max returns its
                // second operand when the first is not greater, NaN included
                mx = l[0];
                for lm in &l[1..] {
                    for w in 0..W {
                        mx[w] = _mm256_max_pd(lm[w], mx[w]);
                    }
                }
                if N {
                    for w in 0..W {
                        mx[w] = _mm256_max_pd(ln[w], mx[w]);
                    }
                }
                for lm in &mut l {
                    for w in 0..W {
                        lm[w] = _mm256_sub_pd(lm[w], mx[w]);
                    }
                    *lm = exp_nonpos(*lm);
                    for w in 0..W {
                        sum[w] = _mm256_add_pd(sum[w], lm[w]);
                    }
                }
                if N {
                    for w in 0..W {
                        ln[w] = _mm256_sub_pd(ln[w], mx[w]);
                    }
                    ln = exp_nonpos(ln);
                    for w in 0..W {
                        sum[w] = _mm256_add_pd(sum[w], ln[w]);
                    }
                }
            }
            for w in 0..W {
                let mut inv = _mm256_div_pd(one, sum[w]);
                let (mut mx, mut sum) = (mx[w], sum[w]);
                let at = j + 4 * w;
                if at + 4 > len {
                    let valid = _mm256_cmp_pd::<_CMP_LT_OQ>(lane_index(at), _mm256_set1_pd(len as f64));
                    mx = _mm256_and_pd(mx, valid);
                    sum = _mm256_blendv_pd(one, sum, valid);
                    inv = _mm256_and_pd(inv, valid);
                }
                if WT {
                    // estep.rs's weighted loops: w (mx + log Σ) per
                    // observation, and 1/Σ becomes w/Σ
                    // SAFETY: at + 4 <= BLOCK = w_pad.len()
                    let wv = _mm256_loadu_pd(w_pad.as_ptr().add(at));
                    let mut logs = [0.0f64; 4];
                    _mm256_storeu_pd(logs.as_mut_ptr(), sum);
                    ln_ge1_all(&mut logs);
                    let term = _mm256_mul_pd(wv, _mm256_add_pd(mx, _mm256_loadu_pd(logs.as_ptr())));
                    ll_max = _mm256_add_pd(ll_max, term);
                    inv = _mm256_mul_pd(inv, wv);
                } else {
                    prod = _mm256_mul_pd(prod, sum);
                    ll_max = _mm256_add_pd(ll_max, mx);
                }
                if N {
                    s0n = _mm256_add_pd(s0n, _mm256_mul_pd(ln[w], inv));
                }
                for m in 0..K {
                    let r = _mm256_mul_pd(l[m][w], inv);
                    s0[m] = _mm256_add_pd(s0[m], r);
                    s1[m] = _mm256_add_pd(s1[m], _mm256_mul_pd(r, xv[w]));
                    s2[m] = _mm256_add_pd(s2[m], _mm256_mul_pd(r, gv[w]));
                }
            }
        }
        if !WT {
            let pr = lanes(prod);
            ll_log += ((pr[0] * pr[1]) * (pr[2] * pr[3])).ln();
        }
    }

    let fold = |v: __m256d| {
        let a = lanes(v);
        (a[0] + a[1]) + (a[2] + a[3])
    };
    let mut st = Stats::zero();
    st.ll = fold(ll_max) + ll_log;
    for m in 0..K {
        st.s0[m] = fold(s0[m]);
        st.s1[m] = fold(s1[m]);
        st.s2[m] = fold(s2[m]);
    }
    if N {
        st.s0_noise = fold(s0n);
    }
    st
}

/// c − k·q(x, μ) as estep.rs computes it (ComponentFamily::q_avx2 is
/// the family's q).
#[inline(always)]
unsafe fn term<F: ComponentFamily>(x: __m256d, g: __m256d, c: __m256d, k: __m256d, mu: __m256d) -> __m256d {
    let q = F::q_avx2(x, g, mu);
    _mm256_sub_pd(c, _mm256_mul_pd(k, q))
}

/// (j, j+1, j+2, j+3) as doubles, to mask the lanes past a short block's end.
#[inline(always)]
unsafe fn lane_index(j: usize) -> __m256d {
    let j = j as f64;
    _mm256_set_pd(j + 3.0, j + 2.0, j + 1.0, j)
}

#[inline(always)]
unsafe fn lanes(v: __m256d) -> [f64; 4] {
    let mut a = [0.0; 4];
    _mm256_storeu_pd(a.as_mut_ptr(), v);
    a
}

/// mathx::exp_nonpos of 4W values, step by step the same operations; each
/// step is taken for all W vectors before the next, so that the core has W
/// independent chains to work on (as mathx::exp_nonpos_lanes).
#[inline(always)]
unsafe fn exp_nonpos<const V: usize>(x: [__m256d; V]) -> [__m256d; V] {
    let shift = _mm256_set1_pd(ROUND_SHIFT);
    let mut t = [_mm256_setzero_pd(); V];
    let mut r = [_mm256_setzero_pd(); V];
    for i in 0..V {
        // max returns its second operand when one is NaN, so NaN stays NaN
        let x = _mm256_max_pd(_mm256_set1_pd(EXP_FLOOR), x[i]);
        t[i] = _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(LOG2E_32)), shift);
        let kf = _mm256_sub_pd(t[i], shift);
        r[i] = _mm256_sub_pd(
            _mm256_sub_pd(x, _mm256_mul_pd(kf, _mm256_set1_pd(LN2_32_HI))),
            _mm256_mul_pd(kf, _mm256_set1_pd(LN2_32_LO)),
        );
    }
    let mut p = [_mm256_set1_pd(1.0 / 720.0); V];
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        for i in 0..V {
            p[i] = _mm256_add_pd(_mm256_mul_pd(p[i], r[i]), _mm256_set1_pd(c));
        }
    }
    let mut out = [_mm256_setzero_pd(); V];
    for i in 0..V {
        let kk = _mm256_sub_epi64(_mm256_castpd_si256(t[i]), _mm256_set1_epi64x(ROUND_SHIFT.to_bits() as i64));
        let j = _mm256_and_si256(kk, _mm256_set1_epi64x(31));
        let mut ji = [0i64; 4];
        _mm256_storeu_si256(ji.as_mut_ptr().cast(), j);
        // SAFETY: every index is in 0..32, EXP2_TABLE's length
        let tb = |i: usize| *EXP2_TABLE.get_unchecked(ji[i] as usize);
        let table = _mm256_set_pd(tb(3), tb(2), tb(1), tb(0));
        // 2^m with m = k >> 5 (floor): k ≥ −27,700 for x ≥ EXP_FLOOR (−600), so k + 1023·32
        // is not negative and a logical shift of it gives m + 1023, the biased
        // exponent that mathx computes with an arithmetic shift.
        let biased = _mm256_srli_epi64::<5>(_mm256_add_epi64(kk, _mm256_set1_epi64x(1023 * 32)));
        let scale = _mm256_castsi256_pd(_mm256_slli_epi64::<52>(biased));
        out[i] = _mm256_mul_pd(_mm256_mul_pd(p[i], table), scale);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estep::tests::{
        assert_exp_is_exp_nonpos, assert_noisy_pass_is_blocked, assert_pass_is_blocked, assert_weighted_pass_is_blocked,
    };
    use crate::family::{InvGauss, Normal};
    use crate::params::Family;

    #[test]
    fn the_vectors_give_the_blocked_e_step_bit_for_bit() {
        if std::arch::is_x86_feature_detected!("avx2") {
            assert_pass_is_blocked(e_step::<InvGauss, false, false>, e_step::<Normal, false, false>);
            assert_noisy_pass_is_blocked(e_step::<InvGauss, true, false>, e_step::<Normal, true, false>);
            assert_weighted_pass_is_blocked([
                (Family::InvGauss, false, e_step::<InvGauss, false, true>),
                (Family::Normal, false, e_step::<Normal, false, true>),
                (Family::InvGauss, true, e_step::<InvGauss, true, true>),
                (Family::Normal, true, e_step::<Normal, true, true>),
            ]);
        }
    }

    #[test]
    fn the_vector_exponential_is_exp_nonpos_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        // SAFETY: AVX2 checked above
        assert_exp_is_exp_nonpos(|v: [f64; 4]| unsafe { lanes(exp_nonpos([_mm256_loadu_pd(v.as_ptr())])[0]) });
    }
}
