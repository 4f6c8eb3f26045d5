//! The spurious-solution screen (DESIGN §3): which finished starts are
//! admissible. A mixture likelihood is unbounded; a component squeezed onto
//! a few nearly tied observations drives it up without meaning anything
//! (McLachlan & Peel 2000, §3.10). Every engine applies this same rule to a
//! start's final parameters (the CUDA kernel mirrors `spurious`).

use crate::family::component_sd;
use crate::limits::{SPURIOUS_COUNT, SPURIOUS_COUNT_RATIO, SPURIOUS_RATIO};
use crate::params::{Family, Params};

/// The screen's thresholds; a threshold of 0 turns its rule off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Screen {
    /// Hathaway's rule: spurious if some component's sd is below `ratio`
    /// times the largest.
    pub ratio: f64,
    /// Small and narrow: spurious if some component expects fewer than
    /// `count` observations (n·α) and its sd is below `count_ratio` times the
    /// largest.
    pub count: f64,
    pub count_ratio: f64,
}

impl Default for Screen {
    fn default() -> Screen {
        Screen { ratio: SPURIOUS_RATIO, count: SPURIOUS_COUNT, count_ratio: SPURIOUS_COUNT_RATIO }
    }
}

impl Screen {
    /// `None` if the thresholds are usable, else what is wrong (for R's
    /// argument error).
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        let ok = |v: f64, most: f64| v.is_finite() && (0.0..=most).contains(&v);
        if !ok(self.ratio, 1.0) {
            return Some(("control$spurious.ratio", "must be a number from 0 to 1"));
        }
        if !ok(self.count, f64::MAX) {
            return Some(("control$spurious.count", "must be a non-negative number"));
        }
        if !ok(self.count_ratio, 1.0) {
            return Some(("control$spurious.count.ratio", "must be a number from 0 to 1"));
        }
        None
    }

    /// Whether a start that ended at `p` on `n` observations is spurious.
    /// Ratios of sds and expected counts do not change with the data's
    /// scale, so `p` may be in rescaled or original units.
    pub fn spurious(&self, family: Family, p: &Params, n: usize) -> bool {
        let k = p.k;
        let sd = |m: usize| component_sd(family, p.mu[m], p.shape[m]);
        let largest = (0..k).map(sd).fold(0.0, f64::max);
        (0..k).any(|m| {
            let s = sd(m);
            s < self.ratio * largest || (n as f64 * p.alpha[m] < self.count && s < self.count_ratio * largest)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(alpha: &[f64], mu: &[f64], sigma: &[f64]) -> Params {
        let mut p = Params::zeroed(alpha.len());
        p.alpha[..alpha.len()].copy_from_slice(alpha);
        p.mu[..mu.len()].copy_from_slice(mu);
        p.shape[..sigma.len()].copy_from_slice(sigma);
        p
    }

    #[test]
    fn spikes_are_small_and_narrow_or_absurdly_narrow() {
        let s = Screen::default();
        // Nile-like: a component of 3.4 observations at 0.23% of the widest sd
        let spike = normal(&[0.966, 0.034], &[900.0, 1100.0], &[130.0, 0.3]);
        assert!(s.spurious(Family::Normal, &spike, 100));
        // the same narrow component carrying 30 observations is a real one...
        assert!(!s.spurious(Family::Normal, &spike, 1000));
        // ...unless narrower than Hathaway's bound, whatever its weight
        let needle = normal(&[0.5, 0.5], &[0.0, 5.0], &[1.0, 5e-4]);
        assert!(s.spurious(Family::Normal, &needle, 10_000));
        // a small cluster as wide as its neighbours is kept
        let cluster = normal(&[0.485, 0.485, 0.03], &[0.0, 10.0, 20.0], &[1.0, 1.2, 0.9]);
        assert!(!s.spurious(Family::Normal, &cluster, 100));
        // the 2015 demo's truth: sds differ 60-fold, both components large
        let mut demo = Params::zeroed(2);
        demo.alpha[..2].copy_from_slice(&[0.3, 0.7]);
        demo.mu[..2].copy_from_slice(&[1.0, 3.0]);
        demo.shape[..2].copy_from_slice(&[30.0, 0.2]);
        let ratio = component_sd(Family::InvGauss, 1.0, 30.0) / component_sd(Family::InvGauss, 3.0, 0.2);
        assert!(ratio < 1.0 / 50.0);
        assert!(!s.spurious(Family::InvGauss, &demo, 2000));
    }

    #[test]
    fn a_zero_threshold_turns_its_rule_off_and_bad_ones_are_named() {
        let spike = normal(&[0.966, 0.034], &[900.0, 1100.0], &[130.0, 0.1]);
        let off = Screen { ratio: 0.0, count: 0.0, count_ratio: 0.0 };
        assert!(!off.spurious(Family::Normal, &spike, 100));
        assert!(Screen { ratio: 0.0, ..Screen::default() }.spurious(Family::Normal, &spike, 100));
        assert!(Screen { count: 0.0, ..Screen::default() }.spurious(Family::Normal, &spike, 100));
        assert!(!Screen { count: 0.0, ratio: 1e-4, ..Screen::default() }.spurious(Family::Normal, &spike, 100));
        assert_eq!(Screen::default().check(), None);
        assert_eq!(Screen { ratio: 2.0, ..Screen::default() }.check().map(|e| e.0), Some("control$spurious.ratio"));
        assert_eq!(
            Screen { count: f64::NAN, ..Screen::default() }.check().map(|e| e.0),
            Some("control$spurious.count")
        );
    }
}
