//! What a call asks for (`Job`, and the `Task` of one K that engines run) and
//! what it gets back (`Fit`).

use crate::error::Error;
use crate::family::{with_family, ComponentFamily};
use crate::fixed::Fixed;
use crate::limits::{
    free_parameters, DF_MAX, DF_MIN, MAX_COMPONENTS, MAX_REFINE, MAX_SHORT_RUNS, SHORT_ITERS, SHORT_RUNS,
    SHORT_RUNS_BY_K,
};
use crate::noise::Support;
use crate::outcome::{StartRecord, Status};
use crate::params::{Covariance, Family, Params, Singular, StartScheme};
use crate::screen::Screen;
use crate::truncation::{Censored, Window};
use crate::tuning::Tuning;

/// One call: the datasets (borrowed, e.g. straight from R's vectors), how
/// to fit them, and how to lay the work out. Nothing else steers a call:
/// the core reads no environment.
#[derive(Clone, Debug)]
pub struct Job<'a> {
    pub datasets: Vec<&'a [f64]>,
    pub settings: Settings,
    /// Initial parameters by dataset (the data's units), run as start 0 by
    /// the K they have, in place of that start's random draw; empty, or
    /// `None` for a dataset: every start random. The bootstrap refits each
    /// replicate from the fitted parameters this way.
    pub inits: Vec<Option<Params>>,
    /// How the engines lay the work out (never what they compute).
    pub tuning: Tuning,
    /// With Settings::noise, the noise component's support by dataset
    /// (the data's units); empty, or `None` for a dataset: its range.
    pub noise_supports: Vec<Option<Support>>,
    /// Starting values the user gives (`init`), by dataset, in the data's
    /// units: each runs as one more start of the K it has, beside the
    /// random starts, numbered after them (restarts.rs's given rounds);
    /// empty, or empty for a dataset: none.
    pub given_starts: Vec<Vec<Params>>,
    /// Each observation's weight (`weights`: frequency or case weights,
    /// at least 0), by dataset, as long as it; empty, or `None` for a
    /// dataset: every observation weighs 1.
    pub weights: Vec<Option<&'a [f64]>>,
    /// Weights, means and shapes held at given values (`fixed`, fixed.rs),
    /// by dataset, in the data's units, for the call's one K; empty, or
    /// `None` for a dataset: nothing fixed.
    pub fixed: Vec<Option<Fixed>>,
    /// The window each dataset was observed in (`truncation`,
    /// truncation.rs), in its own units; empty, or `None` for a dataset:
    /// not truncated.
    pub truncation: Vec<Option<Window>>,
    /// Each dataset's censored observations: windows they are known to lie
    /// in (right-censored at c: (c, ∞); left: (−∞, c); a histogram's bins),
    /// each with its count (a frequency weight), in the dataset's units;
    /// empty: none. `datasets` holds the exact values only (binned data:
    /// the bins' midpoints, each of weight 0, for the rescaling and the
    /// starts).
    pub censored: Vec<Vec<Censored>>,
}

