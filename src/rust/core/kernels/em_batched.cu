// Kernels of the cuda-batched engine: whole EM fits on the device, in one of
// two mappings chosen by the host (engine/cuda_batched.rs):
//
// em_batched_lane: each thread (lane) owns one (dataset, start) fit at a time and runs it to
// its end: E-step passes, M-step, convergence test and degeneracy checks,
// iteration after iteration, mirroring src/em.rs (EmState::advance) and
// src/mstep.rs (m_step, check_component). When its fit ends, the lane writes
// the result and takes the next fit from a queue (an atomic counter over fits
// sorted by dataset size, longest first), so lanes never wait for the slowest
// start of their warp.
//
// The lane's work is one flat loop with one observation per step: the
// end-of-pass work (M-step, convergence, taking a new fit) is a rare branch,
// so the warp stays converged whatever the lanes' dataset sizes, iteration
// counts or phases. Observations are packed as double2 {x, g} (g = 1/x or
// x^2, ComponentFamily::aux) so each step is one 16-byte load.
//
// The log-likelihood of a pass is sum(max_i) + log(prod_i sum_m exp(l_im - max_i)),
// with the product renormalised every step by moving its binary exponent into
// an integer (no logarithm per observation, no overflow), as estep.rs does
// with one logarithm per block.
//
// Mixed precision (MIXED = 1): a fit's passes run in fp32 arithmetic from
// an fp32 copy of the observations (obs32), their sums kept in fp32 over
// blocks of SINGLE_BLOCK observations per lane and added into the fp64 sums
// of the pass; the M-step and everything after a pass stay fp64. A fit runs
// so until it is close enough to converged (see advance), then is stored
// as FIT_SWITCHED, and a second launch of the fp64 kernel over the same
// arrays (`finish`) takes every fit on from its stored parameters and
// iterations by the fp64 rules, which decide how it ends. Two launches, not
// one kernel that switches: a warp whose groups ran fp32 and fp64 passes at
// once would run both loops, one after the other.
//
// em_batched_group: a group of lanes (a warp, or a power-of-two part of one,
// chosen by the host) owns one fit at a time; its lanes share the
// observations of each pass and combine their sums by a butterfly of
// shuffles, after which every lane holds the same totals and makes the same
// decisions. For datasets too large or fits too long for a lane each. The
// end of a pass (M-step, logarithms of the new terms, SQUAREM's
// extrapolation) is done by every lane of the group alike, so the narrower
// the group, the less of it per observation.
//
// Layout: obs[ds_offset[d] .. ds_offset[d] + ds_n[d]] is dataset d; fit f is
// a start of dataset fit_ds[f] beginning at init[f][W] (alpha[K], mu[K],
// shape[K], for Student's t df[K], and with a noise component (N = 1) its
// weight: W = row_width<K, F, N>(), pack.rs's Row);
// results go to out_params[f][W], out_ll[f], out_info[f] =
// {iterations, outcome, spurious} (FIT_INFO values; outcome codes:
// outcome.rs Outcome::code; spurious: screen.rs Screen::spurious of the final
// parameters, with the call's thresholds). While fit f runs, out_params[f]
// holds its SQUAREM store (see State).
//
// Two words are shared with the host WHILE the kernel runs, through a second
// stream (engine/cuda_batched/device.rs): the fit queue `next`, which lanes
// advance with atomicAdd and the host reads to estimate progress (any value
// it sees is a valid lower bound, so no ordering is needed), and the stop
// flag `stop`, which the host sets on an interrupt and lanes read through a
// volatile pointer at the end of every pass (a late read only means one more
// pass). Nothing else is touched by both.

// Every constant here (OUTCOME_* codes, FIT_SWITCHED, MIN_COMPONENT_OBS,
// MIN_RELATIVE_SD, FALL_TOLERANCE, LN_2PI, LN_2, BATCHED_THREADS, the family
// codes FAM_*, the special functions' SERIES_FROM, HALF_LN_2PI and
// GAMMA_SHAPE_*, the t's DF_MIN, DF_MAX and LN_PI) comes from the prelude
// that gpu/prelude.rs generates from the Rust definitions. F, a template parameter throughout, is the family's
// code (Family::kernel_code): FAM_NORMAL, FAM_INVGAUSS, FAM_GAMMA, FAM_T
// (Student's t, student.rs: the Normal's with a weight u per observation
// and component, and df per component; fp64 only) or FAM_EXGAUSS (the
// ex-Gaussian, exgauss.rs: tau per component in df, the exponential parts'
// moments per observation; fp64 only); N is 1
// for a mixture with a noise component (noise.rs): a uniform whose
// log-density less h, t(x), comes per observation in noise_t (laid out as
// obs), its weight beside the components' (fp64 kernels only); W is 1 for
// observations with weights (bulkem(weights = ), fp64 kernels only): each
// observation's weight, laid out as obs in `weights`, multiplies its
// responsibilities and its share of the log-likelihood (one logarithm per
// observation, not the product's), and ds_total (the sum of a dataset's
// weights) takes n's place as the M-step's total, the stop rule's scale
// and the screen's count.

// The special functions (ln_gamma, digammas, gamma_shape, df_root) come
// from special.cuh, concatenated before this file.

// Values per fit in init and out_params (pack.rs's Row): alpha[K], mu[K],
// shape[K], the t's df[K], then a noise component's weight.
// Whether the family has a third parameter per component in df[]: the t's
// df, the ex-Gaussian's tau (Family::has_third).
template <int F>
__device__ constexpr bool has_third() { return F == FAM_T || F == FAM_EXGAUSS; }
template <int K, int F>
__device__ constexpr int noise_at() { return (has_third<F>() ? 4 : 3) * K; }
template <int K, int F, int N>
__device__ constexpr int row_width() { return noise_at<K, F>() + N; }

// ComponentFamily::sd: sqrt(mu^3 / lambda), mu / sqrt(a), or sigma (the t's scale).
template <int F>
__device__ __forceinline__ double component_sd(double mu, double shape) {
    return F == FAM_INVGAUSS ? sqrt(mu * mu * mu / shape) : (F == FAM_GAMMA ? mu / sqrt(shape) : shape);
}

// mstep.rs::check_component: 0 if usable, else the outcome code.
template <int F>
__device__ __forceinline__ int check_component(double mu, double shape, double spread) {
    const bool mu_ok = F == FAM_NORMAL || F == FAM_T || F == FAM_EXGAUSS || mu > 0.0;
    if (!(isfinite(mu) && isfinite(shape) && shape > 0.0 && mu_ok)) return OUTCOME_NOT_FINITE;
    const double sd = component_sd<F>(mu, shape);
    if (!(sd >= MIN_RELATIVE_SD * spread)) return OUTCOME_SPREAD_COLLAPSED;
    return 0;
}

// mstep.rs::m_step: new parameters from S0, S1, S2 (in place of p), or an
// outcome code. `total` is the weights' total: n (as double), or in fp32
// passes the sum of S0 (see advance). For the t (mstep.rs::m_step_student,
// student.rs::component_m_step), S1 and S2 are weighted by u, and Su and
// sum r (log u - u) (`su`, `sl`) and the pass's df (`df0`) give df, unless
// `df_fixed`; other families leave `df` alone.
// One shape shared by the components (bulkem(equal.scale = TRUE),
// mstep.rs's m_step_pooled): ComponentFamily::pooled_statistic of a shape,
// averaged over the components weighted by S0, and from_pooled of the
// average (sigma^2; 1/lambda; log a - psi(a)).
template <int F>
__device__ __forceinline__ double pooled_statistic(double shape) {
    if (F == FAM_INVGAUSS) return 1.0 / shape;
    if (F == FAM_GAMMA) {
        double di, tri;
        digammas(shape, di, tri);
        return log(shape) - di;
    }
    return shape * shape;
}
template <int F>
__device__ __forceinline__ double from_pooled(double v) {
    return F == FAM_INVGAUSS ? 1.0 / v : (F == FAM_GAMMA ? gamma_shape(v) : sqrt(v));
}

