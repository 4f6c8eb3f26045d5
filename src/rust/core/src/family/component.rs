//! What a component family is: the trait `ComponentFamily`, which holds
//! all of a family's mathematics, implemented once per family
//! (invgauss.rs, normal.rs, gamma.rs). The CPU engine and the host-side finishing use
//! only the trait: directly where generic (the E-step's loops, the
//! information's pass, the M-step, prepare, posterior, the bootstrap's
//! draws, all monomorphised per family), or through the functions of
//! family/mod.rs that take the runtime tag `Family`.
//!
//! Every family shares one shape: log p(x) = c − k·q(x, μ) + h(x), where
//!   inverse Gaussian: c = ½ log λ − ½ log 2π, k = λ / (2μ²), q = (x − μ)² / x,
//!                     h = −3/2 log x;
//!   Normal:           c = −log σ − ½ log 2π,   k = 1 / (2σ²),  q = (x − μ)²,
//!                     h = 0;
//!   gamma:            c = a log a − log Γ(a) − a log μ, k = a, q = x/μ − log x,
//!                     h = −log x (g = log x).
//! h does not depend on the parameters, so the E-step sums it once per dataset.
//! Each dataset carries one auxiliary value per observation, `g`: 1/x for the
//! inverse Gaussian (so q needs no division) and x² for the Normal; the M-step
//! needs Σ r·g for both. The E-step's loops (CPU and CUDA) compute
//! l_m = c_m − k_m·q(x, g, μ_m) and accumulate S0 = Σr, S1 = Σr·x,
//! S2 = Σr·g (params.rs's Stats): a family of that form is one more
//! implementation. Student's t is not of that form (its log-density is not
//! linear in q, and it has a third parameter): student.rs holds it, with
//! its own loops and sums, and borrows the Normal's rescaling and starts;
//! so does the ex-Gaussian (exgauss.rs: log Φ per observation and
//! component, τ its third parameter; Family::has_third).
//!
//! Adding a family: a variant of `Family` with its R names (params.rs), an
//! implementation of this trait in family/<name>.rs, its arm in
//! `with_family!` (family/mod.rs), and its CUDA counterpart (below).
//!
//! CUDA counterparts. The kernels (kernels/em_common.cuh, em_streams.cu,
//! em_batched.cu) are written over an int `F`, the family's Family::kernel_code (em_batched.cu's templates,
//! instantiated by EM_BATCHED(K, F, ...) from gpu/kernels.rs's
//! Kernels::batched) or `invgauss` (em_obs_terms and responsibilities,
//! set by engine/cuda_streams.rs); a new family adds its case there.
//! Their constants (LN_2PI, MIN_RELATIVE_SD, MIN_COMPONENT_OBS, ...) come
//! from the prelude gpu/prelude.rs generates from the Rust values.
//! - `q`: em_common.cuh `q_invgauss`, `q_normal`, `q_gamma` (used by em_batched.cu
//!   `accumulate` and em_common.cuh `responsibilities`); in fp32, inline in
//!   em_batched.cu `accumulate32` (per family code F, as `q`).
//! - `constants`, `terms`: em_batched.cu `terms<K, F>` (called by
//!   `State::retermed`; LN_2PI from the prelude); cuda-streams uploads the
//!   host's `terms` (c, k, μ) to em_obs_terms.
//! - the sums S0, S1, S2: em_batched.cu `add_observation`, em_streams.cu
//!   `em_obs_terms` + `em_fused_sum`.
//! - `component_m_step`: em_batched.cu `m_step<K, F>` (its `new_shape`; the
//!   gamma's `gamma_shape`, with special.rs's functions mirrored there);
//!   cuda-streams runs the host's M-step (mstep.rs, through em.rs).
//! - `mean_ok`, `sd` in the collapse guard: em_batched.cu
//!   `check_component<F>`.
//! - `sd` in the screen: em_batched.cu `spurious<K, F>`.
//! - Σ_i r q(x_i, μ) expressed in S0, S1, S2 (no Rust counterpart: mixed
//!   precision's switch to fp64): em_batched.cu `q_value<K, F>`.
//! - host only, no device code: `aux` (the device reads Prepared::g, packed
//!   by engine/cuda_batched/pack.rs), `log_h` (Prepared::h_sum is added to
//!   the log-likelihood: em_batched.cu's `ds_hsum`, em.rs on the host),
//!   `ml_estimate` (starts are drawn on the host), the rescaling,
//!   `log_density`, the information's derivatives, `draw` and
//!   `split_means`, the vector forms `q_avx2`/`q_avx512`, and truncation's
//!   `q_sum`, `ln_cdfs` and `cdf_derivatives` (truncation.rs: cuda-batched
//!   does not fit truncated data, cuda-streams runs its M-step on the host).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256d, __m512d};

