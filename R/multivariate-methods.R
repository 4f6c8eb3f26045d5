# What users do with a multivariate fit (class bulkem_mvfit, a bulkem_fit
# whose mu is K x d and sigma d x d x K) and a multivariate result (class
# bulkem_mv, a bulkem). logLik(), AIC(), BIC(), nobs(), deviance(),
# glance() and summary() of a result are the univariate methods (they read
# fields every fit has); what depends on the data's shape is here, and what
# is not done for multivariate fits yet says so with a classed error.

#' Multivariate fits
#'
#' A fit of multivariate data (a list of matrices, or a formula with a
#' matrix response; see [bulkem()]) has class `bulkem_mvfit`: its `mu` is a
#' K x d matrix (a row per component, a column per variable), `sigma` a d x
#' d x K array of covariance matrices (whatever the `covariance`
#' structure), `alpha` the K weights, and `covariance` the structure fitted.
#' Components come in the canonical order: ascending mean of the first
#' variable, ties broken by the next. A multivariate t fit (`family = "t"`)
#' has `sigma` the components' scale matrices (a t component's covariance
#' is `sigma * df / (df - 2)` where `df > 2`) and `df` their degrees of
#' freedom; `predict(type = "weight")` gives each observation's expected
#' precision weight, `(df + d) / (df + delta)` averaged over the components
#' by the posterior (`delta` the squared Mahalanobis distance), small for an
#' outlier, and `augment()` adds it as `.weight`. `logLik()`, `AIC()`, `BIC()`,
#' `nobs()`, `glance()` and `summary()` work as for univariate fits;
#' `predict()` gives posteriors, classes, uncertainty and the mixture
#' density of the rows of a matrix; `tidy()` lists every parameter,
#' `augment()` adds each observation's component, posteriors and
#' uncertainty to the data, `simulate()` draws samples from the mixture;
#' [plot()][plot.bulkem_mvfit] draws a scatter-plot matrix with the
#' components' ellipses; [bulkem_bootstrap()] gives bootstrap standard
#' errors and the likelihood-ratio test of K vs K + 1. `quantile()` does
#' not take multivariate fits: it says so with an error of class
#' `bulkem_error_argument`.
#'
#' @section Standard errors:
#' Each fit has `se` and `vcov` (unless fitted with `control =
#' list(standard.errors = FALSE)`), from the observed information of the
#' mixture log-likelihood at the fitted parameters, with exact second
#' derivatives in one pass over the data, on the standardised data the fit
#' was made on and mapped to the data's units, as for univariate fits (see
#' [vcov.bulkem_fit()]). The free parameters, the rows of `vcov`, are in
#' this order: the weights `alpha1` .. `alpha(K-1)` (with a noise
#' component `alpha1` .. `alphaK`, its weight `noise` being 1 minus their
#' sum); the means `mu1.<variable>` .. component by component; then the
#' covariance parameters: `full`, each component's lower triangle column
#' by column, `sigma1.<row>.<column>` (the covariance of the row's and the
#' column's variables; one parameter, moving both entries of the
#' symmetric matrix); `tied`, the one shared matrix's, `sigma.<row>.<column>`;
#' `diagonal`, each component's variances `sigma1.<variable>.<variable>`;
#' `spherical`, each component's one variance `sigma1` (its covariance is
#' `sigma1` times the identity); for a t fit with `df` estimated, each
#' component's degrees of freedom `df1` .. `dfK` (the t's own second
#' derivatives in every parameter, `df` included; none when `df` fixes
#' them). `se` has every parameter: the dependent
#' weight (`alphaK`, or `noise`) too, by the delta method, after the
#' weights (`noise` last). `vcov()` returns the matrix, `confint()` Wald
#' intervals (on the logit scale for the weights, the log scale for the
#' variances and degrees of freedom, the natural scale for means and
#' covariances), `tidy()` a
#' `std.error` column (0 for an entry the structure fixes at 0, the shared
#' matrix's for each component of a tied fit). When the information is
#' singular, not positive definite or not finite, `se` and `vcov` are
#' `NULL` and the fit's `message` says why; `vcov()` and `confint()` of
#' such a fit say so with an error, a result's give `NULL` and `NA` rows
#' for it.
#'
#' @param x,object A multivariate fit or result.
#' @param newdata A numeric matrix (or data frame) with the fit's variables
#'   as columns, by name when it has column names; by default the fitted
#'   data when the fit kept it (`control = list(keep.data = TRUE)`).
#' @param type `"posterior"` (an n x K matrix of membership probabilities),
#'   `"class"` (the most probable component), `"uncertainty"` (1 minus the
#'   largest posterior, as mclust reports it), `"density"` (the mixture
#'   density at each row) or, for t fits, `"weight"` (each row's expected
#'   precision weight).
#' @param ... Not used.
#' With `noise = TRUE` a fit also has `noise` (the weight of a uniform
#' component over the dataset's bounding box) and `noise_support` (that
#' box: a d x 2 matrix of lower and upper bounds); its posterior is the
#' last column of `predict()`'s, `"noise"`, class 0, `augment()`'s
#' `.noise`, and `tidy()` has a `noise` row.
#' @param parm,level For `confint()`: parameters (names as in `se`, or
#'   positions; default all) and the confidence level.
#' @returns `predict()`: as `type` says. `tidy()`: a data frame with one
#'   row per parameter: `component`, `term` (`"alpha"`, `"mu"`,
#'   `"sigma"`, or for t fits `"df"`), `variable` and `variable2` (the covariance's row and
#'   column; NA where they do not apply), `estimate` and `std.error` (NA
#'   without standard errors). `vcov()`: the covariance matrix of the free
#'   parameters (of a result, a list of them, NULL for a fit without).
#'   `confint()` of a fit: a matrix with a row per parameter of `se` and
#'   the lower and upper limits as columns (named like `"2.5 %"`); of a
#'   result, a data frame with `dataset`, `term` (the parameter's name),
#'   `component`, `variable`, `variable2`, `estimate`, `std.error`,
#'   `conf.low` and `conf.high`. `augment()`: the
#'   observations with `.component`, `.posterior_1` .. `.posterior_K` and
#'   `.uncertainty` (for a result, stacked, with `dataset` first).
#'   `simulate()`: a list of `nsim` matrices (`sim_1`, ...), each of `n`
#'   rows, with the attribute `"seed"` as [stats::simulate()] gives it (for
#'   a result, such a list per dataset, NULL where a dataset has no fit).
#' @examples
#' fits <- bulkem(list(faithful = as.matrix(faithful)), num.components = 2,
#'                control = list(threads = 1, keep.data = TRUE))
#' fits$faithful$mu
#' fits$faithful$sigma
#' head(predict(fits$faithful, type = "posterior"))
#' table(predict(fits$faithful, type = "class"))
#' @name bulkem-multivariate
NULL

