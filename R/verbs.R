# R's model verbs on a whole result (`bulkem`, one value per dataset) and on
# one fit (`bulkem_fit`): logLik, AIC, BIC, nobs, deviance; fitted,
# residuals and sigma, which a mixture does not have; summary() of one fit;
# c(); and the table comparing the Ks fitted.

#' Log-likelihoods, information criteria and sizes of many fits
#'
#' On a `bulkem` result, `logLik()`, `AIC()`, `BIC()`, `nobs()` and
#' `deviance()` give one value per dataset: a numeric vector named by
#' dataset (`"1"`, `"2"`, .. when the datasets have no names), `NA` where a
#' dataset has no fit (its `status` is `"failed"` or `"invalid"`), except
#' `nobs()`, which is always the dataset's number of observations (with
#' `weights`, the sum of its weights, the n of BIC). On one
#' fit they give the usual single values (`logLik()` with its `df` and
#' `nobs`, so [stats::AIC()] and [stats::BIC()] work on it).
#'
#' A K-component fit has \eqn{3K - 1}{3K - 1} free parameters (`df`; \eqn{2K}{2K}
#' with `equal.scale = TRUE`): K means,
#' K inverse Gaussian shapes `lambda` or Normal standard deviations `sigma`,
#' and K - 1 weights. `AIC = -2 logLik + k df` (`k = 2` by default),
#' `BIC = -2 logLik + log(n) df`, and `deviance()` is `-2 logLik`, as for
#' models fitted by maximum likelihood in lme4 (there is no saturated
#' mixture to measure a deviance from).
#'
#' A mixture has no fitted values, residuals or residual standard deviation:
#' `fitted()`, `residuals()` and `sigma()` of a fit or a result are errors
#' (class `bulkem_error_argument`) that say what to use instead:
#' [predict()][predict.bulkem_fit] or [augment()][augment.bulkem_fit] for
#' each observation's posterior probabilities and class, and [coef()] for
#' the components' parameters (the Normal's `sigma` is each component's
#' standard deviation; the inverse Gaussian's is `sqrt(mu^3 / lambda)`).
#'
#' @param object A `bulkem` result or a `bulkem_fit`.
#' @param k The penalty per parameter of `AIC()`.
#' @param ... Not used: one result at a time (to compare several Ks, fit
#'   them in one call and see [bulkem_compare()]).
#' @returns Named numeric vectors, one element per dataset (`nobs()`: an
#'   integer vector).
#' @examples
#' set.seed(7)
#' fits <- bulkem(list(a = c(rnorm(150), rnorm(150, 4)), b = rnorm(200, 1, 2)),
#'                family = "normal", random.inits = 5, use.gpu = FALSE)
#' logLik(fits)
#' AIC(fits)
#' BIC(fits)
#' nobs(fits)
#' deviance(fits$a)
#' try(fitted(fits$a))
#' @name bulkem-ic
NULL

# A field of every fit, as a vector named by dataset.
per_dataset <- function(object, value) {
  out <- vapply(unclass(object), value, 0, USE.NAMES = FALSE)
  names(out) <- dataset_names(object)
  out
}

# a noise component's weight is one more parameter, as is a shift, and the t's estimated
# degrees of freedom (the ex-Gaussian's tau) K more; a multivariate fit counts its own (df_model)
fit_df <- function(fit) {
  if (!is.null(fit$df_model)) return(as.numeric(fit$df_model))
  k <- NROW(fit$mu)
  as.numeric(free_parameters(k) + has_noise(fit) + k * estimates_nu(fit) - (k - 1) * isTRUE(fit$equal_scale) -
               fixed_removed(fit) + !is.null(fit$shift))
}

# Whether a fit estimated a third parameter per component: the t's degrees
# of freedom (not fixed by `df`) or the ex-Gaussian's tau.
estimates_nu <- function(fit) (!is.null(fit$df) && !isTRUE(attr(fit$df, "fixed"))) || !is.null(fit$tau)

