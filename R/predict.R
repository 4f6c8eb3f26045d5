# Per-observation output and the fitted mixture as a distribution: predict(),
# quantile() and simulate() for one fit (`bulkem_fit`) and for many (`bulkem`).

# The shape parameters of a fit (lambda or sigma).
fit_shape <- function(fit) fit[[shape_name(fit$family)]]

# The third parameter per component: the t's degrees of freedom `df` or the
# ex-Gaussian's `tau` (numeric(0) for another family).
fit_third <- function(fit) {
  third <- if (is.null(fit$tau)) fit$df else fit$tau
  if (is.null(third)) numeric(0) else as.double(third)
}

has_fit <- function(fit) isTRUE(fit$fit_success)

# `...` of a method that takes no further arguments: a misspelt argument
# (`typ = "density"`) is an error, not silently ignored.
check_dots_empty <- function(...) {
  if (...length() > 0) {
    nms <- names(list(...))
    if (is.null(nms)) nms <- rep("", ...length())
    stop_arg("unknown argument(s): ",
             paste(ifelse(nzchar(nms), nms, "<unnamed>"), collapse = ", "))
  }
}

# One of `choices`, partially matched as match.arg() does, or an argument
# error naming `arg`.
match_choice <- function(value, choices, arg) {
  if (identical(value, choices)) return(choices[1])
  i <- if (is.character(value) && length(value) == 1 && !is.na(value)) pmatch(value, choices) else NA
  if (is.na(i)) {
    stop_arg("`", arg, "` must be one of ", paste0("\"", choices, "\"", collapse = ", "))
  }
  choices[i]
}

# The data to compute on: `newdata` if given, else the data kept in the fit.
fit_data <- function(fit, newdata, arg = "newdata") {
  if (is.null(newdata)) {
    if (is.null(fit$data)) {
      stop_arg("`", arg, "` is missing and the fit holds no data: fit with ",
               "control = list(keep.data = TRUE), or pass `", arg, "`")
    }
    newdata <- fit$data
  }
  if (!is.numeric(newdata) || is.object(newdata)) stop_arg("`", arg, "` must be a numeric vector")
  as.double(newdata)
}

# Posterior probabilities (length(x) x K; with a noise component a last
# column, "noise"), by the package's own E-step; NA outside the family's
# support, at NA and where the dataset has no fit.
mixture_posterior <- function(fit, x) {
  x <- x - fit_shift(fit)
  noise <- has_noise(fit)
  k <- NROW(fit$mu) + noise
  post <- if (has_fit(fit)) {
    core_value(posterior_(x, fit$family, fit$alpha, fit$mu, fit_shape(fit), fit_third(fit),
                          if (noise) c(fit$noise, noise_support_fitted(fit)) else numeric(0)))
  } else {
    rep(NA_real_, length(x) * k)
  }
  post <- matrix(post, nrow = length(x), ncol = k)
  post[is.nan(post)] <- NA_real_
  if (noise) colnames(post) <- c(rep("", k - 1), "noise")
  post
}

# Most likely component of each row of a posterior matrix (NA where
# unknown; 0 where it is the noise component, as mclust numbers it).
posterior_class <- function(post) {
  best <- max.col(replace(post, is.na(post), -Inf), ties.method = "first")
  best[rowSums(is.na(post)) > 0] <- NA_integer_
  if (identical(colnames(post)[ncol(post)], "noise")) best[best == ncol(post)] <- 0L
  as.integer(best)
}

# Student's t: each observation's expected precision weight, the E-step's
# u = (df + 1) / (df + ((x - mu) / sigma)^2) of each component averaged by
# the posterior probabilities `post` (a noise component's share counts 0):
# near 1 for a typical value, small for an outlier.
t_weights <- function(fit, x, post = mixture_posterior(fit, x)) {
  k <- NROW(fit$mu)
  w <- numeric(length(x))
  for (m in seq_len(k)) {
    z <- (x - fit$mu[m]) / fit$sigma[m]
    w <- w + post[, m] * (fit$df[m] + 1) / (fit$df[m] + z^2)
  }
  w
}

posterior_uncertainty <- function(post) {
  u <- 1 - apply(post, 1, max)
  if (length(u) == 0) numeric(0) else u
}

