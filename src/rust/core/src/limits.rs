//! Every limit, guard and tolerance of the fit, defined once. The engines use
//! these values, the CUDA kernels receive them at compile time (gpu/prelude.rs)
//! and R asks the glue for what it shows users.

/// Components per mixture are held in fixed arrays of this size, so a start's
/// parameters and sufficient statistics live on the stack (and in registers
/// on the GPU).
pub const MAX_COMPONENTS: usize = 8;

/// How the CPU E-step groups its sums (estep.rs and its vector forms alike,
/// for the same bits): one logarithm per ESTEP_BLOCK observations, and
/// ESTEP_LANES independent accumulators per sum, observation j going to
/// lane j mod ESTEP_LANES, so that the additions vectorise in a fixed order.
pub const ESTEP_BLOCK: usize = 64;
pub const ESTEP_LANES: usize = 4;

/// Observations per component a dataset needs: a random start draws this
/// many distinct observations for each component.
pub const OBS_PER_COMPONENT: usize = 3;

/// A component carrying less weight than this many observations has collapsed.
pub const MIN_COMPONENT_OBS: f64 = 2.0;

/// A component whose standard deviation is below this fraction of the data's
/// has collapsed onto a point (the likelihood is unbounded there).
pub const MIN_RELATIVE_SD: f64 = 1e-6;

/// How far the log-likelihood may fall, relative to |ℓ| + N, before the fall
/// is more than rounding: an E-step's sum of N terms carries relative error
/// of order N·ε.
pub const FALL_TOLERANCE: f64 = 1e-10;

/// SQUAREM's step bound (control$accelerate): the longest extrapolation
/// step starts at this many EM steps' length and grows or shrinks by this
/// factor (Varadhan & Roland 2008's `mstep`, whose default it is).
pub const SQUAREM_STEP_GROWTH: f64 = 4.0;

/// Subset draws tried per component before a random start is given up.
pub const MAX_DRAWS: usize = 1000;

/// The number of free parameters of a K-component mixture: K means, K shapes
/// and K − 1 weights; with estimated degrees of freedom (`df`, Student's t)
/// K of them; with a noise component, its weight too.
pub const fn free_parameters(k: usize, noise: bool, df: bool) -> usize {
    3 * k - 1 + noise as usize + if df { k } else { 0 }
}

/// Student's t degrees of freedom ν stay in [DF_MIN, DF_MAX] (student.rs):
/// above DF_MAX the t is the Normal to within what data can tell (its
/// density differs by under 1% out to 3σ), and below DF_MIN a component
/// is a spike with tails, not a cluster.
pub const DF_MIN: f64 = 0.5;
pub const DF_MAX: f64 = 200.0;

/// Largest change of log ν in one multivariate t step (mv/em.rs's
/// df_step): a factor of 4.
pub const DF_STEP_MAX: f64 = 1.386_294_361_119_890_6;

/// Every random start's ν when the user does not fix it: tails clearly
/// heavier than the Normal's, from which ECM moves ν either way.
pub const DF_START: f64 = 10.0;

/// The noise component's weight in every start (noise.rs), the K
/// components' weights scaled to share the rest: small enough that the
/// components are where the start put them, large enough that EM finds a
/// few gross outliers from the first pass.
pub const NOISE_START: f64 = 0.05;

