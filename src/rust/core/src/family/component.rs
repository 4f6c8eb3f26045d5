//! What a component family is: the trait `ComponentFamily`, which holds
//! all of a family's mathematics, implemented once per family
//! (invgauss.rs, normal.rs). The CPU engine and the host-side finishing use
//! only the trait (directly where generic, or through the functions of
//! family/mod.rs that take the runtime tag).
//!
//! Both families share one shape: log p(x) = c − k·q(x, μ) + h(x), where
//!   inverse Gaussian: c = ½ log λ − ½ log 2π, k = λ / (2μ²), q = (x − μ)² / x,
//!                     h = −3/2 log x;
//!   Normal:           c = −log σ − ½ log 2π,   k = 1 / (2σ²),  q = (x − μ)²,
//!                     h = 0.
//! h does not depend on the parameters, so the E-step sums it once per dataset.
//! Each dataset carries one auxiliary value per observation, `g`: 1/x for the
//! inverse Gaussian (so q needs no division) and x² for the Normal; the M-step
//! needs Σ r·g for both.

use crate::params::Family;

/// log(2π)
pub const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// One component family's mathematics. Implemented by a unit type per
/// family; nothing here takes `self`, so generic code is monomorphised per
/// family (as the E-step's loops must be) and needs no object.
pub trait ComponentFamily {
    /// The runtime tag of this family.
    const FAMILY: Family;

    /// Whether μ is a usable mean (the inverse Gaussian's must be positive).
    fn mean_ok(mu: f64) -> bool;

    /// The M-step of one component: its new (μ, shape) from its sufficient
    /// statistics S0 = Σr, S1 = Σr·x, S2 = Σr·g (DESIGN §3), in closed
    /// form. A family with an inner one-dimensional solve does it here.
    fn component_m_step(s0: f64, s1: f64, s2: f64) -> (f64, f64);

    /// Maximum-likelihood (μ, shape) of one component from a few
    /// observations, as random starts use them; `None` when the estimate is
    /// not a valid component (all values equal, non-finite, shape ≤ 0, a
    /// mean `mean_ok` rejects).
    fn ml_estimate(xs: &[f64]) -> Option<(f64, f64)>;
}

/// `(μ, shape)` if it is a valid component of `F`: finite, a mean `F`
/// accepts, a positive shape.
pub(super) fn valid_estimate<F: ComponentFamily>(mu: f64, shape: f64) -> Option<(f64, f64)> {
    (mu.is_finite() && F::mean_ok(mu) && shape.is_finite() && shape > 0.0).then_some((mu, shape))
}