use rand::RngExt;
use rand_pcg::Pcg64;

use crate::limits::MAX_COMPONENTS;
use crate::params::{Family, Params};

/// log(2π)
pub const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// `ComponentFamily::cdf_derivatives` at one x: (log F, log(1 − F)) as
/// `ln_cdfs` gives them, and F's derivatives in (μ, s = log shape) as
/// e^scale times `grad` (∂μ, ∂s) and `hess` (∂μμ, ∂μs, ∂ss): the common
/// factor (a density value) kept as its log, so that windows far in a tail,
/// whose every term underflows, still give their ratios to P.
#[derive(Clone, Copy, Debug)]
pub struct CdfDerivatives {
    pub ln_cdfs: (f64, f64),
    pub scale: f64,
    pub grad: [f64; 2],
    pub hess: [f64; 3],
}

impl CdfDerivatives {
    /// Where F is the same whatever (μ, shape): an open bound, or below an
    /// inverse Gaussian's support.
    pub fn constant(ln_cdfs: (f64, f64)) -> Self {
        CdfDerivatives { ln_cdfs, scale: f64::NEG_INFINITY, grad: [0.0; 2], hess: [0.0; 3] }
    }
}

/// One component family's mathematics. Implemented by a unit type per
/// family; nothing here takes `self`, so generic code is monomorphised per
/// family (as the E-step's loops must be) and needs no object.
pub trait ComponentFamily {
    /// The runtime tag of this family.
    const FAMILY: Family;

    /// Whether the family lives on x > 0 only (its data must be positive).
    const POSITIVE: bool;

    /// Whether the shape parameter scales with the data (a scale: λ, σ),
    /// or not (the gamma's shape): the Jacobian of the rescaling
    /// (information.rs's covariance) and `unscale`.
    const SHAPE_IS_SCALE: bool = true;

    /// Whether `x` is in the family's support.
    #[inline(always)]
    fn in_support(x: f64) -> bool {
        x.is_finite() && (!Self::POSITIVE || x > 0.0)
    }

    /// The per-observation value `g` the E-step reads beside x (computed
    /// once per dataset, Prepared::g) and accumulates: S2 = Σ r·g.
    fn aux(x: f64) -> f64;

    /// The parameter-free part of the log-density, h(x): the E-step leaves
    /// it out, and it is summed once per dataset (Prepared::h_sum).
    fn log_h(x: f64) -> f64;

    /// One component's constants (c, k) of log p(x) = c − k·q(x, μ) + h(x),
    /// which the E-step computes once per pass (`terms`).
    fn constants(mu: f64, shape: f64) -> (f64, f64);

    /// q(x, μ) given x and its `aux` value g. The E-step's inner loops call
    /// it per observation and component; keep it a few flops, inlined.
    fn q(x: f64, g: f64, mu: f64) -> f64;

    /// `q` of four observations in AVX2 vectors (estep_avx2.rs), the same
    /// operations in the same order, unfused, so the bits are q's.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    unsafe fn q_avx2(x: __m256d, g: __m256d, mu: __m256d) -> __m256d;

