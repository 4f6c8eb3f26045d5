# family = "t": Student's t components (location mu, scale sigma, degrees
# of freedom df, estimated or fixed). Every number checked against R's own
# t density (stats::dt), a direct maximisation (optim) or a numerical
# Hessian (stats::optimHess).

# log-likelihood of a t mixture from stats::dt; with `support`, a noise
# component of weight 1 - sum(alpha) uniform over it
t_loglik <- function(x, alpha, mu, sigma, df, support = NULL) {
  d <- 0
  for (m in seq_along(alpha)) d <- d + alpha[m] * stats::dt((x - mu[m]) / sigma[m], df[m]) / sigma[m]
  if (!is.null(support)) d <- d + (1 - sum(alpha)) * stats::dunif(x, support[1], support[2])
  sum(log(d))
}

# theta = (alpha1, mu1, mu2, sigma1, sigma2[, df1, df2]) of two components
t_theta_loglik <- function(th, x, df = NULL) {
  if (is.null(df)) df <- th[6:7]
  t_loglik(x, c(th[1], 1 - th[1]), th[2:3], th[4:5], df)
}

heavy <- function(n = 600, seed = 1) {
  set.seed(seed)
  half <- n / 2
  c(-2 + 0.8 * rt(half, 3), 3 + 1.2 * rt(half, 5))
}

test_that("a t fit's log-likelihood is stats::dt's, with and without noise", {
  x <- heavy()
  f <- bulkem(list(x), 2, family = "t", seed = 3, use.gpu = FALSE)[[1]]
  expect_identical(f$status, "converged")
  expect_length(f$df, 2)
  expect_false(isTRUE(attr(f$df, "fixed")))
  expect_equal(f$loglik, t_loglik(x, f$alpha, f$mu, f$sigma, f$df), tolerance = 1e-12)
  expect_named(f$se, c("alpha1", "alpha2", "mu1", "mu2", "sigma1", "sigma2", "df1", "df2"))
  expect_identical(dim(f$vcov), c(7L, 7L))
  # AIC and BIC count 3K - 1 + K parameters
  expect_equal(f$bic, -2 * f$loglik + 7 * log(length(x)), tolerance = 1e-12)
  expect_identical(attr(logLik(f), "df"), 7L)
  y <- c(x, runif(8, -40, 40))
  g <- bulkem(list(y), 2, family = "t", noise = TRUE, seed = 3, use.gpu = FALSE)[[1]]
  expect_equal(g$loglik, t_loglik(y, g$alpha, g$mu, g$sigma, g$df, support = range(y)), tolerance = 1e-12)
  expect_named(g$se, c("alpha1", "alpha2", "mu1", "mu2", "sigma1", "sigma2", "df1", "df2", "noise"))
})

