# What each component family means in R: its names, support, and its
# components' distribution functions (statmod's inverse Gaussian, mean mu
# and shape lambda; the Normal's mu and sigma; the lognormal's meanlog mu
# and sdlog sigma, as stats::dlnorm; the gamma's mean mu and shape, as
# stats::dgamma(shape = shape, rate = shape / mu); Student's t's location
# mu, scale sigma and degrees of freedom df, as stats::dt((x - mu) / sigma,
# df) / sigma; the ex-Gaussian's Normal mean mu and standard deviation
# sigma plus an exponential of mean tau, as gamlss.dist::dexGAUS(mu, sigma,
# nu = tau)). The core fits the lognormal as the Normal on log x. `df` below
# is a component's third parameter: the t's df or the ex-Gaussian's tau.

families <- c("invgauss", "normal", "lognormal", "gamma", "t", "exgauss")

family_label <- function(family) {
  c(invgauss = "inverse Gaussian", normal = "Normal", lognormal = "lognormal", gamma = "gamma",
    t = "Student's t", exgauss = "ex-Gaussian")[[family]]
}

# The name of the family's third parameter per component, NULL for none.
third_name <- function(family) switch(family, t = "df", exgauss = "tau", NULL)

# Whether the family's data must be positive.
positive_family <- function(family) family %in% c("invgauss", "lognormal", "gamma")

# Each component's standard deviation where the family is fitted (the
# screen's yardstick): the inverse Gaussian's sqrt(mu^3 / lambda), the
# gamma's mu / sqrt(shape), the Normal's sigma, the lognormal's sigma (of
# log x).
fitted_sd <- function(family, mu, shape) {
  switch(family, invgauss = sqrt(mu^3 / shape), gamma = mu / sqrt(shape), shape)
}

# Component m's density, cdf, quantiles and draws (`df`: the t's degrees
# of freedom or the ex-Gaussian's tau), written with R's own functions (the
# core's densities are checked against them).
component_density <- function(family, x, mu, shape, df = NULL) {
  switch(family,
         exgauss = exp(0.5 * (shape / df)^2 - (x - mu) / df +
                         stats::pnorm((x - mu) / shape - shape / df, log.p = TRUE)) / df,
         t = stats::dt((x - mu) / shape, df) / shape,
         normal = stats::dnorm(x, mu, shape),
         lognormal = stats::dlnorm(x, mu, shape),
         gamma = stats::dgamma(x, shape = shape, rate = shape / mu),
         invgauss = statmod::dinvgauss(x, mean = mu, shape = shape))
}

component_cdf <- function(family, x, mu, shape, df = NULL) {
  switch(family,
         exgauss = exgauss_cdf(x, mu, shape, df),
         t = stats::pt((x - mu) / shape, df),
         normal = stats::pnorm(x, mu, shape),
         lognormal = stats::plnorm(x, mu, shape),
         gamma = stats::pgamma(x, shape = shape, rate = shape / mu),
         invgauss = statmod::pinvgauss(x, mean = mu, shape = shape))
}

component_quantile <- function(family, p, mu, shape, df = NULL) {
  switch(family,
         exgauss = exgauss_quantile(p, mu, shape, df),
         t = mu + shape * stats::qt(p, df),
         normal = stats::qnorm(p, mu, shape),
         lognormal = stats::qlnorm(p, mu, shape),
         gamma = stats::qgamma(p, shape = shape, rate = shape / mu),
         # statmod::qinvgauss() can fail far in the tails of a very skewed
         # component: NA there
         invgauss = tryCatch(suppressWarnings(statmod::qinvgauss(p, mean = mu, shape = shape)),
                             error = function(e) rep(NA_real_, length(p))))
}

component_draws <- function(family, n, mu, shape, df = NULL) {
  switch(family,
         exgauss = stats::rnorm(n, mu, shape) + stats::rexp(n, 1 / df),
         t = mu + shape * stats::rt(n, df),
         normal = stats::rnorm(n, mu, shape),
         lognormal = stats::rlnorm(n, mu, shape),
         gamma = stats::rgamma(n, shape = shape, rate = shape / mu),
         invgauss = statmod::rinvgauss(n, mean = mu, shape = shape))
}

# A central range holding nearly all of a component (4 sds either side on
# the scale the family is fitted on; for the t, its 0.1% and 99.9%
# quantiles, at least 4 scales), in the data's units.
component_range <- function(family, mu, shape, df = NULL) {
  sd <- fitted_sd(family, mu, shape)
  if (identical(family, "t")) sd <- shape * pmax(4, stats::qt(0.999, df)) / 4
  # the ex-Gaussian's long right tail: its 99.9% quantile is below
  # mu + 4 sigma + 7 tau
  if (identical(family, "exgauss")) return(c(min(mu - 4 * sd), max(mu + 4 * sd + 7 * df)))
  r <- c(min(mu - 4 * sd), max(mu + 4 * sd))
  if (identical(family, "lognormal")) exp(r) else r
}

# The ex-Gaussian's cdf, Phi(z) - exp(sigma^2 / (2 tau^2) - (x - mu) / tau)
# Phi(z - sigma / tau) with z = (x - mu) / sigma, the second term from its
# logarithm (it is a ratio of tiny numbers far below the mode).
exgauss_cdf <- function(x, mu, sigma, tau) {
  z <- (x - mu) / sigma
  second <- exp(0.5 * (sigma / tau)^2 - (x - mu) / tau + stats::pnorm(z - sigma / tau, log.p = TRUE))
  second[!is.na(x) & x == -Inf] <- 0
  pmin(pmax(stats::pnorm(z) - second, 0), 1)
}

# Its quantiles, by root-finding on the cdf (no closed form), NA where p is
# not in (0, 1) or the root is not found.
exgauss_quantile <- function(p, mu, sigma, tau) {
  one <- function(q) {
    if (is.na(q) || q < 0 || q > 1) return(NA_real_)
    if (q == 0 || q == 1) return(if (q == 0) -Inf else Inf)
    # the Normal part's quantile is below (the exponential part is >= 0);
    # above, the sum of both parts' quantiles, widened until it is
    lo <- mu + sigma * stats::qnorm(q)
    hi <- lo + tau * -log1p(-q) + sigma
    f <- function(x) exgauss_cdf(x, mu, sigma, tau) - q
    step <- tau
    while (f(hi) < 0) {
      hi <- hi + step
      step <- 2 * step
    }
    tryCatch(stats::uniroot(f, c(lo, hi), tol = 1e-12 * max(1, abs(hi)))$root,
             error = function(e) NA_real_)
  }
  unname(vapply(p, one, 0))
}

# bulkem()'s `df`: NULL, or the t's fixed degrees of freedom (one, or one
# per component with one K), in the core's range.
check_df <- function(df, family, num.components) {
  if (is.null(df)) return(NULL)
  if (family != "t") stop_arg("`df` applies to family = \"t\" only")
  range <- model_limits()$df_range
  if (!is.numeric(df) || length(df) == 0 || anyNA(df) || any(df < range[1] | df > range[2])) {
    stop_arg("`df` must be NULL or numbers in [", range[1], ", ", range[2], "]")
  }
  if (length(df) != 1 && !(length(num.components) == 1 && length(df) == num.components)) {
    stop_arg("`df` must be one number, or one per component with one `num.components` (",
             length(df), " given)")
  }
  as.double(df)
}
