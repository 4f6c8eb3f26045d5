# Shifted fits (bulkem(shift = TRUE), issue 34 item 4): the shifted Wald,
# inverse Gaussian components of x - shift, and likewise shifted lognormal
# and gamma components; one shift per dataset shared by its components (a
# response time's non-decision time). The shift is estimated
# by maximising the profile log-likelihood l(shift) = max over the mixture
# of its log-likelihood on x - shift, for every dataset at once: each
# evaluation of l is one bulkem() call on all the datasets, each shifted by
# its own candidate, so every engine, censoring, truncation and weights work
# as they do unshifted. A grid of shifts below the smallest value first
# (full multi-start fits), then golden-section search in the bracket of
# the grid's best (each fit started from the best one's parameters, moved
# with the shift), then a full multi-start fit at the best shift. The
# standard errors come from a numerical Hessian of the log-likelihood in
# every free parameter, the shift included (shifted_loglik()), and the
# shift's 95% interval from its profile likelihood (`shift_ci`: Wald
# intervals from the information cover a shift the data pin down loosely
# too rarely).

# Fractions of the data's sd below its smallest value where the grid's
# shifts lie (largest first), and the golden-section steps after it.
shift_grid <- c(30, 10, 3, 1, 0.3, 0.1, 0.03, 0.01)
shift_steps <- 30L
# Bisection steps for each end of the shift's profile-likelihood interval:
# the end to 2^-14 of its first bracket.
shift_bisections <- 14L
# A shift within this fraction of the data's sd of the smallest value is
# at the search's edge (the golden section's bracket, 0.618^30 of the
# grid's step, is far narrower).
shift_edge <- 1e-4

# The families a shift applies to: those of positive values (a Normal, t
# or ex-Gaussian component's mu already is its location).
shift_families <- c("invgauss", "lognormal", "gamma")

# bulkem()'s `shift`, checked: TRUE only where a shifted family would be
# fitted.
check_shift <- function(shift, family, num.components, noise, equal.scale, fixed, init, multivariate) {
  check_flag(shift, "shift")
  if (!shift) return(FALSE)
  no <- function(...) stop_arg("`shift = TRUE` ", ...)
  if (multivariate) no("is for univariate data")
  if (!(family %in% shift_families)) {
    no("shifts the families of positive values, \"invgauss\" (the shifted Wald), \"lognormal\" and ",
       "\"gamma\": a Normal, t or ex-Gaussian component's mu already is its location")
  }
  if (length(num.components) != 1) no("fits one K per call: give `num.components` one value")
  TRUE
}

