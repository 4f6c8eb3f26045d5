# bulkem(shift = TRUE) (issue 34, item 4): the shifted Wald, inverse
# Gaussian components of x - shift with one shift per dataset. Against the
# log-likelihood written with statmod's density and cdf, its direct
# numerical maximisation over every parameter and the shift (optim from
# many starts), and the coverage of the shift's 95% intervals on simulated
# subjects.

# The shifted mixture's log-likelihood, written here with statmod.
sh_loglik <- function(x, alpha, mu, lambda, shift, right = numeric(0), window = NULL) {
  k <- length(mu)
  y <- x - shift
  dens <- Reduce(`+`, lapply(seq_len(k), function(m) alpha[m] * family_density(y, "invgauss", mu[m], lambda[m])))
  cdf <- function(v) Reduce(`+`, lapply(seq_len(k), function(m) {
    alpha[m] * if (is.infinite(v)) 1 else family_cdf(v - shift, "invgauss", mu[m], lambda[m])
  }))
  ll <- sum(log(dens)) + length(right) * if (length(right)) log(cdf(window[2] %||% Inf) - cdf(right[1])) else 0
  if (!is.null(window)) ll <- ll - (length(x) + length(right)) * log(cdf(window[2]) - cdf(window[1]))
  ll
}
`%||%` <- function(a, b) if (is.null(a)) b else a

sh_data <- function(n, seed, shift = 0.3) {
  set.seed(seed)
  shift + c(statmod::rinvgauss(round(0.6 * n), 0.4, 3), statmod::rinvgauss(n - round(0.6 * n), 1.2, 8))
}

# Two-component data of a shifted lognormal or gamma mixture.
sh_family_data <- function(family, n, seed, shift) {
  set.seed(seed)
  m <- round(0.6 * n)
  shift + switch(family,
    lognormal = c(stats::rlnorm(m, log(0.4), 0.4), stats::rlnorm(n - m, log(1.2), 0.25)),
    gamma = c(stats::rgamma(m, shape = 5, rate = 5 / 0.4), stats::rgamma(n - m, shape = 20, rate = 20 / 1.3)))
}

# The shifted two-component mixture's log-likelihood at (alpha1, mu, shape,
# shift), written here with stats' densities.
sh_family_loglik <- function(x, family, alpha1, mu, shape, shift) {
  if (any(x <= shift)) return(-Inf)
  y <- x - shift
  dens <- function(m) switch(family,
    lognormal = stats::dlnorm(y, mu[m], shape[m]),
    gamma = stats::dgamma(y, shape = shape[m], rate = shape[m] / mu[m]))
  sum(log(alpha1 * dens(1) + (1 - alpha1) * dens(2)))
}

test_that("shifted Wald fits reach the best of optim over every parameter and the shift", {
  x <- sh_data(250, 2)
  f <- bulkem(list(a = x), shift = TRUE, seed = 1, use.gpu = FALSE)$a
  expect_equal(f$status, "converged")
  expect_equal(f$loglik, sh_loglik(x, f$alpha, f$mu, f$lambda, f$shift), tolerance = 1e-10)
  expect_lt(f$shift, min(x))
  nll <- function(p) {
    v <- -sh_loglik(x, c(stats::plogis(p[1]), 1 - stats::plogis(p[1])), exp(p[2:3]), exp(p[4:5]),
                    min(x) - exp(p[6]))
    if (is.finite(v)) v else 1e10
  }
  set.seed(3)
  best <- Inf
  for (i in 1:20) {
    p <- c(stats::rnorm(1), log(sort(stats::runif(2, 0.2, 1.5))), log(stats::runif(2, 1, 10)),
           log(stats::runif(1, 0.01, 0.3)))
    o <- stats::optim(p, nll, control = list(maxit = 5000, reltol = 1e-13))
    o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
    if (o$value < best) {
      best <- o$value
      bp <- o$par
    }
  }
  expect_gte(f$loglik, -best - 1e-7 * abs(best))
  expect_equal(f$shift, min(x) - exp(bp[6]), tolerance = 1e-4)
  # one parameter more than the unshifted fit in AIC and BIC
  expect_equal(f$bic, -2 * f$loglik + 6 * log(length(x)), tolerance = 1e-10)
  expect_equal(f$aic, -2 * f$loglik + 12, tolerance = 1e-10)
  expect_named(f$se, c("alpha1", "alpha2", "mu1", "mu2", "lambda1", "lambda2", "shift"))
  expect_output(print(f), "shift")
})