#' @rdname bulkem-multivariate
#' @export
print.bulkem_mvfit <- function(x, ...) {
  cat(sprintf("bulkem fit: multivariate %s mixture of %d component%s (%s %s), ",
              mv_family_name(x), x$k, if (x$k == 1) "" else "s", x$covariance,
              if (mv_is_t(x)) "scale" else "covariance"),
      sprintf("%d variables, n = %d%s, status %s\n", x$d, x$n,
              if (!is.null(x$nobs) && !isTRUE(x$nobs == x$n)) paste0(" (weights summing to ", format(x$nobs), ")") else "",
              x$status), sep = "")
  if (nzchar(x$message)) cat(x$message, "\n")
  if (isTRUE(x$fit_success)) {
    cat(sprintf("loglik %.4f, AIC %.4f, BIC %.4f, %d iterations, best of %d good start%s\n\n",
                x$loglik, x$aic, x$bic, x$num_iterations, x$starts_ok, if (x$starts_ok == 1) "" else "s"))
    print(stats::coef(x))
  }
  invisible(x)
}

#' @rdname bulkem-multivariate
#' @export
coef.bulkem_mvfit <- function(object, ...) {
  m <- cbind(alpha = object$alpha, object$mu, if (mv_is_t(object)) object$df)
  colnames(m) <- c("alpha", paste0("mu.", colnames(object$mu)), if (mv_is_t(object)) "df")
  rownames(m) <- paste0("comp", seq_len(nrow(m)))
  m
}

