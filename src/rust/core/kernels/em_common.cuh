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

// mathx.rs::EXP2_TABLE: 2^(j/32), j = 0..31, correctly rounded. In global
// memory: the lanes of a warp index it differently, which constant memory
// would serialise; these 256 bytes stay in L1.
__device__ const double EXP2_TABLE[32] = {
    1.0,
    1.0218971486541166,
    1.0442737824274138,
    1.0671404006768237,
    1.0905077326652577,
    1.1143867425958924,
    1.1387886347566916,
    1.1637248587775775,
    1.189207115002721,
    1.215247359980469,
    1.241857812073484,
    1.2690509571917332,
    1.2968395546510096,
    1.3252366431597413,
    1.3542555469368927,
    1.383909881963832,
    1.4142135623730951,
    1.4451808069770467,
    1.4768261459394993,
    1.5091644275934228,
    1.5422108254079407,
    1.5759808451078865,
    1.6104903319492543,
    1.645755478153965,
    1.681792830507429,
    1.718619298122478,
    1.7562521603732995,
    1.7947090750031072,
    1.8340080864093424,
    1.8741676341103,
    1.9152065613971474,
    1.9571441241754002
};

// exp(x) for x <= 0, branch-free; mathx.rs::exp_nonpos line for line:
// x = (32m + j) ln2/32 + r, e^x = 2^m 2^(j/32) e^r, e^r to r^6.
__device__ __forceinline__ double exp_nonpos(double x) {
    const double LOG2E_32 = 32.0 * 1.4426950408889634;
    const double LN2_32_HI = 6.9314718036912382e-1 / 32.0;
    const double LN2_32_LO = 1.9082149292705877e-10 / 32.0;
    const double ROUND_SHIFT = 6755399441055744.0;
    const double EXP_FLOOR = -708.0;
    x = x < EXP_FLOOR ? EXP_FLOOR : x;
    const double t = x * LOG2E_32 + ROUND_SHIFT;
    const double kf = t - ROUND_SHIFT;
    const double r = (x - kf * LN2_32_HI) - kf * LN2_32_LO;
    double p = 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const long long k = __double_as_longlong(t) - __double_as_longlong(ROUND_SHIFT);
    const double scale = __longlong_as_double(((k >> 5) + 1023) << 52);
    return p * __ldg(&EXP2_TABLE[k & 31]) * scale;
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
