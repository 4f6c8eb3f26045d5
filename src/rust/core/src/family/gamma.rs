//! The gamma Gamma(μ, a): mean μ, shape a (rate a/μ, R's
//! dgamma(x, shape = a, rate = a / μ)), variance μ²/a; data must be
//! positive. log p(x) = a log a − log Γ(a) − a log μ + (a − 1) log x − a x/μ,
//! in the shared form c − k·q + h with c = a log a − log Γ(a) − a log μ,
//! k = a, q = x/μ − log x and h = −log x. The M-step's μ is S1/S0; its
//! shape solves log a − ψ(a) = log μ − S2/S0 (S2 = Σ r log x), a
//! one-dimensional root (special.rs). The shape does not scale with the
//! data: x' = x / scale has μ' = μ / scale and the same a.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::family::component::{standard_normal, valid_estimate, ComponentFamily};
use crate::params::Family;
use crate::special::{digammas, gamma_shape, ln_gamma, ln_gamma_pq};

/// The gamma family; its shape parameter is a.
#[derive(Clone, Copy, Debug)]
pub struct Gamma;

impl ComponentFamily for Gamma {
    const FAMILY: Family = Family::Gamma;

    const POSITIVE: bool = true;

    const SHAPE_IS_SCALE: bool = false;

    /// log x, for the M-step's Σ r·log x.
    #[inline(always)]
    fn aux(x: f64) -> f64 {
        x.ln()
    }

    /// −log x
    #[inline(always)]
    fn log_h(x: f64) -> f64 {
        -x.ln()
    }

    /// c = a log a − log Γ(a) − a log μ, k = a.
    #[inline(always)]
    fn constants(mu: f64, shape: f64) -> (f64, f64) {
        let a = shape;
        (a * a.ln() - ln_gamma(a) - a * mu.ln(), a)
    }

    /// 1/μ: q multiplies by it rather than divide per observation.
    #[inline(always)]
    fn q_mean(mu: f64) -> f64 {
        1.0 / mu
    }