test_that("the shift's 95% profile-likelihood intervals cover it on simulated subjects", {
  # 150 subjects of 200 responses, a two-component shifted Wald each (the
  # shift pinned down loosely: its estimates' sd is 0.13 for a shift of
  # 0.3). Measured on this seed: 90.7% covered by the profile intervals
  # (issue 34 asks 92-98%: not met, see inst/bench/results-shift.md), 78.7%
  # by Wald intervals from the standard errors.
  datasets <- lapply(1:150, function(s) sh_data(200, 100 + s, shift = 0.3))
  fits <- bulkem(datasets, shift = TRUE, seed = 2, use.gpu = FALSE, random.inits = 10)
  ci <- t(vapply(unclass(fits), function(f) f$shift_ci, numeric(2)))
  shifts <- vapply(unclass(fits), `[[`, 0, "shift")
  expect_true(all(ci[, 1] <= shifts & shifts <= ci[, 2]))
  covered <- ci[, 1] <= 0.3 & 0.3 <= ci[, 2]
  expect_gt(mean(covered), 0.85)
  expect_lt(mean(covered), 0.99)
  # each end where the profile log-likelihood is 1.92 below its maximum
  f <- fits[[1]]
  x <- datasets[[1]]
  at <- function(delta) bulkem(list(x - delta), seed = 2, use.gpu = FALSE, random.inits = 10)[[1]]$loglik
  expect_equal(at(f$shift_ci[1]), f$loglik - stats::qchisq(0.95, 1) / 2, tolerance = 1e-3)
  expect_equal(at(f$shift_ci[2]), f$loglik - stats::qchisq(0.95, 1) / 2, tolerance = 1e-3)
})

test_that("a shift moves with the data; predict, quantile and simulate are of the shifted mixture", {
  x <- sh_data(200, 4)
  f <- bulkem(list(a = x, b = x + 1), shift = TRUE, seed = 1, use.gpu = FALSE)
  expect_equal(f$b$shift - f$a$shift, 1, tolerance = 1e-6)
  expect_equal(f$b$mu, f$a$mu, tolerance = 1e-5)
  fa <- f$a
  expect_equal(predict(fa, newdata = fa$shift - 0.01, type = "density"), 0)
  inside <- stats::integrate(function(z) predict(fa, newdata = z, type = "density"), fa$shift, 50)$value
  expect_equal(inside, 1, tolerance = 1e-6)
  expect_equal(unname(quantile(fa, 0)), fa$shift)
  q <- quantile(fa, 0.4)
  expect_equal(predict(fa, newdata = q, type = "cdf"), 0.4, tolerance = 1e-8)
  expect_equal(glance(f)$df, c(6L, 6L))
  td <- tidy(f)
  expect_equal(td$std.error[1:6], unname(fa$se[c("alpha1", "mu1", "lambda1", "alpha2", "mu2", "lambda2")]))
  # the shift's row: its SE, and the profile interval at 95%
  s1 <- td[td$dataset == "a" & td$term == "shift", ]
  expect_equal(nrow(s1), 1)
  expect_equal(c(s1$estimate, s1$std.error, s1$conf.low, s1$conf.high),
               c(fa$shift, fa$se[["shift"]], fa$shift_ci))
  s9 <- tidy(fa, conf.level = 0.9)
  expect_equal(s9$conf.low[s9$term == "shift"], fa$shift - stats::qnorm(0.95) * fa$se[["shift"]])
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_silent(plot(fa, data = x))
  s <- simulate(fa, n = 3000, seed = 1)$sim_1
  expect_true(all(s > fa$shift))
  expect_gt(stats::ks.test(s, function(z) predict(fa, newdata = z, type = "cdf"))$p.value, 1e-3)
})

