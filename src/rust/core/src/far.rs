//! Values far from the rest of their dataset (issue 31: one absurd
//! reaction time among a subject's hundreds bends that subject's fit, and
//! with thousands of datasets nobody looks). A value is far when it lies
//! beyond Tukey's fences drawn wide: more than FAR_IQRS_LIGHT
//! interquartile ranges beyond the quartiles on the side where the
//! family's tail is light, FAR_IQRS_HEAVY where it may be heavy, on the
//! scale a family's values spread on: the logarithms for the families of
//! positive values (a reaction time 100 times the upper quartile is far,
//! one 100 seconds above a quartile of 1,000 s is not), whose upper tails
//! are light there and lower ones may be heavy (a gamma of shape below 1
//! piles values toward 0); the values themselves for the ex-Gaussian (its
//! exponential upper tail heavy) and the Normal (heavy on both sides:
//! Normal mixtures are fitted to skewed data whose tails they cover with
//! components of their own, and only an absurd value should be named). Only a
//! few values can be far (at most FAR_SHARE of the dataset, and at least
//! one): more are a mode of the data, not outliers. Student's t takes such
//! values by design: none are looked for. Nothing here changes a fit; R
//! names the values where a user looks.
//!
//! Measured (a session's simulation, 300-1,000 samples per cell): datasets
//! with a value marked, n = 300 / 3,000 / 30,000 of one component: the
//! inverse Gaussian (shapes 0.1-30 at mean 1), gamma of shape 2-50 and the
//! lognormal 0-2%, gamma of shape 0.2 0.2 / 1 / 5%, the ex-Gaussian
//! (sigma 0.05, tau 0.3) 0.1 / 1.7 / 13% (its tail beyond 10 interquartile
//! ranges holds 1e-5 of it); the Normal none (13.5 sds).

use std::sync::atomic::AtomicBool;

use crate::engine::queue;
use crate::limits::{FAR_IQRS_HEAVY, FAR_IQRS_LIGHT, FAR_MIN_VALUES, FAR_SHARE};
use crate::params::Family;

/// How `family`'s values are judged: on their logarithms or not, and the
/// fences' widths below and above the quartiles, in interquartile ranges;
/// `None` for Student's t.
fn fences_of(family: Family) -> Option<(bool, f64, f64)> {
    match family {
        Family::InvGauss | Family::Lognormal | Family::Gamma => Some((true, FAR_IQRS_HEAVY, FAR_IQRS_LIGHT)),
        Family::Normal => Some((false, FAR_IQRS_HEAVY, FAR_IQRS_HEAVY)),
        Family::ExGauss => Some((false, FAR_IQRS_LIGHT, FAR_IQRS_HEAVY)),
        Family::StudentT => None,
    }
}

/// The q-quantile of `v` by linear interpolation between order statistics
/// (R's `quantile()` type 7); `v` is not empty, and is reordered (a
/// selection, not a sort: the quartiles of a million values cost two
/// linear passes, not a sort).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    let h = (v.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let (_, &mut at, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    // the next order statistic is the smallest above it
    let next = above.iter().copied().reduce(f64::min).unwrap_or(at);
    at + (h - lo as f64) * (next - at)
}

/// The zero-based positions of `values`' far values, ascending; none for
/// Student's t, for fewer than FAR_MIN_VALUES values, for values a family
/// cannot take (not finite, or not positive where judged on logarithms:
/// such a dataset is invalid, and says why), for a zero interquartile range
/// (heaped values: the fences would be the quartiles themselves), and
/// where more than FAR_SHARE of the values would be far.
pub fn far_values(values: &[f64], family: Family) -> Vec<usize> {
    let n = values.len();
    let Some((logs, below, above)) = fences_of(family) else { return Vec::new() };
    if n < FAR_MIN_VALUES || values.iter().any(|v| !v.is_finite() || (logs && *v <= 0.0)) {
        return Vec::new();
    }
    let scaled: Vec<f64> = values.iter().map(|&v| if logs { v.ln() } else { v }).collect();
    let mut work = scaled.clone();
    let (q1, q3) = (quantile(&mut work, 0.25), quantile(&mut work, 0.75));
    let iqr = q3 - q1;
    if !(iqr > 0.0) {
        return Vec::new();
    }
    let inside = (q1 - below * iqr)..=(q3 + above * iqr);
    let most = ((FAR_SHARE * n as f64).floor() as usize).max(1);
    let beyond = scaled.iter().filter(|v| !inside.contains(v)).count();
    if beyond == 0 || beyond > most {
        return Vec::new();
    }
    scaled.iter().enumerate().filter(|(_, v)| !inside.contains(v)).map(|(i, _)| i).collect()
}

