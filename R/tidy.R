# Tidy output in the broom convention, through the generics package:
# tidy() (parameters), glance() (one row per fit), augment() (the data with
# per-observation results). Plain data frames.

#' @importFrom generics tidy
#' @export
generics::tidy

#' @importFrom generics glance
#' @export
generics::glance

#' @importFrom generics augment
#' @export
generics::augment

#' Tidy tables of bulkem fits: parameters, fit statistics, observations
#'
#' The broom convention, through the generics package: `tidy()` gives one
#' row per parameter, `glance()` one row per fit, `augment()` one row per
#' observation. On a `bulkem` result, each table covers every dataset and
#' begins with a `dataset` column; on one `bulkem_fit` it has no `dataset`
#' column. All are plain data frames.
#'
#' Parameters: `alpha` (weight), `mu` (mean) and `lambda` (inverse Gaussian
#' shape, in statmod's mean/shape parameterisation: dispersion
#' `1 / lambda`, variance `mu^3 / lambda`), `sigma` (Normal standard
#' deviation; the lognormal's sdlog, its `mu` the meanlog) or `shape`
#' (gamma). Standard errors come from the observed information, on the
#' parameters' own scale, and the intervals are Wald intervals (see
#' [confint.bulkem_fit()]): they are computed on the log scale for `lambda`,
#' `sigma` and the inverse Gaussian's `mu`, and the logit scale for the
#' weights `alpha`, so they stay inside the parameter space (the Normal's
#' `mu` on its own scale). Both are `NA` where the information is singular
#' or the dataset has no fit.
#'
#' @param x A `bulkem` result or a `bulkem_fit`.
#' @param conf.int If `TRUE` (default), add `conf.low` and `conf.high`.
#' @param conf.level Confidence level of the intervals.
#' @param data,newdata The observations to augment. For a `bulkem_fit`, a
#'   numeric vector; for a `bulkem` result, a list with one numeric vector
#'   per dataset (in the result's order), or one numeric vector used for
#'   every dataset. `newdata`, if given, is used; otherwise `data`, whose
#'   default is the data kept in the fits with `bulkem(..., control =
#'   list(keep.data = TRUE))` (an error when there is none). For a result
#'   fitted from a formula or a data frame with `keep.data = TRUE`, `data`
#'   may also be that data frame itself: `augment()` then returns it, every
#'   row in its place, with the columns below added (see "Value").
#' @param ... Not used; any argument given here is an error.
#' @returns
#' On a result fitted from a formula or a data frame (`rt ~ subject +
#' condition`), every table of the whole result has the grouping variables
#' as columns after `dataset`, one value per dataset (a grouping variable
#' named like one of the table's columns gets the suffix `.group`), so it
#' joins back to the caller's data.
#'
#' `tidy()`: one row per (dataset,) component and parameter, with columns
#' (`dataset`,) `component`, `term` (`"alpha"`, `"mu"`, `"lambda"`,
#' `"sigma"` or `"shape"`, and for Student's t `"df"`, for the ex-Gaussian
#' `"tau"`), `estimate`,
#' `std.error` and, with `conf.int`, `conf.low` and `conf.high`. A noise
#' component's weight is the row of component 0, term `"alpha"`. Degrees of
#' freedom fixed by `df =` have no standard error.
#'
#' `glance()`: one row per fit, with columns (`dataset`,) `family`, `k`
#' (number of components), `logLik`, `AIC`, `BIC`, `deviance` (`-2
#' logLik`), `df` (`3k - 1`, one more with a noise component, k more with
#' the t's estimated degrees of freedom), `nobs`, `status`, `converged`, `iterations`,
#' `starts_ok`, `starts_at_best`, `spurious`, `spurious_starts` (see
#' [bulkem()] for what these fields mean) `fragile` (`TRUE` when the
#' best log-likelihood was reached by one start only, of several run: more
#' starts may find a better fit), and `ICL` (BIC minus twice the sum of the
#' log of each observation's largest posterior probability; see
#' [bulkem()]'s `criterion`), and `far` (how many of the dataset's values
#' lie far from the rest, the fit's field `far`; see [bulkem()]).
#'
#' `augment()`: one row per observation, with columns (`dataset`,) `x` (the
#' value), `.component` (the most likely component, an integer),
#' `.posterior_1` .. `.posterior_K` (posterior probabilities; on a result
#' with different Ks, up to the largest, `NA` beyond a dataset's own K) and
#' `.uncertainty` (one minus the largest posterior probability); with a
#' noise component (`bulkem(noise = TRUE)`), `.noise`, the posterior
#' probability of being noise, and `.component` 0 where that is the most
#' likely; for Student's t (`family = "t"`), `.weight`, each observation's
#' expected precision weight (small for an outlier). These are
#' `NA` outside the family's support and for a dataset without a fit; see
#' [predict.bulkem_fit()]. With `data` the caller's data frame, that data
#' frame with `.component`, `.posterior_1` .. `.posterior_K` and
#' `.uncertainty` added, `NA` in the rows that were dropped (missing values,
#' `subset`) or whose dataset has no fit.
#' @examples
#' set.seed(11)
#' d <- list(a = c(rnorm(100), rnorm(100, 4)), b = c(rnorm(150, 1), rnorm(50, 6)))
#' fits <- bulkem(d, family = "normal", random.inits = 5, use.gpu = FALSE,
#'                control = list(keep.data = TRUE))
#' tidy(fits)
#' glance(fits)
#' head(augment(fits))
#' tidy(fits$a, conf.level = 0.9)
#'
#' # from a long data frame: group columns, and the caller's rows back
#' df <- data.frame(subject = rep(c("s1", "s2"), each = 150),
#'                  cond = rep(c("A", "B"), 150),
#'                  rt = c(rnorm(150, 0.5, 0.1), rnorm(150, 0.8, 0.2)))
#' df$rt[3] <- NA
#' by_sc <- bulkem(rt ~ subject + cond, data = df, num.components = 1,
#'                 family = "normal", use.gpu = FALSE,
#'                 control = list(keep.data = TRUE, threads = 1))
#' glance(by_sc)[, 1:5]
#' head(augment(by_sc, data = df))
#' augment(fits$a, newdata = c(-1, 2, 5))
#' @name bulkem-tidy
NULL

