//! A multivariate dataset as the fits see it: n observations of d
//! variables, variable-major (all of variable 1, then variable 2: R's
//! column-major matrix, and the coalesced layout of DESIGN §11), each
//! variable standardised to mean 0 and standard deviation 1 (weighted by
//! the observations' weights, where given). Parameters fitted on the
//! standardised data are mapped back by `Standardised`.

use crate::dataset::hash_values;

/// A dataset ready to fit: the standardised values and how to undo it.
#[derive(Clone, Debug)]
pub struct MvData {
    pub n: usize,
    pub d: usize,
    /// z[j * n + i]: variable j of observation i, standardised.
    pub z: Vec<f64>,
    pub scaling: Standardised,
    /// The hash of the original values (starts.rs's generators use it, so a
    /// dataset's starts depend on its values alone).
    pub hash: u64,
    /// With a noise component: the log-density of the uniform over the
    /// data's bounding box, in the standardised units.
    pub log_noise: Option<f64>,
    /// The bounding box in the data's units, (lower, upper) per variable.
    pub support: Vec<(f64, f64)>,
    /// Each observation's weight (`weights`: frequency or case weights, at
    /// least 0), where given: every sum of the E-step, the information and
    /// the log-likelihood weighs its observation by it, and the starts draw
    /// their seeds by it (starts.rs). (The noise's bounding box looks at
    /// the values alone.)
    pub w: Option<Vec<f64>>,
    /// Σ w, or n without weights: the n of BIC, of the weights' M-step and
    /// of the screen's expected counts and the standardisation's Jacobian.
    pub total: f64,
    /// The observations of positive weight (n without weights): what the
    /// check of enough observations for K components counts.
    pub positive: usize,
}

/// x = center + scale · z, variable by variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Standardised {
    pub center: Vec<f64>,
    pub scale: Vec<f64>,
}

impl Standardised {
    /// log |det| of the map from z to x: what the log-likelihood of n
    /// observations (Σ w, weighted) loses in the data's units.
    pub fn log_jacobian(&self, n: f64) -> f64 {
        n * self.scale.iter().map(|s| s.ln()).sum::<f64>()
    }
}

