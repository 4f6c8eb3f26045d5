//! The noise component (issue 32): a uniform density over a support
//! [lower, upper] in the data's units, its weight estimated with the
//! components' (mclust's noise, bmm's contaminant), so that a few gross
//! outliers neither take a component nor stretch one.
//!
//! Its log-density enters the E-step beside the components' l_m = log α_m +
//! log p_m(z) − h(z) (estep.rs), on the coordinates z the family is fitted
//! on (rescaled, and for the lognormal the logarithms): the uniform's
//! density there is 1/W times |dx/dz|, so per observation
//!
//!   l_0 = log π_0 + t(x),   t(x) = −log W + log |dx/dz| − h(z)
//!
//! (−∞ outside the support), and t depends on the data alone: it is
//! computed once per dataset (`Support::terms`), like h.

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::family::{with_family, ComponentFamily};
use crate::params::Family;

/// Where the noise component's uniform density lives, in the data's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Support {
    pub lower: f64,
    pub upper: f64,
}

impl Support {
    /// The support if it is one: finite, lower < upper, and a width that is
    /// a finite double.
    pub fn new(lower: f64, upper: f64) -> Option<Support> {
        (lower.is_finite() && upper.is_finite() && lower < upper && (upper - lower).is_finite())
            .then_some(Support { lower, upper })
    }

    /// The range of `values` (the default support), if they are not all
    /// equal.
    pub fn range_of(values: &[f64]) -> Option<Support> {
        let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        Support::new(lo, hi)
    }

    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }

    /// The log of the uniform's density, −log W.
    pub fn log_density(&self) -> f64 {
        -(self.upper - self.lower).ln()
    }

    /// t(x) of the module docs for each observation: `values` in the data's
    /// units, `fitted` the same observations on the coordinates the family
    /// is fitted on (z = (x − shift) / scale, or for a family fitted on
    /// the logarithms z = (log x − shift) / scale; scale 1 and shift 0 for
    /// the data's own units).
    pub fn terms(&self, family: Family, values: &[f64], fitted: &[f64], scale: f64) -> Vec<f64> {
        with_family!(family, F => self.terms_of::<F>(family.on_log_scale(), values, fitted, scale))
    }

    fn terms_of<F: ComponentFamily>(&self, on_log: bool, values: &[f64], fitted: &[f64], scale: f64) -> Vec<f64> {
        let base = self.log_density() + scale.ln();
        let term = |(&x, &z): (&f64, &f64)| {
            if !self.contains(x) {
                return f64::NEG_INFINITY;
            }
            // x = exp(shift + scale·z) on the log scale: |dx/dz| = scale·x
            let jacobian = if on_log { x.ln() } else { 0.0 };
            base + jacobian - F::log_h(z)
        };
        values.iter().zip(fitted).map(term).collect()
    }

    /// One draw from the uniform (the bootstrap's replicates).
    pub fn draw(&self, rng: &mut Pcg64) -> f64 {
        self.lower + (self.upper - self.lower) * rng.random::<f64>()
    }
}

/// The noise component of a prepared dataset: its support and t(x) per
/// observation (module docs), on the prepared coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct Noise {
    pub support: Support,
    pub terms: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family;

    #[test]
    fn terms_are_the_uniform_density_over_the_family_one() {
        // exp(l_0 − log π0 + h(z)) / |dx/dz| is the uniform's density 1/W
        // in the data's units, for a plain and a log-scale family
        let s = Support::new(0.5, 4.5).expect("a support");
        let values = [0.5, 1.0, 3.0, 4.5, 5.0];
        for (family, shift, scale) in
            [(Family::InvGauss, 0.0, 2.0), (Family::Normal, 1.0, 0.5), (Family::Gamma, 0.0, 3.0)]
        {
            let z: Vec<f64> = values.iter().map(|x| (x - shift) / scale).collect();
            let t = s.terms(family, &values, &z, scale);
            for i in 0..4 {
                let density = (t[i] + family::log_h(family, z[i])).exp() / scale;
                assert!((density - 0.25).abs() < 1e-14, "{family:?} {i}: {density}");
            }
            assert_eq!(t[4], f64::NEG_INFINITY);
        }
        let (shift, scale) = (0.3, 0.7);
        let z: Vec<f64> = values.iter().map(|x| (x.ln() - shift) / scale).collect();
        let t = s.terms(Family::Lognormal, &values, &z, scale);
        for i in 0..4 {
            let density = t[i].exp() / (scale * values[i]);
            assert!((density - 0.25).abs() < 1e-14, "lognormal {i}: {density}");
        }
    }

    #[test]
    fn supports_must_be_intervals() {
        assert!(Support::new(1.0, 1.0).is_none());
        assert!(Support::new(2.0, 1.0).is_none());
        assert!(Support::new(f64::NAN, 1.0).is_none());
        assert!(Support::new(-f64::MAX, f64::MAX).is_none());
        assert_eq!(Support::range_of(&[3.0, -1.0, 2.0]), Support::new(-1.0, 3.0));
        assert!(Support::range_of(&[2.0, 2.0]).is_none());
    }
}