#' @rdname bulkem-multivariate
#' @export
predict.bulkem_mvfit <- function(object, newdata = NULL,
                                 type = c("posterior", "class", "uncertainty", "density", "weight"),
                                 ...) {
  check_dots_empty(...)
  type <- match_choice(type, c("posterior", "class", "uncertainty", "density", "weight"), "type")
  x <- mv_newdata(object, newdata)
  if (!has_fit(object)) {
    raise(bulkem_condition("argument", paste0("the fit has no parameters (status ", object$status, ")")))
  }
  if (type == "weight" && !mv_is_t(object)) {
    stop_arg("`type = \"weight\"` is the t's precision weight: this fit's family is \"",
             object$family, "\"")
  }
  logd <- mv_log_components(object, x)
  top <- apply(logd, 1, max)
  if (type == "density") return(exp(top + log(rowSums(exp(logd - top)))))
  post <- exp(logd - top)
  post <- post / rowSums(post)
  colnames(post) <- c(paste0("comp", seq_len(object$k)), if (mv_has_noise(object)) "noise")
  switch(type,
         posterior = post,
         class = mv_class(post, object$k),
         uncertainty = 1 - apply(post, 1, max),
         weight = rowSums(post[, seq_len(object$k), drop = FALSE] * mv_t_weights(object, x)))
}

mv_has_noise <- function(fit) !is.null(fit$noise_support)

mv_is_t <- function(fit) identical(fit$family, "t")

mv_family_name <- function(fit) if (mv_is_t(fit)) "t" else "normal"

# Each row's squared Mahalanobis distance from each component (n x K).
mv_mahalanobis <- function(fit, x) {
  matrix(vapply(seq_len(fit$k), function(m) {
    r <- chol(fit$sigma[, , m])
    colSums(backsolve(r, t(x) - fit$mu[m, ], transpose = TRUE)^2)
  }, numeric(nrow(x))), nrow = nrow(x))
}

# t: each row's expected precision weight per component, (df + d) / (df +
# delta) (n x K).
mv_t_weights <- function(fit, x) {
  delta <- mv_mahalanobis(fit, x)
  sweep(1 / sweep(delta, 2, fit$df, "+"), 2, fit$df + fit$d, "*")
}

# The most probable component, 0 for the noise.
mv_class <- function(post, k) {
  cl <- max.col(post, ties.method = "first")
  cl[cl > k] <- 0L
  cl
}

# The rows to predict for: `newdata`, or the kept data, as a double matrix
# of the fit's variables.
mv_newdata <- function(fit, newdata) {
  if (is.null(newdata)) {
    if (is.null(fit$data)) {
      stop_arg("`newdata` is missing and the fit did not keep its data ",
               "(fit with control = list(keep.data = TRUE), or give newdata)")
    }
    return(fit$data)
  }
  vars <- colnames(fit$mu)
  if (is.data.frame(newdata)) newdata <- as.matrix(newdata)
  if (!is.numeric(newdata) || length(dim(newdata)) != 2) {
    stop_arg("`newdata` must be a numeric matrix of ", fit$d, " columns, not ", describe_type(newdata))
  }
  if (!is.null(colnames(newdata)) && all(vars %in% colnames(newdata))) {
    newdata <- newdata[, vars, drop = FALSE]
  } else if (ncol(newdata) != fit$d) {
    stop_arg("`newdata` has ", ncol(newdata), " columns; the fit has ", fit$d, " variables (",
             paste(vars, collapse = ", "), ")")
  }
  storage.mode(newdata) <- "double"
  newdata
}

