//! The spurious-solution screen for multivariate components: the
//! univariate rules (screen.rs) with a component's standard deviation read
//! along its narrowest direction and the largest along the widest of any
//! component (Hathaway's constraint on the eigenvalues of the covariance
//! matrices, as in Ingrassia 2004). A component flattened onto a line or
//! squeezed onto a few points is a spike the likelihood rewards without
//! meaning, as a univariate spike is.

use super::model::MvParams;
use crate::linalg::symmetric_eigen;
use crate::screen::Screen;

/// Whether a start that ended at `p` (any units: the rules are ratios) on
/// n observations (their total weight, weighted) is spurious under
/// `screen`'s thresholds.
pub fn spurious(screen: &Screen, p: &MvParams, n: f64) -> bool {
    let d = p.d;
    let ranges: Vec<(f64, f64)> = (0..p.k)
        .map(|m| {
            let (values, _) = symmetric_eigen(p.cov(m).to_vec(), d);
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo, hi)
        })
        .collect();
    let widest = ranges.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    (0..p.k).any(|m| {
        let sd_ratio = (ranges[m].0 / widest).max(0.0).sqrt();
        !(sd_ratio >= screen.ratio) || (n * p.alpha[m] < screen.count && sd_ratio < screen.count_ratio)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two(flat: f64, alpha: f64) -> MvParams {
        MvParams {
            k: 2,
            d: 2,
            alpha: vec![1.0 - alpha, alpha],
            mu: vec![0.0; 4],
            sigma: vec![1.0, 0.0, 0.0, 1.0, 0.04, 0.0, 0.0, flat],
            noise: 0.0,
            df: Vec::new(),
        }
    }

    #[test]
    fn flat_and_small_narrow_components_are_spurious() {
        let s = Screen::default();
        // sd ratio sqrt(1e-7) < 1e-3: flattened onto a line
        assert!(spurious(&s, &two(1e-7, 0.3), 1000.0));
        assert!(!spurious(&s, &two(0.04, 0.3), 1000.0));
        // 5 expected observations with sd ratio 0.2: small but not narrow
        assert!(!spurious(&s, &two(0.04, 0.005), 1000.0));
        // and 5 with sd ratio 0.05: small and narrow
        assert!(spurious(&s, &two(0.0025, 0.005), 1000.0));
        let off = Screen { ratio: 0.0, count: 0.0, count_ratio: 0.0, distinct: 0.0 };
        assert!(!spurious(&off, &two(1e-12, 0.001), 1000.0));
    }
}
