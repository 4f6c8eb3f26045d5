//! A multivariate mixture's parameters (Normal or Student's t components),
//! its covariance structures (mclust's VVV, EEE, VVI, VII), the Cholesky
//! factors the E-step works with, and the parameters' map from the
//! standardised data to the data's units.
//!
//! A t component (McLachlan & Peel 2000, §7.4) has location μ, scale
//! matrix Σ and degrees of freedom ν:
//!
//!   log p(x) = log Γ((ν+d)/2) − log Γ(ν/2) − d/2 log(νπ) − log|L|
//!              − (ν+d)/2 · log(1 + δ/ν),   δ = (x − μ)ᵀ Σ⁻¹ (x − μ),
//!
//! the univariate t of student.rs with d in place of 1. ν does not change
//! when the data are standardised.

use super::data::Standardised;
use crate::params::Family;
use crate::special::ln_gamma;
use crate::student::LN_PI;

/// How the components' covariance matrices are constrained (R's
/// `covariance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// Each component its own full matrix (mclust's VVV).
    Full,
    /// One full matrix shared by every component (EEE).
    Tied,
    /// Each component its own diagonal matrix (VVI).
    Diagonal,
    /// Each component its own multiple of the identity (VII); its data are
    /// standardised by one scale for every variable, so that it is
    /// spherical in the data's units too.
    Spherical,
}

impl Structure {
    pub const ALL: [Structure; 4] = [Structure::Full, Structure::Tied, Structure::Diagonal, Structure::Spherical];

    pub fn name(self) -> &'static str {
        match self {
            Structure::Full => "full",
            Structure::Tied => "tied",
            Structure::Diagonal => "diagonal",
            Structure::Spherical => "spherical",
        }
    }

    /// The structure's template argument S of kernels/em_mv.cu.
    pub fn kernel_code(self) -> i32 {
        match self {
            Structure::Full => 0,
            Structure::Tied => 1,
            Structure::Diagonal => 2,
            Structure::Spherical => 3,
        }
    }

    pub fn from_name(name: &str) -> Option<Structure> {
        Structure::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Free parameters of a K-component mixture in d dimensions.
    pub fn free_parameters(self, k: usize, d: usize) -> usize {
        let covariance = match self {
            Structure::Full => k * d * (d + 1) / 2,
            Structure::Tied => d * (d + 1) / 2,
            Structure::Diagonal => k * d,
            Structure::Spherical => k,
        };
        (k - 1) + k * d + covariance
    }
}

/// What a multivariate call fits: the covariance structure and the
/// components' family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    pub structure: Structure,
    /// Student's t components (`family = "t"`); `false`: Normal.
    pub t: bool,
    /// With t: every ν held at its start (the user's `df`).
    pub df_fixed: bool,
}

impl Model {
    pub fn normal(structure: Structure) -> Model {
        Model { structure, t: false, df_fixed: false }
    }

    pub fn family(self) -> Family {
        if self.t {
            Family::StudentT
        } else {
            Family::Normal
        }
    }

    /// Student's t components whose ν is estimated (not fixed by `df`).
    pub fn estimates_df(self) -> bool {
        self.t && !self.df_fixed
    }

    /// Free parameters of a K-component mixture in d dimensions: the
    /// structure's, and an estimated ν per component.
    pub fn free_parameters(self, k: usize, d: usize) -> usize {
        self.structure.free_parameters(k, d) + if self.estimates_df() { k } else { 0 }
    }

    /// em_mv's template argument T: 0 Normal, 1 t, 2 t with ν fixed.
    pub fn kernel_family(self) -> i32 {
        match (self.t, self.df_fixed) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        }
    }
}

/// K components in d dimensions: weights, means (component-major:
/// mu[m * d + j]), covariance (for t, scale) matrices (each d × d,
/// column-major, one after another), and t's degrees of freedom.
#[derive(Clone, Debug, PartialEq)]
pub struct MvParams {
    pub k: usize,
    pub d: usize,
    pub alpha: Vec<f64>,
    pub mu: Vec<f64>,
    pub sigma: Vec<f64>,
    /// The noise component's weight (0 without one): the components'
    /// weights sum to 1 minus it.
    pub noise: f64,
    /// Student's t: ν per component; empty for Normal components.
    pub df: Vec<f64>,
}

impl MvParams {
    pub fn mean(&self, m: usize) -> &[f64] {
        &self.mu[m * self.d..(m + 1) * self.d]
    }

    pub fn cov(&self, m: usize) -> &[f64] {
        &self.sigma[m * self.d * self.d..(m + 1) * self.d * self.d]
    }

    /// The same mixture in the data's units (x = center + scale · z).
    pub fn to_data_units(&self, s: &Standardised) -> MvParams {
        let d = self.d;
        let mut p = self.clone();
        for m in 0..self.k {
            for j in 0..d {
                p.mu[m * d + j] = s.center[j] + s.scale[j] * self.mu[m * d + j];
                for l in 0..d {
                    p.sigma[m * d * d + j + d * l] = s.scale[j] * s.scale[l] * self.sigma[m * d * d + j + d * l];
                }
            }
        }
        p
    }

    /// The parameters in the standardised units of `s` (to_data_units's
    /// inverse).
    pub fn to_standardised(&self, s: &Standardised) -> MvParams {
        let d = self.d;
        let mut p = self.clone();
        for m in 0..self.k {
            for j in 0..d {
                p.mu[m * d + j] = (self.mu[m * d + j] - s.center[j]) / s.scale[j];
                for l in 0..d {
                    p.sigma[m * d * d + j + d * l] = self.sigma[m * d * d + j + d * l] / (s.scale[j] * s.scale[l]);
                }
            }
        }
        p
    }