# The fits of shifted data: `values` the exact values by dataset, `weights`
# (NULL or a list), `truncation` (flat pairs as check_truncation() makes
# them), `censored` (NULL or the windows by dataset, flat triples) and `args`
# the other arguments every bulkem() call takes (`fixed` among them: values
# of the components of x - shift). `finish = FALSE` (the
# bootstrap's refits) stops at the estimate: each fit of x - shift with its
# `shift`, without the interval and the standard errors. `supports`: with
# `args$noise`, the noise's supports in the data's units, flat pairs as
# check_noise_support() makes them (none: each dataset's range, which
# moves with the data), shifted with the data at every step. `init`: the
# user's starts, for the grid's fits.
fit_shifted <- function(values, weights, truncation, censored, args, finish = TRUE, supports = numeric(0),
                        init = NULL) {
  n <- length(values)
  nm <- dataset_names(values)
  lowest <- vapply(values, function(v) if (length(v) > 0 && all(is.finite(v))) min(v) else NA_real_, 0)
  spread <- vapply(values, function(v) if (length(v) > 1 && all(is.finite(v))) stats::sd(v) else NA_real_, 0)
  usable <- is.finite(lowest) & is.finite(spread) & spread > 0
  window <- function(d) {
    w <- if (length(truncation) == 2) truncation else truncation[2 * d - c(1, 0)]
    if (length(w) == 2 && !anyNA(w)) w
  }
  # one bulkem() call, dataset d shifted by shift[d], started from `from`
  # (a list by dataset name, each NULL or a start) with `starts` random starts
  fit_at <- function(shift, from = NULL, starts = args$random.inits) {
    shift[!usable] <- 0
    data <- lapply(seq_len(n), function(d) {
      y <- values[[d]] - shift[d]
      # every dataset a Surv object where any has censored values; with
      # weights, each window once, its count the row's weight
      if (!is.null(censored)) {
        as_surv(y, shifted_windows(as.double(censored[[d]]), shift[d]), repeated = is.null(weights))
      } else {
        y
      }
    })
    names(data) <- nm
    w <- if (!is.null(weights) && !is.null(censored)) {
      lapply(seq_len(n), function(d) {
        c(if (is.null(weights[[d]])) rep(1, length(values[[d]])) else weights[[d]],
          matrix(as.double(censored[[d]]), nrow = 3)[3, ])
      })
    } else {
      weights
    }
    tr <- if (length(truncation) > 0) lapply(seq_len(n), function(d) if (!is.null(w <- window(d))) w - shift[d])
    if (isTRUE(args$noise) && length(supports) > 0) {
      args$noise.support <- lapply(seq_len(n), function(d) {
        s <- if (length(supports) == 2) supports else supports[2 * d - c(1, 0)]
        if (!anyNA(s)) s - shift[d]
      })
    }
    args$random.inits <- starts
    # a step from the best fit moved runs its one random start beside it
    # to convergence: no short runs to choose among
    if (!is.null(from)) args$control$short.runs <- 0L
    # the user's starts (of the components of x - shift) join the grid's
    # multi-start fits; later steps start from the best fit moved
    call <- c(list(datasets = data, truncation = tr, weights = w, init = if (is.null(from)) init else from), args)
    # the call's convergence counts kept (the last call's fits are the ones
    # returned: the caller's one warning counts them)
    counts <- NULL
    fits <- suppressWarnings(withCallingHandlers(do.call(bulkem, call),
                                                 bulkem_warning_convergence = function(w) counts <<- w$counts))
    structure(fits, counts = counts)
  }
  loglik <- function(fits) vapply(unclass(fits), function(f) if (isTRUE(f$fit_success)) f$loglik else -Inf, 0)
  # each dataset's fit at shift `from_shift` as a start at shift `to_shift`
  starts_from <- function(fits, from_shift, to_shift) {
    out <- lapply(seq_len(n), function(d) {
      f <- fits[[d]]
      if (!isTRUE(f$fit_success)) return(NULL)
      moved_start(f, from_shift[d] - to_shift[d])
    })
    names(out) <- nm
    out
  }
  # the grid
  grid <- outer(spread, shift_grid, function(s, f) -f * s) + lowest
  grid_fits <- lapply(seq_along(shift_grid), function(j) fit_at(grid[, j]))
  ll <- vapply(grid_fits, loglik, numeric(n))
  ll <- matrix(ll, nrow = n)
  best_j <- apply(ll, 1, which.max)
  best_shift <- grid[cbind(seq_len(n), best_j)]
  best_ll <- ll[cbind(seq_len(n), best_j)]
  best_fits <- lapply(seq_len(n), function(d) grid_fits[[best_j[d]]][[d]])
  # the bracket: the grid's neighbours of its best (up to the smallest
  # value itself at the top end: the likelihood is 0 there)
  lo <- grid[cbind(seq_len(n), pmax(best_j - 1L, 1L))]
  hi <- ifelse(best_j < length(shift_grid), grid[cbind(seq_len(n), pmin(best_j + 1L, length(shift_grid)))], lowest)
  # golden section: a < b < c with l(b) the best seen; the new point in the
  # larger part
  golden <- (3 - sqrt(5)) / 2
  a <- lo
  c <- hi
  b <- best_shift
  for (step in seq_len(shift_steps)) {
    right <- (c - b) > (b - a)
    x <- ifelse(right, b + golden * (c - b), b - golden * (b - a))
    x[!usable] <- 0
    fits <- fit_at(x, from = starts_from(best_fits, b, x), starts = 1L)
    lx <- loglik(fits)
    better <- usable & lx > best_ll
    # the bracket shrinks to the side of the better point
    a <- ifelse(better, ifelse(right, b, a), ifelse(right, a, x))
    c <- ifelse(better, ifelse(right, c, b), ifelse(right, x, c))
    for (d in which(better)) best_fits[[d]] <- fits[[d]]
    b <- ifelse(better, x, b)
    best_ll <- ifelse(better, lx, best_ll)
  }
  best_shift <- unname(ifelse(usable, b, 0))
  final <- fit_at(best_shift, from = starts_from(best_fits, best_shift, best_shift))
  fits <- unclass(final)
  if (!finish) {
    for (d in which(usable)) {
      fits[[d]]$shift <- best_shift[d]
      if (has_noise(fits[[d]])) fits[[d]]$noise_support <- fits[[d]]$noise_support + best_shift[d]
    }
    return(list(fits = fits, result = final))
  }
  top <- loglik(final)
  # the 95% profile-likelihood interval: where l(shift) is within
  # qchisq(0.95, 1) / 2 of its maximum, each end by bisection between a
  # shift inside and one outside (every evaluation a full multi-start fit,
  # started also from the maximum's fit)
  target <- top - stats::qchisq(0.95, 1) / 2
  ends <- lapply(c(-1, 1), function(side) {
    inside <- best_shift
    outside <- if (side > 0) lowest else rep(NA_real_, n)
    if (side < 0) {
      # step out below until l falls under the target
      step <- 0.05 * spread
      probe <- best_shift
      for (i in seq_len(12)) {
        open <- usable & is.na(outside)
        if (!any(open)) break
        probe[open] <- best_shift[open] - step[open] * 2^(i - 1)
        l <- loglik(fit_at(ifelse(open, probe, best_shift), from = starts_from(fits, best_shift, probe)))
        out_now <- open & l < target
        outside[out_now] <- probe[out_now]
        inside[open & !out_now] <- probe[open & !out_now]
      }
    }
    for (i in seq_len(shift_bisections)) {
      mid <- ifelse(is.na(outside), inside, (inside + outside) / 2)
      l <- loglik(fit_at(ifelse(usable, mid, 0), from = starts_from(fits, best_shift, mid)))
      out_now <- !is.na(outside) & l < target
      outside <- ifelse(out_now, mid, outside)
      inside <- ifelse(!is.na(outside) & !out_now, mid, inside)
    }
    # (an end never reached: the interval is open there)
    ifelse(is.na(outside), if (side < 0) -Inf else lowest, (inside + outside) / 2)
  })
  for (d in seq_len(n)) {
    if (!usable[d] || !isTRUE(fits[[d]]$fit_success)) next
    fits[[d]] <- shifted_fit(fits[[d]], best_shift[d], values[[d]], weights[[d]], window(d), censored[[d]])
    fits[[d]]$shift_ci <- unname(c(ends[[1]][d], ends[[2]][d]))
    if (lowest[d] - best_shift[d] <= shift_edge * spread[d]) {
      fits[[d]]$message <- paste0(if (nzchar(fits[[d]]$message)) paste0(fits[[d]]$message, "; "),
                                  "the shift is at the smallest value: the likelihood still rises there (",
                                  "without bound for a gamma component of shape < 1), so it is the edge ",
                                  "of the search, not an interior maximum")
    }
  }
  list(fits = fits, result = final)
}

