# A noise component with truncated and censored data (issues 32 and 34):
# the uniform's share of the window, U = |support ∩ window| / |support|,
# renormalises with the components' masses, Q = Σ α_m P_m + π_0 U, and a
# censored window takes the uniform's share of it too. Against the
# likelihood written here with statmod's density and cdf and the uniform,
# its direct maximisation by optim, and its numerical Hessian.

# Reaction times: two inverse Gaussian components and 6% uniform
# contaminants over [0.2, 3].
noisy_rt <- function(seed) {
  set.seed(seed)
  c(statmod::rinvgauss(300, 0.6, 4), statmod::rinvgauss(150, 1.4, 12), stats::runif(30, 0.2, 3))
}

# The log-likelihood of the mixture (alpha, mu, lambda) with noise weight
# pi0 uniform over `support`, on the exact values x truncated to `window`,
# with `late` values right-censored at `deadline` (inside the window).
noise_loglik <- function(x, alpha, mu, lambda, pi0, support, window, deadline = NULL, late = 0) {
  cdf <- function(v) {
    sum(alpha * statmod::pinvgauss(v, mu, lambda)) + pi0 * stats::punif(v, support[1], support[2])
  }
  dens <- alpha[1] * statmod::dinvgauss(x, mu[1], lambda[1]) + alpha[2] * statmod::dinvgauss(x, mu[2], lambda[2]) +
    pi0 * stats::dunif(x, support[1], support[2])
  ll <- sum(log(dens)) - (length(x) + late) * log(cdf(window[2]) - cdf(window[1]))
  if (late > 0) ll <- ll + late * log(cdf(window[2]) - cdf(deadline))
  ll
}

# The best of optim over (the weights' softmax with the noise last, log mu,
# log lambda) from `starts` starts.
noise_optim <- function(loglik, starts) {
  nll <- function(p) {
    w <- exp(c(p[1:2], 0))
    w <- w / sum(w)
    v <- -loglik(w[1:2], exp(p[3:4]), exp(p[5:6]), w[3])
    if (is.finite(v)) v else 1e10
  }
  set.seed(6)
  best <- Inf
  for (i in seq_len(starts)) {
    p <- c(stats::rnorm(2, 2), log(sort(stats::runif(2, 0.4, 1.6))), log(stats::runif(2, 2, 15)))
    o <- stats::optim(p, nll, control = list(maxit = 8000, reltol = 1e-13))
    o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 2000, reltol = 1e-14))
    best <- min(best, o$value)
  }
  -best
}

test_that("a truncated fit with a noise component over its window reaches optim's maximum", {
  x <- noisy_rt(3)
  window <- c(0.25, 2.5)
  xt <- x[x > window[1] & x < window[2]]
  f <- bulkem(list(a = xt), truncation = window, noise = TRUE, noise.support = window, seed = 1, use.gpu = FALSE)$a
  expect_equal(f$status, "converged")
  expect_equal(f$noise_support, window)
  expect_gt(f$noise, 0.01)
  expect_equal(f$alpha[1] + f$alpha[2] + f$noise, 1, tolerance = 1e-12)
  ll <- function(a, mu, lam, pi0) noise_loglik(xt, a, mu, lam, pi0, window, window)
  expect_equal(f$loglik, ll(f$alpha, f$mu, f$lambda, f$noise), tolerance = 1e-10)
  best <- noise_optim(ll, 12)
  expect_gte(f$loglik, best - 1e-7 * abs(best))
  # the standard errors against optimHess in (alpha1, alpha2, mu, lambda),
  # the noise's weight the determined one (its own SE by the delta method)
  th <- c(f$alpha, f$mu, f$lambda)
  h <- stats::optimHess(th, function(t) -ll(t[1:2], t[3:4], t[5:6], 1 - t[1] - t[2]))
  v <- solve(h)
  expect_equal(unname(f$se[c("alpha1", "alpha2", "mu1", "mu2", "lambda1", "lambda2")]), sqrt(diag(v)),
               tolerance = 1e-3)
  expect_equal(unname(f$se[["noise"]]), sqrt(sum(v[1:2, 1:2])), tolerance = 1e-3)
  # one more parameter than without the noise in BIC
  expect_equal(f$bic, -2 * f$loglik + 6 * log(length(xt)), tolerance = 1e-10)
  # the truncated mixture with its noise: density, cdf, quantile, draws
  inside <- stats::integrate(function(z) predict(f, newdata = z, type = "density"), window[1], window[2],
                             subdivisions = 1000)$value
  expect_equal(inside, 1, tolerance = 1e-6)
  expect_equal(predict(f, newdata = window, type = "cdf"), c(0, 1))
  expect_equal(predict(f, newdata = 3, type = "density"), 0)
  q <- quantile(f, c(0.1, 0.7))
  expect_equal(predict(f, newdata = q, type = "cdf"), c(0.1, 0.7), tolerance = 1e-8)
  s <- simulate(f, n = 4000, seed = 2)$sim_1
  expect_true(all(s >= window[1] & s <= window[2]))
  expect_gt(stats::ks.test(s, function(z) predict(f, newdata = z, type = "cdf"))$p.value, 1e-3)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_silent(plot(f, data = xt))
})