# log(alpha_k) + log p_k(x_i): an n x K matrix, by the Cholesky factor of
# each covariance (Normal) or scale matrix (t: log Gamma((df + d)/2) -
# log Gamma(df/2) - d/2 log(df pi) - log|Sigma|/2 - (df + d)/2 log(1 +
# delta/df)); with a noise component, a last column log(noise) - log(volume
# of its box) inside the box (-Inf outside).
mv_log_components <- function(fit, x) {
  d <- fit$d
  delta <- mv_mahalanobis(fit, x)
  out <- vapply(seq_len(fit$k), function(m) {
    half_log_det <- sum(log(diag(chol(fit$sigma[, , m]))))
    if (mv_is_t(fit)) {
      nu <- fit$df[m]
      log(fit$alpha[m]) + lgamma((nu + d) / 2) - lgamma(nu / 2) - 0.5 * d * log(nu * pi) - half_log_det -
        (nu + d) / 2 * log1p(delta[, m] / nu)
    } else {
      log(fit$alpha[m]) - 0.5 * d * log(2 * pi) - half_log_det - 0.5 * delta[, m]
    }
  }, numeric(nrow(x)))
  out <- matrix(out, nrow = nrow(x))
  if (mv_has_noise(fit)) {
    box <- fit$noise_support
    inside <- rowSums(sweep(x, 2, box[, 1], ">=") & sweep(x, 2, box[, 2], "<=")) == d
    out <- cbind(out, ifelse(inside, log(fit$noise) - sum(log(box[, 2] - box[, 1])), -Inf))
  }
  out
}

#' @rdname bulkem-multivariate
#' @export
tidy.bulkem_mvfit <- function(x, ...) {
  tidy_mv(x)
}

#' @rdname bulkem-multivariate
#' @export
tidy.bulkem_mv <- function(x, ...) {
  fits <- unclass(x)
  parts <- Map(function(f, i) {
    out <- tidy_mv(f)
    if (nrow(out) > 0) cbind(dataset = dataset_names(x)[i], out, stringsAsFactors = FALSE) else NULL
  }, fits, seq_along(fits))
  out <- do.call(rbind, parts)
  if (is.null(out)) return(data.frame())
  row.names(out) <- NULL
  out
}

tidy_mv <- function(f) {
  if (!has_fit(f)) return(data.frame())
  vars <- colnames(f$mu)
  k <- f$k
  d <- f$d
  low <- which(lower.tri(diag(d), diag = TRUE), arr.ind = TRUE)
  rows <- lapply(seq_len(k), function(m) {
    data.frame(component = m,
               term = c("alpha", rep("mu", d), rep("sigma", nrow(low))),
               variable = c(NA, vars, vars[low[, 1]]),
               variable2 = c(NA, rep(NA, d), vars[low[, 2]]),
               estimate = c(f$alpha[m], f$mu[m, ], f$sigma[, , m][low]),
               # the parameter of `se` each row is (NA: fixed at 0 by the
               # structure)
               name = c(paste0("alpha", m), paste0("mu", m, ".", vars),
                        mv_sigma_names(f$covariance, m, vars, low)),
               stringsAsFactors = FALSE)
  })
  if (mv_is_t(f)) {
    rows <- Map(function(r, m) {
      rbind(r, data.frame(component = m, term = "df", variable = NA, variable2 = NA, estimate = f$df[m],
                          name = paste0("df", m), stringsAsFactors = FALSE))
    }, rows, seq_len(k))
  }
  out <- do.call(rbind, rows)
  if (mv_has_noise(f)) {
    out <- rbind(out, data.frame(component = NA_integer_, term = "noise", variable = NA, variable2 = NA,
                                 estimate = f$noise, name = "noise", stringsAsFactors = FALSE))
  }
  out$std.error <- if (is.null(f$se)) NA_real_ else ifelse(is.na(out$name), 0, unname(f$se[out$name]))
  out$name <- NULL
  out
}

# The names in `se` of component m's covariance entries (row low[, 1],
# column low[, 2]): NA for an entry the structure fixes at 0.
mv_sigma_names <- function(structure, m, vars, low) {
  row <- vars[low[, 1]]
  col <- vars[low[, 2]]
  diagonal <- low[, 1] == low[, 2]
  switch(structure,
         full = paste0("sigma", m, ".", row, ".", col),
         tied = paste0("sigma.", row, ".", col),
         diagonal = ifelse(diagonal, paste0("sigma", m, ".", row, ".", col), NA),
         spherical = ifelse(diagonal, paste0("sigma", m), NA))
}