/// `far_values` of every dataset, on `threads` threads.
pub fn far_values_of_all(datasets: &[&[f64]], family: Family, threads: usize) -> Vec<Vec<usize>> {
    let never = AtomicBool::new(false);
    // (only a cancellation ends `map` early, and nothing cancels this one)
    queue::map(datasets.len(), threads.max(1), &never, |d| far_values(datasets[d], family)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// n values of a smooth, spread sample: the logistic quantiles at
    /// (i + 0.5)/n, shifted to be positive (13.6 to 26.4 for n = 300).
    fn smooth(n: usize) -> Vec<f64> {
        (0..n).map(|i| (i as f64 + 0.5) / n as f64).map(|p| 20.0 + (p / (1.0 - p)).ln()).collect()
    }

    #[test]
    fn quantiles_are_rs_type_7_with_ties() {
        // sorted 1, 2, 2, 3, 5
        for (q, want) in [(0.0, 1.0), (0.25, 2.0), (0.3, 2.0), (0.6, 2.4), (0.75, 3.0), (0.9, 4.2), (1.0, 5.0)] {
            let mut v = [3.0, 1.0, 2.0, 5.0, 2.0];
            assert!((quantile(&mut v, q) - want).abs() < 1e-12, "q = {q}");
        }
    }

    #[test]
    fn an_absurd_value_is_far_and_the_rest_are_not() {
        let mut x = smooth(300);
        assert!(far_values(&x, Family::Normal).is_empty());
        x[36] = 1e6;
        assert_eq!(far_values(&x, Family::Normal), vec![36]);
        assert_eq!(far_values(&x, Family::InvGauss), vec![36]);
        // far below on the logarithms (a thousandth of the median); far
        // above on them but not on the values (quartiles 18.9 and 21.1:
        // 40 is above 21.1 * exp(4 * 0.11) on the logarithms and below 43
        // on the values)
        x[36] = 2e-2;
        assert_eq!(far_values(&x, Family::Gamma), vec![36]);
        x[36] = 40.0;
        assert_eq!(far_values(&x, Family::Lognormal), vec![36]);
        assert!(far_values(&x, Family::Normal).is_empty());
    }

    #[test]
    fn the_fences_are_four_or_ten_interquartile_ranges_beyond_the_quartiles() {
        // quartiles of 0..=100 are 25 and 75 (type 7): the ex-Gaussian's
        // fences at -175 and 575, the Normal's at -475 and 575
        let mut x: Vec<f64> = (0..=100).map(f64::from).collect();
        x[0] = -175.0;
        x[100] = 575.0;
        assert!(far_values(&x, Family::ExGauss).is_empty());
        x[0] = -175.0 - 1e-9;
        assert_eq!(far_values(&x, Family::ExGauss), vec![0]);
        assert!(far_values(&x, Family::Normal).is_empty());
        x[0] = -475.0 - 1e-9;
        assert_eq!(far_values(&x, Family::Normal), vec![0]);
        // one value of 101 may be far (1% is 1); two make a mode
        x[100] = 575.0 + 1e-9;
        assert!(far_values(&x, Family::Normal).is_empty());
        assert!(far_values(&x, Family::ExGauss).is_empty());
        // on the logarithms: 4 above, 10 below; the t looks for none
        let mut y: Vec<f64> = (0..=100).map(|i| f64::from(i).exp()).collect();
        y[100] = (275.0f64 + 1e-6).exp();
        assert_eq!(far_values(&y, Family::Gamma), vec![100]);
        y[100] = 100f64.exp();
        y[0] = (-175.0f64 - 1e-6).exp();
        assert!(far_values(&y, Family::Gamma).is_empty());
        y[0] = (-475.0f64 - 1e-6).exp();
        assert_eq!(far_values(&y, Family::InvGauss), vec![0]);
        assert!(far_values(&x[1..], Family::StudentT).is_empty());
    }

    #[test]
    fn heaped_short_or_unfittable_data_have_none() {
        let mut heaped = vec![1.0; 50];
        heaped[3] = 1e6;
        assert!(far_values(&heaped, Family::Normal).is_empty());
        let mut short = smooth(FAR_MIN_VALUES - 1);
        short[0] = 1e6;
        assert!(far_values(&short, Family::Normal).is_empty());
        let mut bad = smooth(100);
        bad[1] = 1e9;
        assert_eq!(far_values(&bad, Family::InvGauss), vec![1]);
        bad[2] = 0.0;
        assert!(far_values(&bad, Family::InvGauss).is_empty());
        bad[2] = f64::NAN;
        assert!(far_values(&bad, Family::Normal).is_empty());
    }
}