// One component's update from its sums (mstep.rs's component_m_step;
// student.rs's for the t, whose S1 and S2 are weighted by u and whose mean
// divides by Su).
template <int F>
__device__ __forceinline__ void component_update(double s0, double s1, double s2, double su, double& mu,
                                                 double& shape) {
    mu = s1 / (F == FAM_T ? su : s0);
    shape = F == FAM_INVGAUSS  ? s0 / (s2 - s0 * s0 / s1)
            : F == FAM_GAMMA   ? gamma_shape(log(mu) - s2 / s0)
            : F == FAM_T       ? sqrt((s2 - mu * s1) / s0)
            : F == FAM_EXGAUSS ? sqrt(fmax(s2 / s0 - mu * mu, 0.0))
                               : sqrt(s2 / s0 - mu * mu);
}

// Values fixed by bulkem(fixed =) (fixed.rs): `fx` is the dataset's row of
// K weights, K means and K shapes, NaN where free (null when the call fixes
// nothing). mstep.rs's `update`: a fixed mean's shape is the best given it
// (ComponentFamily::shape_given_mean; the t's student.rs
// component_m_step_fixed), a fixed shape is kept.
template <int K, int F>
__device__ __forceinline__ void fixed_update(const double* fx, int m, double s0, double s1, double s2, double su,
                                             double& mu, double& shape) {
    const double fm = fx[K + m], fs = fx[2 * K + m];
    if (!isnan(fm)) {
        mu = fm;
        shape = !isnan(fs)            ? fs
                : F == FAM_INVGAUSS   ? 1.0 / (s1 / (s0 * fm * fm) - 2.0 / fm + s2 / s0)
                : F == FAM_GAMMA      ? gamma_shape(log(fm) - s2 / s0 + s1 / (s0 * fm) - 1.0)
                : F == FAM_T          ? sqrt((s2 - 2.0 * fm * s1 + fm * fm * su) / s0)
                : F == FAM_EXGAUSS    ? sqrt(fmax((s2 - 2.0 * fm * s1 + fm * fm * s0) / s0, 0.0))
                                      : sqrt(s2 / s0 - 2.0 * fm * s1 / s0 + fm * fm);
    } else if (!isnan(fs)) {
        shape = fs;
    }
}

// Fixed::share: the fixed weights as given, the free ones and the noise's
// sharing what they leave in proportion to `part` (S0 in the M-step, the
// weights themselves for an extrapolated point).
template <int K, int N>
__device__ __forceinline__ void fixed_weights(const double* fx, const double part[K], double noise_part,
                                              double alpha[K], double& noise) {
    double fixed = 0.0, free = 0.0;
    bool any = false;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (!isnan(fx[m])) {
            fixed += fx[m];
            any = true;
        }
    }
    if (!any) return;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (isnan(fx[m])) free += part[m];
    }
    if (N) free += noise_part;
    const double left = 1.0 - fixed;
#pragma unroll
    for (int m = 0; m < K; ++m) alpha[m] = isnan(fx[m]) ? left * (part[m] / free) : fx[m];
    if (N && noise > 0.0) noise = left * (noise_part / free);
}

// The t's df (student.rs::finish_stats's statistic of the pass's df0, then
// its root), or df0 where fixed: 0, or the outcome code of a df out of range.
__device__ __forceinline__ int df_update(double df0, double s0, double sl, int df_fixed, double& df) {
    double new_df = df0;
    if (!df_fixed) {
        const double half = (df0 + 1.0) / 2.0;
        double di, tri;
        digammas(half, di, tri);
        const double s_df = sl + s0 * (di - log(half));
        new_df = df_root(-1.0 - s_df / s0);
    }
    if (!(new_df >= DF_MIN && new_df <= DF_MAX)) return OUTCOME_NOT_FINITE;
    df = new_df;
    return 0;
}

// The ex-Gaussian's tau (exgauss.rs's component_m_step): Su / S0, the
// exponential parts' mean; 0, or the outcome code of a tau that is not a
// positive number.
__device__ __forceinline__ int tau_update(double s0, double su, double& tau) {
    const double t = su / s0;
    if (!(isfinite(t) && t > 0.0)) return OUTCOME_NOT_FINITE;
    tau = t;
    return 0;
}

template <int K, int F>
__device__ __forceinline__ int m_step(const double s0[K], const double s1[K], const double s2[K], const double su[K],
                                      const double sl[K], double s0n, const double df0[K], int df_fixed, double total,
                                      double spread, double alpha[K], double mu[K], double shape[K], double df[K],
                                      double& noise, int equal_scale, const double* fx) {
    noise = s0n / total;
    if (equal_scale) {
        // every component's mu and shape (and the t's df), then the shapes pooled
        double new_mu[K], new_shape[K];
        double s0_total = 0.0, v = 0.0;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            if (!(s0[m] >= MIN_COMPONENT_OBS)) return isnan(s0[m]) ? OUTCOME_NOT_FINITE : OUTCOME_WEIGHT_COLLAPSED;
            component_update<F>(s0[m], s1[m], s2[m], su[m], new_mu[m], new_shape[m]);
            if (fx) fixed_update<K, F>(fx, m, s0[m], s1[m], s2[m], su[m], new_mu[m], new_shape[m]);
            if (F == FAM_T) {
                const int bad = df_update(df0[m], s0[m], sl[m], df_fixed, df[m]);
                if (bad) return bad;
            }
            if (F == FAM_EXGAUSS) {
                const int bad = tau_update(s0[m], su[m], df[m]);
                if (bad) return bad;
            }
        }
#pragma unroll
        for (int m = 0; m < K; ++m) {
            s0_total += s0[m];
            v += s0[m] * pooled_statistic<F>(new_shape[m]);
        }
        const double common = from_pooled<F>(v / s0_total);
#pragma unroll
        for (int m = 0; m < K; ++m) {
            const int bad = check_component<F>(new_mu[m], common, spread);
            if (bad) return bad;
            alpha[m] = s0[m] / total;
            mu[m] = new_mu[m];
            shape[m] = common;
        }
        if (fx) fixed_weights<K, 1>(fx, s0, s0n, alpha, noise);
        return 0;
    }
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (!(s0[m] >= MIN_COMPONENT_OBS)) return isnan(s0[m]) ? OUTCOME_NOT_FINITE : OUTCOME_WEIGHT_COLLAPSED;
        double new_mu, new_shape;
        component_update<F>(s0[m], s1[m], s2[m], su[m], new_mu, new_shape);
        if (fx) fixed_update<K, F>(fx, m, s0[m], s1[m], s2[m], su[m], new_mu, new_shape);
        const int bad = check_component<F>(new_mu, new_shape, spread);
        if (bad) return bad;
        if (F == FAM_T) {
            const int bad_df = df_update(df0[m], s0[m], sl[m], df_fixed, df[m]);
            if (bad_df) return bad_df;
        }
        if (F == FAM_EXGAUSS) {
            const int bad_tau = tau_update(s0[m], su[m], df[m]);
            if (bad_tau) return bad_tau;
        }
        alpha[m] = s0[m] / total;
        mu[m] = new_mu;
        shape[m] = new_shape;
    }
    if (fx) fixed_weights<K, 1>(fx, s0, s0n, alpha, noise);
    return 0;
}

