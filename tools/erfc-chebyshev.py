# The Chebyshev coefficients of special.rs's ERFC_CHEBYSHEV: with
# t = 2/(2 + x) and s = 2t - 1, u(s) = log(erfc(x)/t) + x^2 is smooth on
# [-1, 1] (Numerical Recipes' erfc form, here to double precision), so
# log erfc(x) = -x^2 + log t + sum_j c_j T_j(s). Interpolated at 80
# Chebyshev nodes with mpmath at 50 digits; coefficients below 1e-17 left
# out (the rest are the constant's, in order). Run: python3 tools/erfc-chebyshev.py
import mpmath as m
m.mp.dps = 50
# u(s) = ln(erfc(x)/t) + x^2, t = 2/(2+x), s = 2t - 1 in (-1, 1]
def u(s):
    t = (s + 1) / 2
    if t == 0:
        return -m.log(m.sqrt(m.pi) * 2)  # limit: -ln(sqrt(pi)(2-2t)) at t=0
    x = 2 / t - 2
    return m.log(m.erfc(x) / t) + x * x
N = 80
nodes = [m.cos(m.pi * (k + m.mpf(1) / 2) / N) for k in range(N)]
vals = [u(s) for s in nodes]
c = []
for j in range(N):
    c.append(2 * sum(vals[k] * m.cos(m.pi * j * (k + m.mpf(1) / 2) / N) for k in range(N)) / N)
c[0] /= 2
for j, v in enumerate(c):
    if abs(v) > 1e-19:
        print(j, m.nstr(v, 20))