test_that("the bootstrap refits shifted fits with their shift", {
  x <- sh_data(250, 4)
  kept <- bulkem(list(a = x), shift = TRUE, seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
  fa <- kept$a
  set.seed(5)
  bs <- bulkem_bootstrap(kept, B = 29, seed = 3, use.gpu = FALSE)
  # R's generator is put back: the replicates' draws leave no trace
  after <- stats::runif(1)
  set.seed(5)
  expect_identical(stats::runif(1), after)
  again <- bulkem_bootstrap(kept, B = 29, seed = 3, use.gpu = FALSE)
  attr(again, "elapsed") <- attr(bs, "elapsed")
  expect_identical(again, bs)
  expect_equal(bs$term, c("alpha", "mu", "lambda", "alpha", "mu", "lambda", "shift"))
  expect_equal(bs$estimate, c(fa$alpha[1], fa$mu[1], fa$lambda[1], fa$alpha[2], fa$mu[2], fa$lambda[2], fa$shift))
  expect_true(is.na(bs$component[7]))
  expect_equal(attr(bs, "replicates")$used, 29L)
  # the shift's bootstrap standard error against the information's (a
  # loosely pinned shift: within a factor of two), its interval below the
  # smallest value
  expect_gt(bs$std.error[7], fa$se[["shift"]] / 2)
  expect_lt(bs$std.error[7], fa$se[["shift"]] * 2)
  expect_lt(bs$conf.high[7], min(x))
  # the test of K = 2 vs 3: the observed statistic is that of bulkem()'s
  # shifted fits with the bootstrap's settings
  lr <- bulkem_bootstrap(kept, B = 19, test = "lrt", seed = 3, use.gpu = FALSE)
  at <- function(k) bulkem(list(a = x), shift = TRUE, num.components = k, seed = 3, epsilon = 1e-5,
                           max.iters = 5000, use.gpu = FALSE)$a$loglik
  expect_equal(lr$loglik, at(2), tolerance = 1e-10)
  expect_equal(lr$loglik_alt, at(3), tolerance = 1e-10)
  expect_equal(lr$B_used, 19L)
  # one shifted Wald component: K = 1 is kept by the sequential test
  set.seed(9)
  one <- bulkem(list(c = 0.3 + statmod::rinvgauss(200, 0.6, 4)), shift = TRUE, num.components = 1, seed = 1,
                use.gpu = FALSE, control = list(keep.data = TRUE))
  seq_lr <- bulkem_bootstrap(one, B = 39, test = "lrt", max.components = 2, seed = 3, use.gpu = FALSE)
  expect_gt(seq_lr$p_value[1], 0.05)
  expect_equal(attr(seq_lr, "selected")$k, 1L)
  # a truncated shifted gamma: replicates inside its window, refitted so
  z <- sh_family_data("gamma", 200, 5, shift = 0.2)
  z <- z[z > 0.35]
  g <- bulkem(list(g = z), family = "gamma", shift = TRUE, truncation = c(0.35, Inf), seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE))
  gb <- bulkem_bootstrap(g, B = 19, seed = 2, use.gpu = FALSE)
  expect_equal(gb$term[7], "shift")
  expect_gt(gb$B_used[1], 15)
  expect_true(all(is.finite(gb$std.error)))
  # a shifted fit of censored values: replicates censored at its deadline
  late <- x > 2.5
  sc <- bulkem(list(a = survival::Surv(pmin(x, 2.5), !late)), shift = TRUE, seed = 1, use.gpu = FALSE,
               control = list(keep.data = TRUE))
  scb <- bulkem_bootstrap(sc, B = 19, seed = 2, use.gpu = FALSE)
  expect_equal(scb$estimate[7], sc$a$shift)
  expect_gt(scb$B_used[1], 15)
  expect_true(all(is.finite(scb$std.error)))
  # shifted and unshifted fits are bootstrapped separately
  both <- c(kept, bulkem(list(b = x), seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE)))
  expect_error(bulkem_bootstrap(both, B = 19, use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "shifted fits")
})

