# S3 methods for bulkem results: many fits (`bulkem`) and one (`bulkem_fit`).


dataset_names <- function(x) {
  nm <- names(x)
  if (is.null(nm)) nm <- as.character(seq_along(x))
  nm
}

#' Summaries and tables of bulkem fits
#'
#' `summary()` gives one row per dataset; `as.data.frame()` one row per
#' dataset and component (or, with `what = "datasets"`, the summary); `coef()`
#' the fitted parameters. `[` keeps the class, so a subset of fits is still a
#' `bulkem` object.
#'
#' @param object,x A `bulkem` result (or, for `coef()`, a single `bulkem_fit`).
#' @param what `"components"` (default): a long table with columns `dataset`,
#'   `component`, `alpha`, `mu` and `lambda`, `sigma` or `shape` (by family); `"datasets"`: the
#'   one-row-per-dataset summary.
#' @param row.names,optional Ignored (for the generic).
#' @param i Which fits to keep.
#' @param ... Not used.
#' @returns `summary()`: a data frame (of class `summary.bulkem`, whose print
#'   method first counts the fits to mistrust, see below) with `dataset`,
#'   `n`, `k` (the number of components of the fit, the one chosen when
#'   several were fitted), `status`, `converged`, `iterations`, `loglik`,
#'   `aic`, `bic`, `icl`, `starts_ok`, `best_start`, `starts_at_best` (how many
#'   starts reached the best log-likelihood), `fragile` (`TRUE` when only
#'   one of several starts did: more starts may find a better fit),
#'   `spurious` (no start passed the spurious-solution screen), `far` (how
#'   many of the dataset's values lie far from the rest: the fit's field
#'   `far`, see [bulkem()]) and, when several Ks were fitted, `why`: why the fit has its K, `"lowest BIC"`,
#'   or the Ks of lower (or no) BIC that were not sound, e.g. `"K = 2
#'   spurious"` or `"K = 3 failed"` (see [bulkem_compare()]), `"no sound
#'   K"` (the lowest BIC of all, none converged and passed the screen) or
#'   `"no K fitted"`. Its attribute `notes` gives, for each spurious fit and
#'   each fit whose K was chosen because another was not sound, what went
#'   wrong in words, named by dataset, e.g. `"K = 1 chosen because K = 2 was
#'   spurious: a component of 1 observation at 1e+06 (observation 137)"`
#'   (the observations the suspect component sits on, when the data were
#'   kept with `control = list(keep.data = TRUE)`); its print method shows
#'   the first 10; a fit with values far from the rest has a note naming
#'   them too. `as.data.frame()`: a data frame as described under `what`.
#'   `coef()`: for one fit, a matrix with one row per component and columns
#'   `alpha`, `mu`, `lambda` (or `sigma`, or `shape`); for a `bulkem` result, the long
#'   table of `as.data.frame()`.
#' @examples
#' set.seed(1)
#' d <- list(a = c(rnorm(200), rnorm(100, 4)), b = c(rnorm(150), rnorm(150, 3)))
#' fits <- bulkem(d, random.inits = 5, family = "normal", use.gpu = FALSE)
#' summary(fits)
#' as.data.frame(fits)
#' coef(fits$a)
#' fits["b"]
#' @name bulkem-methods
NULL

#' @rdname bulkem-methods
#' @export
summary.bulkem <- function(object, ...) {
  fits <- unclass(object)
  get <- function(field, type) vapply(fits, function(f) f[[field]], type, USE.NAMES = FALSE)
  out <- data.frame(
    dataset = dataset_names(object), n = get("n", 0L),
    k = vapply(fits, function(f) NROW(f$mu), 0L, USE.NAMES = FALSE), status = get("status", ""),
    converged = get("converged", NA), iterations = get("num_iterations", 0L),
    loglik = get("loglik", 0), aic = get("aic", 0), bic = get("bic", 0), icl = get("icl", 0),
    starts_ok = get("starts_ok", 0L), best_start = get("best_start", 0L),
    starts_at_best = vapply(fits, function(f) as.integer(f$starts_at_best)[1], 0L, USE.NAMES = FALSE),
    fragile = fits_fragile(fits),
    spurious = vapply(fits, function(f) isTRUE(f$spurious), NA, USE.NAMES = FALSE),
    far = vapply(fits, function(f) length(f$far), 0L, USE.NAMES = FALSE),
    stringsAsFactors = FALSE)
  maybe <- k_maybe_over(fits)
  if (any(vapply(fits, function(f) !is.null(f$by_k), NA, USE.NAMES = FALSE))) {
    out$why <- as.character(unlist(Map(k_chosen_why, fits, maybe), use.names = FALSE))
  }
  attr(out, "notes") <- result_notes(fits, out$dataset, over = chosen_over(fits, maybe))
  class(out) <- c("summary.bulkem", "data.frame")
  out
}