#' @rdname bulkem-tidy
#' @export
tidy.bulkem_fit <- function(x, conf.int = TRUE, conf.level = 0.95, ...) {
  check_dots_empty(...)
  out <- tidy_fits(list(x), conf.int, conf.level)
  out$dataset <- NULL
  out
}

#' @rdname bulkem-tidy
#' @export
tidy.bulkem <- function(x, conf.int = TRUE, conf.level = 0.95, ...) {
  check_dots_empty(...)
  out <- tidy_fits(unclass(x), conf.int, conf.level)
  idx <- out$dataset
  out$dataset <- dataset_names(x)[idx]
  with_group_columns(out, x, idx)
}

tidy_fits <- function(fits, conf.int, conf.level) {
  if (!is.logical(conf.int) || length(conf.int) != 1 || is.na(conf.int)) {
    stop_arg("`conf.int` must be TRUE or FALSE")
  }
  check_unit(conf.level, "conf.level")
  # vectors over all fits at once; within a fit, parameters in the order of
  # `se` (alpha1..K, mu1..K, shape1..K, then a noise component's weight),
  # then sorted by component (the noise, component 0, first)
  k <- vapply(fits, function(f) NROW(f$mu), 0L, USE.NAMES = FALSE)
  noise <- vapply(fits, has_noise, NA, USE.NAMES = FALSE)
  # the t's degrees of freedom (the ex-Gaussian's tau): a row per component
  # (estimated or fixed); `se` has entries for them only when they were
  # estimated
  nu <- vapply(fits, function(f) length(fit_third(f)) > 0, NA, USE.NAMES = FALSE)
  per <- 3L + nu
  rows <- per * k + noise
  # as.double(), as.character(): no fits give columns of no rows
  est <- as.double(unlist(lapply(fits, function(f) {
    c(f$alpha, f$mu, fit_shape(f), fit_third(f), if (has_noise(f)) f$noise)
  }), use.names = FALSE))
  se <- as.double(unlist(Map(function(f, r) {
    s <- unname(component_se(f))
    if (!is.null(f$df) && !estimates_nu(f) && length(s) == r - NROW(f$mu)) {
      # fixed degrees of freedom: no standard error
      k <- NROW(f$mu)
      s <- append(s, rep(NA_real_, k), after = 3L * k)
    }
    if (length(s) != r) rep(NA_real_, r) else s
  }, fits, rows), use.names = FALSE))
  term <- as.character(unlist(lapply(fits, function(f) {
    c(rep(c("alpha", "mu", shape_name(f$family), third_name(f$family)), each = NROW(f$mu)),
      if (has_noise(f)) "alpha")
  }), use.names = FALSE))
  fit_id <- rep(seq_along(fits), rows)
  component <- as.integer(unlist(Map(function(kk, z, p) c(rep(seq_len(kk), p), if (z) 0L), k, noise, per),
                                 use.names = FALSE))
  term_order <- as.integer(unlist(Map(function(kk, z, p) c(rep(seq_len(p), each = kk), if (z) 1L), k, noise, per),
                                  use.names = FALSE))
  o <- order(fit_id, component, term_order)
  out <- data.frame(dataset = fit_id[o], component = component[o], term = term[o],
                    estimate = est[o], std.error = se[o], stringsAsFactors = FALSE)
  if (conf.int) {
    family <- vapply(fits, function(f) as.character(f$family), "", USE.NAMES = FALSE)[out$dataset]
    ci <- wald(out$estimate, out$std.error, conf.level, out$term, family)
    out$conf.low <- unname(ci[, 1])
    out$conf.high <- unname(ci[, 2])
  }
  tidy_shifts(out, fits, conf.int, conf.level)
}