/// How a call fits, as R's bulkem() and bulkem_control() give it: each
/// field is one checked argument or control setting (named in its doc).
/// A new option is a field here, its R builder and the code that uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `family`.
    pub family: Family,
    /// `num.components`: every K to fit, ascending and distinct; with
    /// several, each dataset keeps its fit of lowest `criterion`.
    pub components: Vec<usize>,
    /// `max.iters`.
    pub max_iters: u32,
    /// `epsilon`.
    pub epsilon: f64,
    /// `random.inits`.
    pub starts: u32,
    /// `seed`.
    pub seed: u64,
    /// `control$starts`: how each start's initial parameters are made
    /// (starts.rs).
    pub start_scheme: StartScheme,
    /// `control$precision == "mixed"`: cuda-batched only, fp32 exponentials
    /// until a fit looks converged, then fp64 to its end (other engines are
    /// always fp64).
    pub mixed_precision: bool,
    /// `control$accelerate`: every start's EM accelerated by squared
    /// extrapolation (SQUAREM, em.rs).
    pub accelerate: bool,
    /// `control$keep.starts`: every start's summary kept in the fits.
    pub keep_starts: bool,
    /// `control$spurious.*`: which finished starts are admissible.
    pub screen: Screen,
    /// `control$restarts`: rounds of `starts` more starts for a dataset
    /// whose starts all collapsed or were rejected by the screen.
    pub restarts: u32,
    /// `control$refine`: regions of the data a dataset's best fit explains
    /// least, each seeding K refinement starts from that fit (refine.rs);
    /// 0: none.
    pub refine: u32,
    /// `control$short.runs` and `control$short.iters`: emEM (short.rs).
    pub short_runs: ShortRuns,
    /// `control$devices`: the GPUs a CUDA engine runs on, by CUDA ordinal;
    /// empty: every GPU.
    pub devices: Vec<usize>,
    /// `control$standard.errors`: each fit's observed information (standard
    /// errors); the bootstrap's refits do not need it.
    pub standard_errors: bool,
    /// `noise`: every mixture with a noise component (noise.rs), a uniform
    /// over the dataset's support (Job::noise_supports).
    pub noise: bool,
    /// `df`: Student's t degrees of freedom fixed by the user, one for
    /// every component or one per component (with one K); empty: ν is
    /// estimated.
    pub df: Vec<f64>,
    /// `criterion`: what chooses K among several.
    pub criterion: Criterion,
    /// `equal.scale`: one shape shared by the components (the Normal's
    /// and the t's σ, the lognormal's sdlog, the inverse Gaussian's λ, the
    /// gamma's shape), K − 1 fewer free parameters.
    pub equal_scale: bool,
}

/// What chooses K among several (`criterion`): the lowest value wins.
/// ICL (Biernacki, Celeux & Govaert 2000, as mclust::icl computes it) is
/// BIC − 2 Σ log of each observation's largest posterior probability: BIC
/// penalised by how uncertain the classification is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Criterion {
    #[default]
    Bic,
    Icl,
    Aic,
}

impl Criterion {
    pub const ALL: [Criterion; 3] = [Criterion::Bic, Criterion::Icl, Criterion::Aic];

    /// Its name in R (`criterion`, a column of `by_k` and `glance()`).
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Bic => "bic",
            Criterion::Icl => "icl",
            Criterion::Aic => "aic",
        }
    }

    pub fn from_name(name: &str) -> Option<Criterion> {
        Criterion::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its name in a message.
    pub fn label(self) -> &'static str {
        match self {
            Criterion::Bic => "BIC",
            Criterion::Icl => "ICL",
            Criterion::Aic => "AIC",
        }
    }
}

/// emEM (short.rs): per dataset and round, `runs` short runs of `iters`
/// EM iterations each, of which the best `random.inits` are continued to
/// convergence; `runs` 0: every start runs to convergence; `None`: as
/// many as K needs (SHORT_RUNS_BY_K, bulkem()'s default). The default
/// value here is 0, for the bootstrap's refits and the core's own callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortRuns {
    pub runs: Option<u32>,
    pub iters: u32,
}

impl Default for ShortRuns {
    fn default() -> ShortRuns {
        ShortRuns { runs: Some(SHORT_RUNS), iters: SHORT_ITERS }
    }
}

impl ShortRuns {
    /// The short runs of a dataset fitted with `k` components and `starts`
    /// continued: none for one component (every start ends at the same
    /// fit); by K, none where K's count would not exceed the starts (each
    /// short run would be continued).
    pub fn for_k(&self, k: usize, starts: u32) -> u32 {
        if k < 2 {
            return 0;
        }
        match self.runs {
            Some(runs) => runs,
            None => {
                let by_k = SHORT_RUNS_BY_K[(k - 2).min(SHORT_RUNS_BY_K.len() - 1)];
                if by_k > starts {
                    by_k
                } else {
                    0
                }
            }
        }
    }
}

