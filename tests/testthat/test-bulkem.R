# The 2015 call signature, the fields of a fit, and their meaning.

test_that("the 2015 arguments come first, in order, with their defaults", {
  # max.iters and random.inits default to 5000 and 20 (2015: 100 and 1),
  # chosen in inst/bench/results-defaults.md
  f <- formals(bulkem)
  expect_identical(names(f)[1:7], c("datasets", "num.components", "max.iters",
                                    "random.inits", "use.gpu", "epsilon", "verbose"))
  expect_identical(names(f)[8:10], c("family", "seed", "control"))
  expect_identical(f$num.components, 2)
  expect_identical(f$max.iters, 5000)
  expect_identical(f$random.inits, 20)
  expect_identical(f$use.gpu, NA)
  expect_identical(f$epsilon, 1e-6)
  expect_identical(f$verbose, FALSE)
})

test_that("a 2015-style positional call returns every documented field", {
  set.seed(1)
  x <- b1_dataset(500)
  fits <- bulkem(list(x, x[1:300]), 2, 100, 3, NA, 1e-6, FALSE)
  expect_s3_class(fits, "bulkem")
  expect_length(fits, 2)
  f <- fits[[1]]
  expect_s3_class(f, "bulkem_fit")
  expect_named(f, c("lambda", "mu", "alpha", "init_lambda", "init_mu", "init_alpha",
                    "loglik", "num_iterations", "fit_success", "family", "n", "nobs", "k",
                    "converged", "status", "message", "best_start", "starts_ok",
                    "aic", "bic", "icl", "starts_at_best", "spurious", "spurious_starts",
                    "loglik_spurious", "starts_run", "se", "vcov", "noise", "noise_support", "df",
                    "tau", "equal_scale", "fixed", "truncation", "censored"))
  expect_null(f$df)
  expect_null(f$tau)
  expect_identical(f$family, "invgauss")
  expect_identical(f$n, 500L)
  expect_true(f$fit_success)
  expect_true(f$status %in% c("converged", "max_iters"))
  expect_identical(f$converged, f$status == "converged")
  expect_false(is.unsorted(f$mu))
  expect_equal(sum(f$alpha), 1, tolerance = 1e-12)
  expect_true(f$best_start %in% 1:3)
  expect_true(f$starts_ok >= 1 && f$starts_ok <= 3)
  expect_equal(f$aic, -2 * f$loglik + 2 * 5)
  expect_equal(f$bic, -2 * f$loglik + 5 * log(500))
  expect_true(attr(fits, "engine") %in% c("cpu", "cuda-streams", "cuda-batched"))
  expect_true(attr(fits, "em_iterations") >= 2 * (f$num_iterations + 1))
  expect_true(attr(fits, "threads") >= 1)
  expect_true(attr(fits, "elapsed") >= 0)
  expect_identical(attr(fits, "num.components"), 2L)
})

test_that("Normal fits carry sigma, and names of datasets are kept", {
  set.seed(2)
  d <- list(a = rnorm(200), b = c(rnorm(100), rnorm(100, 5)))
  fits <- bulkem(d, random.inits = 4, family = "normal")
  expect_named(fits, c("a", "b"))
  expect_true(all(c("sigma", "init_sigma") %in% names(fits$b)))
  expect_false("lambda" %in% names(fits$b))
  expect_equal(fits$b$mu, c(0, 5), tolerance = 0.1)
  expect_identical(fits$b$family, "normal")
})

test_that("one numeric vector is one dataset; integer data is accepted", {
  set.seed(3)
  x <- b1_dataset(300)
  one <- bulkem(x, random.inits = 2, seed = 11)
  expect_length(one, 1)
  expect_identical(unclass(one[[1]]),
                   unclass(bulkem(list(x), random.inits = 2, seed = 11)[[1]]))
  xi <- c(rpois(100, 5) + 1L, rpois(100, 30) + 1L)
  fit <- bulkem(list(xi), random.inits = 3, family = "normal")[[1]]
  expect_true(fit$fit_success)
})

test_that("the fit recovers the 2015 demo mixture", {
  set.seed(4)
  f <- bulkem(list(b1_dataset(20000)), random.inits = 10)[[1]]
  expect_identical(f$status, "converged")
  expect_equal(f$mu, c(1, 3), tolerance = 0.1)
  expect_equal(f$lambda, c(30, 0.2), tolerance = 0.1)
  expect_equal(f$alpha, c(0.3, 0.7), tolerance = 0.05)
})

test_that("loglik is the log-likelihood of the fit under statmod's and dnorm's densities", {
  skip_if_not_installed("statmod")
  set.seed(5)
  x <- b1_dataset(1000)
  f <- bulkem(list(x), random.inits = 5)[[1]]
  expect_equal(f$loglik, reference_loglik(x, f), tolerance = 1e-10)
  y <- c(rnorm(300, 0, 1), rnorm(200, 3, 0.5), rnorm(100, 8, 2))
  g <- bulkem(list(y), num.components = 3, random.inits = 5, family = "normal")[[1]]
  expect_equal(g$loglik, reference_loglik(y, g), tolerance = 1e-10)
})

