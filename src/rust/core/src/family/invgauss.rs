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
}