    /// `q` of eight observations in AVX-512 vectors (estep_avx512.rs), as
    /// `q_avx2`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[cfg(target_arch = "x86_64")]
    unsafe fn q_avx512(x: __m512d, g: __m512d, mu: __m512d) -> __m512d;

    /// What `q` takes in μ's place: μ itself, or what spares q a division
    /// per observation (the gamma's 1/μ).
    #[inline(always)]
    fn q_mean(mu: f64) -> f64 {
        mu
    }

    /// The E-step's per-component constants of the mixture `p`: c_m (with
    /// log α_m) and k_m of `constants`, and `q_mean` of μ_m.
    fn terms(p: &Params) -> Terms {
        let mut t = Terms { c: [0.0; MAX_COMPONENTS], k: [0.0; MAX_COMPONENTS], mu: p.mu };
        for m in 0..p.k {
            let (c, k) = Self::constants(p.mu[m], p.shape[m]);
            t.c[m] = p.alpha[m].ln() + c;
            t.k[m] = k;
            t.mu[m] = Self::q_mean(p.mu[m]);
        }
        t
    }

    /// log p(x | μ, shape) of one component, straight from the formula: the
    /// reference the fast E-step is tested against, and what predict()'s
    /// densities are computed with.
    fn log_density(x: f64, mu: f64, shape: f64) -> f64;

    /// Σ_i r_i q(x_i, μ) from the sums S0 = Σr, S1 = Σr·x, S2 = Σr·g: the
    /// expected complete-data log-likelihood of a component is
    /// S0·c − k·q_sum (+ Σr·h, free of the parameters), what the truncated
    /// M-step maximises (truncation.rs).
    fn q_sum(s0: f64, s1: f64, s2: f64, mu: f64) -> f64;

    /// (log F(x), log(1 − F(x))) of one component (μ, shape), both tails
    /// to full relative precision (special.rs): truncation's window mass.
    fn ln_cdfs(x: f64, mu: f64, shape: f64) -> (f64, f64);

    /// `ln_cdfs` at a finite `x` in the support, with F(x)'s gradient and
    /// Hessian in (μ, log shape) in closed form, for the truncated M-step's
    /// Newton step (truncation.rs). `None` where the family has none (the
    /// gamma's shape derivative of the incomplete gamma function): the step
    /// then differences log P.
    fn cdf_derivatives(_x: f64, _mu: f64, _shape: f64) -> Option<CdfDerivatives> {
        None
    }

    /// Whether μ is a usable mean (the inverse Gaussian's must be positive).
    fn mean_ok(mu: f64) -> bool;

    /// The M-step of one component: its new (μ, shape) from its sufficient
    /// statistics S0 = Σr, S1 = Σr·x, S2 = Σr·g (DESIGN §3), in closed
    /// form. A family with an inner one-dimensional solve does it here.
    fn component_m_step(s0: f64, s1: f64, s2: f64) -> (f64, f64);

    /// The M-step's shape of one component whose mean is fixed at `mu`
    /// (`fixed`): the shape maximising its expected complete-data
    /// log-likelihood given μ, from the same S0, S1, S2. At μ = S1/S0 it is
    /// `component_m_step`'s (every family's μ update is S1/S0 whatever the
    /// shape, so a fixed shape leaves μ's update as it is).
    fn shape_given_mean(s0: f64, s1: f64, s2: f64, mu: f64) -> f64;

    /// Maximum-likelihood (μ, shape) of one component from a few
    /// observations, as random starts use them; `None` when the estimate is
    /// not a valid component (all values equal, non-finite, shape ≤ 0, a
    /// mean `mean_ok` rejects).
    fn ml_estimate(xs: &[f64]) -> Option<(f64, f64)>;

    /// `equal.scale`: the statistic of a component's shape whose average
    /// over the components, weighted by their S0, is the common shape's
    /// (the M-step of one shape shared by every component): σ² (the
    /// Normal's, the lognormal's on the logarithms), 1/λ (inverse
    /// Gaussian), log a − ψ(a) (gamma).
    fn pooled_statistic(shape: f64) -> f64;