test_that("a shift with cut-offs and a deadline", {
  skip_if_not_installed("survival")
  x <- sh_data(300, 5)
  x <- x[x > 0.35]
  late <- x > 2.5
  y <- survival::Surv(pmin(x, 2.5), !late)
  f <- bulkem(list(a = y), shift = TRUE, truncation = c(0.35, Inf), seed = 1, use.gpu = FALSE)$a
  expect_equal(f$status, "converged")
  expect_equal(f$censored, sum(late))
  expect_equal(f$truncation, c(0.35, Inf))
  expect_equal(f$loglik, sh_loglik(x[!late], f$alpha, f$mu, f$lambda, f$shift, right = rep(2.5, sum(late)),
                                   window = c(0.35, Inf)), tolerance = 1e-9)
  # frequency weights with censored values give the expanded data's fit;
  # a fully observed Surv dataset beside a censored one
  w <- rep(c(1, 2), length.out = length(x))
  xe <- rep(x, w)
  weighted <- bulkem(list(a = y), weights = list(w), shift = TRUE, seed = 1, use.gpu = FALSE)$a
  expanded <- bulkem(list(a = survival::Surv(pmin(xe, 2.5), xe <= 2.5)), shift = TRUE, seed = 1, use.gpu = FALSE)$a
  expect_equal(weighted$loglik, expanded$loglik, tolerance = 1e-10)
  expect_equal(weighted$shift, expanded$shift, tolerance = 1e-6)
  expect_equal(weighted$se, expanded$se, tolerance = 1e-4)
  two <- bulkem(list(a = y, b = survival::Surv(x, rep(TRUE, length(x)))), shift = TRUE, seed = 1, use.gpu = FALSE)
  expect_equal(two$b$censored, 0)
  expect_equal(two$b$shift, bulkem(list(b = x), shift = TRUE, seed = 1, use.gpu = FALSE)$b$shift)
  # a shifted gamma with the same cut-off and deadline, against stats' density and cdf
  z <- sh_family_data("gamma", 300, 8, shift = 0.2)
  z <- z[z > 0.3]
  late <- z > 1.8
  g <- bulkem(list(a = survival::Surv(pmin(z, 1.8), !late)), family = "gamma", shift = TRUE,
              truncation = c(0.3, Inf), seed = 1, use.gpu = FALSE)$a
  expect_equal(g$status, "converged")
  cdf <- function(v) sum(g$alpha * stats::pgamma(v - g$shift, shape = g$shape, rate = g$shape / g$mu))
  dens <- vapply(z[!late] - g$shift, function(v) sum(g$alpha * stats::dgamma(v, shape = g$shape, rate = g$shape / g$mu)), 0)
  expect_equal(g$loglik, sum(log(dens)) + sum(late) * log(1 - cdf(1.8)) - length(z) * log(1 - cdf(0.3)),
               tolerance = 1e-9)
})

