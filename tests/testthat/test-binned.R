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

test_that("open outer bins (a first -Inf or a last Inf break) are fitted as such", {
  x <- two_component_data("normal", 33)
  h <- graphics::hist(x, breaks = 20, plot = FALSE)
  # the outer bins opened: "below 0" and "above 4" as a user would bin
  inner <- h$breaks[h$breaks > -0.5 & h$breaks < 4.5]
  open <- list(breaks = c(-Inf, inner, Inf),
               counts = as.numeric(table(cut(x, c(-Inf, inner, Inf)))))
  f <- bulkem(list(a = open), 2, family = "normal", use.gpu = FALSE, seed = 1)$a
  expect_identical(f$status, "converged")
  expect_equal(f$loglik, bn_loglik(open$breaks, open$counts, "normal", f$alpha, f$mu, f$sigma), tolerance = 1e-10)
  expect_equal(f$nobs, length(x))
  for (b in list(c(-Inf, Inf), c(0, Inf, 5), c(-Inf, -Inf, 1), c(Inf, 1, 2))) {
    expect_error(bulkem(list(a = list(breaks = b, counts = rep(1, length(b) - 1))), use.gpu = FALSE),
                 class = "bulkem_error_argument", regexp = "histogram")
  }
})

test_that("the bootstrap of a histogram draws binned replicates: standard errors and the LRT", {
  set.seed(3)
  x <- c(statmod::rinvgauss(1400, 1, 20), statmod::rinvgauss(600, 3, 30))
  h <- graphics::hist(x, breaks = 40, plot = FALSE)
  f <- bulkem(list(h = h), 2, use.gpu = FALSE, seed = 2, control = list(keep.data = TRUE))
  b <- bulkem_bootstrap(f, B = 99, seed = 4, use.gpu = FALSE)
  info <- unlist(f$h$se)[c("alpha1", "mu1", "lambda1", "mu2", "lambda2")]
  boot <- as.data.frame(b)
  boot <- boot$std.error[match(c("alpha1", "mu1", "lambda1", "mu2", "lambda2"), paste0(boot$term, boot$component))]
  expect_true(all(abs(boot / info - 1) < 0.3))
  expect_identical(bulkem_bootstrap(f, B = 99, seed = 4, use.gpu = FALSE)$std.error, b$std.error)
  # the LRT's observed statistic is bulkem()'s own fits of the histogram at
  # the bootstrap's settings (its refits: mixed starts, no short runs)
  one <- bulkem(list(h = h), 1, use.gpu = FALSE, seed = 2, control = list(keep.data = TRUE))
  l <- as.data.frame(bulkem_bootstrap(one, B = 49, seed = 4, test = "lrt", use.gpu = FALSE, random.inits = 5))
  ll <- function(k) bulkem(list(h = h), k, use.gpu = FALSE, seed = 4, random.inits = 5,
                           control = list(starts = "mixed", short.runs = 0))$h$loglik
  expect_equal(l$lrt, 2 * (ll(2) - ll(1)), tolerance = 1e-10)
  expect_lt(l$p_value, 0.05)
  # a one-component histogram keeps K = 1
  set.seed(5)
  y <- graphics::hist(statmod::rinvgauss(2000, 1.6, 8), breaks = 40, plot = FALSE)
  g <- bulkem(list(y = y), 1, use.gpu = FALSE, seed = 2, control = list(keep.data = TRUE))
  expect_gt(as.data.frame(bulkem_bootstrap(g, B = 49, seed = 4, test = "lrt", use.gpu = FALSE,
                                           random.inits = 5))$p_value, 0.05)
  # histograms and other data are bootstrapped in separate calls
  raw <- bulkem(list(x = x), 2, use.gpu = FALSE, seed = 2, control = list(keep.data = TRUE))
  expect_error(bulkem_bootstrap(c(f, raw), B = 9, use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "histograms")
})

test_that("a replicate is binned by the histogram's breaks, with open tails beyond them", {
  w <- c(0, 1, 5, 2, 3, 7) # bins (0, 1] and (2, 3]; (1, 2] held none
  h <- bulkem:::windows_histogram(w)
  expect_identical(h$breaks, c(0, 1, 2, 3))
  expect_identical(h$counts, c(5, 0, 7))
  r <- bulkem:::bin_into(c(-1, 0.5, 0.7, 1.5, 2.5, 3, 4, 9), h$breaks)
  expect_identical(r$breaks, c(-Inf, 0, 1, 2, 3, Inf))
  expect_identical(r$counts, c(1, 2, 1, 2, 2))
  # open outer bins stay as they are
  r <- bulkem:::bin_into(c(-1, 0.5, 9), c(-Inf, 1, Inf))
  expect_identical(r$breaks, c(-Inf, 1, Inf))
  expect_identical(r$counts, c(2, 1))
})
