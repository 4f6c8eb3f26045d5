#' Standard errors, covariance matrices and Wald intervals of bulkem fits
#'
#' Every fit carries standard errors (field `se`) and a covariance matrix
#' (field `vcov`) from the observed information of the mixture
#' log-likelihood at the fitted parameters. `vcov()` returns the matrix,
#' `confint()` Wald confidence intervals, computed on the log scale for the
#' shapes `lambda` and `shape`, the standard deviations `sigma` and the
#' inverse Gaussian's and the gamma's means `mu`, and on the logit scale
#' for the weights `alpha`,
#' so that they stay inside the parameter space.
#'
#' @section What the standard errors are:
#' The observed information is the negative Hessian of the log-likelihood
#' at the fitted parameters (the maximum-likelihood estimate when the fit
#' converged), computed from exact analytic second derivatives in one pass
#' over the data after EM, on the rescaled data the fit was made on and
#' mapped to the data's units (so data of any scale is handled alike).
#' Its parameters are the \eqn{3K - 1}{3K - 1} free ones: the weights
#' `alpha1` .. `alpha(K-1)`, the means `mu1` .. `muK`, and the inverse
#' Gaussian shapes `lambda1` .. `lambdaK` (statmod's parameterisation,
#' dispersion `1 / lambda`), the Normal (or lognormal) standard deviations
#' `sigma1` .. `sigmaK` or the gamma shapes `shape1` .. `shapeK`, in that
#' order. The weights sum to one, so
#' \eqn{\alpha_K = 1 - \sum_{j<K} \alpha_j}{alphaK = 1 - sum(alpha[-K])} is
#' not a free parameter: `vcov` leaves it out and its standard error in `se`
#' comes from the delta method (with one component, `alpha1` is 1 and its
#' standard error 0). `vcov` is the inverse of the observed information and
#' `se` the square roots of its diagonal.
#'
#' `confint()` gives Wald intervals for all \eqn{3K}{3K} parameters, on a
#' scale that keeps them inside the parameter space: the log scale for the
#' positive parameters (the shapes `lambda`, the standard deviations
#' `sigma`, and the inverse Gaussian's means `mu`) and the logit scale for
#' the weights `alpha`, with the end points transformed back. With \eqn{z =
#' z_{(1+level)/2}}{z = qnorm((1 + level) / 2)}, estimate \eqn{\theta}{theta}
#' and standard error \eqn{s}{s} (the delta method gives the standard
#' error on the transformed scale), a positive parameter's interval is
#' \eqn{\exp(\log\theta \pm z s / \theta)}{exp(log(theta) +/- z * s / theta)}
#' and a weight's \eqn{\mathrm{plogis}(\mathrm{qlogis}(\alpha) \pm z s /
#' (\alpha (1 - \alpha)))}{plogis(qlogis(alpha) +/- z * s / (alpha * (1 -
#' alpha)))}; the Normal's means, which may be any number, get \eqn{\theta
#' \pm z s}{theta +/- z * s}. A standard error of 0 (the weight of a
#' one-component fit) gives the estimate as both ends. The standard errors
#' themselves (`se`, `tidy()`'s `std.error`) stay on the parameters' own
#' scale. The intervals rest on the estimate being approximately normal on
#' that scale: good for well-separated components and a few hundred
#' observations per component, poor for small or heavily overlapping
#' components. They ignore the uncertainty of which start won and, with
#' several `num.components`, of the choice of K.
#'
#' When the information is singular (e.g. two identical components, whose
#' weights cannot be told apart), not positive definite (EM stopped short
#' of a maximum, or at a saddle point it could not be moved off; see
#' [bulkem()], "Saddle points") or not finite, the fit has `NA`
#' standard errors and `vcov`, its `message` says why (after any other
#' message, separated by "; "), and its `status` is unchanged. Far from unit
#' scale (about 1e-150 and below, 1e150 and above) the entries of `vcov`
#' for means, shapes and standard deviations, which carry the square of the data's scale, can
#' underflow to 0 or overflow to `Inf`; `se` and `confint()` do not.
#'
#' @param object A `bulkem_fit` (one element of a `bulkem` result) or a
#'   `bulkem` result.
#' @param parm Parameters to give intervals for: names such as `"mu1"` or
#'   `"alpha2"`, or positions in `alpha1, .., alphaK, mu1, .., muK, lambda1
#'   (or sigma1), .., lambdaK`. Default: all of them.
#' @param level Confidence level, a number between 0 and 1.
#' @param ... Not used.
#' @returns `vcov()` of a fit: the \eqn{(3K-1) \times (3K-1)}{(3K-1) x
#'   (3K-1)} covariance matrix with row and column names; of a `bulkem`
#'   result, a list of them, one per dataset. `confint()` of a fit: a matrix
#'   with one row per parameter and columns giving the lower and upper limits
#'   (named like `"2.5 %"` and `"97.5 %"`, as [stats::confint()] names
#'   them); of a `bulkem` result, a data frame with one row per dataset and
#'   parameter and columns `dataset`, `term`, `estimate`, `std.error`,
#'   `conf.low`, `conf.high`.
#' @examples
#' set.seed(4)
#' x <- c(rnorm(300, 0, 1), rnorm(200, 5, 0.5))
#' fits <- bulkem(list(a = x, b = 2 * x), family = "normal", random.inits = 3,
#'                use.gpu = FALSE)
#' fits$a$se
#' vcov(fits$a)
#' confint(fits$a)
#' confint(fits$a, c("mu1", "mu2"), level = 0.9)
#' confint(fits)
#' @name bulkem-vcov
NULL

