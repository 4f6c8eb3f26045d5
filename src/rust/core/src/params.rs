//! The mixture itself: its family, its parameters, and the sufficient
//! statistics one E-step pass gathers for the next M-step.

use crate::limits::{DF_MAX, DF_MIN, MAX_COMPONENTS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    InvGauss,
    Normal,
    /// The lognormal: fitted as the Normal on the logarithms of the data
    /// (μ and σ are meanlog and sdlog), its log-likelihood the Normal's on
    /// log x less Σ log x.
    Lognormal,
    /// The gamma, mean μ and shape a (family/gamma.rs).
    Gamma,
    /// Student's t, location μ, scale σ and degrees of freedom ν
    /// (student.rs): the Normal's rescaling, start and screen, its own
    /// density, E-step and M-step.
    StudentT,
    /// The ex-Gaussian, a Normal (μ, σ) plus an exponential of mean τ
    /// (exgauss.rs): the Normal's rescaling, start and screen, its own
    /// density, E-step and M-step; τ is held in Params::df.
    ExGauss,
}

impl Family {
    pub const ALL: [Family; 6] =
        [Family::InvGauss, Family::Normal, Family::Lognormal, Family::Gamma, Family::StudentT, Family::ExGauss];

    /// One family per implementation of ComponentFamily (the lognormal is
    /// fitted by the Normal's): what tests of the fitting itself cover.
    pub const FITTED: [Family; 3] = [Family::InvGauss, Family::Normal, Family::Gamma];

    /// The name R uses for the family (bulkem()'s `family`).
    pub fn name(self) -> &'static str {
        match self {
            Family::InvGauss => "invgauss",
            Family::Normal => "normal",
            Family::Lognormal => "lognormal",
            Family::Gamma => "gamma",
            Family::StudentT => "t",
            Family::ExGauss => "exgauss",
        }
    }

    /// Whether the family has a third parameter per component, the degrees
    /// of freedom ν (Params::df).
    pub fn has_df(self) -> bool {
        self == Family::StudentT
    }

    /// Whether the family's components have a third parameter, held in
    /// Params::df: the t's ν or the ex-Gaussian's τ.
    pub fn has_third(self) -> bool {
        matches!(self, Family::StudentT | Family::ExGauss)
    }

    /// What R calls the third parameter (`has_third`).
    pub fn third_name(self) -> &'static str {
        match self {
            Family::ExGauss => "tau",
            _ => "df",
        }
    }

    /// Whether `v` is a usable third parameter: ν in [DF_MIN, DF_MAX], a
    /// positive finite τ.
    pub fn third_ok(self, v: f64) -> bool {
        match self {
            Family::ExGauss => v.is_finite() && v > 0.0,
            _ => (DF_MIN..=DF_MAX).contains(&v),
        }
    }

    /// Whether the family is fitted on the logarithms of the data (by the
    /// implementation `with_family!` names for it).
    pub fn on_log_scale(self) -> bool {
        self == Family::Lognormal
    }

    /// The code the CUDA kernels take for the implementation that fits the
    /// family (gpu/prelude.rs's FAM_*): the lognormal is the Normal's; the
    /// t and the ex-Gaussian have branches of their own in both engines'
    /// kernels.
    pub fn kernel_code(self) -> i32 {
        match self {
            Family::ExGauss => 4,
            Family::StudentT => 3,
            Family::Normal | Family::Lognormal => 0,
            Family::InvGauss => 1,
            Family::Gamma => 2,
        }
    }

    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// What R calls the shape parameter: λ of the inverse Gaussian, σ of the
    /// Normal and (sdlog) of the lognormal.
    pub fn shape_name(self) -> &'static str {
        match self {
            Family::InvGauss => "lambda",
            Family::Normal | Family::Lognormal | Family::StudentT | Family::ExGauss => "sigma",
            Family::Gamma => "shape",
        }
    }
}

/// How each start's initial parameters are made (`control$starts`,
/// starts.rs): every scheme is a pure function of (seed, data, start index,
/// K).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StartScheme {
    /// Each component the ML estimate of 3 distinct random observations,
    /// equal weights (the 2015 "subset" scheme).
    #[default]
    Random,
    /// Each component the ML estimate of a contiguous block of the sorted
    /// data, weights the blocks' shares.
    Partition,
    /// Even start indices partition starts, odd ones random starts.
    Mixed,
}

impl StartScheme {
    pub const ALL: [StartScheme; 3] = [StartScheme::Random, StartScheme::Partition, StartScheme::Mixed];

