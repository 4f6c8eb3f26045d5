# family = "gamma" (mean mu, shape; dgamma(shape = shape, rate = shape / mu)):
# every number checked against R's dgamma/pgamma/qgamma or a direct
# maximisation (every engine's agreement: test-gpu.R).

rgmix <- function(n, alpha, mu, shape) {
  comp <- sample.int(length(alpha), n, replace = TRUE, prob = alpha)
  stats::rgamma(n, shape = shape[comp], rate = shape[comp] / mu[comp])
}

test_that("a gamma fit's log-likelihood is dgamma's, its maximum at least optim's", {
  set.seed(81)
  x <- rgmix(500, c(0.6, 0.4), c(1, 4), c(8, 5))
  f <- bulkem(list(x), 2, family = "gamma", seed = 2, use.gpu = FALSE)[[1]]
  expect_identical(f$family, "gamma")
  expect_identical(f$status, "converged")
  expect_named(f$se, c("alpha1", "alpha2", "mu1", "mu2", "shape1", "shape2"))
  dens <- function(t) f$alpha[t] * dgamma(x, shape = f$shape[t], rate = f$shape[t] / f$mu[t])
  expect_equal(f$loglik, sum(log(dens(1) + dens(2))), tolerance = 1e-12)
  nll <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[2:5] <= 0)) return(1e10)
    -theta_loglik(t, x, 2, "gamma")
  }
  set.seed(3)
  best <- -Inf
  for (s in 1:30) {
    start <- c(runif(1, 0.1, 0.9), sort(sample(x, 2)), runif(2, 1, 10))
    o <- optim(start, nll, control = list(maxit = 5000, reltol = 1e-12))
    best <- max(best, -o$value)
  }
  expect_gte(f$loglik, best - 1e-6 * abs(best))
  # the M-step's shape solves its equation: at the maximum the shape's score
  # is 0, so a numerical gradient of dgamma's likelihood vanishes there
  th <- c(f$alpha[1], f$mu, f$shape)
  h <- 1e-6 * th
  grad <- vapply(seq_along(th), function(a) {
    e <- replace(numeric(5), a, h[a])
    (theta_loglik(th + e, x, 2, "gamma") - theta_loglik(th - e, x, 2, "gamma")) / (2 * h[a])
  }, 0)
  expect_lt(max(abs(grad * f$se[c(1, 3:6)])), 1e-4)
  # standard errors: a numerical Hessian of dgamma's likelihood
  se <- sqrt(diag(solve(numerical_information(th, x, 2, "gamma"))))
  expect_equal(unname(f$se[c(1, 3:6)]), se, tolerance = 1e-3)
})

test_that("a gamma fit scales with the data: mu by the factor, the shape not", {
  set.seed(82)
  x <- rgmix(300, c(0.5, 0.5), c(2, 6), c(12, 6))
  f <- bulkem(list(x), 2, family = "gamma", seed = 1, use.gpu = FALSE)[[1]]
  for (c in c(1e-200, 1e-3, 7e3, 1e200)) {
    g <- bulkem(list(c * x), 2, family = "gamma", seed = 1, use.gpu = FALSE)[[1]]
    expect_equal(g$mu, c * f$mu, tolerance = 1e-9)
    expect_equal(g$shape, f$shape, tolerance = 1e-9)
    expect_equal(g$se[c("shape1", "shape2")], f$se[c("shape1", "shape2")], tolerance = 1e-7)
    expect_equal(g$loglik, f$loglik - length(x) * log(c), tolerance = 1e-9)
  }
})

test_that("predict, quantile and simulate of a gamma fit are the gamma's", {
  set.seed(83)
  x <- rgmix(600, c(0.5, 0.5), c(1, 3), c(10, 10))
  f <- bulkem(list(x), 2, family = "gamma", seed = 2, use.gpu = FALSE)[[1]]
  at <- c(0.5, 1, 2.5, 6)
  dens <- function(m) f$alpha[m] * dgamma(at, shape = f$shape[m], rate = f$shape[m] / f$mu[m])
  expect_equal(predict(f, at)$comp1, dens(1) / (dens(1) + dens(2)), tolerance = 1e-12)
  expect_equal(predict(f, at, type = "density"), dens(1) + dens(2), tolerance = 1e-12)
  cdf <- function(v) f$alpha[1] * pgamma(v, f$shape[1], f$shape[1] / f$mu[1]) +
    f$alpha[2] * pgamma(v, f$shape[2], f$shape[2] / f$mu[2])
  q <- quantile(f, c(0.05, 0.5, 0.95))
  expect_equal(cdf(unname(q)), c(0.05, 0.5, 0.95), tolerance = 1e-8)
  big <- unlist(simulate(f, nsim = 20, seed = 5))
  expect_true(all(big > 0))
  expect_gt(stats::ks.test(big, cdf)$p.value, 1e-3)
  ci <- confint(f)
  expect_true(all(ci[grepl("^shape|^mu", rownames(ci)), ] > 0))
})

test_that("values <= 0 make a gamma dataset invalid; K = 1 is the closed-form mean and the shape's root", {
  x <- list(c(1.2, 2.5, 3.1, 4.8, 5.5, 6.1, 7.9, 2.2, 3.3))
  f <- suppressWarnings(bulkem(list(c(-1, x[[1]])), 1, family = "gamma", use.gpu = FALSE))[[1]]
  expect_identical(f$status, "invalid")
  expect_match(f$message, "the gamma needs positive data")
  # K = 1: the mean, and the root of the shape's likelihood equation
  g <- bulkem(x, 1, family = "gamma", use.gpu = FALSE)[[1]]
  expect_equal(g$mu, mean(x[[1]]), tolerance = 1e-12)
  s <- log(mean(x[[1]])) - mean(log(x[[1]]))
  expect_equal(log(g$shape) - digamma(g$shape), s, tolerance = 1e-12)
})

test_that("BIC picks the gamma K, and the bootstrap refits gamma mixtures", {
  set.seed(84)
  d <- list(a = rgmix(400, c(0.6, 0.4), c(1, 5), c(15, 10)), b = rgamma(300, 4, 2))
  fits <- bulkem(d, num.components = 1:3, family = "gamma", seed = 1, use.gpu = FALSE,
                 control = list(keep.data = TRUE))
  expect_identical(unname(vapply(fits, function(f) length(f$mu), 0L)), c(2L, 1L))
  b <- bulkem_bootstrap(fits["b"], B = 19, test = "lrt", seed = 2, random.inits = 4, use.gpu = FALSE)
  expect_equal(b$lrt, 2 * (b$loglik_alt - b$loglik))
  expect_gte(sum(is.finite(b$null[[1]])), 15)
})
