// Multivariate Normal and t mixtures on the device (bulkem_core::mv): one warp
// runs one (dataset, start) fit's plain EM to its end, mirroring mv/em.rs
// step for step: the E-step solves each observation against each
// component's Cholesky factor and sums about the current means, the M-step
// of the covariance structure S (0 full, 1 tied, 2 diagonal, 3 spherical:
// mv::Structure::kernel_code), the stop rule of em.rs. The lanes share the
// observations (lane l takes l, l + 32, ...: coalesced reads) and read the
// parameters from shared memory; each keeps its sums in registers, a
// butterfly of shuffles gives every lane the same totals, and lane m < K
// takes component m's M-step. (A thread per fit, with the parameters and sums of each in
// its own registers, spilled them: 9 s of kernel for workload M1 on an
// H100, inst/bench/results-mv-gpu.md.) Starts come from the host
// (mv/starts.rs); the winner is chosen on the host. The prelude
// (gpu/prelude.rs) defines every constant used here, special.cuh the
// special functions.
//
// T is the components' family (mv::Model::kernel_family): 0 Normal, 1
// Student's t with nu estimated, 2 t with nu fixed. A t component weighs
// each observation by u = (nu + D)/(nu + delta) in S1 and S2 and sums
// Su = sum r u, B = sum r log(1 + delta/nu) and sum r u^2 for nu's step
// (mv/em.rs's df_step).
//
// A dataset is D variables of n values each, variable-major, standardised.
// A fit's row: alpha (K), mu (K x D, component-major), sigma (K x D x D,
// column-major), as mv::MvParams lays them out, for t nu (K), then with N = 1 the noise
// component's weight (a uniform over the dataset's box, whose log-density
// in the standardised units, mv::MvData::log_noise, comes per dataset).
//
// W = 1: the observations are weighted (mv::MvData::w, one weight per
// observation, the datasets' weights one after the other as their values
// are), and every sum of the E-step takes r times the weight; nobs is the
// dataset's total weight (n without weights), the M-step's and the stop
// rule's n.

#define TRI(D) ((D) * ((D) + 1) / 2)
// t's per-component arrays: K of them for t, one unused for Normal
#define TK(T, K) ((T) ? (K) : 1)

template <int K, int D, int T>
struct MvState {
    double noise;       // the noise component's weight (0 without one)
    double noise_term;  // its log(weight x density), the E-step's
    double alpha[K];
    double mean[K][D];
    double cov[K][TRI(D)];   // the M-step's covariance, packed lower triangle
    double chol[K][TRI(D)];  // its Cholesky factor
    double inv_diag[K][D];
    double log_const[K];
    // t (mv/model.rs's TTerm): nu, (nu + D)/2, 1/nu, (nu + D)/nu
    double df[TK(T, K)], half[TK(T, K)], inv_df[TK(T, K)], u0[TK(T, K)];
};

__device__ __forceinline__ int tri(int j, int l) { return j * (j + 1) / 2 + l; }

// The Cholesky factor of component m of f, its reciprocal pivots and
// log alpha - D/2 log 2 pi - log |L| (t: log alpha + log Gamma((nu + D)/2)
// - log Gamma(nu/2) - D/2 log(nu pi) - log |L|); false if a pivot is not
// positive or is below MIN_RELATIVE_SD (a direction lost: the data are
// standardised), or a weight is not positive: mv/model.rs's terms and
// mv/em.rs's check.
template <int K, int D, int T>
__device__ __forceinline__ bool factor_one(MvState<K, D, T>& f, int m) {
    double log_det_half = 0.0;
#pragma unroll
    for (int j = 0; j < D; j++) {
        double left = f.cov[m][tri(j, j)];
#pragma unroll
        for (int c = 0; c < j; c++) left -= f.chol[m][tri(j, c)] * f.chol[m][tri(j, c)];
        if (!(left > 0.0) || !isfinite(left)) return false;
        const double pivot = sqrt(left);
        if (!(pivot >= MIN_RELATIVE_SD)) return false;
        f.chol[m][tri(j, j)] = pivot;
        f.inv_diag[m][j] = 1.0 / pivot;
        log_det_half += log(pivot);
#pragma unroll
        for (int i = j + 1; i < D; i++) {
            double v = f.cov[m][tri(i, j)];
#pragma unroll
            for (int c = 0; c < j; c++) v -= f.chol[m][tri(i, c)] * f.chol[m][tri(j, c)];
            f.chol[m][tri(i, j)] = v / pivot;
        }
    }
    if (!(f.alpha[m] > 0.0)) return false;
    if (T) {
        const double df = f.df[T ? m : 0];
        if (!(df >= DF_MIN && df <= DF_MAX)) return false;
        f.half[T ? m : 0] = (df + D) / 2.0;
        f.inv_df[T ? m : 0] = 1.0 / df;
        f.u0[T ? m : 0] = (df + D) / df;
        f.log_const[m] = log(f.alpha[m]) + ln_gamma(f.half[T ? m : 0]) - ln_gamma(df / 2.0)
                         - 0.5 * D * (log(df) + LN_PI) - log_det_half;
    } else {
        f.log_const[m] = log(f.alpha[m]) - 0.5 * D * LN_2PI - log_det_half;
    }
    return true;
}

