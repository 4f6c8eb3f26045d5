// Device mirror of the Rust reference: src/family/ (q, the per-component
// terms c - k*q) and src/mathx.rs (exp_nonpos). Same names, same formulas;
// change one, change the other. No #include: NVRTC compiles this text as is,
// after the prelude of gpu/prelude.rs, which defines every constant used
// here (MAX_COMPONENTS, the exponential's constants, EXP2_TABLE).

// q(x, mu) of ComponentFamily::q (family/invgauss.rs, normal.rs, gamma.rs):
// (x - mu)^2 / x for the inverse Gaussian (g = 1/x), (x - mu)^2 for the Normal.
__device__ __forceinline__ double q_invgauss(double x, double g, double mu) {
    const double d = x - mu;
    return d * d * g;
}

__device__ __forceinline__ double q_normal(double x, double g, double mu) {
    const double d = x - mu;
    return d * d;
}

// The gamma's x/mu - log x, as x * (1/mu) - g (g = log x; family/gamma.rs's
// terms hand q 1/mu in mu's place).
__device__ __forceinline__ double q_gamma(double x, double g, double inv_mu) { return x * inv_mu - g; }

// q of the family with kernel code `fam` (Family::kernel_code, FAM_* of the
// prelude).
__device__ __forceinline__ double q_family(int fam, double x, double g, double mu) {
    return fam == FAM_INVGAUSS ? q_invgauss(x, g, mu) : (fam == FAM_GAMMA ? q_gamma(x, g, mu) : q_normal(x, g, mu));
}

// exp(x) for x <= 0, branch-free; mathx.rs::exp_nonpos_lanes for one value,
// step for step:
// x = (32m + j) ln2/32 + r, e^x = 2^m 2^(j/32) e^r, e^r to r^6.
// Its constants sit in constant memory, read as operands: as immediates,
// each 64-bit value is rebuilt by two moves at every use, and the E-step's
// loop is short of issue slots, not of fp64 throughput, in large calls.
__constant__ double EXP_C[8] = {LOG2E_32, ROUND_SHIFT, LN2_32_HI, LN2_32_LO,
                                1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0};  // 1/j! of mathx.rs
__device__ __forceinline__ double exp_nonpos(double x) {
    x = x < EXP_FLOOR ? EXP_FLOOR : x;
    const double t = x * EXP_C[0] + EXP_C[1];
    const double kf = t - EXP_C[1];
    const double r = (x - kf * EXP_C[2]) - kf * EXP_C[3];
    double p = EXP_C[4];
    p = p * r + EXP_C[5];
    p = p * r + EXP_C[6];
    p = p * r + EXP_C[7];
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const long long k = __double_as_longlong(t) - __double_as_longlong(ROUND_SHIFT);
    const double scale = __longlong_as_double(((k >> 5) + 1023) << 52);
    return p * __ldg(&EXP2_TABLE[k & 31]) * scale;
}

// The responsibilities from one observation's terms l[0..k) (and, with a
// noise component, `ln`): lse = max + log sum exp(l_m - max), the
// responsibilities r_m = exp(l_m - max) / sum left in l[], the noise's in
// `rn`, after the components' as in estep.rs. Returns lse.
__device__ __forceinline__ double normalised(int k, bool noisy, double ln, double l[MAX_COMPONENTS], double& rn) {
    double mx = -1.0e308;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) mx = l[m] > mx ? l[m] : mx;
    }
    if (noisy) mx = ln > mx ? ln : mx;
    double sum = 0.0;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            l[m] = exp_nonpos(l[m] - mx);
            sum += l[m];
        }
    }
    if (noisy) {
        rn = exp_nonpos(ln - mx);
        sum += rn;
    }
    const double inv = 1.0 / sum;
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) l[m] *= inv;
    }
    if (noisy) rn *= inv;
    return mx + log(sum);
}

// The per-observation E-step of estep.rs for one observation and one start:
// l_m = c_m - k_m q(x, mu_m), then normalised(). `terms` holds
// c[MAX_COMPONENTS], k[MAX_COMPONENTS], mu[MAX_COMPONENTS] of
// ComponentFamily::terms; a noise component's term `ln` = log(weight) +
// t(x) is one more.
__device__ __forceinline__ double responsibilities(double x, double g, int k, int family,
                                                   const double* __restrict__ terms,
                                                   bool noisy, double ln,
                                                   double l[MAX_COMPONENTS], double& rn) {
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            const double mu = terms[2 * MAX_COMPONENTS + m];
            l[m] = terms[m] - terms[MAX_COMPONENTS + m] * q_family(family, x, g, mu);
        }
    }
    return normalised(k, noisy, ln, l, rn);
}

