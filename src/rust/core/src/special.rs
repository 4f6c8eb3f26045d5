//! Special functions the gamma family needs (family/gamma.rs): log Γ,
//! digamma ψ and trigamma ψ′ for x > 0, each by its recurrence up to
//! x ≥ 10 and its asymptotic series there, to the B₁₂ term (Abramowitz &
//! Stegun 6.1.41, 6.3.18, 6.4.12): relative errors near 1e-15 over the
//! range the gamma's shapes take. And the gamma's shape from its M-step's
//! statistic, whose Newton steps take ψ and ψ′ at one point together
//! (`digammas`), one reciprocal per recurrence step: the GPU's fp64
//! divisions are what the M-step costs there.
//!
//! And the distribution functions truncation needs (truncation.rs): the
//! regularised incomplete gamma functions P(a, x) and Q(a, x), in logs
//! (`ln_gamma_pq`: the series below a + 1, Legendre's continued fraction
//! by Lentz's method above, Numerical Recipes §6.2's split) for the gamma's
//! CDF, and log erfc by a Chebyshev series (`ln_erfc`, a tenth of the
//! incomplete gamma's cost at a = ½) for Φ (`ln_normal_cdf`): the Normal's,
//! lognormal's and inverse Gaussian's CDFs.

use crate::limits::{GAMMA_SHAPE_STEPS, GAMMA_SHAPE_TOLERANCE};

/// Below this the series are not used: the recurrence shifts x up to it.
/// (These functions have a device mirror in kernels/em_batched.cu, which
/// receives this constant and the next through gpu/prelude.rs.)
pub const SERIES_FROM: f64 = 10.0;

/// ½ log 2π
pub const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// log Γ(x), x > 0.
pub fn ln_gamma(x: f64) -> f64 {
    let (mut x, mut product) = (x, 1.0);
    while x < SERIES_FROM {
        product *= x;
        x += 1.0;
    }
    let z = 1.0 / (x * x);
    let series = (1.0 / 12.0
        - z * (1.0 / 360.0 - z * (1.0 / 1260.0 - z * (1.0 / 1680.0 - z * (1.0 / 1188.0 - z * (691.0 / 360_360.0))))))
        / x;
    (x - 0.5) * x.ln() - x + HALF_LN_2PI + series - product.ln()
}

/// (ψ(x), ψ′(x)) = (d log Γ(x)/dx, its derivative), x > 0, sharing each
/// recurrence step's reciprocal.
pub fn digammas(x: f64) -> (f64, f64) {
    let (mut x, mut di, mut tri) = (x, 0.0, 0.0);
    while x < SERIES_FROM {
        let r = 1.0 / x;
        di -= r;
        tri += r * r;
        x += 1.0;
    }
    let r = 1.0 / x;
    let z = r * r;
    let di_series = z
        * (1.0 / 12.0
            - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z * (1.0 / 240.0 - z * (1.0 / 132.0 - z * (691.0 / 32_760.0))))));
    let tri_series = (1.0
        + z * (1.0 / 6.0
            - z * (1.0 / 30.0 - z * (1.0 / 42.0 - z * (1.0 / 30.0 - z * (5.0 / 66.0 - z * (691.0 / 2730.0)))))))
        * r;
    (x.ln() - 0.5 * r - di_series + di, tri_series + 0.5 * z + tri)
}

/// The gamma shape a with log a − ψ(a) = s (s > 0: the log of the
/// weighted mean less the weighted mean of the logs, the M-step's and the
/// ML estimate's statistic): Newton's method from Minka's (2002)
/// approximation, which it refines to GAMMA_SHAPE_TOLERANCE in a few
/// steps; NaN unless s is positive and finite (all the values equal).
pub fn gamma_shape(s: f64) -> f64 {
    if !(s > 0.0 && s.is_finite()) {
        return f64::NAN;
    }
    let mut a = (3.0 - s + ((s - 3.0) * (s - 3.0) + 24.0 * s).sqrt()) / (12.0 * s);
    for _ in 0..GAMMA_SHAPE_STEPS {
        let (di, tri) = digammas(a);
        let f = a.ln() - di - s;
        let slope = 1.0 / a - tri;
        let mut next = a - f / slope;
        if !(next > 0.0) {
            next = a / 2.0;
        }
        let done = (next - a).abs() <= GAMMA_SHAPE_TOLERANCE * a;
        a = next;
        if done {
            break;
        }
    }
    a
}