    /// The components in the canonical order: ascending first coordinate of
    /// the mean, ties broken by the next coordinates.
    pub fn canonical(&self) -> MvParams {
        let d = self.d;
        let mut order: Vec<usize> = (0..self.k).collect();
        order.sort_by(|&a, &b| {
            (0..d).map(|j| self.mu[a * d + j].total_cmp(&self.mu[b * d + j])).find(|o| o.is_ne()).unwrap_or(a.cmp(&b))
        });
        let mut p = self.clone();
        for (to, &from) in order.iter().enumerate() {
            p.alpha[to] = self.alpha[from];
            p.mu[to * d..(to + 1) * d].copy_from_slice(self.mean(from));
            p.sigma[to * d * d..(to + 1) * d * d].copy_from_slice(self.cov(from));
            if let (Some(t), Some(&v)) = (p.df.get_mut(to), self.df.get(from)) {
                *t = v;
            }
        }
        p
    }
}

/// The lower Cholesky factor L (column-major) of the symmetric positive
/// definite d × d matrix `a`; `None` if a pivot is not positive and finite.
pub fn cholesky(a: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; d * d];
    for j in 0..d {
        let mut left = a[j + d * j];
        for c in 0..j {
            left -= l[j + d * c] * l[j + d * c];
        }
        if !(left > 0.0 && left.is_finite()) {
            return None;
        }
        let pivot = left.sqrt();
        l[j + d * j] = pivot;
        for i in j + 1..d {
            let mut v = a[i + d * j];
            for c in 0..j {
                v -= l[i + d * c] * l[j + d * c];
            }
            l[i + d * j] = v / pivot;
        }
    }
    Some(l)
}

/// What the E-step needs of one component: its mean, its Cholesky factor
/// with the reciprocals of the diagonal, and the log-density's constant:
/// log α − d/2 log 2π − log|L| (Normal), log α + log Γ((ν+d)/2) −
/// log Γ(ν/2) − d/2 log(νπ) − log|L| (t).
#[derive(Clone, Debug)]
pub struct Term {
    pub mean: Vec<f64>,
    pub chol: Vec<f64>,
    pub inv_diag: Vec<f64>,
    pub log_const: f64,
    pub t: Option<TTerm>,
}

/// A t component's E-step terms: log p = log_const − half · log(1 + δ·inv_df)
/// and the observation's weight u = u0 / (1 + δ·inv_df).
#[derive(Clone, Copy, Debug)]
pub struct TTerm {
    /// (ν + d)/2
    pub half: f64,
    /// 1/ν
    pub inv_df: f64,
    /// (ν + d)/ν
    pub u0: f64,
}

impl TTerm {
    fn new(df: f64, d: usize) -> TTerm {
        TTerm { half: (df + d as f64) / 2.0, inv_df: 1.0 / df, u0: (df + d as f64) / df }
    }
}

/// The E-step's terms of every component, or `None` if a covariance is not
/// positive definite or a weight not positive.
pub fn terms(p: &MvParams) -> Option<Vec<Term>> {
    let d = p.d;
    (0..p.k)
        .map(|m| {
            let chol = cholesky(p.cov(m), d)?;
            if !(p.alpha[m] > 0.0) {
                return None;
            }
            let inv_diag: Vec<f64> = (0..d).map(|j| 1.0 / chol[j + d * j]).collect();
            let log_det_half: f64 = (0..d).map(|j| chol[j + d * j].ln()).sum();
            let (log_const, t) = match p.df.get(m) {
                None => (p.alpha[m].ln() - 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln() - log_det_half, None),
                Some(&df) => {
                    if !crate::student::df_ok(df) {
                        return None;
                    }
                    let t = TTerm::new(df, d);
                    let c = p.alpha[m].ln() + ln_gamma(t.half)
                        - ln_gamma(df / 2.0)
                        - 0.5 * d as f64 * (df.ln() + LN_PI)
                        - log_det_half;
                    (c, Some(t))
                }
            };
            Some(Term { mean: p.mean(m).to_vec(), chol, inv_diag, log_const, t })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_reproduces_the_matrix() {
        let a = [4.0, 2.0, 0.4, 2.0, 5.0, 1.0, 0.4, 1.0, 3.0];
        let l = cholesky(&a, 3).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let v: f64 = (0..3).map(|c| l[i + 3 * c] * l[j + 3 * c]).sum();
                assert!((v - a[i + 3 * j]).abs() < 1e-14);
            }
        }
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
    }

    #[test]
    fn parameters_are_counted_as_mclust_counts_them() {
        // mclust::nMclustParams("VVV", 4, 3) = 44, "EEE" 24, "VVI" 26, "VII" 17
        assert_eq!(Structure::Full.free_parameters(3, 4), 44);
        assert_eq!(Structure::Tied.free_parameters(3, 4), 24);
        assert_eq!(Structure::Diagonal.free_parameters(3, 4), 26);
        assert_eq!(Structure::Spherical.free_parameters(3, 4), 17);
    }

    #[test]
    fn canonical_order_sorts_by_first_coordinate() {
        let p = MvParams {
            k: 2,
            d: 2,
            alpha: vec![0.3, 0.7],
            mu: vec![5.0, 0.0, 1.0, 2.0],
            sigma: vec![1.0, 0.0, 0.0, 1.0, 2.0, 0.5, 0.5, 2.0],
            noise: 0.0,
            df: vec![3.0, 30.0],
        };
        let c = p.canonical();
        assert_eq!(c.alpha, vec![0.7, 0.3]);
        assert_eq!(c.mu, vec![1.0, 2.0, 5.0, 0.0]);
        assert_eq!(c.cov(0), &[2.0, 0.5, 0.5, 2.0]);
        assert_eq!(c.df, vec![30.0, 3.0]);
    }
}
