# For the tests of truncated and censored fits (test-truncation.R,
# test-censoring.R): each family's density and cdf by R's own functions
# (statmod's for the inverse Gaussian), and two-component data of each.

family_density <- function(x, family, mu, shape) {
  switch(family,
    invgauss = statmod::dinvgauss(x, mean = mu, shape = shape),
    gamma = stats::dgamma(x, shape = shape, rate = shape / mu),
    lognormal = stats::dlnorm(x, mu, shape),
    stats::dnorm(x, mu, shape))
}

family_cdf <- function(x, family, mu, shape, lower = TRUE) {
  switch(family,
    invgauss = statmod::pinvgauss(x, mean = mu, shape = shape, lower.tail = lower),
    gamma = stats::pgamma(x, shape = shape, rate = shape / mu, lower.tail = lower),
    lognormal = stats::plnorm(x, mu, shape, lower.tail = lower),
    stats::pnorm(x, mu, shape, lower.tail = lower))
}

# 500 draws of a two-component mixture of `family`.
two_component_data <- function(family, seed) {
  set.seed(seed)
  switch(family,
    normal = c(rnorm(300, 0, 1), rnorm(200, 3, 0.7)),
    lognormal = exp(c(rnorm(300, 0, 0.4), rnorm(200, 1, 0.3))),
    gamma = c(rgamma(300, shape = 6, rate = 6), rgamma(200, shape = 15, rate = 5)),
    invgauss = c(statmod::rinvgauss(300, 1, 8), statmod::rinvgauss(200, 3, 40)))
}

# The best value of optim() (Nelder-Mead, then BFGS) from `starts` starts
# of the negative log-likelihood `loglik(alpha, mu, shape)` of a
# two-component mixture of `family` on data x, over (logit alpha1, mu (log
# mu for positive families), log shape). Each component's sd is kept within
# 0.05 to 20 times the data's: beyond, R's cdfs lose a window's mass to
# rounding, and optim finds the rounding.
best_of_optim <- function(loglik, x, family, starts) {
  positive <- family %in% c("invgauss", "gamma")
  spread <- stats::sd(if (family == "lognormal") log(x) else x)
  sds <- function(mu, s) switch(family, invgauss = sqrt(mu^3 / s), gamma = mu / sqrt(s), s)
  nll <- function(th) {
    a <- stats::plogis(th[1])
    mu <- if (positive) exp(th[2:3]) else th[2:3]
    sd <- sds(mu, exp(th[4:5]))
    if (any(sd < 0.05 * spread | sd > 20 * spread)) return(1e10)
    v <- -loglik(c(a, 1 - a), mu, exp(th[4:5]))
    if (is.finite(v)) v else 1e10
  }
  set.seed(5)
  best <- Inf
  for (i in seq_len(starts)) {
    mu0 <- sort(stats::quantile(if (family == "lognormal") log(x) else x, stats::runif(2, 0.1, 0.9)))
    s0 <- if (family %in% c("normal", "lognormal")) spread / 2 else
      if (family == "gamma") 5 else mean(x)^3 / stats::var(x)
    th <- c(0, if (positive) log(mu0) else mu0, log(c(s0, s0)))
    o <- stats::optim(th, nll, control = list(maxit = 5000, reltol = 1e-13))
    o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
    best <- min(best, o$value)
  }
  best
}