fit_loglik <- function(fit) if (has_fit(fit)) as.numeric(fit$loglik) else NA_real_

one_result <- function(...) {
  if (...length() > 0) {
    stop_arg("only one bulkem result at a time: to compare numbers of components, fit them ",
             "in one call (num.components = 1:3) and see bulkem_compare()")
  }
}

#' @rdname bulkem-ic
#' @export
logLik.bulkem <- function(object, ...) {
  one_result(...)
  per_dataset(object, fit_loglik)
}

#' @rdname bulkem-ic
#' @importFrom stats AIC
#' @export
AIC.bulkem <- function(object, ..., k = 2) {
  one_result(...)
  per_dataset(object, function(f) -2 * fit_loglik(f) + k * fit_df(f))
}

#' @rdname bulkem-ic
#' @importFrom stats BIC
#' @export
BIC.bulkem <- function(object, ...) {
  one_result(...)
  per_dataset(object, function(f) -2 * fit_loglik(f) + log(fit_nobs(f)) * fit_df(f))
}

#' @rdname bulkem-ic
#' @export
nobs.bulkem <- function(object, ...) {
  out <- vapply(unclass(object), function(f) as.double(fit_nobs(f)), 0, USE.NAMES = FALSE)
  if (!isTRUE(attr(object, "weighted"))) out <- as.integer(out)
  names(out) <- dataset_names(object)
  out
}

#' @rdname bulkem-ic
#' @importFrom stats deviance
#' @export
deviance.bulkem <- function(object, ...) per_dataset(object, function(f) -2 * fit_loglik(f))

#' @rdname bulkem-ic
#' @export
deviance.bulkem_fit <- function(object, ...) -2 * fit_loglik(object)

no_fitted_values <- function(object, ...) {
  stop_arg("`object` is a mixture fit, which has no fitted values or residuals: use ",
           "predict(object) for each observation's posterior probabilities, class and ",
           "uncertainty, or augment(object) for them next to the data")
}

#' @rdname bulkem-ic
#' @importFrom stats fitted
#' @export
fitted.bulkem <- no_fitted_values

#' @rdname bulkem-ic
#' @export
fitted.bulkem_fit <- no_fitted_values

#' @rdname bulkem-ic
#' @importFrom stats residuals
#' @export
residuals.bulkem <- no_fitted_values

#' @rdname bulkem-ic
#' @export
residuals.bulkem_fit <- no_fitted_values

no_sigma <- function(object, ...) {
  stop_arg("`object` is a mixture fit, which has no residual standard deviation: coef(object) ",
           "gives each component's parameters (the Normal's `sigma` is its standard deviation, ",
           "the inverse Gaussian's is sqrt(mu^3 / lambda))")
}

#' @rdname bulkem-ic
#' @importFrom stats sigma
#' @export
sigma.bulkem <- no_sigma

#' @rdname bulkem-ic
#' @export
sigma.bulkem_fit <- no_sigma