# `out` with a row for each shifted fit's shift (R/shift.R), after its
# components' rows: component NA, its 95% interval the profile-likelihood
# one (`shift_ci`; at another conf.level, estimate ± z SE).
tidy_shifts <- function(out, fits, conf.int, conf.level) {
  shifted <- which(vapply(fits, function(f) !is.null(f$shift), NA, USE.NAMES = FALSE))
  if (length(shifted) == 0) return(out)
  estimate <- vapply(fits[shifted], function(f) f$shift, 0, USE.NAMES = FALSE)
  se <- vapply(fits[shifted], function(f) if (is.null(f$se)) NA_real_ else unname(f$se[["shift"]]), 0,
               USE.NAMES = FALSE)
  extra <- data.frame(dataset = shifted, component = NA_integer_, term = "shift", estimate = estimate,
                      std.error = se, stringsAsFactors = FALSE)
  if (conf.int) {
    profile <- isTRUE(all.equal(conf.level, 0.95))
    z <- stats::qnorm(1 - (1 - conf.level) / 2)
    extra$conf.low <- if (profile) vapply(fits[shifted], function(f) f$shift_ci[1], 0, USE.NAMES = FALSE) else
      estimate - z * se
    extra$conf.high <- if (profile) vapply(fits[shifted], function(f) f$shift_ci[2], 0, USE.NAMES = FALSE) else
      estimate + z * se
  }
  out <- rbind(out, extra)
  out <- out[order(out$dataset, is.na(out$component), method = "radix"), ]
  row.names(out) <- NULL
  out
}

#' @rdname bulkem-tidy
#' @export
glance.bulkem_fit <- function(x, ...) {
  check_dots_empty(...)
  out <- glance_fits(list(x))
  out$dataset <- NULL
  out
}

#' @rdname bulkem-tidy
#' @export
glance.bulkem <- function(x, ...) {
  check_dots_empty(...)
  out <- glance_fits(unclass(x))
  out$dataset <- dataset_names(x)
  with_group_columns(out, x, seq_along(x))
}

glance_fits <- function(fits) {
  get <- function(value, type) vapply(fits, value, type, USE.NAMES = FALSE)
  ll <- get(fit_loglik, 0)
  df <- get(fit_df, 0)
  n <- get(function(f) as.double(fit_nobs(f)), 0)
  data.frame(dataset = seq_along(fits), family = get(function(f) f$family, ""),
             k = get(function(f) NROW(f$mu), 0L), logLik = ll,
             AIC = -2 * ll + 2 * df, BIC = -2 * ll + log(n) * df, deviance = -2 * ll,
             df = as.integer(df), nobs = get(function(f) as.integer(f$n), 0L), status = get(function(f) f$status, ""),
             converged = get(function(f) isTRUE(f$converged), NA),
             iterations = get(function(f) as.integer(f$num_iterations), 0L),
             starts_ok = get(function(f) as.integer(f$starts_ok), 0L),
             starts_at_best = get(function(f) as.integer(f$starts_at_best), 0L),
             spurious = get(function(f) isTRUE(f$spurious), NA),
             spurious_starts = get(function(f) as.integer(f$spurious_starts), 0L),
             fragile = fits_fragile(fits),
             ICL = get(function(f) if (is.null(f$icl)) NA_real_ else as.numeric(f$icl), 0),
             far = get(function(f) length(f$far), 0L),
             stringsAsFactors = FALSE)
}

#' @rdname bulkem-tidy
#' @export
augment.bulkem_fit <- function(x, data = NULL, newdata = NULL, ...) {
  check_dots_empty(...)
  values <- if (!is.null(newdata)) fit_data(x, newdata, "newdata") else fit_data(x, data, "data")
  augment_values(x, values, NROW(x$mu))
}