# A fit's components as a start for the values `delta` larger (the shift
# `delta` smaller), NULL where a component cannot move so: each component's
# mean moves by `delta`, the inverse Gaussian keeping its lambda, the
# lognormal and the gamma their variance.
moved_start <- function(f, delta) {
  mu <- f$mu
  shape <- fit_shape(f)
  switch(f$family,
    invgauss = {
      mu <- mu + delta
    },
    lognormal = {
      mean <- exp(mu + shape^2 / 2)
      var <- expm1(shape^2) * mean^2
      mean <- mean + delta
      shape <- sqrt(log1p(var / mean^2))
      mu <- log(mean) - shape^2 / 2
    },
    gamma = {
      var <- mu^2 / shape
      mu <- mu + delta
      shape <- mu^2 / var
    })
  if (any(!is.finite(mu)) || any(!is.finite(shape)) || any(shape <= 0) ||
      (f$family != "lognormal" && any(mu <= 0))) {
    return(NULL)
  }
  start <- stats::setNames(list(f$alpha, mu, shape), c("alpha", "mu", shape_name(f$family)))
  # (a noise component's weight too; its support moves with the data)
  if (has_noise(f)) start$noise <- f$noise
  start
}

# A fit of x - shift made a fit of x with its shift: `shift`, its window
# in the data's units, one more parameter in AIC, BIC and ICL, and standard
# errors from the numerical Hessian of shifted_loglik() in every free
# parameter (shifted_map()'s), none for a value held fixed.
shifted_fit <- function(f, shift, x, w, window, censored) {
  f$shift <- shift
  if (!is.null(window)) f$truncation <- window
  nobs <- fit_nobs(f)
  f$aic <- f$aic + 2
  f$bic <- f$bic + log(nobs)
  f$icl <- f$icl + log(nobs)
  k <- length(f$mu)
  noise <- has_noise(f)
  # the noise's support in the data's units (it was fitted on x - shift):
  # fixed there, whatever the shift
  if (noise) f$noise_support <- f$noise_support + shift
  map <- shifted_map(f, shift)
  model <- list(k = k, family = f$family, support = if (noise) f$noise_support)
  theta <- map$free
  ll <- function(th) shifted_loglik(map$expand(th), model, x, w, window, censored)
  h <- tryCatch(stats::optimHess(theta, function(th) -ll(th),
                                 control = list(ndeps = 1e-4 * pmax(abs(theta), 1e-3))),
                error = function(e) NULL)
  v <- if (!is.null(h) && all(is.finite(h))) tryCatch(solve(h), error = function(e) NULL)
  if (is.null(v) || any(diag(v) <= 0)) {
    f$se <- NULL
    f$vcov <- NULL
    f$message <- paste0(if (nzchar(f$message)) paste0(f$message, "; "),
                        "no standard errors: the numerical information of the shifted fit is not positive definite")
    return(f)
  }
  dimnames(v) <- list(names(theta), names(theta))
  se <- sqrt(diag(v))
  at <- map$at
  # the weight the free ones determine (alpha's, or the noise's): the sum's
  ws <- at$weights
  determined <- if (length(ws) > 0) sqrt(sum(v[ws, ws])) else 0
  pick <- function(idx) ifelse(is.na(idx), NA_real_, se[pmax(idx, 1L)])
  alpha_se <- pick(at$alpha)
  if (!noise && !is.na(at$determined)) alpha_se[at$determined] <- determined
  sname <- shape_name(f$family)
  f$se <- c(stats::setNames(alpha_se, paste0("alpha", seq_len(k))),
            stats::setNames(pick(at$mu), paste0("mu", seq_len(k))),
            stats::setNames(pick(at$shape), paste0(sname, seq_len(k))),
            if (noise) c(noise = determined), shift = se[[length(se)]])
  f$vcov <- v
  f
}