/// The spurious-solution screen's defaults (control$spurious.*; 0 turns a
/// rule off), chosen by the simulation in inst/bench/spurious-screen.R: a
/// component is spurious when its standard deviation is below
/// `SPURIOUS_RATIO` times the largest component's (Hathaway's constraint,
/// set far below any true ratio met: the 2015 demo's is 1/60), or when it is
/// small AND narrow: fewer than `SPURIOUS_COUNT` expected observations and
/// an sd below `SPURIOUS_COUNT_RATIO` times the largest.
pub const SPURIOUS_RATIO: f64 = 1e-3;
pub const SPURIOUS_COUNT: f64 = 10.0;
pub const SPURIOUS_COUNT_RATIO: f64 = 0.1;
/// And a spike on heaped values (issue 31): a component whose mean ±
/// `SPURIOUS_DISTINCT_SDS` standard deviations holds fewer than
/// `SPURIOUS_DISTINCT` distinct values of the data is not a component of a
/// continuous distribution, however many observations sit on those values
/// (heights recorded to the centimetre: 16.5 people on 165 cm in a component
/// of sd 0.04 cm passed the two rules above). At most
/// `SPURIOUS_DISTINCT_MAX` (the kernels keep that many values seen).
pub const SPURIOUS_DISTINCT: f64 = 3.0;
pub const SPURIOUS_DISTINCT_SDS: f64 = 2.0;
pub const SPURIOUS_DISTINCT_MAX: usize = 8;

/// Rounds of `random.inits` fresh starts a dataset gets when no start of
/// the rounds before finished admissibly (each collapsed, or was rejected by
/// the screen), the default of control$restarts; chosen by the measurement
/// in inst/bench/restarts.R (tied data such as iris$Sepal.Length as three
/// Normals: 20 starts leave about 1 dataset in 5 without a sound fit).
pub const RESTARTS: u32 = 4;

/// Starts whose final log-likelihood is within SAME_OPTIMUM · (1 + |ℓ|) of
/// the winner's count as having reached the same optimum (`starts_at_best`):
/// starts stopped by the convergence rule lie a few epsilons below it.
pub const SAME_OPTIMUM: f64 = 1e-6;

/// The bootstrap draws and refits its replicates in blocks of datasets
/// holding about this many replicate values (8 bytes each: 512 MiB), so a
/// call of any size holds one block at a time.
pub const BOOTSTRAP_BLOCK_VALUES: usize = 1 << 26;

/// Steps from a saddle point along the direction in which the likelihood
/// curves up most, each taken to both sides (saddle.rs), in units of about
/// one complete-data standard error per parameter: a short one that stays
/// near the saddle, and a long one for a ridge that is nearly flat.
pub const SADDLE_STEPS: [f64; 2] = [0.5, 4.0];

/// Below this fraction of its complete-data information left, given the
/// parameters before it and the information lost to not knowing the
/// components, a parameter counts as not identified. The information is a sum
/// of N terms that cancel (the missing information is subtracted), so its
/// entries carry rounding of order √N·ε to N·ε relative to the complete-data
/// information (N·ε = 2e-12 at N = 10,000); a remainder of 1e-10 is above
/// that for the datasets bulkem is for, and means standard errors at least
/// 10⁵ times those the data would give if the components were known.
pub const MIN_INFORMATION_LEFT: f64 = 1e-10;

/// A converged winner is polished by at most this many Newton steps on the
/// observed information (polish.rs); from where the stop rule leaves EM
/// they converge quadratically, in two or three.
pub const POLISH_STEPS: u32 = 8;

/// The same for a Student's t fit that estimates df: its log-likelihood is
/// far from quadratic in df, so from a loose stop (epsilon 1e-3) Newton
/// takes df up by about ten a step: more than eight steps from 28 to 92.6
/// on the first dataset of test-student.R's bound test.
pub const POLISH_STEPS_DF: u32 = 24;

/// A Newton step shorter than this in every parameter, measured in
/// complete-data standard errors, means the point is at the maximum: the
/// next would be of the order of its square, far below the 1e-6 relative
/// agreement the engines are held to, and far above the rounding of the
/// score (√N·ε relative).
pub const POLISH_SETTLED: f64 = 1e-8;

/// A refinement round (refine.rs) looks for regions of the sorted data
/// with more observations than the best fit expects: windows of this
/// fraction of the observations either side of each one (at least
/// REFINE_WINDOW_MIN, at most REFINE_WINDOW_MAX).
pub const REFINE_WINDOW_FRACTION: f64 = 0.01;
pub const REFINE_WINDOW_MIN: usize = 2;
pub const REFINE_WINDOW_MAX: usize = 50;

