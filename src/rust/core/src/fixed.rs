//! Parameters fixed at given values (bulkem(fixed =), mixtools'
//! `mean.constr` style): which weights, means and shapes of a K-component
//! mixture the user fixed, imposed on every start (Prepared::start) and
//! kept by every M-step (mstep.rs, em_batched.cu), and how many free
//! parameters that leaves (AIC/BIC, constrained.rs's information).

use crate::limits::MAX_COMPONENTS;
use crate::params::{Params, Stats};

/// The fixed values as a mixture's parameters, NaN where free (its noise
/// and ν unused): a Params, so that rescaling, unscaling and reordering are
/// the parameters' own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fixed(pub Params);

fn given(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl Fixed {
    /// Nothing fixed, for a K-component mixture.
    pub fn none(k: usize) -> Fixed {
        let nan = [f64::NAN; MAX_COMPONENTS];
        Fixed(Params { alpha: nan, mu: nan, shape: nan, ..Params::zeroed(k) })
    }

    pub fn k(&self) -> usize {
        self.0.k
    }
    pub fn alpha(&self, m: usize) -> Option<f64> {
        given(self.0.alpha[m])
    }
    pub fn mu(&self, m: usize) -> Option<f64> {
        given(self.0.mu[m])
    }
    pub fn shape(&self, m: usize) -> Option<f64> {
        given(self.0.shape[m])
    }

    /// Whether any weight is fixed.
    pub fn any_weight(&self) -> bool {
        (0..self.k()).any(|m| self.alpha(m).is_some())
    }

    /// Whether any shape is fixed.
    pub fn any_shape(&self) -> bool {
        (0..self.k()).any(|m| self.shape(m).is_some())
    }

    /// The weight the fixed weights leave to the free ones (a noise
    /// component's among them).
    pub(crate) fn weight_left(&self) -> f64 {
        1.0 - (0..self.k()).filter_map(|m| self.alpha(m)).sum::<f64>()
    }

    /// `p` with the fixed means and shapes in place, and the free weights
    /// (with `p`'s noise weight) scaled to share what the fixed weights
    /// leave, in their proportions: a start that obeys the constraint.
    pub fn impose(&self, p: &Params) -> Params {
        let mut out = *p;
        for m in 0..p.k {
            out.mu[m] = self.mu(m).unwrap_or(p.mu[m]);
            out.shape[m] = self.shape(m).unwrap_or(p.shape[m]);
        }
        if self.any_weight() {
            let free = (0..p.k).filter(|&m| self.alpha(m).is_none()).map(|m| p.alpha[m]).sum::<f64>() + p.noise;
            self.share(&mut out, |m| p.alpha[m] / free, p.noise / free);
        }
        out
    }

    /// The M-step's weights of `p` under fixed weights: the fixed ones, and
    /// the free ones (and the noise's) sharing the rest in proportion to
    /// their S0, the maximum of Σ S0 log α under the constraint.
    pub fn weights(&self, p: &mut Params, st: &Stats) {
        if !self.any_weight() {
            return;
        }
        let free = (0..p.k).filter(|&m| self.alpha(m).is_none()).map(|m| st.s0[m]).sum::<f64>() + st.s0_noise;
        self.share(p, |m| st.s0[m] / free, st.s0_noise / free);
    }

    /// Fixed weights as given, each free weight `left` × `part(m)`, the
    /// noise's `left` × `noise_part`.
    fn share(&self, p: &mut Params, part: impl Fn(usize) -> f64, noise_part: f64) {
        let left = self.weight_left();
        for m in 0..p.k {
            p.alpha[m] = self.alpha(m).unwrap_or_else(|| left * part(m));
        }
        if p.noise > 0.0 {
            p.noise = left * noise_part;
        }
    }

    /// How many free parameters fixing removes from the mixture (with a
    /// noise component if `noise`): every fixed mean and shape, and of the
    /// K − 1 (with noise K) free weights those the fixed ones determine.
    pub fn removed(&self, noise: bool) -> usize {
        let k = self.k();
        let count = |f: &dyn Fn(usize) -> bool| (0..k).filter(|&m| f(m)).count();
        let free_weights = count(&|m| self.alpha(m).is_none()) + noise as usize;
        let weights = (k - 1 + noise as usize) - free_weights.saturating_sub(1);
        count(&|m| self.mu(m).is_some()) + count(&|m| self.shape(m).is_some()) + weights
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(alpha: &[f64], mu: &[f64], shape: &[f64]) -> Fixed {
        let mut f = Fixed::none(alpha.len());
        f.0.alpha[..alpha.len()].copy_from_slice(alpha);
        f.0.mu[..mu.len()].copy_from_slice(mu);
        f.0.shape[..shape.len()].copy_from_slice(shape);
        f
    }

    #[test]
    fn removed_counts_what_the_constraint_determines() {
        let nan = f64::NAN;
        // means and shapes one each
        assert_eq!(fixed(&[nan; 3], &[nan, 2.0, nan], &[1.0, nan, nan]).removed(false), 2);
        // one weight of three: two free weights were one free parameter less
        assert_eq!(fixed(&[0.2, nan, nan], &[nan; 3], &[nan; 3]).removed(false), 1);
        // two of three: the third is determined, both free weights gone
        assert_eq!(fixed(&[0.2, 0.3, nan], &[nan; 3], &[nan; 3]).removed(false), 2);
        // all three (summing to 1): as two
        assert_eq!(fixed(&[0.2, 0.3, 0.5], &[nan; 3], &[nan; 3]).removed(false), 2);
        // with noise, all three fixed leave the noise's weight determined
        assert_eq!(fixed(&[0.2, 0.3, 0.4], &[nan; 3], &[nan; 3]).removed(true), 3);
        assert_eq!(fixed(&[0.2, nan, nan], &[nan; 3], &[nan; 3]).removed(true), 1);
        assert_eq!(Fixed::none(4).removed(true), 0);
    }

    #[test]
    fn weights_share_what_the_fixed_leave_in_proportion() {
        let nan = f64::NAN;
        let f = fixed(&[0.5, nan, nan], &[nan; 3], &[nan; 3]);
        let mut st = Stats::zero();
        st.s0[..3].copy_from_slice(&[10.0, 30.0, 10.0]);
        st.s0_noise = 10.0;
        let mut p = Params { noise: 0.1, ..Params::zeroed(3) };
        f.weights(&mut p, &st);
        assert_eq!(p.alpha[0], 0.5);
        assert!((p.alpha[1] - 0.3).abs() < 1e-15 && (p.alpha[2] - 0.1).abs() < 1e-15);
        assert!((p.noise - 0.1).abs() < 1e-15);
        // a start: the free weights and the noise's scaled alike
        let mut q = Params { noise: 0.2, ..Params::zeroed(3) };
        q.alpha[..3].copy_from_slice(&[0.2, 0.2, 0.4]);
        q.mu[..3].copy_from_slice(&[1.0, 2.0, 3.0]);
        let f = fixed(&[0.5, nan, nan], &[nan, 7.0, nan], &[nan; 3]);
        let r = f.impose(&q);
        assert_eq!((r.alpha[0], r.mu[1], r.mu[2]), (0.5, 7.0, 3.0));
        assert!((r.alpha[1] + r.alpha[2] + r.noise - 0.5).abs() < 1e-15);
        assert!((r.alpha[2] / r.alpha[1] - 2.0).abs() < 1e-14 && (r.noise / r.alpha[1] - 1.0).abs() < 1e-14);
    }
}
