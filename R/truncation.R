# Truncated data (bulkem()'s `truncation`): the windows each dataset was
# observed in, checked and flattened for the core (src/rust/core/src/
# truncation.rs fits them), and what predict(), quantile(), simulate() and
# plot() need of a truncated fit: its mixture renormalised over the window.

# bulkem()'s `truncation`: NULL, c(lower, upper) for every dataset, or one
# such pair per dataset (a list with NULL for a dataset not truncated, or
# a two-column matrix), -Inf or Inf for an open side. Returns the pairs
# flattened (NA, NA for a dataset not truncated), numeric(0) for NULL. The
# core checks what depends on the family and the other arguments.
check_truncation <- function(truncation, n_datasets, multivariate) {
  if (is.null(truncation)) return(numeric(0))
  if (multivariate) stop_arg("`truncation` is for univariate data; multivariate fits do not take it yet")
  bad <- function(what) {
    stop_arg("`truncation` must be c(lower, upper) with lower < upper (-Inf or Inf for an open side, ",
             "not both), or one such pair per dataset (a list, NULL where a dataset is not truncated, ",
             "or a two-column matrix with ", n_datasets, " rows)", what)
  }
  flatten_pairs(truncation, n_datasets, function(p) p[1] < p[2] && !all(is.infinite(p)), bad)
}

# Whether a fit's likelihood is renormalised over a window.
is_truncated <- function(fit) length(fit$truncation) == 2

# The untruncated mixture's cdf at x, the components' alone (without the
# noise component, which mixture_cdf() adds).
untruncated_cdf <- function(fit, x) {
  shape <- fit_shape(fit)
  p <- numeric(length(x))
  for (m in seq_along(fit$mu)) {
    p <- p + fit$alpha[m] * component_cdf(fit$family, x, fit$mu[m], shape[m], fit_third(fit)[m])
  }
  p
}

# The untruncated mixture's cdf at x with its noise component, if it has
# one: what a truncated fit renormalises.
untruncated_cdf_all <- function(fit, x) {
  p <- untruncated_cdf(fit, x)
  if (has_noise(fit)) p <- p + noise_cdf(fit, x)
  p
}

# The fit's window on the scale its components are of: the values less a
# shifted fit's shift (R/shift.R), which predict() and the others compute on.
fitted_window <- function(fit) fit$truncation - fit_shift(fit)

# Q, the untruncated mixture's mass inside the fit's window (its noise
# component's share included).
window_mass <- function(fit) {
  diff(untruncated_cdf_all(fit, fitted_window(fit)))
}

# Densities `d` of the untruncated mixture at x (a vector, or a matrix
# with a row per x), renormalised over the window: 0 outside it, d / Q
# inside.
truncated_density <- function(fit, x, d) {
  w <- fitted_window(fit)
  d * ifelse(x < w[1] | x > w[2], 0, 1 / window_mass(fit))
}

# The truncated mixture's cdf at x: (F(x) - F(lower)) / Q within the window.
truncated_cdf <- function(fit, x) {
  w <- fitted_window(fit)
  at <- pmin(pmax(x, w[1]), w[2])
  (untruncated_cdf_all(fit, at) - untruncated_cdf_all(fit, w[1])) / window_mass(fit)
}

# n draws of the truncated mixture: the untruncated mixture's draws inside
# the window, drawn in rounds until there are n (rejection), with an error
# where the window holds too little of the mixture to draw from this way:
# rounds of at most `truncated_round` draws (memory), at most
# `truncated_budget` draws expected in all (time).
truncated_round <- 1e6
truncated_budget <- 1e8
truncated_draws <- function(fit, n, draw) {
  q <- window_mass(fit)
  if (!(q >= 1e-6)) {
    stop_arg("the window of the fit holds ", format(q, digits = 3), " of its mixture: too little to simulate ",
             "by drawing the mixture and keeping what falls inside")
  }
  if (n / q > truncated_budget) {
    stop_arg("the window of the fit holds ", format(q, digits = 3), " of its mixture: simulating ",
             format(n, big.mark = ","), " values would take about ", format(signif(n / q, 2), big.mark = ","),
             " draws of it (at most ", format(truncated_budget, big.mark = ",", scientific = FALSE),
             "): ask for fewer (`nsim`, `n`)")
  }
  w <- fitted_window(fit)
  out <- numeric(0)
  while (length(out) < n) {
    x <- draw(min(ceiling(1.2 * (n - length(out)) / q) + 10, truncated_round))
    out <- c(out, x[x >= w[1] & x <= w[2]])
  }
  out[seq_len(n)]
}