/// A region counts as explained less well than chance allows when its
/// count exceeds the fit's expected count by more than this many Poisson
/// standard deviations: (count − E) / √(E + 1) > REFINE_Z.
pub const REFINE_Z: f64 = 3.0;

/// Most regions a refinement round seeds (control$refine).
pub const MAX_REFINE: u32 = 8;

/// control$refine's default: regions seeded per dataset by the refinement
/// round (refine.rs); chosen by inst/bench/starts.R (results-starts.md).
pub const REFINE: u32 = 0;

/// ShortRuns' default: 0, every start run to convergence (the bootstrap's
/// refits, which start from the fit); with N > 0, N short runs per
/// dataset, the best random.inits of them continued (emEM, short.rs).
pub const SHORT_RUNS: u32 = 0;

/// control$short.runs' default, by K (2, 3, 4 or more components): short
/// runs per dataset, of partition draws, the best random.inits of them
/// continued; a dataset's partitions grow with K, and so does what it
/// takes to draw its small blocks. Chosen by inst/bench/starts.R
/// (results-starts.md): on both corpora as high a reach as 200 short runs
/// at every K, for the passes of 20 starts.
pub const SHORT_RUNS_BY_K: [u32; 3] = [30, 100, 200];

/// Most short runs per dataset (control$short.runs): far above what pays
/// (results-starts.md).
pub const MAX_SHORT_RUNS: u32 = 1_000_000;

/// control$short.iters' default: EM iterations of each short run (short.rs);
/// chosen by inst/bench/starts.R (results-starts.md: 5 iterations rank the
/// short runs poorly, 10 to 20 well, and 10 costs half of 20).
pub const SHORT_ITERS: u32 = 10;

/// The gamma's shape (special.rs's `gamma_shape`, in every M-step): Newton
/// steps at most, and the relative change at which they stop.
pub const GAMMA_SHAPE_STEPS: u32 = 50;
pub const GAMMA_SHAPE_TOLERANCE: f64 = 1e-14;

/// The truncated M-step (truncation.rs): Newton steps at most per
/// component and pass, and the central differences' step, relative to the
/// component's sd in μ and to 1 in log shape. 1e-4 leaves the differences'
/// error near 1e-8 relative (rounding ~1e-16/1e-8, truncation ~1e-8):
/// the standard errors it feeds are good to far better than 1e-3.
pub const TRUNCATED_STEPS: u32 = 50;
pub const TRUNCATED_DIFFERENCE: f64 = 1e-4;
/// A Newton step of the truncated M-step shorter than this (in the
/// component's sds, and in log shape) is its last: below the differences'
/// own error in the maximum's place, and what a pass near EM's fixed
/// point takes.
pub const TRUNCATED_SETTLED: f64 = 1e-9;

/// A truncated fit's bootstrap replicate (simulate.rs's
/// `draw_mixture_within`) is drawn from the untruncated mixture, values
/// outside the window dropped, at most this many draws per value asked for:
/// a window holding under 1/TRUNCATED_DRAWS_PER_VALUE of its mixture would
/// leave the replicate short (R refuses such fits before: 1%).
pub const TRUNCATED_DRAWS_PER_VALUE: usize = 1000;

/// Values far from the rest of their dataset (far.rs): beyond
/// FAR_IQRS_LIGHT interquartile ranges from the quartiles on the side where
/// the family's tail is light (a lognormal sample of ten million has none
/// beyond 4 on the logarithms: 6.1 sds), FAR_IQRS_HEAVY on the side where
/// it may be heavy (the ex-Gaussian's exponential tail; the logarithms of
/// gamma values of shape below 1; skewed data fitted by Normal
/// components), at most FAR_SHARE of the values (at least one), in
/// datasets of at least FAR_MIN_VALUES values.
pub const FAR_IQRS_LIGHT: f64 = 4.0;
pub const FAR_IQRS_HEAVY: f64 = 10.0;
pub const FAR_SHARE: f64 = 0.01;
pub const FAR_MIN_VALUES: usize = 10;