# Mixture density at x: sum of alpha_m p_m(x), from the package's own density
# code; 0 outside the support, NA at NA or without a fit.
mixture_density <- function(fit, x) {
  x <- x - fit_shift(fit)
  if (!has_fit(fit)) return(rep(NA_real_, length(x)))
  d <- matrix(core_value(weighted_densities_(x, fit$family, fit$alpha, fit$mu, fit_shape(fit), fit_third(fit))),
              nrow = length(x))
  d <- rowSums(d)
  if (has_noise(fit)) d <- d + noise_density(fit, x)
  if (is_truncated(fit)) d <- truncated_density(fit, x, d)
  d[is.na(x)] <- NA_real_
  d
}

# Mixture cdf at x: sum of alpha_m F_m(x), with stats::pnorm or
# statmod::pinvgauss (mean mu, shape lambda).
mixture_cdf <- function(fit, x) {
  x <- x - fit_shift(fit)
  if (!has_fit(fit)) return(rep(NA_real_, length(x)))
  if (is_truncated(fit)) {
    p <- truncated_cdf(fit, x)
    p[is.na(x)] <- NA_real_
    return(pmin(pmax(p, 0), 1))
  }
  p <- untruncated_cdf(fit, x)
  if (has_noise(fit)) p <- p + noise_cdf(fit, x)
  p[is.na(x)] <- NA_real_
  pmin(pmax(p, 0), 1)
}

# Quantiles of the components, by component (a matrix length(p) x K); NA
# where statmod::qinvgauss() cannot find one (it can fail far in the tails
# of a very skewed component).
component_quantiles <- function(fit, p) {
  shape <- fit_shape(fit)
  vapply(seq_along(fit$mu), function(m) component_quantile(fit$family, p, fit$mu[m], shape[m], fit_third(fit)[m]),
         numeric(length(p)))
}

#' Posterior probabilities, classes, density and cdf of a fitted mixture
#'
#' `predict()` computes, for each observation, what the fitted mixture says
#' about it: the posterior probability of each component (flexmix's
#' `posterior()`, mclust's `z`), the most likely component (`clusters()`,
#' `classification`), the uncertainty of that classification (one minus the
#' largest posterior probability, mclust's `uncertainty`), or the mixture's
#' density or cumulative distribution function. Without `newdata` it uses
#' the data the fit was made on, kept by `bulkem(..., control = list(keep.data
#' = TRUE))`.
#'
#' The inverse Gaussian components are parameterised as in statmod, by their
#' mean `mu` and shape `lambda` (dispersion `1 / lambda`, variance
#' `mu^3 / lambda`); the Normal ones by mean `mu` and standard deviation
#' `sigma`. The density is the package's own (the one EM uses); the cdf is
#' \eqn{\sum_m \alpha_m F_m(x)}{sum(alpha[m] * F[m](x))} with
#' [statmod::pinvgauss()] or [stats::pnorm()].
#'
#' A noise component adds its uniform density over its support to the
#' density and the cdf; values outside its support cannot be noise.
#'
#' Values outside the family's support (`x <= 0` for the inverse Gaussian)
#' have density 0, cdf 0 and `NA` posterior probabilities, class and
#' uncertainty; `NA` values give `NA`; a dataset without a fit gives `NA`
#' throughout.
#'
#' @param object A `bulkem_fit` (one element of a `bulkem` result), or a
#'   `bulkem` result.
#' @param newdata The values to compute at. For a `bulkem_fit`, a numeric
#'   vector. For a `bulkem` result, a list of numeric vectors, one per
#'   dataset in the same order, or one numeric vector used for every
#'   dataset (e.g. a grid for the densities). Default: the data kept in the
#'   fits (an error if a fit holds none).
#' @param type What to compute: `"posterior"` (default), `"class"`,
#'   `"uncertainty"`, `"density"` or `"cdf"` (may be abbreviated). Any other
#'   value is an error.
#' @param ... Not used; any argument given here is an error.
#' @returns For a `bulkem_fit`: with `type = "posterior"`, a data frame with
#'   columns `x`, `comp1` .. `compK` (posterior probabilities), with a
#'   noise component (`bulkem(noise = TRUE)`) `noise` (the probability of
#'   being noise), and `component` (the most likely one, as an integer; 0
#'   for the noise), as in earlier versions; for Student's t
#'   (`family = "t"`) also `weight`, each observation's expected precision
#'   weight (see [bulkem()]'s Parameterisation; small for an outlier, so
#'   `order(weight)` lists the outliers first); with `"class"` an integer
#'   vector; with `"uncertainty"`, `"density"` or `"cdf"` a numeric vector;
#'   one element per value of
#'   `newdata`. For a `bulkem` result: a list with one such element per
#'   dataset, named like the datasets. For one long data frame of all
#'   datasets, use [augment()][augment.bulkem].
#' @seealso [quantile.bulkem_fit()], [simulate.bulkem_fit()],
#'   [augment.bulkem_fit()].
#' @examples
#' set.seed(3)
#' fits <- bulkem(list(c(rnorm(200), rnorm(200, 6))), family = "normal",
#'                random.inits = 5, use.gpu = FALSE, control = list(keep.data = TRUE))
#' predict(fits[[1]], c(-1, 3, 7))
#' predict(fits[[1]], c(-1, 3, 7), type = "class")
#' predict(fits[[1]], c(-1, 3, 7), type = "density")
#' predict(fits[[1]], c(-1, 3, 7), type = "cdf")
#' table(predict(fits[[1]], type = "class"))   # the fitted data
#' predict(fits, newdata = 0:2, type = "uncertainty")
#' @export
predict.bulkem_fit <- function(object, newdata = NULL,
                               type = c("posterior", "class", "uncertainty", "density", "cdf"),
                               ...) {
  check_dots_empty(...)
  type <- match_choice(type, c("posterior", "class", "uncertainty", "density", "cdf"), "type")
  x <- fit_data(object, newdata)
  predict_values(object, x, type)
}

