//! The Normal N(μ, σ²) (DESIGN §3): mean μ, shape σ; any finite data.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use rand_pcg::Pcg64;

use crate::family::component::{standard_normal, valid_estimate, CdfDerivatives, ComponentFamily, LN_2PI};
use crate::params::Family;
use crate::special::ln_normal_cdf;

/// The Normal family; its shape parameter is σ.
#[derive(Clone, Copy, Debug)]
pub struct Normal;

impl ComponentFamily for Normal {
    const FAMILY: Family = Family::Normal;

    const POSITIVE: bool = false;

    /// x², for the M-step's Σ r·x².
    #[inline(always)]
    fn aux(x: f64) -> f64 {
        x * x
    }

    /// 0
    #[inline(always)]
    fn log_h(_x: f64) -> f64 {
        0.0
    }

    /// c = −log σ − ½ log 2π, k = 1 / (2σ²).
    #[inline(always)]
    fn constants(_mu: f64, shape: f64) -> (f64, f64) {
        (-shape.ln() - 0.5 * LN_2PI, 1.0 / (2.0 * shape * shape))
    }

    /// (x − μ)²
    #[inline(always)]
    fn q(x: f64, _g: f64, mu: f64) -> f64 {
        let d = x - mu;
        d * d
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn q_avx2(x: __m256d, _g: __m256d, mu: __m256d) -> __m256d {
        let d = _mm256_sub_pd(x, mu);
        _mm256_mul_pd(d, d)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn q_avx512(x: __m512d, _g: __m512d, mu: __m512d) -> __m512d {
        let d = _mm512_sub_pd(x, mu);
        _mm512_mul_pd(d, d)
    }

    fn log_density(x: f64, mu: f64, shape: f64) -> f64 {
        let sigma = shape;
        -0.5 * LN_2PI - sigma.ln() - (x - mu) * (x - mu) / (2.0 * sigma * sigma)
    }

    /// Σr (x − μ)² = S2 − 2μ S1 + μ² S0.
    fn q_sum(s0: f64, s1: f64, s2: f64, mu: f64) -> f64 {
        s2 - 2.0 * mu * s1 + mu * mu * s0
    }

    /// Φ((x − μ)/σ) and its upper tail.
    fn ln_cdfs(x: f64, mu: f64, shape: f64) -> (f64, f64) {
        ln_normal_cdf((x - mu) / shape)
    }

    /// With z = (x − μ)/σ and s = log σ: F_μ = −φ(z)/σ, F_s = −zφ(z),
    /// F_μμ = −zφ(z)/σ², F_μs = (1 − z²)φ(z)/σ, F_ss = z(1 − z²)φ(z).
    fn cdf_derivatives(x: f64, mu: f64, shape: f64) -> Option<CdfDerivatives> {
        let z = (x - mu) / shape;
        let w = 1.0 - z * z;
        Some(CdfDerivatives {
            ln_cdfs: ln_normal_cdf(z),
            scale: -0.5 * (z * z + LN_2PI),
            grad: [-1.0 / shape, -z],
            hess: [-z / (shape * shape), w / shape, z * w],
        })
    }

    #[inline(always)]
    fn mean_ok(_mu: f64) -> bool {
        true
    }

    /// μ = S1/S0 and σ² = S2/S0 − μ² (S2 = Σr·x²).
    #[inline(always)]
    fn component_m_step(s0: f64, s1: f64, s2: f64) -> (f64, f64) {
        let mu = s1 / s0;
        let shape = (s2 / s0 - mu * mu).sqrt();
        (mu, shape)
    }

    /// σ² = Σr (x − μ)² / S0 = S2/S0 − 2μ S1/S0 + μ²
    fn shape_given_mean(s0: f64, s1: f64, s2: f64, mu: f64) -> f64 {
        (s2 / s0 - 2.0 * mu * s1 / s0 + mu * mu).sqrt()
    }

    fn ml_estimate(xs: &[f64]) -> Option<(f64, f64)> {
        let n = xs.len() as f64;
        let mu = xs.iter().sum::<f64>() / n;
        valid_estimate::<Self>(mu, (xs.iter().map(|&x| (x - mu) * (x - mu)).sum::<f64>() / n).sqrt())
    }

    /// σ²: the M-step's σ² is S2/S0 − μ².
    #[inline(always)]
    fn pooled_statistic(shape: f64) -> f64 {
        shape * shape
    }

    #[inline(always)]
    fn from_pooled(v: f64) -> f64 {
        v.sqrt()
    }

    /// σ
    #[inline(always)]
    fn sd(_mu: f64, shape: f64) -> f64 {
        shape
    }

    /// Standardised.
    #[inline(always)]
    fn location_scale(mean: f64, sd: f64) -> (f64, f64) {
        (mean, sd)
    }

    /// h = 0.
    #[inline(always)]
    fn log_h_sum_unscaled(_h_sum: f64, _n: f64, _scale: f64) -> f64 {
        0.0
    }

    /// 1/σ², 1/σ, 1/σ³, 3/σ⁴, 2/σ³, 1/σ² (h_μμ = −1/σ²).
    fn derivative_constants(_mu: f64, shape: f64) -> [f64; 6] {
        let s2 = shape * shape;
        [1.0 / s2, 1.0 / shape, 1.0 / (s2 * shape), 3.0 / (s2 * s2), 2.0 / (s2 * shape), 1.0 / s2]
    }

    /// With d = x − μ: u = (d/σ², −1/σ + d²/σ³),
    /// h = [[−1/σ², −2d/σ³], [−2d/σ³, 1/σ² − 3d²/σ⁴]].
    #[inline(always)]
    fn derivatives(x: f64, _g: f64, mu: f64, c: &[f64; 6]) -> [f64; 5] {
        let d = x - mu;
        [d * c[0], d * d * c[2] - c[1], -c[5], -c[4] * d, c[5] - d * d * c[3]]
    }

    /// μ + σ·z, z a standard Normal.
    fn draw(mu: f64, shape: f64, rng: &mut Pcg64) -> f64 {
        let z = standard_normal(rng);
        mu + shape * z
    }

    fn split_means(mu: f64, half: f64) -> (f64, f64) {
        (mu - half, mu + half)
    }
}
