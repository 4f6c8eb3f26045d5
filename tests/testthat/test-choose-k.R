# Several numbers of components in one call; each dataset keeps its fit with
# the lowest BIC.

test_that("BIC picks the simulated number of components", {
  set.seed(21)
  d <- list(
    one = rnorm(600, 5, 1),
    two = c(rnorm(300, 0, 1), rnorm(300, 6, 1)),
    three = c(rnorm(300, 0, 0.5), rnorm(300, 5, 0.5), rnorm(300, 10, 0.5))
  )
  fits <- bulkem(d, num.components = 1:4, random.inits = 10, family = "normal",
                 use.gpu = FALSE, seed = 4)
  expect_identical(vapply(fits, `[[`, 0L, "num_components"), c(one = 1L, two = 2L, three = 3L))
  expect_identical(attr(fits, "num.components"), 1:4)
  for (nm in names(d)) {
    f <- fits[[nm]]
    expect_identical(f$by_k$K, 1:4)
    expect_identical(min(f$by_k$bic), f$bic)
    expect_length(f$mu, f$num_components)
  }
  # each K's fit is the fit that K alone gives with the same seed
  two <- bulkem(d, num.components = 2, random.inits = 10, family = "normal", use.gpu = FALSE, seed = 4)
  expect_identical(unclass(two$two)[1:18], unclass(fits$two)[1:18])
  expect_identical(fits$one$by_k$bic[2], two$one$bic)
  one <- bulkem(d, num.components = 1, family = "normal", use.gpu = FALSE, seed = 4)
  expect_identical(fits$one$by_k$loglik[1], one$one$loglik)
  long <- as.data.frame(fits)
  expect_identical(nrow(long), 6L)
  expect_output(print(fits), "1, 2, 3, 4 components \\(chosen by BIC\\)")
})

test_that("a dataset too short for the larger Ks keeps a smaller K", {
  set.seed(22)
  d <- list(short = rnorm(7, 1), long = c(rnorm(200), rnorm(200, 5)))
  fits <- bulkem(d, num.components = 1:3, random.inits = 5, family = "normal", use.gpu = FALSE)
  expect_identical(fits$short$by_k$status[3], "invalid")
  expect_true(fits$short$num_components %in% 1:2)
  expect_true(fits$short$fit_success)
})

test_that("several Ks: one pass, progress never goes back, the same shape as one K", {
  set.seed(23)
  d <- replicate(30, c(rnorm(300), rnorm(300, 4)), simplify = FALSE)
  seen <- list()
  report <- function(done, total) seen[[length(seen) + 1]] <<- c(done, total)
  res <- bulkem:::fit_(d, bulkem:::core_settings("normal", 1:3, 2000L, 30L, 1e-12, 5,
    bulkem:::check_control(list(threads = 1L, accelerate = FALSE, restarts = 0L)), "cpu"), report)
  expect_gt(length(seen), 1)
  done <- vapply(seen, `[`, 0, 1)
  total <- vapply(seen, `[`, 0, 2)
  # every K's work is counted before any of it runs: one total, from the first report
  expect_true(all(total == 30 * (1 + 30 + 30)))
  expect_false(is.unsorted(done))
  # the glue returns a list of fits, whether one K or several
  expect_length(res$fits, 30)
  expect_s3_class(res$fits[[1]], "bulkem_fit")
  one <- bulkem:::fit_(d[1:2], bulkem:::core_settings("normal", 2L, 100L, 3L, 1e-6, 5,
    bulkem:::check_control(list(threads = 1L, accelerate = FALSE, restarts = 0L)), "cpu"), NULL)
  expect_length(one$fits, 2)
  expect_s3_class(one$fits[[1]], "bulkem_fit")
  # the choice of K happens in compiled code, inside the timed call
  expect_true("choose K" %in% names(res$timings))
})

test_that("choosing K among many datasets costs next to nothing after the fits", {
  set.seed(24)
  d <- replicate(20000, rnorm(10), simplify = FALSE)
  fits <- bulkem(d, num.components = 1:3, random.inits = 1, max.iters = 5,
                 family = "normal", use.gpu = FALSE, seed = 1)
  tm <- attr(fits, "timings")
  # elapsed covers all the work R does after the engine too
  expect_gte(attr(fits, "elapsed"), sum(tm[setdiff(names(tm), "total")]) - 0.05)
  expect_identical(vapply(fits[1:3], function(f) nrow(f$by_k), 0L), rep(3L, 3))
  expect_s3_class(fits[[1]]$by_k, "data.frame")
  expect_identical(fits[[1]]$by_k$K, 1:3)
})

test_that("every K's fit is kept, the chosen one first, each the fit a call with that K alone makes", {
  set.seed(2)
  d <- list(a = c(rnorm(200), rnorm(150, 4)), b = rnorm(100, 3), c = c(1, 2))
  fit <- function(k) {
    suppressWarnings(bulkem(d, num.components = k, family = "normal", random.inits = 5, seed = 4,
                            use.gpu = FALSE, control = list(threads = 2)))
  }
  many <- fit(1:3)
  for (nm in names(d)) {
    ak <- many[[nm]]$all_k
    ks <- vapply(ak, `[[`, 0L, "k")
    # the chosen K first, then the others ascending
    expect_identical(ks[1], many[[nm]]$k)
    expect_identical(ks[1], many[[nm]]$num_components)
    expect_identical(sort(ks), 1:3)
    expect_identical(ks[-1], sort(ks[-1]))
    expect_true(all(vapply(ak, inherits, NA, "bulkem_fit")))
    expect_null(ak[[1]]$all_k)
  }
  for (k in 1:3) {
    one <- fit(k)
    for (nm in names(d)) {
      expect_identical(one[[nm]]$k, as.integer(k))
      ak <- many[[nm]]$all_k
      kept <- unclass(ak[[which(vapply(ak, `[[`, 0L, "k") == k)]])
      expect_identical(kept, unclass(one[[nm]])[names(kept)])
    }
  }
})