# Every parameter of a fit in the order of its `se` (the core's
# mv/information.rs parameter_names): name, component, term, variable,
# variable2, estimate, and the scale its Wald interval is on (wald()'s
# term: "alpha" logit, "sigma" and "df" log, "mu" and "covariance" natural).
mv_parameters <- function(f) {
  vars <- colnames(f$mu)
  k <- f$k
  d <- f$d
  one <- function(name, component, term, variable, variable2, estimate, scale) {
    data.frame(term = name, component = component, parameter = term, variable = variable,
               variable2 = variable2, estimate = estimate, scale = scale, stringsAsFactors = FALSE)
  }
  low <- switch(f$covariance,
                full = , tied = which(lower.tri(diag(d), diag = TRUE), arr.ind = TRUE),
                diagonal = cbind(seq_len(d), seq_len(d)),
                spherical = cbind(1L, 1L))
  matrices <- if (f$covariance == "tied") 1L else seq_len(k)
  sigma <- lapply(matrices, function(m) {
    name <- switch(f$covariance, tied = paste0("sigma.", vars[low[, 1]], ".", vars[low[, 2]]),
                   spherical = paste0("sigma", m),
                   paste0("sigma", m, ".", vars[low[, 1]], ".", vars[low[, 2]]))
    spherical <- f$covariance == "spherical"
    one(name, if (f$covariance == "tied") NA_integer_ else m, "sigma",
        if (spherical) NA else vars[low[, 1]], if (spherical) NA else vars[low[, 2]],
        f$sigma[, , m][low], ifelse(low[, 1] == low[, 2], "sigma", "covariance"))
  })
  rbind(one(paste0("alpha", seq_len(k)), seq_len(k), "alpha", NA, NA, f$alpha, "alpha"),
        one(paste0("mu", rep(seq_len(k), each = d), ".", vars), rep(seq_len(k), each = d), "mu",
            rep(vars, k), NA, as.vector(t(f$mu)), "mu"),
        do.call(rbind, sigma),
        # t's estimated degrees of freedom (none when `df` fixed them)
        if (mv_is_t(f) && any(grepl("^df[0-9]+$", names(f$se)))) {
          one(paste0("df", seq_len(k)), seq_len(k), "df", NA, NA, f$df, "df")
        },
        if (mv_has_noise(f)) one("noise", NA_integer_, "noise", NA, NA, f$noise, "alpha"))
}

# An error unless fit `object` has standard errors.
mv_has_standard_errors <- function(object) {
  if (is.null(object$se) || is.null(object$vcov)) {
    stop_arg("`object` has no standard errors: ",
             if (has_fit(object) && nzchar(object$message)) {
               paste0("its message says why (\"", object$message, "\"), or ")
             },
             "it was fitted with `control$standard.errors = FALSE` or has no fit (status \"",
             object$status, "\")")
  }
}

# Wald intervals of fit f's parameters `i` (rows of mv_parameters()).
mv_wald <- function(f, p, level) {
  se <- if (is.null(f$se)) rep(NA_real_, nrow(p)) else unname(f$se[p$term])
  wald(stats::setNames(p$estimate, p$term), se, level, p$scale, "normal")
}

#' @rdname bulkem-multivariate
#' @export
vcov.bulkem_mvfit <- function(object, ...) {
  mv_has_standard_errors(object)
  object$vcov
}

#' @rdname bulkem-multivariate
#' @export
vcov.bulkem_mv <- function(object, ...) {
  out <- lapply(unclass(object), function(f) f$vcov)
  names(out) <- dataset_names(object)
  out
}

#' @rdname bulkem-multivariate
#' @export
confint.bulkem_mvfit <- function(object, parm, level = 0.95, ...) {
  mv_has_standard_errors(object)
  check_unit(level, "level")
  p <- mv_parameters(object)
  i <- pick_parm(if (missing(parm)) NULL else parm, stats::setNames(p$estimate, p$term))
  mv_wald(object, p[i, , drop = FALSE], level)
}

#' @rdname bulkem-multivariate
#' @export
confint.bulkem_mv <- function(object, parm, level = 0.95, ...) {
  check_unit(level, "level")
  fits <- unclass(object)
  fitted <- Filter(has_fit, fits)
  if (length(fitted) > 0 && all(vapply(fitted, function(f) is.null(f$se), NA))) {
    mv_has_standard_errors(fitted[[1]])
  }
  given <- !missing(parm)
  parts <- Map(function(f, name) {
    if (!has_fit(f)) return(NULL)
    p <- mv_parameters(f)
    if (given) {
      i <- pick_parm(parm, stats::setNames(p$estimate, p$term))
      p <- p[i, , drop = FALSE]
    }
    ci <- mv_wald(f, p, level)
    data.frame(dataset = rep(name, nrow(p)), term = p$term, component = p$component, variable = p$variable,
               variable2 = p$variable2, estimate = p$estimate,
               std.error = if (is.null(f$se)) NA_real_ else unname(f$se[p$term]),
               conf.low = unname(ci[, 1]), conf.high = unname(ci[, 2]), stringsAsFactors = FALSE)
  }, fits, dataset_names(object))
  out <- do.call(rbind, parts)
  if (is.null(out)) return(data.frame())
  row.names(out) <- NULL
  out
}

