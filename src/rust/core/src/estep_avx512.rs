//! The E-step for 2 to 8 components in AVX-512 vectors, eight observations
//! at a time: estep_avx2.rs's pass at twice the width.
//!
//! Each observation gets the operations estep.rs gives it, in the same
//! order, unfused. The sums keep estep.rs's four accumulator lanes: a vector
//! of eight observations is added as its low half (observations j..j+3)
//! and then its high half (j+4..j+7), which is the order of estep.rs's
//! additions, so the result is the same bit for bit (tests below).

use std::arch::x86_64::*;

use crate::family::ComponentFamily;
use crate::limits::{ESTEP_BLOCK as BLOCK, ESTEP_LANES as LANES};
use crate::mathx::{ln_ge1_all, EXP2_TABLE, EXP_FLOOR, LN2_32_HI, LN2_32_LO, LOG2E_32, ROUND_SHIFT};
use crate::params::{Params, Stats};

// the sums are 4-wide vectors, lane i being the block loops' lane i
const _: () = assert!(LANES == 4);

/// The E-step in AVX-512F vectors for 2 ≤ p.k ≤ 8, and with a noise
/// component (`N`; `t` its t(x) per observation, estep.rs's row K) for
/// 1 ≤ p.k ≤ 8; None for another K.
///
/// # Safety
/// The CPU must support AVX-512F, and `x`, `g` (and with `N`, `t`) must
/// have the same length.
#[target_feature(enable = "avx512f")]
pub unsafe fn e_step<F: ComponentFamily, const N: bool, const WT: bool>(
    x: &[f64],
    g: &[f64],
    t: &[f64],
    w: &[f64],
    p: &Params,
) -> Option<Stats> {
    // W groups of eight observations in flight, the fastest of 2, 4 and 8
    // on a Zen 5 core (ns per observation, n = 2,000, against estep_avx2.rs:
    // IG K = 2 1.05-1.16 / 1.64, K = 3 2.2 / 3.7, K = 4 2.7 / 5.1, K = 8
    // 5.5 / 10.0; examples/estep_timing.rs). With 32 vector registers,
    // wider than AVX2's.
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

/// The pass for K components, W groups of eight observations at a time.
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
    let log_noise = _mm512_set1_pd(p.noise.ln());
    let c: [__m512d; K] = std::array::from_fn(|m| _mm512_set1_pd(t.c[m]));
    let k: [__m512d; K] = std::array::from_fn(|m| _mm512_set1_pd(t.k[m]));
    let mu: [__m512d; K] = std::array::from_fn(|m| _mm512_set1_pd(t.mu[m]));
    let one = _mm512_set1_pd(1.0);
    let zero = _mm512_setzero_pd();
    let zero4 = _mm256_setzero_pd();
    let mut s0 = [zero4; K];
    let mut s1 = [zero4; K];
    let mut s2 = [zero4; K];
    let mut ll_max = zero4;
    let mut ll_log = 0.0f64;
    let mut x_pad = [1.0f64; BLOCK];
    let mut g_pad = [1.0f64; BLOCK];
    let mut t_pad = [0.0f64; BLOCK];
    // with WT, the block's weights (padding 0)
    let mut w_pad = [0.0f64; BLOCK];
    let mut s0n = zero4;

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
        let mut prod = _mm256_set1_pd(1.0);
        for j in (0..BLOCK).step_by(8 * W) {
            let mut xv = [zero; W];
            let mut gv = [zero; W];
            // the terms l_m, then (in place) the responsibilities' numerators
            let mut l = [[zero; W]; K];
            let mut mx = [zero; W];
            let mut sum = [zero; W];
            let mut ln = [zero; W];
            for w in 0..W {
                // SAFETY: j + 8W <= BLOCK = xb.len() = gb.len()
                xv[w] = _mm512_loadu_pd(xb.as_ptr().add(j + 8 * w));
                gv[w] = _mm512_loadu_pd(gb.as_ptr().add(j + 8 * w));
                for m in 0..K {
                    l[m][w] = term::<F>(xv[w], gv[w], c[m], k[m], mu[m]);
                }
                if N {
                    // SAFETY: as above, t_pad is BLOCK long
                    ln[w] = _mm512_add_pd(log_noise, _mm512_loadu_pd(t_pad.as_ptr().add(j + 8 * w)));
                }
            }
            if K == 2 && !N {
                // estep.rs's one exponential per observation: the larger
                // term's is exp(0) = 1
                let mut first = [0 as __mmask8; W];
                let mut d = [zero; W];
                for w in 0..W {
                    let (l0, l1) = (l[0][w], l[1][w]);
                    first[w] = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(l0, l1);
                    mx[w] = _mm512_mask_blend_pd(first[w], l1, l0);
                    d[w] = _mm512_mask_blend_pd(first[w], _mm512_sub_pd(l0, l1), _mm512_sub_pd(l1, l0));
                }
                let e = exp_nonpos(d);
                for w in 0..W {
                    sum[w] = _mm512_add_pd(one, e[w]);
                    l[0][w] = _mm512_mask_blend_pd(first[w], e[w], one);
                    l[1][w] = _mm512_mask_blend_pd(first[w], one, e[w]);
                }
            } else if K == 2 && N {
                // estep.rs's two exponentials: the pair's and the noise's
                // against the pair's larger term
                let mut first = [0 as __mmask8; W];
                let mut top = [0 as __mmask8; W];
                let mut d = [zero; W];
                let mut dn = [zero; W];
                for w in 0..W {
                    let (l0, l1) = (l[0][w], l[1][w]);
                    first[w] = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(l0, l1);
                    let pair = _mm512_mask_blend_pd(first[w], l1, l0);
                    d[w] = _mm512_mask_blend_pd(first[w], _mm512_sub_pd(l0, l1), _mm512_sub_pd(l1, l0));
                    top[w] = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(ln[w], pair);
                    mx[w] = _mm512_mask_blend_pd(top[w], pair, ln[w]);
                    dn[w] = _mm512_mask_blend_pd(top[w], _mm512_sub_pd(ln[w], pair), _mm512_sub_pd(pair, ln[w]));
                }
                let e = exp_nonpos(d);
                let f = exp_nonpos(dn);
                for w in 0..W {
                    let big = _mm512_mask_blend_pd(top[w], one, f[w]);
                    let small = _mm512_mul_pd(e[w], big);
                    let noise = _mm512_mask_blend_pd(top[w], f[w], one);
                    sum[w] = _mm512_add_pd(_mm512_add_pd(big, small), noise);
                    l[0][w] = _mm512_mask_blend_pd(first[w], small, big);
                    l[1][w] = _mm512_mask_blend_pd(first[w], big, small);
                    ln[w] = noise;
                }
            } else {
                // estep.rs's `if l > mx { l } else { mx }`: max returns its
                // second operand when the first is not greater, NaN included
                mx = l[0];
                for lm in &l[1..] {
                    for w in 0..W {
                        mx[w] = _mm512_max_pd(lm[w], mx[w]);
                    }
                }
                if N {
                    for w in 0..W {
                        mx[w] = _mm512_max_pd(ln[w], mx[w]);
                    }
                }
                for lm in &mut l {
                    for w in 0..W {
                        lm[w] = _mm512_sub_pd(lm[w], mx[w]);
                    }
                    *lm = exp_nonpos(*lm);
                    for w in 0..W {
                        sum[w] = _mm512_add_pd(sum[w], lm[w]);
                    }
                }
                if N {
                    for w in 0..W {
                        ln[w] = _mm512_sub_pd(ln[w], mx[w]);
                    }
                    ln = exp_nonpos(ln);
                    for w in 0..W {
                        sum[w] = _mm512_add_pd(sum[w], ln[w]);
                    }
                }
            }
            for w in 0..W {
                let mut inv = _mm512_div_pd(one, sum[w]);
                let (mut mx, mut sum) = (mx[w], sum[w]);
                let at = j + 8 * w;
                if at + 8 > len {
                    // lanes at + i < len are observations
                    let valid: __mmask8 = if at >= len { 0 } else { ((1u32 << (len - at)) - 1) as __mmask8 };
                    mx = _mm512_maskz_mov_pd(valid, mx);
                    sum = _mm512_mask_blend_pd(valid, one, sum);
                    inv = _mm512_maskz_mov_pd(valid, inv);
                }
                if WT {
                    // estep.rs's weighted loops: w (mx + log Σ) per
                    // observation, and 1/Σ becomes w/Σ
                    // SAFETY: at + 8 <= BLOCK = w_pad.len()
                    let wv = _mm512_loadu_pd(w_pad.as_ptr().add(at));
                    let mut logs = [0.0f64; 8];
                    _mm512_storeu_pd(logs.as_mut_ptr(), sum);
                    ln_ge1_all(&mut logs);
                    let term = _mm512_mul_pd(wv, _mm512_add_pd(mx, _mm512_loadu_pd(logs.as_ptr())));
                    for half in [low(term), high(term)] {
                        ll_max = _mm256_add_pd(ll_max, half);
                    }
                    inv = _mm512_mul_pd(inv, wv);
                }
                let r: [__m512d; K] = std::array::from_fn(|m| _mm512_mul_pd(l[m][w], inv));
                let rx: [__m512d; K] = std::array::from_fn(|m| _mm512_mul_pd(r[m], xv[w]));
                let rg: [__m512d; K] = std::array::from_fn(|m| _mm512_mul_pd(r[m], gv[w]));
                if !WT {
                    // the low half's observations first, then the high half's
                    for half in [low(sum), high(sum)] {
                        prod = _mm256_mul_pd(prod, half);
                    }
                    for half in [low(mx), high(mx)] {
                        ll_max = _mm256_add_pd(ll_max, half);
                    }
                }
                if N {
                    let rn = _mm512_mul_pd(ln[w], inv);
                    s0n = _mm256_add_pd(_mm256_add_pd(s0n, low(rn)), high(rn));
                }
                for m in 0..K {
                    s0[m] = _mm256_add_pd(_mm256_add_pd(s0[m], low(r[m])), high(r[m]));
                    s1[m] = _mm256_add_pd(_mm256_add_pd(s1[m], low(rx[m])), high(rx[m]));
                    s2[m] = _mm256_add_pd(_mm256_add_pd(s2[m], low(rg[m])), high(rg[m]));
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

#[inline(always)]
unsafe fn low(v: __m512d) -> __m256d {
    _mm512_castpd512_pd256(v)
}

#[inline(always)]
unsafe fn high(v: __m512d) -> __m256d {
    _mm512_extractf64x4_pd::<1>(v)
}

/// c − k·q(x, μ) as estep.rs computes it (ComponentFamily::q_avx512 is
/// the family's q).
#[inline(always)]
unsafe fn term<F: ComponentFamily>(x: __m512d, g: __m512d, c: __m512d, k: __m512d, mu: __m512d) -> __m512d {
    let q = F::q_avx512(x, g, mu);
    _mm512_sub_pd(c, _mm512_mul_pd(k, q))
}

#[inline(always)]
unsafe fn lanes(v: __m256d) -> [f64; 4] {
    let mut a = [0.0; 4];
    _mm256_storeu_pd(a.as_mut_ptr(), v);
    a
}

/// mathx::exp_nonpos of 8V values, step by step the same operations, each
/// step for all V vectors before the next (as estep_avx2.rs). The table
/// 2^(j/32) is read by two-register permutes instead of loads.
#[inline(always)]
unsafe fn exp_nonpos<const V: usize>(x: [__m512d; V]) -> [__m512d; V] {
    let shift = _mm512_set1_pd(ROUND_SHIFT);
    let mut t = [_mm512_setzero_pd(); V];
    let mut r = [_mm512_setzero_pd(); V];
    for i in 0..V {
        // max returns its second operand when one is NaN, so NaN stays NaN
        let x = _mm512_max_pd(_mm512_set1_pd(EXP_FLOOR), x[i]);
        t[i] = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(LOG2E_32)), shift);
        let kf = _mm512_sub_pd(t[i], shift);
        r[i] = _mm512_sub_pd(
            _mm512_sub_pd(x, _mm512_mul_pd(kf, _mm512_set1_pd(LN2_32_HI))),
            _mm512_mul_pd(kf, _mm512_set1_pd(LN2_32_LO)),
        );
    }
    let mut p = [_mm512_set1_pd(1.0 / 720.0); V];
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        for i in 0..V {
            p[i] = _mm512_add_pd(_mm512_mul_pd(p[i], r[i]), _mm512_set1_pd(c));
        }
    }
    let quarter = |q: usize| _mm512_loadu_pd(EXP2_TABLE.as_ptr().add(8 * q));
    let (t0, t1, t2, t3) = (quarter(0), quarter(1), quarter(2), quarter(3));
    let mut out = [_mm512_setzero_pd(); V];
    for i in 0..V {
        let kk = _mm512_sub_epi64(_mm512_castpd_si512(t[i]), _mm512_set1_epi64(ROUND_SHIFT.to_bits() as i64));
        // entries 0-15 or 16-31 by the index's bit 4, within them by bits 0-3
        let low16 = _mm512_permutex2var_pd(t0, kk, t1);
        let high16 = _mm512_permutex2var_pd(t2, kk, t3);
        let upper = _mm512_test_epi64_mask(kk, _mm512_set1_epi64(16));
        let table = _mm512_mask_blend_pd(upper, low16, high16);
        // 2^m with m = k >> 5, the biased exponent as in estep_avx2.rs
        let biased = _mm512_srli_epi64::<5>(_mm512_add_epi64(kk, _mm512_set1_epi64(1023 * 32)));
        let scale = _mm512_castsi512_pd(_mm512_slli_epi64::<52>(biased));
        out[i] = _mm512_mul_pd(_mm512_mul_pd(p[i], table), scale);
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
        if std::arch::is_x86_feature_detected!("avx512f") {
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
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        assert_exp_is_exp_nonpos(|v: [f64; 8]| {
            let mut out = [0.0; 8];
            // SAFETY: AVX-512F checked above
            unsafe { _mm512_storeu_pd(out.as_mut_ptr(), exp_nonpos([_mm512_loadu_pd(v.as_ptr())])[0]) };
            out
        });
    }
}
