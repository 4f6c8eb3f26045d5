//! The inverse Gaussian IG(μ, λ) (DESIGN §3): mean μ, shape λ, variance
//! μ³/λ; data must be positive.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::family::component::{standard_normal, valid_estimate, CdfDerivatives, ComponentFamily, LN_2PI};
use crate::mathx::log_sum_exp;
use crate::params::Family;
use crate::special::{ln_1m_exp, ln_normal_cdf, ln_normal_lower};

/// The inverse Gaussian family; its shape parameter is λ.
#[derive(Clone, Copy, Debug)]
pub struct InvGauss;

impl ComponentFamily for InvGauss {
    const FAMILY: Family = Family::InvGauss;

    const POSITIVE: bool = true;

    /// 1/x, so that q needs no division.
    #[inline(always)]
    fn aux(x: f64) -> f64 {
        1.0 / x
    }

    /// −3/2 log x
    #[inline(always)]
    fn log_h(x: f64) -> f64 {
        -1.5 * x.ln()
    }

    /// c = ½ log λ − ½ log 2π, k = λ / (2μ²).
    #[inline(always)]
    fn constants(mu: f64, shape: f64) -> (f64, f64) {
        (0.5 * (shape.ln() - LN_2PI), shape / (2.0 * mu * mu))
    }

