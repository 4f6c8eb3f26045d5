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
#'   `component`, `alpha`, `mu` and `lambda` or `sigma`; `"datasets"`: the
#'   one-row-per-dataset summary.
#' @param row.names,optional Ignored (for the generic).
#' @param i Which fits to keep.
#' @param ... Not used.
#' @returns `summary()`: a data frame with `dataset`, `n`, `k` (the number of
#'   components of the fit, the one chosen when several were fitted), `status`,
#'   `converged`, `iterations`, `loglik`, `aic`, `bic`, `starts_ok`,
#'   `best_start`. `as.data.frame()`: a data frame as described under `what`.
#'   `coef()`: for one fit, a matrix with one row per component and columns
#'   `alpha`, `mu`, `lambda` (or `sigma`); for a `bulkem` result, the long
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
  get <- function(field, type) vapply(object, function(f) f[[field]], type, USE.NAMES = FALSE)
  data.frame(
    dataset = dataset_names(object), n = get("n", 0L),
    k = vapply(object, function(f) length(f$mu), 0L, USE.NAMES = FALSE), status = get("status", ""),
    converged = get("converged", NA), iterations = get("num_iterations", 0L),
    loglik = get("loglik", 0), aic = get("aic", 0), bic = get("bic", 0),
    starts_ok = get("starts_ok", 0L), best_start = get("best_start", 0L),
    stringsAsFactors = FALSE)
}

#' @rdname bulkem-methods
#' @export
as.data.frame.bulkem <- function(x, row.names = NULL, optional = FALSE, ...,
                                 what = c("components", "datasets")) {
  what <- match.arg(what)
  if (what == "datasets") return(summary.bulkem(x))
  shape <- shape_name(attr(x, "family"))
  k <- vapply(x, function(f) length(f$mu), 0L, USE.NAMES = FALSE)
  nm <- dataset_names(x)
  # as.double(): a result of no datasets (fits[0]) gives columns of no rows
  pick <- function(field) as.double(unlist(lapply(x, function(f) f[[field]]), use.names = FALSE))
  out <- data.frame(dataset = rep(nm, k), component = sequence(k),
                    alpha = pick("alpha"), mu = pick("mu"), shape = pick(shape),
                    stringsAsFactors = FALSE)
  names(out)[5] <- shape
  out
}

#' @rdname bulkem-methods
#' @export
coef.bulkem_fit <- function(object, ...) {
  shape <- shape_name(object$family)
  m <- cbind(alpha = object$alpha, mu = object$mu, object[[shape]])
  colnames(m)[3] <- shape
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
#'   observations.
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
  structure(object$loglik, df = free_parameters(length(object$mu)), nobs = object$n, class = "logLik")
}

#' @rdname bulkem-loglik
#' @importFrom stats nobs
#' @export
nobs.bulkem_fit <- function(object, ...) object$n

#' Print bulkem results and fits
#'
#' `print()` of a `bulkem` result shows one header line (the number of
#' datasets, the family and the number of components, with "(chosen by BIC)"
#' when several were fitted), the engine, its threads and the time taken,
#' the count of fits by `status`, and the first `n` rows of [summary()][summary.bulkem]
#' (its column `k` is each dataset's number of components, the one chosen
#' when several were fitted). `print()` of one `bulkem_fit` shows its family,
#' number of components, `n` and `status`, any `message`, the
#' log-likelihood, AIC, BIC, EM iterations and good starts, and the
#' parameters as [coef()][coef.bulkem_fit] gives them: one row per component
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
  if (is.null(k)) k <- sort(unique(vapply(fits, function(f) length(f$mu), 0L, USE.NAMES = FALSE)))
  family <- attr(x, "family")
  if (is.null(family)) family <- unique(unlist(lapply(fits, `[[`, "family")))
  cat(sprintf("bulkem: %d dataset%s%s%s\n", length(x), if (length(x) == 1) "" else "s",
              if (length(family) > 0) {
                sprintf(", %s mixture%s", paste(family, collapse = ", "), if (length(x) == 1) "" else "s")
              } else "",
              if (length(k) > 1) {
                paste0(" of ", paste(k, collapse = ", "), " components",
                       if (any(vapply(fits, function(f) !is.null(f$by_k), NA))) " (chosen by BIC)")
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
    cat("\n")
    print(utils::head(s, n), row.names = FALSE)
    if (length(x) > n) cat(sprintf("... and %d more (summary() lists all)\n", length(x) - n))
  }
  invisible(x)
}

#' @rdname print.bulkem
#' @export
print.bulkem_fit <- function(x, ...) {
  k <- length(x$mu)
  cat(sprintf("bulkem fit: %s mixture of %d component%s, n = %d, status %s\n", x$family, k,
              if (k == 1) "" else "s", x$n, x$status))
  if (nzchar(x$message)) cat(x$message, "\n")
  if (isTRUE(x$fit_success)) {
    cat(sprintf("loglik %.4f, AIC %.4f, BIC %.4f, %d iterations, best of %d good start%s\n\n",
                x$loglik, x$aic, x$bic, x$num_iterations, x$starts_ok, if (x$starts_ok == 1) "" else "s"))
    print(coef.bulkem_fit(x))
  }
  invisible(x)
}
