//! The inverse Gaussian IG(μ, λ) (DESIGN §3): mean μ, shape λ, variance
//! μ³/λ; data must be positive.

use crate::family::component::{valid_estimate, ComponentFamily};
use crate::params::Family;

/// The inverse Gaussian family; its shape parameter is λ.
#[derive(Clone, Copy, Debug)]
pub struct InvGauss;

impl ComponentFamily for InvGauss {
    const FAMILY: Family = Family::InvGauss;

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

    fn ml_estimate(xs: &[f64]) -> Option<(f64, f64)> {
        let n = xs.len() as f64;
        let mu = xs.iter().sum::<f64>() / n;
        // 1/λ = mean(1/x − 1/μ)
        let inv_lambda = xs.iter().map(|&x| 1.0 / x - 1.0 / mu).sum::<f64>() / n;
        valid_estimate::<Self>(mu, 1.0 / inv_lambda)
    }

    /// √(μ³/λ)
    #[inline(always)]
    fn sd(mu: f64, shape: f64) -> f64 {
        (mu * mu * mu / shape).sqrt()
    }

    const POSITIVE: bool = true;

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
}
