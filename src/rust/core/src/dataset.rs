//! One dataset made ready for EM: checked, rescaled, with the per-observation
//! values every E-step needs computed once (once per call, whatever the
//! number of Ks).
//!
//! Fitting happens on rescaled data because the M-step's differences
//! (Σr/x − S0²/S1, S2/S0 − μ²) cancel badly far from unit scale. The inverse
//! Gaussian is closed under scaling (cX ~ IG(cμ, cλ)), so its data is divided
//! by the mean; Normal data is standardised. Parameters are mapped back after.
//! How a family rescales is the family's (ComponentFamily::location_scale,
//! unscale, rescale, log_h_sum_unscaled).

use std::fmt;

use crate::estep::{e_step, e_step_noisy, e_step_weighted};
use std::sync::OnceLock;

use crate::family::{self, with_family, ComponentFamily};
use crate::fixed::Fixed;
use crate::limits::{DF_START, NOISE_START, OBS_PER_COMPONENT};
use crate::mathx::mix64;
use crate::noise::{Noise, Support};
use crate::params::{Family, Params, Stats};
use crate::truncation::{censored_e_step, Censored, CensoredStats, Masses, Window};

pub struct Prepared {
    /// The family the data were checked and rescaled for.
    pub family: Family,
    /// Rescaled observations, x' = (x − shift) / scale.
    pub x: Vec<f64>,
    /// ComponentFamily::aux of each rescaled observation.
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
    /// Start 0's parameters when the job gives them (Job::inits), rescaled.
    pub init: Option<Params>,
    /// The noise component (noise.rs), when the job fits one.
    pub noise: Option<Noise>,
    /// Student's t: the user's fixed ν (Settings::df); empty: estimated.
    pub fixed_df: Vec<f64>,
    /// `equal.scale` (Settings::equal_scale): one shape shared by the
    /// components, every M-step's (mstep.rs).
    pub equal_scale: bool,
    /// Parameters fixed at given values (Job::fixed), rescaled:
    /// imposed on every start (`start`) and kept by every M-step.
    pub fixed: Option<Fixed>,
    /// Each observation's weight (`weights`, frequency or case weights, at
    /// least 0), when the job gives them: every sum of the E-step, the
    /// information and the log-likelihood weighs its observation by it.
    /// (Starts, the screen's distinct values, the refinement's regions and
    /// a noise component's range look at the values alone.)
    pub w: Option<Vec<f64>>,
    /// The window the data were observed in (`truncation`, truncation.rs),
    /// in the fitted units: the log-likelihood renormalised over it, the
    /// M-step's components with it.
    pub truncation: Option<Window>,
    /// Observations known only to lie in a window (censored: Job::censored),
    /// grouped by window, in the fitted units and inside the truncation
    /// window; their count is in `total`, not in `x`.
    pub censored: Vec<Censored>,
    /// Σ w, or the number of observations without weights: the n of BIC,
    /// of the screen's expected counts and of the rescaling's Jacobian.
    pub total: f64,
    /// `x` in ascending order, made on first use (`sorted`).
    sorted: OnceLock<Vec<f64>>,
}

/// Why a dataset cannot be fitted; each reads after "dataset".
#[derive(Clone, Debug, PartialEq)]
pub enum Invalid {
    TooShort {
        n: usize,
        needed: usize,
    },
    NotFinite {
        count: usize,
        first: usize,
    },
    NotPositive {
        family: Family,
        count: usize,
        first: usize,
    },
    AllEqual {
        n: usize,
        value: f64,
    },
    /// Rescaled, some values would overflow, underflow to zero or lose all
    /// precision: they span too many orders of magnitude for double precision.
    TooSpread {
        min: f64,
        max: f64,
    },
    /// Weights that are not finite numbers >= 0, or not one per
    /// observation.
    BadWeights {
        count: usize,
        first: usize,
    },
    /// Every weight 0.
    ZeroWeights,
    /// A censored observation whose window holds nothing (inside the
    /// truncation window, if any).
    BadCensoring {
        first: usize,
        lo: f64,
        hi: f64,
    },
    /// Values outside the truncation window.
    OutsideWindow {
        count: usize,
        first: usize,
        lo: f64,
        hi: f64,
    },
    /// The data's scale (the inverse Gaussian's mean, the Normal's standard
    /// deviation) is below the smallest normal double (f64::MIN_POSITIVE,
    /// 2.2e-308): subnormal, with too few significant bits left to fit on,
    /// and the fitted means and shapes would be subnormal too.
    TooSmall {
        family: Family,
        min: f64,
        max: f64,
        scale: f64,
    },
}

