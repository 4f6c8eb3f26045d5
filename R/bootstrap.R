# Parametric bootstrap standard errors and percentile intervals (issue 13,
# item 1): B replicates per dataset simulated from its fit, all refitted in
# one bulk bulkem() call per (family, K), components matched to the point
# estimate's by minimal parameter distance.

#' Parametric bootstrap standard errors and percentile intervals
#'
#' For every dataset with a fit, simulates `B` replicate datasets of the same
#' size from the fitted mixture, refits each with the same family and number
#' of components from random starts, and summarises the replicate estimates
#' as bootstrap standard errors and percentile confidence intervals, in the
#' shape of [tidy()][bulkem-tidy]. The refits of all replicates of all
#' datasets are one bulk job: one [bulkem()] call (one per distinct number
#' of components, when the datasets' fits differ in K), on whatever engine
#' that call chooses.
#'
#' **Reproducibility.** Replicate `b` of dataset `d` (its position in
#' `fits`) is a pure function of `seed`, `d` and `b`: it is drawn after
#' `set.seed()` with a seed taken from a stream seeded by `seed` and `d`
#' (Mersenne-Twister, Inversion, Rejection, whatever [RNGkind()] is set),
#' and R's random number state is put back afterwards, as
#' [stats::simulate()] does. So a replicate does not change with `B` or when
#' datasets are added after `d`, and its refit (whose random starts depend
#' only on `seed`, the start's index and the replicate's values) does not
#' either.
#'
#' **Starts.** Each replicate is fitted from `random.inits` random starts.
#' Starting from the fitted parameters (the peers' other practice) is not
#' available yet. With too few starts some replicates end in a local
#' optimum (e.g. two inverse Gaussian components near the overall mean),
#' which inflates the standard errors: use at least as many starts as a
#' sound fit of the original data needs.
#'
#' **Label switching.** The components of a replicate fit are matched to the
#' point estimate's: for K <= 6, the permutation minimising
#' \eqn{\sum_m ((\mu^*_{\pi(m)} - \hat\mu_m) / \hat s_m)^2}{sum(((mu*[p[m]] - mu[m]) / s[m])^2)},
#' where \eqn{\hat s_m}{s[m]} is the standard deviation of the point
#' estimate's component m (`sigma`, or `sqrt(mu^3 / lambda)` for the inverse
#' Gaussian); for larger K, by ascending `mu` (the order fits come in).
#'
#' **Replicates used.** A replicate counts (`B_used`) when its refit
#' converged and is not marked spurious. The others are counted per dataset
#' in the attribute `replicates`: `failed` (no fit, `"max_iters"` or
#' `"invalid"`) and `spurious`.
#'
#' Datasets without a fit (status `"failed"` or `"invalid"`) get rows with
#' `NA` estimate, standard error and interval and `B_used = 0`, as in
#' `tidy()`; nothing is simulated for them.
#'
#' @param fits A `bulkem` result.
#' @param B Number of bootstrap replicates per dataset (a whole number >= 2).
#' @param data The datasets the fits were made on, a list with one numeric
#'   vector per dataset in the order of `fits`; default: the data kept in
#'   the fits by `bulkem(..., control = list(keep.data = TRUE))` (an error
#'   if there is none). Only their sizes are used: each replicate has as
#'   many observations as its dataset.
#' @param seed A whole number from 0 to `.Machine$integer.max` fixing the
#'   replicates and their refits; `NULL` (default) draws one from R's random
#'   number generator, so [set.seed()] before the call makes it
#'   reproducible. Recorded in the attribute `seed`.
#' @param conf.level Confidence level of the percentile intervals.
#' @param random.inits Random starts per replicate; default `NULL`: the
#'   smallest `starts_run` among the fits (the `random.inits` of the original
#'   call, unless restarts added more).
#' @param control Passed to [bulkem()] for the refits (`keep.data` and
#'   `keep.starts` are turned off).
#' @param ... Further arguments of [bulkem()] for the refits, by full name:
#'   `max.iters`, `epsilon`, `use.gpu`, `verbose`. The original call's
#'   values are not recorded in the fits, so give them again if they were
#'   not the defaults.
#' @returns A data frame of class `c("bulkem_bootstrap", "data.frame")`
#'   with one row per dataset, component and parameter, as `tidy()`:
#'   `dataset`, `component`, `term` (`"alpha"`, `"mu"`, `"lambda"` or
#'   `"sigma"`), `estimate` (the original fit's), `std.error` (standard
#'   deviation of the matched bootstrap estimates), `conf.low` and
#'   `conf.high` (percentile interval), `B` and `B_used`. Attributes:
#'   `replicates` (a data frame with one row per dataset: `dataset`, `B`,
#'   `used`, `failed`, `spurious`), `seed`, `conf.level`, `random.inits`
#'   and `elapsed` (seconds).
#' @seealso [tidy()][bulkem-tidy] and [confint.bulkem_fit()] for the
#'   observed-information standard errors and Wald intervals.
#' @examples
#' set.seed(2)
#' d <- list(a = c(rnorm(150), rnorm(100, 5)), b = rnorm(80, 2))
#' fits <- bulkem(d, family = "normal", random.inits = 5, use.gpu = FALSE,
#'                control = list(keep.data = TRUE, threads = 1))
#' bs <- bulkem_bootstrap(fits, B = 50, seed = 1, use.gpu = FALSE,
#'                        control = list(threads = 1))
#' bs
#' attr(bs, "replicates")
#' @export
bulkem_bootstrap <- function(fits, B = 200, data = NULL, seed = NULL, conf.level = 0.95,
                             random.inits = NULL, control = list(), ...) {
  started <- proc.time()[["elapsed"]]
  if (!inherits(fits, "bulkem")) stop_arg("`fits` must be a bulkem result")
  if (!is.numeric(B) || length(B) != 1 || is.na(B) || !is.finite(B) || B != round(B) ||
      B < 2 || B > .Machine$integer.max) {
    stop_arg("`B` must be a whole number >= 2")
  }
  B <- as.integer(B)
  if (!is.numeric(conf.level) || length(conf.level) != 1 || is.na(conf.level) ||
      conf.level <= 0 || conf.level >= 1) {
    stop_arg("`conf.level` must be a single number between 0 and 1")
  }
  if (!is.list(control)) stop_arg("`control` must be a named list")
  seed <- if (is.null(seed)) {
    sample.int(.Machine$integer.max, 1L)
  } else {
    if (!is.numeric(seed) || length(seed) != 1 || is.na(seed) || seed != round(seed) ||
        seed < 0 || seed > .Machine$integer.max) {
      stop_arg("`seed` must be a whole number from 0 to ", .Machine$integer.max)
    }
    as.double(seed)
  }
  items <- unclass(fits)
  nd <- length(items)
  sizes <- bootstrap_sizes(items, data)
  fitted <- vapply(items, has_fit, NA, USE.NAMES = FALSE)
  if (is.null(random.inits)) {
    runs <- vapply(items[fitted], function(f) as.integer(f$starts_run %||% NA_integer_), 0L)
    random.inits <- if (length(runs) == 0 || all(is.na(runs))) 20L else min(runs, na.rm = TRUE)
  }
  random.inits <- check_whole(random.inits, "random.inits", 1, .Machine$integer.max)
  control$keep.data <- FALSE
  control$keep.starts <- FALSE
  family <- vapply(items, function(f) f$family, "", USE.NAMES = FALSE)
  k <- vapply(items, function(f) length(f$mu), 0L, USE.NAMES = FALSE)

  # the replicates, each a pure function of (seed, d, b)
  reps <- vector("list", nd)
  for (d in which(fitted)) reps[[d]] <- bootstrap_replicates(items[[d]], sizes[d], B, seed, d)

  # one refit call per (family, K)
  refit <- vector("list", nd)
  groups <- unique(data.frame(family = family[fitted], k = k[fitted], stringsAsFactors = FALSE))
  for (g in seq_len(nrow(groups))) {
    ds <- which(fitted & family == groups$family[g] & k == groups$k[g])
    all_reps <- unlist(reps[ds], recursive = FALSE)
    res <- withCallingHandlers(
      bulkem(all_reps, num.components = groups$k[g], random.inits = random.inits,
             family = groups$family[g], seed = seed, control = control, ...),
      bulkem_warning_convergence = function(w) invokeRestart("muffleWarning"))
    res <- unclass(res)
    for (i in seq_along(ds)) refit[[ds[i]]] <- res[(i - 1) * B + seq_len(B)]
  }

  parts <- lapply(seq_len(nd), function(d) bootstrap_summary(items[[d]], refit[[d]], B, conf.level))
  rows <- do.call(rbind, lapply(seq_len(nd), function(d) {
    p <- parts[[d]]$rows
    if (nrow(p) > 0) p$dataset <- d
    p
  }))
  rows <- rows[c("dataset", "component", "term", "estimate", "std.error", "conf.low",
                 "conf.high", "B", "B_used")]
  names_d <- dataset_names(fits)
  rows$dataset <- names_d[rows$dataset]
  rownames(rows) <- NULL
  counts <- do.call(rbind, lapply(parts, `[[`, "counts"))
  replicates <- data.frame(dataset = names_d, B = ifelse(fitted, B, 0L), used = counts[, "used"],
                           failed = counts[, "failed"], spurious = counts[, "spurious"],
                           stringsAsFactors = FALSE)
  structure(rows, class = c("bulkem_bootstrap", "data.frame"), replicates = replicates,
            seed = seed, conf.level = conf.level, random.inits = random.inits,
            elapsed = proc.time()[["elapsed"]] - started)
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# The size of each dataset's replicates: the length of its data, kept in the
# fit or given.
bootstrap_sizes <- function(items, data) {
  nd <- length(items)
  if (is.null(data)) {
    kept <- vapply(items, function(f) !is.null(f$data), NA, USE.NAMES = FALSE)
    if (!all(kept)) {
      stop_arg("the fits hold no data: fit with control = list(keep.data = TRUE), or pass `data` ",
               "(a list with one numeric vector per dataset)")
    }
    data <- lapply(items, `[[`, "data")
  }
  if (!is.list(data) || is.data.frame(data) || length(data) != nd ||
      !all(vapply(data, function(x) is.numeric(x) && !is.object(x), NA))) {
    stop_arg("`data` must be a list with one numeric vector per dataset (", nd, ")")
  }
  n <- vapply(data, function(x) sum(!is.na(x)), 0L, USE.NAMES = FALSE)
  bad <- which(vapply(items, has_fit, NA) & n != vapply(items, function(f) as.integer(f$n), 0L))
  if (length(bad) > 0) {
    stop_arg("`data` does not match the fits: dataset ", bad[1], " has ", n[bad[1]],
             " non-missing values, its fit ", items[[bad[1]]]$n)
  }
  n
}

# B replicates of size n from a fit; replicate b depends only on (seed, d, b).
# R's random number state (kinds included) is put back on exit.
bootstrap_replicates <- function(fit, n, B, seed, d) {
  had <- exists(".Random.seed", envir = .GlobalEnv, inherits = FALSE)
  if (had) saved <- get(".Random.seed", envir = .GlobalEnv)
  on.exit(if (had) assign(".Random.seed", saved, envir = .GlobalEnv) else
    rm(".Random.seed", envir = .GlobalEnv))
  kinds <- list(kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
  imax <- .Machine$integer.max
  do.call(set.seed, c(list(seed = (seed + 1000003 * d) %% imax), kinds))
  seeds <- floor(stats::runif(B) * imax)
  lapply(seeds, function(s) {
    do.call(set.seed, c(list(seed = s), kinds))
    draw_samples(fit, n, 1L)[[1]]
  })
}

# Permutations of 1..k, one per row.
permutations <- function(k) {
  if (k == 1) return(matrix(1L, 1, 1))
  sub <- permutations(k - 1)
  do.call(rbind, lapply(seq_len(k), function(i) cbind(i, matrix(setdiff(seq_len(k), i)[sub], nrow(sub)))))
}

# The rows of one dataset (tidy()'s order: by component, then alpha, mu,
# shape) and its counts of used, failed and spurious replicates.
bootstrap_summary <- function(fit, reps, B, conf.level) {
  k <- length(fit$mu)
  shape_nm <- shape_name(fit$family)
  est <- c(fit$alpha, fit$mu, fit_shape(fit))
  rows <- data.frame(component = rep(seq_len(k), each = 3),
                     term = rep(c("alpha", "mu", shape_nm), k),
                     estimate = est[rep(0:2, k) * k + rep(seq_len(k), each = 3)],
                     std.error = NA_real_, conf.low = NA_real_, conf.high = NA_real_,
                     B = 0L, B_used = 0L, stringsAsFactors = FALSE)
  if (is.null(reps)) {
    return(list(rows = rows, counts = c(used = 0L, failed = 0L, spurious = 0L)))
  }
  ok <- vapply(reps, function(f) has_fit(f) && isTRUE(f$converged), NA)
  spur <- vapply(reps, function(f) has_fit(f) && isTRUE(f$spurious), NA)
  use <- ok & !spur
  counts <- c(used = sum(use), failed = sum(!ok & !spur), spurious = sum(spur))
  rows$B <- B
  rows$B_used <- counts[["used"]]
  if (sum(use) < 2) return(list(rows = rows, counts = counts))
  get <- function(field) do.call(rbind, lapply(reps[use], function(f) f[[field]]))
  alpha <- get("alpha")
  mu <- get("mu")
  shape <- get(shape_nm)
  # match components to the point estimate's
  if (k > 1) {
    if (k <= 6) {
      s <- if (fit$family == "normal") fit$sigma else sqrt(fit$mu^3 / fit$lambda)
      perms <- permutations(k)
      target <- matrix(fit$mu, nrow(mu), k, byrow = TRUE)
      scale <- matrix(s, nrow(mu), k, byrow = TRUE)
      cost <- vapply(seq_len(nrow(perms)), function(j) {
        rowSums(((mu[, perms[j, ], drop = FALSE] - target) / scale)^2)
      }, numeric(nrow(mu)))
      cost <- matrix(cost, nrow = nrow(mu))
      best <- perms[max.col(-cost, ties.method = "first"), , drop = FALSE]
    } else {
      best <- t(apply(mu, 1, order))
    }
    pick <- function(m) matrix(m[cbind(rep(seq_len(nrow(m)), k), as.vector(best))], nrow(m))
    alpha <- pick(alpha)
    mu <- pick(mu)
    shape <- pick(shape)
  }
  probs <- c((1 - conf.level) / 2, (1 + conf.level) / 2)
  for (m in seq_len(k)) {
    for (t in 1:3) {
      v <- list(alpha, mu, shape)[[t]][, m]
      r <- (m - 1) * 3 + t
      rows$std.error[r] <- stats::sd(v)
      q <- stats::quantile(v, probs, names = FALSE, type = 7)
      rows$conf.low[r] <- q[1]
      rows$conf.high[r] <- q[2]
    }
  }
  list(rows = rows, counts = counts)
}

#' @rdname bulkem_bootstrap
#' @param x A `bulkem_bootstrap` result.
#' @param digits Significant digits to print.
#' @export
print.bulkem_bootstrap <- function(x, digits = 4, ...) {
  reps <- attr(x, "replicates")
  if (is.null(reps)) {
    print(as.data.frame(unclass(x), stringsAsFactors = FALSE), digits = digits, ...)
    return(invisible(x))
  }
  cat(sprintf("Parametric bootstrap of %d dataset(s): B = %s, %s%% percentile intervals, seed %s\n",
              nrow(reps), paste(unique(reps$B[reps$B > 0]), collapse = ", "),
              format(100 * attr(x, "conf.level")), format(attr(x, "seed"))))
  lost <- reps$failed + reps$spurious
  if (any(lost > 0)) {
    cat(sprintf("Replicates not used: %d failed or not converged, %d spurious (see attr(, \"replicates\"))\n",
                sum(reps$failed), sum(reps$spurious)))
  }
  print(as.data.frame(unclass(x), stringsAsFactors = FALSE), digits = digits, ...)
  invisible(x)
}
