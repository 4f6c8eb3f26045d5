//! The mixture itself: its family, its parameters, and the sufficient
//! statistics one E-step pass gathers for the next M-step.

use crate::limits::MAX_COMPONENTS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    InvGauss,
    Normal,
}

impl Family {
    pub const ALL: [Family; 2] = [Family::InvGauss, Family::Normal];

    /// The name R uses for the family (bulkem()'s `family`).
    pub fn name(self) -> &'static str {
        match self {
            Family::InvGauss => "invgauss",
            Family::Normal => "normal",
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// What R calls the shape parameter: λ of the inverse Gaussian, σ of the
    /// Normal.
    pub fn shape_name(self) -> &'static str {
        match self {
            Family::InvGauss => "lambda",
            Family::Normal => "sigma",
        }
    }
}

/// Mixture parameters. `shape` is λ for the inverse Gaussian and σ for the
/// Normal; only the first `k` entries of each array are meaningful.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub k: usize,
    pub alpha: [f64; MAX_COMPONENTS],
    pub mu: [f64; MAX_COMPONENTS],
    pub shape: [f64; MAX_COMPONENTS],
}

impl Params {
    pub fn zeroed(k: usize) -> Params {
        Params { k, alpha: [0.0; MAX_COMPONENTS], mu: [0.0; MAX_COMPONENTS], shape: [0.0; MAX_COMPONENTS] }
    }

    /// The same mixture with its components reordered by `order`.
    pub fn permuted(&self, order: &[usize]) -> Params {
        let mut p = Params::zeroed(self.k);
        for (to, &from) in order.iter().enumerate() {
            p.alpha[to] = self.alpha[from];
            p.mu[to] = self.mu[from];
            p.shape[to] = self.shape[from];
        }
        p
    }

    /// Component order by ascending μ (ties keep their index order), the
    /// canonical order of reported fits.
    pub fn order_by_mu(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.k).collect();
        order.sort_by(|&a, &b| self.mu[a].total_cmp(&self.mu[b]));
        order
    }
}

/// What one E-step pass produces: the log-likelihood of the parameters it
/// was run with (without the parameter-free Σh) and, per component,
/// S0 = Σr, S1 = Σr·x, S2 = Σr·g (g = 1/x or x², see `family`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub ll: f64,
    pub s0: [f64; MAX_COMPONENTS],
    pub s1: [f64; MAX_COMPONENTS],
    pub s2: [f64; MAX_COMPONENTS],
}

impl Stats {
    pub fn zero() -> Stats {
        Stats { ll: 0.0, s0: [0.0; MAX_COMPONENTS], s1: [0.0; MAX_COMPONENTS], s2: [0.0; MAX_COMPONENTS] }
    }
}