#' Summary of one fit
#'
#' A table of the fitted components, each parameter with its standard error
#' (from the observed information, see [vcov.bulkem_fit()]), and the fit's
#' log-likelihood, AIC, BIC, size, status and the trust measures
#' (`starts_at_best`, `spurious`). ([summary.bulkem()] summarises a whole
#' result, one row per dataset.)
#'
#' Inverse Gaussian components are given by mean `mu` and shape `lambda`
#' (statmod's parameterisation: dispersion `1 / lambda`, variance
#' `mu^3 / lambda`), Normal ones by mean `mu` and standard deviation `sigma`.
#'
#' @param object A `bulkem_fit` (one element of a `bulkem` result).
#' @param x A `summary.bulkem_fit`.
#' @param digits Significant digits to print.
#' @param ... Not used.
#' @returns An object of class `summary.bulkem_fit`: a list with
#'   `coefficients` (a data frame with one row per component: `component`,
#'   `alpha`, `alpha.se`, `mu`, `mu.se`, `lambda` or `sigma` and its `.se`),
#'   `family`, `k`, `n`, `df`, `loglik`, `aic`, `bic`, `status`,
#'   `converged`, `message`, `iterations`, `starts_ok`, `starts_at_best`,
#'   `fragile` (`TRUE` when only one of several starts reached the best
#'   log-likelihood), `spurious`, `spurious_starts`, `by_k` (when several
#'   Ks were fitted, else `NULL`; with a column `why_not` as in
#'   [bulkem_compare()]) and `notes`: what to mistrust about the fit in
#'   words (spurious, and the observations its suspect component sits on
#'   when the data were kept; fragile; its K chosen because a K of lower or
#'   no BIC was spurious or failed, and why that K was). Its print method
#'   shows them as a table.
#' @examples
#' set.seed(8)
#' fits <- bulkem(list(c(rnorm(200), rnorm(200, 4))), family = "normal",
#'                random.inits = 5, use.gpu = FALSE)
#' summary(fits[[1]])
#' summary(fits[[1]])$coefficients
#' @export
summary.bulkem_fit <- function(object, ...) {
  k <- NROW(object$mu)
  shape <- shape_name(object$family)
  se <- unname(component_se(object))
  per <- 3 + estimates_nu(object)
  if (length(se) < per * k) se <- rep(NA_real_, per * k)
  coefs <- data.frame(component = seq_len(k),
                      alpha = object$alpha, alpha.se = se[seq_len(k)],
                      mu = object$mu, mu.se = se[k + seq_len(k)],
                      shape = object[[shape]], shape.se = se[2 * k + seq_len(k)])
  names(coefs)[6:7] <- c(shape, paste0(shape, ".se"))
  if (!is.null(object$df)) {
    coefs$df <- as.double(object$df)
    coefs$df.se <- if (estimates_nu(object)) se[3 * k + seq_len(k)] else NA_real_
  }
  by_k <- object$by_k
  if (!is.null(by_k)) by_k$why_not <- k_why_not(object)
  structure(list(
    coefficients = coefs, family = object$family, k = k, n = object$n, df = fit_df(object),
    loglik = fit_loglik(object), aic = object$aic, bic = object$bic, icl = object$icl,
    criterion = if (!is.null(by_k)) criterion_label(object), status = object$status,
    converged = object$converged, message = object$message, iterations = object$num_iterations,
    starts_ok = object$starts_ok, starts_at_best = object$starts_at_best,
    fragile = fits_fragile(list(object)),
    spurious = object$spurious, spurious_starts = object$spurious_starts,
    by_k = by_k, notes = fit_notes(object)), class = "summary.bulkem_fit")
}

#' @rdname summary.bulkem_fit
#' @export
print.summary.bulkem_fit <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat(sprintf("bulkem fit: %s mixture, K = %d, n = %d\n",
              family_label(x$family), x$k, x$n))
  cat(sprintf("status: %s after %d iteration%s; %d good start%s, %d at the best log-likelihood%s\n",
              x$status, x$iterations, if (identical(x$iterations, 1L)) "" else "s",
              x$starts_ok, if (identical(x$starts_ok, 1L)) "" else "s", x$starts_at_best,
              if (isTRUE(x$spurious)) "; SPURIOUS (no start passed the screen)" else ""))
  if (nzchar(x$message)) cat(x$message, "\n")
  if (length(x$notes) > 0) cat(paste0(x$notes, "\n"), sep = "")
  cf <- x$coefficients
  est <- function(v, s) {
    paste0(format(signif(v, digits)), " (", format(signif(s, 2)), ")")
  }
  tab <- data.frame(component = cf$component, alpha = est(cf[[2]], cf[[3]]),
                    mu = est(cf[[4]], cf[[5]]), shape = est(cf[[6]], cf[[7]]))
  names(tab)[4] <- names(cf)[6]
  cat("\nComponents (standard errors in parentheses):\n")
  print(tab, row.names = FALSE, right = TRUE)
  cat(sprintf("\nlog-likelihood %s (df = %d), AIC %s, BIC %s, ICL %s\n",
              format(signif(x$loglik, digits + 3)), as.integer(x$df),
              format(signif(x$aic, digits + 3)), format(signif(x$bic, digits + 3)),
              format(signif(x$icl, digits + 3))))
  if (!is.null(x$by_k)) {
    cat(sprintf("K = %d chosen by %s among K = %s:\n", x$k, if (is.null(x$criterion)) "BIC" else x$criterion,
                paste(x$by_k$K, collapse = ", ")))
    print(x$by_k, row.names = FALSE, digits = digits + 3)
  }
  invisible(x)
}