/// Terms of the series and the continued fraction at most; both converge
/// to double precision in far fewer wherever the split sends them.
const PQ_TERMS: usize = 1000;

/// (log P(a, x), log Q(a, x)), the regularised lower and upper incomplete
/// gamma functions, a > 0, x ≥ 0: the one computed directly (the series
/// for x < a + 1, the continued fraction otherwise) to double precision
/// in logs, so that a tail far below the smallest double still has its
/// logarithm; the other as log(1 − exp(·)) of it. NaN outside the domain.
pub fn ln_gamma_pq(a: f64, x: f64) -> (f64, f64) {
    if !(a > 0.0 && x >= 0.0) || a.is_infinite() {
        return (f64::NAN, f64::NAN);
    }
    if x == 0.0 {
        return (f64::NEG_INFINITY, 0.0);
    }
    if x.is_infinite() {
        return (0.0, f64::NEG_INFINITY);
    }
    // log of x^a e^-x / Γ(a)
    let front = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // P = x^a e^-x / Γ(a + 1) · Σ_n x^n / ((a + 1)…(a + n))
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..PQ_TERMS {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * f64::EPSILON {
                break;
            }
        }
        let ln_p = front + sum.ln();
        (ln_p, ln_1m_exp(ln_p))
    } else {
        // Q = x^a e^-x / Γ(a) · 1/(x + 1 − a − 1·(1 − a)/(x + 3 − a − …))
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..=PQ_TERMS {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < f64::EPSILON {
                break;
            }
        }
        let ln_q = front + h.ln();
        (ln_1m_exp(ln_q), ln_q)
    }
}

/// log(1 − e^v), v ≤ 0, without cancellation at either end (Mächler 2012).
pub fn ln_1m_exp(v: f64) -> f64 {
    if v > -std::f64::consts::LN_2 {
        (-v.exp_m1()).ln()
    } else {
        (-v.exp()).ln_1p()
    }
}

/// The Chebyshev coefficients of u(s) = log(erfc(x)/t) + x², t = 2/(2 + x),
/// s = 2t − 1, on three pieces of s (a, b): x > 6, 1.2 < x ≤ 6, x ≤ 1.2,
/// each in y = (2s − a − b)/(b − a) (tools/erfc-chebyshev.py says how they
/// were made; one expansion over all of s needs 28 terms, these 15-17).
#[allow(clippy::excessive_precision)]
pub(crate) const ERFC_PIECES: [(f64, f64, &[f64]); 3] = [
    (
        -1.0,
        -0.5,
        &[
            -1.131446705408491,
            0.1371174893735875,
            0.0030631061744371495,
            5.507627768867413e-06,
            -5.870112953266596e-06,
            -3.4279695731355497e-07,
            1.480622343808787e-09,
            1.4899801084193248e-09,
            7.289330312488198e-11,
            -3.800889778601108e-12,
            -5.836209315359211e-13,
            -4.614703799236074e-15,
            3.4023985555213973e-15,
            1.6352781424958905e-16,
            -1.731130925685937e-17,
        ],
    ),
    (
        -0.5,
        0.25,
        &[
            -0.7506639796059755,
            0.2454331802573621,
            0.004346734190653259,
            -0.0005210552210809127,
            -3.481569423459919e-05,
            2.9443583113132266e-06,
            2.9464398994840195e-07,
            -2.6608089906975514e-08,
            -2.5666232906822895e-09,
            3.084520373477639e-10,
            1.9934164034882503e-11,
            -3.847831718684809e-12,
            -8.900016556131362e-14,
            4.5433627242858616e-14,
            -9.641546906848068e-16,
            -4.498254826835548e-16,
            3.358020888354779e-17,
        ],
    ),
    (
        0.25,
        1.0,
        &[
            -0.24788283615606424,
            0.25122937075245183,
            -0.0028638224434309866,
            -0.0005121824889451223,
            2.8522960865242758e-05,
            1.1674578007702103e-06,
            -2.283211934932282e-07,
            7.363171144958115e-09,
            9.967055461608798e-10,
            -1.2457469186676768e-10,
            2.5965717565624316e-12,
            6.918705255880321e-13,
            -7.616552371339108e-14,
            1.324531300877769e-15,
            4.499556407982978e-16,
            -4.8836140338487673e-17,
        ],
    ),
];

