//! Numerical building blocks: log-sum-exp, and an exponential and a
//! logarithm that the compiler can vectorise (libm's `exp` and `ln` are one
//! call per value, and the E-step spends most of its time in them).

use crate::limits::{ESTEP_BLOCK, ESTEP_LANES};

/// log Σ exp(l_i), stable for any finite inputs; −∞ for an empty slice or
/// when every term is −∞; +∞ or NaN propagate.
pub fn log_sum_exp(l: &[f64]) -> f64 {
    let mx = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !mx.is_finite() {
        return if l.iter().any(|v| v.is_nan()) { f64::NAN } else { mx };
    }
    mx + l.iter().map(|&v| (v - mx).exp()).sum::<f64>().ln()
}

/// The log-densities `l` of one observation's components (and a noise
/// component's) made its responsibilities, in place: e^(l − max)/Σ, by
/// exp_nonpos. Returns the observation's log f(x), max + log Σ (student.rs
/// and exgauss.rs, whose E-steps go one observation at a time).
#[inline(always)]
pub fn normalise(l: &mut [f64]) -> f64 {
    let top = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for v in l.iter_mut() {
        *v = exp_nonpos(*v - top);
        total += *v;
    }
    let inv = 1.0 / total;
    for v in l.iter_mut() {
        *v *= inv;
    }
    top + total.ln()
}

/// 32 / ln 2
pub const LOG2E_32: f64 = 32.0 * std::f64::consts::LOG2_E;
// ln 2 / 32 split so that k·LN2_32_HI is exact for |k| < 2^16 (the fdlibm
// split of ln 2, divided by 32, which is exact).
#[allow(clippy::excessive_precision)]
pub const LN2_32_HI: f64 = 6.931_471_803_691_238_2e-1 / 32.0;
pub const LN2_32_LO: f64 = 1.908_214_929_270_587_7e-10 / 32.0;
// Adding 1.5·2^52 rounds to an integer and leaves it in the low mantissa bits.
pub const ROUND_SHIFT: f64 = 6_755_399_441_055_744.0;
/// Below this, e^x is treated as e^-600 ≈ 2.7e-261: a relative
/// responsibility of 1e-261 and one of 0 are the same to EM (the component
/// holding only such weights is collapsed by the guard either way), and a
/// floor far above the smallest normal number (2.2e-308) keeps the
/// E-step's products r·x, r·g, r/Σ normal: an x86 core takes a microcode
/// assist of ~100 cycles for every subnormal operand. With the floor at
/// e^-708, those products fell subnormal for observations far from a
/// component, and well-separated fits (partition starts on B2) spent 46% more
/// time (inst/bench/results-subnormal.md); every fit of the CPU fingerprint
/// is the same bit for bit at either floor. (GPUs take subnormals at full
/// speed; the kernels get this value through the prelude.)
pub const EXP_FLOOR: f64 = -600.0;
/// 2^(j/32), j = 0..31, correctly rounded (generated, hence the exact
/// literals clippy would replace by named constants).
#[allow(clippy::approx_constant, clippy::excessive_precision)]
pub const EXP2_TABLE: [f64; 32] = [
    1.0,
    1.0218971486541166,
    1.0442737824274138,
    1.0671404006768237,
    1.0905077326652577,
    1.1143867425958924,
    1.1387886347566916,
    1.1637248587775775,
    1.189207115002721,
    1.215247359980469,
    1.241857812073484,
    1.2690509571917332,
    1.2968395546510096,
    1.3252366431597413,
    1.3542555469368927,
    1.383909881963832,
    1.4142135623730951,
    1.4451808069770467,
    1.4768261459394993,
    1.5091644275934228,
    1.5422108254079407,
    1.5759808451078865,
    1.6104903319492543,
    1.645755478153965,
    1.681792830507429,
    1.718619298122478,
    1.7562521603732995,
    1.7947090750031072,
    1.8340080864093424,
    1.8741676341103,
    1.9152065613971474,
    1.9571441241754002,
];