predict_values <- function(fit, x, type) {
  switch(type,
    density = mixture_density(fit, x),
    cdf = mixture_cdf(fit, x),
    {
      post <- mixture_posterior(fit, x)
      switch(type,
        class = posterior_class(post),
        uncertainty = posterior_uncertainty(post),
        posterior = {
          out <- data.frame(x = x, post)
          k <- NROW(fit$mu)
          names(out) <- c("x", paste0("comp", seq_len(k)), if (ncol(post) > k) "noise")
          out$component <- posterior_class(post)
          if (identical(fit$family, "t")) out$weight <- t_weights(fit, x, post)
          out
        })
    })
}

# newdata for a bulkem result: one vector per dataset (NULL = the kept data).
result_newdata <- function(object, newdata) {
  if (is.null(newdata)) return(vector("list", length(object)))
  if (is.numeric(newdata) && !is.object(newdata)) return(rep(list(newdata), length(object)))
  if (!is.list(newdata) || is.data.frame(newdata) || length(newdata) != length(object)) {
    stop_arg("`newdata` must be a numeric vector or a list with one numeric vector per dataset (",
             length(object), ")")
  }
  newdata
}

#' @rdname predict.bulkem_fit
#' @export
predict.bulkem <- function(object, newdata = NULL,
                           type = c("posterior", "class", "uncertainty", "density", "cdf"),
                           ...) {
  check_dots_empty(...)
  type <- match_choice(type, c("posterior", "class", "uncertainty", "density", "cdf"), "type")
  newdata <- result_newdata(object, newdata)
  out <- Map(function(f, d) predict_values(f, fit_data(f, d), type), unclass(object), newdata)
  names(out) <- dataset_names(object)
  out
}

#' Quantiles of a fitted mixture
#'
#' The quantile function of the fitted mixture distribution, found by
#' root-finding ([stats::uniroot()]) on its cdf
#' \eqn{\sum_m \alpha_m F_m(x)}{sum(alpha[m] * F[m](x))}. The root is always
#' bracketed: the mixture's `p` quantile lies between the smallest and the
#' largest of its components' `p` quantiles ([stats::qnorm()],
#' [statmod::qinvgauss()]; inverse Gaussian by mean `mu` and shape
#' `lambda`), and where rounding (or a component quantile that statmod
#' cannot find, far in the tail of a very skewed component) leaves the
#' bracket short, it is widened until the cdf changes sign.
#'
#' @param x A `bulkem_fit`, or a `bulkem` result.
#' @param probs Probabilities, in \[0, 1\].
#' @param names If `TRUE`, the result is named like [stats::quantile()]'s
#'   (`"25%"`).
#' @param tol Tolerance of the root, relative to the scale of the data.
#' @param ... Not used; any argument given here is an error.
#' @returns For a `bulkem_fit`, a numeric vector as long as `probs` (`NA`
#'   without a fit; for `p = 0` and `p = 1` the ends of the support). For a
#'   `bulkem` result, a matrix with one row per dataset (named like the
#'   datasets) and one column per probability.
#' @examples
#' set.seed(5)
#' fits <- bulkem(list(a = c(rnorm(200), rnorm(200, 5)), b = rnorm(300, 2)),
#'                family = "normal", random.inits = 5, use.gpu = FALSE)
#' quantile(fits$a, c(0.05, 0.5, 0.95))
#' quantile(fits, c(0.05, 0.5, 0.95))
#' @importFrom stats quantile
#' @export
quantile.bulkem_fit <- function(x, probs = seq(0, 1, 0.25), names = TRUE, tol = 1e-10, ...) {
  check_dots_empty(...)
  check_probs(probs)
  out <- vapply(probs, function(p) mixture_quantile(x, p, tol), 0)
  if (isTRUE(names)) names(out) <- prob_names(probs)
  out
}