/// log erfc(x) for x ≥ 0: −x² + log t + Σ_j c_j T_j(y) of s's piece
/// (Clenshaw's sum), to double precision in relative terms however far the
/// tail.
pub fn ln_erfc(x: f64) -> f64 {
    let t = 2.0 / (2.0 + x);
    let s = 2.0 * t - 1.0;
    let (a, b, c) = match s {
        s if s < ERFC_PIECES[0].1 => ERFC_PIECES[0],
        s if s < ERFC_PIECES[1].1 => ERFC_PIECES[1],
        _ => ERFC_PIECES[2],
    };
    let y = (2.0 * s - (a + b)) / (b - a);
    let (mut b1, mut b2) = (0.0, 0.0);
    for &cj in c[1..].iter().rev() {
        (b1, b2) = (2.0 * y * b1 - b2 + cj, b1);
    }
    -x * x + t.ln() + (y * b1 - b2 + c[0])
}

/// The most coefficients of a piece of ERFC_PIECES.
pub(crate) const ERFC_TERMS: usize = {
    let mut most = 0;
    let mut i = 0;
    while i < ERFC_PIECES.len() {
        if ERFC_PIECES[i].2.len() > most {
            most = ERFC_PIECES[i].2.len();
        }
        i += 1;
    }
    most
};

/// ERFC_PIECES' coefficients padded with zeros to ERFC_TERMS: leading
/// zeros leave Clenshaw's sums at exactly 0, so a padded sum has the bits
/// of the piece's own.
pub(crate) const ERFC_PADDED: [[f64; ERFC_TERMS]; 3] = {
    let mut out = [[0.0; ERFC_TERMS]; 3];
    let mut i = 0;
    while i < 3 {
        let c = ERFC_PIECES[i].2;
        let mut j = 0;
        while j < c.len() {
            out[i][j] = c[j];
            j += 1;
        }
        i += 1;
    }
    out
};

/// `ln_normal_lower` of each value of `z`, in place, with the same bits.
/// One value's Clenshaw sum is a chain of dependent steps that leaves the
/// CPU waiting on each; the sums of LANES values run interleaved, their
/// pieces' coefficients read from ERFC_PADDED, so that the steps overlap
/// (the ex-Gaussian's E-step takes one per observation and component).
pub fn ln_normal_lower_all(z: &mut [f64]) {
    const LANES: usize = 8;
    for chunk in z.chunks_mut(LANES) {
        let n = chunk.len();
        let (mut x, mut t, mut y) = ([0.0; LANES], [1.0; LANES], [0.0; LANES]);
        let mut piece = [2usize; LANES];
        for i in 0..n {
            x[i] = chunk[i].abs() * std::f64::consts::FRAC_1_SQRT_2;
            t[i] = 2.0 / (2.0 + x[i]);
            let s = 2.0 * t[i] - 1.0;
            piece[i] = match s {
                s if s < ERFC_PIECES[0].1 => 0,
                s if s < ERFC_PIECES[1].1 => 1,
                _ => 2,
            };
            let (a, b, _) = ERFC_PIECES[piece[i]];
            y[i] = (2.0 * s - (a + b)) / (b - a);
        }
        let (mut b1, mut b2) = ([0.0; LANES], [0.0; LANES]);
        for j in (1..ERFC_TERMS).rev() {
            for i in 0..LANES {
                (b1[i], b2[i]) = (2.0 * y[i] * b1[i] - b2[i] + ERFC_PADDED[piece[i]][j], b1[i]);
            }
        }
        for i in 0..n {
            let z = chunk[i];
            let tail =
                -x[i] * x[i] + t[i].ln() + (y[i] * b1[i] - b2[i] + ERFC_PADDED[piece[i]][0]) - std::f64::consts::LN_2;
            chunk[i] = match z {
                z if z < 0.0 => tail,
                z if z.is_nan() => f64::NAN,
                _ => ln_1m_exp(tail),
            };
        }
    }
}

