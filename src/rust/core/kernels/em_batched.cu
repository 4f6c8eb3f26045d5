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
// x^2, family.rs::aux) so each step is one 16-byte load.
//
// The log-likelihood of a pass is sum(max_i) + log(prod_i sum_m exp(l_im - max_i)),
// with the product renormalised every step by moving its binary exponent into
// an integer (no logarithm per observation, no overflow), as estep.rs does
// with one logarithm per block.
//
// Mixed precision (MIXED = 1): fp32 exponentials, fp64 everything else; a
// fit switches to fp64 for good once it looks converged (see advance).
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
// a start of dataset fit_ds[f] beginning at init[f][3K] (alpha[K], mu[K],
// shape[K]); results go to out_params[f][3K], out_ll[f], out_info[f] =
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

// Every constant here (OUTCOME_* codes, MIN_COMPONENT_OBS, MIN_RELATIVE_SD,
// FALL_TOLERANCE, LN_2PI, LN_2, BATCHED_THREADS) comes from the prelude that
// gpu/prelude.rs generates from the Rust definitions.

// mstep.rs::check_component: 0 if usable, else the outcome code.
template <int IG>
__device__ __forceinline__ int check_component(double mu, double shape, double spread) {
    const bool mu_ok = !IG || mu > 0.0;
    if (!(isfinite(mu) && isfinite(shape) && shape > 0.0 && mu_ok)) return OUTCOME_NOT_FINITE;
    const double sd = IG ? sqrt(mu * mu * mu / shape) : shape;  // family.rs::component_sd
    if (!(sd >= MIN_RELATIVE_SD * spread)) return OUTCOME_SPREAD_COLLAPSED;
    return 0;
}

// mstep.rs::m_step: new parameters from S0, S1, S2 (in place of p), or an
// outcome code.
template <int K, int IG>
__device__ __forceinline__ int m_step(const double s0[K], const double s1[K], const double s2[K], int n,
                                      double spread, double alpha[K], double mu[K], double shape[K]) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (!(s0[m] >= MIN_COMPONENT_OBS)) return isnan(s0[m]) ? OUTCOME_NOT_FINITE : OUTCOME_WEIGHT_COLLAPSED;
        const double new_mu = s1[m] / s0[m];
        const double new_shape = IG ? s0[m] / (s2[m] - s0[m] * s0[m] / s1[m])
                                    : sqrt(s2[m] / s0[m] - new_mu * new_mu);
        const int bad = check_component<IG>(new_mu, new_shape, spread);
        if (bad) return bad;
        alpha[m] = s0[m] / (double)n;
        mu[m] = new_mu;
        shape[m] = new_shape;
    }
    return 0;
}

// family.rs::terms: c_m = log alpha_m + (IG: (log lambda - log 2pi)/2 ;
// Normal: -log sigma - log(2pi)/2), k_m = lambda / (2 mu^2) or 1 / (2 sigma^2).
template <int K, int IG>
__device__ __forceinline__ void terms(const double alpha[K], const double mu[K], const double shape[K],
                                      double c[K], double k[K]) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        if (IG) {
            c[m] = log(alpha[m]) + 0.5 * (log(shape[m]) - LN_2PI);
            k[m] = shape[m] / (2.0 * mu[m] * mu[m]);
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
    double ll_max, prod;
    long long prod_exp;

    __device__ __forceinline__ void reset() {
#pragma unroll
        for (int m = 0; m < K; ++m) s0[m] = s1[m] = s2[m] = 0.0;
        ll_max = 0.0;
        prod = 1.0;
        prod_exp = 0;
    }

    // sum(max) + log(prod): this lane's share of the pass's log-likelihood
    __device__ __forceinline__ double loglik() const { return ll_max + ((double)prod_exp * LN_2 + log(prod)); }
};

// em.rs Phase: where an accelerated fit is in its SQUAREM cycle.
#define PHASE_FIRST 0
#define PHASE_SECOND 1
#define PHASE_EXTRAPOLATED 2

