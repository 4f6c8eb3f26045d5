# family = "exgauss": ex-Gaussian components (a Normal of mean mu and
# standard deviation sigma plus an exponential of mean tau). Every number
# checked against an independent R computation: the density in closed
# form, itself checked against the convolution by stats::integrate(); a
# direct maximisation (optim); a numerical Hessian (stats::optimHess);
# the expanded data's fit; the moments of draws.

# the ex-Gaussian density in closed form
dexg <- function(x, mu, sigma, tau) {
  exp((mu - x) / tau + sigma^2 / (2 * tau^2) + stats::pnorm((x - mu) / sigma - sigma / tau, log.p = TRUE)) / tau
}

# log-likelihood of an ex-Gaussian mixture; with `support`, a noise
# component of weight 1 - sum(alpha) uniform over it
exg_loglik <- function(x, alpha, mu, sigma, tau, support = NULL) {
  d <- 0
  for (m in seq_along(alpha)) d <- d + alpha[m] * dexg(x, mu[m], sigma[m], tau[m])
  if (!is.null(support)) d <- d + (1 - sum(alpha)) * stats::dunif(x, support[1], support[2])
  sum(log(d))
}

# theta = (alpha1, mu1, mu2, sigma1, sigma2, tau1, tau2) of two components
exg_theta_loglik <- function(th, x) exg_loglik(x, c(th[1], 1 - th[1]), th[2:3], th[4:5], th[6:7])

# reaction times of two processes: a fast one and a slow, more skewed one
rts <- function(n = 600, seed = 1) {
  set.seed(seed)
  fast <- round(0.55 * n)
  c(stats::rnorm(fast, 0.40, 0.04) + stats::rexp(fast, 1 / 0.08),
    stats::rnorm(n - fast, 0.75, 0.08) + stats::rexp(n - fast, 1 / 0.25))
}

test_that("the reference density is the convolution of a Normal and an exponential", {
  for (x in c(0.2, 0.38, 0.5, 1.7)) {
    conv <- stats::integrate(function(z) stats::dnorm(x - z, 0.4, 0.05) * stats::dexp(z, 1 / 0.2),
                             0, Inf, rel.tol = 1e-12)$value
    expect_equal(dexg(x, 0.4, 0.05, 0.2), conv, tolerance = 1e-8)
  }
})

test_that("an ex-Gaussian fit's log-likelihood is the closed form's, with and without noise", {
  x <- rts()
  f <- bulkem(list(x), 2, family = "exgauss", seed = 3, use.gpu = FALSE)[[1]]
  expect_identical(f$status, "converged")
  expect_length(f$tau, 2)
  expect_null(f$df)
  expect_equal(f$loglik, exg_loglik(x, f$alpha, f$mu, f$sigma, f$tau), tolerance = 1e-12)
  expect_named(f$se, c("alpha1", "alpha2", "mu1", "mu2", "sigma1", "sigma2", "tau1", "tau2"))
  expect_identical(dim(f$vcov), c(7L, 7L))
  # AIC and BIC count 3K - 1 + K parameters
  expect_equal(f$bic, -2 * f$loglik + 7 * log(length(x)), tolerance = 1e-12)
  expect_identical(attr(logLik(f), "df"), 7L)
  # the components near the processes that made the data
  expect_equal(f$mu, c(0.40, 0.75), tolerance = 0.1)
  expect_equal(f$tau, c(0.08, 0.25), tolerance = 0.3)
  y <- c(x, stats::runif(8, 3, 10))
  g <- bulkem(list(y), 2, family = "exgauss", noise = TRUE, seed = 3, use.gpu = FALSE)[[1]]
  expect_identical(g$status, "converged")
  expect_equal(g$loglik, exg_loglik(y, g$alpha, g$mu, g$sigma, g$tau, support = range(y)), tolerance = 1e-12)
  expect_named(g$se, c("alpha1", "alpha2", "mu1", "mu2", "sigma1", "sigma2", "tau1", "tau2", "noise"))
  # the 8 outliers, and a little of the slow component's tail beside them
  expect_gte(g$noise * length(y), 8)
  expect_lte(g$noise * length(y), 16)
})

