//! A fitted mixture evaluated at new points, for predict() and plot() in R:
//! the same densities and E-step as the fits themselves (bulkem-core).

use bulkem_core::{estep, family, Error, Family, Params, MAX_COMPONENTS};
use extendr_api::prelude::{extendr, extendr_module, Robj};

use crate::error::or_condition;

/// R hands over the fields of a fit; a fit whose fields were edited by hand
/// can break these rules, so they are argument errors.
fn params(family: &str, alpha: &[f64], mu: &[f64], shape: &[f64]) -> Result<(Family, Params), Error> {
    let family = Family::from_name(family).ok_or_else(|| Error::Argument {
        arg: "family",
        message: format!(
            "of a fit must be one of {}, not \"{family}\"",
            Family::ALL.map(|f| format!("\"{}\"", f.name())).join(", ")
        ),
    })?;
    let k = alpha.len();
    if k == 0 || k > MAX_COMPONENTS || mu.len() != k || shape.len() != k {
        return Err(Error::Argument {
            arg: "mu",
            message: format!(
                "of a fit must have 1 to {MAX_COMPONENTS} values, as many as its alpha and its lambda or sigma"
            ),
        });
    }
    let mut p = Params::zeroed(k);
    p.alpha[..k].copy_from_slice(alpha);
    p.mu[..k].copy_from_slice(mu);
    p.shape[..k].copy_from_slice(shape);
    Ok((family, p))
}

/// Posterior probability of each component at each x (length(x) × K,
/// column-major); NA outside the family's support. Or the condition saying
/// why not, for R to raise.
/// @noRd
#[extendr]
fn posterior_(x: &[f64], family: &str, alpha: &[f64], mu: &[f64], shape: &[f64]) -> Robj {
    or_condition(params(family, alpha, mu, shape).map(|(family, p)| estep::posterior(family, x, &p)))
}

/// alpha_m p_m(x) for each x and component (length(x) × K, column-major);
/// 0 outside the support. Or the condition saying why not, for R to raise.
/// @noRd
#[extendr]
fn weighted_densities_(x: &[f64], family: &str, alpha: &[f64], mu: &[f64], shape: &[f64]) -> Robj {
    or_condition(params(family, alpha, mu, shape).map(|(family, p)| weighted_densities(x, family, &p)))
}

fn weighted_densities(x: &[f64], family: Family, p: &Params) -> Vec<f64> {
    let mut out = vec![0.0; x.len() * p.k];
    for m in 0..p.k {
        for (i, &xi) in x.iter().enumerate() {
            if family::in_support(family, xi) {
                out[m * x.len() + i] = p.alpha[m] * family::log_density(family, xi, p.mu[m], p.shape[m]).exp();
            }
        }
    }
    out
}

extendr_module! {
    mod mixture;
    fn posterior_;
    fn weighted_densities_;
}