/// e^x for x ≤ 0, to within 2 ulp, branch-free so loops over it vectorise.
/// x = (32m + j) ln2/32 + r with |r| ≤ ln2/64, so e^x = 2^m · 2^(j/32) · e^r,
/// e^r by its Taylor series to r^6 (truncation error < 4e-18).
/// Inputs below EXP_FLOOR (−600) return e^−600 instead of a tiny, subnormal or zero value;
/// NaN returns NaN.
#[inline(always)]
pub fn exp_nonpos(x: f64) -> f64 {
    exp_nonpos_lanes([x])[0]
}

/// exp_nonpos of every value of `v`, in place, eight at a time.
#[inline(always)]
pub fn exp_nonpos_all(v: &mut [f64]) {
    let mut chunks = v.chunks_exact_mut(AT_ONCE);
    for c in &mut chunks {
        let mut x = [0.0; AT_ONCE];
        x.copy_from_slice(c);
        c.copy_from_slice(&exp_nonpos_lanes(x));
    }
    for x in chunks.into_remainder() {
        *x = exp_nonpos(*x);
    }
}

/// Values exp_nonpos_all takes at once: two 4-wide vectors on AVX2.
const AT_ONCE: usize = 8;

/// exp_nonpos of W values, each step taken for all W before the next. The
/// steps form one long chain of dependent operations (the polynomial by
/// Horner's rule), which a core would otherwise wait out value by value;
/// with the W chains side by side it works on one while another waits
/// (exp_nonpos_all: 3.7-3.9 instead of 4.2-4.4 ns per value on a Zen 1 core,
/// examples/estep_timing.rs). Each value gets the same operations in the
/// same order whatever W, so the results are the same bit for bit.
#[inline(always)]
fn exp_nonpos_lanes<const W: usize>(x: [f64; W]) -> [f64; W] {
    let x = x.map(|x| if x < EXP_FLOOR { EXP_FLOOR } else { x });
    let mut t = [0.0; W];
    let mut r = [0.0; W];
    for i in 0..W {
        t[i] = x[i] * LOG2E_32 + ROUND_SHIFT;
        let kf = t[i] - ROUND_SHIFT;
        r[i] = (x[i] - kf * LN2_32_HI) - kf * LN2_32_LO;
    }
    let mut p = [1.0 / 720.0; W];
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        for i in 0..W {
            p[i] = p[i] * r[i] + c;
        }
    }
    let mut out = [0.0; W];
    for i in 0..W {
        // k = 32m + j from the integer left in t's mantissa; m ∈ [-1022, 0] here
        let k = (t[i].to_bits() as i64).wrapping_sub(ROUND_SHIFT.to_bits() as i64);
        let scale = f64::from_bits((((k >> 5) + 1023) as u64) << 52);
        out[i] = p[i] * EXP2_TABLE[(k & 31) as usize] * scale;
    }
    out
}

/// ln x for x ≥ 1 (finite), to within 1 ulp, branch-free so loops over it
/// vectorise (Student's t's E-step: the log of 1 + δ/ν per observation and
/// component). x = 2^e · m with m ∈ [√2/2, √2), and with f = m − 1,
/// s = f/(2 + f): log m = f − ½f² + s(½f² + R(s²)), R the minimax
/// polynomial of fdlibm's e_log.c (its coefficients Lg1..Lg7 below), and
/// e·ln 2 added in two parts (the split of ln 2 exp_nonpos uses).
#[inline(always)]
pub fn ln_ge1(x: f64) -> f64 {
    ln_ge1_lanes([x])[0]
}

/// ln_ge1 of every value of `v`, in place, eight at a time.
#[inline(always)]
pub fn ln_ge1_all(v: &mut [f64]) {
    let mut chunks = v.chunks_exact_mut(AT_ONCE);
    for c in &mut chunks {
        let mut x = [0.0; AT_ONCE];
        x.copy_from_slice(c);
        c.copy_from_slice(&ln_ge1_lanes(x));
    }
    for x in chunks.into_remainder() {
        *x = ln_ge1(*x);
    }
}

/// fdlibm's coefficients of log(1 + f) = f − ½f² + s(½f² + R(s²))
/// (kernels/em_common.cuh's ln_ge1 receives them as LG1..LG7).
#[allow(clippy::excessive_precision)]
pub const LG: [f64; 7] = [
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
];

/// 2^52: a double's bits below the exponent field, and a shift that turns
/// a small integer in the mantissa into a double (bits | 2^52's − 2^52).
pub const TWO_52: f64 = 4_503_599_627_370_496.0;