// Every component's factor, in order (`factor_one`).
template <int K, int D, int T>
__device__ bool factor(MvState<K, D, T>& f) {
#pragma unroll
    for (int m = 0; m < K; m++)
        if (!factor_one(f, m)) return false;
    return true;
}

// mv/em.rs's df_step, step for step: a Newton step in log nu on sum r log
// t(x; nu) (bounded by DF_STEP_MAX), or ECM's root where that is not
// concave in log nu.
__device__ double df_step(double df0, int d, double nk, double su, double b, double su2) {
    const double dd = (double)d;
    const double half = (df0 + dd) / 2.0;
    double di_h, tri_h, di_0, tri_0;
    digammas(half, di_h, tri_h);
    digammas(df0 / 2.0, di_0, tri_0);
    const double g = 0.5 * (nk * (di_h - di_0) - b + nk - su);
    const double h = 0.5 * (0.5 * nk * (tri_h - tri_0) + nk / df0 + (su2 - 2.0 * su) / (df0 + dd));
    const double g_eta = df0 * g, h_eta = df0 * df0 * h + df0 * g;
    if (h_eta < 0.0 && isfinite(g_eta)) {
        double step = -g_eta / h_eta;
        step = step < -DF_STEP_MAX ? -DF_STEP_MAX : (step > DF_STEP_MAX ? DF_STEP_MAX : step);
        const double df = df0 * exp(step);
        return df < DF_MIN ? DF_MIN : (df > DF_MAX ? DF_MAX : df);
    }
    const double s_log = nk * log((df0 + dd) / df0) - b - su;
    return df_root(-1.0 - (s_log + nk * (di_h - log(half))) / nk);
}

#define FULL_MASK 0xffffffffu

// The sum over the warp's lanes, the same bits in every lane (a + b = b + a
// exactly at every step of the butterfly).
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(FULL_MASK, v, off);
    return v;
}

// v[lane] for the lanes below K (v[0] above): a register array read at
// the lane's index without local memory.
template <int K>
__device__ __forceinline__ double of_lane(const double (&v)[K], int lane) {
    double out = v[0];
#pragma unroll
    for (int m = 1; m < K; m++)
        if (lane == m) out = v[m];
    return out;
}

