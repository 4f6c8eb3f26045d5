# family = "lognormal": fitted as the Normal on log(x); every number checked
# against R's own lognormal (dlnorm, plnorm, qlnorm) or a direct maximisation.

rlnmix <- function(n, alpha, meanlog, sdlog) {
  comp <- sample.int(length(alpha), n, replace = TRUE, prob = alpha)
  stats::rlnorm(n, meanlog[comp], sdlog[comp])
}

test_that("a lognormal fit is the Normal fit of log(x), with the likelihood of x", {
  set.seed(71)
  d <- list(rlnmix(500, c(0.6, 0.4), c(0, 1.5), c(0.3, 0.45)), rlnmix(120, c(0.5, 0.5), c(-2, 0), c(0.5, 0.4)))
  ln <- bulkem(d, 2, family = "lognormal", seed = 3, use.gpu = FALSE)
  nm <- bulkem(lapply(d, log), 2, family = "normal", seed = 3, use.gpu = FALSE)
  for (i in seq_along(d)) {
    a <- ln[[i]]
    expect_identical(a$family, "lognormal")
    expect_identical(a$mu, nm[[i]]$mu)
    expect_identical(a$sigma, nm[[i]]$sigma)
    expect_identical(a$se, nm[[i]]$se)
    # the log-likelihood of x, by dlnorm, and the Normal's on log x less sum(log x)
    direct <- sum(log(a$alpha[1] * dlnorm(d[[i]], a$mu[1], a$sigma[1]) +
                        a$alpha[2] * dlnorm(d[[i]], a$mu[2], a$sigma[2])))
    expect_equal(a$loglik, direct, tolerance = 1e-12)
    expect_equal(a$loglik, nm[[i]]$loglik - sum(log(d[[i]])), tolerance = 1e-12)
    expect_equal(a$bic, -2 * direct + 5 * log(length(d[[i]])), tolerance = 1e-12)
  }
  expect_identical(ln[[1]]$mu, sort(ln[[1]]$mu))
})

test_that("the lognormal maximum is at least optim's and its standard errors a numerical Hessian's", {
  set.seed(72)
  x <- rlnmix(400, c(0.35, 0.65), c(0.2, 1.4), c(0.25, 0.5))
  f <- bulkem(list(x), 2, family = "lognormal", seed = 1, use.gpu = FALSE)[[1]]
  th <- c(f$alpha[1], f$mu, f$sigma)
  # direct maximisation of the dlnorm likelihood from 30 starts
  nll <- function(t) {
    if (t[1] <= 0 || t[1] >= 1 || any(t[4:5] <= 0)) return(1e10)
    -theta_loglik(t, x, 2, "lognormal")
  }
  set.seed(3)
  best <- -Inf
  for (s in 1:30) {
    start <- c(runif(1, 0.1, 0.9), sort(sample(log(x), 2)), runif(2, 0.1, 1))
    o <- optim(start, nll, control = list(maxit = 5000, reltol = 1e-12))
    best <- max(best, -o$value)
  }
  expect_gte(f$loglik, best - 1e-6 * abs(best))
  info <- numerical_information(th, x, 2, "lognormal")
  se <- sqrt(diag(solve(info)))
  expect_equal(unname(f$se[c("alpha1", "mu1", "mu2", "sigma1", "sigma2")]), se, tolerance = 1e-3)
})

test_that("predict, quantile and simulate of a lognormal fit are the lognormal's", {
  set.seed(73)
  x <- rlnmix(600, c(0.5, 0.5), c(0, 1.2), c(0.3, 0.3))
  f <- bulkem(list(x), 2, family = "lognormal", seed = 2, use.gpu = FALSE)[[1]]
  at <- c(0.3, 1, 2.5, 8)
  dens <- function(m) f$alpha[m] * dlnorm(at, f$mu[m], f$sigma[m])
  p <- predict(f, at)
  expect_equal(p$comp1, dens(1) / (dens(1) + dens(2)), tolerance = 1e-12)
  expect_equal(predict(f, at, type = "density"), dens(1) + dens(2), tolerance = 1e-12)
  q <- quantile(f, c(0.05, 0.5, 0.95))
  cdf <- function(v) f$alpha[1] * plnorm(v, f$mu[1], f$sigma[1]) + f$alpha[2] * plnorm(v, f$mu[2], f$sigma[2])
  expect_equal(cdf(unname(q)), c(0.05, 0.5, 0.95), tolerance = 1e-8)
  s <- simulate(f, nsim = 1, seed = 4)$sim_1
  expect_length(s, 600)
  expect_true(all(s > 0))
  # the draws follow the fitted mixture (Kolmogorov-Smirnov against its cdf)
  big <- unlist(simulate(f, nsim = 20, seed = 5))
  expect_gt(stats::ks.test(big, cdf)$p.value, 1e-3)
})

test_that("values <= 0 make a lognormal dataset invalid, and the warning names the family", {
  d <- list(c(-1, 2, 3, 4, 5, 6, 7), c(1.2, 2.5, 3.1, 4.8, 5.5, 6.1, 7.9))
  w <- tryCatch(bulkem(d, 1, family = "lognormal", use.gpu = FALSE), warning = function(w) w)
  expect_match(conditionMessage(w), "which the lognormal cannot fit")
  f <- suppressWarnings(bulkem(d, 1, family = "lognormal", use.gpu = FALSE))
  expect_identical(f[[1]]$status, "invalid")
  expect_match(f[[1]]$message, "the lognormal needs positive data")
  expect_identical(f[[2]]$status, "converged")
  expect_equal(f[[2]]$mu, mean(log(d[[2]])), tolerance = 1e-12)
})

test_that("a lognormal K is chosen by BIC and the formula interface and bootstrap take it", {
  set.seed(74)
  df <- data.frame(subject = rep(c("a", "b"), each = 300),
                   rt = c(rlnmix(300, c(0.7, 0.3), c(-0.5, 0.6), c(0.2, 0.25)), rlnorm(300, 0, 0.3)))
  fits <- bulkem(rt ~ subject, data = df, num.components = 1:3, family = "lognormal", seed = 1, use.gpu = FALSE,
                 control = list(keep.data = TRUE))
  expect_identical(vapply(fits, function(f) length(f$mu), 0L), c(a = 2L, b = 1L))
  b <- bulkem_bootstrap(fits["b"], B = 19, test = "lrt", seed = 2, random.inits = 4, use.gpu = FALSE)
  expect_s3_class(b, "bulkem_lrt")
  # the observed statistic: the K = 2 lognormal fit against the K = 1 closed
  # form, whose log-likelihood dlnorm gives
  y <- df$rt[df$subject == "b"]
  k1 <- sum(dlnorm(y, mean(log(y)), sqrt(mean((log(y) - mean(log(y)))^2)), log = TRUE))
  expect_equal(b$loglik, k1, tolerance = 1e-9, ignore_attr = TRUE)
  expect_equal(b$lrt, 2 * (b$loglik_alt - b$loglik))
  # (a replicate whose K = 2 refit has no admissible start gives NA)
  expect_gte(sum(is.finite(b$null[[1]])), 15)
  expect_true(all(b$null[[1]] >= -1e-8, na.rm = TRUE))
})