# A shifted fit's free parameters and how they make all of its parameters:
# `free`, in shifted_loglik()'s order, the free weights (alpha_1..alpha_K
# but the one the others determine: the noise's with a noise component,
# else the last weight not held fixed), the free means, the free shapes
# (one with `equal.scale`), the shift; `expand(free)` the weights, the
# noise's, the means, the shapes and the shift, held values (the fit's
# `fixed`) in place; `at` where each weight, mean and shape is in `free`
# (NA: held or determined), the free weights' positions and the
# determined component (NA: the noise's, or none).
shifted_map <- function(f, shift) {
  k <- length(f$mu)
  noise <- has_noise(f)
  equal <- isTRUE(f$equal_scale) && k > 1
  held <- if (length(f$fixed) == 3 * k) as.double(f$fixed) else rep(NA_real_, 3 * k)
  ha <- held[seq_len(k)]
  hm <- held[k + seq_len(k)]
  hs <- held[2 * k + seq_len(k)]
  open_w <- which(is.na(ha))
  determined <- if (!noise && length(open_w) > 0) open_w[length(open_w)] else NA_integer_
  own_w <- if (noise) open_w else setdiff(open_w, determined)
  own_mu <- which(is.na(hm))
  shared <- equal && all(is.na(hs))
  own_shape <- if (equal) (if (shared) 1L else integer(0)) else which(is.na(hs))
  shape <- fit_shape(f)
  sname <- shape_name(f$family)
  free <- c(f$alpha[own_w], f$mu[own_mu], shape[own_shape], shift)
  names(free) <- c(if (length(own_w) > 0) paste0("alpha", own_w), if (length(own_mu) > 0) paste0("mu", own_mu),
                   if (length(own_shape) > 0) paste0(sname, own_shape), "shift")
  nw <- length(own_w)
  nm <- length(own_mu)
  ns <- length(own_shape)
  position <- function(own, offset, n) {
    out <- rep(NA_integer_, n)
    out[own] <- offset + seq_along(own)
    out
  }
  at <- list(alpha = position(own_w, 0L, k), mu = position(own_mu, nw, k),
             shape = if (equal) rep(if (shared) nw + nm + 1L else NA_integer_, k) else position(own_shape, nw + nm, k),
             weights = seq_len(nw), determined = determined)
  expand <- function(th) {
    alpha <- ha
    alpha[own_w] <- th[seq_len(nw)]
    pi0 <- 0
    if (noise) {
      pi0 <- 1 - sum(alpha)
    } else if (!is.na(determined)) {
      alpha[determined] <- 1 - sum(alpha[-determined])
    }
    mu <- hm
    mu[own_mu] <- th[nw + seq_len(nm)]
    sh <- if (equal) rep(if (shared) th[[nw + nm + 1]] else hs[1], k) else hs
    if (!equal) sh[own_shape] <- th[nw + nm + seq_len(ns)]
    list(alpha = alpha, pi0 = pi0, mu = mu, shape = sh, shift = th[[nw + nm + ns + 1]])
  }
  list(free = free, expand = expand, at = at)
}