// The M-step from the sums about f's means into g (mv/em.rs's m_step and
// constrain, then the factor): the outcome code of a degenerate update, or
// -1, the same in every lane. Lane m < K takes component m's update and
// factor, with the same arithmetic as one lane taking them in turn; a
// component's failure is reported as that loop would have (the first
// component's code, then the factor's).
template <int K, int D, int S, int N, int T>
__device__ __forceinline__ int m_step(const MvState<K, D, T>& f, MvState<K, D, T>& g, const double (&s0)[K],
                                      const double (&s1)[K][D], const double (&s2)[K][TRI(D)],
                                      const double (&su)[TK(T, K)], const double (&sb)[TK(T, K)],
                                      const double (&su2)[TK(T, K)], double s_noise, double log_noise, double nobs,
                                      int lane) {
    const int m = lane < K ? lane : 0;
    const bool mine = lane < K;
    const double noise = N ? s_noise / nobs : 0.0;
    if (lane == 0) g.noise = noise;
    int code = -1;
    const double nk = of_lane(s0, m);
    if (!(nk >= MIN_COMPONENT_OBS)) {
        code = isfinite(nk) ? OUTCOME_WEIGHT_COLLAPSED : OUTCOME_NOT_FINITE;
    } else {
        // the component's sums, read at its lane
        double s1m[D], s2m[TRI(D)];
#pragma unroll
        for (int j = 0; j < D; j++) {
            s1m[j] = s1[0][j];
#pragma unroll
            for (int q = 1; q < K; q++)
                if (m == q) s1m[j] = s1[q][j];
        }
#pragma unroll
        for (int t = 0; t < TRI(D); t++) {
            s2m[t] = s2[0][t];
#pragma unroll
            for (int q = 1; q < K; q++)
                if (m == q) s2m[t] = s2[q][t];
        }
        const double sw = T ? of_lane(su, m) : nk;  // the weights' sum: Su, or S0
        double shift[D], mean[D], cov[TRI(D)];
#pragma unroll
        for (int j = 0; j < D; j++) {
            shift[j] = s1m[j] / sw;
            mean[j] = f.mean[m][j] + shift[j];
        }
#pragma unroll
        for (int j = 0; j < D; j++)
#pragma unroll
            for (int t = 0; t <= j; t++)
                cov[tri(j, t)] = T ? s2m[tri(j, t)] / nk - shift[j] * shift[t] * (sw / nk)
                                   : s2m[tri(j, t)] / nk - shift[j] * shift[t];
        double new_df = T ? f.df[T ? m : 0] : 0.0;
        if (T == 1) {
            new_df = df_step(f.df[T ? m : 0], D, nk, sw, of_lane(sb, m), of_lane(su2, m));
            if (!(new_df >= DF_MIN && new_df <= DF_MAX)) code = OUTCOME_NOT_FINITE;
        }
        if (S == 2 || S == 3) {
            double mean_var = 0.0;
#pragma unroll
            for (int j = 0; j < D; j++) mean_var += cov[tri(j, j)];
            mean_var /= (double)D;
#pragma unroll
            for (int j = 0; j < D; j++) {
#pragma unroll
                for (int t = 0; t < j; t++) cov[tri(j, t)] = 0.0;
                if (S == 3) cov[tri(j, j)] = mean_var;
            }
        }
        if (mine) {
            g.alpha[m] = nk / nobs;
#pragma unroll
            for (int j = 0; j < D; j++) g.mean[m][j] = mean[j];
#pragma unroll
            for (int t = 0; t < TRI(D); t++) g.cov[m][t] = cov[t];
            if (T) g.df[T ? m : 0] = new_df;
        }
    }
    // the first component's failure, as the loop in turn would stop at it
    int first = -1;
#pragma unroll
    for (int q = K - 1; q >= 0; q--) {
        const int c = __shfl_sync(FULL_MASK, code, q);
        if (c >= 0) first = c;
    }
    if (first >= 0) return first;
    __syncwarp();
    if (S == 1) {
        // one covariance, the components' pooled by their weights (every
        // lane sums in the same order)
        double pooled[TRI(D)];
#pragma unroll
        for (int t = 0; t < TRI(D); t++) pooled[t] = 0.0;
#pragma unroll
        for (int q = 0; q < K; q++)
#pragma unroll
            for (int t = 0; t < TRI(D); t++) pooled[t] += g.alpha[q] * g.cov[q][t];
        // the components' share of the data, without the noise's
        if (N && noise > 0.0) {
            double share = 0.0;
#pragma unroll
            for (int q = 0; q < K; q++) share += g.alpha[q];
#pragma unroll
            for (int t = 0; t < TRI(D); t++) pooled[t] /= share;
        }
        __syncwarp();
        if (mine) {
#pragma unroll
            for (int t = 0; t < TRI(D); t++) g.cov[m][t] = pooled[t];
        }
        __syncwarp();
    }
    const bool factored = !mine || factor_one(g, m);
    if (lane == 0) g.noise_term = N ? log(noise) + log_noise : 0.0;
    __syncwarp();
    return __all_sync(FULL_MASK, factored) ? -1 : OUTCOME_SPREAD_COLLAPSED;
}