    /// The common shape of an average of `pooled_statistic`.
    fn from_pooled(v: f64) -> f64;

    /// The standard deviation of one component: the quantity of the
    /// spurious-solution screen (screen.rs: a spike is a component far
    /// narrower than the widest) and of the M-step's collapse guard.
    fn sd(mu: f64, shape: f64) -> f64;

    /// Rescaling (DESIGN §3; dataset.rs): the (shift, scale) with which
    /// data of mean `mean` and standard deviation `sd` are fitted, as
    /// x' = (x − shift) / scale, so that the M-step's differences do not
    /// cancel far from unit scale.
    fn location_scale(mean: f64, sd: f64) -> (f64, f64);

    /// Σ h(x) over `n` observations in their own units, from `h_sum`, the
    /// same sum over the rescaled data (rescaled by `scale`).
    fn log_h_sum_unscaled(h_sum: f64, n: f64, scale: f64) -> f64;

    /// One component's (μ, shape) fitted on the rescaled data, in the
    /// data's own units. The default is a location-scale family's (both
    /// families here); a family whose shape is not a scale overrides it,
    /// `rescale` and the Jacobian of information.rs's `covariance`.
    #[inline(always)]
    fn unscale(mu: f64, shape: f64, shift: f64, scale: f64) -> (f64, f64) {
        (mu * scale + shift, shape * scale)
    }

    /// The inverse of `unscale`: (μ, shape) in the data's units, on the
    /// rescaled data.
    #[inline(always)]
    fn rescale(mu: f64, shape: f64, shift: f64, scale: f64) -> (f64, f64) {
        ((mu - shift) / scale, shape / scale)
    }

    /// Per-component constants of `derivatives`, computed once per pass so
    /// that the pass over the data divides by nothing but its own x.
    fn derivative_constants(mu: f64, shape: f64) -> [f64; 6];

    /// The information's per-observation pieces (information.rs): the
    /// gradient u = (u_μ, u_s) and the Hessian (h_μμ, h_μs, h_ss) of
    /// log p(x) in (μ, shape), at x with its `aux` value g, from
    /// `derivative_constants` `c`. Called per observation and component.
    fn derivatives(x: f64, g: f64, mu: f64, c: &[f64; 6]) -> [f64; 5];

    /// One draw from the component (μ, shape), for the parametric
    /// bootstrap's replicates (simulate.rs); `rng`'s draws are part of a
    /// replicate's definition, so their number and order are fixed.
    fn draw(mu: f64, shape: f64, rng: &mut Pcg64) -> f64;

    /// The means of the two components a component of mean μ is split into
    /// for a K + 1 start next to a K-component fit (bootstrap.rs), `half`
    /// (half its sd) either side of μ, both inside the family's range.
    fn split_means(mu: f64, half: f64) -> (f64, f64);
}

/// Per-component constants of log α_m + log p_m(x) − h(x) = c_m − k_m·q.
/// (c_m includes log α_m; `mu` is what q takes: μ, or 1/μ for the gamma.)
#[derive(Clone, Copy, Debug)]
pub struct Terms {
    pub c: [f64; MAX_COMPONENTS],
    pub k: [f64; MAX_COMPONENTS],
    pub mu: [f64; MAX_COMPONENTS],
}

/// `(μ, shape)` if it is a valid component of `F`: finite, a mean `F`
/// accepts, a positive shape.
pub(super) fn valid_estimate<F: ComponentFamily>(mu: f64, shape: f64) -> Option<(f64, f64)> {
    (mu.is_finite() && F::mean_ok(mu) && shape.is_finite() && shape > 0.0).then_some((mu, shape))
}

/// A standard Normal draw by Box and Muller (one of the pair; 1 − u keeps
/// the logarithm's argument in (0, 1]).
pub(crate) fn standard_normal(rng: &mut Pcg64) -> f64 {
    let u = 1.0 - rng.random::<f64>();
    let v = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}
