# Data at any finite positive scale is fitted after rescaling, with the
# parameters mapped back: a fit of c * x is the fit of x, scaled.

test_that("tiny and huge data are fitted as the same data at unit scale", {
  # Starts depend on the data's bits, so c * x starts elsewhere than x; with
  # two well-separated components every start reaches the same optimum.
  set.seed(31)
  x <- c(rexp(150) + 1, rexp(150) * 0.2 + 8)
  for (family in c("invgauss", "normal")) {
    fit <- function(v) bulkem(list(v), random.inits = 4, family = family, max.iters = 5000,
                              epsilon = 1e-12, use.gpu = FALSE, seed = 3)[[1]]
    base <- fit(x)
    expect_identical(base$status, "converged")
    for (c in c(2^-600, 1e-200, 1e-100, 1e154, 2^700, 1e300)) {
      f <- fit(x * c)
      info <- paste(family, c)
      expect_identical(f$status, "converged", label = info)
      expect_equal(f$mu / c, base$mu, tolerance = 1e-6, label = info)
      shape <- if (family == "normal") "sigma" else "lambda"
      expect_equal(f[[shape]] / c, base[[shape]], tolerance = 1e-6, label = info)
      expect_equal(f$alpha, base$alpha, tolerance = 1e-6, label = info)
      # the density of cX is p(x / c) / c: log-likelihood shifted by -n log c
      expect_equal(f$loglik + 300 * log(c), base$loglik, tolerance = 1e-9, label = info)
    }
  }
})

test_that("the reported log-likelihood at an extreme scale is the textbook sum", {
  set.seed(32)
  x <- c(rnorm(150, 1, 0.2), rnorm(150, 3, 0.5)) * 1e-250
  f <- bulkem(list(x), random.inits = 5, family = "normal", use.gpu = FALSE, seed = 1)[[1]]
  expect_identical(f$status, "converged")
  # dnorm on the original scale underflows; on log scale, per component
  lse <- function(a, b) pmax(a, b) + log1p(exp(-abs(a - b)))
  l1 <- log(f$alpha[1]) + dnorm(x, f$mu[1], f$sigma[1], log = TRUE)
  l2 <- log(f$alpha[2]) + dnorm(x, f$mu[2], f$sigma[2], log = TRUE)
  expect_equal(f$loglik, sum(lse(l1, l2)), tolerance = 1e-10)
})

test_that("only what double precision cannot hold is invalid, and says why", {
  d <- list(span = c(1e-300, 1, 1e300, 2, 3, 4, 5), fine = c(1e-300, 2e-300, 5e-300, 3e-300, 4e-300, 9e-300))
  f <- quiet_bulkem(d, num.components = 1, use.gpu = FALSE)
  expect_identical(f$span$status, "invalid")
  expect_match(f$span$message, "^dataset has values from 1e-300 to 1e\\+?300, too many orders of magnitude apart")
  expect_true(f$fine$fit_success)
})

test_that("keep.starts lists every start of a failed dataset", {
  # ten tied values: some component collapses onto them from each of these
  # random starts (as in test-bad-input.R; restarts and short runs off)
  d <- list(tied = c(rep(1, 10), 2, 3))
  f <- quiet_bulkem(d, random.inits = 5, family = "normal", use.gpu = FALSE,
              seed = 1, control = list(keep.starts = TRUE, restarts = 0, starts = "random", short.runs = 0))$tied
  expect_identical(f$status, "failed")
  expect_identical(nrow(f$starts), 5L)
  expect_identical(f$starts$start, 1:5)
  expect_true(all(f$starts$status == "failed"))
  # the case that once came back "failed" with no starts at all: the best
  # start's log-likelihood on tiny data
  set.seed(33)
  g <- bulkem(list(rexp(200) * 1e-200), random.inits = 5, use.gpu = FALSE, seed = 1,
              control = list(keep.starts = TRUE))[[1]]
  expect_true(g$fit_success)
  expect_identical(g$starts$start, 1:5)
})

test_that("subnormal data are invalid because they are too small, and say so; scaled up they fit", {
  tiny <- 5e-324 * rep(1:5, 2)
  for (family in c("invgauss", "normal")) {
    f <- quiet_bulkem(list(tiny), num.components = 1, family = family, use.gpu = FALSE)[[1]]
    expect_identical(f$status, "invalid")
    what <- if (family == "invgauss") "mean" else "standard deviation"
    expect_match(f$message, paste0("^dataset has values from 5e-324 to 2.5e-323, whose ", what,
                                   " \\([0-9.e-]+\\) is below the smallest normal double \\(2.2e-308\\)"))
    expect_no_match(f$message, "orders of magnitude")
    expect_match(f$message, "multiply the data by a constant such as 1e300")
    # as the message says
    up <- bulkem(list(tiny * 1e300), num.components = 1, family = family, use.gpu = FALSE)[[1]]
    expect_identical(up$status, "converged")
  }
})