test_that("one component gives the closed-form maximum-likelihood estimates", {
  set.seed(6)
  x <- rinvgauss_msh(400, 2, 5)
  f <- bulkem(list(x), num.components = 1, random.inits = 3, epsilon = 1e-10)[[1]]
  expect_equal(f$mu, mean(x), tolerance = 1e-10)
  expect_equal(f$lambda, 1 / mean(1 / x - 1 / mean(x)), tolerance = 1e-10)
  expect_identical(f$alpha, 1)
  y <- rnorm(300, 10, 3)
  g <- bulkem(list(y), num.components = 1, family = "normal", epsilon = 1e-10)[[1]]
  expect_equal(g$mu, mean(y), tolerance = 1e-10)
  expect_equal(g$sigma, sqrt(mean((y - mean(y))^2)), tolerance = 1e-10)
})

test_that("init_* are the winning start's ML estimates from three observations", {
  set.seed(7)
  x <- b1_dataset(60)
  f <- bulkem(list(x), random.inits = 4, control = list(starts = "random", short.runs = 0))[[1]]
  expect_equal(f$init_alpha, c(0.5, 0.5))
  # some triple of distinct observations has mean init_mu[1] and the IG ML shape init_lambda[1]
  trip <- utils::combn(x, 3)
  mus <- colMeans(trip)
  lams <- 1 / colMeans(1 / trip - rep(1 / mus, each = 3))
  for (m in 1:2) {
    hit <- which(abs(mus - f$init_mu[m]) < 1e-9 * f$init_mu[m])
    expect_true(any(abs(lams[hit] - f$init_lambda[m]) < 1e-7 * f$init_lambda[m]))
  }
})

test_that("verbose reports through message()", {
  set.seed(8)
  x <- b1_dataset(100)
  msgs <- capture_messages(bulkem(list(x), verbose = TRUE))
  expect_length(msgs, 2)
  # the default number of starts, 20
  expect_match(msgs[1], "1 datasets, invgauss, 2 component\\(s\\), 20 start\\(s\\) each, on the [a-z-]+ engine")
  expect_match(msgs[2], "done in [0-9.]+ s \\([a-z-]+ engine, [0-9]+ thread")
  expect_silent(bulkem(list(x), use.gpu = FALSE))
})

test_that("the engine reports progress to R while it works", {
  set.seed(9)
  d <- replicate(60, b1_dataset(2000), simplify = FALSE)
  calls <- list()
  report <- function(done, total) calls[[length(calls) + 1]] <<- c(done, total)
  # 80 starts on one thread: 1.2 s on a Zen 5 core with the AVX-512 E-step,
  # several of the 0.25 s between reports
  res <- bulkem:::fit_(d, list(), bulkem:::core_settings("invgauss", 2L, 1000L, 80L, 1e-12, 1,
    bulkem:::check_control(list(threads = 1L, accelerate = FALSE, restarts = 0L)), "cpu"), report)
  expect_gt(length(calls), 0)
  totals <- vapply(calls, `[`, 0, 2)
  dones <- vapply(calls, `[`, 0, 1)
  expect_true(all(totals == 60 * 80))
  expect_false(is.unsorted(dones))
  expect_true(all(dones <= totals))
  expect_length(res$fits, 60)
})

test_that("a long data frame or a formula gives one dataset per group, as a list would", {
  set.seed(31)
  df <- data.frame(subject = rep(c("s2", "s1", "s3"), times = c(200, 150, 100)),
                   rt = c(b1_dataset(200), b1_dataset(150), b1_dataset(100)))
  by_df <- bulkem(df, value = "rt", group = "subject", random.inits = 3, seed = 8)
  by_list <- bulkem(split(df$rt, df$subject), random.inits = 3, seed = 8)
  by_formula <- bulkem(df, formula = rt ~ subject, random.inits = 3, seed = 8)
  expect_named(by_df, c("s1", "s2", "s3"))
  expect_identical(unclass(by_df)[1:3], unclass(by_list)[1:3])
  expect_identical(unclass(by_formula)[1:3], unclass(by_list)[1:3])
  expect_identical(by_df$s3$n, 100L)
  df$block <- rep(c("x", "y"), length.out = nrow(df))
  two <- bulkem(df, formula = rt ~ subject + block, random.inits = 3, seed = 8)
  expect_named(two, c("s1:x", "s2:x", "s3:x", "s1:y", "s2:y", "s3:y"))
  expect_identical(two[["s2:y"]]$n, 100L)
})