/// The settings of one K of a job: what an engine runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Task {
    pub family: Family,
    pub k: usize,
    pub starts: u32,
    /// Index of the first start: 0, or where a restart round begins. Start
    /// i is always the same draw (starts.rs), whichever round runs it.
    pub first_start: u32,
    pub max_iters: u32,
    pub epsilon: f64,
    pub seed: u64,
    /// Settings::start_scheme: what starts::initial_params draws.
    pub start_scheme: StartScheme,
    pub mixed_precision: bool,
    pub accelerate: bool,
    pub keep_starts: bool,
    pub screen: Screen,
    /// Settings::noise: every dataset has a noise component (Prepared::noise).
    pub noise: bool,
    /// The call has weights (Job::weights): the GPU kernels weigh every
    /// observation of every dataset (by 1 where a dataset has none), the
    /// same kernel whichever datasets a round or chunk holds.
    pub weighted: bool,
    /// Settings::equal_scale: one shape shared by the components.
    pub equal_scale: bool,
}

impl Job<'_> {
    /// The core's own check of the settings; R validates first, with the
    /// same argument names.
    pub fn validate(&self) -> Result<(), Error> {
        self.settings.validate()?;
        if !self.inits.is_empty() && self.inits.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "inits",
                message: format!("{} initial parameters for {} datasets", self.inits.len(), self.datasets.len()),
            });
        }
        if !self.given_starts.is_empty() && self.given_starts.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "init",
                message: format!(
                    "starting values for {} datasets, not {}",
                    self.given_starts.len(),
                    self.datasets.len()
                ),
            });
        }
        if let Some(p) = self.given_starts.iter().flatten().find(|p| !given_start_ok(p)) {
            return Err(Error::Argument {
                arg: "init",
                message: format!(
                    "a start of {} components must have 1 to {MAX_COMPONENTS} components, finite means, positive \
                     shapes and weights that sum to 1",
                    p.k
                ),
            });
        }
        let most = self.given_starts.iter().map(Vec::len).max().unwrap_or(0) as u64;
        if self.settings.start_count_before_given().saturating_add(most) > u64::from(u32::MAX) {
            return Err(Error::Argument { arg: "init", message: "too many starts: they must stay below 2^32".into() });
        }
        if !self.weights.is_empty() && self.weights.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "weights",
                message: format!("weights for {} datasets, not {}", self.weights.len(), self.datasets.len()),
            });
        }
        if !self.fixed.is_empty() && self.fixed.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "fixed",
                message: format!("values for {} datasets, not {}", self.fixed.len(), self.datasets.len()),
            });
        }
        if let Some(message) = self.fixed.iter().flatten().find_map(|f| self.settings.fixed_problem(f)) {
            return Err(Error::Argument { arg: "fixed", message });
        }
        if !self.truncation.is_empty() && self.truncation.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "truncation",
                message: format!("windows for {} datasets, not {}", self.truncation.len(), self.datasets.len()),
            });
        }
        if self.truncation.iter().any(Option::is_some) {
            if let Some(message) = self.truncation_problem("truncated data") {
                return Err(Error::Argument { arg: "truncation", message });
            }
        }
        if !self.censored.is_empty() && self.censored.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "datasets",
                message: format!("censored values for {} datasets, not {}", self.censored.len(), self.datasets.len()),
            });
        }
        if self.censored.iter().any(|c| !c.is_empty()) {
            if let Some(message) = self.truncation_problem("censored data") {
                return Err(Error::Argument { arg: "datasets", message });
            }
            if let Some(g) = self.censored.iter().flatten().find(|g| !(g.window.lo < g.window.hi)) {
                return Err(Error::Argument {
                    arg: "datasets",
                    message: format!(
                        "a censored value's window must have lower < upper, not ({}, {})",
                        g.window.lo, g.window.hi
                    ),
                });
            }
            if let Some(g) = self.censored.iter().flatten().find(|g| !(g.count.is_finite() && g.count >= 0.0)) {
                return Err(Error::Argument {
                    arg: "datasets",
                    message: format!("a censored window's count must be a finite number >= 0, not {}", g.count),
                });
            }
        }
        if !self.noise_supports.is_empty() && self.noise_supports.len() != self.datasets.len() {
            return Err(Error::Argument {
                arg: "noise.support",
                message: format!("{} supports for {} datasets", self.noise_supports.len(), self.datasets.len()),
            });
        }
        Ok(())
    }

    /// What is wrong with the job's truncation windows, if anything: each
    /// window lo < hi, not both open, the upper above 0 for a family of
    /// positive data; not yet with what the renormalised M-step does not
    /// handle (Student's t, the ex-Gaussian), for
    /// `data` (what the message calls the data).
    fn truncation_problem(&self, data: &str) -> Option<String> {
        let s = &self.settings;
        let unsupported = if s.family.has_df() {
            Some("Student's t components (family = \"t\")")
        } else if s.family == Family::ExGauss {
            Some("ex-Gaussian components (family = \"exgauss\")")
        } else {
            None
        };
        if let Some(what) = unsupported {
            return Some(format!("{data} cannot be fitted with {what} yet"));
        }
        let positive = s.family.on_log_scale() || with_family!(s.family, F => F::POSITIVE);
        self.truncation.iter().flatten().find_map(|w| {
            if !(w.lo < w.hi) || w.lo.is_nan() || w.hi.is_nan() {
                Some(format!("each window must have lower < upper (not [{}, {}])", w.lo, w.hi))
            } else if w.lo == f64::NEG_INFINITY && w.hi == f64::INFINITY {
                Some("a window open on both sides truncates nothing: leave truncation out".to_string())
            } else if positive && !(w.hi > 0.0) {
                Some(format!("the {} family's data are positive: an upper bound must be above 0", s.family.name()))
            } else {
                None
            }
        })
    }

    /// The task of fitting `k` components (Settings::task), weighted if
    /// the job has weights.
    pub fn task(&self, k: usize) -> Task {
        Task { weighted: self.weights.iter().any(Option::is_some), ..self.settings.task(k) }
    }
}