test_that("an ex-Gaussian fit's maximum is at least optim's, its standard errors a numerical Hessian's", {
  x <- rts(seed = 5)
  f <- bulkem(list(x), 2, family = "exgauss", seed = 1, use.gpu = FALSE)[[1]]
  nll <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[4:7] <= 1e-4)) return(1e10)
    -exg_theta_loglik(t, x)
  }
  set.seed(4)
  best <- -Inf
  for (start in 1:15) {
    m <- sort(sample(x, 2))
    o <- optim(c(0.5, m, 0.05, 0.05, 0.1, 0.1), nll, control = list(maxit = 20000, reltol = 1e-14))
    o <- optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
    best <- max(best, -o$value)
  }
  expect_gte(f$loglik, best - 1e-7 * abs(best))
  th <- c(f$alpha[1], f$mu, f$sigma, f$tau)
  h <- stats::optimHess(th, nll, control = list(ndeps = 1e-4 * abs(th)))
  se <- sqrt(diag(solve(h)))
  expect_equal(unname(f$se[c(1, 3:8)]), se, tolerance = 1e-3)
  # one K: the single ex-Gaussian's ML, against optim
  one <- bulkem(list(x), 1, family = "exgauss", seed = 1, use.gpu = FALSE)[[1]]
  nll1 <- function(t) if (any(t[2:3] <= 1e-4)) 1e10 else -sum(log(dexg(x, t[1], t[2], t[3])))
  o <- optim(c(mean(x) - 0.8 * sd(x), 0.6 * sd(x), 0.8 * sd(x)), nll1, control = list(maxit = 20000, reltol = 1e-14))
  expect_gte(one$loglik, -o$value - 1e-9 * abs(o$value))
  expect_equal(c(one$mu, one$sigma, one$tau), o$par, tolerance = 1e-3)
})

test_that("the ex-Gaussian's density, cdf, quantiles, draws and tidiers are the closed form's", {
  x <- rts(seed = 13)
  fits <- bulkem(list(a = x), 2, family = "exgauss", seed = 2, use.gpu = FALSE)
  f <- fits[[1]]
  grid <- c(-1, 0.3, 0.45, 0.9, 3)
  dens <- f$alpha[1] * dexg(grid, f$mu[1], f$sigma[1], f$tau[1]) + f$alpha[2] * dexg(grid, f$mu[2], f$sigma[2], f$tau[2])
  expect_equal(predict(f, grid, type = "density"), dens, tolerance = 1e-12)
  # posterior probabilities: each component's share of the density
  p <- predict(f, grid)
  expect_equal(p$comp1, f$alpha[1] * dexg(grid, f$mu[1], f$sigma[1], f$tau[1]) / dens, tolerance = 1e-12)
  a <- augment(fits, data = list(a = x))
  expect_equal(a$.component, predict(f, x)$component)
  # the cdf: the density integrated
  mix <- function(v) f$alpha[1] * dexg(v, f$mu[1], f$sigma[1], f$tau[1]) + f$alpha[2] * dexg(v, f$mu[2], f$sigma[2], f$tau[2])
  cdf <- vapply(grid, function(g) stats::integrate(mix, -Inf, g, rel.tol = 1e-12)$value, 0)
  expect_equal(predict(f, grid, type = "cdf"), cdf, tolerance = 1e-8)
  q <- quantile(f, c(0.01, 0.5, 0.99))
  expect_equal(predict(f, unname(q), type = "cdf"), c(0.01, 0.5, 0.99), tolerance = 1e-8)
  # draws: the mixture's mean sum(alpha (mu + tau)) and its cdf at a point
  s <- simulate(f, nsim = 1, seed = 1, n = 40000)[[1]]
  mean_f <- sum(f$alpha * (f$mu + f$tau))
  sd_f <- sqrt(sum(f$alpha * (f$sigma^2 + f$tau^2 + (f$mu + f$tau)^2)) - mean_f^2)
  expect_lt(abs(mean(s) - mean_f), 4 * sd_f / sqrt(40000))
  expect_equal(mean(s < 0.6), predict(f, 0.6, type = "cdf"), tolerance = 0.02)
  td <- tidy(fits, conf.int = TRUE)
  expect_identical(td$term[td$component == 1], c("alpha", "mu", "sigma", "tau"))
  expect_equal(td$estimate[td$term == "tau"], as.double(f$tau))
  expect_equal(td$std.error[td$term == "tau"], unname(f$se[c("tau1", "tau2")]))
  expect_true(all(td$conf.low[td$term == "tau"] > 0))
  expect_identical(glance(fits)$df, 7L)
  expect_identical(colnames(coef(f)), c("alpha", "mu", "sigma", "tau"))
  expect_true("tau" %in% names(as.data.frame(fits)))
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_silent(plot(f, data = x))
})