    /// (x − μ)² / x, as (x − μ)² g.
    #[inline(always)]
    fn q(x: f64, g: f64, mu: f64) -> f64 {
        let d = x - mu;
        d * d * g
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn q_avx2(x: __m256d, g: __m256d, mu: __m256d) -> __m256d {
        let d = _mm256_sub_pd(x, mu);
        let dd = _mm256_mul_pd(d, d);
        _mm256_mul_pd(dd, g)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn q_avx512(x: __m512d, g: __m512d, mu: __m512d) -> __m512d {
        let d = _mm512_sub_pd(x, mu);
        let dd = _mm512_mul_pd(d, d);
        _mm512_mul_pd(dd, g)
    }

    fn log_density(x: f64, mu: f64, shape: f64) -> f64 {
        let lambda = shape;
        0.5 * (lambda.ln() - LN_2PI - 3.0 * x.ln()) - lambda * (x - mu) * (x - mu) / (2.0 * mu * mu * x)
    }

    /// Σr (x − μ)²/x = S1 − 2μ S0 + μ² S2.
    fn q_sum(s0: f64, s1: f64, s2: f64, mu: f64) -> f64 {
        s1 - 2.0 * mu * s0 + mu * mu * s2
    }

    /// F(x) = Φ(√(λ/x)(x/μ − 1)) + e^(2λ/μ) Φ(−√(λ/x)(x/μ + 1)) (`cdf_parts`).
    fn ln_cdfs(x: f64, mu: f64, shape: f64) -> (f64, f64) {
        if !(x > 0.0) {
            return (f64::NEG_INFINITY, 0.0);
        }
        if x.is_infinite() {
            return (0.0, f64::NEG_INFINITY);
        }
        cdf_parts(x, mu, shape).ln_cdfs
    }

    /// With r = √(λ/x), u = r(x/μ − 1), v = r(x/μ + 1) (so φ(u) =
    /// e^(2λ/μ) φ(v), whence the Φ(u) term's μ-derivative cancels the
    /// reflected term's φ part) and E = e^(2λ/μ) Φ(−v):
    /// F_μ = −(2λ/μ²) E, F_λ = −φ(u)/√(λx) + (2/μ) E,
    /// E_μ = −(2λ/μ²) E + φ(u) r x/μ², E_λ = (2/μ) E − φ(u) v/(2λ),
    /// F_μμ = (4λ/μ³) E − (2λ/μ²) E_μ, F_μλ = −(2/μ²) E − (2λ/μ²) E_λ,
    /// F_λλ = (u² + 1) φ(u)/(2λ√(λx)) + (2/μ) E_λ; then in s = log λ
    /// (∂s = λ∂λ, ∂ss = λ²∂λλ + λ∂λ). Everything in units of φ(u): E/φ(u)
    /// = Φ(−v)/φ(v), the Mills ratio, at most √(π/2).
    fn cdf_derivatives(x: f64, mu: f64, shape: f64) -> Option<CdfDerivatives> {
        if !(x > 0.0) {
            return Some(CdfDerivatives::constant((f64::NEG_INFINITY, 0.0)));
        }
        let lam = shape;
        let CdfParts { ln_cdfs, r, u, v, ln_upper_v } = cdf_parts(x, mu, lam);
        // E/φ(u) = Φ(−v)/φ(v)
        let e = (ln_upper_v + 0.5 * (v * v + LN_2PI)).exp();
        let (mu2, root) = (mu * mu, (lam * x).sqrt());
        let e_mu = -2.0 * lam / mu2 * e + r * x / mu2;
        let e_lam = 2.0 / mu * e - v / (2.0 * lam);
        let f_mu = -2.0 * lam / mu2 * e;
        let f_lam = -1.0 / root + 2.0 / mu * e;
        let f_mumu = 4.0 * lam / (mu2 * mu) * e - 2.0 * lam / mu2 * e_mu;
        let f_mulam = -2.0 / mu2 * e - 2.0 * lam / mu2 * e_lam;
        let f_lamlam = (u * u + 1.0) / (2.0 * lam * root) + 2.0 / mu * e_lam;
        Some(CdfDerivatives {
            ln_cdfs,
            scale: -0.5 * (u * u + LN_2PI),
            grad: [f_mu, lam * f_lam],
            hess: [f_mumu, lam * f_mulam, lam * lam * f_lamlam + lam * f_lam],
        })
    }

    #[inline(always)]
    fn mean_ok(mu: f64) -> bool {
        mu > 0.0
    }

    /// μ = S1/S0 and λ = S0 / (S2 − S0²/S1) (S2 = Σr/x; the exact update
    /// with the new μ).
    #[inline(always)]
    fn component_m_step(s0: f64, s1: f64, s2: f64) -> (f64, f64) {
        let mu = s1 / s0;
        let shape = s0 / (s2 - s0 * s0 / s1);
        (mu, shape)
    }

    /// 1/λ = Σr (x − μ)²/(μ² x) / S0 = S1/(S0 μ²) − 2/μ + S2/S0
    fn shape_given_mean(s0: f64, s1: f64, s2: f64, mu: f64) -> f64 {
        1.0 / (s1 / (s0 * mu * mu) - 2.0 / mu + s2 / s0)
    }

    fn ml_estimate(xs: &[f64]) -> Option<(f64, f64)> {
        let n = xs.len() as f64;
        let mu = xs.iter().sum::<f64>() / n;
        // 1/λ = mean(1/x − 1/μ)
        let inv_lambda = xs.iter().map(|&x| 1.0 / x - 1.0 / mu).sum::<f64>() / n;
        valid_estimate::<Self>(mu, 1.0 / inv_lambda)
    }

    /// 1/λ: the M-step's 1/λ is Σr(1/x − 1/μ)/S0.
    #[inline(always)]
    fn pooled_statistic(shape: f64) -> f64 {
        1.0 / shape
    }

    #[inline(always)]
    fn from_pooled(v: f64) -> f64 {
        1.0 / v
    }

    /// √(μ³/λ)
    #[inline(always)]
    fn sd(mu: f64, shape: f64) -> f64 {
        (mu * mu * mu / shape).sqrt()
    }

    /// Divided by the mean: the inverse Gaussian is closed under scaling
    /// (cX ~ IG(cμ, cλ)), and its data must stay positive.
    #[inline(always)]
    fn location_scale(mean: f64, _sd: f64) -> (f64, f64) {
        (0.0, mean)
    }

    /// h = −3/2 log x, so Σ −3/2 log x = Σ −3/2 log x' − 3/2 N log scale.
    #[inline(always)]
    fn log_h_sum_unscaled(h_sum: f64, n: f64, scale: f64) -> f64 {
        h_sum - 1.5 * n * scale.ln()
    }

    /// λ/μ³, 1/(2λ), 1/(2μ²), λ/μ⁴, 1/μ³, −1/(2λ²).
    fn derivative_constants(mu: f64, shape: f64) -> [f64; 6] {
        let (lambda, mu2) = (shape, mu * mu);
        let mu3 = mu2 * mu;
        [lambda / mu3, 0.5 / lambda, 0.5 / mu2, lambda / (mu2 * mu2), 1.0 / mu3, -0.5 / (lambda * lambda)]
    }

    /// With d = x − μ: u = (λd/μ³, 1/(2λ) − d²/(2μ²x)),
    /// h = [[λ(2μ − 3x)/μ⁴, d/μ³], [d/μ³, −1/(2λ²)]].
    #[inline(always)]
    fn derivatives(x: f64, g: f64, mu: f64, c: &[f64; 6]) -> [f64; 5] {
        let d = x - mu;
        [c[0] * d, c[1] - d * d * g * c[2], c[3] * (2.0 * mu - 3.0 * x), c[4] * d, c[5]]
    }

    /// A standard Normal, then a uniform (inverse_gaussian).
    fn draw(mu: f64, shape: f64, rng: &mut Pcg64) -> f64 {
        let z = standard_normal(rng);
        inverse_gaussian(mu, shape, z, rng.random::<f64>())
    }

    /// μ·e^(∓half/μ): positive, about `half` either side of μ.
    fn split_means(mu: f64, half: f64) -> (f64, f64) {
        (mu * (-half / mu).exp(), mu * (half / mu).exp())
    }
}

/// An inverse Gaussian IG(μ, λ) draw by Michael, Schucany & Haas (1976)
/// from a standard Normal `z` and a uniform `u`. The smaller root is written
/// μ / (1 + t + √(t(t + 2))), t = μz²/(2λ), which does not cancel when μz²
/// is far above λ (the textbook μ + μ²y/2λ − ... does).
fn inverse_gaussian(mu: f64, lambda: f64, z: f64, u: f64) -> f64 {
    let t = mu * z * z / (2.0 * lambda);
    let x = mu / (1.0 + t + (t * (t + 2.0)).sqrt());
    if u * (mu + x) <= mu {
        x
    } else {
        mu * mu / x
    }
}

/// What F(x) of IG(μ, λ) is made of at 0 < x < ∞: r = √(λ/x),
/// u = r(x/μ − 1), v = r(x/μ + 1), log Φ(−v), and (log F, log(1 − F)):
/// F = Φ(u) + e^(2λ/μ) Φ(−v) (Chhikara & Folks 1989), the second term's
/// exponential taken inside the log.
struct CdfParts {
    ln_cdfs: (f64, f64),
    r: f64,
    u: f64,
    v: f64,
    ln_upper_v: f64,
}

fn cdf_parts(x: f64, mu: f64, lam: f64) -> CdfParts {
    let r = (lam / x).sqrt();
    let (u, v) = (r * (x / mu - 1.0), r * (x / mu + 1.0));
    let (ln_below, ln_above) = ln_normal_cdf(u);
    let ln_upper_v = ln_normal_lower(-v);
    let ln_reflected = 2.0 * lam / mu + ln_upper_v;
    let ln_f = log_sum_exp(&[ln_below, ln_reflected]);
    // 1 − F = Φ(−u) − e^(2λ/μ) Φ(−v), the reflected term the smaller
    let ln_s = ln_above + ln_1m_exp((ln_reflected - ln_above).min(0.0));
    CdfParts { ln_cdfs: (ln_f, ln_s), r, u, v, ln_upper_v }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_gaussian_root_does_not_cancel() {
        // μz²/λ = 1e12: the textbook form returns 0 or a negative value
        let x = inverse_gaussian(1.0, 1e-12, 1.0, 0.0);
        assert!(x > 0.0 && (x - 1e-12).abs() < 1e-15, "{x}");
    }
}