# The methods multivariate fits do not have yet.
not_for_multivariate <- function(what) {
  stop_arg(what, " does not take multivariate fits yet; see ?`bulkem-multivariate` for what does")
}

#' @rdname bulkem-multivariate
#' @param data For `augment()`: the observations (a matrix or data frame of
#'   the fit's variables); by default the kept data.
#' @export
augment.bulkem_mvfit <- function(x, data = NULL, ...) {
  check_dots_empty(...)
  obs <- mv_newdata(x, data)
  post <- predict.bulkem_mvfit(x, newdata = obs, type = "posterior")
  out <- as.data.frame(obs)
  out$.component <- mv_class(post, x$k)
  for (m in seq_len(x$k)) out[[paste0(".posterior_", m)]] <- post[, m]
  if (mv_has_noise(x)) out$.noise <- post[, x$k + 1]
  if (mv_is_t(x)) out$.weight <- rowSums(post[, seq_len(x$k), drop = FALSE] * mv_t_weights(x, obs))
  out$.uncertainty <- 1 - apply(post, 1, max)
  out
}

#' @rdname bulkem-multivariate
#' @export
augment.bulkem_mv <- function(x, ...) {
  check_dots_empty(...)
  parts <- Map(function(f, name) {
    if (!has_fit(f) || is.null(f$data)) return(NULL)
    cbind(dataset = name, augment.bulkem_mvfit(f), stringsAsFactors = FALSE)
  }, unclass(x), dataset_names(x))
  if (all(vapply(unclass(x), function(f) is.null(f$data), NA))) {
    stop_arg("augment() of a multivariate result needs the data: fit with control = list(keep.data = TRUE)")
  }
  kmax <- max(vapply(unclass(x), function(f) f$k, 0L))
  parts <- lapply(Filter(Negate(is.null), parts), function(p) {
    for (m in seq_len(kmax)) if (is.null(p[[paste0(".posterior_", m)]])) p[[paste0(".posterior_", m)]] <- NA_real_
    if (any(vapply(unclass(x), mv_has_noise, NA)) && is.null(p$.noise)) p$.noise <- NA_real_
    p[c(setdiff(names(p), ".uncertainty"), ".uncertainty")]
  })
  out <- do.call(rbind, parts)
  row.names(out) <- NULL
  out
}

#' @rdname bulkem-multivariate
#' @param nsim,seed,n As for [simulate.bulkem_fit()]: samples, the seed, and
#'   observations per sample (the fit's own n by default).
#' @export
simulate.bulkem_mvfit <- function(object, nsim = 1, seed = NULL, n = object$n, ...) {
  check_dots_empty(...)
  if (!has_fit(object)) stop_arg("`object` has no fit (status \"", object$status, "\") to simulate from")
  nsim <- check_count(nsim, "nsim")
  n <- check_count(n, "n")
  rng <- simulation_seed(seed)
  if (!is.null(rng$restore)) on.exit(rng$restore())
  out <- lapply(seq_len(nsim), function(i) mv_draws(object, n))
  names(out) <- paste0("sim_", seq_len(nsim))
  attr(out, "seed") <- rng$state
  out
}

#' @rdname bulkem-multivariate
#' @export
simulate.bulkem_mv <- function(object, nsim = 1, seed = NULL, n = NULL, ...) {
  check_dots_empty(...)
  nsim <- check_count(nsim, "nsim")
  if (!is.null(n)) n <- check_count(n, "n")
  rng <- simulation_seed(seed)
  if (!is.null(rng$restore)) on.exit(rng$restore())
  out <- lapply(unclass(object), function(f) {
    if (!has_fit(f)) return(NULL)
    draws <- lapply(seq_len(nsim), function(i) mv_draws(f, if (is.null(n)) f$n else n))
    names(draws) <- paste0("sim_", seq_len(nsim))
    draws
  })
  names(out) <- dataset_names(object)
  attr(out, "seed") <- rng$state
  out
}