test_that("ex-Gaussian fits choose K by BIC, take weights, starts and equal sigmas, and are reproducible", {
  x <- rts(seed = 17)
  a <- bulkem(list(x), 1:3, family = "exgauss", seed = 5, use.gpu = FALSE)
  b <- bulkem(list(x), 1:3, family = "exgauss", seed = 5, use.gpu = FALSE, control = list(threads = 1))
  expect_identical(a[[1]]$mu, b[[1]]$mu)
  expect_identical(a[[1]]$tau, b[[1]]$tau)
  expect_identical(a[[1]]$num_components, 2L)
  # frequency weights: the expanded data's fit
  vals <- x[1:300]
  counts <- rep(c(1, 3, 2), 100)
  w <- bulkem(list(vals), 2, family = "exgauss", weights = list(counts), seed = 1, use.gpu = FALSE)[[1]]
  e <- bulkem(list(rep(vals, counts)), 2, family = "exgauss", seed = 1, use.gpu = FALSE)[[1]]
  expect_identical(w$status, "converged")
  expect_equal(w$loglik, e$loglik, tolerance = 1e-10)
  expect_equal(c(w$mu, w$sigma, w$tau), c(e$mu, e$sigma, e$tau), tolerance = 1e-6)
  # a start of the user's, with its own tau, begins where it says and
  # reaches the best fit
  given <- list(mu = c(0.4, 0.75), sigma = c(0.04, 0.08), tau = c(0.08, 0.25))
  s <- bulkem(list(x), 2, family = "exgauss", random.inits = 1, seed = 1, use.gpu = FALSE, init = given,
              control = list(keep.starts = TRUE))[[1]]
  own <- s$starts[s$starts$start == max(s$starts$start), ]
  expect_equal(unlist(own[c("init_mu_1", "init_mu_2", "init_sigma_1", "init_sigma_2")], use.names = FALSE),
               c(given$mu, given$sigma))
  # (a start's log-likelihood is the engine's, before the final polish)
  expect_equal(own$loglik, a[[1]]$by_k$loglik[a[[1]]$by_k$K == 2], tolerance = 1e-6)
  expect_error(bulkem(list(x), 2, family = "exgauss", use.gpu = FALSE,
                      init = list(mu = c(0.4, 0.75), sigma = c(0.04, 0.08), tau = c(0.08, -1))),
               class = "bulkem_error_argument", regexp = "tau")
  # one sigma shared: equal sigmas, and no higher than the free fit
  eq <- bulkem(list(x), 2, family = "exgauss", equal.scale = TRUE, seed = 1, use.gpu = FALSE)[[1]]
  expect_identical(eq$status, "converged")
  expect_equal(eq$sigma[1], eq$sigma[2])
  expect_lte(eq$loglik, a[[1]]$by_k$loglik[a[[1]]$by_k$K == 2] + 1e-8)
  expect_equal(eq$loglik, exg_loglik(x, eq$alpha, eq$mu, eq$sigma, eq$tau), tolerance = 1e-12)
  nll_eq <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[4:6] <= 1e-4)) return(1e10)
    -exg_loglik(x, c(t[1], 1 - t[1]), t[2:3], c(t[4], t[4]), t[5:6])
  }
  o <- optim(c(eq$alpha[1], eq$mu, eq$sigma[1], eq$tau) * 1.02, nll_eq,
             control = list(maxit = 20000, reltol = 1e-14))
  expect_gte(eq$loglik, -o$value - 1e-7 * abs(o$value))
})

test_that("what the ex-Gaussian does not do (yet) is a classed error naming the argument", {
  x <- list(rts())
  expect_error(bulkem(x, 2, family = "exgauss", truncation = c(0.2, 2), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "ex-Gaussian")
  expect_error(bulkem(x, 2, family = "exgauss", shift = TRUE, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "shift")
  expect_error(bulkem(x, 2, family = "exgauss", df = 3, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "df")
  # a GPU engine by name: refused (for want of a GPU here, or of the
  # ex-Gaussian's GPU code), never a crash
  expect_error(bulkem(x, 2, family = "exgauss", control = list(engine = "cuda-batched")),
               class = "bulkem_error")
})

test_that("ex-Gaussian values held fixed stay there, the others reach optim's constrained maximum", {
  x <- rts(seed = 21)
  fw <- bulkem(list(x), 2, family = "exgauss", fixed = list(alpha = c(0.55, NA)), seed = 1, use.gpu = FALSE)[[1]]
  expect_equal(fw$alpha, c(0.55, 0.45))
  # the first component's mu and the second's sigma fixed
  f <- bulkem(list(x), 2, family = "exgauss", fixed = list(mu = c(0.41, NA), sigma = c(NA, 0.07)), seed = 1,
              use.gpu = FALSE)[[1]]
  expect_identical(f$status, "converged")
  expect_identical(f$mu[1], 0.41)
  expect_identical(f$sigma[2], 0.07)
  expect_equal(f$loglik, exg_loglik(x, f$alpha, f$mu, f$sigma, f$tau), tolerance = 1e-12)
  # theta = (alpha1, mu2, sigma1, tau1, tau2)
  nll <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[3:5] <= 1e-4)) return(1e10)
    -exg_loglik(x, c(t[1], 1 - t[1]), c(0.41, t[2]), c(t[3], 0.07), t[4:5])
  }
  th <- c(f$alpha[1], f$mu[2], f$sigma[1], f$tau)
  best <- -Inf
  for (s in c(0.9, 1.1)) {
    o <- optim(th * s, nll, control = list(maxit = 20000, reltol = 1e-14))
    o <- optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
    best <- max(best, -o$value)
  }
  expect_gte(f$loglik, best - 1e-7 * abs(best))
  # standard errors: the free parameters' from a numerical Hessian; the
  # fixed ones have none, and BIC counts 7 - 2 parameters
  se <- sqrt(diag(solve(stats::optimHess(th, nll, control = list(ndeps = 1e-4 * abs(th))))))
  expect_equal(unname(f$se[c("alpha1", "mu2", "sigma1", "tau1", "tau2")]), se, tolerance = 1e-3)
  expect_true(is.na(f$se[["mu1"]]) && is.na(f$se[["sigma2"]]))
  expect_equal(f$bic, -2 * f$loglik + 5 * log(length(x)), tolerance = 1e-12)
})