// One fit on the calling warp; `a` and `b` are the warp's two states in
// shared memory (the current parameters and the next).
template <int K, int D, int S, int N, int T, int W>
__device__ void em_mv_fit(const double* __restrict__ z, const double* __restrict__ wt, long long n, double nobs,
                          double log_noise, const double* __restrict__ init,
                          double* __restrict__ out, double* __restrict__ out_loglik, int* __restrict__ out_info,
                          int max_iters, double epsilon, MvState<K, D, T>* a, MvState<K, D, T>* b, int* flag) {
    const int lane = threadIdx.x & 31;
    // where a row's t and noise entries sit
    const int at_df = K + K * D + K * D * D;
    const int at_noise = at_df + (T ? K : 0);
    MvState<K, D, T>* f = a;
    MvState<K, D, T>* g = b;
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < K; m++) {
            f->alpha[m] = init[m];
#pragma unroll
            for (int j = 0; j < D; j++) f->mean[m][j] = init[K + m * D + j];
#pragma unroll
            for (int j = 0; j < D; j++)
#pragma unroll
                for (int l = 0; l <= j; l++) f->cov[m][tri(j, l)] = init[K + K * D + m * D * D + j + D * l];
            if (T) f->df[T ? m : 0] = init[at_df + m];
        }
        f->noise = N ? init[at_noise] : 0.0;
        f->noise_term = N ? log(f->noise) + log_noise : 0.0;
        *flag = factor(*f) ? -1 : OUTCOME_SPREAD_COLLAPSED;
    }
    __syncwarp();
    int outcome = *flag;
    int iterations = 0;
    double loglik = 0.0 / 0.0;
    bool have_previous = false;
    double previous = 0.0;
    while (outcome < 0) {
        double s0[K], s1[K][D], s2[K][TRI(D)], su[TK(T, K)], sb[TK(T, K)], su2[TK(T, K)];
#pragma unroll
        for (int m = 0; m < TK(T, K); m++) su[m] = sb[m] = su2[m] = 0.0;
#pragma unroll
        for (int m = 0; m < K; m++) {
            s0[m] = 0.0;
#pragma unroll
            for (int j = 0; j < D; j++) s1[m][j] = 0.0;
#pragma unroll
            for (int t = 0; t < TRI(D); t++) s2[m][t] = 0.0;
        }
        double ll = 0.0;
        double s_noise = 0.0;
        for (long long i = lane; i < n; i += 32) {
            double x[D];
#pragma unroll
            for (int j = 0; j < D; j++) x[j] = z[j * n + i];
            double l[K], u[TK(T, K)], l1p[TK(T, K)];
#pragma unroll
            for (int m = 0; m < K; m++) {
                double y[D];
                double q = 0.0;
#pragma unroll
                for (int j = 0; j < D; j++) {
                    double v = x[j] - f->mean[m][j];
#pragma unroll
                    for (int c = 0; c < j; c++) v -= f->chol[m][tri(j, c)] * y[c];
                    y[j] = v * f->inv_diag[m][j];
                    q += y[j] * y[j];
                }
                if (T) {
                    const int mt = T ? m : 0;
                    const double zq = q * f->inv_df[mt];
                    l1p[mt] = log1p(zq);
                    u[mt] = f->u0[mt] / (1.0 + zq);
                    l[m] = f->log_const[m] - f->half[mt] * l1p[mt];
                } else {
                    l[m] = f->log_const[m] - 0.5 * q;
                }
            }
            double top = l[0];
#pragma unroll
            for (int m = 1; m < K; m++) top = fmax(top, l[m]);
            if (N) top = fmax(top, f->noise_term);
            double total = 0.0;
#pragma unroll
            for (int m = 0; m < K; m++) {
                l[m] = exp(l[m] - top);
                total += l[m];
            }
            const double e_noise = N ? exp(f->noise_term - top) : 0.0;
            if (N) total += e_noise;
            // weighted: every sum below takes r times the weight
            const double wi = W ? wt[i] : 1.0;
            if (W) {
                ll += wi * (top + log(total));
            } else {
                ll += top + log(total);
            }
            const double inv = wi / total;
            if (N) s_noise += e_noise * inv;
#pragma unroll
            for (int m = 0; m < K; m++) {
                const double r = l[m] * inv;
                s0[m] += r;
                // the weight of S1 and S2: r, or for t r u
                double w = r;
                if (T) {
                    const int mt = T ? m : 0;
                    w = r * u[mt];
                    su[mt] += w;
                    sb[mt] += r * l1p[mt];
                    su2[mt] += w * u[mt];
                }
                double c[D];
#pragma unroll
                for (int j = 0; j < D; j++) {
                    c[j] = x[j] - f->mean[m][j];
                    const double rc = w * c[j];
                    s1[m][j] += rc;
#pragma unroll
                    for (int t = 0; t <= j; t++) s2[m][tri(j, t)] += rc * c[t];
                }
            }
        }
        ll = warp_sum(ll);
        if (N) s_noise = warp_sum(s_noise);
#pragma unroll
        for (int m = 0; m < K; m++) {
            s0[m] = warp_sum(s0[m]);
#pragma unroll
            for (int j = 0; j < D; j++) s1[m][j] = warp_sum(s1[m][j]);
#pragma unroll
            for (int t = 0; t < TRI(D); t++) s2[m][t] = warp_sum(s2[m][t]);
        }
        if (T) {
#pragma unroll
            for (int m = 0; m < TK(T, K); m++) {
                su[m] = warp_sum(su[m]);
                sb[m] = warp_sum(sb[m]);
                su2[m] = warp_sum(su2[m]);
            }
        }
        loglik = ll;
        if (!isfinite(ll)) {
            outcome = OUTCOME_NOT_FINITE;
            break;
        }
        if (have_previous) {
            if (ll < previous - FALL_TOLERANCE * (fabs(previous) + nobs)) {
                outcome = OUTCOME_LOGLIK_FELL;
                break;
            }
            if (ll - previous < epsilon) {
                outcome = OUTCOME_CONVERGED;
                break;
            }
        }
        if (iterations >= max_iters) {
            outcome = OUTCOME_MAX_ITERS;
            break;
        }
        // the M-step into the other state: a degenerate update leaves the
        // parameters the last E-step was taken at, as mv/em.rs returns them
        outcome = m_step<K, D, S, N, T>(*f, *g, s0, s1, s2, su, sb, su2, s_noise, log_noise, nobs, lane);
        if (outcome >= 0) break;
        MvState<K, D, T>* t = f;
        f = g;
        g = t;
        iterations++;
        previous = ll;
        have_previous = true;
    }
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < K; m++) {
            out[m] = f->alpha[m];
#pragma unroll
            for (int j = 0; j < D; j++) out[K + m * D + j] = f->mean[m][j];
#pragma unroll
            for (int j = 0; j < D; j++)
#pragma unroll
                for (int l = 0; l < D; l++)
                    out[K + K * D + m * D * D + j + D * l] = j >= l ? f->cov[m][tri(j, l)] : f->cov[m][tri(l, j)];
            if (T) out[at_df + m] = f->df[T ? m : 0];
        }
        if (N) out[at_noise] = f->noise;
        *out_loglik = loglik;
        out_info[0] = iterations;
        out_info[1] = outcome;
    }
}