// ComponentFamily::terms: c_m = log alpha_m + (IG: (log lambda - log 2pi)/2 ;
// Normal: -log sigma - log(2pi)/2; gamma: a log a - log Gamma(a) - a log mu),
// k_m = lambda / (2 mu^2), 1 / (2 sigma^2) or a.
template <int K, int F>
__device__ __forceinline__ void terms(const double alpha[K], const double mu[K], const double shape[K],
                                      double c[K], double k[K]) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (F == FAM_INVGAUSS) {
            c[m] = log(alpha[m]) + 0.5 * (log(shape[m]) - LN_2PI);
            k[m] = shape[m] / (2.0 * mu[m] * mu[m]);
        } else if (F == FAM_GAMMA) {
            const double a = shape[m];
            c[m] = log(alpha[m]) + (a * log(a) - ln_gamma(a) - a * log(mu[m]));
            k[m] = a;
        } else {
            c[m] = log(alpha[m]) - log(shape[m]) - 0.5 * LN_2PI;
            k[m] = 1.0 / (2.0 * shape[m] * shape[m]);
        }
    }
}

// The per-pass accumulators of one lane.
template <int K>
struct Pass {
    double s0[K], s1[K], s2[K];
    // the t's Su and sum r (log u - u) (unused, so dropped, for the others)
    double su[K], sl[K];
    // the noise component's S0 (unused, so dropped, without one)
    double s0n;
    double ll_max, prod;
    long long prod_exp;

    __device__ __forceinline__ void reset() {
#pragma unroll
        for (int m = 0; m < K; ++m) s0[m] = s1[m] = s2[m] = su[m] = sl[m] = 0.0;
        s0n = 0.0;
        ll_max = 0.0;
        prod = 1.0;
        prod_exp = 0;
    }

    // prod *= v, then prod's binary exponent moved into prod_exp: prod
    // stays in [1, 2)
    __device__ __forceinline__ void times(double v) {
        prod *= v;
        const long long b = __double_as_longlong(prod);
        prod_exp += ((b >> 52) & 0x7ff) - 1023;
        prod = __longlong_as_double((b & 0x800fffffffffffffLL) | 0x3ff0000000000000LL);
    }

    // sum(max) + log(prod): this lane's share of the pass's log-likelihood
    __device__ __forceinline__ double loglik() const { return ll_max + ((double)prod_exp * LN_2 + log(prod)); }
};

// em.rs Phase: where an accelerated fit is in its SQUAREM cycle.
#define PHASE_FIRST 0
#define PHASE_SECOND 1
#define PHASE_EXTRAPOLATED 2

// A fit's parameters and the per-component terms of ComponentFamily::terms, and
// em.rs EmState's SQUAREM scalars. Its kept parameters (θ0 in PHASE_SECOND,
// θ2 in PHASE_EXTRAPOLATED) live in the fit's row of out_params, unused until
// the fit is stored: only the end of a pass touches them, so they cost the
// per-observation loop no registers.
template <int K>
struct State {
    double alpha[K], mu[K], shape[K], c[K], kk[K];
    // 1/mu, what the gamma's q takes (unused, so dropped, for the others)
    double inv_mu[K];
    // the t's df and student.rs's Terms beside c (kk holds (df+1)/2):
    // 1/(df sigma^2), (df+1)/df and its logarithm (unused, so dropped, for
    // the others)
    double df[K], inv_scale[K], u0[K], log_u0[K];
    // the noise component's weight and its logarithm (N = 1)
    double noise, log_noise;
    double prev, ll1, step, step_max;
    int iterations, phase;
    bool has_prev;
    // fp32 copies of mu, c, kk for mixed precision's passes (unused, so dropped, in fp64 kernels)
    float mu32[K], c32[K], kk32[K], inv_mu32[K];

    // terms() of the current parameters (student.rs::terms for the t), and
    // their fp32 copies
    template <int F>
    __device__ __forceinline__ void retermed() {
        if (F == FAM_EXGAUSS) {
            // exgauss.rs's Terms: kk holds 1/sigma, inv_scale sigma/tau,
            // u0 1/tau
#pragma unroll
            for (int m = 0; m < K; ++m) {
                const double sigma = shape[m], tau = df[m];
                inv_scale[m] = sigma / tau;
                c[m] = log(alpha[m]) - log(tau) + mu[m] / tau + 0.5 * inv_scale[m] * inv_scale[m];
                kk[m] = 1.0 / sigma;
                u0[m] = 1.0 / tau;
            }
        } else if (F == FAM_T) {
#pragma unroll
            for (int m = 0; m < K; ++m) {
                const double sigma = shape[m], v = df[m];
                kk[m] = (v + 1.0) / 2.0;
                c[m] = log(alpha[m]) + ln_gamma(kk[m]) - ln_gamma(v / 2.0) - 0.5 * (log(v) + LN_PI) - log(sigma);
                inv_scale[m] = 1.0 / (v * sigma * sigma);
                u0[m] = (v + 1.0) / v;
                log_u0[m] = log(u0[m]);
            }
        } else {
            terms<K, F>(alpha, mu, shape, c, kk);
        }
        log_noise = log(noise);
#pragma unroll
        for (int m = 0; m < K; ++m) {
            inv_mu[m] = 1.0 / mu[m];
            inv_mu32[m] = (float)inv_mu[m];
            mu32[m] = (float)mu[m];
            c32[m] = (float)c[m];
            kk32[m] = (float)kk[m];
        }
    }
};

// The exponential and reciprocal of each precision's E-step: in fp64 the
// Rust reference's arithmetic, in fp32 (mixed precision's first launch) the
// hardware's approximations.
__device__ __forceinline__ double term_exp(double x) { return exp_nonpos(x); }
__device__ __forceinline__ float term_exp(float x) { return __expf(x); }
__device__ __forceinline__ double reciprocal(double x) { return 1.0 / x; }
__device__ __forceinline__ float reciprocal(float x) { return __fdividef(1.0f, x); }

// Two components' responsibilities r0, r1 from their terms l0, l1, with
// the larger term mx and the sum of exponentials relative to it: the
// larger term's exponential is exp(0) = 1, so one is computed.
template <typename T>
__device__ __forceinline__ void two_components(const T l0, const T l1, T& mx, T& sum, T& r0, T& r1) {
    const bool first = l0 >= l1;
    mx = first ? l0 : l1;
    const T e = term_exp(first ? l1 - l0 : l0 - l1);
    sum = T(1) + e;
    const T inv = reciprocal(sum);
    r0 = first ? inv : e * inv;
    r1 = first ? e * inv : inv;
}

// One observation's responsibilities r (with its largest term mx and its
// sum of exponentials relative to it) added into a pass's sums: a Pass in
// fp64, a Pass32 in fp32.
// With W, r is already weighted by the observation's weight `wt`, and its
// log-likelihood, wt (mx + log sum), is added up directly (CUDA's log:
// em_common.cuh's ln_ge1, the CPU's, measured slower here).
template <int K, int W, typename P, typename T>
__device__ __forceinline__ void add_observation(P& p, const T r[K], const T x, const T g, const T mx, const T sum,
                                                const T wt) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        p.s0[m] += r[m];
        p.s1[m] += r[m] * x;
        p.s2[m] += r[m] * g;
    }
    if (W) {
        p.ll_max += wt * (mx + log(sum));
    } else {
        p.ll_max += mx;
        p.times(sum);
    }
}