# n draws from the fitted mixture: a component by alpha, then its normal by
# its Cholesky factor, for t divided by the square root of a Gamma(df/2,
# rate df/2) weight. A matrix of n rows with the fit's variables.
mv_draws <- function(fit, n) {
  noise <- mv_has_noise(fit)
  comp <- if (fit$k == 1 && !noise) {
    rep(1L, n)
  } else {
    sample.int(fit$k + noise, n, replace = TRUE, prob = c(fit$alpha, if (noise) fit$noise))
  }
  out <- matrix(0, n, fit$d, dimnames = list(NULL, colnames(fit$mu)))
  out_noise <- which(comp > fit$k)
  if (length(out_noise) > 0) {
    box <- fit$noise_support
    out[out_noise, ] <- vapply(seq_len(fit$d), function(j) stats::runif(length(out_noise), box[j, 1], box[j, 2]),
                               numeric(length(out_noise)))
  }
  for (m in seq_len(fit$k)) {
    idx <- which(comp == m)
    if (length(idx) == 0) next
    z <- matrix(stats::rnorm(length(idx) * fit$d), ncol = fit$d)
    if (mv_is_t(fit)) z <- z / sqrt(stats::rgamma(length(idx), fit$df[m] / 2, rate = fit$df[m] / 2))
    out[idx, ] <- sweep(z %*% chol(fit$sigma[, , m]), 2, fit$mu[m, ], "+")
  }
  out
}
#' @export
quantile.bulkem_mvfit <- function(x, ...) not_for_multivariate("quantile()")
#' @export
quantile.bulkem_mv <- function(x, ...) not_for_multivariate("quantile()")
#' Plot a multivariate fit
#'
#' A scatter-plot matrix of the data (when the fit kept it, or given as
#' `data`), each point coloured by its most probable component, with one
#' ellipse per component in every panel (the component's `level` contour
#' in those two variables) and, on the diagonal, each variable's histogram
#' with the fitted marginal mixture density. Up to 6 variables. For a t
#' fit the ellipses are the t's own contours (wider than a Normal's of the
#' same scale) and the marginal densities t densities.
#'
#' @param x A multivariate fit, or a multivariate result (with `which`).
#' @param data The data to draw: by default the fit's kept data
#'   (`control = list(keep.data = TRUE)`); without data, the ellipses and
#'   densities alone.
#' @param level The probability each ellipse holds of its component.
#' @param which For a result: the dataset to draw (a number or a name).
#' @param main The title.
#' @param ... Not used.
#' @returns `x`, invisibly.
#' @examples
#' fits <- bulkem(list(faithful = as.matrix(faithful)), num.components = 2,
#'                control = list(threads = 1, keep.data = TRUE))
#' plot(fits$faithful)
#' @export
plot.bulkem_mvfit <- function(x, data = x$data, level = 0.95, main = NULL, ...) {
  check_dots_empty(...)
  if (!has_fit(x)) stop_arg("the fit has no parameters to draw (status ", x$status, ")")
  check_unit(level, "level")
  d <- x$d
  if (d > 6) stop_arg("plot() draws up to 6 variables; this fit has ", d)
  vars <- colnames(x$mu)
  if (!is.null(data)) data <- mv_newdata(x, data)
  cols <- grDevices::hcl.colors(max(x$k, 2), "Dark 3")[seq_len(x$k)]
  cls <- if (!is.null(data)) predict.bulkem_mvfit(x, newdata = data, type = "class")
  sds <- sqrt(vapply(seq_len(d), function(j) x$sigma[j, j, ], numeric(x$k)))
  sds <- matrix(sds, nrow = x$k)
  lim <- lapply(seq_len(d), function(j) {
    r <- range(x$mu[, j] - 3 * sds[, j], x$mu[, j] + 3 * sds[, j])
    if (!is.null(data)) r <- range(r, data[, j])
    r
  })
  old <- graphics::par(mfrow = c(d, d), mar = c(2, 2, 0.5, 0.5), oma = c(0, 0, 3, 0))
  on.exit(graphics::par(old))
  # the level contour of two variables: delta ~ chi-squared(2) for a
  # Normal, 2 F(2, df) for a t
  radius <- vapply(seq_len(x$k), function(m) {
    if (mv_is_t(x)) sqrt(2 * stats::qf(level, 2, x$df[m])) else sqrt(stats::qchisq(level, 2))
  }, 0)
  circle <- rbind(cos(seq(0, 2 * pi, length.out = 100)), sin(seq(0, 2 * pi, length.out = 100)))
  for (i in seq_len(d)) {
    for (j in seq_len(d)) {
      if (i == j) {
        grid <- seq(lim[[j]][1], lim[[j]][2], length.out = 200)
        dens <- rowSums(vapply(seq_len(x$k), function(m) {
          if (mv_is_t(x)) {
            x$alpha[m] * stats::dt((grid - x$mu[m, j]) / sds[m, j], x$df[m]) / sds[m, j]
          } else {
            x$alpha[m] * stats::dnorm(grid, x$mu[m, j], sds[m, j])
          }
        }, numeric(length(grid))))
        h <- if (!is.null(data)) graphics::hist(data[, j], breaks = "FD", plot = FALSE)
        top <- max(dens, if (!is.null(h)) h$density)
        graphics::plot(NA, xlim = lim[[j]], ylim = c(0, top), xlab = "", ylab = "", yaxt = "n")
        if (!is.null(h)) graphics::plot(h, freq = FALSE, add = TRUE, col = "grey90", border = "grey70")
        graphics::lines(grid, dens, lwd = 2)
        graphics::mtext(vars[j], side = 3, line = -1.2, cex = 0.8)
      } else {
        graphics::plot(NA, xlim = lim[[j]], ylim = lim[[i]], xlab = "", ylab = "")
        if (!is.null(data)) {
          graphics::points(data[, j], data[, i], col = c("grey60", cols)[cls + 1], pch = 20, cex = 0.5)
        }
        for (m in seq_len(x$k)) {
          s <- x$sigma[c(j, i), c(j, i), m]
          e <- t(chol(s)) %*% (radius[m] * circle) + x$mu[m, c(j, i)]
          graphics::lines(e[1, ], e[2, ], col = cols[m], lwd = 2)
          graphics::points(x$mu[m, j], x$mu[m, i], pch = 3, col = cols[m], cex = 1.2)
        }
      }
    }
  }
  if (is.null(main)) {
    main <- sprintf("%d-component %s mixture (%s covariance), n = %d", x$k, mv_family_name(x), x$covariance, x$n)
  }
  graphics::title(main, outer = TRUE)
  invisible(x)
}