impl Invalid {
    /// The check every K makes first: 3 observations per component.
    pub fn too_short(n: usize, k: usize) -> Option<Invalid> {
        let needed = OBS_PER_COMPONENT * k;
        (n < needed).then_some(Invalid::TooShort { n, needed })
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |count: usize| if count == 1 { "" } else { "s" };
        match *self {
            Invalid::TooShort { n, needed } => write!(
                f,
                "has {n} observation{}; at least {needed} ({OBS_PER_COMPONENT} per component) are needed",
                s(n)
            ),
            Invalid::NotFinite { count, first } => {
                write!(f, "contains {count} NA, NaN or infinite value{} (the first at position {first})", s(count))
            }
            Invalid::NotPositive { family, count, first } => write!(
                f,
                "contains {count} value{} <= 0 (the first at position {first}) (the {} needs positive data)",
                s(count),
                match family {
                    Family::Lognormal => "lognormal",
                    Family::Gamma => "gamma",
                    _ => "inverse Gaussian",
                }
            ),
            Invalid::AllEqual { n, value } => {
                write!(f, "has all {n} values equal ({value}); a mixture cannot be fitted")
            }
            Invalid::BadWeights { count, first } => write!(
                f,
                "has {count} weight{} that {} not a finite number >= 0 (the first at position {first})",
                s(count),
                if count == 1 { "is" } else { "are" }
            ),
            Invalid::ZeroWeights => write!(f, "has every weight 0: nothing is left to fit"),
            Invalid::BadCensoring { first, lo, hi } => write!(
                f,
                "has a censored observation known to lie in ({lo}, {hi}), where the data cannot be \
                 (the {first}th censored one; inside the truncation window, for truncated data)"
            ),
            Invalid::OutsideWindow { count, first, lo, hi } => write!(
                f,
                "has {count} value{} outside the truncation window [{lo}, {hi}] (the first at position {first})",
                s(count)
            ),
            Invalid::TooSpread { min, max } => write!(
                f,
                "has values from {min:e} to {max:e}, too many orders of magnitude apart to rescale in double precision"
            ),
            Invalid::TooSmall { family, min, max, scale } => {
                let (what, scaling) = match family {
                    Family::InvGauss => ("mean", "mu and lambda scale"),
                    Family::Gamma => ("mean", "mu scales"),
                    Family::Normal | Family::StudentT => ("standard deviation", "mu and sigma scale"),
                    Family::ExGauss => ("standard deviation", "mu, sigma and tau scale"),
                    Family::Lognormal => ("standard deviation of the logarithms", "mu shifts"),
                };
                let size = if scale > 0.0 { format!("{scale:e}") } else { "0 once rounded".to_string() };
                write!(
                    f,
                    "has values from {min:e} to {max:e}, whose {what} ({size}) is below the smallest normal double \
                     ({:.1e}), where double precision keeps too few digits to fit them; multiply the data by a \
                     constant such as 1e300 ({scaling} with it)",
                    f64::MIN_POSITIVE
                )
            }
        }
    }
}

impl Prepared {
    /// The rescaled observations in ascending order (`f64::total_cmp`),
    /// sorted once, when first asked for: every partition start of the
    /// dataset cuts them (starts.rs), hundreds per dataset with
    /// control$short.runs, and a sort per start cost more than its fit on
    /// a GPU.
    pub fn sorted(&self) -> &[f64] {
        self.sorted.get_or_init(|| {
            let mut s = self.x.clone();
            s.sort_unstable_by(f64::total_cmp);
            s
        })
    }

    /// The dataset with a noise component over `support` (the data's units;
    /// `values` are the data the dataset was prepared from).
    pub fn with_noise(mut self, support: Support, values: &[f64]) -> Prepared {
        let terms = support.terms(self.family, values, &self.x, self.scale);
        self.noise = Some(Noise { support, terms });
        self
    }

    /// The dataset with its observations weighted by `w` (one per value
    /// of `values`, the data it was prepared from), or why it cannot be.
    pub fn with_weights(mut self, w: &[f64], values: &[f64], all_zero_ok: bool) -> Result<Prepared, Invalid> {
        if w.len() != values.len() {
            return Err(Invalid::BadWeights {
                count: w.len().abs_diff(values.len()),
                first: w.len().min(values.len()) + 1,
            });
        }
        if let Some((count, first)) = count_bad(w, |v| !(v.is_finite() && v >= 0.0)) {
            return Err(Invalid::BadWeights { count, first });
        }
        if !all_zero_ok && !w.iter().any(|&v| v > 0.0) {
            return Err(Invalid::ZeroWeights);
        }
        // Σ h, weighted: the family's h of each rescaled value (and, fitted
        // on the logarithms, the Jacobian −log x of each value)
        let logs = self.family.on_log_scale();
        let h = |(i, &x): (usize, &f64)| {
            let h = with_family!(self.family, F => F::log_h(x));
            if logs {
                h - values[i].ln()
            } else {
                h
            }
        };
        self.h_sum = self.x.iter().enumerate().map(h).zip(w).map(|(h, &w)| w * h).sum();
        self.total = w.iter().sum();
        self.w = Some(w.to_vec());
        Ok(self)
    }