// The t's sums of one observation (student.rs's E-step): with w = 1 + z
// and lw = log w per component, u = ((df+1)/df) / w, and S0, Su, S1 = sum r
// u x, S2 = sum r u x^2, sum r (log u - u).
template <int K, int W>
__device__ __forceinline__ void add_observation_t(Pass<K>& p, const double r[K], const double x, const double w[K],
                                                  const double lw[K], const State<K>& st, const double mx,
                                                  const double sum, const double wt) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const double u = st.u0[m] / w[m];
        const double ru = r[m] * u;
        p.s0[m] += r[m];
        p.su[m] += ru;
        p.s1[m] += ru * x;
        p.s2[m] += ru * x * x;
        p.sl[m] += r[m] * (st.log_u0[m] - lw[m] - u);
    }
    if (W) {
        p.ll_max += wt * (mx + log(sum));
    } else {
        p.ll_max += mx;
        p.times(sum);
    }
}

// The ex-Gaussian's sums of one observation (exgauss.rs's E-step): with
// E[Z | x] (ez) and Var[Z | x] (vz) per component and y = x - E[Z | x],
// S0, S1 = sum r y, S2 = sum r (y^2 + Var Z), Su = sum r E[Z].
template <int K, int W>
__device__ __forceinline__ void add_observation_ex(Pass<K>& p, const double r[K], const double x, const double ez[K],
                                                   const double vz[K], const double mx, const double sum,
                                                   const double wt) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const double y = x - ez[m];
        p.s0[m] += r[m];
        p.s1[m] += r[m] * y;
        p.s2[m] += r[m] * (y * y + vz[m]);
        p.su[m] += r[m] * ez[m];
    }
    if (W) {
        p.ll_max += wt * (mx + log(sum));
    } else {
        p.ll_max += mx;
        p.times(sum);
    }
}

// One observation of the E-step (estep.rs; student.rs for the t):
// responsibilities of the K components, accumulated into the pass's sums.
// The largest term's exponential is exp(0) = 1, so K - 1 are computed (for
// K = 2, one). With W, weighted by the observation's weight `wt`.
template <int K, int F, int N, int W>
__device__ __forceinline__ void accumulate(const double2 xg, const double t, const double wt, const State<K>& st,
                                           Pass<K>& p) {
    double l[K];
    // the t's 1 + z and log(1 + z), z = (x - mu)^2 / (df sigma^2); the
    // ex-Gaussian's E[Z | x] and Var[Z | x] (in w and lw)
    double w[K], lw[K];
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (F == FAM_EXGAUSS) {
            // exgauss.rs's component_terms
            const double u = (xg.x - st.mu[m]) * st.kk[m] - st.inv_scale[m];
            const double lp = ln_normal_lower(u);
            l[m] = st.c[m] - xg.x * st.u0[m] + lp;
            const double rho = exp(-0.5 * u * u - 0.5 * LN_2PI - lp);
            const double sigma = st.shape[m];
            w[m] = fmax(sigma * (u + rho), 0.0);
            lw[m] = fmax(sigma * sigma * (1.0 - rho * (u + rho)), 0.0);
            continue;
        }
        if (F == FAM_T) {
            const double d = xg.x - st.mu[m];
            w[m] = 1.0 + d * d * st.inv_scale[m];
            lw[m] = ln_ge1(w[m]);
        }
        const double q = F == FAM_INVGAUSS ? q_invgauss(xg.x, xg.y, st.mu[m])
                         : F == FAM_GAMMA  ? q_gamma(xg.x, xg.y, st.inv_mu[m])
                         : F == FAM_T      ? lw[m]
                                           : q_normal(xg.x, xg.y, st.mu[m]);
        l[m] = st.c[m] - st.kk[m] * q;
    }
    double mx, sum, r[K];
    if (N && K == 2) {
        // estep.rs's two exponentials: the pair's (their larger term's is
        // 1) and the noise's against the pair's larger term
        const double ln = st.log_noise + t;
        const bool first = l[0] >= l[K - 1];
        const double pair = first ? l[0] : l[K - 1];
        const double e = term_exp(first ? l[K - 1] - l[0] : l[0] - l[K - 1]);
        const bool top = ln > pair;
        mx = top ? ln : pair;
        const double f = term_exp(top ? pair - ln : ln - pair);
        const double big = top ? f : 1.0;
        const double small = e * big;
        const double noise = top ? 1.0 : f;
        sum = (big + small) + noise;
        const double inv = reciprocal(sum);
        r[0] = (first ? big : small) * inv;
        r[K - 1] = (first ? small : big) * inv;
        p.s0n += W ? (noise * inv) * wt : noise * inv;
    } else if (N) {
        // the noise's term beside the components' (estep.rs's row K): every
        // exponential computed, the largest being exp(0)
        const double ln = st.log_noise + t;
        mx = ln;
#pragma unroll
        for (int m = 0; m < K; ++m) mx = l[m] > mx ? l[m] : mx;
        const double en = term_exp(ln - mx);
        sum = en;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            l[m] = term_exp(l[m] - mx);
            sum += l[m];
        }
        const double inv = reciprocal(sum);
#pragma unroll
        for (int m = 0; m < K; ++m) r[m] = l[m] * inv;
        p.s0n += W ? (en * inv) * wt : en * inv;
    } else if (K == 2) {
        two_components<double>(l[0], l[1], mx, sum, r[0], r[K - 1]);
    } else if (K > 2) {
        // The largest term's exponential is exp(0) = 1 (exp_nonpos(0) is
        // exactly 1 too): only K - 1 are computed, over the other terms
        // gathered with compile-time indices so they stay in registers.
        int am = 0;
        mx = l[0];
#pragma unroll
        for (int m = 1; m < K; ++m) {
            if (l[m] > mx) {
                mx = l[m];
                am = m;
            }
        }
        double o[K > 1 ? K - 1 : 1];
#pragma unroll
        for (int j = 0; j < K - 1; ++j) o[j] = term_exp((j < am ? l[j] : l[j + 1]) - mx);
        sum = 0.0;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            l[m] = m == am ? 1.0 : (m < am ? o[m < K - 1 ? m : 0] : o[m > 0 ? m - 1 : 0]);
            sum += l[m];
        }
        const double inv = reciprocal(sum);
#pragma unroll
        for (int m = 0; m < K; ++m) r[m] = l[m] * inv;
    } else {
        // K = 1: the one responsibility is 1
        mx = l[0];
        sum = 1.0;
        r[0] = 1.0;
    }
    if (W) {
#pragma unroll
        for (int m = 0; m < K; ++m) r[m] *= wt;
    }
    if (F == FAM_T) {
        add_observation_t<K, W>(p, r, xg.x, w, lw, st, mx, sum, wt);
    } else if (F == FAM_EXGAUSS) {
        add_observation_ex<K, W>(p, r, xg.x, w, lw, mx, sum, wt);
    } else {
        add_observation<K, W>(p, r, xg.x, xg.y, mx, sum, wt);
    }
}

