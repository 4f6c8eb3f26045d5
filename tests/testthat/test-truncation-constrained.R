# Truncated and censored data with constraints (issue 34, items 2 and 3):
# one shape shared by the components (equal.scale) and means and shapes
# held fixed, whose renormalised M-step moves the components together
# (src/rust/core/src/truncation_constrained.rs). Against the constrained
# likelihood written with R's own densities and cdfs (helper-windows.R),
# its direct maximisation by optim from several starts, and its numerical
# Hessian.

# The truncated (window lo, hi) two-component log-likelihood of `family`
# on x, with right-censored values at `deadline` (count `late`).
window_loglik <- function(x, family, alpha, mu, shape, lo, hi, deadline = NULL, late = 0) {
  dens <- alpha[1] * family_density(x, family, mu[1], shape[1]) + alpha[2] * family_density(x, family, mu[2], shape[2])
  cdf <- function(v) sum(alpha * c(family_cdf(v, family, mu[1], shape[1]), family_cdf(v, family, mu[2], shape[2])))
  ll <- sum(log(dens)) - (length(x) + late) * log(cdf(hi) - cdf(lo))
  if (late > 0) ll <- ll + late * log(cdf(hi) - cdf(deadline))
  ll
}

# Two components of one shape (what equal.scale fits), 300 and 200 draws.
equal_shape_data <- function(family, seed) {
  set.seed(seed)
  switch(family,
    normal = c(stats::rnorm(300, 0, 1), stats::rnorm(200, 3, 1)),
    lognormal = exp(c(stats::rnorm(300, 0, 0.3), stats::rnorm(200, 1, 0.3))),
    gamma = c(stats::rgamma(300, shape = 8, rate = 8), stats::rgamma(200, shape = 8, rate = 8 / 3)),
    invgauss = c(statmod::rinvgauss(300, 1, 20), statmod::rinvgauss(200, 3, 20)))
}

# The best of optim (Nelder-Mead, then BFGS) of `loglik(th)` from `starts`
# (a list of vectors); `sds(th)`, the components' sds, kept within 0.05 to
# 20 times `spread` (beyond, R's cdfs lose a window's mass to rounding, or
# a component flattens over the window toward a limit that is no mixture
# of the family, and optim follows either).
best_optim <- function(loglik, starts, sds = NULL, spread = 1) {
  nll <- function(th) {
    if (!is.null(sds) && any(!is.finite(sds(th)) | sds(th) < 0.05 * spread | sds(th) > 20 * spread)) return(1e10)
    v <- -loglik(th)
    if (is.finite(v)) v else 1e10
  }
  best <- Inf
  for (th in starts) {
    o <- stats::optim(th, nll, control = list(maxit = 5000, reltol = 1e-13))
    o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
    best <- min(best, o$value)
  }
  -best
}

