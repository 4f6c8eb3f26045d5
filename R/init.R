# bulkem()'s `init`: the user's starting values, checked and resolved into
# one list of starts per dataset (class "bulkem_given", which is also what
# the future shards pass on), then flattened for the core (given_records()).

# `init` as bulkem() takes it, resolved for `n` datasets named `names`:
# NULL, or a "bulkem_given" list of n lists of starts, each start a list
# (k, alpha, mu, shape, df, noise) checked for `family` and the call's Ks.
check_init <- function(init, n, names, family, num.components, noise, df) {
  per_dataset <- init_per_dataset(init, n, names, num.components, function(st) length(st$mu), paste0(
    "`init` must be a start (a list with `mu`, `", shape_name(family), "` and optionally `alpha`), a list ",
    "of starts, a list of starts by dataset name, or a bulkem result, not "))
  if (is.null(per_dataset) || inherits(per_dataset, "bulkem_given")) return(per_dataset)
  given <- lapply(seq_len(n), function(d) {
    lapply(per_dataset[[d]], check_start, family = family, num.components = num.components,
           noise = noise, df = df, where = if (n > 1) names[d])
  })
  structure(given, class = "bulkem_given")
}

# `init` as bulkem() takes it, as a list of n lists of starts (unchecked),
# or NULL, or a "bulkem_given" list as it came (already checked). A
# result's fits of other Ks than the call's (`k_of` a start) are left out;
# `what` begins the error for anything else.
init_per_dataset <- function(init, n, names, num.components, k_of, what) {
  if (is.null(init)) return(NULL)
  if (inherits(init, "bulkem_given")) {
    if (length(init) != n) stop_arg("`init` holds starts for ", length(init), " datasets, not ", n)
    return(init)
  }
  if (inherits(init, "bulkem")) {
    return(lapply(init_from_result(init, n, names), function(starts) {
      Filter(function(st) k_of(st) %in% num.components, starts)
    }))
  }
  if (is_start(init)) return(rep(list(list(init)), n))
  if (is.list(init) && length(init) > 0 && any(nzchar(names(init)))) return(init_by_name(init, n, names))
  if (is.list(init) && length(init) > 0 && all(vapply(init, is_start, NA))) return(rep(list(init), n))
  stop_arg(what, describe_type(init))
}

is_start <- function(x) is.list(x) && !inherits(x, "bulkem_fit") && !is.null(x[["mu"]])

# A list of starts by dataset name: each element NULL, a start or a list of
# starts; names not among the datasets' are an error.
init_by_name <- function(init, n, names) {
  unknown <- setdiff(names(init), names)
  if (length(unknown) > 0) {
    stop_arg("`init` names ", length(unknown), " dataset", if (length(unknown) > 1) "s", " not fitted: ",
             paste0("\"", utils::head(unknown, 3), "\"", collapse = ", "),
             " (a list of starts by dataset must be named as the datasets are)")
  }
  lapply(names, function(nm) {
    x <- init[[nm]]
    if (is.null(x)) list() else if (is_start(x)) list(x) else x
  })
}

# Every fit of a bulkem result, each K's (its all_k) as a start of the same
# dataset: datasets matched by name, or by position when the result has as
# many fits and no names of its own.
init_from_result <- function(init, n, names) {
  fits <- unclass(init)
  at <- if (!is.null(names(fits)) && all(names %in% names(fits))) {
    match(names, names(fits))
  } else if (length(fits) == n) {
    seq_len(n)
  } else {
    stop_arg("`init` is a bulkem result of ", length(fits), " fits that do not match the ", n,
             " datasets by name or number")
  }
  lapply(at, function(i) {
    f <- fits[[i]]
    each <- if (is.null(f$all_k)) list(f) else f$all_k
    starts <- lapply(each, function(g) {
      if (!isTRUE(g$fit_success)) return(NULL)
      if (inherits(g, "bulkem_mvfit")) {
        s <- list(mu = g$mu, sigma = g$sigma, alpha = g$alpha)
        # (g$df would match df_model)
        if (!is.null(g[["df"]])) s$df <- as.double(g[["df"]])
        if (!is.null(g$noise) && !is.na(g$noise)) s$noise <- g$noise
        return(s)
      }
      s <- list(mu = g$mu, alpha = g$alpha)
      s[[shape_name(g$family)]] <- fit_shape(g)
      if (!is.null(g$df)) s$df <- as.double(g$df)
      if (!is.null(g$noise) && !is.na(g$noise)) s$noise <- g$noise
      s
    })
    Filter(Negate(is.null), starts)
  })
}