#' Combine bulkem results
#'
#' `c()` joins `bulkem` results (and single `bulkem_fit`s) of the same
#' family into one `bulkem` result, names as [c()] gives them. The
#' attributes that describe the work done (`elapsed`, `em_iterations`,
#' `kernel_launches`, `kernel_seconds`, `timings`) are summed over the
#' results; `engine`, `threads` and `seed` are kept where all results agree
#' and dropped otherwise; `num.components` is the union of the results'.
#'
#' @param ... `bulkem` results or `bulkem_fit`s.
#' @returns A `bulkem` result.
#' @examples
#' set.seed(9)
#' a <- bulkem(list(a = c(rnorm(100), rnorm(100, 4))), family = "normal",
#'             random.inits = 3, use.gpu = FALSE)
#' b <- bulkem(list(b = rnorm(100)), num.components = 1, family = "normal", use.gpu = FALSE)
#' ab <- c(a, b)
#' names(ab)
#' c(ab, extra = a$a)
#' @export
c.bulkem <- function(...) {
  parts <- list(...)
  results <- Filter(function(p) inherits(p, "bulkem"), parts)
  ok <- vapply(parts, function(p) inherits(p, c("bulkem", "bulkem_fit")), NA)
  if (!all(ok)) stop_arg("c() combines bulkem results and bulkem fits only")
  family <- unique(vapply(parts, function(p) {
    if (inherits(p, "bulkem")) attr(p, "family") else p$family
  }, ""))
  if (length(family) > 1) stop_arg("c() cannot combine fits of different families (", paste(family, collapse = ", "), ")")
  lists <- lapply(parts, function(p) if (inherits(p, "bulkem")) unclass(p) else list(p))
  out <- do.call(c, lists)
  attr_of <- function(name) lapply(results, attr, name)
  same <- function(name) {
    v <- unique(attr_of(name))
    if (length(v) == 1) v[[1]] else NULL
  }
  total <- function(name) {
    v <- attr_of(name)
    if (length(v) == 0 || any(vapply(v, is.null, NA))) return(NULL)
    if (length(unique(lapply(v, names))) != 1) return(NULL)
    Reduce(`+`, v)
  }
  ks <- unlist(c(attr_of("num.components"),
                 lapply(Filter(function(p) inherits(p, "bulkem_fit"), parts), function(f) NROW(f$mu))))
  # group keys only where every part has the same grouping columns
  keys <- lapply(parts, function(p) if (inherits(p, "bulkem")) attr(p, "groups"))
  groups <- if (length(keys) > 0 && all(!vapply(keys, is.null, NA)) &&
                length(unique(lapply(keys, names))) == 1) {
    tryCatch(do.call(rbind, keys), error = function(e) NULL)
  }
  new_bulkem(out, engine = same("engine"), threads = same("threads"),
             elapsed = total("elapsed"), seed = same("seed"), family = family,
             num.components = sort(unique(as.integer(ks))),
             em_iterations = total("em_iterations"), kernel_launches = total("kernel_launches"),
             kernel_seconds = total("kernel_seconds"), timings = total("timings"),
             groups = groups, response = same("response"))
}