test_that("a t fit's maximum is at least optim's, its standard errors a numerical Hessian's", {
  x <- heavy(seed = 5)
  f <- bulkem(list(x), 2, family = "t", seed = 1, use.gpu = FALSE)[[1]]
  # the model's parameter space: scales not collapsed onto a point (where
  # the likelihood is unbounded), df in [0.5, 200]
  nll <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[4:5] < 0.01) || any(t[6:7] < 0.5 | t[6:7] > 200)) return(1e10)
    -t_theta_loglik(t, x)
  }
  set.seed(4)
  best <- -Inf
  for (start in 1:15) {
    m <- sort(sample(x[x > quantile(x, 0.05) & x < quantile(x, 0.95)], 2))
    o <- optim(c(0.5, m, 1, 1, 5, 5), nll, control = list(maxit = 20000, reltol = 1e-14))
    best <- max(best, -o$value)
  }
  expect_gte(f$loglik, best - 1e-7 * abs(best))
  expect_true(all(f$df > 1 & f$df < 20))
  th <- c(f$alpha[1], f$mu, f$sigma, f$df)
  h <- stats::optimHess(th, nll, control = list(ndeps = 1e-4 * abs(th)))
  se <- sqrt(diag(solve(h)))
  expect_equal(unname(f$se[c(1, 3:8)]), se, tolerance = 1e-3)
  # fixed degrees of freedom: no df among the parameters
  g <- bulkem(list(x), 2, family = "t", df = 4, seed = 1, use.gpu = FALSE)[[1]]
  expect_equal(as.double(g$df), c(4, 4))
  expect_true(attr(g$df, "fixed"))
  nll4 <- function(t) if (t[1] <= 0 || t[1] >= 1 || any(t[4:5] < 0.01)) 1e10 else -t_theta_loglik(t, x, c(4, 4))
  o <- optim(c(0.5, f$mu, f$sigma), nll4, control = list(maxit = 20000, reltol = 1e-14))
  expect_gte(g$loglik, -o$value - 1e-7 * abs(o$value))
  th4 <- c(g$alpha[1], g$mu, g$sigma)
  se4 <- sqrt(diag(solve(stats::optimHess(th4, nll4, control = list(ndeps = 1e-4 * abs(th4))))))
  expect_named(g$se, c("alpha1", "alpha2", "mu1", "mu2", "sigma1", "sigma2"))
  expect_equal(unname(g$se[c(1, 3:6)]), se4, tolerance = 1e-3)
  expect_equal(g$bic, -2 * g$loglik + 5 * log(length(x)), tolerance = 1e-12)
  # one fixed df per component, with one K
  h2 <- bulkem(list(x), 2, family = "t", df = c(2, 30), seed = 1, use.gpu = FALSE)[[1]]
  expect_equal(as.double(h2$df), c(2, 30))
})

test_that("the t's estimated degrees of freedom find heavy tails and Normal ones", {
  set.seed(8)
  cauchy <- rt(2000, 1)
  normal <- rnorm(2000)
  f <- bulkem(list(cauchy, normal), 1, family = "t", seed = 2, use.gpu = FALSE)
  expect_lt(abs(f[[1]]$df - 1), 0.3)
  expect_gt(f[[2]]$df, 20)
  # a one-component fit is the ML t: optim on (mu, log sigma, log df) agrees
  nll <- function(t) -t_loglik(cauchy, 1, t[1], exp(t[2]), exp(t[3]))
  o <- optim(c(0, 0, 0), nll, control = list(maxit = 20000, reltol = 1e-15))
  expect_equal(c(f[[1]]$mu, f[[1]]$sigma, f[[1]]$df), c(o$par[1], exp(o$par[2:3])), tolerance = 1e-4)
})

test_that("a df heading for its bound is returned at the maximum there, whatever EM's path", {
  # Normal components: df's maximum is at the bound 200 (or far out), where
  # EM creeps and its stop rule leaves each path elsewhere; the polish
  # takes every path to one point, df on the bound where it heads there
  set.seed(12)
  x <- lapply(1:8, function(i) c(rnorm(400), rnorm(600, 5, 1.5)))
  paths <- list(list(accelerate = TRUE), list(accelerate = FALSE), list(accelerate = FALSE, epsilon = 1e-4),
                list(accelerate = TRUE, epsilon = 1e-3))
  fits <- lapply(paths, function(p) {
    suppressWarnings(bulkem(x, 2, family = "t", seed = 1, use.gpu = FALSE,
                            epsilon = if (is.null(p$epsilon)) 1e-6 else p$epsilon,
                            control = list(accelerate = p$accelerate)))
  })
  compared <- 0
  for (d in seq_along(x)) {
    a <- fits[[1]][[d]]
    expect_identical(a$status, "converged")
    for (b in fits[-1]) {
      b <- b[[d]]
      # plain EM may creep to max.iters (5000) first: such a fit is left
      # where it stopped
      if (b$status != "converged") next
      compared <- compared + 1
      expect_equal(b$loglik, a$loglik, tolerance = 1e-10)
      expect_equal(c(b$mu, b$sigma, b$alpha, b$df), c(a$mu, a$sigma, a$alpha, a$df), tolerance = 1e-7)
    }
    # R's own likelihood (stats::dt) does not rise by moving any parameter
    # but a df on the bound
    ll <- function(f) t_loglik(x[[d]], f$alpha, f$mu, f$sigma, f$df)
    for (field in c("mu", "sigma", "df")) {
      for (m in 1:2) {
        if (field == "df" && a$df[m] >= 200) next
        up <- a
        down <- a
        h <- 1e-5 * abs(a[[field]][m])
        up[[field]][m] <- up[[field]][m] + h
        down[[field]][m] <- down[[field]][m] - h
        expect_lt(abs(ll(up) - ll(down)) / (2 * h) * abs(a[[field]][m]), 1e-3)
      }
    }
  }
  expect_gte(compared, 12)
  # some dataset has a df on the bound, where the score still points out
  on_bound <- vapply(fits[[1]], function(f) any(f$df == 200), NA)
  expect_true(any(on_bound))
})