// A fit's parameters and the per-component terms of family.rs::terms, and
// em.rs EmState's SQUAREM scalars. Its kept parameters (θ0 in PHASE_SECOND,
// θ2 in PHASE_EXTRAPOLATED) live in the fit's row of out_params, unused until
// the fit is stored: only the end of a pass touches them, so they cost the
// per-observation loop no registers.
template <int K>
struct State {
    double alpha[K], mu[K], shape[K], c[K], kk[K];
    double prev, ll1, step, step_max;
    int iterations, phase;
    bool has_prev;
    // false while a mixed-precision fit still runs on fp32 exponentials
    bool exact;
};

// One observation of the E-step (estep.rs): responsibilities of the K
// components, accumulated into the pass's sums. The largest term's
// exponential is exp(0) = 1, so K - 1 are computed (for K = 2, one).
// Mixed precision (MIXED and not yet `exact`): the exponentials in fp32,
// everything else, sums included, in fp64.
template <int K, int IG, int MIXED>
__device__ __forceinline__ double expo(double x, bool exact) {
    if (MIXED && !exact) return (double)__expf((float)x);
    return exp_nonpos(x);
}

template <int K, int IG, int MIXED>
__device__ __forceinline__ void accumulate(const double2 xg, const State<K>& st, Pass<K>& p) {
    double l[K];
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const double q = IG ? q_invgauss(xg.x, xg.y, st.mu[m]) : q_normal(xg.x, xg.y, st.mu[m]);
        l[m] = st.c[m] - st.kk[m] * q;
    }
    double mx, sum, r[K];
    if (K == 2) {
        const bool first = l[0] >= l[1];
        mx = first ? l[0] : l[1];
        const double e = expo<K, IG, MIXED>(first ? l[1] - l[0] : l[0] - l[1], st.exact);
        sum = 1.0 + e;
        const double inv = 1.0 / sum;
        r[0] = first ? inv : e * inv;
        r[K - 1] = first ? e * inv : inv;
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
        for (int j = 0; j < K - 1; ++j) o[j] = expo<K, IG, MIXED>((j < am ? l[j] : l[j + 1]) - mx, st.exact);
        sum = 0.0;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            l[m] = m == am ? 1.0 : (m < am ? o[m < K - 1 ? m : 0] : o[m > 0 ? m - 1 : 0]);
            sum += l[m];
        }
        const double inv = 1.0 / sum;
#pragma unroll
        for (int m = 0; m < K; ++m) r[m] = l[m] * inv;
    } else {
        // K = 1: the one responsibility is 1
        mx = l[0];
        sum = 1.0;
        r[0] = 1.0;
    }
#pragma unroll
    for (int m = 0; m < K; ++m) {
        p.s0[m] += r[m];
        p.s1[m] += r[m] * xg.x;
        p.s2[m] += r[m] * xg.y;
    }
    p.ll_max += mx;
    p.prod *= sum;
    // move prod's binary exponent into prod_exp: prod stays in [1, 2)
    const long long b = __double_as_longlong(p.prod);
    p.prod_exp += ((b >> 52) & 0x7ff) - 1023;
    p.prod = __longlong_as_double((b & 0x800fffffffffffffLL) | 0x3ff0000000000000LL);
}

