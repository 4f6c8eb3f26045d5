//! A fitted mixture evaluated at new points, for predict() and plot() in R:
//! the same densities and E-step as the fits themselves (bulkem-core).

use bulkem_core::{estep, family, Family, Params, MAX_COMPONENTS};
use extendr_api::prelude::*;

fn params(family: &str, alpha: &[f64], mu: &[f64], shape: &[f64]) -> extendr_api::Result<(Family, Params)> {
    let family = Family::from_name(family).ok_or_else(|| Error::Other(format!("unknown family \"{family}\"")))?;
    let k = alpha.len();
    if k == 0 || k > MAX_COMPONENTS || mu.len() != k || shape.len() != k {
        return Err(Error::Other("a fit's alpha, mu and shape must have the same length, 1 to 8".into()));
    }
    let mut p = Params::zeroed(k);
    p.alpha[..k].copy_from_slice(alpha);
    p.mu[..k].copy_from_slice(mu);
    p.shape[..k].copy_from_slice(shape);
    Ok((family, p))
}

/// Posterior probability of each component at each x (length(x) × K,
/// column-major); NA outside the family's support.
/// @noRd
#[extendr]
fn posterior_(x: &[f64], family: &str, alpha: &[f64], mu: &[f64], shape: &[f64]) -> extendr_api::Result<Vec<f64>> {
    let (family, p) = params(family, alpha, mu, shape)?;
    Ok(estep::posterior(family, x, &p))
}

/// alpha_m p_m(x) for each x and component (length(x) × K, column-major);
/// 0 outside the support.
/// @noRd
#[extendr]
fn weighted_densities_(x: &[f64], family: &str, alpha: &[f64], mu: &[f64], shape: &[f64]) -> extendr_api::Result<Vec<f64>> {
    let (family, p) = params(family, alpha, mu, shape)?;
    let mut out = vec![0.0; x.len() * p.k];
    for m in 0..p.k {
        for (i, &xi) in x.iter().enumerate() {
            let inside = xi.is_finite() && (family == Family::Normal || xi > 0.0);
            if inside {
                out[m * x.len() + i] = p.alpha[m] * family::log_density(family, xi, p.mu[m], p.shape[m]).exp();
            }
        }
    }
    Ok(out)
}

extendr_module! {
    mod mixture;
    fn posterior_;
    fn weighted_densities_;
}
