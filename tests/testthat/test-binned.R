# Binned data (issue 34, item 1): a histogram (breaks and counts) fitted as
# interval-censored data, each bin's count adding count * log(F(upper) -
# F(lower)) to the likelihood. Against that likelihood written with R's
# cdfs, its direct numerical maximisation (optim from many starts), and its
# numerical Hessian for the standard errors.

bn_loglik <- function(breaks, counts, family, alpha, mu, shape) {
  k <- length(mu)
  cdf <- function(v) Reduce(`+`, lapply(seq_len(k), function(m) alpha[m] * family_cdf(v, family, mu[m], shape[m])))
  p <- diff(cdf(breaks))
  sum(counts[counts > 0] * log(p[counts > 0]))
}

test_that("binned fits reach the best of optim on the interval-censored likelihood, with its standard errors", {
  for (family in c("normal", "invgauss")) {
    x <- two_component_data(family, 31)
    h <- graphics::hist(x, breaks = 25, plot = FALSE)
    f <- bulkem(list(h = h), family = family, use.gpu = FALSE, seed = 2)$h
    expect_equal(f$status, "converged", info = family)
    expect_equal(f$nobs, length(x))
    expect_equal(f$censored, length(x))
    sname <- bulkem:::shape_name(family)
    expect_equal(f$loglik, bn_loglik(h$breaks, h$counts, family, f$alpha, f$mu, f[[sname]]), tolerance = 1e-10,
                 info = family)
    positive <- family == "invgauss"
    nll <- function(th) {
      a <- stats::plogis(th[1])
      mu <- if (positive) exp(th[2:3]) else th[2:3]
      v <- -bn_loglik(h$breaks, h$counts, family, c(a, 1 - a), mu, exp(th[4:5]))
      if (is.finite(v)) v else 1e10
    }
    set.seed(4)
    best <- Inf
    for (i in 1:10) {
      mu0 <- sort(stats::quantile(x, stats::runif(2, 0.1, 0.9)))
      s0 <- if (positive) mean(x)^3 / stats::var(x) else stats::sd(x) / 2
      th <- c(0, if (positive) log(mu0) else mu0, log(c(s0, s0)))
      o <- stats::optim(th, nll, control = list(maxit = 5000, reltol = 1e-13))
      o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 1000, reltol = 1e-14))
      best <- min(best, o$value)
    }
    expect_gte(f$loglik, -best - 1e-7 * abs(best))
    g <- function(th) -bn_loglik(h$breaks, h$counts, family, c(th[1], 1 - th[1]), th[2:3], th[4:5])
    th <- c(f$alpha[1], f$mu, f[[sname]])
    hs <- stats::optimHess(th, g, control = list(ndeps = 1e-4 * pmax(abs(th), 1e-2)))
    se <- unlist(f$se)[c("alpha1", "mu1", "mu2", paste0(sname, 1:2))]
    expect_equal(unname(se), sqrt(diag(solve(hs))), tolerance = 1e-3, info = family)
  }
})

test_that("histograms as lists of breaks and counts, empty bins, and what is refused", {
  x <- two_component_data("normal", 32)
  h <- graphics::hist(x, breaks = seq(-4, 6, by = 0.25), plot = FALSE)
  a <- bulkem(list(a = h), family = "normal", use.gpu = FALSE, seed = 1)$a
  b <- bulkem(list(a = list(breaks = h$breaks, counts = h$counts)), family = "normal", use.gpu = FALSE, seed = 1)$a
  expect_identical(a[c("mu", "sigma", "alpha", "loglik")], b[c("mu", "sigma", "alpha", "loglik")])
  expect_true(any(h$counts == 0))
  bad <- function(datasets, ..., regexp) {
    expect_error(bulkem(datasets, family = "normal", use.gpu = FALSE, ...), class = "bulkem_error_argument",
                 regexp = regexp)
  }
  bad(list(a = list(breaks = c(1, 0, 2), counts = c(1, 2))), regexp = "histogram")
  bad(list(a = list(breaks = c(0, 1, 2), counts = c(1, -2))), regexp = "histogram")
  bad(h, regexp = "list of histograms")
  bad(list(a = h), weights = list(h$counts), regexp = "weights")
  expect_error(bulkem(list(a = graphics::hist(x + 10, plot = FALSE)), shift = TRUE, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "histograms")
})
