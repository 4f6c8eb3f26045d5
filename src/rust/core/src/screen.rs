//! The spurious-solution screen (DESIGN §3): which finished starts are
//! admissible. A mixture likelihood is unbounded; a component squeezed onto
//! a few nearly tied observations drives it up without meaning anything
//! (McLachlan & Peel 2000, §3.10). Every engine applies this same rule to a
//! start's final parameters (the CUDA kernel mirrors `spurious`).

use crate::family::component_sd;
use crate::limits::{
    SPURIOUS_COUNT, SPURIOUS_COUNT_RATIO, SPURIOUS_DISTINCT, SPURIOUS_DISTINCT_MAX, SPURIOUS_DISTINCT_SDS,
    SPURIOUS_RATIO,
};
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
    /// A spike on heaped values: spurious if some component's mean ±
    /// SPURIOUS_DISTINCT_SDS sds holds fewer than `distinct` distinct values
    /// of the data (a whole number up to SPURIOUS_DISTINCT_MAX).
    pub distinct: f64,
}

impl Default for Screen {
    fn default() -> Screen {
        Screen {
            ratio: SPURIOUS_RATIO,
            count: SPURIOUS_COUNT,
            count_ratio: SPURIOUS_COUNT_RATIO,
            distinct: SPURIOUS_DISTINCT,
        }
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
        if !ok(self.distinct, SPURIOUS_DISTINCT_MAX as f64) || self.distinct.fract() != 0.0 {
            return Some(("control$spurious.distinct", "must be a whole number from 0 to 8"));
        }
        None
    }

    /// Whether a start that ended at `p` on the (rescaled) data `x` is
    /// spurious: the rules on its parameters (`n` observations, Σ w with
    /// weights), then the spike on heaped
    /// values. What every engine applies (the CUDA kernel mirrors it).
    pub fn spurious_on(&self, family: Family, p: &Params, x: &[f64], n: f64) -> bool {
        self.spurious(family, p, n) || self.heaped(family, p, x)
    }

    /// Some component's window, mean ± SPURIOUS_DISTINCT_SDS sds, holds
    /// fewer than `distinct` distinct values of `x` (in the units of `p`).
    /// One pass at most, stopping once enough values are seen: em_batched.cu's
    /// `too_few_distinct` is the same loop.
    pub fn heaped(&self, family: Family, p: &Params, x: &[f64]) -> bool {
        let need = (self.distinct as usize).min(SPURIOUS_DISTINCT_MAX);
        (0..p.k).any(|m| {
            let sd = component_sd(family, p.mu[m], p.shape[m]);
            let half = SPURIOUS_DISTINCT_SDS * sd;
            let (lo, hi) = (p.mu[m] - half, p.mu[m] + half);
            let mut seen = [0.0; SPURIOUS_DISTINCT_MAX];
            let mut found = 0;
            for &v in x {
                if found >= need {
                    break;
                }
                if v < lo || v > hi || seen[..found].contains(&v) {
                    continue;
                }
                seen[found] = v;
                found += 1;
            }
            found < need
        })
    }