#' @rdname bulkem-methods
#' @export
print.summary.bulkem <- function(x, ...) {
  notes <- attr(x, "notes")
  cat(attention_line(summary_counts(x)), "\n")
  if (length(notes) > 0) {
    cat(paste0("  ", names(notes)[seq_len(min(10, length(notes)))], ": ",
               utils::head(notes, 10), "\n"), sep = "")
    if (length(notes) > 10) cat(sprintf("  ... and %d more (attr(, \"notes\"))\n", length(notes) - 10))
  }
  cat("\n")
  print(plain_frame(x), ...)
  invisible(x)
}

# " (chosen by BIC)" where some fit chose among several Ks (by its
# criterion), else "".
chosen_by <- function(fits) {
  for (f in fits) if (!is.null(f$by_k)) return(paste0(" (chosen by ", criterion_label(f), ")"))
  ""
}

# How many fits of a result to mistrust, and why, from its summary's
# columns: spurious, fragile, max_iters, failed, invalid and (NA with one
# K) chosen_over, those whose K was chosen because another K was not sound.
summary_counts <- function(s) {
  col <- function(name) if (is.null(s[[name]])) logical(nrow(s)) else s[[name]]
  c(spurious = sum(col("spurious"), na.rm = TRUE), fragile = sum(col("fragile"), na.rm = TRUE),
    max_iters = sum(s$status == "max_iters"), failed = sum(s$status == "failed"),
    invalid = sum(s$status == "invalid"),
    chosen_over = if (is.null(s$why)) NA else sum(grepl("^K = ", s$why)),
    far = if (is.null(s$far)) 0L else sum(s$far > 0))
}

# A summary as a plain data frame, for printing its rows.
plain_frame <- function(x) {
  attr(x, "notes") <- NULL
  class(x) <- "data.frame"
  x
}

#' @rdname bulkem-methods
#' @export
as.data.frame.bulkem <- function(x, row.names = NULL, optional = FALSE, ...,
                                 what = c("components", "datasets")) {
  what <- match.arg(what)
  if (what == "datasets") return(summary.bulkem(x))
  shape <- shape_name(attr(x, "family"))
  k <- vapply(x, function(f) NROW(f$mu), 0L, USE.NAMES = FALSE)
  nm <- dataset_names(x)
  # as.double(): a result of no datasets (fits[0]) gives columns of no rows
  pick <- function(field) as.double(unlist(lapply(x, function(f) f[[field]]), use.names = FALSE))
  out <- data.frame(dataset = rep(nm, k), component = sequence(k),
                    alpha = pick("alpha"), mu = pick("mu"), shape = pick(shape),
                    stringsAsFactors = FALSE)
  names(out)[5] <- shape
  third <- third_name(attr(x, "family"))
  if (!is.null(third)) out[[third]] <- pick(third)
  out
}

#' @rdname bulkem-methods
#' @export
coef.bulkem_fit <- function(object, ...) {
  shape <- shape_name(object$family)
  m <- cbind(alpha = object$alpha, mu = object$mu, object[[shape]])
  colnames(m)[3] <- shape
  third <- third_name(object$family)
  if (!is.null(third) && !is.null(object[[third]])) {
    m <- cbind(m, as.double(object[[third]]))
    colnames(m)[4] <- third
  }
  rownames(m) <- paste0("comp", seq_len(nrow(m)))
  m
}

#' @rdname bulkem-methods
#' @export
coef.bulkem <- function(object, ...) as.data.frame.bulkem(object)

