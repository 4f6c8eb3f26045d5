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
