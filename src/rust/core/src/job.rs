//! What a call asks for (`Job`) and what it gets back (`Fit`).

use crate::error::Error;

/// Components per mixture are held in fixed arrays of this size, so a start's
/// parameters and sufficient statistics live on the stack.
pub const MAX_COMPONENTS: usize = 8;

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

/// One call: the datasets (borrowed, e.g. straight from R's vectors) and
/// how to fit them.
#[derive(Clone, Debug)]
pub struct Job<'a> {
    pub datasets: Vec<&'a [f64]>,
    pub family: Family,
    pub components: usize,
    pub max_iters: u32,
    pub epsilon: f64,
    pub starts: u32,
    pub seed: u64,
    /// cuda-batched only: fp32 exponentials until a fit looks converged,
    /// then fp64 to its end (other engines are always fp64).
    pub mixed_precision: bool,
    /// Keep every start's summary in the fits (control$keep.starts).
    pub keep_starts: bool,
}

impl Job<'_> {
    pub fn num_datasets(&self) -> usize {
        self.datasets.len()
    }

    pub fn dataset(&self, d: usize) -> &[f64] {
        self.datasets[d]
    }

    /// The core's own check of the settings; R validates first, with its
    /// argument names, so users should never see these messages.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |arg, message: String| Err(Error::Argument { arg, message });
        if self.components < 1 || self.components > MAX_COMPONENTS {
            return bad("num.components", format!("must be between 1 and {MAX_COMPONENTS}"));
        }
        if self.max_iters < 1 {
            return bad("max.iters", "must be at least 1".into());
        }
        if self.starts < 1 {
            return bad("random.inits", "must be at least 1".into());
        }
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return bad("epsilon", "must be a positive finite number".into());
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The log-likelihood rose by less than epsilon.
    Converged,
    /// Stopped at max.iters without meeting the convergence rule.
    MaxIters,
    /// Every start degenerated.
    Failed,
    /// The data cannot be fitted (too short, non-finite, ...); never started.
    Invalid,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::MaxIters => "max_iters",
            Status::Failed => "failed",
            Status::Invalid => "invalid",
        }
    }
}

/// The best fit of one dataset, in the data's own units, components in
/// ascending μ. `params`, `init`, `best_start` are `None` unless a start
/// succeeded.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    pub n: usize,
    pub status: Status,
    pub message: String,
    pub params: Option<Params>,
    /// The winning start's initial values, in the same component order as
    /// `params` (component j of `init` is where component j of `params` began).
    pub init: Option<Params>,
    /// Log-likelihood of `params` on the original data (NaN without a fit).
    pub loglik: f64,
    /// EM updates applied by the winning start.
    pub iterations: u32,
    /// Zero-based index of the winning start.
    pub best_start: Option<u32>,
    /// Starts that ended without degenerating.
    pub starts_ok: u32,
    /// Every start, by start index, in the data's units, when kept.
    pub starts: Option<Vec<crate::engine::StartRecord>>,
}

impl Fit {
    /// (AIC, BIC) with 3K − 1 free parameters (K means, K shapes, K − 1
    /// weights); NaN without a fit.
    pub fn information_criteria(&self) -> (f64, f64) {
        let Some(p) = &self.params else { return (f64::NAN, f64::NAN) };
        let df = (3 * p.k - 1) as f64;
        (-2.0 * self.loglik + 2.0 * df, -2.0 * self.loglik + df * (self.n as f64).ln())
    }

    pub fn without_params(n: usize, status: Status, message: String, starts_ok: u32) -> Fit {
        Fit { n, status, message, params: None, init: None, loglik: f64::NAN, iterations: 0, best_start: None, starts_ok, starts: None }
    }
}