/// A given start's parameters make a mixture: 1 to MAX_COMPONENTS
/// components, finite means, positive finite shapes, positive weights
/// that (with the noise's) sum to 1, and ν or τ positive or 0 (not given).
fn given_start_ok(p: &Params) -> bool {
    let k = p.k;
    let finite_positive = |v: &[f64]| v.iter().all(|&x| x.is_finite() && x > 0.0);
    (1..=MAX_COMPONENTS).contains(&k)
        && p.mu[..k].iter().all(|m| m.is_finite())
        && finite_positive(&p.shape[..k])
        && finite_positive(&p.alpha[..k])
        && p.df[..k].iter().all(|&v| v == 0.0 || (v.is_finite() && v > 0.0))
        && (0.0..1.0).contains(&p.noise)
        && (p.alpha[..k].iter().sum::<f64>() + p.noise - 1.0).abs() < 1e-6
}

impl Settings {
    /// What is wrong with fixed values `f` for these settings, if anything:
    /// they are for the one K fitted; weights in (0, 1) that leave the free
    /// ones (and the noise's) some weight, or with every weight fixed and no
    /// noise sum to 1; finite means, positive shapes; not a shape with
    /// `equal.scale`.
    pub(crate) fn fixed_problem(&self, f: &Fixed) -> Option<String> {
        let k = f.k();
        if self.components != [k] {
            return Some(format!("holds values for {k} components: num.components must be {k} alone"));
        }
        let p = &f.0;
        let given = |v: &[f64]| v.iter().copied().filter(|v| !v.is_nan()).collect::<Vec<f64>>();
        let (alpha, mu, shape) = (given(&p.alpha[..k]), given(&p.mu[..k]), given(&p.shape[..k]));
        if !alpha.iter().all(|&a| a > 0.0 && a < 1.0) {
            return Some("weights must lie in (0, 1)".into());
        }
        if !mu.iter().all(|&m| m.is_finite() && with_family!(self.family, F => F::mean_ok(m))) {
            return Some(format!(
                "means must be finite{}",
                if self.family.on_log_scale() { "" } else { " and usable" }
            ));
        }
        if !shape.iter().all(|&s| s.is_finite() && s > 0.0) {
            return Some("shapes must be positive and finite".into());
        }
        let sum: f64 = alpha.iter().sum();
        let all = alpha.len() == k;
        if (all && !self.noise && (sum - 1.0).abs() > 1e-6) || ((!all || self.noise) && sum >= 1.0) {
            return Some("the fixed weights must leave the others some weight (or, all fixed, sum to 1)".into());
        }
        if self.equal_scale && !shape.is_empty() {
            return Some("shapes cannot be fixed with equal.scale = TRUE (one shape is shared)".into());
        }
        None
    }

