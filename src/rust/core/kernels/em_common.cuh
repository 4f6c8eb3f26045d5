// Device mirror of the Rust reference: src/family.rs (q, the per-component
// terms c - k*q) and src/mathx.rs (exp_nonpos). Same names, same formulas;
// change one, change the other. No #include: NVRTC compiles this text as is.

#define MAX_COMPONENTS 8

// q(x, mu) of family.rs: (x - mu)^2 / x for the inverse Gaussian (g = 1/x),
// (x - mu)^2 for the Normal.
__device__ __forceinline__ double q_invgauss(double x, double g, double mu) {
    const double d = x - mu;
    return d * d * g;
}

__device__ __forceinline__ double q_normal(double x, double g, double mu) {
    const double d = x - mu;
    return d * d;
}

// exp(x) for x <= 0, branch-free; mathx.rs::exp_nonpos line for line.
__device__ __forceinline__ double exp_nonpos(double x) {
    const double LOG2E = 1.4426950408889634;
    const double LN2_HI = 6.9314718036912382e-1;
    const double LN2_LO = 1.9082149292705877e-10;
    const double ROUND_SHIFT = 6755399441055744.0;
    const double EXP_FLOOR = -708.0;
    x = x < EXP_FLOOR ? EXP_FLOOR : x;
    const double t = x * LOG2E + ROUND_SHIFT;
    const double kf = t - ROUND_SHIFT;
    const double r = (x - kf * LN2_HI) - kf * LN2_LO;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const long long k = __double_as_longlong(t) - __double_as_longlong(ROUND_SHIFT);
    const double scale = __longlong_as_double((k + 1023) << 52);
    return p * scale;
}

// The per-observation E-step of estep.rs for one observation and one start:
// l_m = c_m - k_m q(x, mu_m), lse = max + log sum exp(l_m - max), and the
// responsibilities r_m = exp(l_m - max) / sum, left in l[]. `terms` holds
// c[MAX_COMPONENTS], k[MAX_COMPONENTS], mu[MAX_COMPONENTS] of family.rs::terms.
__device__ __forceinline__ double responsibilities(double x, double g, int k, int invgauss,
                                                   const double* __restrict__ terms,
                                                   double l[MAX_COMPONENTS]) {
    double mx = -1.0e308;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            const double mu = terms[2 * MAX_COMPONENTS + m];
            const double q = invgauss ? q_invgauss(x, g, mu) : q_normal(x, g, mu);
            l[m] = terms[m] - terms[MAX_COMPONENTS + m] * q;
            mx = l[m] > mx ? l[m] : mx;
        }
    }
    double sum = 0.0;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            l[m] = exp_nonpos(l[m] - mx);
            sum += l[m];
        }
    }
    const double inv = 1.0 / sum;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) l[m] *= inv;
    }
    return mx + log(sum);
}