/// ln_ge1 of W values, each step for all W before the next (as
/// exp_nonpos_lanes): the same operations for each value whatever W.
#[inline(always)]
fn ln_ge1_lanes<const W: usize>(x: [f64; W]) -> [f64; W] {
    const MANTISSA: u64 = (1 << 52) - 1;
    let mut e = [0.0; W];
    let mut f = [0.0; W];
    for i in 0..W {
        let bits = x[i].to_bits();
        // the biased exponent (x ≥ 1: positive, normal) as a double, exactly
        let biased = f64::from_bits(TWO_52.to_bits() | (bits >> 52)) - TWO_52;
        let m = f64::from_bits((bits & MANTISSA) | 1.0f64.to_bits());
        let big = m > std::f64::consts::SQRT_2;
        e[i] = biased - 1023.0 + if big { 1.0 } else { 0.0 };
        f[i] = (if big { m * 0.5 } else { m }) - 1.0;
    }
    let mut out = [0.0; W];
    for i in 0..W {
        let s = f[i] / (2.0 + f[i]);
        let z = s * s;
        let w = z * z;
        let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
        let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
        let hfsq = 0.5 * f[i] * f[i];
        let r = t2 + t1;
        let ek = e[i];
        out[i] = ek * (32.0 * LN2_32_HI) - ((hfsq - (s * (hfsq + r) + ek * (32.0 * LN2_32_LO))) - f[i]);
    }
    out
}

/// One block's share of an E-step's log-likelihood: Σ_j (mx_j + log sum_j)
/// over its first `len` observations, the maxima added into the lanes of
/// `ll_max` and the returned logarithm taken once, of the product of the
/// sums: each sum is in [1, 9] (8 components and the noise), so 16 per lane
/// and 4 lanes stay below 2^203. The padding past `len` is set to count
/// nothing (mx 0, sum 1). Shared by estep.rs's and student.rs's block loops.
#[inline(always)]
pub fn block_log_likelihood(
    mx: &mut [f64; ESTEP_BLOCK],
    sum: &mut [f64; ESTEP_BLOCK],
    len: usize,
    ll_max: &mut [f64; ESTEP_LANES],
) -> f64 {
    const _: () = assert!(ESTEP_LANES == 4, "the lanes' products are multiplied as four");
    if len < ESTEP_BLOCK {
        mx[len..].fill(0.0);
        sum[len..].fill(1.0);
    }
    let mut prod = [1.0f64; ESTEP_LANES];
    for j in (0..ESTEP_BLOCK).step_by(ESTEP_LANES) {
        for lane in 0..ESTEP_LANES {
            prod[lane] *= sum[j + lane];
            ll_max[lane] += mx[j + lane];
        }
    }
    ((prod[0] * prod[1]) * (prod[2] * prod[3])).ln()
}

/// `block_log_likelihood` of a block whose `w.len()` observations have
/// weights `w` (the padding after them weight 0): Σ_j w_j (mx_j + log
/// sum_j) added into the lanes of `ll`, and each 1/Σ of `inv` made w/Σ,
/// the weight going into each responsibility. One logarithm per
/// observation: a weighted sum of logarithms is not the logarithm of one
/// product. `sum` is overwritten. Shared by estep.rs's and student.rs's
/// weighted loops (the vector passes do the same, lane for lane).
#[inline(always)]
pub fn weighted_block(
    mx: &[f64; ESTEP_BLOCK],
    sum: &mut [f64; ESTEP_BLOCK],
    inv: &mut [f64; ESTEP_BLOCK],
    w: &[f64],
    ll: &mut [f64; ESTEP_LANES],
) {
    let len = w.len().min(ESTEP_BLOCK);
    let mut wb = [0.0f64; ESTEP_BLOCK];
    wb[..len].copy_from_slice(&w[..len]);
    sum[len..].fill(1.0);
    ln_ge1_all(sum);
    for j in (0..ESTEP_BLOCK).step_by(ESTEP_LANES) {
        for lane in 0..ESTEP_LANES {
            let i = j + lane;
            // the padding's weight is 0, and its terms are finite
            ll[lane] += wb[i] * (mx[i] + sum[i]);
        }
    }
    for (v, w) in inv.iter_mut().zip(&wb) {
        *v *= w;
    }
}