    /// Start indices the random starts, every restart round and the
    /// refinement round may take: given starts are numbered from here.
    pub fn start_count_before_given(&self) -> u64 {
        let max_k = self.components.iter().copied().max().unwrap_or(1) as u64;
        u64::from(self.starts) * (u64::from(self.restarts) + 1) + u64::from(self.refine) * max_k
    }

    /// The core's own check; R validates first, with the same argument names.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |arg, message: String| Err(Error::Argument { arg, message });
        if self.components.is_empty()
            || self.components.iter().any(|&k| !(1..=MAX_COMPONENTS).contains(&k))
            || self.components.windows(2).any(|w| w[0] >= w[1])
        {
            return bad(
                "num.components",
                format!("must be distinct whole numbers from 1 to {MAX_COMPONENTS}, ascending"),
            );
        }
        if self.max_iters < 1 {
            return bad("max.iters", "must be at least 1".into());
        }
        if self.starts < 1 {
            return bad("random.inits", "must be at least 1".into());
        }
        if u64::from(self.starts) * (u64::from(self.restarts) + 1) > u64::from(u32::MAX) {
            return bad("control$restarts", "times random.inits must stay below 2^32 starts".into());
        }
        if self.refine > MAX_REFINE {
            return bad("control$refine", format!("must be a whole number from 0 to {MAX_REFINE}"));
        }
        let given = self.short_runs.runs.unwrap_or(0);
        if given > MAX_SHORT_RUNS {
            return bad("control$short.runs", format!("must be a whole number from 0 to {MAX_SHORT_RUNS}"));
        }
        if given > 0 && given < self.starts {
            return bad("control$short.runs", "must be 0 or at least random.inits (the short runs continued)".into());
        }
        if self.short_runs.iters < 1 {
            return bad("control$short.iters", "must be at least 1".into());
        }
        if self.start_count_before_given() > u64::from(u32::MAX) {
            return bad("control$refine", "with the restarts' starts must stay below 2^32 starts".into());
        }
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return bad("epsilon", "must be a positive finite number".into());
        }
        if !self.df.is_empty() {
            let per_component = self.components.len() == 1 && self.df.len() == self.components[0];
            if !self.family.has_df() {
                return bad("df", "applies to family = \"t\" only".into());
            }
            if !(self.df.len() == 1 || per_component) {
                return bad("df", "must be one value, or one per component with one number of components".into());
            }
            if !self.df.iter().all(|&v| crate::student::df_ok(v)) {
                return bad("df", format!("must lie in [{DF_MIN}, {DF_MAX}]"));
            }
        }
        // start_scheme (control$starts) is an enum: every value is valid; the
        // glue turns an unknown name into an internal error (R checked it).
        if let Some((arg, message)) = self.screen.check() {
            return bad(arg, message.into());
        }
        Ok(())
    }

    /// The task of fitting `k` components. K = 1 has a closed form, which EM
    /// reaches from any start in one update, so it runs one start only.
    pub fn task(&self, k: usize) -> Task {
        Task {
            family: self.family,
            k,
            starts: if k == 1 { 1 } else { self.starts },
            first_start: 0,
            max_iters: self.max_iters,
            epsilon: self.epsilon,
            seed: self.seed,
            start_scheme: self.start_scheme,
            mixed_precision: self.mixed_precision,
            accelerate: self.accelerate,
            keep_starts: self.keep_starts,
            screen: self.screen,
            noise: self.noise,
            weighted: false,
            equal_scale: self.equal_scale,
        }
    }
}

