// Kernels of the cuda-streams engine: the 2015 bulkem design, done right.
// Each EM iteration of a dataset is two launches on the worker's stream:
//
// em_obs_terms: one thread per (active start a, observation i); grid
//   (ceil(n / blockDim.x), starts). Writes the 1 + 3k per-observation terms
//   of every sum the M-step needs: lse_i, then r_im, r_im x_i, r_im g_i for
//   each component m. Layout per_obs[a][j][i], j = 0 .. 3k, so that the sum
//   kernel reads each row with consecutive threads (coalesced).
//   terms[a] = c[8], k[8], mu[8] (ComponentFamily::terms, computed on the host),
//   and last log(noise weight) (TERMS_PER_START values). Student's t
//   (family FAM_T) has its six rows of terms (student.rs) and 1 + 5k rows:
//   lse, then r, r u, r u x, r u x^2, r (log u - u). With a noise component,
//   noise_t holds t(x) of each observation (noise.rs) and a last row holds
//   the noise's r; noise_t is null without one. The ex-Gaussian (FAM_EXGAUSS)
//   has its six rows of terms (exgauss.rs) and 1 + 4k rows: lse, then r,
//   r y, r (y^2 + Var Z), r E[Z]. With weights (w not null),
//   every row of an observation is multiplied by its weight (by 1.0
//   exactly without: the same bits).
//
// em_fused_sum: the single-launch fused sum kernel. One block of
//   SUM_THREADS per active start reduces all 1 + 3k rows of that start in one
//   launch: each thread first sums every SUM_THREADS-th element (the stride
//   stage that removes the need for a second launch), then a tree in shared
//   memory. Fixed order, so sums are reproducible. Writes sums[a][j].
//   SUM_THREADS comes from the prelude (gpu/prelude.rs), as the host's launch does.

extern "C" __global__ void em_obs_terms(const double* __restrict__ x, const double* __restrict__ g,
                                        int n, int k, int family,
                                        const double* __restrict__ terms,
                                        const double* __restrict__ noise_t,
                                        const double* __restrict__ w,
                                        double* __restrict__ per_obs) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int a = blockIdx.y;
    if (i >= n) return;
    // with a noise component (noise_t not null): one more row, its r
    const bool noisy = noise_t != nullptr;
    const double xi = x[i];
    const double gi = g[i];
    const double wi = w != nullptr ? w[i] : 1.0;
    const double* t = terms + (size_t)a * TERMS_PER_START;
    double r[MAX_COMPONENTS];
    double rn = 0.0;
    const double ln = noisy ? t[TERMS_PER_START - 1] + noise_t[i] : 0.0;
    if (family == FAM_T) {
        // Student's t: 1 + 5k rows, r, r u, r u x, r u x^2, r (log u - u)
        const int rows = 1 + 5 * k + (noisy ? 1 : 0);
        double u[MAX_COMPONENTS], lw[MAX_COMPONENTS];
        const double lse = responsibilities_t(xi, k, t, noisy, ln, r, u, lw, rn);
        double* out = per_obs + (size_t)a * rows * n;
        out[i] = lse * wi;
#pragma unroll
        for (int m = 0; m < MAX_COMPONENTS; ++m) {
            if (m < k) {
                const double ru = r[m] * u[m];
                out[(size_t)(1 + m) * n + i] = r[m] * wi;
                out[(size_t)(1 + k + m) * n + i] = ru * wi;
                out[(size_t)(1 + 2 * k + m) * n + i] = (ru * xi) * wi;
                out[(size_t)(1 + 3 * k + m) * n + i] = (ru * xi * xi) * wi;
                out[(size_t)(1 + 4 * k + m) * n + i] = (r[m] * (t[5 * MAX_COMPONENTS + m] - lw[m] - u[m])) * wi;
            }
        }
        if (noisy) out[(size_t)(1 + 5 * k) * n + i] = rn * wi;
        return;
    }
    if (family == FAM_EXGAUSS) {
        // the ex-Gaussian: 1 + 4k rows, r, r y, r (y^2 + Var Z), r E[Z] with
        // y = x - E[Z] (exgauss.rs)
        const int rows = 1 + 4 * k + (noisy ? 1 : 0);
        double ez[MAX_COMPONENTS], vz[MAX_COMPONENTS];
        const double lse = responsibilities_ex(xi, k, t, noisy, ln, r, ez, vz, rn);
        double* out = per_obs + (size_t)a * rows * n;
        out[i] = lse * wi;
#pragma unroll
        for (int m = 0; m < MAX_COMPONENTS; ++m) {
            if (m < k) {
                const double y = xi - ez[m];
                out[(size_t)(1 + m) * n + i] = r[m] * wi;
                out[(size_t)(1 + k + m) * n + i] = (r[m] * y) * wi;
                out[(size_t)(1 + 2 * k + m) * n + i] = (r[m] * (y * y + vz[m])) * wi;
                out[(size_t)(1 + 3 * k + m) * n + i] = (r[m] * ez[m]) * wi;
            }
        }
        if (noisy) out[(size_t)(1 + 4 * k) * n + i] = rn * wi;
        return;
    }
    const int rows = 1 + 3 * k + (noisy ? 1 : 0);
    const double lse = responsibilities(xi, gi, k, family, t, noisy, ln, r, rn);
    double* out = per_obs + (size_t)a * rows * n;
    out[i] = lse * wi;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            out[(size_t)(1 + m) * n + i] = r[m] * wi;
            out[(size_t)(1 + k + m) * n + i] = (r[m] * xi) * wi;
            out[(size_t)(1 + 2 * k + m) * n + i] = (r[m] * gi) * wi;
        }
    }
    if (noisy) out[(size_t)(1 + 3 * k) * n + i] = rn * wi;
}

extern "C" __global__ void em_fused_sum(const double* __restrict__ per_obs, int n, int rows,
                                        double* __restrict__ sums) {
    __shared__ double part[SUM_THREADS];
    const int a = blockIdx.x;
    const double* base = per_obs + (size_t)a * rows * n;
    for (int j = 0; j < rows; ++j) {
        const double* v = base + (size_t)j * n;
        double s = 0.0;
        for (int i = threadIdx.x; i < n; i += SUM_THREADS) s += v[i];
        part[threadIdx.x] = s;
        __syncthreads();
        for (int w = SUM_THREADS / 2; w > 0; w >>= 1) {
            if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) sums[(size_t)a * rows + j] = part[0];
        __syncthreads();
    }
}