/// log Φ(z) alone: `ln_normal_cdf(z).0` without the other side's work
/// where z < 0.
pub fn ln_normal_lower(z: f64) -> f64 {
    if z < 0.0 {
        ln_erfc(-z * std::f64::consts::FRAC_1_SQRT_2) - std::f64::consts::LN_2
    } else {
        ln_normal_cdf(z).0
    }
}

/// (log Φ(z), log Φ(−z)) of the standard Normal: Φ(−|z|) = ½ erfc(|z|/√2)
/// from `ln_erfc`, the other side as 1 less it.
pub fn ln_normal_cdf(z: f64) -> (f64, f64) {
    if z.is_nan() {
        return (f64::NAN, f64::NAN);
    }
    let tail = ln_erfc(z.abs() * std::f64::consts::FRAC_1_SQRT_2) - std::f64::consts::LN_2;
    let rest = ln_1m_exp(tail);
    if z < 0.0 {
        (tail, rest)
    } else {
        (rest, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_normal_lower_all_has_the_bits_of_ln_normal_lower() {
        let mut z: Vec<f64> = (-4000..=4000).map(|i| i as f64 * 0.01).collect();
        z.extend([-1e3, -40.0, -1e-300, -0.0, 0.0, 1e-300, 8.3, 40.0, 1e3, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
        let mut all = z.clone();
        ln_normal_lower_all(&mut all);
        for (v, a) in z.iter().zip(&all) {
            let one = ln_normal_lower(*v);
            assert!(one.to_bits() == a.to_bits() || (one.is_nan() && a.is_nan()), "z = {v}: {one} {a}");
        }
    }

    fn digamma(x: f64) -> f64 {
        digammas(x).0
    }

    fn trigamma(x: f64) -> f64 {
        digammas(x).1
    }

    #[test]
    fn special_functions_match_known_values() {
        let pi = std::f64::consts::PI;
        let euler = 0.577_215_664_901_532_9;
        let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs().max(1.0);
        assert!(close(ln_gamma(0.5), 0.5 * pi.ln(), 1e-14));
        // (values of R's lgamma, digamma, trigamma) log Γ near its zeros is a
        // difference of terms near 13: absolute
        assert!(ln_gamma(1.0).abs() < 1e-13 && ln_gamma(2.0).abs() < 1e-13, "{}", ln_gamma(1.0));
        assert!(close(ln_gamma(10.0), (362_880f64).ln(), 1e-14));
        assert!(close(ln_gamma(171.5), 709.143_163_030_928_3, 1e-14));
        assert!(close(ln_gamma(1e-3), 6.907_178_885_383_853, 1e-13));
        assert!(close(digamma(1.0), -euler, 1e-14), "{:e}", digamma(1.0) + euler);
        assert!(close(digamma(0.5), -euler - 2.0 * 2f64.ln(), 1e-14));
        assert!(close(digamma(100.0), 4.600_161_852_738_088, 1e-14));
        assert!(close(trigamma(1.0), pi * pi / 6.0, 1e-14));
        assert!(close(trigamma(0.5), pi * pi / 2.0, 1e-14));
        assert!(close(trigamma(100.0), 0.010_050_166_663_333_57, 1e-13));
        // ψ is the derivative of log Γ, ψ′ of ψ (central differences)
        for x in [0.3, 2.5, 17.0, 400.0] {
            let h = 1e-5 * x;
            assert!(close(digamma(x), (ln_gamma(x + h) - ln_gamma(x - h)) / (2.0 * h), 1e-7), "{x}");
            assert!(close(trigamma(x), (digamma(x + h) - digamma(x - h)) / (2.0 * h), 1e-7), "{x}");
        }
    }

    #[test]
    fn incomplete_gamma_matches_known_values_and_its_density() {
        let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs();
        // (values of mpmath at 30 digits; R's pgamma and pnorm agree)
        let p = |a, x| ln_gamma_pq(a, x).0.exp();
        let q = |a, x| ln_gamma_pq(a, x).1.exp();
        assert!(close(p(1.0, 2.0), 1.0 - (-2.0f64).exp(), 1e-14));
        assert!(close(q(1.0, 30.0), (-30.0f64).exp(), 1e-13));
        assert!(close(p(3.0, 2.0), 0.323_323_583_816_936_5, 1e-14));
        assert!(close(q(3.0, 9.0), 0.006_232_195_106_377_317, 1e-13));
        assert!(close(p(0.3, 1e-4), 0.070_302_327_077_011_81, 1e-12), "{}", p(0.3, 1e-4));
        assert!(close(q(50.0, 80.0), 0.000_130_783_976_591_410_3, 1e-11), "{}", q(50.0, 80.0));
        // log erfc (mpmath at 30 digits), and Q(½, x²), which it is
        for (x, v) in [
            (1e-3, -0.001_129_015_889_621_354_8),
            (0.3, -0.398_430_051_440_085_27),
            (1.0, -1.849_605_509_933_248_2),
            (2.5, -7.806_815_272_727_264),
            (6.0, -38.377_561_173_223_39),
            (27.0, -732.868_886_507_897_4),
        ] {
            // (on 1,201 points of [0, 30] against mpmath both this sum and
            // the single 28-term one it replaced err by at most 4.3e-16)
            assert!((ln_erfc(x) - v).abs() < 5e-16 * v.abs().max(1.0), "{x}: {} {v}", ln_erfc(x));
            assert!((ln_gamma_pq(0.5, x * x).1 - v).abs() < 1e-14 * v.abs().max(1.0), "{x}");
        }
        let (lo, hi) = ln_normal_cdf(-1.0);
        assert!(close(lo.exp(), 0.158_655_253_931_457_05, 1e-14) && close(hi.exp(), 0.841_344_746_068_542_9, 1e-14));
        assert!(close(ln_normal_cdf(-40.0).0, -804.608_442_013_754, 1e-13), "{}", ln_normal_cdf(-40.0).0);
        assert!(close(ln_normal_cdf(3.0).1.exp(), 0.001_349_898_031_630_094_6, 1e-13));
        assert!((ln_normal_cdf(0.0).0.exp() - 0.5).abs() < 1e-15);
        // P and Q sum to 1, and P's derivative in x is the gamma density
        for (a, x) in [(0.5, 0.2), (0.5, 7.0), (2.5, 3.4), (2.5, 3.6), (40.0, 35.0), (0.05, 0.01)] {
            let (lp, lq) = ln_gamma_pq(a, x);
            assert!((lp.exp() + lq.exp() - 1.0).abs() < 1e-14, "{a} {x}");
            let h = 1e-5 * x;
            let slope = (ln_gamma_pq(a, x + h).0.exp() - ln_gamma_pq(a, x - h).0.exp()) / (2.0 * h);
            let density = ((a - 1.0) * x.ln() - x - ln_gamma(a)).exp();
            assert!(close(slope, density, 1e-7), "{a} {x}: {slope} {density}");
        }
        assert!(ln_gamma_pq(-1.0, 1.0).0.is_nan() && ln_gamma_pq(1.0, -1.0).1.is_nan());
    }

    #[test]
    fn the_shape_solves_its_equation() {
        for a in [0.05f64, 0.7, 1.0, 3.3, 50.0, 4e4] {
            let s = a.ln() - digamma(a);
            let found = gamma_shape(s);
            assert!((found - a).abs() < 1e-10 * a, "{a}: {found}");
        }
        assert!(gamma_shape(0.0).is_nan());
        assert!(gamma_shape(-1.0).is_nan());
        assert!(gamma_shape(f64::NAN).is_nan());
    }

    #[test]
    fn the_lower_side_alone_is_the_pairs_bit_for_bit() {
        for z in [-40.0, -8.5, -1.0, -1e-300, -0.0, 0.0, 0.3, 7.0, 40.0, f64::NEG_INFINITY, f64::INFINITY] {
            assert_eq!(ln_normal_lower(z).to_bits(), ln_normal_cdf(z).0.to_bits(), "z = {z}");
        }
        assert!(ln_normal_lower(f64::NAN).is_nan());
    }
}