impl MvData {
    /// `x` holds n × d values, variable-major, `w` the observations'
    /// weights if any; with `common_scale` every variable is divided by one
    /// scale (the root mean variance), which keeps a spherical covariance
    /// spherical. Why the data cannot be fitted, if it cannot: a non-finite
    /// value, bad weights, or a variable without spread.
    pub fn prepare(
        x: &[f64],
        n: usize,
        d: usize,
        w: Option<&[f64]>,
        common_scale: bool,
        noise: bool,
    ) -> Result<MvData, String> {
        if x.len() != n.saturating_mul(d) || d == 0 {
            return Err(format!("{} values do not make {n} observations of {d} variables", x.len()));
        }
        if let Some(at) = x.iter().position(|v| !v.is_finite()) {
            return Err(format!("observation {} of variable {} is not finite", at % n.max(1) + 1, at / n.max(1) + 1));
        }
        let (total, positive) = match w {
            None => (n as f64, n),
            Some(w) => {
                if w.len() != n {
                    return Err(format!("{} weights for {n} observations", w.len()));
                }
                if let Some(at) = w.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
                    return Err(format!("the weight of observation {} is not a finite number >= 0", at + 1));
                }
                (w.iter().sum(), w.iter().filter(|&&v| v > 0.0).count())
            }
        };
        if positive < 2 {
            let of = if w.is_some() { " of positive weight" } else { "" };
            return Err(format!("{positive} observation(s){of}: too few to fit"));
        }
        let mut center = Vec::with_capacity(d);
        let mut scale = Vec::with_capacity(d);
        for (j, col) in x.chunks_exact(n).enumerate() {
            let (mean, var) = match w {
                None => {
                    let mean = col.iter().sum::<f64>() / n as f64;
                    (mean, col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64)
                }
                Some(w) => {
                    let mean = col.iter().zip(w).map(|(v, w)| w * v).sum::<f64>() / total;
                    (mean, col.iter().zip(w).map(|(v, w)| w * (v - mean) * (v - mean)).sum::<f64>() / total)
                }
            };
            let sd = var.sqrt();
            // a variable whose spread is lost in its values' rounding
            if !(sd > 1e-12 * mean.abs()) || !sd.is_finite() {
                return Err(format!("variable {} is constant", j + 1));
            }
            center.push(mean);
            scale.push(sd);
        }
        if common_scale {
            let root_mean_var = (scale.iter().map(|s| s * s).sum::<f64>() / d as f64).sqrt();
            scale.iter_mut().for_each(|s| *s = root_mean_var);
        }
        let mut z = Vec::with_capacity(n * d);
        for (j, col) in x.chunks_exact(n).enumerate() {
            z.extend(col.iter().map(|v| (v - center[j]) / scale[j]));
        }
        let support: Vec<(f64, f64)> = x
            .chunks_exact(n)
            .map(|col| col.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v))))
            .collect();
        let log_noise =
            noise.then(|| -support.iter().zip(&scale).map(|(&(lo, hi), s)| ((hi - lo) / s).ln()).sum::<f64>());
        let w = w.map(<[f64]>::to_vec);
        let hash = hash_values(x);
        Ok(MvData { n, d, z, scaling: Standardised { center, scale }, hash, log_noise, support, w, total, positive })
    }

    /// The noise component uniform over `support` ((lower, upper) per
    /// variable, the data's units) in place of the bounding box: the
    /// measurement range, say. Why not, if the box does not hold every
    /// observation (each needs a noise density) or is not a box.
    pub fn with_noise_box(mut self, support: &[(f64, f64)]) -> Result<MvData, String> {
        if support.len() != self.d {
            return Err(format!("noise.support has {} ranges for {} variables", support.len(), self.d));
        }
        for (j, (&(lo, hi), &(min, max))) in support.iter().zip(&self.support).enumerate() {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(format!("noise.support's range of variable {} is not finite lower < upper", j + 1));
            }
            if !(lo <= min && max <= hi) {
                return Err(format!(
                    "noise.support's range of variable {} ([{lo}, {hi}]) does not hold its observations ([{min}, {max}])",
                    j + 1
                ));
            }
        }
        let volume = support.iter().zip(&self.scaling.scale).map(|(&(lo, hi), s)| ((hi - lo) / s).ln()).sum::<f64>();
        self.log_noise = Some(-volume);
        self.support = support.to_vec();
        Ok(self)
    }

    /// Observation i's value of variable j.
    #[inline(always)]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.z[j * self.n + i]
    }

    /// Observation i's weight: 1 without weights (a product with it is the
    /// unweighted value bit for bit).
    #[inline(always)]
    pub fn weight(&self, i: usize) -> f64 {
        self.w.as_ref().map_or(1.0, |w| w[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardises_each_variable() {
        let x = [1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 20.0, 20.0];
        let m = MvData::prepare(&x, 4, 2, None, false, false).unwrap();
        assert_eq!(m.scaling.center, vec![2.5, 15.0]);
        assert!((m.scaling.scale[1] - 5.0).abs() < 1e-15);
        assert_eq!(m.at(0, 1), -1.0);
        let mean: f64 = m.z[..4].iter().sum();
        assert!(mean.abs() < 1e-15);
        let common = MvData::prepare(&x, 4, 2, None, true, false).unwrap();
        assert_eq!(common.scaling.scale[0], common.scaling.scale[1]);
        // the box [1, 4] x [10, 20], of volume 30 in the data's units
        let noisy = MvData::prepare(&x, 4, 2, None, false, true).unwrap();
        assert_eq!(noisy.support, vec![(1.0, 4.0), (10.0, 20.0)]);
        let in_data_units = noisy.log_noise.unwrap() - noisy.scaling.scale.iter().map(|s| s.ln()).sum::<f64>();
        assert!((in_data_units + 30f64.ln()).abs() < 1e-14);
    }

    #[test]
    fn a_noise_box_of_the_users_replaces_the_bounding_box() {
        let x = [1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 20.0, 20.0];
        let m =
            MvData::prepare(&x, 4, 2, None, false, true).unwrap().with_noise_box(&[(0.0, 5.0), (0.0, 30.0)]).unwrap();
        assert_eq!(m.support, vec![(0.0, 5.0), (0.0, 30.0)]);
        let in_data_units = m.log_noise.unwrap() - m.scaling.scale.iter().map(|s| s.ln()).sum::<f64>();
        assert!((in_data_units + 150f64.ln()).abs() < 1e-14);
        let m = || MvData::prepare(&x, 4, 2, None, false, true).unwrap();
        assert!(m().with_noise_box(&[(0.0, 5.0), (11.0, 30.0)]).unwrap_err().contains("variable 2"));
        assert!(m().with_noise_box(&[(0.0, 5.0)]).is_err());
        assert!(m().with_noise_box(&[(5.0, 0.0), (0.0, 30.0)]).is_err());
    }

    #[test]
    fn refuses_what_cannot_be_fitted() {
        assert!(MvData::prepare(&[1.0, 2.0, f64::NAN, 4.0], 2, 2, None, false, false)
            .unwrap_err()
            .contains("variable 2"));
        assert!(MvData::prepare(&[1.0, 2.0, 3.0, 3.0, 3.0, 3.0], 3, 2, None, false, false)
            .unwrap_err()
            .contains("constant"));
        assert!(MvData::prepare(&[1.0, 2.0, 3.0], 2, 2, None, false, false).is_err());
        assert!(MvData::prepare(&[1.0, 2.0], 1, 2, None, false, false).is_err());
    }
}