test_that("t components keep the clusters where outliers stretch Normal ones", {
  set.seed(11)
  x <- c(rnorm(150, 0, 1), rnorm(150, 5, 1), runif(6, -30, 40))
  normal <- bulkem(list(x), 2, family = "normal", seed = 2, use.gpu = FALSE)[[1]]
  tfit <- bulkem(list(x), 2, family = "t", seed = 2, use.gpu = FALSE)[[1]]
  expect_lt(max(abs(tfit$mu - c(0, 5))), 0.3)
  expect_gt(max(normal$sigma), 2)
  # predict()'s weight is the E-step's u averaged by the posteriors; the
  # outliers have the smallest
  p <- predict(tfit, x)
  u <- (tfit$df[1] + 1) / (tfit$df[1] + ((x - tfit$mu[1]) / tfit$sigma[1])^2)
  v <- (tfit$df[2] + 1) / (tfit$df[2] + ((x - tfit$mu[2]) / tfit$sigma[2])^2)
  expect_equal(p$weight, p$comp1 * u + p$comp2 * v, tolerance = 1e-12)
  expect_setequal(order(p$weight)[1:6], 301:306)
  a <- augment(bulkem(list(x), 2, family = "t", seed = 2, use.gpu = FALSE), data = list(x))
  expect_equal(a$.weight, p$weight, tolerance = 1e-12)
})

test_that("the t's density, cdf, quantiles, draws and tidiers are stats::dt's", {
  x <- heavy(seed = 13)
  fits <- bulkem(list(a = x), 2, family = "t", seed = 2, use.gpu = FALSE)
  f <- fits[[1]]
  grid <- c(-30, -2, 0.5, 3, 50)
  dens <- f$alpha[1] * stats::dt((grid - f$mu[1]) / f$sigma[1], f$df[1]) / f$sigma[1] +
    f$alpha[2] * stats::dt((grid - f$mu[2]) / f$sigma[2], f$df[2]) / f$sigma[2]
  expect_equal(predict(f, grid, type = "density"), dens, tolerance = 1e-12)
  cdf <- f$alpha[1] * stats::pt((grid - f$mu[1]) / f$sigma[1], f$df[1]) +
    f$alpha[2] * stats::pt((grid - f$mu[2]) / f$sigma[2], f$df[2])
  expect_equal(predict(f, grid, type = "cdf"), cdf, tolerance = 1e-12)
  q <- quantile(f, c(0.01, 0.5, 0.99))
  expect_equal(predict(f, unname(q), type = "cdf"), c(0.01, 0.5, 0.99), tolerance = 1e-8)
  s <- simulate(f, nsim = 1, seed = 1, n = 20000)[[1]]
  expect_equal(mean(s < f$mu[1]), predict(f, f$mu[1], type = "cdf"), tolerance = 0.02)
  td <- tidy(fits, conf.int = TRUE)
  expect_identical(td$term[td$component == 1], c("alpha", "mu", "sigma", "df"))
  expect_equal(td$estimate[td$term == "df"], as.double(f$df))
  expect_equal(td$std.error[td$term == "df"], unname(f$se[c("df1", "df2")]))
  # df's interval on the log scale: inside (0, Inf)
  expect_true(all(td$conf.low[td$term == "df"] > 0))
  expect_identical(glance(fits)$df, 7L)
  expect_identical(colnames(coef(f)), c("alpha", "mu", "sigma", "df"))
  expect_true("df" %in% names(as.data.frame(fits)))
  fixed <- bulkem(list(a = x), 2, family = "t", df = 5, seed = 2, use.gpu = FALSE)
  tf <- tidy(fixed)
  expect_true(all(is.na(tf$std.error[tf$term == "df"])))
  expect_identical(glance(fixed)$df, 5L)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_silent(plot(f, data = x))
})