// ln(x) for x >= 1: mathx.rs::ln_ge1_lanes for one value, step for step
// (fdlibm's polynomial LG1..LG7, SQRT_2 and TWO_52 from the prelude; ln 2
// in the two parts exp_nonpos uses).
__device__ __forceinline__ double ln_ge1(double x) {
    const unsigned long long bits = (unsigned long long)__double_as_longlong(x);
    const double biased =
        __longlong_as_double((long long)((unsigned long long)__double_as_longlong(TWO_52) | (bits >> 52))) - TWO_52;
    const double m = __longlong_as_double((long long)((bits & 0xfffffffffffffULL) | 0x3ff0000000000000ULL));
    const bool big = m > SQRT_2;
    const double e = biased - 1023.0 + (big ? 1.0 : 0.0);
    const double f = (big ? m * 0.5 : m) - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double w = z * z;
    const double t1 = w * (LG2 + w * (LG4 + w * LG6));
    const double t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    const double hfsq = 0.5 * f * f;
    const double r = t2 + t1;
    return e * (32.0 * LN2_32_HI) - ((hfsq - (s * (hfsq + r) + e * (32.0 * LN2_32_LO))) - f);
}

// student.rs's responsibilities for one observation and one start: with
// terms = c, mu, (nu+1)/2, 1/(nu sigma^2), (nu+1)/nu, log((nu+1)/nu)
// (MAX_COMPONENTS each), l_m = c_m - (nu+1)/2 log(1 + z_m), z_m =
// (x - mu_m)^2 / (nu sigma^2); the responsibilities go to r, each
// component's weight u_m = ((nu+1)/nu) / (1 + z_m) to u and log(1 + z_m)
// to lw; then normalised(). Returns the observation's log f(x).
__device__ __forceinline__ double responsibilities_t(double x, int k, const double* __restrict__ terms, bool noisy,
                                                     double ln, double r[MAX_COMPONENTS], double u[MAX_COMPONENTS],
                                                     double lw[MAX_COMPONENTS], double& rn) {
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            const double d = x - terms[MAX_COMPONENTS + m];
            const double w = 1.0 + d * d * terms[3 * MAX_COMPONENTS + m];
            lw[m] = ln_ge1(w);
            u[m] = terms[4 * MAX_COMPONENTS + m] / w;
            r[m] = terms[m] - terms[2 * MAX_COMPONENTS + m] * lw[m];
        }
    }
    return normalised(k, noisy, ln, r, rn);
}

// log erfc(x) for x >= 0: special.rs's ln_erfc step for step, its pieces
// (ERFC_LO, ERFC_HI) and their Chebyshev coefficients padded to ERFC_TERMS
// (ERFC_PADDED) from the prelude.
__device__ __forceinline__ double ln_erfc(double x) {
    const double t = 2.0 / (2.0 + x);
    const double s = 2.0 * t - 1.0;
    const int p = s < ERFC_HI[0] ? 0 : (s < ERFC_HI[1] ? 1 : 2);
    const double a = ERFC_LO[p], b = ERFC_HI[p];
    const double y = (2.0 * s - (a + b)) / (b - a);
    double b1 = 0.0, b2 = 0.0;
    for (int j = ERFC_TERMS - 1; j >= 1; --j) {
        const double next = 2.0 * y * b1 - b2 + ERFC_PADDED[p][j];
        b2 = b1;
        b1 = next;
    }
    return -x * x + log(t) + (y * b1 - b2 + ERFC_PADDED[p][0]);
}

// log(1 - e^v), v <= 0: special.rs's ln_1m_exp.
__device__ __forceinline__ double ln_1m_exp(double v) {
    return v > -LN_2 ? log(-expm1(v)) : log1p(-exp(v));
}

// log Phi(z): special.rs's ln_normal_lower.
__device__ __forceinline__ double ln_normal_lower(double z) {
    if (z < 0.0) return ln_erfc(-z * FRAC_1_SQRT_2) - LN_2;
    return ln_1m_exp(ln_erfc(fabs(z) * FRAC_1_SQRT_2) - LN_2);
}

// exgauss.rs's responsibilities for one observation and one start: with
// terms = c, mu, 1/sigma, sigma/tau, 1/tau, sigma (MAX_COMPONENTS each,
// exgauss::Terms), u_m = (x - mu_m)/sigma_m - sigma_m/tau_m, l_m = c_m -
// x/tau_m + log Phi(u_m), and the exponential part's conditional mean
// (ez) and variance (vz) from rho = phi(u)/Phi(u); then normalised().
// Returns the observation's log f(x).
__device__ __forceinline__ double responsibilities_ex(double x, int k, const double* __restrict__ terms, bool noisy,
                                                      double ln, double r[MAX_COMPONENTS], double ez[MAX_COMPONENTS],
                                                      double vz[MAX_COMPONENTS], double& rn) {
#pragma unroll
    for (int m = 0; m < MAX_COMPONENTS; ++m) {
        if (m < k) {
            const double u = (x - terms[MAX_COMPONENTS + m]) * terms[2 * MAX_COMPONENTS + m] -
                             terms[3 * MAX_COMPONENTS + m];
            const double lp = ln_normal_lower(u);
            r[m] = terms[m] - x * terms[4 * MAX_COMPONENTS + m] + lp;
            const double rho = exp(-0.5 * u * u - 0.5 * LN_2PI - lp);
            const double sigma = terms[5 * MAX_COMPONENTS + m];
            ez[m] = fmax(sigma * (u + rho), 0.0);
            vz[m] = fmax(sigma * sigma * (1.0 - rho * (u + rho)), 0.0);
        }
    }
    return normalised(k, noisy, ln, r, rn);
}