#' @rdname bulkem-methods
#' @export
`[.bulkem` <- function(x, i) {
  out <- unclass(x)[i]
  if (any(vapply(out, is.null, NA))) stop_arg("`i` selects datasets that are not in the result")
  # the same selection of the datasets' indices, for their group keys
  idx <- seq_along(x)
  names(idx) <- names(x)
  a <- result_attrs(x)
  a$groups <- result_groups(x, unname(idx[i]))
  do.call(new_bulkem, c(list(out), a))
}

#' Log-likelihood, AIC and BIC of one fit
#'
#' `logLik()` returns the fit's log-likelihood with its degrees of freedom
#' (`3 * K - 1`) and number of observations, so [stats::AIC()] and
#' [stats::BIC()] work on a `bulkem_fit`.
#'
#' @param object A `bulkem_fit` (one element of a `bulkem` result).
#' @param ... Not used.
#' @returns `logLik()`: an object of class `logLik`; `nobs()`: the number of
#'   observations (with `weights`, the sum of the weights: the n of BIC).
#' @examples
#' set.seed(2)
#' fit <- bulkem(c(rnorm(100), rnorm(100, 5)), family = "normal", use.gpu = FALSE)[[1]]
#' logLik(fit)
#' AIC(fit)
#' BIC(fit)
#' @name bulkem-loglik
NULL

#' @rdname bulkem-loglik
#' @importFrom stats logLik
#' @export
logLik.bulkem_fit <- function(object, ...) {
  structure(object$loglik, df = as.integer(fit_df(object)), nobs = fit_nobs(object), class = "logLik")
}

#' @rdname bulkem-loglik
#' @importFrom stats nobs
#' @export
nobs.bulkem_fit <- function(object, ...) fit_nobs(object)

# The n of BIC: the sum of the weights of a fit with `weights` (a double),
# else the number of observations, `n` (an integer).
fit_nobs <- function(f) if (is.null(f$nobs) || isTRUE(f$nobs == f$n)) f$n else f$nobs