// em.rs EmState::advance: given the pass's log-likelihood and sums for
// the current parameters, stop (returns the outcome code) or move to the
// next iterate (returns -1): the M-step's parameters, or with ACC = 1
// (control$accelerate) the SQUAREM cycle's. `keep` is the fit's store of 3K
// values (alpha[K], mu[K], shape[K]).
//
// The extrapolation is em.rs::extrapolate, component by component: with
// θ0 in keep, θ1 the current parameters and θ2 the M-step's, SqS3's step
// s = ‖r‖/‖v‖ over (alpha, mu, log shape), at most step_max, and
// θ' = θ0 + 2s·r + s²·v, written over θ1 while θ2 replaces θ0 in keep; if
// s is not above 1 or θ' is not a usable mixture, the cycle ends at θ2.
//
// In mixed precision a fit whose log-likelihood stops rising (converges or
// falls, where fp32 rounding is as large as the steps) is suspect: it goes on
// from the same parameters in fp64, which decides how it ends.
template <int K, int IG, int ACC>
__device__ __forceinline__ int advance(State<K>& st, double loglik, const Pass<K>& p, int n, double spread,
                                       int max_iters, double epsilon, double* __restrict__ keep) {
    if (!st.exact && (!isfinite(loglik) || (st.has_prev && loglik - st.prev < epsilon))) {
        st.exact = true;
        st.has_prev = false;
        return -1;
    }
    double a2[K], m2[K], sh2[K];
    if (ACC && st.phase == PHASE_EXTRAPOLATED) {
        // accepted when θ' is at least as likely as θ1 and its M-step is
        // usable; otherwise the cycle ends at θ2
        const bool ok = loglik >= st.ll1 && m_step<K, IG>(p.s0, p.s1, p.s2, n, spread, a2, m2, sh2) == 0;
        const bool reached = st.step >= st.step_max;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            st.alpha[m] = ok ? a2[m] : keep[m];
            st.mu[m] = ok ? m2[m] : keep[K + m];
            st.shape[m] = ok ? sh2[m] : keep[2 * K + m];
        }
        st.prev = ok ? loglik : st.ll1;
        if (reached) st.step_max = ok ? st.step_max * SQUAREM_STEP_GROWTH : fmax(st.step_max / SQUAREM_STEP_GROWTH, SQUAREM_STEP_GROWTH);
        st.has_prev = true;
        st.phase = PHASE_FIRST;
        st.iterations += 1;
        terms<K, IG>(st.alpha, st.mu, st.shape, st.c, st.kk);
        return -1;
    }
    if (!isfinite(loglik)) return OUTCOME_NOT_FINITE;
    if (st.has_prev && loglik < st.prev - FALL_TOLERANCE * (fabs(st.prev) + (double)n)) return OUTCOME_LOGLIK_FELL;
    if (st.has_prev && loglik - st.prev < epsilon) return OUTCOME_CONVERGED;
    if (st.iterations >= max_iters) return OUTCOME_MAX_ITERS;
    const int bad = m_step<K, IG>(p.s0, p.s1, p.s2, n, spread, a2, m2, sh2);
    if (bad) return bad;
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
        }
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
            }
            const double step = vv > 0.0 ? fmin(sqrt(rr / vv), st.step_max) : 0.0;
            extrapolated = step > 1.0;
            if (extrapolated) {
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
                    extrapolated = extrapolated && st.alpha[m] * (double)n >= MIN_COMPONENT_OBS &&
                                   check_component<IG>(st.mu[m], st.shape[m], spread) == 0;
                }
                st.step = step;
            }
        }
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
        }
    }
    terms<K, IG>(st.alpha, st.mu, st.shape, st.c, st.kk);
    return -1;
}

// The kernels' shared arguments (see the layout above).
struct Batch {
    const double2* obs;
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
};

template <int K, int IG, int MIXED>
__device__ __forceinline__ void load_fit(const Batch& b, int f, State<K>& st) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        st.alpha[m] = b.init[(size_t)f * 3 * K + m];
        st.mu[m] = b.init[(size_t)f * 3 * K + K + m];
        st.shape[m] = b.init[(size_t)f * 3 * K + 2 * K + m];
    }
    terms<K, IG>(st.alpha, st.mu, st.shape, st.c, st.kk);
    st.iterations = 0;
    st.has_prev = false;
    st.prev = 0.0;
    st.exact = !MIXED;
    st.phase = PHASE_FIRST;
    st.ll1 = 0.0;
    st.step = 1.0;
    st.step_max = SQUAREM_STEP_GROWTH;
}

// screen.rs Screen::spurious: a component far narrower than the widest, or
// small (fewer than screen_count expected observations) and narrow.
template <int K, int IG>
__device__ __forceinline__ int spurious(const Batch& b, const State<K>& st, int n) {
    double sd[K];
    double largest = 0.0;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        sd[m] = IG ? sqrt(st.mu[m] * st.mu[m] * st.mu[m] / st.shape[m]) : st.shape[m];  // family.rs::component_sd
        largest = fmax(largest, sd[m]);
    }
    int any = 0;
#pragma unroll
    for (int m = 0; m < K; ++m) {
        const bool narrow = sd[m] < b.screen_ratio * largest;
        const bool small = (double)n * st.alpha[m] < b.screen_count && sd[m] < b.screen_count_ratio * largest;
        any |= narrow || small;
    }
    return any;
}