// Observations per lane whose fp32 sums are added into the fp64 ones at
// once: the fp32 product of their sums of exponentials stays below
// MAX_COMPONENTS^SINGLE_BLOCK = 2^96, inside fp32's range.
#define SINGLE_BLOCK 32

// A lane's fp32 sums over at most SINGLE_BLOCK observations.
template <int K>
struct Pass32 {
    float s0[K], s1[K], s2[K];
    float ll_max, prod;

    __device__ __forceinline__ void reset() {
#pragma unroll
        for (int m = 0; m < K; ++m) s0[m] = s1[m] = s2[m] = 0.0f;
        ll_max = 0.0f;
        prod = 1.0f;
    }

    // prod *= v: at most SINGLE_BLOCK factors before a flush, so no
    // renormalising
    __device__ __forceinline__ void times(float v) { prod *= v; }

    // added into the pass's fp64 sums, and reset
    __device__ __forceinline__ void flush(Pass<K>& p) {
#pragma unroll
        for (int m = 0; m < K; ++m) {
            p.s0[m] += (double)s0[m];
            p.s1[m] += (double)s1[m];
            p.s2[m] += (double)s2[m];
        }
        p.ll_max += (double)ll_max;
        p.times((double)prod);
        reset();
    }
};

// accumulate() in fp32, for the passes of mixed precision's first launch:
// the same quantities, with the hardware's approximate
// exponential and reciprocal. For K > 2 every exponential is computed (the
// largest is exp(0)): one more than needed, but no gather.
template <int K, int F>
__device__ __forceinline__ void accumulate32(const float2 xg, const State<K>& st, Pass32<K>& p) {
    float l[K];
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const float d = xg.x - st.mu32[m];
        const float q = F == FAM_INVGAUSS ? d * d * xg.y : (F == FAM_GAMMA ? xg.x * st.inv_mu32[m] - xg.y : d * d);
        l[m] = st.c32[m] - st.kk32[m] * q;
    }
    float mx, sum, r[K];
    if (K == 2) {
        two_components<float>(l[0], l[1], mx, sum, r[0], r[K - 1]);
    } else {
        mx = l[0];
#pragma unroll
        for (int m = 1; m < K; ++m) mx = fmaxf(mx, l[m]);
        sum = 0.0f;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            l[m] = term_exp(l[m] - mx);
            sum += l[m];
        }
        const float inv = reciprocal(sum);
#pragma unroll
        for (int m = 0; m < K; ++m) r[m] = l[m] * inv;
    }
    add_observation<K, 0>(p, r, xg.x, xg.y, mx, sum, 1.0f);
}

// Q(theta | the pass's sums): the expected complete-data log-likelihood,
// up to terms free of theta, sum_m S0_m c_m - k_m sum_i r_im q(x_i, mu_m),
// with sum_i r_im q from the sums (Normal S2 - 2 mu S1 + mu^2 S0; inverse
// Gaussian, g = 1/x: S1 - 2 mu S0 + mu^2 S2; gamma, g = log x: S1/mu - S2).
template <int K, int F>
__device__ __forceinline__ double q_value(const Pass<K>& p, const double c[K], const double kk[K], const double mu[K]) {
    double v = 0.0;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const double rq = F == FAM_INVGAUSS ? p.s1[m] - 2.0 * mu[m] * p.s0[m] + mu[m] * mu[m] * p.s2[m]
                          : F == FAM_GAMMA  ? p.s1[m] / mu[m] - p.s2[m]
                                            : p.s2[m] - 2.0 * mu[m] * p.s1[m] + mu[m] * mu[m] * p.s0[m];
        v += p.s0[m] * c[m] - kk[m] * rq;
    }
    return v;
}

// m_step's weights' total. An fp32 observation's responsibilities, with the
// hardware's reciprocal, sum to 1 only within about 1e-7, and weights
// s0 / n would then sum to 1 + O(1e-7): every log-likelihood (and Q) at
// them would be off by n log of that sum (8e-6 seen at n = 1000), and the
// first fp64 pass's gain against the next would look like a fall. So fp32
// passes' weights are s0 / sum(s0).
template <int K, int MIXED>
__device__ __forceinline__ double weights_total(const Pass<K>& p, double total) {
    if (!MIXED) return total;
    double t = 0.0;
#pragma unroll
    for (int m = 0; m < K; ++m) t += p.s0[m];
    return t;
}

// Mixed precision. The log-likelihood of an fp32 pass carries rounding of
// order a millionth or more at a few hundred observations, as large as the last
// steps' gains, so it cannot tell when a fit has converged. The M-step's
// gain in Q can: it is computed in fp64 from the pass's sums, and where the
// step is small it is of second order in their rounding. Near a maximum the
// log-likelihood's gain is 1 + rho times it (rho: EM's rate, below 1), so
// a fit whose Q gain falls below epsilon / Q_GAIN_MARGIN has a
// log-likelihood gain below epsilon: it is stored as FIT_SWITCHED, and the
// fp64 launch that finishes it needs two or three passes. (A margin of 4
// instead of 2: 0.3-3% more passes, no better fits; results-mixed-precision.md.) So is a fit at
// max_iters (its end is the fp64 launch's to decide and report), or one
// whose pass is not finite or whose M-step is unusable in fp32. Only the
// fp64 launch ends a fit; nothing of the fp32 passes (prev, ll1) is
// compared with an fp64 log-likelihood.
#define Q_GAIN_MARGIN 2.0

// The fit is stored from a usable point: the current parameters, or theta2
// of keep when the extrapolated point's pass was not finite.
template <int K>
__device__ __forceinline__ int switched(State<K>& st, const double* __restrict__ keep) {
    // (mixed precision has no noise component: keep's noise is not read)
    if (st.phase == PHASE_EXTRAPOLATED) {
#pragma unroll
        for (int m = 0; m < K; ++m) {
            st.alpha[m] = keep[m];
            st.mu[m] = keep[K + m];
            st.shape[m] = keep[2 * K + m];
        }
    }
    return FIT_SWITCHED;
}