test_that("t fits choose K by BIC and are reproducible by seed", {
  x <- heavy(seed = 17)
  a <- bulkem(list(x), 1:3, family = "t", seed = 5, use.gpu = FALSE)
  b <- bulkem(list(x), 1:3, family = "t", seed = 5, use.gpu = FALSE, control = list(threads = 1))
  expect_identical(a[[1]]$mu, b[[1]]$mu)
  expect_identical(a[[1]]$df, b[[1]]$df)
  expect_identical(a[[1]]$num_components, 2L)
  expect_equal(a[[1]]$by_k$bic, vapply(a[[1]]$all_k[order(vapply(a[[1]]$all_k, `[[`, 0L, "k"))],
                                       function(f) f$bic, 0))
  cmp <- bulkem_compare(a)
  expect_identical(cmp$df[cmp$K == 2], 7L)
})

test_that("bad df arguments are classed errors naming the argument", {
  x <- list(heavy())
  expect_error(bulkem(x, 2, family = "normal", df = 3, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "df")
  for (bad in list(0.1, 1000, NA, "a", c(2, 3, 4))) {
    expect_error(bulkem(x, 2, family = "t", df = bad, use.gpu = FALSE),
                 class = "bulkem_error_argument", regexp = "df")
  }
  expect_error(bulkem(x, 1:2, family = "t", df = c(2, 3), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "df")
  fits <- bulkem(x, 2, family = "t", df = c(3, 8), seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
  expect_error(bulkem_bootstrap(fits, B = 19, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "degrees of freedom")
})

test_that("bootstraps of t fits: standard errors near the information's, the LRT, fixed df", {
  x <- heavy(seed = 2)
  f <- bulkem(list(a = x), 2, family = "t", seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE, threads = 2))
  b <- bulkem_bootstrap(f, B = 99, seed = 1, use.gpu = FALSE)
  expect_identical(b$term, rep(c("alpha", "mu", "sigma", "df"), 2))
  expect_equal(b$estimate, c(f[[1]]$alpha[1], f[[1]]$mu[1], f[[1]]$sigma[1], f[[1]]$df[1],
                             f[[1]]$alpha[2], f[[1]]$mu[2], f[[1]]$sigma[2], f[[1]]$df[2]))
  # location, scale and weight: the bootstrap's standard errors within 30%
  # of the observed information's (99 replicates: about 7% sampling error)
  info <- f[[1]]$se[c("alpha1", "mu1", "sigma1", "alpha2", "mu2", "sigma2")]
  boot <- b$std.error[b$term != "df"]
  expect_true(all(abs(boot / info - 1) < 0.3))
  # df's percentile interval holds its estimate
  d <- b[b$term == "df", ]
  expect_true(all(d$conf.low <= d$estimate & d$estimate <= d$conf.high))
  expect_identical(bulkem_bootstrap(f, B = 99, seed = 1, use.gpu = FALSE)$std.error, b$std.error)
  # two t bumps: K = 1 is rejected, and the test stops at K = 2
  l <- bulkem_bootstrap(f, test = "lrt", B = 19, seed = 1, max.components = 2, use.gpu = FALSE)
  # the smallest p-value B_used replicates allow (a spurious one is not used)
  expect_equal(l$p_value[l$k == 1], 1 / (l$B_used[l$k == 1] + 1))
  g <- bulkem(list(a = x), 2, family = "t", df = 4, seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
  bg <- bulkem_bootstrap(g, B = 19, seed = 1, use.gpu = FALSE)
  expect_true(all(is.na(bg$std.error[bg$term == "df"])))
  expect_true(all(bg$estimate[bg$term == "df"] == 4))
})