template <int K, int IG>
__device__ __forceinline__ void store_fit(const Batch& b, int f, const State<K>& st, double loglik, int outcome, int n) {
#pragma unroll
    for (int m = 0; m < K; ++m) {
        b.out_params[(size_t)f * 3 * K + m] = st.alpha[m];
        b.out_params[(size_t)f * 3 * K + K + m] = st.mu[m];
        b.out_params[(size_t)f * 3 * K + 2 * K + m] = st.shape[m];
    }
    b.out_ll[f] = loglik;
    b.out_info[FIT_INFO * f] = st.iterations;
    b.out_info[FIT_INFO * f + 1] = outcome;
    b.out_info[FIT_INFO * f + 2] = spurious<K, IG>(b, st, n);
}

// One lane per fit, one observation per step (see the top of the file).
template <int K, int IG, int MIXED, int ACC>
__device__ __forceinline__ void em_lane(const Batch& b) {
    int fit = blockIdx.x * blockDim.x + threadIdx.x;
    if (fit >= b.n_fits) return;
    State<K> st;
    Pass<K> p;
    int d = b.fit_ds[fit];
    const double2* x = b.obs + b.ds_offset[d];
    int n = b.ds_n[d];
    load_fit<K, IG, MIXED>(b, fit, st);
    p.reset();
    int i = 0;
    // Each step loads the next observation (after the last, the first of
    // the next pass) before it uses this one: the load's latency is hidden
    // behind this observation's arithmetic instead of stalling the lane.
    double2 cur = __ldg(x);
    for (;;) {
        const double2 next = __ldg(x + (i + 1 < n ? i + 1 : 0));
        accumulate<K, IG, MIXED>(cur, st, p);
        cur = next;
        if (++i < n) continue;
        // end of a pass
        const double loglik = p.loglik() + b.ds_hsum[d];
        const int outcome = advance<K, IG, ACC>(st, loglik, p, n, b.ds_spread[d], b.max_iters, b.epsilon, b.out_params + (size_t)fit * 3 * K);
        if (outcome >= 0) {
            store_fit<K, IG>(b, fit, st, loglik, outcome, n);
            fit = (int)atomicAdd(b.next, 1u);
            if (fit >= b.n_fits) return;
            d = b.fit_ds[fit];
            x = b.obs + b.ds_offset[d];
            n = b.ds_n[d];
            load_fit<K, IG, MIXED>(b, fit, st);
            cur = __ldg(x);
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
template <int K, int IG, int MIXED, int ACC>
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
        load_fit<K, IG, MIXED>(b, fit, st);
        for (;;) {
            p.reset();
            // as in em_lane, the next observation is loaded before this one is used
            if (sub < n) {
                double2 cur = __ldg(x + sub);
                for (int i = sub; i < n; i += width) {
                    const double2 next = __ldg(x + (i + width < n ? i + width : sub));
                    accumulate<K, IG, MIXED>(cur, st, p);
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
            const int outcome = advance<K, IG, ACC>(st, loglik, p, n, b.ds_spread[d], b.max_iters, b.epsilon, b.out_params + (size_t)fit * 3 * K);
            if (outcome >= 0) {
                if (sub == 0) store_fit<K, IG>(b, fit, st, loglik, outcome, n);
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

// The host appends one instantiation per (family, K, precision) it needs
// (gpu/kernels.rs), e.g. EM_BATCHED(2, 1, 0, 0) for the 2-component inverse
// Gaussian in fp64, plain EM, which defines em_batched_lane and em_batched_group.
#define EM_BATCHED(K, IG, MIXED, ACC)                                                       \
    extern "C" __global__ void __launch_bounds__(BATCHED_THREADS) em_batched_lane(const Batch b) {    \
        em_lane<K, IG, MIXED, ACC>(b);                                                     \
    }                                                                                      \
    extern "C" __global__ void __launch_bounds__(BATCHED_THREADS) em_batched_group(const Batch b) {   \
        em_group<K, IG, MIXED, ACC>(b);                                                    \
    }