/// splitmix64's output mixer: a bijection of u64 whose every output bit
/// depends on every input bit (used to hash data and derive seeds).
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_nonpos_matches_libm_to_2_ulp() {
        let mut worst: f64 = 0.0;
        let mut x = 0.0;
        while x > EXP_FLOOR {
            let (a, b) = (exp_nonpos(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
            x -= 0.000_731;
        }
        assert!(worst < 4.5e-16, "worst relative error {worst}");
        assert_eq!(exp_nonpos(0.0), 1.0);
        assert_eq!(exp_nonpos(-0.0), 1.0);
        assert!((exp_nonpos(-1.0) - (-1.0f64).exp()).abs() < 2.0 * f64::EPSILON);
    }

    #[test]
    fn a_block_at_once_is_value_by_value_bit_for_bit() {
        let mut xs: Vec<f64> = (0..100_003).map(|i| -(i as f64) * 0.007_3).collect();
        xs.extend([0.0, -0.0, -708.0, -708.1, -1.0e6, f64::NEG_INFINITY, f64::NAN, -1e-300, -5e-324]);
        let mut all = xs.clone();
        exp_nonpos_all(&mut all);
        for (x, e) in xs.iter().zip(&all) {
            let one = exp_nonpos(*x);
            assert!(one.to_bits() == e.to_bits() || (one.is_nan() && e.is_nan()), "x = {x}");
        }
    }

    #[test]
    fn exp_nonpos_floors_instead_of_underflowing() {
        let tiny = exp_nonpos(-1.0e6);
        assert!(tiny > 0.0 && (tiny - EXP_FLOOR.exp()).abs() < 1e-15 * tiny);
        assert_eq!(exp_nonpos(EXP_FLOOR - 50.0), tiny);
        assert_eq!(exp_nonpos(f64::NEG_INFINITY), tiny);
        assert!(exp_nonpos(f64::NAN).is_nan());
    }

    #[test]
    fn ln_ge1_is_ln_to_an_ulp() {
        let mut worst: f64 = 0.0;
        let mut x = 1.0f64;
        let mut values = vec![1.0, f64::MAX, std::f64::consts::SQRT_2, 2.0, 1.0 + f64::EPSILON];
        while x < 1e300 {
            values.push(x);
            x = x * 1.000_37 + 1e-9;
        }
        for &v in &values {
            let (fast, libm) = (ln_ge1(v), v.ln());
            let ulp = if libm == 0.0 { f64::MIN_POSITIVE } else { libm.abs() * f64::EPSILON };
            worst = worst.max((fast - libm).abs() / ulp);
        }
        assert!(worst <= 1.0, "worst {worst} ulp");
        let mut all = values.clone();
        ln_ge1_all(&mut all);
        assert!(all.iter().zip(&values).all(|(a, &v)| a.to_bits() == ln_ge1(v).to_bits()));
    }

    #[test]
    fn log_sum_exp_edge_cases() {
        // equal huge terms: no overflow
        let v = log_sum_exp(&[1000.0, 1000.0]);
        assert!((v - (1000.0 + 2f64.ln())).abs() < 1e-12);
        // huge negative terms: no underflow to -inf
        let v = log_sum_exp(&[-1000.0, -1001.0]);
        assert!((v - (-1000.0 + (1.0 + (-1.0f64).exp()).ln())).abs() < 1e-12);
        // one term dominates completely
        assert_eq!(log_sum_exp(&[0.0, -800.0]), 0.0);
        // -inf terms are ignored; all -inf gives -inf
        assert!((log_sum_exp(&[f64::NEG_INFINITY, 2.0]) - 2.0).abs() < 1e-15);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY, f64::NEG_INFINITY]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert!(log_sum_exp(&[f64::NAN, 1.0]).is_nan());
        assert_eq!(log_sum_exp(&[f64::INFINITY, 1.0]), f64::INFINITY);
        // brute force on moderate values
        let l = [-0.3, 1.7, 0.2];
        let direct = l.iter().map(|v: &f64| v.exp()).sum::<f64>().ln();
        assert!((log_sum_exp(&l) - direct).abs() < 1e-15);
    }
}
