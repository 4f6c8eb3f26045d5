# The Chebyshev coefficients of special.rs's ERFC_PIECES: with
# t = 2/(2 + x) and s = 2t - 1, u(s) = log(erfc(x)/t) + x^2 is smooth on
# [-1, 1] (Numerical Recipes' erfc form, here to double precision), so
# log erfc(x) = -x^2 + log t + sum_j c_j T_j(y), y the place of s in its
# piece mapped to [-1, 1]. Three pieces of s (x > 6, 1.2 < x <= 6,
# x <= 1.2) need 15-17 terms each where one expansion over [-1, 1] needs
# 28. Each interpolated at 60 Chebyshev nodes with mpmath at 50 digits;
# trailing coefficients below 1e-17 left out. Run: python3 tools/erfc-chebyshev.py
import mpmath as m
m.mp.dps = 50
PIECES = [(-1, -0.5), (-0.5, 0.25), (0.25, 1)]
# u(s) = ln(erfc(x)/t) + x^2, t = 2/(2+x), s = 2t - 1 in (-1, 1]
def u(s):
    t = (s + 1) / 2
    if t == 0:
        return -m.log(m.sqrt(m.pi) * 2)  # limit: -ln(sqrt(pi)(2-2t)) at t=0
    x = 2 / t - 2
    return m.log(m.erfc(x) / t) + x * x
N = 60
for a, b in PIECES:
    a, b = m.mpf(a), m.mpf(b)
    nodes = [m.cos(m.pi * (k + m.mpf(1) / 2) / N) for k in range(N)]
    vals = [u((b - a) / 2 * y + (a + b) / 2) for y in nodes]
    c = [2 * sum(vals[k] * m.cos(m.pi * j * (k + m.mpf(1) / 2) / N) for k in range(N)) / N for j in range(N)]
    c[0] /= 2
    last = max(j for j, v in enumerate(c) if abs(v) > 1e-17)
    print("// s in [%s, %s]: %d terms" % (m.nstr(a, 3), m.nstr(b, 3), last + 1))
    print("&[" + ", ".join(repr(float(v)) for v in c[:last + 1]) + "],")
