// Kernels of the cuda-batched engine: whole EM fits on the device.
//
// Each thread (lane) owns one (dataset, start) fit at a time and runs it to
// its end: E-step passes, M-step, convergence test and degeneracy checks,
// iteration after iteration, mirroring src/start.rs (EmState::advance) and
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
// Layout: obs[ds_offset[d] .. ds_offset[d] + ds_n[d]] is dataset d; fit f is
// a start of dataset fit_ds[f] beginning at init[f][3K] (alpha[K], mu[K],
// shape[K]); results go to out_params[f][3K], out_ll[f], out_info[f] =
// {iterations, outcome} (outcome codes: start.rs Outcome::code). Lanes stop
// at the end of a pass once the host sets *stop (an interrupt).

#define OUTCOME_CONVERGED 0
#define OUTCOME_MAX_ITERS 1
#define OUTCOME_WEIGHT_COLLAPSED 2
#define OUTCOME_SPREAD_COLLAPSED 3
#define OUTCOME_NOT_FINITE 4
#define OUTCOME_LOGLIK_FELL 5

#define MIN_COMPONENT_OBS 2.0
#define MIN_RELATIVE_SD 1e-6
#define LN_2PI 1.8378770664093453
#define LN_2 0.6931471805599453

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

template <int K, int IG>
__device__ __forceinline__ void em_batched_body(
    const double2* __restrict__ obs, const long long* __restrict__ ds_offset, const int* __restrict__ ds_n,
    const double* __restrict__ ds_hsum, const double* __restrict__ ds_spread, const int* __restrict__ fit_ds,
    const double* __restrict__ init, double* __restrict__ out_params, double* __restrict__ out_ll,
    int* __restrict__ out_info, int n_fits, int max_iters, double epsilon, unsigned int* __restrict__ next,
    const volatile int* stop) {
    int fit = blockIdx.x * blockDim.x + threadIdx.x;
    // per-fit state
    double alpha[K], mu[K], shape[K], c[K], kk[K];
    double s0[K], s1[K], s2[K];
    const double2* x = obs;
    int n = 0, i = 0, iterations = 0;
    double spread = 0.0, hsum = 0.0, prev = 0.0;
    bool has_prev = false;
    // per-pass accumulators
    double ll_max = 0.0, prod = 1.0;
    long long prod_exp = 0;

    // load fit `f`'s dataset and starting values; false when the queue is empty
    auto take = [&](int f) -> bool {
        if (f >= n_fits) return false;
        const int d = fit_ds[f];
        x = obs + ds_offset[d];
        n = ds_n[d];
        hsum = ds_hsum[d];
        spread = ds_spread[d];
#pragma unroll
        for (int m = 0; m < K; ++m) {
            alpha[m] = init[(size_t)f * 3 * K + m];
            mu[m] = init[(size_t)f * 3 * K + K + m];
            shape[m] = init[(size_t)f * 3 * K + 2 * K + m];
        }
        terms<K, IG>(alpha, mu, shape, c, kk);
        iterations = 0;
        has_prev = false;
        return true;
    };
    auto finish = [&](int f, double loglik, int outcome) {
#pragma unroll
        for (int m = 0; m < K; ++m) {
            out_params[(size_t)f * 3 * K + m] = alpha[m];
            out_params[(size_t)f * 3 * K + K + m] = mu[m];
            out_params[(size_t)f * 3 * K + 2 * K + m] = shape[m];
        }
        out_ll[f] = loglik;
        out_info[2 * f] = iterations;
        out_info[2 * f + 1] = outcome;
    };
    auto reset_pass = [&]() {
        i = 0;
        ll_max = 0.0;
        prod = 1.0;
        prod_exp = 0;
#pragma unroll
        for (int m = 0; m < K; ++m) s0[m] = s1[m] = s2[m] = 0.0;
    };

    bool alive = take(fit);
    reset_pass();
    while (alive) {
        // one observation of the E-step (estep.rs / em_common.cuh)
        const double2 xg = __ldg(x + i);
        double l[K];
        double mx = -1.0e308;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            const double q = IG ? q_invgauss(xg.x, xg.y, mu[m]) : q_normal(xg.x, xg.y, mu[m]);
            l[m] = c[m] - kk[m] * q;
            mx = l[m] > mx ? l[m] : mx;
        }
        double sum = 0.0;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            l[m] = exp_nonpos(l[m] - mx);
            sum += l[m];
        }
        const double inv = 1.0 / sum;
#pragma unroll
        for (int m = 0; m < K; ++m) {
            const double r = l[m] * inv;
            s0[m] += r;
            s1[m] += r * xg.x;
            s2[m] += r * xg.y;
        }
        ll_max += mx;
        prod *= sum;
        {
            // move prod's binary exponent into prod_exp: prod stays in [1, 2)
            const long long b = __double_as_longlong(prod);
            prod_exp += ((b >> 52) & 0x7ff) - 1023;
            prod = __longlong_as_double((b & 0x800fffffffffffffLL) | 0x3ff0000000000000LL);
        }
        if (++i < n) continue;

        // end of a pass: start.rs EmState::advance
        const double loglik = ll_max + ((double)prod_exp * LN_2 + log(prod)) + hsum;
        int outcome = -1;
        if (!isfinite(loglik)) {
            outcome = OUTCOME_NOT_FINITE;
        } else if (has_prev && loglik < prev - 1e-10 * (fabs(prev) + (double)n)) {
            outcome = OUTCOME_LOGLIK_FELL;
        } else if (has_prev && loglik - prev < epsilon) {
            outcome = OUTCOME_CONVERGED;
        } else if (iterations >= max_iters) {
            outcome = OUTCOME_MAX_ITERS;
        } else {
            double a2[K], m2[K], sh2[K];
            const int bad = m_step<K, IG>(s0, s1, s2, n, spread, a2, m2, sh2);
            if (bad) {
                outcome = bad;
            } else {
#pragma unroll
                for (int m = 0; m < K; ++m) {
                    alpha[m] = a2[m];
                    mu[m] = m2[m];
                    shape[m] = sh2[m];
                }
                terms<K, IG>(alpha, mu, shape, c, kk);
                iterations += 1;
                prev = loglik;
                has_prev = true;
            }
        }
        if (outcome >= 0) {
            finish(fit, loglik, outcome);
            fit = (int)atomicAdd(next, 1u);
            alive = take(fit);
        }
        // the host sets *stop when the user interrupts; unfinished fits are discarded
        if (*stop) break;
        reset_pass();
    }
}

#define EM_BATCHED(NAME, K, IG)                                                                              \
    extern "C" __global__ void __launch_bounds__(128) NAME(                                               \
        const double2* obs, const long long* ds_offset, const int* ds_n, const double* ds_hsum,            \
        const double* ds_spread, const int* fit_ds, const double* init, double* out_params, double* out_ll, \
        int* out_info, int n_fits, int max_iters, double epsilon, unsigned int* next,                       \
        const volatile int* stop) {                                                                         \
        em_batched_body<K, IG>(obs, ds_offset, ds_n, ds_hsum, ds_spread, fit_ds, init, out_params, out_ll,  \
                               out_info, n_fits, max_iters, epsilon, next, stop);                          \
    }

// The host appends one instantiation, e.g. EM_BATCHED(em_batched, 2, 1), per
// (family, K) it needs (gpu/kernels.rs).
