//! Special functions the gamma family needs (family/gamma.rs): log Γ,
//! digamma ψ and trigamma ψ′ for x > 0, each by its recurrence up to
//! x ≥ 10 and its asymptotic series there, to the B₁₂ term (Abramowitz &
//! Stegun 6.1.41, 6.3.18, 6.4.12): relative errors near 1e-15 over the
//! range the gamma's shapes take. And the gamma's shape from its M-step's
//! statistic, whose Newton steps take ψ and ψ′ at one point together
//! (`digammas`), one reciprocal per recurrence step: the GPU's fp64
//! divisions are what the M-step costs there.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