    /// The dataset observed inside `window` (the data's units), or why it
    /// cannot be: every value must lie in it.
    pub fn with_truncation(mut self, window: Window, values: &[f64]) -> Result<Prepared, Invalid> {
        if let Some((count, first)) = count_bad(values, |v| !window.holds(v)) {
            return Err(Invalid::OutsideWindow { count, first, lo: window.lo, hi: window.hi });
        }
        self.truncation = Some(window.fitted(self.family.on_log_scale(), self.shift, self.scale));
        Ok(self)
    }

    /// The dataset with censored observations, `count` of each group known
    /// only to lie in its window (the data's units), or why it cannot be:
    /// a window that the truncation window (set first) leaves nothing of.
    pub fn with_censoring(mut self, groups: &[Censored]) -> Result<Prepared, Invalid> {
        let logs = self.family.on_log_scale();
        let mut fitted = Vec::with_capacity(groups.len());
        for (i, g) in groups.iter().enumerate() {
            let w = g.window.fitted(logs, self.shift, self.scale);
            let inside = match &self.truncation {
                Some(t) => w.within(t),
                None => Some(w).filter(|f| f.lo < f.hi),
            };
            match inside {
                Some(f) => fitted.push(Censored { window: f, count: g.count }),
                None => return Err(Invalid::BadCensoring { first: i + 1, lo: g.window.lo, hi: g.window.hi }),
            }
        }
        fitted.sort_by(|a, b| a.window.lo.total_cmp(&b.window.lo).then(a.window.hi.total_cmp(&b.window.hi)));
        for g in fitted {
            match self.censored.last_mut() {
                Some(last) if last.window == g.window => last.count += g.count,
                _ => self.censored.push(g),
            }
        }
        self.total += groups.iter().map(|g| g.count).sum::<f64>();
        Ok(self)
    }

    /// The E-step of the censored observations under `p` (fitted units),
    /// `None` without any.
    pub fn censored_stats(&self, p: &Params) -> Option<CensoredStats> {
        (!self.censored.is_empty()).then(|| {
            let noise: Option<Vec<f64>> = self
                .noise
                .as_ref()
                .map(|_| self.censored.iter().filter_map(|g| self.noise_ln_mass(&g.window)).collect());
            censored_e_step(self.family, &self.censored, p, noise.as_deref())
        })
    }

    /// What truncation adds to the log-likelihood of `p` (fitted units):
    /// −N log Q (truncation.rs), 0 without it; `known`: masses computed
    /// before (em.rs's, of the M-step that made `p`).
    pub fn truncation_term(&self, p: &Params, known: Option<&Masses>) -> f64 {
        self.truncation.as_ref().map_or(0.0, |w| w.term(self.family, p, self.total, known, self.noise_ln_mass(w)))
    }

    /// With a noise component, log U: the share of its support (a uniform
    /// in the data's units) inside the window `w` (fitted units, mapped
    /// back); −∞ where they do not overlap. `None` without noise.
    pub fn noise_ln_mass(&self, w: &Window) -> Option<f64> {
        let support = self.noise.as_ref()?.support;
        let logs = self.family.on_log_scale();
        let data = |z: f64| {
            let v = self.shift + self.scale * z;
            if logs {
                v.exp()
            } else {
                v
            }
        };
        let (lo, hi) = (data(w.lo).max(support.lower), data(w.hi).min(support.upper));
        Some(if hi > lo { ((hi - lo) / (support.upper - support.lower)).min(1.0).ln() } else { f64::NEG_INFINITY })
    }

    /// The noise component's t(x) per observation, if the dataset has one.
    pub fn noise_terms(&self) -> Option<&[f64]> {
        self.noise.as_ref().map(|n| &n.terms[..])
    }

    /// One E-step pass of `p` (rescaled units) over the prepared data, with
    /// the noise component if the dataset has one.
    pub fn e_step(&self, p: &Params) -> Stats {
        if let Some(w) = &self.w {
            return e_step_weighted(self.family, &self.x, &self.g, self.noise_terms(), w, p);
        }
        match self.noise_terms() {
            Some(t) => e_step_noisy(self.family, &self.x, &self.g, t, p),
            None => e_step(self.family, &self.x, &self.g, p),
        }
    }