    /// x/μ − log x, as x·(1/μ) − g (`terms` hands over 1/μ, `q_mean`).
    #[inline(always)]
    fn q(x: f64, g: f64, inv_mu: f64) -> f64 {
        x * inv_mu - g
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn q_avx2(x: __m256d, g: __m256d, inv_mu: __m256d) -> __m256d {
        _mm256_sub_pd(_mm256_mul_pd(x, inv_mu), g)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn q_avx512(x: __m512d, g: __m512d, inv_mu: __m512d) -> __m512d {
        _mm512_sub_pd(_mm512_mul_pd(x, inv_mu), g)
    }

    fn log_density(x: f64, mu: f64, shape: f64) -> f64 {
        let a = shape;
        a * (a / mu).ln() - ln_gamma(a) + (a - 1.0) * x.ln() - a * x / mu
    }

    /// Σr (x/μ − log x) = S1/μ − S2.
    fn q_sum(_s0: f64, s1: f64, s2: f64, mu: f64) -> f64 {
        s1 / mu - s2
    }

    /// P(a, a x/μ) and Q(a, a x/μ), the rate being a/μ.
    fn ln_cdfs(x: f64, mu: f64, shape: f64) -> (f64, f64) {
        if !(x > 0.0) {
            return (f64::NEG_INFINITY, 0.0);
        }
        ln_gamma_pq(shape, shape * x / mu)
    }

    #[inline(always)]
    fn mean_ok(mu: f64) -> bool {
        mu > 0.0
    }

    /// μ = S1/S0, and a from log a − ψ(a) = log μ − S2/S0.
    #[inline(always)]
    fn component_m_step(s0: f64, s1: f64, s2: f64) -> (f64, f64) {
        let mu = s1 / s0;
        (mu, gamma_shape(mu.ln() - s2 / s0))
    }

    /// log a − ψ(a) = log μ − S2/S0 + S1/(S0 μ) − 1 (the score in a given
    /// μ; at μ = S1/S0 the last two terms cancel)
    fn shape_given_mean(s0: f64, s1: f64, s2: f64, mu: f64) -> f64 {
        gamma_shape(mu.ln() - s2 / s0 + s1 / (s0 * mu) - 1.0)
    }

    fn ml_estimate(xs: &[f64]) -> Option<(f64, f64)> {
        let n = xs.len() as f64;
        let mu = xs.iter().sum::<f64>() / n;
        let mean_log = xs.iter().map(|x| x.ln()).sum::<f64>() / n;
        valid_estimate::<Self>(mu, gamma_shape(mu.ln() - mean_log))
    }

    /// log a − ψ(a), which the M-step sets to log μ − S2/S0.
    #[inline(always)]
    fn pooled_statistic(shape: f64) -> f64 {
        shape.ln() - digammas(shape).0
    }

    #[inline(always)]
    fn from_pooled(v: f64) -> f64 {
        gamma_shape(v)
    }

    /// μ/√a
    #[inline(always)]
    fn sd(mu: f64, shape: f64) -> f64 {
        mu / shape.sqrt()
    }

    /// Divided by the mean, as the inverse Gaussian: the gamma is closed
    /// under scaling, and its data must stay positive.
    #[inline(always)]
    fn location_scale(mean: f64, _sd: f64) -> (f64, f64) {
        (0.0, mean)
    }

    /// h = −log x, so Σ −log x = Σ −log x' − N log scale.
    #[inline(always)]
    fn log_h_sum_unscaled(h_sum: f64, n: f64, scale: f64) -> f64 {
        h_sum - n * scale.ln()
    }

    /// μ scales, the shape does not.
    #[inline(always)]
    fn unscale(mu: f64, shape: f64, _shift: f64, scale: f64) -> (f64, f64) {
        (mu * scale, shape)
    }

    #[inline(always)]
    fn rescale(mu: f64, shape: f64, _shift: f64, scale: f64) -> (f64, f64) {
        (mu / scale, shape)
    }

    /// a/μ², a/μ, log a + 1 − ψ(a) − log μ, 1/μ, 2a/μ³, 1/a − ψ′(a).
    fn derivative_constants(mu: f64, shape: f64) -> [f64; 6] {
        let a = shape;
        let (di, tri) = digammas(a);
        [a / (mu * mu), a / mu, a.ln() + 1.0 - di - mu.ln(), 1.0 / mu, 2.0 * a / (mu * mu * mu), 1.0 / a - tri]
    }

    /// u = (a(x − μ)/μ², log a + 1 − ψ(a) − log μ + log x − x/μ),
    /// h = [[a/μ² − 2ax/μ³, (x − μ)/μ²], [(x − μ)/μ², 1/a − ψ′(a)]]
    /// (the μ argument, 1/μ from `terms`, is not needed: `c` holds it).
    #[inline(always)]
    fn derivatives(x: f64, g: f64, _inv_mu: f64, c: &[f64; 6]) -> [f64; 5] {
        [c[0] * x - c[1], c[2] + g - x * c[3], c[0] - c[4] * x, c[3] * (x * c[3] - 1.0), c[5]]
    }

    /// Marsaglia & Tsang (2000): a standard Normal and a uniform per try;
    /// for a < 1, a draw of shape a + 1 times U^(1/a).
    fn draw(mu: f64, shape: f64, rng: &mut Pcg64) -> f64 {
        let a = shape;
        let boost = if a < 1.0 { rng.random::<f64>().powf(1.0 / a) } else { 1.0 };
        let d = if a < 1.0 { a + 1.0 } else { a } - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let z = standard_normal(rng);
            let v = 1.0 + c * z;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = 1.0 - rng.random::<f64>();
            if u.ln() < 0.5 * z * z + d - d * v + d * v.ln() {
                return d * v * boost * mu / a;
            }
        }
    }

    /// μ·e^(∓half/μ): positive, about `half` either side of μ.
    fn split_means(mu: f64, half: f64) -> (f64, f64) {
        (mu * (-half / mu).exp(), mu * (half / mu).exp())
    }
}
