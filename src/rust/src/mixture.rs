//! A fitted mixture evaluated at new points, for predict() and plot() in R:
//! the same densities and E-step as the fits themselves (bulkem-core).

use bulkem_core::{estep, family, Error, Family, Params, Support, MAX_COMPONENTS};
use extendr_api::prelude::{extendr, extendr_module, Robj};

use crate::error::or_condition;

/// R hands over the fields of a fit (`df`: the t's degrees of freedom, empty
/// for the other families); a fit whose fields were edited by hand can
/// break these rules, so they are argument errors.
fn params(family: &str, alpha: &[f64], mu: &[f64], shape: &[f64], df: &[f64]) -> Result<(Family, Params), Error> {
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
    if family.has_third() {
        if df.len() != k || !df.iter().all(|&v| v > 0.0) {
            return Err(Error::Argument {
                arg: family.third_name(),
                message: format!("of a {} fit must have one positive value per component", family.name()),
            });
        }
        p.df[..k].copy_from_slice(df);
    }
    Ok((family, p))
}

/// Posterior probability of each component at each x (length(x) × K,
/// column-major; with a noise component, `noise` = c(weight, lower, upper),
/// length(x) × (K + 1), the noise's column last); NA outside the family's
/// support. `df`: the t's ν or the ex-Gaussian's τ per component (empty for another family). Or
/// the condition saying why not, for R to raise.
/// @noRd
#[extendr]
fn posterior_(x: &[f64], family: &str, alpha: &[f64], mu: &[f64], shape: &[f64], df: &[f64], noise: &[f64]) -> Robj {
    or_condition(params(family, alpha, mu, shape, df).and_then(|(family, mut p)| {
        let support = match *noise {
            [] => None,
            [weight, ref support @ ..] => {
                p.noise = weight;
                noise_support(weight, support)?
            }
        };
        Ok(estep::posterior(family, x, &p, support.as_ref()))
    }))
}

/// The noise component of a fit's fields.
fn noise_support(noise: f64, support: &[f64]) -> Result<Option<Support>, Error> {
    let bad = || Error::Argument {
        arg: "noise",
        message: "of a fit must be a weight in [0, 1) with a support of two finite values, lower below upper"
            .to_string(),
    };
    if !(0.0..1.0).contains(&noise) {
        return Err(bad());
    }
    match *support {
        [lower, upper] => Support::new(lower, upper).map(Some).ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// alpha_m p_m(x) for each x and component (length(x) × K, column-major);
/// 0 outside the support. Or the condition saying why not, for R to raise.
/// @noRd
#[extendr]
fn weighted_densities_(x: &[f64], family: &str, alpha: &[f64], mu: &[f64], shape: &[f64], df: &[f64]) -> Robj {
    or_condition(params(family, alpha, mu, shape, df).map(|(family, p)| weighted_densities(x, family, &p)))
}

fn weighted_densities(x: &[f64], family: Family, p: &Params) -> Vec<f64> {
    let mut out = vec![0.0; x.len() * p.k];
    for m in 0..p.k {
        for (i, &xi) in x.iter().enumerate() {
            if family::in_support(family, xi) {
                let log_density = family::log_density_with(family, xi, p.mu[m], p.shape[m], p.df[m]);
                out[m * x.len() + i] = p.alpha[m] * log_density.exp();
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