# The log-likelihood of the shifted mixture of `model` (k components of
# `family`, a noise component uniform over `support` in the data's units
# where given) at `par` (shifted_map()'s expand(): weights, the noise's,
# means, shapes, shift), on the exact values x (weights w), with the
# censored windows (flat lower, upper, count triples) and the truncation
# window, written with R's densities and cdfs (statmod's for the inverse
# Gaussian) and the uniform's: -Inf outside the parameter space.
shifted_loglik <- function(par, model, x, w, window, censored) {
  k <- model$k
  noise <- !is.null(model$support)
  alpha <- par$alpha
  pi0 <- par$pi0
  mu <- par$mu
  shape <- par$shape
  shift <- par$shift
  family <- model$family
  if (any(alpha <= 0) || pi0 < 0 || (family != "lognormal" && any(mu <= 0)) || any(shape <= 0) ||
      any(x <= shift)) {
    return(-Inf)
  }
  y <- x - shift
  s <- model$support
  cdf <- function(v, m) {
    ifelse(v <= 0, 0, ifelse(is.infinite(v), 1, component_cdf(family, pmax(v, 1e-300), mu[m], shape[m])))
  }
  uniform <- function(lo, hi) if (noise) pi0 * (stats::punif(hi, s[1], s[2]) - stats::punif(lo, s[1], s[2])) else 0
  mass <- function(lo, hi) {
    Reduce(`+`, lapply(seq_len(k), function(m) alpha[m] * (cdf(hi - shift, m) - cdf(lo - shift, m)))) + uniform(lo, hi)
  }
  dens <- Reduce(`+`, lapply(seq_len(k), function(m) alpha[m] * component_density(family, y, mu[m], shape[m])))
  if (noise) dens <- dens + pi0 * stats::dunif(x, s[1], s[2])
  ww <- if (is.null(w)) rep(1, length(y)) else w
  ll <- sum(ww * log(dens))
  m <- matrix(as.double(censored), nrow = 3)
  if (ncol(m) > 0) ll <- ll + sum(m[3, ] * log(mass(m[1, ], m[2, ])))
  if (!is.null(window)) ll <- ll - (sum(ww) + sum(m[3, ])) * log(mass(window[1], window[2]))
  if (is.finite(ll)) ll else -Inf
}

# Censored windows (flat lower, upper, count triples) less `shift`.
shifted_windows <- function(windows, shift) {
  m <- matrix(windows, nrow = 3)
  m[1:2, ] <- m[1:2, ] - shift
  as.double(m)
}

# A fit's standard errors of its components' parameters: `se` less a
# shifted fit's shift (whose own is se[["shift"]], and its interval
# shift_ci), for the tables and intervals made per component.
component_se <- function(f) {
  s <- f$se
  if (is.null(s) || !("shift" %in% names(s))) s else s[names(s) != "shift"]
}

# A fit's shift (0 unshifted): predict(), quantile(), simulate() and plot()
# compute on x - shift.
fit_shift <- function(fit) if (is.null(fit$shift)) 0 else fit$shift
