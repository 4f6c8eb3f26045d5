# control$accelerate: SQUAREM on the CPU engine (the GPU engines' agreement
# is in test-gpu.R), checked against plain EM and direct log-likelihoods.

test_that("control$accelerate must be TRUE or FALSE", {
  x <- list(c(1, 2, 3, 4, 5, 6, 7.5))
  expect_error(bulkem(x, control = list(accelerate = NA)), class = "bulkem_error_argument")
  expect_error(bulkem(x, control = list(accelerate = "yes")), "control\\$accelerate")
})

test_that("accelerated fits reach plain EM's maxima in fewer passes, with exact log-likelihoods", {
  set.seed(31)
  ig <- replicate(6, rmix(600, c(0.3, 0.7), c(1, 3), c(30, 0.2), "invgauss"), simplify = FALSE)
  nm <- replicate(6, rmix(600, c(0.4, 0.6), c(0, 1.6), c(1, 1), "normal"), simplify = FALSE)
  for (case in list(list(d = ig, family = "invgauss"), list(d = nm, family = "normal"))) {
    fit <- function(acc) bulkem(case$d, 2, family = case$family, random.inits = 10, max.iters = 20000,
                                epsilon = 1e-10, seed = 5, use.gpu = FALSE,
                                control = list(accelerate = acc))
    plain <- fit(FALSE)
    acc <- fit(TRUE)
    expect_lt(attr(acc, "em_iterations"), attr(plain, "em_iterations") / 2)
    for (i in seq_along(case$d)) {
      a <- acc[[i]]
      expect_identical(a$status, "converged")
      # the best of 10 starts: the same maximum as plain EM's
      expect_lt(abs(a$loglik - plain[[i]]$loglik), 1e-6 * abs(plain[[i]]$loglik))
      expect_equal(a$mu, plain[[i]]$mu, tolerance = 1e-3)
      # the reported log-likelihood is that of the returned parameters
      shape <- if (case$family == "invgauss") a$lambda else a$sigma
      dens <- sapply(seq_along(a$mu), function(m) {
        a$alpha[m] * if (case$family == "invgauss") statmod::dinvgauss(case$d[[i]], a$mu[m], shape = shape[m])
                     else dnorm(case$d[[i]], a$mu[m], shape[m])
      })
      expect_equal(a$loglik, sum(log(rowSums(dens))), tolerance = 1e-10)
    }
  }
})

test_that("max.iters bounds an accelerated start's E-step passes", {
  set.seed(32)
  d <- replicate(3, rmix(500, c(0.5, 0.5), c(0, 1), c(1, 1), "normal"), simplify = FALSE)
  expect_warning(f <- bulkem(d, 2, family = "normal", random.inits = 4, max.iters = 7, use.gpu = FALSE,
                             control = list(accelerate = TRUE, keep.starts = TRUE, short.runs = 0)),
                 class = "bulkem_warning_convergence")
  for (x in f) {
    expect_true(all(x$starts$iterations <= 7))
    expect_true(any(x$starts$status == "max_iters"))
  }
  expect_lte(attr(f, "em_iterations"), 3 * 4 * 8)
})

test_that("bulkem_bootstrap() refits with SQUAREM by default and with plain EM when asked", {
  set.seed(33)
  d <- replicate(3, rnorm(300), simplify = FALSE)
  f <- bulkem(d, 1, family = "normal", use.gpu = FALSE, control = list(keep.data = TRUE))
  run <- function(...) bulkem_bootstrap(f, B = 19, test = "lrt", level = 0.1, seed = 4, random.inits = 4,
                                        use.gpu = FALSE, ...)
  acc <- run()
  plain <- run(control = list(accelerate = FALSE))
  expect_identical(run(control = list(accelerate = TRUE))$lrt, acc$lrt)
  passes <- function(b) attr(b, "costs")[["em_iterations"]]
  expect_lt(passes(acc), passes(plain) / 2)
  # the same maxima: the observed statistics of both agree closely
  expect_equal(acc$loglik, plain$loglik, tolerance = 1e-9)
  expect_equal(acc$loglik_alt, plain$loglik_alt, tolerance = 1e-4)
})

test_that("the fit returned is at the maximum itself, whichever path EM took there", {
  # at the defaults (epsilon = 1e-6) the stop rule leaves SQUAREM and plain
  # EM at different points 1e-3 apart; both are returned at the maximum
  set.seed(34)
  cases <- list(list(x = rmix(800, c(0.4, 0.6), c(0, 1.6), c(1, 1), "normal"), k = 2, family = "normal"),
                list(x = rmix(600, c(0.3, 0.4, 0.3), c(1, 3, 8), c(30, 5, 20)), k = 3, family = "invgauss"))
  for (cs in cases) {
    fit <- function(acc) bulkem(list(cs$x), cs$k, family = cs$family, seed = 5, use.gpu = FALSE,
                                control = list(accelerate = acc))[[1]]
    theta <- function(f) c(f$alpha[-cs$k], f$mu, if (cs$family == "invgauss") f$lambda else f$sigma)
    acc <- fit(TRUE)
    plain <- fit(FALSE)
    expect_lt(abs(acc$loglik - plain$loglik), 1e-10 * abs(plain$loglik))
    expect_lt(max(abs(theta(acc) - theta(plain)) / abs(theta(plain))), 1e-7)
    # R's own log-likelihood (statmod, dnorm) is flat there: a step of one
    # standard error along any parameter changes it by less than 1e-4 to
    # first order (numerical gradient times numerical standard error)
    th <- theta(acc)
    h <- 1e-5 * abs(th)
    grad <- vapply(seq_along(th), function(a) {
      e <- replace(numeric(length(th)), a, h[a])
      (theta_loglik(th + e, cs$x, cs$k, cs$family) - theta_loglik(th - e, cs$x, cs$k, cs$family)) / (2 * h[a])
    }, 0)
    se <- sqrt(diag(solve(numerical_information(th, cs$x, cs$k, cs$family))))
    expect_lt(max(abs(grad * se)), 1e-4)
  }
})