test_that("the call records its work and where its time went", {
  set.seed(41)
  fits <- bulkem(list(b1_dataset(500), b1_dataset(300)), random.inits = 3, use.gpu = FALSE)
  tm <- attr(fits, "timings")
  phases <- c("check", "setup", "prepare", "engine", "finish", "choose K", "result", "after")
  expect_identical(names(tm), c(phases, "total"))
  expect_true(all(tm >= 0))
  expect_identical(tm[["total"]], attr(fits, "elapsed"))
  expect_lte(sum(tm[phases]), tm[["total"]] + 0.01)
  # E-step passes: one more than the updates of every start (no short runs)
  s <- quiet_bulkem(list(b1_dataset(500)), random.inits = 1, use.gpu = FALSE, seed = 2,
                    control = list(short.runs = 0))
  expect_identical(attr(s, "em_iterations"), s[[1]]$num_iterations + 1)
  expect_identical(attr(s, "kernel_launches"), 0)
  expect_identical(attr(s, "kernel_seconds"), 0)
})

test_that("the R result is the same whether built while the fits are finished or after", {
  # R's main thread builds a fit's list as soon as the fit is final, while
  # the workers go on, and (on GPU engines) makes the lists of the fits to
  # come meanwhile, for their numbers to be written in (src/rust/src/fit.rs,
  # convert.rs). BULKEM_RESULT_DURING=0 builds every list after the call,
  # `reserve` makes lists ahead on the CPU engine too (some fits are then
  # written into one, some built whole), `ahead` makes every list before the
  # engine starts (every fit is written into one)
  set.seed(43)
  d <- c(replicate(3000, c(rnorm(20), rnorm(20, 3)), simplify = FALSE), list(rep(1, 10), c(2, 5)))
  old <- Sys.getenv("BULKEM_RESULT_DURING", NA)
  on.exit(if (is.na(old)) Sys.unsetenv("BULKEM_RESULT_DURING") else Sys.setenv(BULKEM_RESULT_DURING = old))
  calls <- list(
    function() quiet_bulkem(d, 2, random.inits = 3, seed = 8, family = "normal", use.gpu = FALSE,
                            control = list(threads = 2, keep.starts = TRUE)),
    function() quiet_bulkem(d, 2, random.inits = 3, seed = 8, use.gpu = FALSE,
                            control = list(threads = 2, standard.errors = FALSE)),
    function() quiet_bulkem(d, 1:3, random.inits = 2, seed = 9, family = "normal", use.gpu = FALSE,
                            control = list(threads = 2)))
  for (call in calls) {
    Sys.setenv(BULKEM_RESULT_DURING = "0")
    after <- call()
    expect_length(after, length(d))
    expect_true(all(vapply(after, inherits, TRUE, "bulkem_fit")))
    expect_identical(vapply(after, `[[`, "", "status")[3001:3002], c("invalid", "invalid"))
    for (mode in c("", "reserve", "ahead")) {
      if (nzchar(mode)) Sys.setenv(BULKEM_RESULT_DURING = mode) else Sys.unsetenv("BULKEM_RESULT_DURING")
      during <- call()
      expect_identical(unclass(during)[seq_along(d)], unclass(after)[seq_along(d)])
      expect_identical(attr(during, "em_iterations"), attr(after, "em_iterations"))
    }
  }
  # the calls above hold failed and spurious fits and ones without standard
  # errors, whose fields differ in kind from a good fit's
  statuses <- vapply(after, `[[`, "", "status")
  expect_true(all(c("converged", "invalid") %in% statuses))
})

test_that("fits sharing a value do not share a change to it", {
  # the result shares one R integer per small value among its fits
  # (src/rust/src/convert.rs); changing one fit's copy must not touch others
  set.seed(71)
  d <- replicate(3, c(rnorm(40), rnorm(40, 5)), simplify = FALSE)
  f <- bulkem(d, 2, family = "normal", random.inits = 4, use.gpu = FALSE, seed = 1)
  expect_identical(f[[1]]$n, f[[2]]$n)
  n2 <- f[[2]]$n
  f[[1]]$n[1] <- 999L
  expect_identical(f[[2]]$n, n2)
  expect_identical(f[[1]]$n, 999L)
  g <- f[[3]]
  g$starts_run[1] <- g$starts_run + 1L
  expect_identical(f[[3]]$starts_run, f[[2]]$starts_run)
  v <- f[[2]]$vcov
  v[1, 1] <- -1
  expect_false(identical(f[[2]]$vcov[1, 1], -1))
  expect_identical(dim(f[[2]]$vcov), c(5L, 5L))
  expect_identical(rownames(f[[2]]$vcov), c("alpha1", "mu1", "mu2", "sigma1", "sigma2"))
  expect_true(is.na(f[[1]]$loglik_spurious) && is.na(f[[2]]$loglik_spurious))
})