    /// `p` as a start on this dataset: ex-Gaussian components without a τ
    /// yet are made ex-Gaussian (exgauss::start); Student's t components
    /// without a ν yet get the user's (fixed; one per component by ascending μ) or
    /// DF_START; with a noise component, one
    /// that has no weight for it yet gets NOISE_START, the components'
    /// weights scaled to share the rest; with `equal_scale`, one shape, the
    /// components' pooled by their weights (a start outside the constrained
    /// model would let the first constrained M-step lower the likelihood,
    /// which the fit takes for a numerical breakdown).
    pub fn start(&self, p: Params) -> Params {
        let mut p = self.start_free(p);
        if self.equal_scale && p.k > 1 {
            let common = family::pooled_shape(self.family, &p.alpha[..p.k], &p.shape[..p.k]);
            p.shape[..p.k].fill(common);
        }
        match &self.fixed {
            Some(f) => f.impose(&p),
            None => p,
        }
    }

    /// `start` but for the fixed values.
    fn start_free(&self, mut p: Params) -> Params {
        if self.family == Family::ExGauss && !(p.df[0] > 0.0) {
            for m in 0..p.k {
                (p.mu[m], p.shape[m], p.df[m]) = crate::exgauss::start(p.mu[m], p.shape[m]);
            }
        }
        if self.family.has_df() && !(p.df[0] > 0.0) {
            p.df_fixed = !self.fixed_df.is_empty();
            // one ν per component goes by ascending starting μ, the order
            // fits are reported in
            for (rank, m) in p.order_by_mu().into_iter().enumerate() {
                p.df[m] = match self.fixed_df.len() {
                    0 => DF_START,
                    1 => self.fixed_df[0],
                    _ => self.fixed_df.get(rank).copied().unwrap_or(f64::NAN),
                };
            }
        }
        if self.noise.is_none() || p.noise > 0.0 {
            return p;
        }
        let mut out = Params { noise: NOISE_START, ..p };
        for a in &mut out.alpha[..p.k] {
            *a *= 1.0 - NOISE_START;
        }
        out
    }

    /// Parameters fitted on the rescaled data, in the original units.
    pub fn unscale(&self, p: &Params) -> Params {
        with_family!(self.family, F => self.unscale_of::<F>(p))
    }

    fn unscale_of<F: ComponentFamily>(&self, p: &Params) -> Params {
        let mut out = *p;
        for m in 0..p.k {
            (out.mu[m], out.shape[m]) = F::unscale(p.mu[m], p.shape[m], self.shift, self.scale);
        }
        // the ex-Gaussian's τ is a scale (the t's ν has no unit)
        if self.family == Family::ExGauss {
            for m in 0..p.k {
                out.df[m] = p.df[m] * self.scale;
            }
        }
        out
    }

    /// Parameters in the data's units, on the rescaled data (the inverse of
    /// `unscale`).
    pub fn rescale(&self, p: &Params) -> Params {
        with_family!(self.family, F => self.rescale_of::<F>(p))
    }

    fn rescale_of<F: ComponentFamily>(&self, p: &Params) -> Params {
        let mut out = *p;
        for m in 0..p.k {
            (out.mu[m], out.shape[m]) = F::rescale(p.mu[m], p.shape[m], self.shift, self.scale);
        }
        if self.family == Family::ExGauss {
            for m in 0..p.k {
                out.df[m] = p.df[m] / self.scale;
            }
        }
        out
    }

    /// Log-likelihood of `params` (original units) on the original `values`,
    /// whichever engine fitted them: one E-step pass plus the parameter-free
    /// Σh, which follows from the rescaled data's (for the inverse Gaussian
    /// Σ −3/2 log x = Σ −3/2 log x' − 3/2 N log scale). Far from unit scale,
    /// where the original units' squares would overflow or underflow, the
    /// same quantity is computed on the rescaled data: ℓ(θ; x) = ℓ(θ'; x') −
    /// N log scale, θ' being θ in rescaled units.
    pub fn log_likelihood(&self, family: Family, values: &[f64], params: &Params) -> f64 {
        let logs: Vec<f64>;
        let (fitted, jacobian) = if family.on_log_scale() {
            // the fitted family's on the logarithms, with the Jacobian
            // −Σ log x that h_sum holds here taken out and added back
            logs = values.iter().map(|v| v.ln()).collect();
            let jacobian = match &self.w {
                Some(w) => -logs.iter().zip(w).map(|(l, w)| w * l).sum::<f64>(),
                None => -logs.iter().sum::<f64>(),
            };
            (&logs[..], jacobian)
        } else {
            (values, 0.0)
        };
        let noise = self.noise.as_ref().map(|n| n.support.terms(family, values, fitted, 1.0));
        self.log_likelihood_fitted(family, fitted, noise.as_deref(), params, self.h_sum - jacobian)
            + jacobian
            + self.truncation_term(&self.rescale(params), None)
            + self.censored_stats(&self.rescale(params)).map_or(0.0, |c| c.ll)
    }