#' Print bulkem results and fits
#'
#' `print()` of a `bulkem` result shows one header line (the number of
#' datasets, the family and the number of components, with "(chosen by BIC)"
#' when several were fitted), the engine, its threads and the time taken,
#' the count of fits by `status`, a line counting the fits to mistrust
#' (spurious; fragile, whose best log-likelihood one start alone reached;
#' stopped at `max.iters`; failed; invalid; and, when several Ks were
#' fitted, those whose K was chosen because another K was spurious,
#' failed, stopped at `max.iters` or was invalid; and those with values far
#' from the rest of their data), what went wrong with the
#' first three of the spurious fits, of those whose K was so chosen and of
#' those with far values (the
#' `notes` of [summary()][summary.bulkem]), and the first `n` rows of
#' [summary()][summary.bulkem] (its column `k` is each dataset's number of
#' components, the one chosen when several were fitted). `print()` of one
#' `bulkem_fit` shows its family, number of components, `n` and `status`,
#' any `message`, what to mistrust about it (spurious, and the observations
#' its suspect component sits on; fragile; its K chosen because another K
#' was not sound, and why; values far from the rest), the log-likelihood, AIC, BIC, EM iterations and
#' good starts, and the parameters as [coef()][coef.bulkem_fit] gives them: one row per component
#' with `alpha` (weight), `mu` (mean) and `lambda` (inverse Gaussian shape,
#' statmod's mean/shape parameterisation: dispersion `1 / lambda`) or
#' `sigma` (Normal standard deviation).
#'
#' @param x A `bulkem` result or one `bulkem_fit`.
#' @param n How many datasets' rows to show.
#' @param ... Not used.
#' @returns `x`, invisibly.
#' @seealso [summary.bulkem()] for every dataset's row, [summary.bulkem_fit()]
#'   for one fit's parameters with standard errors.
#' @examples
#' set.seed(1)
#' d <- list(a = c(rnorm(200), rnorm(100, 4)), b = c(rnorm(150), rnorm(150, 3)))
#' fits <- bulkem(d, num.components = 1:2, random.inits = 5, family = "normal",
#'                control = list(threads = 1))
#' fits
#' print(fits, n = 1)
#' fits$a
#' @name print.bulkem
#' @export
print.bulkem <- function(x, n = 5, ...) {
  # Any subset prints (`[` keeps the call's attributes; a result without
  # them, or of no datasets, says what it has)
  fits <- unclass(x)
  k <- attr(x, "num.components")
  if (is.null(k)) k <- sort(unique(vapply(fits, function(f) NROW(f$mu), 0L, USE.NAMES = FALSE)))
  family <- attr(x, "family")
  if (is.null(family)) family <- unique(unlist(lapply(fits, `[[`, "family")))
  cat(sprintf("bulkem: %d dataset%s%s%s\n", length(x), if (length(x) == 1) "" else "s",
              if (length(family) > 0) {
                sprintf(", %s mixture%s", paste(family, collapse = ", "), if (length(x) == 1) "" else "s")
              } else "",
              if (length(k) > 1) {
                paste0(" of ", paste(k, collapse = ", "), " components",
                       chosen_by(fits))
              } else if (length(k) == 1) {
                paste0(" of ", k, " component", if (k == 1) "" else "s")
              } else ""))
  if (!is.null(attr(x, "engine")) && !is.null(attr(x, "threads")) && !is.null(attr(x, "elapsed"))) {
    cat(sprintf("engine: %s (%d thread%s), %.3f s\n", attr(x, "engine"), attr(x, "threads"),
                if (identical(attr(x, "threads"), 1L)) "" else "s", attr(x, "elapsed")))
  }
  if (length(x) > 0) {
    status <- table(vapply(fits, function(f) as.character(f$status)[1], "", USE.NAMES = FALSE))
    cat("status:", paste(names(status), status, sep = ": ", collapse = ", "), "\n")
    s <- summary.bulkem(x)
    cat(attention_line(summary_counts(s)), "\n")
    notes <- attr(s, "notes")
    if (length(notes) > 0) {
      cat(paste0("  ", names(notes)[seq_len(min(3, length(notes)))], ": ", utils::head(notes, 3), "\n"), sep = "")
      if (length(notes) > 3) {
        cat(sprintf("  ... and %d more (summary() lists them in its attribute \"notes\")\n", length(notes) - 3))
      }
    }
    cat("\n")
    print(utils::head(plain_frame(s), n), row.names = FALSE)
    if (length(x) > n) cat(sprintf("... and %d more (summary() lists all)\n", length(x) - n))
  }
  invisible(x)
}

#' @rdname print.bulkem
#' @export
print.bulkem_fit <- function(x, ...) {
  k <- NROW(x$mu)
  cat(sprintf("bulkem fit: %s mixture of %d component%s, n = %d, status %s\n", x$family, k,
              if (k == 1) "" else "s", x$n, x$status))
  if (nzchar(x$message)) cat(x$message, "\n")
  notes <- fit_notes(x)
  if (length(notes) > 0) cat(paste0(notes, "\n"), sep = "")
  if (isTRUE(x$fit_success)) {
    cat(sprintf("loglik %.4f, AIC %.4f, BIC %.4f, ICL %.4f, %d iterations, best of %d good start%s\n\n",
                x$loglik, x$aic, x$bic, x$icl, x$num_iterations, x$starts_ok, if (x$starts_ok == 1) "" else "s"))
    held <- fixed_labels(x)
    if (length(held) > 0) cat("held fixed:", paste(held, collapse = ", "), "\n\n")
    if (!is.null(x$shift)) {
      se <- if (!is.null(x$se)) sprintf(" (SE %s)", format(x$se[["shift"]], digits = 4)) else ""
      cat(sprintf("shift %s%s: the components are of the values less it\n\n", format(x$shift, digits = 6), se))
    }
    if (censored_count(x) > 0) {
      cat(sprintf("%s censored value%s beside the n = %d observed (nobs %s)\n\n", format(censored_count(x)),
                  if (censored_count(x) == 1) "" else "s", x$n, format(x$nobs)))
    }
    if (is_truncated(x)) {
      cat(sprintf("truncated to [%s, %s]: alpha are the weights before truncation\n\n",
                  format(x$truncation[1]), format(x$truncation[2])))
    }
    print(coef.bulkem_fit(x))
  }
  invisible(x)
}
