// Device mirror of special.rs and student.rs's df_root, shared by
// em_batched.cu and em_mv.cu (gpu/kernels.rs concatenates it before each).
// The constants (SERIES_FROM, HALF_LN_2PI, GAMMA_SHAPE_*, DF_MIN, DF_MAX)
// come from the prelude of gpu/prelude.rs.

// special.rs, step for step: log Gamma, digamma and trigamma (together) by
// their recurrences up to SERIES_FROM and their asymptotic series there, and
// the gamma's shape from log a - digamma(a) = s by Newton's method.
__device__ double ln_gamma(double x) {
    double product = 1.0;
    while (x < SERIES_FROM) {
        product *= x;
        x += 1.0;
    }
    const double z = 1.0 / (x * x);
    const double series =
        (1.0 / 12.0 - z * (1.0 / 360.0 - z * (1.0 / 1260.0 - z * (1.0 / 1680.0 - z * (1.0 / 1188.0 - z * (691.0 / 360360.0)))))) / x;
    return (x - 0.5) * log(x) - x + HALF_LN_2PI + series - log(product);
}

// (digamma(x), trigamma(x)), sharing each recurrence step's reciprocal
__device__ void digammas(double x, double& di_out, double& tri_out) {
    double di = 0.0, tri = 0.0;
    while (x < SERIES_FROM) {
        const double r = 1.0 / x;
        di -= r;
        tri += r * r;
        x += 1.0;
    }
    const double r = 1.0 / x;
    const double z = r * r;
    const double di_series =
        z * (1.0 / 12.0 - z * (1.0 / 120.0 - z * (1.0 / 252.0 - z * (1.0 / 240.0 - z * (1.0 / 132.0 - z * (691.0 / 32760.0))))));
    const double tri_series =
        (1.0 + z * (1.0 / 6.0 - z * (1.0 / 30.0 - z * (1.0 / 42.0 - z * (1.0 / 30.0 - z * (5.0 / 66.0 - z * (691.0 / 2730.0)))))))
        * r;
    di_out = log(x) - 0.5 * r - di_series + di;
    tri_out = tri_series + 0.5 * z + tri;
}

__device__ double gamma_shape(double s) {
    if (!(s > 0.0 && isfinite(s))) return nan("");
    double a = (3.0 - s + sqrt((s - 3.0) * (s - 3.0) + 24.0 * s)) / (12.0 * s);
    for (int i = 0; i < GAMMA_SHAPE_STEPS; ++i) {
        double di, tri;
        digammas(a, di, tri);
        const double f = log(a) - di - s;
        const double slope = 1.0 / a - tri;
        double next = a - f / slope;
        if (!(next > 0.0)) next = a / 2.0;
        const bool done = fabs(next - a) <= GAMMA_SHAPE_TOLERANCE * a;
        a = next;
        if (done) break;
    }
    return a;
}

// student.rs::df_root: df with log(df/2) - digamma(df/2) = y, in [DF_MIN, DF_MAX].
__device__ double df_root(double y) {
    const double half = gamma_shape(y);
    if (isnan(half)) return isnan(y) ? half : DF_MAX;
    const double df = 2.0 * half;
    return df < DF_MIN ? DF_MIN : (df > DF_MAX ? DF_MAX : df);
}