    /// `log_likelihood` for a family fitted on the values themselves (or
    /// on `values` already transformed; `noise` the noise component's t(x)
    /// on them), `h_sum` the prepared data's Σ h without any Jacobian of
    /// that transform.
    fn log_likelihood_fitted(
        &self,
        family: Family,
        values: &[f64],
        noise: Option<&[f64]>,
        params: &Params,
        h_sum: f64,
    ) -> f64 {
        // the exact values' count (Σ w with weights): the Jacobian of the
        // rescaling is theirs; censored values' windows are invariant
        let n = self.total - self.censored.iter().map(|g| g.count).sum::<f64>();
        let moderate = self.scale.abs().log2().abs() <= MODERATE_SCALE_LOG2;
        if moderate {
            let g: Vec<f64> = values.iter().map(|&x| family::aux(family, x)).collect();
            let h_unscaled = with_family!(family, F => F::log_h_sum_unscaled(h_sum, n, self.scale));
            let stats = match (&self.w, noise) {
                (Some(w), _) => e_step_weighted(family, values, &g, noise, w, params),
                (None, Some(t)) => e_step_noisy(family, values, &g, t, params),
                (None, None) => e_step(family, values, &g, params),
            };
            let ll = stats.ll + h_unscaled;
            if ll.is_finite() {
                return ll;
            }
        }
        self.e_step(&self.rescale(params)).ll + h_sum - n * self.scale.ln()
    }
}

/// Within 2^±300 of 1, squares and reciprocals of the data's scale stay far
/// inside double precision, so the log-likelihood is computed in the data's
/// own units.
const MODERATE_SCALE_LOG2: f64 = 300.0;

/// Checks one dataset and prepares it, or says why it cannot be fitted.
/// Callers check the length for their K first (`Invalid::too_short`).
pub fn prepare(values: &[f64], family: Family) -> Result<Prepared, Invalid> {
    if family.on_log_scale() {
        return prepare_logarithms(values, family);
    }
    // the t's data are prepared as the Normal's (with_family!), and are the t's
    with_family!(family, F => prepare_of::<F>(values)).map(|ds| Prepared { family, ..ds })
}