for (family in c("lognormal", "gamma")) {
  test_that(paste("shifted", family, "fits reach the best of optim, with the Hessian's standard errors"), {
    x <- sh_family_data(family, 250, 7, shift = 0.3)
    f <- bulkem(list(a = x), family = family, shift = TRUE, seed = 1, use.gpu = FALSE)$a
    shape <- if (family == "lognormal") f$sigma else f$shape
    expect_equal(f$status, "converged")
    expect_lt(f$shift, min(x))
    expect_equal(f$loglik, sh_family_loglik(x, family, f$alpha[1], f$mu, shape, f$shift), tolerance = 1e-10)
    # optim over (logit alpha1, mu (log mu for the gamma), log shape, log(min(x) - shift))
    to_mu <- if (family == "gamma") exp else identity
    nll <- function(p) {
      v <- -sh_family_loglik(x, family, stats::plogis(p[1]), to_mu(p[2:3]), exp(p[4:5]), min(x) - exp(p[6]))
      if (is.finite(v)) v else 1e10
    }
    set.seed(11)
    best <- Inf
    for (i in 1:20) {
      shift0 <- stats::runif(1, 0.01, 0.4)
      y <- x - (min(x) - shift0)
      cut <- stats::quantile(y, stats::runif(1, 0.3, 0.7))
      lo <- y[y <= cut]
      hi <- y[y > cut]
      p <- if (family == "lognormal") {
        c(stats::qlogis(length(lo) / length(y)), mean(log(lo)), mean(log(hi)), log(stats::sd(log(lo))),
          log(stats::sd(log(hi))), log(shift0))
      } else {
        c(stats::qlogis(length(lo) / length(y)), log(mean(lo)), log(mean(hi)), log(mean(lo)^2 / stats::var(lo)),
          log(mean(hi)^2 / stats::var(hi)), log(shift0))
      }
      o <- stats::optim(p, nll, control = list(maxit = 5000, reltol = 1e-13))
      o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
      if (o$value < best) best <- o$value
    }
    expect_gte(f$loglik, -best - 1e-7 * abs(best))
    expect_equal(f$bic, -2 * f$loglik + 6 * log(length(x)), tolerance = 1e-10)
    expect_named(f$se, c("alpha1", "alpha2", "mu1", "mu2", paste0(bulkem:::shape_name(family), 1:2), "shift"))
    # the standard errors against central differences of the loglik above
    # in (alpha1, mu, shape, shift), steps 1e-4 of each value
    theta <- c(f$alpha[1], f$mu, shape, f$shift)
    ll <- function(th) sh_family_loglik(x, family, th[1], th[2:3], th[4:5], th[6])
    h <- 1e-4 * pmax(abs(theta), 1e-2)
    hess <- matrix(0, 6, 6)
    for (i in 1:6) for (j in 1:6) {
      e <- function(a, b) {
        th <- theta
        th[i] <- th[i] + a * h[i]
        th[j] <- th[j] + b * h[j]
        ll(th)
      }
      hess[i, j] <- (e(1, 1) - e(1, -1) - e(-1, 1) + e(-1, -1)) / (4 * h[i] * h[j])
    }
    se <- sqrt(diag(solve(-hess)))
    expect_equal(unname(f$se[c("alpha1", "mu1", "mu2", paste0(bulkem:::shape_name(family), 1:2), "shift")]), se,
                 tolerance = 1e-3)
    # predict, quantile and simulate are of the shifted mixture
    expect_equal(predict(f, newdata = f$shift - 0.01, type = "density"), 0)
    inside <- stats::integrate(function(z) predict(f, newdata = z, type = "density"), f$shift, 30)$value
    expect_equal(inside, 1, tolerance = 1e-6)
    q <- quantile(f, 0.3)
    expect_equal(predict(f, newdata = q, type = "cdf"), 0.3, tolerance = 1e-8)
    expect_true(all(simulate(f, n = 500, seed = 1)$sim_1 > f$shift))
    td <- tidy(f)
    expect_equal(td$estimate[td$term == "shift"], f$shift)
    expect_equal(td$conf.low[td$term == "shift"], f$shift_ci[1])
  })
}

