# The mixture log-likelihood from R's own densities, for checks of the
# fits' maxima and information (test-vcov.R, test-accelerate.R).

# The mixture log-likelihood in the free parameters theta = (alpha_1 ..
# alpha_{K-1}, mu_1 .. mu_K, lambda or sigma 1 .. K), alpha_K = 1 - sum,
# from statmod's inverse Gaussian density, stats::dnorm, dlnorm or dgamma.
# With a noise `support` (lower, upper), theta = (alpha_1 .. alpha_K, mu,
# shapes) and the noise's weight 1 - sum(alpha), its density dunif's.
theta_loglik <- function(theta, x, k, family, support = NULL) {
  w <- k - is.null(support)
  a <- theta[seq_len(w)]
  noise <- 1 - sum(a)
  if (is.null(support)) a <- c(a, noise)
  mu <- theta[w + seq_len(k)]
  s <- theta[w + k + seq_len(k)]
  dens <- function(m) {
    switch(family, invgauss = statmod::dinvgauss(x, mean = mu[m], shape = s[m]),
           lognormal = stats::dlnorm(x, mu[m], s[m]),
           gamma = stats::dgamma(x, shape = s[m], rate = s[m] / mu[m]), stats::dnorm(x, mu[m], s[m]))
  }
  f <- Reduce(`+`, lapply(seq_len(k), function(m) a[m] * dens(m)))
  if (!is.null(support)) f <- f + noise * stats::dunif(x, support[1], support[2])
  sum(log(f))
}

# -Hessian by optimHess (central differences of central-difference
# gradients), steps relative to each parameter, with one Richardson
# extrapolation (steps h and 2h): plain steps small enough for 1e-5 would
# drown the smallest entries in the rounding of a sum of n terms.
numerical_information <- function(theta, x, k, family, h = 1e-3, support = NULL) {
  hess <- function(h) {
    stats::optimHess(theta, theta_loglik, x = x, k = k, family = family, support = support,
                     control = list(parscale = abs(theta), ndeps = rep(h, length(theta))))
  }
  -(4 * hess(h) - hess(2 * h)) / 3
}