    /// Whether a start that ended at `p` on `n` observations is spurious by
    /// the rules on its parameters alone.
    /// Ratios of sds and expected counts do not change with the data's
    /// scale, so `p` may be in rescaled or original units.
    pub fn spurious(&self, family: Family, p: &Params, n: f64) -> bool {
        let k = p.k;
        let sd = |m: usize| component_sd(family, p.mu[m], p.shape[m]);
        let largest = (0..k).map(sd).fold(0.0, f64::max);
        (0..k).any(|m| {
            let s = sd(m);
            s < self.ratio * largest || (n * p.alpha[m] < self.count && s < self.count_ratio * largest)
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
        assert!(s.spurious(Family::Normal, &spike, 100.0));
        // the same narrow component carrying 30 observations is a real one...
        assert!(!s.spurious(Family::Normal, &spike, 1000.0));
        // ...unless narrower than Hathaway's bound, whatever its weight
        let needle = normal(&[0.5, 0.5], &[0.0, 5.0], &[1.0, 5e-4]);
        assert!(s.spurious(Family::Normal, &needle, 10_000.0));
        // a small cluster as wide as its neighbours is kept
        let cluster = normal(&[0.485, 0.485, 0.03], &[0.0, 10.0, 20.0], &[1.0, 1.2, 0.9]);
        assert!(!s.spurious(Family::Normal, &cluster, 100.0));
        // the 2015 demo's truth: sds differ 60-fold, both components large
        let mut demo = Params::zeroed(2);
        demo.alpha[..2].copy_from_slice(&[0.3, 0.7]);
        demo.mu[..2].copy_from_slice(&[1.0, 3.0]);
        demo.shape[..2].copy_from_slice(&[30.0, 0.2]);
        let ratio = component_sd(Family::InvGauss, 1.0, 30.0) / component_sd(Family::InvGauss, 3.0, 0.2);
        assert!(ratio < 1.0 / 50.0);
        assert!(!s.spurious(Family::InvGauss, &demo, 2000.0));
    }

    #[test]
    fn a_zero_threshold_turns_its_rule_off_and_bad_ones_are_named() {
        let spike = normal(&[0.966, 0.034], &[900.0, 1100.0], &[130.0, 0.1]);
        let off = Screen { ratio: 0.0, count: 0.0, count_ratio: 0.0, distinct: 0.0 };
        assert!(!off.spurious(Family::Normal, &spike, 100.0));
        assert!(Screen { ratio: 0.0, ..Screen::default() }.spurious(Family::Normal, &spike, 100.0));
        assert!(Screen { count: 0.0, ..Screen::default() }.spurious(Family::Normal, &spike, 100.0));
        assert!(!Screen { count: 0.0, ratio: 1e-4, ..Screen::default() }.spurious(Family::Normal, &spike, 100.0));
        assert_eq!(Screen::default().check(), None);
        assert_eq!(Screen { ratio: 2.0, ..Screen::default() }.check().map(|e| e.0), Some("control$spurious.ratio"));
        assert_eq!(
            Screen { count: f64::NAN, ..Screen::default() }.check().map(|e| e.0),
            Some("control$spurious.count")
        );
        for bad in [2.5, 9.0, -1.0] {
            assert_eq!(
                Screen { distinct: bad, ..Screen::default() }.check().map(|e| e.0),
                Some("control$spurious.distinct")
            );
        }
    }

    #[test]
    fn a_spike_on_heaped_values_is_spurious_however_many_sit_there() {
        // heights to the centimetre: 209 values on a grid of 1, 16 of them 165
        let mut x: Vec<f64> = (0..193).map(|i| 150.0 + (i % 40) as f64).collect();
        x.extend(std::iter::repeat_n(165.0, 16));
        let s = Screen::default();
        // a component of sd 0.04 at 165: its ±2 sd window holds one value
        let spike = normal(&[0.92, 0.08], &[170.0, 165.0], &[11.0, 0.04]);
        assert!(!s.spurious(Family::Normal, &spike, x.len() as f64), "the old rules let it pass");
        assert!(s.heaped(Family::Normal, &spike, &x) && s.spurious_on(Family::Normal, &spike, &x, x.len() as f64));
        // the same component as wide as 1 cm holds 5 values: kept
        let wide = normal(&[0.92, 0.08], &[170.0, 165.0], &[11.0, 1.0]);
        assert!(!s.spurious_on(Family::Normal, &wide, &x, x.len() as f64));
        // brute force: the count of distinct values in each window, by sorting
        for sd in [0.04, 0.3, 0.5, 0.6, 1.0, 2.0] {
            let p = normal(&[0.92, 0.08], &[170.0, 165.0], &[11.0, sd]);
            let mut inside: Vec<f64> =
                x.iter().copied().filter(|&v| (v - 165.0).abs() <= SPURIOUS_DISTINCT_SDS * sd).collect();
            inside.sort_by(f64::total_cmp);
            inside.dedup();
            assert_eq!(s.heaped(Family::Normal, &p, &x), inside.len() < 3, "sd {sd}");
        }
        // 0 turns the rule off; on continuous data it never bites
        assert!(!Screen { distinct: 0.0, ..s }.heaped(Family::Normal, &spike, &x));
        let smooth: Vec<f64> = (0..200).map(|i| 150.0 + i as f64 * 0.1037).collect();
        let narrow = normal(&[0.9, 0.1], &[160.0, 165.0], &[5.0, 0.2]);
        assert!(!s.heaped(Family::Normal, &narrow, &smooth));
    }
}