// One warp per fit (MV_THREADS / 32 per block): fit i runs on dataset
// fit_ds[i] (its offset, n, total weight and noise log-density), from init
// row i, into out row i; out_info holds (iterations, outcome). With W = 1
// `wt` holds the observations' weights, dataset ds's from ds_offset[ds] / D.
#define EM_MV(K, D, S, N, T, W)                                                                            \
    extern "C" __global__ void __launch_bounds__(MV_THREADS)                                              \
        em_mv(const double* __restrict__ z, const double* __restrict__ wt,                                \
              const long long* __restrict__ ds_offset, const long long* __restrict__ ds_n,                \
              const double* __restrict__ ds_nobs, const double* __restrict__ ds_log_noise,                \
              const int* __restrict__ fit_ds,                                                             \
              const double* __restrict__ init, double* __restrict__ out, double* __restrict__ out_loglik, \
              int* __restrict__ out_info, int n_fits, int max_iters, double epsilon) {                    \
        __shared__ MvState<K, D, T> states[MV_THREADS / 32][2];                                           \
        __shared__ int flags[MV_THREADS / 32];                                                            \
        const int w = threadIdx.x / 32;                                                                   \
        const long long i = (long long)blockIdx.x * (MV_THREADS / 32) + w;                                \
        if (i >= n_fits) return;                                                                          \
        const long long row = K + K * D + K * D * D + (T ? K : 0) + N;                                    \
        const int ds = fit_ds[i];                                                                         \
        em_mv_fit<K, D, S, N, T, W>(z + ds_offset[ds], W ? wt + ds_offset[ds] / D : wt, ds_n[ds],         \
                                    ds_nobs[ds], ds_log_noise[ds], init + i * row, out + i * row,         \
                                    out_loglik + i, out_info + 2 * i, max_iters, epsilon, &states[w][0],  \
                                    &states[w][1], &flags[w]);                                            \
    }