/// The best fit of one dataset, in the data's own units, components in
/// ascending μ. `params`, `init`, `best_start` are `None` unless a start
/// succeeded.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    pub n: usize,
    /// The n of BIC: Σ w with weights, else `n`.
    pub nobs: f64,
    /// One shape shared by the components (Settings::equal_scale).
    pub equal_scale: bool,
    /// The values fixed (Job::fixed), in the data's units and the
    /// fit's component order.
    pub fixed: Option<Fixed>,
    /// Components fitted.
    pub k: usize,
    pub status: Status,
    pub message: String,
    pub params: Option<Params>,
    /// The winning start's initial values, in the same component order as
    /// `params` (component j of `init` is where component j of `params` began).
    pub init: Option<Params>,
    /// Log-likelihood of `params` on the original data (NaN without a fit).
    pub loglik: f64,
    /// Σ over the observations of the log of their largest posterior
    /// probability (the noise's included): ICL's classification term (NaN
    /// without a fit).
    pub log_map: f64,
    /// EM updates applied by the winning start.
    pub iterations: u32,
    /// Zero-based index of the winning start.
    pub best_start: Option<u32>,
    /// Starts run: random.inits, times the rounds it took (control$restarts).
    pub starts_run: u32,
    /// Starts that ended without degenerating.
    pub starts_ok: u32,
    /// Admissible starts whose log-likelihood reached the winner's (within
    /// SAME_OPTIMUM); with a spurious winner, the spurious starts that did.
    pub starts_at_best: u32,
    /// The returned fit fails the spurious-solution screen (no start passed it).
    pub spurious: bool,
    /// Finished starts the screen rejected.
    pub spurious_starts: u32,
    /// The highest log-likelihood of a rejected start, where it beat the
    /// returned fit's.
    pub loglik_spurious: Option<f64>,
    /// Every start, by start index, in the data's units, when kept.
    pub starts: Option<Vec<StartRecord>>,
    /// With several Ks: every K's summary, ascending K (empty with one K).
    pub by_k: Vec<KSummary>,
    /// With several Ks: the fits of the Ks not chosen, ascending K (empty
    /// with one K), so that a user can look at any K's fit.
    pub other_k: Vec<Fit>,
    /// Standard errors from the observed information at `params`, or why
    /// there are none; `None` without `params` or when the job asked for none.
    pub covariance: Option<Result<Covariance, Singular>>,
    /// The noise component's support, when the fit has one (its weight is
    /// `params.noise`).
    pub noise_support: Option<Support>,
    /// The window the data were observed in (Job::truncation), in the
    /// data's units, when the fit's likelihood is renormalised over one.
    pub truncation: Option<Window>,
    /// Censored observations (Job::censored, their counts summed) beside
    /// the `n` exact values; `nobs` counts both.
    pub censored: f64,
}

/// One K's result for a dataset, for choosing among several Ks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KSummary {
    pub k: usize,
    pub loglik: f64,
    pub aic: f64,
    pub bic: f64,
    pub icl: f64,
    pub status: Status,
}

impl KSummary {
    /// Its value of `criterion` (NaN without a fit).
    pub fn value(&self, criterion: Criterion) -> f64 {
        match criterion {
            Criterion::Bic => self.bic,
            Criterion::Icl => self.icl,
            Criterion::Aic => self.aic,
        }
    }
}