for (family in c("normal", "invgauss", "gamma", "lognormal")) {
  test_that(paste("truncated", family, "fits with one shape shared or a mean held reach optim's constrained maximum"), {
    x <- equal_shape_data(family, 3)
    lo <- unname(stats::quantile(x, 0.05))
    hi <- unname(stats::quantile(x, 0.9))
    xt <- x[x > lo & x < hi]
    sname <- bulkem:::shape_name(family)
    positive <- family %in% c("invgauss", "gamma")
    to_mu <- if (positive) exp else identity
    from_mu <- if (positive) log else identity
    set.seed(8)
    centres <- lapply(1:8, function(i) sort(stats::quantile(xt, stats::runif(2, 0.1, 0.9))))
    shape0 <- switch(family, normal = stats::sd(xt) / 2, lognormal = stats::sd(log(xt)) / 2,
                     gamma = 5, invgauss = mean(xt)^3 / stats::var(xt))
    # one shape shared
    f <- bulkem(list(a = xt), family = family, truncation = c(lo, hi), equal.scale = TRUE, seed = 1,
                use.gpu = FALSE)$a
    expect_equal(f$status, "converged")
    expect_equal(f[[sname]][1], f[[sname]][2])
    expect_equal(f$loglik, window_loglik(xt, family, f$alpha, f$mu, f[[sname]], lo, hi), tolerance = 1e-9)
    ll_eq <- function(th) {
      a <- stats::plogis(th[1])
      window_loglik(xt, family, c(a, 1 - a), to_mu(th[2:3]), rep(exp(th[4]), 2), lo, hi)
    }
    fitted_sd <- function(mu, shape) switch(family, invgauss = sqrt(mu^3 / shape), gamma = mu / sqrt(shape), shape)
    spread <- stats::sd(if (family == "lognormal") log(xt) else xt)
    best <- best_optim(ll_eq, lapply(centres, function(m) c(0, from_mu(m), log(shape0))),
                       function(th) fitted_sd(to_mu(th[2:3]), exp(th[4])), spread)
    expect_gte(f$loglik, best - 1e-7 * abs(best))
    expect_equal(f$bic, -2 * f$loglik + 4 * log(length(xt)), tolerance = 1e-10)
    # a mean held fixed (the second, at its fit's value moved a little)
    held <- f$mu[2] * (if (positive) 1.05 else 1) + (if (positive) 0 else 0.1)
    g <- bulkem(list(a = xt), family = family, truncation = c(lo, hi), fixed = list(mu = c(NA, held)), seed = 1,
                use.gpu = FALSE)$a
    expect_equal(g$status, "converged")
    expect_equal(g$mu[2], held, tolerance = 1e-14)
    expect_equal(g$loglik, window_loglik(xt, family, g$alpha, g$mu, g[[sname]], lo, hi), tolerance = 1e-9)
    ll_fix <- function(th) {
      a <- stats::plogis(th[1])
      window_loglik(xt, family, c(a, 1 - a), c(to_mu(th[2]), held), exp(th[3:4]), lo, hi)
    }
    best <- best_optim(ll_fix, lapply(centres, function(m) c(0, from_mu(m[1]), log(c(shape0, shape0)))),
                       function(th) fitted_sd(c(to_mu(th[2]), held), exp(th[3:4])), spread)
    expect_gte(g$loglik, best - 1e-7 * abs(best))
    # standard errors against the numerical Hessian of the constrained
    # likelihood in the fit's own free parameters
    if (family %in% c("normal", "invgauss")) {
      th <- c(f$alpha[1], f$mu, f[[sname]][1])
      h <- stats::optimHess(th, function(t) -window_loglik(xt, family, c(t[1], 1 - t[1]), t[2:3], rep(t[4], 2), lo, hi))
      expect_equal(unname(f$se[c("alpha1", "mu1", "mu2", paste0(sname, 1))]), sqrt(diag(solve(h))), tolerance = 1e-3)
      th <- c(g$alpha[1], g$mu[1], g[[sname]])
      h <- stats::optimHess(th, function(t) -window_loglik(xt, family, c(t[1], 1 - t[1]), c(t[2], held), t[3:4], lo, hi))
      expect_equal(unname(g$se[c("alpha1", "mu1", paste0(sname, 1:2))]), sqrt(diag(solve(h))), tolerance = 1e-3)
      expect_true(is.na(g$se[["mu2"]]))
    }
  })
}

test_that("censored values with one shape shared and a weight held fixed reach optim's maximum", {
  set.seed(3)
  x <- c(stats::rnorm(300, 0, 1), stats::rnorm(200, 3, 1.3))
  late <- x > 4
  y <- survival::Surv(pmin(x, 4), !late)
  h <- bulkem(list(a = y), family = "normal", fixed = list(alpha = c(0.6, NA)), equal.scale = TRUE, seed = 1,
              use.gpu = FALSE)$a
  expect_equal(h$alpha, c(0.6, 0.4))
  expect_equal(h$sigma[1], h$sigma[2])
  ll <- function(mu, s) {
    xo <- x[!late]
    sum(log(0.6 * stats::dnorm(xo, mu[1], s) + 0.4 * stats::dnorm(xo, mu[2], s))) +
      sum(late) * log(sum(c(0.6, 0.4) * stats::pnorm(4, mu, s, lower.tail = FALSE)))
  }
  expect_equal(h$loglik, ll(h$mu, h$sigma[1]), tolerance = 1e-10)
  set.seed(4)
  best <- best_optim(function(th) ll(th[1:2], exp(th[3])),
                     lapply(1:8, function(i) c(sort(stats::runif(2, -1, 4)), log(stats::runif(1, 0.3, 2)))))
  expect_gte(h$loglik, best - 1e-7 * abs(best))
  hs <- stats::optimHess(c(h$mu, h$sigma[1]), function(t) -ll(t[1:2], t[3]))
  expect_equal(unname(h$se[c("mu1", "mu2", "sigma1")]), sqrt(diag(solve(hs))), tolerance = 1e-3)
})