#' Compare the numbers of components fitted
#'
#' When `bulkem()` fitted several numbers of components (`num.components =
#' 1:3`), each fit keeps the log-likelihood, AIC, BIC, ICL and status of
#' every K (its `by_k`) and is the one of lowest BIC (or of bulkem()'s
#' `criterion`) among the Ks that converged and passed the spurious-solution
#' screen. `bulkem_compare()` puts these in one
#' long table, one row per dataset and K, for model comparison across
#' datasets (e.g. how often each K wins, or how clear the choice was).
#'
#' @param object A `bulkem` result (or one `bulkem_fit`).
#' @returns A data frame with one row per dataset and K: `dataset`, `K`,
#'   `df` (`3K - 1`), `loglik`, `aic`, `bic`, `icl`, `status` (of that K's fit),
#'   `delta_bic` (its BIC minus the lowest BIC of the dataset's Ks, `NA`
#'   where it has none), `chosen` (`TRUE` for the K the returned fit has)
#'   and `why_not`: why that K was not chosen, `NA` for the K chosen;
#'   `"failed"`, `"invalid"` or `"max_iters"` (its status), `"spurious"`
#'   (it converged, but no start passed the spurious-solution screen),
#'   `"higher BIC"` or `"equal BIC"` (the smaller K wins a tie; `"higher
#'   ICL"` and so on where `criterion` chose). A K that
#'   is not sound and has a lower BIC than the one chosen (or none) is why
#'   the chosen K was chosen: `summary()`'s column `why` says so per
#'   dataset. A result fitted with one K gives one row per dataset, that
#'   K's (`why_not` is its status where it has no fit).
#' @examples
#' set.seed(10)
#' d <- list(one = rnorm(300), two = c(rnorm(150), rnorm(150, 5)))
#' fits <- bulkem(d, num.components = 1:3, family = "normal", random.inits = 5,
#'                use.gpu = FALSE)
#' cmp <- bulkem_compare(fits)
#' cmp
#' table(cmp$K[cmp$chosen])
#' @export
bulkem_compare <- function(object) {
  if (inherits(object, "bulkem_fit")) object <- new_bulkem(list(object))
  if (!inherits(object, "bulkem")) stop_arg("`object` must be a bulkem result")
  fits <- unclass(object)
  # vectors over all fits at once: results can hold 100,000s of them
  tabs <- lapply(fits, function(f) {
    if (!is.null(f$by_k)) return(f$by_k)
    list(K = NROW(f$mu), loglik = fit_loglik(f), aic = as.numeric(f$aic),
         bic = as.numeric(f$bic), icl = as.numeric(f$icl), status = f$status)
  })
  n <- vapply(tabs, function(t) length(t$K), 0L, USE.NAMES = FALSE)
  col <- function(name) unlist(lapply(tabs, `[[`, name), use.names = FALSE)
  k <- as.integer(col("K"))
  bic <- as.numeric(col("bic"))
  best <- vapply(tabs, function(t) {
    if (all(is.na(t$bic))) NA_real_ else min(t$bic, na.rm = TRUE)
  }, 0, USE.NAMES = FALSE)
  chosen_k <- vapply(fits, function(f) if (has_fit(f)) NROW(f$mu) else NA_integer_, 0L,
                     USE.NAMES = FALSE)
  why_not <- as.character(unlist(lapply(fits, k_why_not), use.names = FALSE))
  noise <- vapply(fits, has_noise, NA, USE.NAMES = FALSE)
  nu <- vapply(fits, estimates_nu, NA, USE.NAMES = FALSE)
  shared <- vapply(fits, function(f) isTRUE(f$equal_scale), NA, USE.NAMES = FALSE)
  removed <- vapply(fits, fixed_removed, 0, USE.NAMES = FALSE)
  data.frame(dataset = rep(dataset_names(object), n), K = k,
             df = as.integer(free_parameters(k) + rep(noise, n) + k * rep(nu, n) - (k - 1) * rep(shared, n) -
                               rep(removed, n)),
             loglik = as.numeric(col("loglik")), aic = as.numeric(col("aic")), bic = bic,
             icl = as.numeric(col("icl")),
             status = as.character(col("status")), delta_bic = bic - rep(best, n),
             chosen = !is.na(rep(chosen_k, n)) & k == rep(chosen_k, n), why_not = why_not,
             stringsAsFactors = FALSE)
}