test_that("the noise's default support (the data's range) lies in the window: its whole mass counts", {
  x <- noisy_rt(4)
  window <- c(0.25, 2.5)
  xt <- x[x > window[1] & x < window[2]]
  f <- bulkem(list(a = xt), truncation = window, noise = TRUE, seed = 1, use.gpu = FALSE)$a
  expect_equal(f$noise_support, range(xt))
  expect_equal(f$loglik, noise_loglik(xt, f$alpha, f$mu, f$lambda, f$noise, range(xt), window), tolerance = 1e-10)
})

test_that("censored values at a deadline take the noise's share of their window", {
  x <- noisy_rt(5)
  late <- x > 2.2
  y <- survival::Surv(pmin(x, 2.2), !late)
  support <- c(0.2, 3)
  f <- bulkem(list(a = y), noise = TRUE, noise.support = support, seed = 1, use.gpu = FALSE)$a
  expect_equal(f$status, "converged")
  expect_equal(f$censored, sum(late))
  ll <- function(a, mu, lam, pi0) noise_loglik(x[!late], a, mu, lam, pi0, support, c(0, Inf), 2.2, sum(late))
  expect_equal(f$loglik, ll(f$alpha, f$mu, f$lambda, f$noise), tolerance = 1e-10)
  best <- noise_optim(ll, 10)
  expect_gte(f$loglik, best - 1e-7 * abs(best))
  th <- c(f$alpha, f$mu, f$lambda)
  h <- stats::optimHess(th, function(t) -ll(t[1:2], t[3:4], t[5:6], 1 - t[1] - t[2]))
  expect_equal(unname(f$se[c("alpha1", "alpha2", "mu1", "mu2", "lambda1", "lambda2")]), sqrt(diag(solve(h))),
               tolerance = 1e-3)
})

test_that("truncated noise fits with one shape shared, and their bootstrap", {
  # (data whose noise weight, 0.12, is away from its bound 0, where the
  # observed information's standard errors mean something)
  x <- noisy_rt(3)
  window <- c(0.25, 2.5)
  xt <- x[x > window[1] & x < window[2]]
  f <- bulkem(list(a = xt), truncation = window, noise = TRUE, noise.support = window, equal.scale = TRUE,
              seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
  a <- f$a
  expect_equal(a$lambda[1], a$lambda[2])
  expect_equal(a$loglik, noise_loglik(xt, a$alpha, a$mu, a$lambda, a$noise, window, window), tolerance = 1e-10)
  expect_gt(a$noise, 0.05)
  bs <- bulkem_bootstrap(f, B = 99, seed = 3, use.gpu = FALSE)
  expect_equal(bs$term[1], "alpha")
  expect_equal(bs$component[1], 0L)
  expect_gt(attr(bs, "replicates")$used, 90)
  ratio <- bs$std.error / tidy(f)$std.error
  expect_true(all(ratio > 0.5 & ratio < 2))
})

test_that("the bootstrap of censored fits with a noise component refits the noise", {
  set.seed(5)
  x <- c(statmod::rinvgauss(300, 1, 8), statmod::rinvgauss(200, 3, 40), stats::runif(30, 0.2, 6))
  late <- x > 3.5
  f <- bulkem(list(a = survival::Surv(pmin(x, 3.5), !late)), noise = TRUE, noise.support = c(0.1, 6), seed = 1,
              use.gpu = FALSE, control = list(keep.data = TRUE))
  bs <- bulkem_bootstrap(f, B = 49, seed = 2, use.gpu = FALSE)
  expect_equal(bs$component[1], 0L)
  expect_equal(attr(bs, "replicates")$used, 49L)
  # each replicate's noise weight, refitted: a spread of them
  ratio <- bs$std.error / tidy(f)$std.error
  expect_gt(bs$std.error[1], 0)
  expect_true(all(ratio > 0.5 & ratio < 2))
})