test_that("a shift at the smallest value says it is the search's edge", {
  # a gamma component of shape < 1: the likelihood rises without bound as
  # the shift nears the smallest value
  set.seed(7)
  y <- 0.2 + c(stats::rgamma(200, shape = 0.9, rate = 0.9 / 0.3), stats::rgamma(100, shape = 10, rate = 10 / 1.5))
  g <- bulkem(list(a = y), family = "gamma", shift = TRUE, seed = 1, use.gpu = FALSE)$a
  expect_lt(min(y) - g$shift, 1e-4 * stats::sd(y))
  expect_lt(min(g$shape), 1)
  expect_match(g$message, "edge of the search")
  # an interior shift does not
  x <- sh_family_data("gamma", 250, 7, shift = 0.3)
  expect_false(grepl("edge", bulkem(list(a = x), family = "gamma", shift = TRUE, seed = 1, use.gpu = FALSE)$a$message))
})

test_that("shifted starts move each component's mean and keep its variance (lognormal, gamma)", {
  ln <- list(family = "lognormal", alpha = c(0.4, 0.6), mu = c(-1, 0.2), sigma = c(0.5, 0.3))
  s <- bulkem:::moved_start(ln, 0.25)
  mean_of <- function(mu, sigma) exp(mu + sigma^2 / 2)
  var_of <- function(mu, sigma) expm1(sigma^2) * mean_of(mu, sigma)^2
  expect_equal(mean_of(s$mu, s$sigma), mean_of(ln$mu, ln$sigma) + 0.25, tolerance = 1e-12)
  expect_equal(var_of(s$mu, s$sigma), var_of(ln$mu, ln$sigma), tolerance = 1e-12)
  gm <- list(family = "gamma", alpha = c(0.4, 0.6), mu = c(0.5, 2), shape = c(3, 9))
  g <- bulkem:::moved_start(gm, -0.1)
  expect_equal(g$mu, gm$mu - 0.1)
  expect_equal(g$mu^2 / g$shape, gm$mu^2 / gm$shape, tolerance = 1e-12)
  # a mean moved to or below zero cannot start
  expect_null(bulkem:::moved_start(gm, -0.6))
})

