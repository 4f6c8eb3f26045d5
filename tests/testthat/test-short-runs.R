# control$short.runs (emEM): many short runs per dataset, the best
# random.inits of them continued to convergence (src/rust/core/src/short.rs).

test_that("control$short.runs and short.iters are checked and named", {
  x <- list(c(1, 2, 3, 4, 5, 6, 7.5))
  for (bad in list(-1, 1.5, NA, "2", 2e6)) {
    expect_error(bulkem(x, use.gpu = FALSE, control = list(short.runs = bad)),
                 "control$short.runs", fixed = TRUE, label = format(bad))
  }
  for (bad in list(0, -1, 1.5, NA)) {
    expect_error(bulkem(x, use.gpu = FALSE, control = list(short.iters = bad)),
                 "control$short.iters", fixed = TRUE, label = format(bad))
  }
  # fewer short runs than starts to continue
  expect_error(bulkem(x, random.inits = 10, use.gpu = FALSE, control = list(short.runs = 5)),
               "control$short.runs", fixed = TRUE)
})

test_that("short partition runs reach a minor mode that 5 and 400 full starts miss", {
  # 98% in one wide mode, 2% (20 observations) in a narrow one at its
  # edge (as test-refine.R): 400 random starts miss it on half of these
  # datasets, 5 partition starts on a few
  set.seed(61)
  d <- replicate(12, c(rnorm(980, 0, 1), rnorm(20, 3.5, 0.2)), simplify = FALSE)
  fit <- function(inits = 5, seed = 3, starts = "partition", ...) {
    quiet_bulkem(d, 2, family = "normal", random.inits = inits, seed = seed, use.gpu = FALSE,
                 control = list(starts = starts, keep.starts = TRUE, ...))
  }
  ll <- function(f) vapply(f, `[[`, 0, "loglik")
  reference <- pmax(ll(fit(400, seed = 1, starts = "random")), ll(fit(400, seed = 1, refine = 2)))
  reached <- function(f) ll(f) >= reference - 1e-6 * abs(reference)
  plain <- fit(short.runs = 0)
  short <- fit(short.runs = 50, short.iters = 3)
  expect_gte(sum(!reached(plain)), 1) # the test needs datasets the plain starts miss
  expect_true(all(reached(short)))
  for (i in which(!reached(plain))) {
    f <- short[[i]]
    expect_equal(f$mu[2], 3.5, tolerance = 0.1)
    expect_equal(1000 * f$alpha[2], 20, tolerance = 0.3)
  }
  for (f in short) {
    # only the continued starts count as starts
    expect_identical(f$starts_run, 5L)
    expect_identical(nrow(f$starts), 5L)
    expect_true(f$best_start %in% 1:5) # 1-based
  }
  # the short runs' passes are counted: at least one per short run (50 per
  # dataset) on top of the continued starts' own
  continued <- sum(vapply(short, function(f) sum(f$starts$iterations + 1), 0))
  expect_gte(attr(short, "em_iterations"), continued + 12 * 50)
  expect_lte(attr(short, "em_iterations"), continued + 12 * 50 * 4)
  # the same fits whatever the threads and the datasets' order
  again <- quiet_bulkem(rev(d), 2, family = "normal", random.inits = 5, seed = 3, use.gpu = FALSE,
                        control = list(starts = "partition", keep.starts = TRUE, threads = 1,
                                       short.runs = 50, short.iters = 3))
  expect_identical(lapply(rev(unclass(again)), `[[`, "mu"), lapply(unclass(short), `[[`, "mu"))
  expect_identical(lapply(rev(unclass(again)), `[[`, "starts"), lapply(unclass(short), `[[`, "starts"))
  expect_identical(attr(again, "em_iterations"), attr(short, "em_iterations"))
  # the default: short runs by K, 30 for two components (10 iterations),
  # none where random.inits is at least as many
  by_k <- bulkem:::model_limits()$short_runs_by_k
  expect_identical(by_k, c(30L, 100L, 200L))
  starts_of <- function(f) lapply(unclass(f), `[[`, "starts")
  expect_identical(starts_of(fit()), starts_of(fit(short.runs = 30, short.iters = 10)))
  expect_identical(starts_of(fit(30)), starts_of(fit(30, short.runs = 0)))
  expect_false(identical(lapply(unclass(fit()), `[[`, "starts"), lapply(unclass(plain), `[[`, "starts")))
})

test_that("restart rounds run plain draws when the best short runs all collapse", {
  # Nile as three inverse Gaussians: the short runs that climb fastest are
  # those collapsing onto a few observations, and the best 20 of 200 fail
  x <- list(as.numeric(datasets::Nile))
  fit <- function(restarts) {
    quiet_bulkem(x, 3, family = "invgauss", random.inits = 20, seed = 2, use.gpu = FALSE,
                 control = list(starts = "partition", short.runs = 200, short.iters = 10,
                                restarts = restarts, keep.starts = TRUE))[[1]]
  }
  none <- fit(0)
  expect_false(none$fit_success)
  expect_identical(none$starts_run, 20L)
  again <- fit(4)
  expect_true(again$fit_success)
  # continued in the restart rounds: numbered after the first round's 20
  expect_gt(again$best_start, 20L)
  expect_identical(nrow(again$starts), again$starts_run)
})

test_that("the bootstrap's refits keep the search of its calibration unless the call names another", {
  set.seed(64)
  x <- list(c(rnorm(150), rnorm(60, 3.5, 0.7)))
  f <- bulkem(x, 2, family = "normal", seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
  boot <- function(...) {
    b <- bulkem_bootstrap(f, B = 9, seed = 2, random.inits = 5, use.gpu = FALSE, ...)
    attributes(b)[c("costs", "elapsed")] <- NULL
    b
  }
  dflt <- boot()
  expect_identical(dflt, boot(control = list(starts = "mixed", short.runs = 0)))
  # named, they apply: more E-step passes with short runs
  passes <- function(...) {
    attr(bulkem_bootstrap(f, B = 9, seed = 2, random.inits = 5, use.gpu = FALSE, ...), "costs")[["em_iterations"]]
  }
  expect_gt(passes(control = list(short.runs = 30)), passes())
})