#' @rdname quantile.bulkem_fit
#' @export
quantile.bulkem <- function(x, probs = seq(0, 1, 0.25), names = TRUE, tol = 1e-10, ...) {
  check_dots_empty(...)
  check_probs(probs)
  out <- matrix(unlist(lapply(unclass(x), quantile.bulkem_fit, probs = probs, names = FALSE, tol = tol)),
                nrow = length(x), ncol = length(probs), byrow = TRUE)
  dimnames(out) <- list(dataset_names(x), if (isTRUE(names)) prob_names(probs))
  out
}

check_probs <- function(probs) {
  if (!is.numeric(probs) || anyNA(probs) || any(probs < 0 | probs > 1)) {
    stop_arg("`probs` must be numbers between 0 and 1")
  }
}

# As stats::quantile() names them.
prob_names <- function(probs) {
  paste0(formatC(100 * probs, format = "fg", width = 1, digits = max(2L, getOption("digits"))), "%")
}

mixture_quantile <- function(fit, p, tol) {
  if (!has_fit(fit)) return(NA_real_)
  normal <- !positive_family(fit$family)
  window <- if (is_truncated(fit)) fit$truncation else c(if (normal) -Inf else fit_shift(fit), Inf)
  if (p == 0) return(window[1])
  if (p == 1) return(window[2])
  f <- function(x) mixture_cdf(fit, x) - p
  # The mixture's p quantile lies between its components' (F(lo) <= p <=
  # F(hi) in exact arithmetic); widen the bracket where rounding or a
  # component quantile statmod could not find leaves it short.
  q <- component_quantiles(fit, p) + fit_shift(fit)
  q <- q[is.finite(q)]
  if (length(q) == 0) q <- component_range(fit$family, fit$mu, fit_shape(fit), fit_third(fit)) + fit_shift(fit)
  lo <- max(min(q), window[1])
  hi <- min(max(q), window[2])
  if (has_noise(fit)) {
    # the noise's mass can carry the quantile anywhere on its support
    lo <- min(lo, fit$noise_support[1])
    hi <- max(hi, fit$noise_support[2])
  }
  sd <- fitted_sd(fit$family, fit$mu, fit_shape(fit))
  step <- max(hi - lo, sd, .Machine$double.xmin)
  for (i in seq_len(3000)) {
    if (f(lo) <= 0) break
    if (normal) lo <- lo - step else lo <- lo / 2
    step <- 2 * step
  }
  step <- max(hi - lo, sd, .Machine$double.xmin)
  for (i in seq_len(3000)) {
    if (f(hi) >= 0) break
    if (normal) hi <- hi + step else hi <- 2 * hi
    step <- 2 * step
  }
  flo <- f(lo)
  fhi <- f(hi)
  if (flo == 0 || lo == hi) return(lo)
  if (fhi == 0) return(hi)
  scale <- max(abs(lo), abs(hi), hi - lo)
  stats::uniroot(f, c(lo, hi), f.lower = flo, f.upper = fhi, tol = tol * scale, maxiter = 1000)$root
}

#' Random samples from a fitted mixture
#'
#' Draws `nsim` samples of `n` observations each from the fitted mixture,
#' following R's [stats::simulate()] convention: `seed` sets the random
#' number generator for this call only (R's state is restored afterwards),
#' and the result's attribute `"seed"` records how to draw the same samples
#' again. Components are drawn with probabilities `alpha`, then values with
#' [stats::rnorm()] or [statmod::rinvgauss()] (inverse Gaussian by mean `mu`
#' and shape `lambda`).
#'
#' @param object A `bulkem_fit`, or a `bulkem` result.
#' @param nsim Number of samples.
#' @param seed `NULL`, or a number passed to [set.seed()] (the previous
#'   random number state is restored on exit).
#' @param n Observations per sample; default, the number of observations
#'   the fit was made on (for a `bulkem` result, each dataset's own).
#' @param ... Not used; any argument given here is an error.
#' @returns For a `bulkem_fit`, a data frame with `n` rows and columns
#'   `sim_1` .. `sim_<nsim>`, with attribute `"seed"` as for
#'   [stats::simulate()]; an error if the dataset has no fit. For a `bulkem`
#'   result, a list of such data frames, one per dataset, named like the
#'   datasets (all `NA` for a dataset without a fit), with the attribute
#'   `"seed"` on the list.
#' @examples
#' set.seed(6)
#' fits <- bulkem(list(a = c(rnorm(200), rnorm(200, 5))), family = "normal",
#'                random.inits = 5, use.gpu = FALSE)
#' s <- simulate(fits$a, nsim = 2, seed = 1)
#' head(s)
#' str(simulate(fits, n = 5, seed = 1))
#' @importFrom stats simulate
#' @export
simulate.bulkem_fit <- function(object, nsim = 1, seed = NULL, n = object$n, ...) {
  check_dots_empty(...)
  if (!has_fit(object)) stop_arg("`object` has no fit (status \"", object$status, "\") to simulate from")
  nsim <- check_count(nsim, "nsim")
  n <- check_count(n, "n")
  rng <- simulation_seed(seed)
  if (!is.null(rng$restore)) on.exit(rng$restore())
  out <- draw_samples(object, n, nsim)
  attr(out, "seed") <- rng$state
  out
}