// em.rs EmState::advance: given the pass's log-likelihood and sums for
// the current parameters, stop (returns the outcome code; FIT_SWITCHED from
// mixed precision's fp32 passes, see above) or move to the
// next iterate (returns -1): the M-step's parameters, or with ACC = 1
// (control$accelerate) the SQUAREM cycle's. `total` is the dataset's n (as
// a double), or with weights the sum of its weights. `keep` is the fit's store of
// row_width values (alpha[K], mu[K], shape[K], the t's df[K], the noise's
// weight).
//
// The extrapolation is em.rs::extrapolate, component by component: with
// θ0 in keep, θ1 the current parameters and θ2 the M-step's, SqS3's step
// s = ‖r‖/‖v‖ over (alpha, mu, log shape, and the t's 1/df unless fixed),
// at most step_max, and θ' = θ0 + 2s·r + s²·v, written over θ1 while θ2
// replaces θ0 in keep; if s is not above 1 or θ' is not a usable mixture,
// the cycle ends at θ2.
template <int K, int F, int MIXED, int ACC, int N>
__device__ __forceinline__ int advance(State<K>& st, double loglik, const Pass<K>& p, double total, double spread,
                                       int max_iters, double epsilon, int df_fixed, int equal_scale,
                                       const double* fx, double* __restrict__ keep) {
    if (MIXED && !isfinite(loglik)) return switched<K>(st, keep);
    constexpr int NA = noise_at<K, F>();
    double a2[K], m2[K], sh2[K], d2[K], n2;
    if (ACC && st.phase == PHASE_EXTRAPOLATED) {
        // accepted when θ' is at least as likely as θ1 and its M-step is
        // usable; otherwise the cycle ends at θ2
        const bool ok = loglik >= st.ll1 &&
                        m_step<K, F>(p.s0, p.s1, p.s2, p.su, p.sl, p.s0n, st.df, df_fixed, weights_total<K, MIXED>(p, total),
                                     spread, a2, m2, sh2, d2, n2, equal_scale, fx) == 0;
        const bool reached = st.step >= st.step_max;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            st.alpha[m] = ok ? a2[m] : keep[m];
            st.mu[m] = ok ? m2[m] : keep[K + m];
            st.shape[m] = ok ? sh2[m] : keep[2 * K + m];
            if (has_third<F>()) st.df[m] = ok ? d2[m] : keep[3 * K + m];
        }
        if (N) st.noise = ok ? n2 : keep[NA];
        st.prev = ok ? loglik : st.ll1;
        if (reached) st.step_max = ok ? st.step_max * SQUAREM_STEP_GROWTH : fmax(st.step_max / SQUAREM_STEP_GROWTH, SQUAREM_STEP_GROWTH);
        st.has_prev = true;
        st.phase = PHASE_FIRST;
        st.iterations += 1;
        st.template retermed<F>();
        return -1;
    }
    if (!MIXED) {
        if (!isfinite(loglik)) return OUTCOME_NOT_FINITE;
        if (st.has_prev && loglik < st.prev - FALL_TOLERANCE * (fabs(st.prev) + total)) return OUTCOME_LOGLIK_FELL;
        if (st.has_prev && loglik - st.prev < epsilon) return OUTCOME_CONVERGED;
    }
    if (st.iterations >= max_iters) return MIXED ? FIT_SWITCHED : OUTCOME_MAX_ITERS;
    const int bad = m_step<K, F>(p.s0, p.s1, p.s2, p.su, p.sl, p.s0n, st.df, df_fixed, weights_total<K, MIXED>(p, total),
                                 spread, a2, m2, sh2, d2, n2, equal_scale, fx);
    if (bad) return MIXED ? FIT_SWITCHED : bad;
    if (MIXED) {
        double c2[K], k2[K];
        terms<K, F>(a2, m2, sh2, c2, k2);
        if (q_value<K, F>(p, c2, k2, m2) - q_value<K, F>(p, st.c, st.kk, st.mu) < epsilon / Q_GAIN_MARGIN) return FIT_SWITCHED;
    }
    st.iterations += 1;
    st.prev = loglik;
    st.has_prev = true;
    bool extrapolated = false;
    if (ACC && st.phase == PHASE_FIRST) {
#pragma unroll
        for (int m = 0; m < K; ++m) {
            keep[m] = st.alpha[m];
            keep[K + m] = st.mu[m];
            keep[2 * K + m] = st.shape[m];
            if (has_third<F>()) keep[3 * K + m] = st.df[m];
        }
        if (N) keep[NA] = st.noise;
        st.phase = PHASE_SECOND;
    } else if (ACC) {
        st.phase = PHASE_FIRST;
        // the extrapolated pass must not be the last one allowed
        if (st.iterations < max_iters) {
            double rr = 0.0, vv = 0.0;
#pragma unroll
            for (int m = 0; m < K; ++m) {
                const double l0 = log(keep[2 * K + m]), l1 = log(st.shape[m]), l2 = log(sh2[m]);
                const double ra = st.alpha[m] - keep[m], rm = st.mu[m] - keep[K + m], rs = l1 - l0;
                const double va = a2[m] - 2.0 * st.alpha[m] + keep[m];
                const double vm = m2[m] - 2.0 * st.mu[m] + keep[K + m];
                const double vs = l2 - 2.0 * l1 + l0;
                rr += ra * ra;
                rr += rm * rm;
                rr += rs * rs;
                vv += va * va;
                vv += vm * vm;
                vv += vs * vs;
                if (F == FAM_T && !df_fixed) {
                    const double i0 = 1.0 / keep[3 * K + m], i1 = 1.0 / st.df[m];
                    const double rd = i1 - i0, vd = 1.0 / d2[m] - 2.0 * i1 + i0;
                    rr += rd * rd;
                    vv += vd * vd;
                }
                if (F == FAM_EXGAUSS) {
                    // em.rs's coordinate: log tau
                    const double i0 = log(keep[3 * K + m]), i1 = log(st.df[m]);
                    const double rd = i1 - i0, vd = log(d2[m]) - 2.0 * i1 + i0;
                    rr += rd * rd;
                    vv += vd * vd;
                }
            }
            // the noise's weight, a coordinate like the weights (em.rs)
            const double rn = N ? st.noise - keep[NA] : 0.0;
            const double vn = N ? n2 - 2.0 * st.noise + keep[NA] : 0.0;
            if (N) {
                rr += rn * rn;
                vv += vn * vn;
            }
            const double step = vv > 0.0 ? fmin(sqrt(rr / vv), st.step_max) : 0.0;
            extrapolated = step > 1.0;
            if (extrapolated) {
                if (N) {
                    const double n0 = keep[NA];
                    st.noise = n0 + 2.0 * step * rn + step * step * vn;
                    keep[NA] = n2;
                    extrapolated = st.noise > 0.0 && st.noise < 1.0;
                }
#pragma unroll
                for (int m = 0; m < K; ++m) {
                    const double a0 = keep[m], m0 = keep[K + m], l0 = log(keep[2 * K + m]);
                    const double l1 = log(st.shape[m]), l2 = log(sh2[m]);
                    st.alpha[m] = a0 + 2.0 * step * (st.alpha[m] - a0) + step * step * (a2[m] - 2.0 * st.alpha[m] + a0);
                    st.mu[m] = m0 + 2.0 * step * (st.mu[m] - m0) + step * step * (m2[m] - 2.0 * st.mu[m] + m0);
                    st.shape[m] = exp(l0 + 2.0 * step * (l1 - l0) + step * step * (l2 - 2.0 * l1 + l0));
                    keep[m] = a2[m];
                    keep[K + m] = m2[m];
                    keep[2 * K + m] = sh2[m];
                    if (F == FAM_T && !df_fixed) {
                        const double i0 = 1.0 / keep[3 * K + m], i1 = 1.0 / st.df[m];
                        st.df[m] = 1.0 / (i0 + 2.0 * step * (i1 - i0) + step * step * (1.0 / d2[m] - 2.0 * i1 + i0));
                        extrapolated = extrapolated && st.df[m] >= DF_MIN && st.df[m] <= DF_MAX;
                    }
                    if (F == FAM_EXGAUSS) {
                        const double i0 = log(keep[3 * K + m]), i1 = log(st.df[m]);
                        st.df[m] = exp(i0 + 2.0 * step * (i1 - i0) + step * step * (log(d2[m]) - 2.0 * i1 + i0));
                        extrapolated = extrapolated && isfinite(st.df[m]) && st.df[m] > 0.0;
                    }
                    if (has_third<F>()) keep[3 * K + m] = d2[m];
                    extrapolated = extrapolated && st.alpha[m] * total >= MIN_COMPONENT_OBS &&
                                   check_component<F>(st.mu[m], st.shape[m], spread) == 0;
                }
                st.step = step;
            }
        }
    }
    if (extrapolated && fx) {
        // (a fixed shape's log, extrapolated by a zero step, comes back
        // through exp: the fixed values put back exactly, as em.rs does)
        double part[K];
#pragma unroll
        for (int m = 0; m < K; ++m) {
            part[m] = st.alpha[m];
            if (!isnan(fx[K + m])) st.mu[m] = fx[K + m];
            if (!isnan(fx[2 * K + m])) st.shape[m] = fx[2 * K + m];
        }
        fixed_weights<K, N>(fx, part, st.noise, st.alpha, st.noise);
    }
    if (extrapolated) {
        st.ll1 = loglik;
        st.phase = PHASE_EXTRAPOLATED;
        st.has_prev = false;
    } else {
#pragma unroll
        for (int m = 0; m < K; ++m) {
            st.alpha[m] = a2[m];
            st.mu[m] = m2[m];
            st.shape[m] = sh2[m];
            if (has_third<F>()) st.df[m] = d2[m];
        }
        if (N) st.noise = n2;
    }
    st.template retermed<F>();
    return -1;
}

