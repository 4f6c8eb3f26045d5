# The noise component (bulkem(noise = TRUE)): a uniform density over a
# support, its weight estimated with the components' (noise.rs in the core).
# A fit with one carries `noise` (its weight) and `noise_support` (lower,
# upper); without one, both are NA.

has_noise <- function(fit) {
  s <- fit$noise_support
  length(s) == 2 && !anyNA(s) && length(fit$noise) == 1 && !is.na(fit$noise)
}

# The noise's support on the scale the components are of: the values less
# a shifted fit's shift (R/shift.R), as predict() and the others compute;
# `noise_support` itself is in the data's units.
noise_support_fitted <- function(fit) fit$noise_support - fit_shift(fit)

# The noise's share of the mixture density at x (on that scale): weight /
# width inside the support, 0 outside, NA at NA.
noise_density <- function(fit, x) {
  s <- noise_support_fitted(fit)
  ifelse(x >= s[1] & x <= s[2], fit$noise / (s[2] - s[1]), 0)
}

# The noise's share of the mixture cdf at x (on that scale).
noise_cdf <- function(fit, x) {
  s <- noise_support_fitted(fit)
  fit$noise * stats::punif(x, s[1], s[2])
}

# `n` draws from the uniform over the fit's noise support (on that scale).
noise_draws <- function(fit, n) {
  s <- noise_support_fitted(fit)
  stats::runif(n, s[1], s[2])
}

# bulkem()'s `noise.support`, checked, as the flat (lower, upper) pairs the
# core takes: NULL (each dataset's range: no pairs), one support for every
# dataset (one pair), or one per dataset: a list of length-2 vectors (NULL:
# that dataset's range, a pair of NAs) or a matrix of two columns.
check_noise_support <- function(support, n_datasets, noise) {
  if (is.null(support)) return(numeric(0))
  if (!noise) stop_arg("`noise.support` is given but `noise = FALSE`: set `noise = TRUE` to fit a noise component")
  bad <- function(what) {
    stop_arg("`noise.support` must be c(lower, upper) with finite lower < upper, or one such pair per dataset ",
             "(a list or a two-column matrix with ", n_datasets, " rows)", what)
  }
  flatten_pairs(support, n_datasets, function(p) all(is.finite(p)) && p[1] < p[2], bad)
}