#' @rdname simulate.bulkem_fit
#' @export
simulate.bulkem <- function(object, nsim = 1, seed = NULL, n = NULL, ...) {
  check_dots_empty(...)
  nsim <- check_count(nsim, "nsim")
  if (!is.null(n)) n <- check_count(n, "n")
  rng <- simulation_seed(seed)
  if (!is.null(rng$restore)) on.exit(rng$restore())
  out <- lapply(unclass(object), function(f) draw_samples(f, if (is.null(n)) f$n else n, nsim))
  names(out) <- dataset_names(object)
  attr(out, "seed") <- rng$state
  out
}

check_count <- function(value, arg) {
  if (!is.numeric(value) || length(value) != 1 || is.na(value) || value < 0 ||
      value != round(value) || value > .Machine$integer.max) {
    stop_arg("`", arg, "` must be a whole number >= 0")
  }
  as.integer(value)
}

# The seed handling of stats:::simulate.lm: R's state as it is (seed NULL),
# or set.seed(seed) now and the previous state put back by `restore`.
simulation_seed <- function(seed) {
  if (!exists(".Random.seed", envir = .GlobalEnv, inherits = FALSE)) stats::runif(1)
  if (is.null(seed)) {
    return(list(state = get(".Random.seed", envir = .GlobalEnv), restore = NULL))
  }
  saved <- get(".Random.seed", envir = .GlobalEnv)
  set.seed(seed)
  list(state = structure(seed, kind = as.list(RNGkind())),
       restore = function() assign(".Random.seed", saved, envir = .GlobalEnv))
}

draw_samples <- function(fit, n, nsim) {
  total <- n * nsim
  # the mixture with its noise component (component 0)
  with_noise <- function(total) {
    k <- length(fit$alpha)
    comp <- sample.int(k + 1L, total, replace = TRUE, prob = c(fit$alpha, fit$noise)) %% (k + 1L)
    x <- numeric(total)
    on <- comp > 0
    if (any(on)) {
      shape <- fit_shape(fit)
      x[on] <- component_draws(fit$family, sum(on), fit$mu[comp[on]], shape[comp[on]], fit_third(fit)[comp[on]])
    }
    x[!on] <- noise_draws(fit, sum(!on))
    x
  }
  x <- if (!has_fit(fit)) {
    rep(NA_real_, total)
  } else if (has_noise(fit)) {
    if (total == 0) numeric(0) else if (is_truncated(fit)) truncated_draws(fit, total, with_noise) else with_noise(total)
  } else {
    comp <- if (length(fit$alpha) == 1) {
      rep(1L, total)
    } else {
      sample.int(length(fit$alpha), total, replace = TRUE, prob = fit$alpha)
    }
    shape <- fit_shape(fit)
    if (total == 0) {
      numeric(0)
    } else if (is_truncated(fit)) {
      truncated_draws(fit, total, function(n) {
        comp <- sample.int(length(fit$alpha), n, replace = TRUE, prob = fit$alpha)
        component_draws(fit$family, n, fit$mu[comp], shape[comp], fit_third(fit)[comp])
      })
    } else {
      component_draws(fit$family, total, fit$mu[comp], shape[comp], fit_third(fit)[comp])
    }
  }
  out <- as.data.frame(matrix(x + if (has_fit(fit)) fit_shift(fit) else 0, nrow = n, ncol = nsim))
  names(out) <- paste0("sim_", seq_len(nsim))
  out
}