#' @rdname plot.bulkem_mvfit
#' @export
plot.bulkem_mv <- function(x, which = 1, main = NULL, ...) {
  fits <- unclass(x)
  ok <- (is.numeric(which) && length(which) == 1 && which >= 1 && which <= length(fits)) ||
    (is.character(which) && length(which) == 1 && which %in% names(x))
  if (!ok) stop_arg("`which` must name one dataset of the result (a number from 1 to ", length(fits), " or a name)")
  fit <- fits[[which]]
  if (is.null(main)) main <- paste0(if (is.character(which)) which else dataset_names(x)[which], ": ",
                                    sprintf("%d-component %s mixture (%s covariance)", fit$k, mv_family_name(fit),
                                            fit$covariance))
  plot.bulkem_mvfit(fit, main = main, ...)
  invisible(x)
}
#' @export
as.data.frame.bulkem_mv <- function(x, row.names = NULL, optional = FALSE, ...) {
  not_for_multivariate("as.data.frame() (use tidy() or glance())")
}
#' @export
coef.bulkem_mv <- function(object, ...) tidy.bulkem_mv(object)
#' @export
predict.bulkem_mv <- function(object, newdata = NULL, type = "posterior", ...) {
  if (!is.null(newdata)) stop_arg("`newdata` for a whole multivariate result: predict each fit, fits[[i]]")
  out <- lapply(unclass(object), predict.bulkem_mvfit, type = type, ...)
  names(out) <- dataset_names(object)
  out
}