// The kernels' shared arguments (see the layout above).
struct Batch {
    const double2* obs;
    const float2* obs32;  // obs in fp32, for mixed precision (else null)
    const long long* ds_offset;
    const int* ds_n;
    const double* ds_hsum;
    const double* ds_spread;
    const int* fit_ds;
    const double* init;
    double* out_params;
    double* out_ll;
    int* out_info;
    int n_fits;
    int max_iters;
    double epsilon;
    double screen_ratio, screen_count, screen_count_ratio;  // screen.rs Screen
    unsigned int* next;        // the fit queue, read by the host while running
    const volatile int* stop;  // set by the host while running
    int group;                 // em_batched_group: lanes per fit, a power of two <= 32
    // 1: the fp64 launch that finishes mixed precision's fits; init is then
    // the fp32 launch's out_params (each fit's row, read before the fit
    // writes it) and each fit goes on from its iterations in out_info
    int finish;
    int screen_distinct;  // screen.rs Screen::distinct
    const double* noise_t;  // t(x) of each observation, laid out as obs (N = 1; else null)
    int df_fixed;           // 1: the t's df stay as init gives them (bulkem(df = ))
    const double* weights;  // each observation's weight, laid out as obs (W = 1; else null)
    const double* ds_total; // the sum of each dataset's weights (W = 1; else null)
    int equal_scale;        // 1: one shape shared by the components (bulkem(equal.scale = TRUE))
    const double* fixed;    // each dataset's 3K values fixed (fixed_update), or null
};

template <int K, int F, int N>
__device__ __forceinline__ void load_fit(const Batch& b, int f, State<K>& st) {
    const size_t w = row_width<K, F, N>();
#pragma unroll
    for (int m = 0; m < K; ++m) {
        st.alpha[m] = b.init[(size_t)f * w + m];
        st.mu[m] = b.init[(size_t)f * w + K + m];
        st.shape[m] = b.init[(size_t)f * w + 2 * K + m];
        if (has_third<F>()) st.df[m] = b.init[(size_t)f * w + 3 * K + m];
    }
    st.noise = N ? b.init[(size_t)f * w + noise_at<K, F>()] : 0.0;
    st.template retermed<F>();
    st.iterations = b.finish ? b.out_info[FIT_INFO * f] : 0;
    st.has_prev = false;
    st.prev = 0.0;
    st.phase = PHASE_FIRST;
    st.ll1 = 0.0;
    st.step = 1.0;
    // a finished fit is so close to its maximum that plain EM steps (a
    // step_max of 1 never extrapolates) converge in two passes, where a
    // SQUAREM cycle takes four or more
    st.step_max = b.finish ? 1.0 : SQUAREM_STEP_GROWTH;
}

// screen.rs Screen::spurious: a component far narrower than the widest, or
// small (fewer than screen_count expected observations) and narrow.
// screen.rs Screen::heaped, the same loop: fewer than `need` distinct data
// values in [lo, hi], looking no further once `need` are seen. The window is
// made with _rn intrinsics so that no multiply-add is contracted: the same
// rounding as the host's.
__device__ __noinline__ int too_few_distinct(const double2* x, int n, double mu, double sd, int need) {
    const double half = __dmul_rn(SPURIOUS_DISTINCT_SDS, sd);
    const double lo = __dsub_rn(mu, half);
    const double hi = __dadd_rn(mu, half);
    double seen[SPURIOUS_DISTINCT_MAX];
    int found = 0;
    for (int i = 0; i < n && found < need; ++i) {
        const double v = x[i].x;
        if (v < lo || v > hi) continue;
        bool dup = false;
        for (int j = 0; j < found; ++j) dup = dup || seen[j] == v;
        if (!dup) seen[found++] = v;
    }
    return found < need;
}

template <int K, int F>
__device__ __forceinline__ int spurious(const Batch& b, const State<K>& st, double total, int n, const double2* x) {
    double sd[K];
    double largest = 0.0;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        sd[m] = component_sd<F>(st.mu[m], st.shape[m]);
        largest = fmax(largest, sd[m]);
    }
    int any = 0;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const bool narrow = sd[m] < b.screen_ratio * largest;
        const bool small = total * st.alpha[m] < b.screen_count && sd[m] < b.screen_count_ratio * largest;
        any |= narrow || small;
    }
    // the spike on heaped values, only where the rules above let it pass
    const int need = b.screen_distinct < SPURIOUS_DISTINCT_MAX ? b.screen_distinct : SPURIOUS_DISTINCT_MAX;
    for (int m = 0; m < K && !any; ++m) any = too_few_distinct(x, n, st.mu[m], sd[m], need);
    return any;
}

template <int K, int F, int N>
__device__ __forceinline__ void store_fit(const Batch& b, int f, const State<K>& st, double loglik, int outcome,
                                          double total, int n, const double2* x) {
    const size_t w = row_width<K, F, N>();
#pragma unroll
    for (int m = 0; m < K; ++m) {
        b.out_params[(size_t)f * w + m] = st.alpha[m];
        b.out_params[(size_t)f * w + K + m] = st.mu[m];
        b.out_params[(size_t)f * w + 2 * K + m] = st.shape[m];
        if (has_third<F>()) b.out_params[(size_t)f * w + 3 * K + m] = st.df[m];
    }
    if (N) b.out_params[(size_t)f * w + noise_at<K, F>()] = st.noise;
    b.out_ll[f] = loglik;
    b.out_info[FIT_INFO * f] = st.iterations;
    b.out_info[FIT_INFO * f + 1] = outcome;
    b.out_info[FIT_INFO * f + 2] = spurious<K, F>(b, st, total, n, x);
}