/// `prepare` for a family fitted on the logarithms of the data: positive
/// values, their logarithms prepared for the family's implementation, and
/// the Jacobian of the transform, −Σ log x, in the parameter-free part of
/// the log-likelihood, so that every log-likelihood computed on the
/// prepared data (every engine's) is the data's.
fn prepare_logarithms(values: &[f64], family: Family) -> Result<Prepared, Invalid> {
    if let Some(short) = Invalid::too_short(values.len(), 1) {
        return Err(short);
    }
    if let Some((count, first)) = count_bad(values, |v| !v.is_finite()) {
        return Err(Invalid::NotFinite { count, first });
    }
    if let Some((count, first)) = count_bad(values, |v| v <= 0.0) {
        return Err(Invalid::NotPositive { family, count, first });
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    // what is wrong with the logarithms, said of the values
    let mut ds = with_family!(family, F => prepare_of::<F>(&logs)).map_err(|why| match why {
        Invalid::AllEqual { n, value } => Invalid::AllEqual { n, value: value.exp() },
        Invalid::TooSpread { min, max } => Invalid::TooSpread { min: min.exp(), max: max.exp() },
        Invalid::TooSmall { min, max, scale, .. } => {
            Invalid::TooSmall { family, min: min.exp(), max: max.exp(), scale }
        }
        other => other,
    })?;
    ds.family = family;
    ds.h_sum -= logs.iter().sum::<f64>();
    Ok(ds)
}

/// `prepare` for the family `F`.
fn prepare_of<F: ComponentFamily>(values: &[f64]) -> Result<Prepared, Invalid> {
    let family = F::FAMILY;
    let n = values.len();
    if let Some(short) = Invalid::too_short(n, 1) {
        return Err(short);
    }
    if let Some((count, first)) = count_bad(values, |v| !v.is_finite()) {
        return Err(Invalid::NotFinite { count, first });
    }
    if F::POSITIVE {
        if let Some((count, first)) = count_bad(values, |v| v <= 0.0) {
            return Err(Invalid::NotPositive { family, count, first });
        }
    }
    let first = values[0];
    if values.iter().all(|&v| v == first) {
        return Err(Invalid::AllEqual { n, value: first });
    }

    // Work in units of a power of two near the largest magnitude, so that
    // sums and squares stay finite at any scale. Dividing by a power of two
    // is exact, so for data of moderate scale every quantity below is
    // bit for bit what it would be in the original units.
    let unit = pow2_at_most(values.iter().fold(0.0f64, |m, &v| m.max(v.abs())));
    let u: Vec<f64> = values.iter().map(|&v| v / unit).collect();
    let nf = n as f64;
    let mean = u.iter().sum::<f64>() / nf;
    let sd = (u.iter().map(|&v| (v - mean) * (v - mean)).sum::<f64>() / nf).sqrt();
    let (shift, scale) = F::location_scale(mean, sd);
    let x: Vec<f64> = u.iter().map(|&v| (v - shift) / scale).collect();
    let g: Vec<f64> = x.iter().map(|&v| F::aux(v)).collect();
    let h_sum: f64 = x.iter().map(|&v| F::log_h(v)).sum();
    let (shift, scale) = (shift * unit, scale * unit);
    let spread = sd / (scale / unit);
    let usable = |v: f64| F::in_support(v);
    let ok = scale.is_normal()
        && scale > 0.0
        && shift.is_finite()
        && spread.is_normal()
        && h_sum.is_finite()
        && x.iter().all(|&v| usable(v))
        && g.iter().all(|&v| v.is_finite());
    if !ok {
        let (min, max) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        // the scale is at most the largest magnitude (unit), so one that is
        // not a normal double is subnormal or zero: the data are too small
        // (all subnormal, or spread by less than 2.2e-308), not too spread
        if !scale.is_normal() {
            return Err(Invalid::TooSmall { family, min, max, scale });
        }
        return Err(Invalid::TooSpread { min, max });
    }
    Ok(Prepared {
        family,
        x,
        g,
        h_sum,
        shift,
        scale,
        spread,
        hash: hash_values(values),
        init: None,
        noise: None,
        fixed_df: Vec::new(),
        equal_scale: false,
        fixed: None,
        truncation: None,
        censored: Vec::new(),
        w: None,
        total: nf,
        sorted: OnceLock::new(),
    })
}

/// The largest power of two not above `v` (> 0, finite), or 1 for 0.
fn pow2_at_most(v: f64) -> f64 {
    if !(v > 0.0 && v.is_finite()) {
        return 1.0;
    }
    if v < f64::MIN_POSITIVE {
        // subnormal: powi(e) of e < −1022 computes 1 / 2^−e, which
        // overflows, and gives 0. Found 2^64 times higher instead, where v is
        // normal; both scalings are exact (2^−1074 is a double).
        const TWO_64: f64 = 18_446_744_073_709_551_616.0;
        return pow2_at_most(v * TWO_64) / TWO_64;
    }
    let e = v.log2().floor();
    let p = 2f64.powi(e as i32);
    // log2 may round up just below a power of two
    if p > v {
        p / 2.0
    } else {
        p
    }
}

/// How many values are bad, and the (1-based) position of the first.
fn count_bad(values: &[f64], bad: impl Fn(f64) -> bool) -> Option<(usize, usize)> {
    let first = values.iter().position(|&v| bad(v))?;
    Some((values.iter().filter(|&&v| bad(v)).count(), first + 1))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_scale_starts_obey_the_constraint_and_em_climbs_from_them() {
        // three groups of unequal spread; starts of unequal shapes, the
        // kind that made the first constrained M-step lower the likelihood
        let xs: Vec<f64> = (0..300)
            .map(|i| {
                let u = ((i * 37 % 100) as f64 + 0.5) / 100.0;
                [1.0 + 0.2 * u, 3.0 + 1.5 * u, 8.0 + 0.5 * u][i % 3]
            })
            .collect();
        let cancel = std::sync::atomic::AtomicBool::new(false);
        for family in Family::FITTED {
            let mut ds = prepare(&xs, family).expect("valid data");
            ds.equal_scale = true;
            let mut p = Params::zeroed(3);
            p.alpha[..3].copy_from_slice(&[0.2, 0.5, 0.3]);
            p.mu[..3].copy_from_slice(&[1.1, 3.7, 8.2]);
            p.shape[..3].copy_from_slice(&[0.05, 1.0, 0.3]);
            let free = ds.rescale(&p);
            let start = ds.start(free);
            let s = &start.shape[..3];
            assert!(s[0] == s[1] && s[1] == s[2], "{family:?}: {s:?}");
            // the common shape is the weights' average of the pooled statistic
            let want: f64 =
                (0..3).map(|m| free.alpha[m] * with_family!(family, F => F::pooled_statistic(free.shape[m]))).sum();
            let got = with_family!(family, F => F::pooled_statistic(s[0]));
            assert!((got - want).abs() < 1e-12 * (1.0 + want.abs()), "{family:?}: {got} against {want}");
            let fit = crate::em::run_em(family, &ds, start, 200, 1e-10, false, &cancel);
            assert!(
                !matches!(fit.outcome, crate::outcome::Outcome::Failed(crate::outcome::Degenerate::LoglikFell)),
                "{family:?}: {:?}",
                fit.outcome
            );
        }
    }

    fn why(values: &[f64], family: Family) -> String {
        match prepare(values, family) {
            Err(e) => format!("dataset {e}"),
            Ok(_) => "ok".into(),
        }
    }

    #[test]
    fn rejects_bad_datasets_with_reasons() {
        let short = Invalid::too_short(5, 2).map(|e| e.to_string()).unwrap_or_default();
        assert!(short.contains("has 5 observations") && short.contains("at least 6"), "{short}");
        assert_eq!(Invalid::too_short(6, 2), None);
        let nan = why(&[1.0, f64::NAN, 3.0, f64::INFINITY], Family::Normal);
        assert!(nan.contains("2 NA, NaN or infinite values") && nan.contains("position 2"), "{nan}");
        let neg = why(&[1.0, 2.0, -3.0, 4.0], Family::InvGauss);
        assert!(neg.contains("1 value <= 0") && neg.contains("position 3"), "{neg}");
        // the Normal accepts non-positive data
        assert!(prepare(&[1.0, 2.0, -3.0, 4.0], Family::Normal).is_ok());
        let flat = why(&[2.5; 10], Family::Normal);
        assert_eq!(flat, "dataset has all 10 values equal (2.5); a mixture cannot be fitted");
        assert!(why(&[], Family::Normal).contains("has 0 observations"));
        // values too far apart: the smallest underflows once rescaled
        let spread = why(&[1e-300, 1e300, 1.0], Family::InvGauss);
        assert!(spread.starts_with("dataset has values from 1e-300 to 1e300, too many orders"), "{spread}");
    }

    #[test]
    fn powers_of_two_down_to_the_smallest_subnormal() {
        for e in -1074..=1023 {
            let p = 2f64.powf(e as f64);
            assert_eq!(pow2_at_most(p), p, "2^{e}");
            if e > -1074 {
                assert_eq!(pow2_at_most(p * 1.5), p, "1.5 * 2^{e}");
            }
        }
        assert_eq!(pow2_at_most(5e-324 * 5.0), 5e-324 * 4.0);
        assert_eq!(pow2_at_most(0.0), 1.0);
    }

    #[test]
    fn subnormal_data_are_too_small_not_too_spread() {
        // 1 to 5 times the smallest subnormal, 0.7 orders of magnitude apart:
        // rescaled they are exact (k/4), but their scale is subnormal
        let tiny: Vec<f64> = [1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0, 4.0, 5.0].iter().map(|k| 5e-324 * k).collect();
        for (family, what) in [(Family::InvGauss, "mean (1.5e-323)"), (Family::Normal, "standard deviation (5e-324)")] {
            let m = why(&tiny, family);
            assert!(
                m.starts_with(&format!("dataset has values from 5e-324 to 2.5e-323, whose {what} is below the smallest normal double (2.2e-308)")),
                "{m}"
            );
            assert!(!m.contains("orders of magnitude"), "{m}");
            assert!(matches!(prepare(&tiny, family), Err(Invalid::TooSmall { .. })));
            // what the message advises works
            let scaled: Vec<f64> = tiny.iter().map(|v| v * 1e300).collect();
            assert!(prepare(&scaled, family).is_ok(), "{family:?}");
        }
        // values of normal size spread by less than 2.2e-308: the Normal's sd is subnormal
        let close: Vec<f64> = (0..10).map(|i| 1e-300 * (1.0 + f64::EPSILON * i as f64)).collect();
        let m = why(&close, Family::Normal);
        assert!(m.contains("whose standard deviation (") && m.contains("below the smallest normal double"), "{m}");
        // data just above the smallest normal double fit
        let small: Vec<f64> = (1..=10).map(|i| 1e-307 * i as f64).collect();
        assert!(prepare(&small, Family::InvGauss).is_ok());
    }

    #[test]
    fn the_lognormal_is_prepared_as_the_normal_on_the_logarithms() {
        let values: Vec<f64> = (1..=60).map(|i| 0.05 + (i as f64 * 0.37).sin().abs() * 4.0 + 0.01 * i as f64).collect();
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        let ln = prepare(&values, Family::Lognormal).unwrap();
        let nm = prepare(&logs, Family::Normal).unwrap();
        assert_eq!(ln.x, nm.x);
        assert_eq!((ln.shift, ln.scale, ln.family), (nm.shift, nm.scale, Family::Lognormal));
        assert!((ln.h_sum - (nm.h_sum - logs.iter().sum::<f64>())).abs() < 1e-12);
        // the log-likelihood of the values, against libm's lognormal density
        let p = crate::information::tests::params(&[0.4, 0.6], &[-0.5, 0.9], &[0.6, 0.4]);
        let reference = family::log_likelihood(Family::Lognormal, &values, &p);
        let by_hand: f64 = values
            .iter()
            .map(|&x| {
                let d = |m: usize| {
                    let z = (x.ln() - p.mu[m]) / p.shape[m];
                    p.alpha[m] * (-0.5 * z * z).exp() / (x * p.shape[m] * (2.0 * std::f64::consts::PI).sqrt())
                };
                (d(0) + d(1)).ln()
            })
            .sum();
        assert!((reference - by_hand).abs() < 1e-10 * by_hand.abs());
        assert!((ln.log_likelihood(Family::Lognormal, &values, &p) - by_hand).abs() < 1e-10 * by_hand.abs());
        // values <= 0 are named, as for the inverse Gaussian
        let mut bad = values.clone();
        bad[4] = 0.0;
        let m = why(&bad, Family::Lognormal);
        assert!(m.contains("position 5") && m.contains("lognormal needs positive data"), "{m}");
        let m = why(&[2.0; 5], Family::Lognormal);
        assert!(m.contains("all 5 values equal (2)"), "{m}");
    }

    #[test]
    fn rescaling_round_trips() {
        let values = [0.5, 1.5, 2.0, 7.0, 3.25, 0.75];
        for family in [Family::InvGauss, Family::Normal] {
            let ds = prepare(&values, family).unwrap();
            for (xp, &x) in ds.x.iter().zip(&values) {
                assert!((xp * ds.scale + ds.shift - x).abs() < 1e-14);
            }
            let mean = ds.x.iter().sum::<f64>() / 6.0;
            let expected_mean = if family == Family::Normal { 0.0 } else { 1.0 };
            assert!((mean - expected_mean).abs() < 1e-15);
        }
    }

    #[test]
    fn any_scale_rescales_to_the_same_data() {
        // Multiplying by a power of two changes nothing but the scale: the
        // rescaled data are bit for bit the same, from 2^-990 to 2^990.
        let values: Vec<f64> = (1..=40).map(|i| 0.1 + (i as f64 * 0.77).sin().abs() * 3.0).collect();
        for family in [Family::InvGauss, Family::Normal] {
            let base = prepare(&values, family).unwrap();
            for e in [-990, -500, -100, 100, 500, 990] {
                let c = 2f64.powi(e);
                let scaled: Vec<f64> = values.iter().map(|v| v * c).collect();
                let ds = prepare(&scaled, family).unwrap();
                assert_eq!(ds.x, base.x, "{family:?} 2^{e}");
                assert_eq!(ds.spread, base.spread);
                assert_eq!(ds.scale, base.scale * c);
            }
            // and a scale that is not a power of two, near both ends of double precision
            for c in [1e-300, 3e-200, 7e153, 1e300] {
                let scaled: Vec<f64> = values.iter().map(|v| v * c).collect();
                let ds = prepare(&scaled, family).unwrap();
                let worst = ds.x.iter().zip(&base.x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(worst < 1e-14, "{family:?} {c}: {worst}");
            }
        }
    }

    #[test]
    fn the_log_likelihood_is_the_same_at_any_scale() {
        // ℓ(cθ; cx) = ℓ(θ; x) − N log c, computed in the original units or,
        // far from 1, on the rescaled data; checked against the textbook sum.
        let values: Vec<f64> = (1..=50).map(|i| 0.2 + (i as f64 * 0.37).sin().abs() * 2.0).collect();
        for family in [Family::InvGauss, Family::Normal] {
            let mut p = Params::zeroed(2);
            p.alpha[..2].copy_from_slice(&[0.4, 0.6]);
            p.mu[..2].copy_from_slice(&[0.6, 1.7]);
            p.shape[..2].copy_from_slice(&[if family == Family::Normal { 0.3 } else { 4.0 }, 0.5]);
            let reference = family::log_likelihood(family, &values, &p);
            for c in [1.0, 1e-200, 1e150, 1e250] {
                let scaled: Vec<f64> = values.iter().map(|v| v * c).collect();
                let ds = prepare(&scaled, family).unwrap();
                let mut pc = p;
                for m in 0..2 {
                    pc.mu[m] *= c;
                    pc.shape[m] *= c;
                }
                let ll = ds.log_likelihood(family, &scaled, &pc) + 50.0 * c.ln();
                assert!(
                    (ll - reference).abs() < 1e-9 * reference.abs().max(1.0),
                    "{family:?} {c}: {ll} vs {reference}"
                );
            }
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