test_that("a shift with a noise component over a support in the data's units, and with one shape shared", {
  set.seed(3)
  x <- c(0.3 + c(statmod::rinvgauss(200, 0.6, 6), statmod::rinvgauss(100, 1.5, 15)), stats::runif(15, 0.3, 5))
  S <- c(0.2, 5)
  f <- bulkem(list(a = x), shift = TRUE, noise = TRUE, noise.support = S, seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE))
  a <- f$a
  expect_equal(a$status, "converged")
  expect_equal(a$noise_support, S)
  expect_gt(a$noise, 0.01)
  ll <- function(alpha, mu, lam, pi0, sh) {
    if (any(x <= sh) || pi0 < 0 || any(alpha <= 0)) return(-Inf)
    y <- x - sh
    sum(log(alpha[1] * statmod::dinvgauss(y, mu[1], lam[1]) + alpha[2] * statmod::dinvgauss(y, mu[2], lam[2]) +
              pi0 * stats::dunif(x, S[1], S[2])))
  }
  expect_equal(a$loglik, ll(a$alpha, a$mu, a$lambda, a$noise, a$shift), tolerance = 1e-10)
  nll <- function(p) {
    w <- exp(c(p[1:2], 0))
    w <- w / sum(w)
    v <- -ll(w[1:2], exp(p[3:4]), exp(p[5:6]), w[3], min(x) - exp(p[7]))
    if (is.finite(v)) v else 1e10
  }
  set.seed(3)
  best <- Inf
  for (i in 1:12) {
    p <- c(stats::rnorm(2, 2), log(sort(stats::runif(2, 0.2, 1.5))), log(stats::runif(2, 1, 10)),
           log(stats::runif(1, 0.01, 0.3)))
    o <- stats::optim(p, nll, control = list(maxit = 8000, reltol = 1e-13))
    o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 2000, reltol = 1e-14))
    best <- min(best, o$value)
  }
  expect_gte(a$loglik, -best - 1e-7 * best)
  th <- c(a$alpha, a$mu, a$lambda, a$shift)
  h <- stats::optimHess(th, function(t) -ll(t[1:2], t[3:4], t[5:6], 1 - t[1] - t[2], t[7]))
  v <- solve(h)
  expect_equal(unname(a$se[c("alpha1", "alpha2", "mu1", "mu2", "lambda1", "lambda2", "shift")]), sqrt(diag(v)),
               tolerance = 1e-3)
  expect_equal(a$se[["noise"]], sqrt(sum(v[1:2, 1:2])), tolerance = 1e-3)
  # the noise below the shift counts: the density integrates to 1 over the
  # support and the components' range together
  expect_equal(predict(a, newdata = 0.25, type = "density"), a$noise / diff(S))
  total <- stats::integrate(function(z) predict(a, newdata = z, type = "density"), 0.2, 60, subdivisions = 2000)$value
  expect_equal(total, 1, tolerance = 1e-5)
  s <- simulate(a, n = 3000, seed = 1)$sim_1
  expect_gt(stats::ks.test(s, function(z) predict(a, newdata = z, type = "cdf"))$p.value, 1e-3)
  # the bootstrap refits each replicate with its shift and the noise over S
  bs <- bulkem_bootstrap(f, B = 19, seed = 2, use.gpu = FALSE)
  expect_equal(bs$term, c("alpha", "alpha", "mu", "lambda", "alpha", "mu", "lambda", "shift"))
  expect_gt(bs$B_used[1], 15)
  expect_true(all(is.finite(bs$std.error)))
  expect_gt(bs$std.error[1], 0)
  # one lambda shared
  g <- bulkem(list(a = x), shift = TRUE, equal.scale = TRUE, seed = 1, use.gpu = FALSE)$a
  expect_equal(g$lambda[1], g$lambda[2])
  ll_eq <- function(alpha1, mu, lam, sh) {
    if (any(x <= sh)) return(-Inf)
    sum(log(alpha1 * statmod::dinvgauss(x - sh, mu[1], lam) + (1 - alpha1) * statmod::dinvgauss(x - sh, mu[2], lam)))
  }
  expect_equal(g$loglik, ll_eq(g$alpha[1], g$mu, g$lambda[1], g$shift), tolerance = 1e-10)
  expect_equal(g$bic, -2 * g$loglik + 5 * log(length(x)), tolerance = 1e-10)
  th <- c(g$alpha[1], g$mu, g$lambda[1], g$shift)
  h <- stats::optimHess(th, function(t) -ll_eq(t[1], t[2:3], t[4], t[5]))
  expect_equal(unname(g$se[c("alpha1", "mu1", "mu2", "lambda1", "shift")]), sqrt(diag(solve(h))), tolerance = 1e-3)
  expect_equal(g$se[["lambda1"]], g$se[["lambda2"]])
})

