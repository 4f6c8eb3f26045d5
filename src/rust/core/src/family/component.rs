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

use rand::RngExt;
use rand_pcg::Pcg64;

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

    /// The standard deviation of one component: the quantity of the
    /// spurious-solution screen (screen.rs: a spike is a component far
    /// narrower than the widest) and of the M-step's collapse guard.
    fn sd(mu: f64, shape: f64) -> f64;

    /// Whether the family lives on x > 0 only (its data must be positive).
    const POSITIVE: bool;

    /// Whether `x` is in the family's support.
    #[inline(always)]
    fn in_support(x: f64) -> bool {
        x.is_finite() && (!Self::POSITIVE || x > 0.0)
    }

    /// Rescaling (DESIGN §3; dataset.rs): the (shift, scale) with which
    /// data of mean `mean` and standard deviation `sd` are fitted, as
    /// x' = (x − shift) / scale, so that the M-step's differences do not
    /// cancel far from unit scale.
    fn location_scale(mean: f64, sd: f64) -> (f64, f64);

    /// Σ h(x) over `n` observations in their own units, from `h_sum`, the
    /// same sum over the rescaled data (rescaled by `scale`).
    fn log_h_sum_unscaled(h_sum: f64, n: f64, scale: f64) -> f64;

    /// One component's (μ, shape) fitted on the rescaled data, in the
    /// data's own units. The default is a location-scale family's (both
    /// families here); a family whose shape is not a scale overrides it,
    /// `rescale` and the Jacobian of information.rs's `covariance`.
    #[inline(always)]
    fn unscale(mu: f64, shape: f64, shift: f64, scale: f64) -> (f64, f64) {
        (mu * scale + shift, shape * scale)
    }

    /// The inverse of `unscale`: (μ, shape) in the data's units, on the
    /// rescaled data.
    #[inline(always)]
    fn rescale(mu: f64, shape: f64, shift: f64, scale: f64) -> (f64, f64) {
        ((mu - shift) / scale, shape / scale)
    }

    /// One draw from the component (μ, shape), for the parametric
    /// bootstrap's replicates (simulate.rs); `rng`'s draws are part of a
    /// replicate's definition, so their number and order are fixed.
    fn draw(mu: f64, shape: f64, rng: &mut Pcg64) -> f64;

    /// The means of the two components a component of mean μ is split into
    /// for a K + 1 start next to a K-component fit (bootstrap.rs), `half`
    /// (half its sd) either side of μ, both inside the family's range.
    fn split_means(mu: f64, half: f64) -> (f64, f64);
}

/// `(μ, shape)` if it is a valid component of `F`: finite, a mean `F`
/// accepts, a positive shape.
pub(super) fn valid_estimate<F: ComponentFamily>(mu: f64, shape: f64) -> Option<(f64, f64)> {
    (mu.is_finite() && F::mean_ok(mu) && shape.is_finite() && shape > 0.0).then_some((mu, shape))
}

/// A standard Normal draw by Box and Muller (one of the pair; 1 − u keeps
/// the logarithm's argument in (0, 1]).
pub(crate) fn standard_normal(rng: &mut Pcg64) -> f64 {
    let u = 1.0 - rng.random::<f64>();
    let v = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}
