# What each component family means in R: its names, support, and its
# components' distribution functions (statmod's inverse Gaussian, mean mu
# and shape lambda; the Normal's mu and sigma; the lognormal's meanlog mu
# and sdlog sigma, as stats::dlnorm; the gamma's mean mu and shape, as
# stats::dgamma(shape = shape, rate = shape / mu)). The core fits the
# lognormal as the Normal on log x.

families <- c("invgauss", "normal", "lognormal", "gamma")

family_label <- function(family) {
  c(invgauss = "inverse Gaussian", normal = "Normal", lognormal = "lognormal", gamma = "gamma")[[family]]
}

# Whether the family's data must be positive.
positive_family <- function(family) family %in% c("invgauss", "lognormal", "gamma")

# Each component's standard deviation where the family is fitted (the
# screen's yardstick): the inverse Gaussian's sqrt(mu^3 / lambda), the
# gamma's mu / sqrt(shape), the Normal's sigma, the lognormal's sigma (of
# log x).
fitted_sd <- function(family, mu, shape) {
  switch(family, invgauss = sqrt(mu^3 / shape), gamma = mu / sqrt(shape), shape)
}

# Component m's cdf, quantiles and draws.
component_cdf <- function(family, x, mu, shape) {
  switch(family,
         normal = stats::pnorm(x, mu, shape),
         lognormal = stats::plnorm(x, mu, shape),
         gamma = stats::pgamma(x, shape = shape, rate = shape / mu),
         invgauss = statmod::pinvgauss(x, mean = mu, shape = shape))
}

component_quantile <- function(family, p, mu, shape) {
  switch(family,
         normal = stats::qnorm(p, mu, shape),
         lognormal = stats::qlnorm(p, mu, shape),
         gamma = stats::qgamma(p, shape = shape, rate = shape / mu),
         # statmod::qinvgauss() can fail far in the tails of a very skewed
         # component: NA there
         invgauss = tryCatch(suppressWarnings(statmod::qinvgauss(p, mean = mu, shape = shape)),
                             error = function(e) rep(NA_real_, length(p))))
}

component_draws <- function(family, n, mu, shape) {
  switch(family,
         normal = stats::rnorm(n, mu, shape),
         lognormal = stats::rlnorm(n, mu, shape),
         gamma = stats::rgamma(n, shape = shape, rate = shape / mu),
         invgauss = statmod::rinvgauss(n, mean = mu, shape = shape))
}

# A central range holding nearly all of a component (4 sds either side on
# the scale the family is fitted on), in the data's units.
component_range <- function(family, mu, shape) {
  sd <- fitted_sd(family, mu, shape)
  r <- c(min(mu - 4 * sd), max(mu + 4 * sd))
  if (identical(family, "lognormal")) exp(r) else r
}