test_that("a shift with values held fixed and with starting values of the shifted components", {
  x <- sh_data(250, 2)
  f <- bulkem(list(a = x), shift = TRUE, fixed = list(mu = c(NA, 1.2)), seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE))
  a <- f$a
  expect_equal(a$status, "converged")
  expect_equal(a$mu[2], 1.2)
  ll <- function(a1, mu1, lam, sh) {
    if (any(x <= sh) || a1 <= 0 || a1 >= 1 || mu1 <= 0 || any(lam <= 0)) return(-Inf)
    y <- x - sh
    sum(log(a1 * statmod::dinvgauss(y, mu1, lam[1]) + (1 - a1) * statmod::dinvgauss(y, 1.2, lam[2])))
  }
  expect_equal(a$loglik, ll(a$alpha[1], a$mu[1], a$lambda, a$shift), tolerance = 1e-10)
  nll <- function(p) {
    v <- -ll(stats::plogis(p[1]), exp(p[2]), exp(p[3:4]), min(x) - exp(p[5]))
    if (is.finite(v)) v else 1e10
  }
  set.seed(3)
  best <- Inf
  for (i in 1:15) {
    p <- c(stats::rnorm(1), log(stats::runif(1, 0.2, 0.8)), log(stats::runif(2, 1, 10)), log(stats::runif(1, 0.01, 0.3)))
    o <- stats::optim(p, nll, control = list(maxit = 8000, reltol = 1e-13))
    o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 2000, reltol = 1e-14))
    best <- min(best, o$value)
  }
  expect_gte(a$loglik, -best - 1e-7 * best)
  # five free parameters and the shift: BIC, and SEs against optimHess
  expect_equal(a$bic, -2 * a$loglik + 5 * log(length(x)), tolerance = 1e-10)
  th <- c(a$alpha[1], a$mu[1], a$lambda, a$shift)
  h <- stats::optimHess(th, function(t) -ll(t[1], t[2], t[3:4], t[5]))
  expect_equal(unname(a$se[c("alpha1", "mu1", "lambda1", "lambda2", "shift")]), sqrt(diag(solve(h))),
               tolerance = 2e-3)
  expect_true(is.na(a$se[["mu2"]]))
  # the bootstrap holds the value in every refit
  bs <- bulkem_bootstrap(f, B = 19, seed = 2, use.gpu = FALSE)
  expect_equal(bs$std.error[bs$component == 2 & bs$term == "mu"], 0)
  expect_gt(bs$std.error[bs$term == "shift"], 0)
  # a start of the shifted components given (the default fit's): with two
  # EM passes per fit it is where the search ends, where one random start
  # does not get
  default <- bulkem(list(a = x), shift = TRUE, seed = 1, use.gpu = FALSE)$a
  start <- list(alpha = default$alpha, mu = default$mu, lambda = default$lambda)
  # one start of two EM steps (mixed starts, no short runs: the lone draw)
  short <- function(...) suppressWarnings(bulkem(list(a = x), shift = TRUE, random.inits = 1, max.iters = 2,
                                                 seed = 1, use.gpu = FALSE,
                                                 control = list(starts = "mixed", short.runs = 0), ...)$a)
  expect_equal(short(init = start)$loglik, default$loglik, tolerance = 1e-8)
  expect_lt(short()$loglik, default$loglik - 1)
})

test_that("a shifted call warns as any call does: values far from the rest, fits stopped at max.iters", {
  x <- sh_data(300, 11)
  x[10] <- 1e5
  catch <- function(...) {
    w <- NULL
    f <- withCallingHandlers(bulkem(list(a = x), shift = TRUE, random.inits = 4, seed = 1, use.gpu = FALSE, ...),
                             bulkem_warning_convergence = function(c) {
                               w <<- c
                               invokeRestart("muffleWarning")
                             })
    list(fit = f$a, warning = w)
  }
  r <- catch()
  # named as in the data given, not the shifted values the search fitted
  expect_identical(r$fit$far, c("10" = 1e5))
  expect_s3_class(r$warning, "bulkem_warning_convergence")
  expect_identical(r$warning$far, 1L)
  expect_match(conditionMessage(r$warning), "1e+05 (observation 10)", fixed = TRUE)
  # the last fit's counts: its status
  r <- catch(max.iters = 2, control = list(short.runs = 0))
  expect_identical(r$fit$status, "max_iters")
  expect_identical(r$warning$counts[["max_iters"]], 1)
})

test_that("shift = TRUE is refused where it does not apply", {
  x <- sh_data(100, 6)
  bad <- function(...) expect_error(bulkem(list(a = x), shift = TRUE, use.gpu = FALSE, ...),
                                    class = "bulkem_error_argument", regexp = "shift")
  bad(family = "normal")
  bad(family = "t")
  bad(family = "exgauss")
  bad(num.components = 1:2)
  expect_error(bulkem(list(a = x), shift = NA, use.gpu = FALSE), class = "bulkem_error_argument", regexp = "shift")
})