# One start checked: K from 1 to 8 and among `num.components`, finite
# means (positive where the family's are), positive shapes, positive
# weights that with the noise's sum to 1 (equal weights when not given),
# for Student's t, degrees of freedom in range (not with `df` fixed), and
# for the ex-Gaussian positive taus (without, the start is made ex-Gaussian
# with the same mean and variance as a Normal start of mu and sigma).
check_start <- function(s, family, num.components, noise, df, where) {
  at <- if (!is.null(where)) paste0(" (dataset \"", where, "\")") else ""
  bad <- function(...) stop_arg("`init`", at, ": ", ...)
  shape <- shape_name(family)
  known <- c("mu", "alpha", shape, third_name(family), if (noise) "noise")
  extra <- setdiff(names(s), known)
  if (length(extra) > 0 || is.null(names(s)) || any(!nzchar(names(s)))) {
    bad("a start of the ", family, " family has elements ", paste0("`", known, "`", collapse = ", "),
        if (length(extra) > 0) paste0(", not `", extra[1], "`"))
  }
  real <- function(x) is.numeric(x) && !is.object(x) && all(is.finite(x))
  mu <- s$mu
  k <- length(mu)
  if (!real(mu) || k < 1 || k > max_components()) {
    bad("`mu` must be 1 to ", max_components(), " finite numbers, not ", describe_type(mu))
  }
  if (!k %in% num.components) {
    bad("a start of ", k, " component", if (k > 1) "s", " is not among num.components (",
        paste(num.components, collapse = ", "), ")")
  }
  if (family %in% c("invgauss", "gamma") && any(mu <= 0)) bad("`mu` must be positive for the ", family)
  sh <- s[[shape]]
  if (!real(sh) || length(sh) != k || any(sh <= 0)) {
    bad("`", shape, "` must be ", k, " positive finite numbers, one per component of `mu`")
  }
  w <- if (is.null(s$noise)) 0 else s$noise
  if (!real(w) || length(w) != 1 || w < 0 || w >= 1) bad("`noise` must be one weight in [0, 1)")
  alpha <- if (is.null(s$alpha)) rep((1 - w) / k, k) else s$alpha
  if (!real(alpha) || length(alpha) != k || any(alpha <= 0) || abs(sum(alpha) + w - 1) > 1e-6) {
    bad("`alpha` must be ", k, " positive weights summing to ", if (w > 0) "1 with `noise`" else "1")
  }
  # the third parameter: the ex-Gaussian's tau or the t's df
  nu <- if (identical(family, "exgauss")) s$tau else s$df
  if (!is.null(nu) && identical(family, "exgauss")) {
    if (!real(nu) || length(nu) != k || any(nu <= 0)) {
      bad("`tau` must be ", k, " positive finite numbers, one per component of `mu`")
    }
  } else if (!is.null(nu)) {
    if (!is.null(df)) bad("`df` is fixed by bulkem()'s `df`; give it there only")
    range <- model_limits()$df_range
    if (!real(nu) || length(nu) != k || any(nu < range[1] | nu > range[2])) {
      bad("`df` must be ", k, " numbers in [", range[1], ", ", range[2], "]")
    }
  }
  list(k = k, alpha = as.double(alpha), mu = as.double(mu), shape = as.double(sh),
       df = if (is.null(nu)) rep(NA_real_, k) else as.double(nu), noise = if (is.null(s$noise)) NA_real_ else w)
}

# The core's records, one after the other: (dataset from 1, K, alpha, mu,
# shape, df (NA: not given), noise (NA: not given)); numeric(0) without
# starts.
given_records <- function(given) {
  if (is.null(given)) return(numeric(0))
  unlist(lapply(seq_along(given), function(d) {
    lapply(given[[d]], function(s) c(d, s$k, s$alpha, s$mu, s$shape, s$df, s$noise))
  }), use.names = FALSE)
}

# `init` for multivariate data of `variables`, resolved as check_init()
# resolves it: NULL, or a "bulkem_given" list of n lists of starts, each
# (k, alpha, mu (K x d), sigma (d x d x K), df, noise) checked.
check_mv_init <- function(init, n, names, family, num.components, noise, df, variables) {
  per_dataset <- init_per_dataset(init, n, names, num.components, function(st) NROW(st$mu), paste0(
    "`init` for multivariate data must be a start (a list with `mu`, a K x d matrix, `sigma`, a d x d x K ",
    "array, and optionally `alpha`), a list of starts, a list of starts by dataset name, or a bulkem ",
    "result, not "))
  if (is.null(per_dataset) || inherits(per_dataset, "bulkem_given")) return(per_dataset)
  given <- lapply(seq_len(n), function(d) {
    lapply(per_dataset[[d]], check_mv_start, family = family, num.components = num.components,
           noise = noise, df = df, variables = variables, where = if (n > 1) names[d])
  })
  structure(given, class = "bulkem_given")
}