// One lane per fit, one observation per step (see the top of the file).
template <int K, int F, int MIXED, int ACC, int N, int W>
__device__ __forceinline__ void em_lane(const Batch& b) {
    int fit = blockIdx.x * blockDim.x + threadIdx.x;
    if (fit >= b.n_fits) return;
    State<K> st;
    Pass<K> p;
    Pass32<K> p32;
    int d = b.fit_ds[fit];
    const double2* x = b.obs + b.ds_offset[d];
    const float2* x32 = MIXED ? b.obs32 + b.ds_offset[d] : nullptr;
    const double* tn = N ? b.noise_t + b.ds_offset[d] : nullptr;
    const double* wv = W ? b.weights + b.ds_offset[d] : nullptr;
    int n = b.ds_n[d];
    double total = W ? b.ds_total[d] : (double)n;
    load_fit<K, F, N>(b, fit, st);
    p.reset();
    p32.reset();
    int i = 0;
    // Each step loads the next observation (after the last, the first of
    // the next pass) before it uses this one: the load's latency is hidden
    // behind this observation's arithmetic instead of stalling the lane.
    double2 cur = MIXED ? make_double2(0.0, 0.0) : __ldg(x);
    float2 cur32 = MIXED ? __ldg(x32) : make_float2(0.0f, 0.0f);
    for (;;) {
        if (MIXED) {
            const float2 next = __ldg(x32 + (i + 1 < n ? i + 1 : 0));
            accumulate32<K, F>(cur32, st, p32);
            cur32 = next;
            if ((i + 1) % SINGLE_BLOCK == 0 || i + 1 == n) p32.flush(p);
        } else {
            const double2 next = __ldg(x + (i + 1 < n ? i + 1 : 0));
            accumulate<K, F, N, W>(cur, N ? __ldg(tn + i) : 0.0, W ? __ldg(wv + i) : 1.0, st, p);
            cur = next;
        }
        if (++i < n) continue;
        // end of a pass
        const double loglik = p.loglik() + b.ds_hsum[d];
        const int outcome = advance<K, F, MIXED, ACC, N>(st, loglik, p, total, b.ds_spread[d], b.max_iters, b.epsilon,
                                                           b.df_fixed, b.equal_scale,
                                                           b.fixed ? b.fixed + (size_t)3 * K * d : nullptr,
                                                           b.out_params + (size_t)fit * row_width<K, F, N>());
        if (outcome >= 0) {
            store_fit<K, F, N>(b, fit, st, loglik, outcome, total, n, x);
            fit = (int)atomicAdd(b.next, 1u);
            if (fit >= b.n_fits) return;
            d = b.fit_ds[fit];
            x = b.obs + b.ds_offset[d];
            if (N) tn = b.noise_t + b.ds_offset[d];
            if (W) wv = b.weights + b.ds_offset[d];
            n = b.ds_n[d];
            total = W ? b.ds_total[d] : (double)n;
            load_fit<K, F, N>(b, fit, st);
            if (MIXED) {
                x32 = b.obs32 + b.ds_offset[d];
                cur32 = __ldg(x32);
            } else {
                cur = __ldg(x);
            }
        }
        // the host sets *stop when the user interrupts; unfinished fits are discarded
        if (*b.stop) return;
        p.reset();
        i = 0;
    }
}

// The sum of v over the `width` lanes of a group (a power of two, at most
// 32) by a butterfly of shuffles: every lane of the group gets the total.
// With width 32 the order of additions is that of a whole warp.
__device__ __forceinline__ double group_sum(double v, unsigned mask, int width) {
    for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o, width);
    return v;
}

// One group of b.group lanes per fit (a whole warp, or a power-of-two part
// of one): the group's lanes stride over the observations of each pass.
// Every lane of a group holds the same totals and makes the same decisions;
// groups of one warp run their own fits, and their shuffles name only their
// own lanes, so they may diverge.
template <int K, int F, int MIXED, int ACC, int N, int W>
__device__ __forceinline__ void em_group(const Batch& b) {
    const int width = b.group;
    const int lane = threadIdx.x & 31;
    const int sub = lane & (width - 1);
    const unsigned mask = width == 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane - sub);
    int fit = (blockIdx.x * blockDim.x + threadIdx.x) / width;
    State<K> st;
    Pass<K> p;
    while (fit < b.n_fits) {
        const int d = b.fit_ds[fit];
        const double2* x = b.obs + b.ds_offset[d];
        const int n = b.ds_n[d];
        const double total = W ? b.ds_total[d] : (double)n;
        const double* tn = N ? b.noise_t + b.ds_offset[d] : nullptr;
        const double* wv = W ? b.weights + b.ds_offset[d] : nullptr;
        load_fit<K, F, N>(b, fit, st);
        for (;;) {
            p.reset();
            // as in em_lane, the next observation is loaded before this one is used
            if (MIXED && sub < n) {
                const float2* x32 = b.obs32 + b.ds_offset[d];
                Pass32<K> p32;
                p32.reset();
                float2 cur = __ldg(x32 + sub);
                int in_block = 0;
                for (int i = sub; i < n; i += width) {
                    const float2 next = __ldg(x32 + (i + width < n ? i + width : sub));
                    accumulate32<K, F>(cur, st, p32);
                    cur = next;
                    if (++in_block == SINGLE_BLOCK) {
                        p32.flush(p);
                        in_block = 0;
                    }
                }
                p32.flush(p);
            } else if (!MIXED && sub < n) {
                double2 cur = __ldg(x + sub);
                for (int i = sub; i < n; i += width) {
                    const double2 next = __ldg(x + (i + width < n ? i + width : sub));
                    accumulate<K, F, N, W>(cur, N ? __ldg(tn + i) : 0.0, W ? __ldg(wv + i) : 1.0, st, p);
                    cur = next;
                }
            }
            // lanes that saw no observation contribute log(1) = 0
            const double loglik = group_sum(p.loglik(), mask, width) + b.ds_hsum[d];
#pragma unroll
            for (int m = 0; m < K; ++m) {
                p.s0[m] = group_sum(p.s0[m], mask, width);
                p.s1[m] = group_sum(p.s1[m], mask, width);
                p.s2[m] = group_sum(p.s2[m], mask, width);
            }
            if (has_third<F>()) {
#pragma unroll
                for (int m = 0; m < K; ++m) {
                    p.su[m] = group_sum(p.su[m], mask, width);
                    p.sl[m] = group_sum(p.sl[m], mask, width);
                }
            }
            if (N) p.s0n = group_sum(p.s0n, mask, width);
            const int outcome = advance<K, F, MIXED, ACC, N>(st, loglik, p, total, b.ds_spread[d], b.max_iters, b.epsilon,
                                                           b.df_fixed, b.equal_scale,
                                                           b.fixed ? b.fixed + (size_t)3 * K * d : nullptr,
                                                           b.out_params + (size_t)fit * row_width<K, F, N>());
            if (outcome >= 0) {
                if (sub == 0) store_fit<K, F, N>(b, fit, st, loglik, outcome, total, n, x);
                unsigned int next = 0;
                if (sub == 0) next = atomicAdd(b.next, 1u);
                fit = (int)__shfl_sync(mask, next, 0, width);
                break;
            }
            if (*b.stop) return;
        }
        if (*b.stop) return;
    }
}

// The host appends one instantiation per (family, K, precision, noise,
// weights) it needs (gpu/kernels.rs), e.g. EM_BATCHED(2, 1, 0, 0, 0, 0) for
// the 2-component inverse Gaussian (FAM_INVGAUSS = 1) in fp64, plain EM, no
// noise component, no weights, which defines em_batched_lane and
// em_batched_group.
#define EM_BATCHED(K, F, MIXED, ACC, N, W)                                                 \
    static_assert(!(MIXED && (N || W || F == FAM_T || F == FAM_EXGAUSS)), "mixed precision fits neither noise, weights, t nor exgauss"); \
    extern "C" __global__ void __launch_bounds__(BATCHED_THREADS) em_batched_lane(const Batch b) {    \
        em_lane<K, F, MIXED, ACC, N, W>(b);                                                \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(BATCHED_THREADS) em_batched_group(const Batch b) {   \
        em_group<K, F, MIXED, ACC, N, W>(b);                                               \
    }