    /// The name R uses (`bulkem_control(starts = )`).
    pub fn name(self) -> &'static str {
        match self {
            StartScheme::Random => "random",
            StartScheme::Partition => "partition",
            StartScheme::Mixed => "mixed",
        }
    }

    pub fn from_name(name: &str) -> Option<StartScheme> {
        StartScheme::ALL.into_iter().find(|s| s.name() == name)
    }

    /// bulkem()'s scheme for `family` when the call names none. Partition
    /// starts (with the short runs of ShortRuns::for_k) reach the best
    /// known optimum most often on the inverse Gaussian and Normal corpora
    /// of inst/bench/starts.R. An ex-Gaussian component's exponential tail
    /// runs far past any contiguous block of the sorted data, so a block's
    /// estimate starts it with next to no tail: on real response times
    /// (test-exgauss.R) partition starts miss the maximum that starts half
    /// of them random reach.
    pub fn default_for(family: Family) -> StartScheme {
        match family {
            Family::ExGauss => StartScheme::Mixed,
            _ => StartScheme::Partition,
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
    /// The weight of the noise component (noise.rs), a uniform over the
    /// dataset's noise support; 0 for a mixture without one. The K
    /// weights `alpha` and `noise` sum to 1.
    pub noise: f64,
    /// The t's degrees of freedom ν per component (student.rs); 0 for the
    /// other families.
    pub df: [f64; MAX_COMPONENTS],
    /// Whether `df` stays where the start put it (the user's `df =`)
    /// rather than being estimated.
    pub df_fixed: bool,
}

impl Params {
    pub fn zeroed(k: usize) -> Params {
        Params {
            k,
            alpha: [0.0; MAX_COMPONENTS],
            mu: [0.0; MAX_COMPONENTS],
            shape: [0.0; MAX_COMPONENTS],
            noise: 0.0,
            df: [0.0; MAX_COMPONENTS],
            df_fixed: false,
        }
    }

    /// The mixture of the weights, means and shapes given, one per
    /// component; `None` unless all three have the same length from 1 to
    /// MAX_COMPONENTS.
    pub fn from_slices(alpha: &[f64], mu: &[f64], shape: &[f64]) -> Option<Params> {
        let k = alpha.len();
        if !(1..=MAX_COMPONENTS).contains(&k) || mu.len() != k || shape.len() != k {
            return None;
        }
        let mut p = Params::zeroed(k);
        p.alpha[..k].copy_from_slice(alpha);
        p.mu[..k].copy_from_slice(mu);
        p.shape[..k].copy_from_slice(shape);
        Some(p)
    }

    /// The same mixture with its components reordered by `order`.
    pub fn permuted(&self, order: &[usize]) -> Params {
        let mut p = Params { noise: self.noise, df_fixed: self.df_fixed, ..Params::zeroed(self.k) };
        for (to, &from) in order.iter().enumerate() {
            p.alpha[to] = self.alpha[from];
            p.mu[to] = self.mu[from];
            p.shape[to] = self.shape[from];
            p.df[to] = self.df[from];
        }
        p
    }

    /// Whether the mixture estimates a third parameter (Student's t without
    /// a fixed `df`, the ex-Gaussian's τ): it is then among its free
    /// parameters.
    pub fn estimates_df(&self) -> bool {
        self.df[0] > 0.0 && !self.df_fixed
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
/// S0 = Σr, S1 = Σr·x, S2 = Σr·g (g = 1/x or x², see `family`); and the
/// noise component's Σr (0 without one). For Student's t (student.rs), S1
/// and S2 carry the E-step's weights u (Σr·u·x, Σr·u·x²), `su` is Σr·u,
/// and `s_df`, `df` and `df_fixed` are what the ν step needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub ll: f64,
    pub s0: [f64; MAX_COMPONENTS],
    pub s1: [f64; MAX_COMPONENTS],
    pub s2: [f64; MAX_COMPONENTS],
    pub s0_noise: f64,
    /// Student's t: Σr·u.
    pub su: [f64; MAX_COMPONENTS],
    /// Student's t: Σr·(log u − u) + S0·(ψ((ν+1)/2) − log((ν+1)/2)), the
    /// ν step's statistic (student.rs).
    pub s_df: [f64; MAX_COMPONENTS],
    /// Student's t: the ν of the pass's parameters, and whether it is fixed.
    pub df: [f64; MAX_COMPONENTS],
    pub df_fixed: bool,
}

/// Which Stats field a row of sums fills (cuda-streams's sum kernel writes
/// one row of k sums per field, in a family's order; `Other`: a row the
/// family completes the Stats with itself).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SumRow {
    S0,
    S1,
    S2,
    Su,
    Other,
}

impl Stats {
    /// The Stats of a pass's sums laid out as cuda-streams's sum kernel
    /// writes them: the log-likelihood, then one row of k sums per entry of
    /// `order`, then a noise component's S0 (a last row, where there is
    /// one); 0 for what `sums` is too short to hold.
    pub(crate) fn from_sums(sums: &[f64], k: usize, order: &[SumRow]) -> Stats {
        let mut st = Stats::zero();
        st.ll = sums.first().copied().unwrap_or(f64::NAN);
        for (j, row) in order.iter().enumerate() {
            let field = match row {
                SumRow::S0 => &mut st.s0,
                SumRow::S1 => &mut st.s1,
                SumRow::S2 => &mut st.s2,
                SumRow::Su => &mut st.su,
                SumRow::Other => continue,
            };
            let v = Stats::sum_row(sums, k, j);
            field[..v.len()].copy_from_slice(v);
        }
        st.s0_noise = sums.get(1 + order.len() * k).copied().unwrap_or(0.0);
        st
    }

    /// Row `j` of k sums of such a layout (empty where `sums` is too short).
    pub(crate) fn sum_row(sums: &[f64], k: usize, j: usize) -> &[f64] {
        sums.get(1 + j * k..1 + (j + 1) * k).unwrap_or(&[])
    }

    pub fn zero() -> Stats {
        Stats {
            ll: 0.0,
            s0: [0.0; MAX_COMPONENTS],
            s1: [0.0; MAX_COMPONENTS],
            s2: [0.0; MAX_COMPONENTS],
            s0_noise: 0.0,
            su: [0.0; MAX_COMPONENTS],
            s_df: [0.0; MAX_COMPONENTS],
            df: [0.0; MAX_COMPONENTS],
            df_fixed: false,
        }
    }
}

/// The names of a K-component mixture's parameters as R shows them:
/// alpha1..alphaK, mu1..muK, then lambda1..lambdaK or sigma1..sigmaK (or
/// shape1..shapeK); with an estimated third parameter (`df`: Student's
/// t's ν, student.rs; the ex-Gaussian's τ) df1..dfK or tau1..tauK; with a noise component, its weight `noise` last. The free
/// parameters of the information and covariance matrices are these without
/// the weight that the others determine: alphaK, or with a noise component
/// the noise's (information.rs's Layout).
pub fn parameter_names(family: Family, k: usize, noise: bool, df: bool) -> Vec<String> {
    let stems: &[&str] = if df {
        &["alpha", "mu", family.shape_name(), family.third_name()]
    } else {
        &["alpha", "mu", family.shape_name()]
    };
    let mut names: Vec<String> = stems.iter().flat_map(|stem| (1..=k).map(move |m| format!("{stem}{m}"))).collect();
    if noise {
        names.push("noise".to_string());
    }
    names
}

/// The names of the free parameters, in the order of the information and
/// covariance matrices: `parameter_names` without the weight the others
/// determine (alphaK, or the noise's).
pub fn free_parameter_names(family: Family, k: usize, noise: bool, df: bool) -> Vec<String> {
    let all = parameter_names(family, k, noise, df);
    let dependent = if noise { all.len() - 1 } else { k.saturating_sub(1) };
    all.into_iter().enumerate().filter(|&(i, _)| i != dependent).map(|(_, name)| name).collect()
}

/// Standard errors of a fit, from the observed information at the fitted
/// parameters, in the data's own units.
#[derive(Clone, Debug, PartialEq)]
pub struct Covariance {
    /// The inverse of the observed information over the free parameters
    /// (`free_parameter_names`: α_1..α_{K−1} (..α_K with a noise
    /// component), μ_1..μ_K, shape_1..shape_K), column-major.
    /// Far from unit scale its μ and shape entries can underflow or overflow
    /// (they carry the square of the data's scale); `se` does not.
    pub vcov: Vec<f64>,
    /// The standard error of each parameter, in the order of
    /// `parameter_names` (the dependent weight's by the delta method, as
    /// 1 − the sum of the others).
    pub se: Vec<f64>,
}

/// Why a fit has no standard errors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Singular {
    /// Some entry of the observed information is NaN or infinite.
    NotFinite,
    /// The information about free parameter `at` (its index among the free
    /// parameters) is lost to the parameters before it: the matrix is
    /// singular, up to rounding.
    Collinear { at: usize },
    /// The information is clearly not positive definite, first at free
    /// parameter `at`: the parameters are not at a local maximum.
    Indefinite { at: usize },
}

impl Singular {
    /// Reads after "no standard errors: ". `family`, `k`, `noise` (a
    /// noise component) and `df` (an estimated ν) name the parameter.
    pub fn describe(self, family: Family, k: usize, noise: bool, df: bool) -> String {
        match self {
            Singular::Indefinite { .. } => {
                format!("{}: the fit is not at a local maximum", self.what(family, k, noise, df))
            }
            _ => self.what(family, k, noise, df),
        }
    }

    /// What is wrong with the information, without what it means for the
    /// fit (`describe` adds that): for a message that says it already.
    pub fn what(self, family: Family, k: usize, noise: bool, df: bool) -> String {
        let name = |at: usize| {
            let free = free_parameter_names(family, k, noise, df);
            free.get(at).cloned().unwrap_or_else(|| format!("parameter {}", at + 1))
        };
        match self {
            Singular::NotFinite => "the observed information is not finite".to_string(),
            Singular::Collinear { at } => format!("the observed information is singular (first at {})", name(at)),
            Singular::Indefinite { at } => {
                format!("the observed information is not positive definite (first at {})", name(at))
            }
        }
    }
}