# One multivariate start checked: `mu` a K x d matrix (a row per
# component; a vector of d for K = 1), `sigma` a d x d x K array of
# symmetric positive definite matrices (a d x d matrix for K = 1), rows and
# columns matched to the variables by name where named; weights and the
# noise's as check_start() takes them; for Student's t `df`, one value or K
# (not with bulkem()'s `df`).
check_mv_start <- function(s, family, num.components, noise, df, variables, where) {
  at <- if (!is.null(where)) paste0(" (dataset \"", where, "\")") else ""
  bad <- function(...) stop_arg("`init`", at, ": ", ...)
  d <- length(variables)
  known <- c("mu", "sigma", "alpha", if (family == "t") "df", if (noise) "noise")
  extra <- setdiff(names(s), known)
  if (length(extra) > 0 || is.null(names(s)) || any(!nzchar(names(s)))) {
    bad("a multivariate start has elements ", paste0("`", known, "`", collapse = ", "),
        if (length(extra) > 0) paste0(", not `", extra[1], "`"))
  }
  real <- function(x) is.numeric(x) && all(is.finite(x))
  mu <- s$mu
  if (is.numeric(mu) && is.null(dim(mu)) && length(mu) == d) mu <- matrix(mu, 1, d, dimnames = list(NULL, names(mu)))
  if (!real(mu) || !is.matrix(mu) || ncol(mu) != d || nrow(mu) < 1 || nrow(mu) > max_components()) {
    bad("`mu` must be a K x ", d, " matrix of finite means, a row per component (K from 1 to ",
        max_components(), "), not ", describe_type(s$mu))
  }
  if (!is.null(colnames(mu)) && all(variables %in% colnames(mu))) mu <- mu[, variables, drop = FALSE]
  k <- nrow(mu)
  if (!k %in% num.components) {
    bad("a start of ", k, " component", if (k > 1) "s", " is not among num.components (",
        paste(num.components, collapse = ", "), ")")
  }
  sigma <- s$sigma
  if (is.matrix(sigma) && k == 1) sigma <- array(sigma, c(d, d, 1), dimnames = c(dimnames(sigma), list(NULL)))
  if (!real(sigma) || !identical(as.integer(dim(sigma)), as.integer(c(d, d, k)))) {
    bad("`sigma` must be a ", d, " x ", d, " x ", k, " array of covariance matrices, one per row of `mu`")
  }
  dn <- dimnames(sigma)
  if (!is.null(dn[[1]]) && all(variables %in% dn[[1]]) && !is.null(dn[[2]]) && all(variables %in% dn[[2]])) {
    sigma <- sigma[variables, variables, , drop = FALSE]
  }
  for (m in seq_len(k)) {
    cm <- sigma[, , m]
    if (max(abs(cm - t(cm))) > 1e-8 * max(abs(cm)) ||
        inherits(tryCatch(chol(matrix(cm, d, d)), error = function(e) e), "error")) {
      bad("`sigma[, , ", m, "]` is not a symmetric positive definite matrix")
    }
  }
  w <- if (is.null(s$noise) || is.na(s$noise)) 0 else s$noise
  if (!real(w) || length(w) != 1 || w < 0 || w >= 1) bad("`noise` must be one weight in [0, 1)")
  alpha <- if (is.null(s$alpha)) rep((1 - w) / k, k) else s$alpha
  if (!real(alpha) || length(alpha) != k || any(alpha <= 0) || abs(sum(alpha) + w - 1) > 1e-6) {
    bad("`alpha` must be ", k, " positive weights summing to ", if (w > 0) "1 with `noise`" else "1")
  }
  nu <- s$df
  if (!is.null(nu)) {
    if (!is.null(df)) bad("`df` is fixed by bulkem()'s `df`; give it there only")
    range <- model_limits()$df_range
    if (length(nu) == 1) nu <- rep(nu, k)
    if (!real(nu) || length(nu) != k || any(nu < range[1] | nu > range[2])) {
      bad("`df` must be one number or ", k, " in [", range[1], ", ", range[2], "]")
    }
  }
  list(k = k, alpha = as.double(alpha), mu = unname(mu), sigma = unname(sigma),
       df = if (is.null(nu)) rep(NA_real_, k) else as.double(nu),
       noise = if (is.null(s$noise) || is.na(s$noise)) NA_real_ else w)
}

# The core's records of multivariate starts (src/rust/src/settings.rs's
# given_mv_starts_for): (dataset from 1, K, alpha, the means component by
# component, the covariances, df (NA: not given), noise (NA: not given)).
mv_given_records <- function(given) {
  if (is.null(given)) return(numeric(0))
  unlist(lapply(seq_along(given), function(d) {
    lapply(given[[d]], function(s) c(d, s$k, s$alpha, t(s$mu), s$sigma, s$df, s$noise))
  }), use.names = FALSE)
}