impl Fit {
    /// (AIC, BIC) with `free_parameters` parameters (a noise component's
    /// weight among them); NaN without a fit.
    pub fn information_criteria(&self) -> (f64, f64) {
        let Some(df) = self.free_parameters() else { return (f64::NAN, f64::NAN) };
        let df = df as f64;
        (-2.0 * self.loglik + 2.0 * df, -2.0 * self.loglik + df * self.nobs.ln())
    }

    /// The free parameters of the fit (AIC's and BIC's count): K − 1
    /// weights, K means, K shapes (one with `equal_scale`), a noise
    /// component's weight and estimated ν, less those `fixed`
    /// (Fixed::removed); `None` without a fit.
    pub fn free_parameters(&self) -> Option<usize> {
        let p = self.params.as_ref()?;
        let noise = self.noise_support.is_some();
        let shared = if self.equal_scale { p.k - 1 } else { 0 };
        let fixed = self.fixed.map_or(0, |f| f.removed(noise));
        Some(free_parameters(p.k, noise, p.estimates_df()) - shared - fixed)
    }

    pub fn without_params(n: usize, k: usize, status: Status, message: String, starts_run: u32, starts_ok: u32) -> Fit {
        Fit {
            n,
            nobs: n as f64,
            equal_scale: false,
            fixed: None,
            k,
            status,
            message,
            params: None,
            init: None,
            loglik: f64::NAN,
            log_map: f64::NAN,
            iterations: 0,
            best_start: None,
            starts_run,
            starts_ok,
            starts_at_best: 0,
            spurious: false,
            spurious_starts: 0,
            loglik_spurious: None,
            starts: None,
            by_k: Vec::new(),
            other_k: Vec::new(),
            covariance: None,
            noise_support: None,
            truncation: None,
            censored: 0.0,
        }
    }

    /// The fit converged, but not to a maximum: its observed information is
    /// clearly not positive definite (typically two components merged into
    /// one, a saddle point EM creeps away from too slowly to notice).
    pub fn at_saddle(&self) -> bool {
        self.status == Status::Converged && matches!(self.covariance, Some(Err(Singular::Indefinite { .. })))
    }

    /// ICL: BIC − 2 Σ log of each observation's largest posterior
    /// probability (NaN without a fit).
    pub fn icl(&self) -> f64 {
        self.information_criteria().1 - 2.0 * self.log_map
    }

    pub fn summary(&self) -> KSummary {
        let (aic, bic) = self.information_criteria();
        KSummary { k: self.k, loglik: self.loglik, aic, bic, icl: self.icl(), status: self.status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_by_k_grow_with_k_and_only_where_they_choose() {
        let by_k = ShortRuns { runs: None, iters: SHORT_ITERS };
        // one component: every start ends at the same fit
        assert_eq!(by_k.for_k(1, 20), 0);
        assert_eq!(by_k.for_k(2, 20), SHORT_RUNS_BY_K[0]);
        assert_eq!(by_k.for_k(3, 20), SHORT_RUNS_BY_K[1]);
        for k in 4..=MAX_COMPONENTS {
            assert_eq!(by_k.for_k(k, 20), SHORT_RUNS_BY_K[2]);
        }
        assert!(SHORT_RUNS_BY_K.windows(2).all(|w| w[0] < w[1]));
        // as many starts continued as K's short runs: each would be continued
        assert_eq!(by_k.for_k(2, SHORT_RUNS_BY_K[0]), 0);
        assert_eq!(by_k.for_k(2, SHORT_RUNS_BY_K[0] - 1), SHORT_RUNS_BY_K[0]);
        // a given count holds for every K > 1; the default is none
        let given = ShortRuns { runs: Some(50), iters: SHORT_ITERS };
        assert_eq!((given.for_k(1, 20), given.for_k(2, 20), given.for_k(6, 20)), (0, 50, 50));
        assert_eq!(ShortRuns::default().for_k(3, 20), 0);
    }
}