# The 3K estimates of a fit, named as its `se`.
fit_estimates <- function(object) {
  k <- NROW(object$mu)
  shape <- shape_name(object$family)
  est <- c(object$alpha, object$mu, object[[shape]])
  names(est) <- paste0(rep(c("alpha", "mu", shape), each = k), seq_len(k))
  if (has_noise(object)) est <- c(est, noise = object$noise)
  est
}

has_standard_errors <- function(object) {
  if (is.null(object$se) || is.null(object$vcov)) {
    stop_arg("`object` has no standard errors: it was fitted with ",
             "`control$standard.errors = FALSE` (or by a version of bulkem before they ",
             "were added); fit it again with the default")
  }
}

# Which of the named estimates `parm` picks (all when missing).
pick_parm <- function(parm, est) {
  if (is.null(parm)) return(seq_along(est))
  ok <- if (is.character(parm)) {
    all(parm %in% names(est))
  } else {
    is.numeric(parm) && all(!is.na(parm) & parm >= 1 & parm <= length(est) & parm == round(parm))
  }
  if (!ok) {
    stop_arg("`parm` must name parameters of the fit (", paste(names(est), collapse = ", "),
             ") or give their positions")
  }
  if (is.character(parm)) match(parm, names(est)) else as.integer(parm)
}

# Wald intervals of the estimates `est` with standard errors `se`, each of
# parameter `term` ("alpha", "mu", "lambda", "sigma", "shape", "df" or "tau") of a fit
# of `family` (recycled): on the logit scale for weights, the log scale for
# the positive parameters (lambda, sigma, shape, df, the inverse Gaussian's and
# the gamma's mu), the natural scale for the Normal's and the lognormal's
# mu, by the delta method; end points
# transformed back. A matrix of the lower and upper ends.
wald <- function(est, se, level, term, family) {
  a <- (1 - level) / 2
  a <- c(a, 1 - a)
  z <- stats::qnorm(a[2])
  family <- rep_len(family, length(est))
  logit <- term %in% c("alpha", "noise")
  positive <- term %in% c("lambda", "sigma", "shape", "df", "tau") |
    (term == "mu" & family %in% c("invgauss", "gamma"))
  lo <- est - z * se
  hi <- est + z * se
  l <- positive & !is.na(se)
  lo[l] <- exp(log(est[l]) - z * se[l] / est[l])
  hi[l] <- exp(log(est[l]) + z * se[l] / est[l])
  w <- logit & !is.na(se)
  d <- z * se[w] / (est[w] * (1 - est[w]))
  lo[w] <- stats::plogis(stats::qlogis(est[w]) - d)
  hi[w] <- stats::plogis(stats::qlogis(est[w]) + d)
  # no uncertainty (the weight of K = 1): the estimate itself, not NaN
  fixed <- !is.na(se) & se == 0
  lo[fixed] <- est[fixed]
  hi[fixed] <- est[fixed]
  ci <- cbind(lo, hi)
  dimnames(ci) <- list(names(est), paste(format(100 * a, trim = TRUE, scientific = FALSE, digits = 3), "%"))
  ci
}

# "alpha", "mu", "lambda", "sigma" or "shape" of parameter names such as "alpha2".
term_of <- function(names) sub("[0-9]+$", "", names)

#' @rdname bulkem-vcov
#' @importFrom stats vcov
#' @export
vcov.bulkem_fit <- function(object, ...) {
  has_standard_errors(object)
  object$vcov
}

#' @rdname bulkem-vcov
#' @export
vcov.bulkem <- function(object, ...) {
  out <- lapply(unclass(object), vcov.bulkem_fit)
  names(out) <- dataset_names(object)
  out
}

#' @rdname bulkem-vcov
#' @importFrom stats confint
#' @export
confint.bulkem_fit <- function(object, parm, level = 0.95, ...) {
  has_standard_errors(object)
  check_unit(level, "level")
  est <- fit_estimates(object)
  i <- pick_parm(if (missing(parm)) NULL else parm, est)
  wald(est[i], unname(component_se(object))[i], level, term_of(names(est)[i]), object$family)
}

#' @rdname bulkem-vcov
#' @export
confint.bulkem <- function(object, parm, level = 0.95, ...) {
  check_unit(level, "level")
  fits <- unclass(object)
  for (f in fits) has_standard_errors(f)
  # vectors over all fits at once: results can hold 100,000s of them
  est <- lapply(fits, fit_estimates)
  n <- lengths(est, use.names = FALSE)
  term <- unlist(lapply(est, names), use.names = FALSE)
  est <- unlist(est, use.names = FALSE)
  se <- unlist(lapply(fits, function(f) unname(component_se(f))), use.names = FALSE)
  family <- rep(vapply(fits, function(f) as.character(f$family), "", USE.NAMES = FALSE), n)
  keep <- if (missing(parm) || length(fits) == 0) {
    rep(TRUE, length(est))
  } else {
    # names and positions are those of the fit with the most components
    i <- pick_parm(parm, fit_estimates(fits[[which.max(n)]]))
    if (is.character(parm)) term %in% parm else sequence(n) %in% i
  }
  ci <- wald(est[keep], se[keep], level, term_of(term[keep]), family[keep])
  data.frame(dataset = rep(dataset_names(object), n)[keep], term = term[keep],
             estimate = est[keep], std.error = se[keep], conf.low = unname(ci[, 1]),
             conf.high = unname(ci[, 2]), stringsAsFactors = FALSE)
}