test_that("bootstraps of ex-Gaussian fits: standard errors near the information's, and the LRT", {
  # two well-separated processes, where the information's standard
  # errors hold (where the components overlap, the bootstrap's are wider)
  set.seed(3)
  x <- c(stats::rnorm(550, 0.4, 0.03) + stats::rexp(550, 1 / 0.05),
         stats::rnorm(450, 1.0, 0.05) + stats::rexp(450, 1 / 0.15))
  f <- bulkem(list(a = x), 2, family = "exgauss", seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE, threads = 2))
  b <- bulkem_bootstrap(f, B = 99, seed = 1, use.gpu = FALSE)
  expect_identical(b$term, rep(c("alpha", "mu", "sigma", "tau"), 2))
  expect_equal(b$estimate, c(f[[1]]$alpha[1], f[[1]]$mu[1], f[[1]]$sigma[1], f[[1]]$tau[1],
                             f[[1]]$alpha[2], f[[1]]$mu[2], f[[1]]$sigma[2], f[[1]]$tau[2]))
  # 99 replicates: about 7% sampling error in a standard error
  info <- f[[1]]$se[c("alpha1", "mu1", "sigma1", "tau1", "alpha2", "mu2", "sigma2", "tau2")]
  expect_true(all(abs(b$std.error / info - 1) < 0.3))
  l <- bulkem_bootstrap(f, test = "lrt", B = 19, seed = 1, max.components = 2, use.gpu = FALSE)
  expect_equal(l$p_value[l$k == 1], 1 / (l$B_used[l$k == 1] + 1))
})

test_that("on real response times the fit is optim's best with sigma above the data's resolution", {
  skip_if_not_installed("rtdists")
  speed_acc <- NULL
  utils::data("speed_acc", package = "rtdists", envir = environment())
  keep <- speed_acc$id == 3 & speed_acc$condition == "speed" & !speed_acc$censor &
    speed_acc$rt > 0.15 & speed_acc$rt < 3
  x <- speed_acc$rt[keep]
  f <- bulkem(list(x), 2, family = "exgauss", seed = 1, use.gpu = FALSE)[[1]]
  expect_identical(f$status, "converged")
  expect_equal(f$loglik, exg_loglik(x, f$alpha, f$mu, f$sigma, f$tau), tolerance = 1e-12)
  # The times are recorded to the millisecond. Without a floor on sigma a
  # direct maximisation climbs to a component whose sigma goes to 0, a
  # shifted exponential starting on a recorded value (its likelihood
  # bounded, and higher: the screen rejects such fits, as it rejects
  # spikes); with sigma at least 5 ms it finds bulkem's maximum.
  nll <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[4:5] < 0.005) || any(t[6:7] <= 1e-4)) return(1e10)
    -exg_theta_loglik(t, x)
  }
  set.seed(4)
  best <- -Inf
  for (start in 1:8) {
    m <- sort(sample(x, 2))
    o <- optim(c(0.5, m, 0.05, 0.05, 0.1, 0.1), nll, control = list(maxit = 20000, reltol = 1e-14))
    o <- optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
    best <- max(best, -o$value)
  }
  expect_gte(f$loglik, best - 1e-7 * abs(best))
})