test_that("truncated fits with a weight held fixed reach optim's constrained maximum, with their standard errors", {
  for (family in c("normal", "invgauss", "gamma")) {
    x <- two_component_data(family, 7)
    lo <- unname(stats::quantile(x, 0.08))
    hi <- unname(stats::quantile(x, 0.85))
    xt <- x[x > lo & x < hi]
    sname <- bulkem:::shape_name(family)
    positive <- family %in% c("invgauss", "gamma")
    # one weight of the untruncated mixture held at 0.55 (the data's are
    # 0.6 and 0.4); the fit is reported in ascending mu, the held weight
    # with its component, which the fit's `fixed` names
    g <- bulkem(list(a = xt), family = family, truncation = c(lo, hi), fixed = list(alpha = c(0.55, NA)),
                seed = 1, use.gpu = FALSE)$a
    expect_identical(g$status, "converged", info = family)
    held <- which(!is.na(g$fixed[1:2]))
    expect_length(held, 1)
    expect_equal(g$alpha[held], 0.55, info = family)
    expect_equal(sum(g$alpha), 1)
    expect_equal(g$loglik, window_loglik(xt, family, g$alpha, g$mu, g[[sname]], lo, hi), tolerance = 1e-9,
                 info = family)
    # optim over the means and shapes with the weights (0.55, 0.45), from
    # starts of either order (the held weight on the lower mean or the higher)
    ll <- function(th) {
      mu <- if (positive) exp(th[1:2]) else th[1:2]
      window_loglik(xt, family, c(0.55, 0.45), mu, exp(th[3:4]), lo, hi)
    }
    fitted_sd <- function(mu, shape) switch(family, invgauss = sqrt(mu^3 / shape), gamma = mu / sqrt(shape), shape)
    spread <- stats::sd(xt)
    set.seed(9)
    shape0 <- switch(family, normal = spread / 2, gamma = 5, invgauss = mean(xt)^3 / stats::var(xt))
    starts <- unlist(lapply(1:4, function(i) {
      m <- sort(stats::quantile(xt, stats::runif(2, 0.1, 0.9)))
      lapply(list(m, rev(m)), function(mm) c(if (positive) log(mm) else mm, log(c(shape0, shape0))))
    }), recursive = FALSE)
    best <- best_optim(ll, starts, function(th) fitted_sd(if (positive) exp(th[1:2]) else th[1:2], exp(th[3:4])),
                       spread)
    expect_gte(g$loglik, best - 1e-7 * abs(best))
    # the free parameters' standard errors against a numerical Hessian at
    # the fit, in its order
    th <- c(g$mu, g[[sname]])
    h <- stats::optimHess(th, function(t) -window_loglik(xt, family, g$alpha, t[1:2], t[3:4], lo, hi),
                          control = list(parscale = abs(th)))
    expect_equal(unname(g$se[c("mu1", "mu2", paste0(sname, 1:2))]), sqrt(diag(solve(h))), tolerance = 1e-3,
                 info = family)
    expect_true(is.na(g$se[[paste0("alpha", held)]]))
    expect_equal(g$bic, -2 * g$loglik + 4 * log(length(xt)), tolerance = 1e-10)
  }
  # with a noise component: its weight and the free component's share
  # what the held one leaves, and the fit reaches optim's
  x <- two_component_data("normal", 8)
  x <- c(x, stats::runif(25, -3, 6))
  xt <- x[x > -2 & x < 5]
  h <- bulkem(list(a = xt), family = "normal", truncation = c(-2, 5), noise = TRUE, noise.support = c(-3, 6),
              fixed = list(alpha = c(0.5, NA)), seed = 1, use.gpu = FALSE)$a
  expect_identical(h$status, "converged")
  expect_equal(h$alpha[1], 0.5)
  expect_equal(sum(h$alpha) + h$noise, 1)
  lln <- function(a2, mu, s) {
    u <- 1 / 9
    dens <- 0.5 * stats::dnorm(xt, mu[1], s[1]) + a2 * stats::dnorm(xt, mu[2], s[2]) + (0.5 - a2) * u
    q <- 0.5 * diff(stats::pnorm(c(-2, 5), mu[1], s[1])) + a2 * diff(stats::pnorm(c(-2, 5), mu[2], s[2])) +
      (0.5 - a2) * 7 * u
    sum(log(dens)) - length(xt) * log(q)
  }
  expect_equal(h$loglik, lln(h$alpha[2], h$mu, h$sigma), tolerance = 1e-9)
  set.seed(10)
  best <- best_optim(function(th) lln(0.5 * stats::plogis(th[1]), th[2:3], exp(th[4:5])),
                     c(list(c(stats::qlogis(h$alpha[2] / 0.5), h$mu, log(h$sigma))),
                       lapply(1:6, function(i) c(0, sort(stats::runif(2, -1, 4)), log(c(1, 1))))))
  expect_gte(h$loglik, best - 1e-7 * abs(best))
})

test_that("truncated fits with one shape shared are bootstrapped with the constraint", {
  x <- two_component_data("normal", 5)
  xt <- x[x > -1.5 & x < 4]
  f <- bulkem(list(a = xt), family = "normal", truncation = c(-1.5, 4), equal.scale = TRUE, seed = 1,
              use.gpu = FALSE, control = list(keep.data = TRUE))
  bs <- bulkem_bootstrap(f, B = 49, seed = 2, use.gpu = FALSE)
  sig <- bs[bs$term == "sigma", ]
  expect_equal(sig$std.error[1], sig$std.error[2])
  ratio <- bs$std.error / tidy(f)$std.error
  expect_true(all(ratio > 0.6 & ratio < 1.5))
})