#' @rdname bulkem-tidy
#' @export
augment.bulkem <- function(x, data = NULL, newdata = NULL, ...) {
  check_dots_empty(...)
  if (is.null(newdata) && is.data.frame(data)) return(augment_frame(x, data))
  arg <- if (!is.null(newdata)) "newdata" else "data"
  given <- if (!is.null(newdata)) newdata else data
  given <- tryCatch(result_newdata(x, given), bulkem_error_argument = function(e) {
    stop_arg("`", arg, "` must be a numeric vector or a list with one numeric vector per dataset (",
             length(x), ")")
  })
  fits <- unclass(x)
  kmax <- max(0L, vapply(fits, function(f) NROW(f$mu), 0L))
  noise <- any(vapply(fits, has_noise, NA))
  parts <- Map(function(f, d) augment_values(f, fit_data(f, d, arg), kmax, noise), fits, given)
  n <- vapply(parts, nrow, 0L, USE.NAMES = FALSE)
  cols <- names(augment_values(fits[[1]], numeric(0), kmax, noise))
  out <- lapply(cols, function(cl) unlist(lapply(parts, `[[`, cl), use.names = FALSE))
  names(out) <- cols
  idx <- rep(seq_along(fits), n)
  out <- c(list(dataset = dataset_names(x)[idx]), out)
  out$.component <- as.integer(out$.component)
  with_group_columns(as.data.frame(out, stringsAsFactors = FALSE, optional = TRUE), x, idx)
}

# augment(fits, data = df): the caller's own data frame, the one the fits
# were made from (a formula's `data` or a data frame `datasets`), with
# .component, .posterior_1 .. .posterior_K and .uncertainty added to the
# rows each fit's observations came from, NA in rows that were dropped
# (missing values, `subset`) or whose dataset has no fit. Needs the rows,
# kept with the data (control$keep.data).
augment_frame <- function(x, df) {
  fits <- unclass(x)
  has_rows <- vapply(fits, function(f) !is.null(f$rows) && length(f$rows) == length(f$data), NA)
  if (length(fits) == 0 || !all(has_rows)) {
    stop_arg("`data` as a data frame needs the rows each observation came from: fit it with a ",
             "formula or a data frame and control = list(keep.data = TRUE); or give `data` as a list ",
             "with one numeric vector per dataset")
  }
  rows <- unlist(lapply(fits, `[[`, "rows"), use.names = FALSE)
  placed <- !is.na(rows)
  if (any(placed) && (max(rows[placed]) > nrow(df) || anyDuplicated(rows[placed]))) {
    stop_arg("`data` is not the data frame these fits were made from: it has ", nrow(df),
             " rows, the fits' observations come from rows up to ", max(rows[placed]))
  }
  response <- attr(x, "response")
  if (!is.null(response) && response %in% names(df)) {
    kept <- unlist(lapply(fits, `[[`, "data"), use.names = FALSE)
    if (!identical(as.double(df[[response]][rows[placed]]), as.double(kept[placed]))) {
      stop_arg("`data` is not the data frame these fits were made from: its column `", response,
               "` holds other values in the rows the fits came from")
    }
  }
  kmax <- max(0L, vapply(fits, function(f) NROW(f$mu), 0L))
  noise <- any(vapply(fits, has_noise, NA))
  cols <- names(augment_values(fits[[1]], numeric(0), kmax, noise))[-1]
  added <- lapply(cols, function(cl) rep(if (cl == ".component") NA_integer_ else NA_real_, nrow(df)))
  names(added) <- cols
  for (f in fits) {
    if (length(f$rows) == 0) next
    a <- augment_values(f, f$data, kmax, noise)
    at <- !is.na(f$rows)
    for (cl in cols) {
      added[[cl]][f$rows[at]] <- if (cl == ".component") as.integer(a[[cl]][at]) else a[[cl]][at]
    }
  }
  clash <- intersect(cols, names(df))
  if (length(clash) > 0) {
    stop_arg("`data` already has column(s) ", paste0("`", clash, "`", collapse = ", "),
             " that augment() adds")
  }
  for (cl in cols) df[[cl]] <- added[[cl]]
  df
}

# Values, class, posteriors (padded with NA columns up to `kmax`), with
# `noise` the noise component's (NA for a fit without one), and uncertainty
# of one fit.
augment_values <- function(fit, x, kmax, noise = has_noise(fit)) {
  post <- mixture_posterior(fit, x)
  out <- data.frame(x = x, .component = posterior_class(post))
  k <- NROW(fit$mu)
  pad <- matrix(NA_real_, nrow = length(x), ncol = kmax)
  pad[, seq_len(k)] <- post[, seq_len(k)]
  for (m in seq_len(kmax)) out[[paste0(".posterior_", m)]] <- pad[, m]
  # a noise component's posterior probability, the outliers' mark
  if (noise) out$.noise <- if (has_noise(fit)) post[, k + 1] else rep(NA_real_, length(x))
  out$.uncertainty <- posterior_uncertainty(post)
  # Student's t: each observation's expected precision weight
  if (identical(fit$family, "t")) out$.weight <- t_weights(fit, x, post)
  out
}
