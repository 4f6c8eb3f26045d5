//! One dataset made ready for EM: checked, rescaled, with the per-observation
//! values every E-step needs computed once.
//!
//! Fitting happens on rescaled data because the M-step's differences
//! (Σr/x − S0²/S1, S2/S0 − μ²) cancel badly far from unit scale. The inverse
//! Gaussian is closed under scaling (cX ~ IG(cμ, cλ)), so its data is divided
//! by the mean; Normal data is standardised. Parameters are mapped back after.

use crate::family;
use crate::job::{Family, Params};

pub struct Prepared {
    /// Rescaled observations, x' = (x − shift) / scale.
    pub x: Vec<f64>,
    /// family::aux of each rescaled observation.
    pub g: Vec<f64>,
    /// Σ h(x') over the rescaled data (the parameter-free part of the log-likelihood).
    pub h_sum: f64,
    pub shift: f64,
    pub scale: f64,
    /// Standard deviation of the rescaled data: the yardstick for "a
    /// component collapsed".
    pub spread: f64,
    /// Hash of the original values' bits: part of each start's seed.
    pub hash: u64,
}

impl Prepared {
    /// Parameters fitted on the rescaled data, in the original units.
    pub fn unscale(&self, p: &Params) -> Params {
        let mut out = *p;
        for m in 0..p.k {
            out.mu[m] = p.mu[m] * self.scale + self.shift;
            out.shape[m] = p.shape[m] * self.scale;
        }
        out
    }
}

/// Checks one dataset and prepares it, or says (for the user) why it cannot
/// be fitted.
pub fn prepare(values: &[f64], family: Family, components: usize) -> Result<Prepared, String> {
    let n = values.len();
    let needed = 3 * components;
    if n < needed {
        return Err(format!(
            "has {n} observation{}; at least {needed} (3 per component) are needed",
            if n == 1 { "" } else { "s" }
        ));
    }
    if let Some(msg) = describe_bad_values(values, |v| !v.is_finite(), "NA, NaN or infinite value") {
        return Err(msg);
    }
    if family == Family::InvGauss {
        if let Some(msg) = describe_bad_values(values, |v| v <= 0.0, "value <= 0") {
            return Err(msg + " (the inverse Gaussian needs positive data)");
        }
    }
    if values.iter().all(|&v| v == values[0]) {
        return Err(format!("all {n} values are equal ({}); a mixture cannot be fitted", values[0]));
    }

    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    let sd = (values.iter().map(|&v| (v - mean) * (v - mean)).sum::<f64>() / nf).sqrt();
    let (shift, scale) = match family {
        Family::InvGauss => (0.0, mean),
        Family::Normal => (mean, sd),
    };
    if !(scale.is_finite() && scale > 0.0) {
        return Err("its values are too large or too spread to rescale in double precision".into());
    }
    let x: Vec<f64> = values.iter().map(|&v| (v - shift) / scale).collect();
    let g = x.iter().map(|&v| family::aux(family, v)).collect();
    let h_sum = x.iter().map(|&v| family::log_h(family, v)).sum();
    Ok(Prepared { x, g, h_sum, shift, scale, spread: sd / scale, hash: hash_values(values) })
}

fn describe_bad_values(values: &[f64], bad: impl Fn(f64) -> bool, what: &str) -> Option<String> {
    let first = values.iter().position(|&v| bad(v))?;
    let count = values.iter().filter(|&&v| bad(v)).count();
    let plural = if count == 1 { "" } else { "s" };
    Some(format!("contains {count} {what}{plural} (the first at position {})", first + 1))
}

/// A 64-bit hash of the values' bit patterns, in order (splitmix64's mixer,
/// applied word by word).
pub fn hash_values(values: &[f64]) -> u64 {
    let mut h = mix64(values.len() as u64 ^ 0x6a09_e667_f3bc_c909);
    for &v in values {
        h = mix64(h ^ v.to_bits());
    }
    h
}

pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_datasets_with_reasons() {
        let short = prepare(&[1.0, 2.0, 3.0, 4.0, 5.0], Family::InvGauss, 2).err().unwrap();
        assert!(short.contains("has 5 observations") && short.contains("at least 6"), "{short}");
        let nan = prepare(&[1.0, f64::NAN, 3.0, f64::INFINITY], Family::Normal, 1).err().unwrap();
        assert!(nan.contains("2 NA, NaN or infinite values") && nan.contains("position 2"), "{nan}");
        let neg = prepare(&[1.0, 2.0, -3.0, 4.0], Family::InvGauss, 1).err().unwrap();
        assert!(neg.contains("1 value <= 0") && neg.contains("position 3"), "{neg}");
        // the Normal accepts non-positive data
        assert!(prepare(&[1.0, 2.0, -3.0, 4.0], Family::Normal, 1).is_ok());
        let flat = prepare(&[2.5; 10], Family::Normal, 2).err().unwrap();
        assert!(flat.contains("all 10 values are equal"), "{flat}");
    }

    #[test]
    fn rescaling_round_trips() {
        let values = [0.5, 1.5, 2.0, 7.0, 3.25, 0.75];
        for family in [Family::InvGauss, Family::Normal] {
            let ds = prepare(&values, family, 2).unwrap();
            for (xp, &x) in ds.x.iter().zip(&values) {
                assert!((xp * ds.scale + ds.shift - x).abs() < 1e-14);
            }
            let mean = ds.x.iter().sum::<f64>() / 6.0;
            let expected_mean = if family == Family::Normal { 0.0 } else { 1.0 };
            assert!((mean - expected_mean).abs() < 1e-15);
        }
    }

    #[test]
    fn hash_depends_on_every_value_and_order() {
        let a = hash_values(&[1.0, 2.0, 3.0]);
        assert_ne!(a, hash_values(&[1.0, 2.0, 3.0000000000000004]));
        assert_ne!(a, hash_values(&[2.0, 1.0, 3.0]));
        assert_ne!(a, hash_values(&[1.0, 2.0]));
        assert_eq!(a, hash_values(&[1.0, 2.0, 3.0]));
    }
}
