# control$refine: starts from each dataset's best fit with one component
# moved to a region the fit explains least (src/rust/core/src/refine.rs).

test_that("control$refine is checked and named", {
  x <- list(c(1, 2, 3, 4, 5, 6, 7.5))
  for (bad in list(-1, 1.5, NA, "2", 99)) {
    expect_error(bulkem(x, use.gpu = FALSE, control = list(refine = bad)),
                 class = "bulkem_error_argument", label = format(bad))
    expect_error(bulkem(x, use.gpu = FALSE, control = list(refine = bad)), "control$refine", fixed = TRUE)
  }
})

test_that("refinement reaches a minor mode the random starts miss", {
  # 98% in one wide mode, 2% (20 observations) in a narrow one at its
  # edge: few random starts seed the small mode (400 random starts miss it
  # on half of these datasets; mixed starts without short runs, the
  # default search before short runs, miss it too)
  set.seed(61)
  d <- replicate(12, c(rnorm(980, 0, 1), rnorm(20, 3.5, 0.2)), simplify = FALSE)
  fit <- function(refine, starts = 5, seed = 3) {
    quiet_bulkem(d, 2, family = "normal", random.inits = starts, seed = seed, use.gpu = FALSE,
                 control = list(refine = refine, keep.starts = TRUE, starts = "mixed", short.runs = 0))
  }
  plain <- fit(0)
  refined <- fit(2)
  ll <- function(f) vapply(f, `[[`, 0, "loglik")
  reference <- pmax(ll(fit(0, starts = 400, seed = 1)), ll(fit(2, starts = 400, seed = 1)))
  missed <- ll(plain) < reference - 1e-6 * abs(reference)
  expect_gte(sum(missed), 3) # the test needs datasets the plain starts miss
  # refined: the reference's optimum on every dataset, never below the plain fit
  expect_true(all(ll(refined) >= reference - 1e-6 * abs(reference)))
  expect_true(all(ll(refined) >= ll(plain) - 1e-9 * abs(ll(plain))))
  for (i in which(missed)) {
    f <- refined[[i]]
    # the minor mode found: a component of about 20 observations near 3.5
    expect_equal(f$mu[2], 3.5, tolerance = 0.1)
    expect_equal(1000 * f$alpha[2], 20, tolerance = 0.3)
    # its log-likelihood is the mixture's, summed with dnorm
    expect_equal(f$loglik, sum(log(f$alpha[1] * dnorm(d[[i]], f$mu[1], f$sigma[1]) +
                                     f$alpha[2] * dnorm(d[[i]], f$mu[2], f$sigma[2]))), tolerance = 1e-10)
    # the winner is a refinement start: numbered after the random starts
    # and the restart rounds' (5 * (1 + restarts)), 2 regions x K = 2 of them
    first <- 5L * (1L + bulkem:::model_limits()$restarts)
    expect_gte(f$best_start, first + 1L)
    expect_identical(f$starts_run, nrow(f$starts))
    expect_identical(f$starts_run, 5L + 2L * 2L)
  }
  # the same fits whatever the threads and the datasets' order
  two <- quiet_bulkem(rev(d), 2, family = "normal", random.inits = 5, seed = 3, use.gpu = FALSE,
                      control = list(refine = 2, keep.starts = TRUE, threads = 1, starts = "mixed", short.runs = 0))
  expect_identical(lapply(rev(unclass(two)), `[[`, "mu"), lapply(unclass(refined), `[[`, "mu"))
})
