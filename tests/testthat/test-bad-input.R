# Bad arguments stop the call naming the argument; a bad dataset gets its own
# status while the others fit exactly as they would alone.

test_that("bad arguments are errors that name the argument", {
  x <- c(1, 2, 3, 4, 5, 6, 7)
  expect_error(bulkem("a"), "`datasets`")
  expect_error(bulkem(NULL), "`datasets`")
  expect_error(bulkem(list()), "`datasets` is empty")
  expect_error(bulkem(list(x, letters)), "`datasets\\[\\[2\\]\\]` must be a numeric vector")
  expect_error(bulkem(list(x, factor(1:6))), "factor")
  expect_error(bulkem(list(x, list(1, 2))), "`datasets\\[\\[2\\]\\]`")
  # multivariate data is not mixed with univariate data: a classed error
  # names the dataset; a one-column matrix is its column
  m <- matrix(c(x, rev(x)), ncol = 2)
  expect_error(bulkem(list(x, m, m), use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "`datasets[[2]]` is a matrix of 7 x 2 values but `datasets[[1]]` is a numeric vector", fixed = TRUE)
  expect_error(bulkem(list(array(1:24 + 0.5, c(4, 3, 2))), use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "array of 4 x 3 x 2")
  # a list of matrices and a matrix response are multivariate datasets
  # (bulkem() end-to-end: see test-multivariate.R)
  expect_identical(make_input(list(matrix(1:14, ncol = 2)))$datasets,
                   list(matrix(as.double(1:14), ncol = 2, dimnames = list(NULL, c("x1", "x2")))))
  cells <- data.frame(a = c(x, x), b = c(rev(x), x), g = rep(1:2, each = 7))
  by_formula <- make_input(cbind(a, b) ~ g, data = cells)
  expect_true(by_formula$multivariate)
  expect_identical(by_formula$datasets, list(`1` = cbind(a = x, b = rev(x)), `2` = cbind(a = x, b = x)))
  one <- bulkem(list(cbind(x + 0.5)), 2, family = "normal", seed = 1, use.gpu = FALSE)
  expect_equal(one[[1]]$loglik, bulkem(list(x + 0.5), 2, family = "normal", seed = 1, use.gpu = FALSE)[[1]]$loglik)
  expect_error(bulkem(data.frame(x = x)), "`value`")
  expect_error(bulkem(data.frame(x = x), value = "x", group = "g"), "`group`")
  expect_error(bulkem(data.frame(x = letters[1:7], g = 1), value = "x", group = "g"), "must be numeric")
  expect_error(bulkem(data.frame(g = 1), formula = ~ g), "value ~ group")
  expect_error(bulkem(data.frame(g = 1), formula = "g"), "`formula`")
  expect_error(bulkem(x, formula = x ~ g), "formula")
  for (k in list(0, 9, 2.5, NA, "2", c(2, 2), c(1, 9), -1, Inf, numeric(0))) {
    expect_error(bulkem(x, num.components = k), "`num.components`")
  }
  for (v in list(0, -1, 1.5, NA, "10", Inf)) {
    expect_error(bulkem(x, max.iters = v), "`max.iters`")
    expect_error(bulkem(x, random.inits = v), "`random.inits`")
  }
  for (e in list(0, -1e-6, NA, Inf, "1e-6", c(1e-6, 1e-7))) {
    expect_error(bulkem(x, epsilon = e), "`epsilon`")
  }
  expect_error(bulkem(x, use.gpu = "yes"), "`use.gpu`")
  expect_error(bulkem(x, use.gpu = c(TRUE, FALSE)), "`use.gpu`")
  expect_error(bulkem(x, verbose = NA), "`verbose`")
  expect_error(bulkem(x, family = "weibull"), "`family`")
  expect_error(bulkem(x, family = c("normal", "invgauss")), "`family`")
  for (s in list(-1, 1.5, NA, "1", c(1, 2), 2^60)) {
    expect_error(bulkem(x, seed = s), "`seed`")
  }
  expect_error(bulkem(x, control = list(thread = 2)), "unknown `control` setting.*thread")
  expect_error(bulkem(x, control = list(2)), "`control`")
  expect_error(bulkem(x, control = "fast"), "`control`")
  expect_error(bulkem(x, control = list(threads = 0)), "`control\\$threads`")
  expect_error(bulkem(x, control = list(engine = "gpu")), "`control\\$engine`")
  expect_error(bulkem(x, control = list(precision = "single")), "`control\\$precision`")
  expect_error(bulkem(x, max.iter = 5, foo = 1), "foo")
})

test_that("bad datasets are reported one by one while the others fit unchanged", {
  set.seed(1)
  good <- b1_dataset(300)
  bad <- list(
    short = c(1, 2, 3, 4, 5),
    missing = c(good[1:20], NA),
    nan = c(good[1:20], NaN),
    infinite = c(good[1:20], Inf),
    nonpositive = c(good[1:20], 0),
    negative = c(good[1:20], -2),
    constant = rep(2.5, 30),
    empty = numeric(0),
    null = NULL
  )
  bad["null"] <- list(NULL)
  # one warning for the call, counting the invalid datasets; NA and NaN are
  # kept (na.action = na.pass) to be reported, not dropped as by default
  # (test-input.R)
  expect_warning(fits <- bulkem(c(list(good = good), bad), random.inits = 3, seed = 5,
                                na.action = na.pass),
                 "of 10 fits, 9 were invalid", class = "bulkem_warning_convergence")
  alone <- bulkem(list(good = good), random.inits = 3, seed = 5)
  expect_identical(unclass(fits$good), unclass(alone$good))
  for (nm in names(bad)) {
    f <- fits[[nm]]
    expect_identical(f$status, "invalid", label = nm)
    expect_false(f$fit_success)
    expect_false(f$converged)
    expect_true(is.na(f$loglik) && is.na(f$aic) && is.na(f$bic))
    expect_true(all(is.na(f$mu)) && length(f$mu) == 2)
    expect_true(is.na(f$best_start))
    expect_identical(f$starts_ok, 0L)
  }
  expect_match(fits$short$message, "has 5 observations; at least 6")
  expect_match(fits$missing$message, "NA, NaN or infinite value")
  expect_match(fits$nan$message, "NA, NaN or infinite value")
  expect_match(fits$infinite$message, "position 21")
  expect_match(fits$nonpositive$message, "value <= 0.*positive data")
  expect_match(fits$negative$message, "value <= 0")
  expect_match(fits$constant$message, "has all 30 values equal", fixed = TRUE)
  expect_match(fits$empty$message, "has 0 observations")
  expect_match(fits$null$message, "has 0 observations")
  # the Normal family accepts values <= 0
  n <- bulkem(list(c(good, -1, 0)), family = "normal", random.inits = 2)[[1]]
  expect_true(n$fit_success)
})

test_that("a dataset whose starts all fail is 'failed' with a message", {
  # ten tied values: some component collapses onto them (the likelihood is
  # unbounded there) from each of these random starts (restarts off: with
  # them, a later round finds a start that does not; the default search's
  # partition short runs find one too)
  x <- c(rep(1, 10), 2, 3)
  set.seed(2)
  good <- b1_dataset(200)
  random <- list(restarts = 0, starts = "random", short.runs = 0)
  fits <- quiet_bulkem(list(x, good), random.inits = 5, family = "normal", seed = 1, control = random)
  expect_identical(fits[[1]]$status, "failed")
  expect_match(fits[[1]]$message, "all 5 random starts failed")
  expect_false(fits[[1]]$fit_success)
  expect_true(all(is.na(fits[[1]]$mu)) && is.na(fits[[1]]$loglik))
  expect_true(fits[[2]]$fit_success)
  expect_identical(quiet_bulkem(list(x), random.inits = 5, seed = 1, control = random)[[1]]$status,
                   "failed")
})

test_that("max.iters stops a start and says so", {
  set.seed(3)
  f <- quiet_bulkem(list(b1_dataset(500)), max.iters = 2, random.inits = 2)[[1]]
  expect_identical(f$status, "max_iters")
  expect_identical(f$num_iterations, 2L)
  expect_false(f$converged)
  expect_true(f$fit_success)
  expect_match(f$message, "max.iters")
})

test_that("the compiled scan of the datasets agrees with R's is.double(), is.integer(), is.factor() and anyNA()", {
  d <- list(c(1, 2), c(1, NA), c(1, NaN), 1:3, c(1L, NA), factor("a"), NULL, "x", list(1),
            numeric(0), integer(0), as.Date("2020-01-01"), TRUE, c(a = 1, b = Inf), 2 + 0i)
  expected <- vapply(d, function(x) {
    if (is.double(x)) return(as.integer(anyNA(x)))
    if (is.integer(x) && !is.factor(x)) return(2L + anyNA(x))
    if (is.null(x)) return(4L)
    5L
  }, 0L)
  expect_identical(bulkem:::dataset_kinds_(d, 1L), expected)
  expect_identical(bulkem:::dataset_kinds_(d, 4L), expected)
  expect_identical(bulkem:::dataset_kinds_(c(1, 2), 2L), 5L)
  # past a million values the scan is shared by the threads: the same
  # answer, with NA and NaN first, last, alone and at block edges
  set.seed(2)
  big <- c(replicate(300, runif(sample(1:9000, 1)), simplify = FALSE), d)
  for (i in c(1, 17, 150, 299)) big[[i]][c(1, length(big[[i]]))[1 + i %% 2]] <- NA
  big[[40]][64] <- NaN
  big[[41]][65] <- NaN
  big[[60]] <- c(big[[60]], NA_real_)
  big[[100]] <- sample(c(1:100000, NA_integer_))
  big[[101]] <- 1:200000
  expect_gt(sum(lengths(big)), 2^20)
  want <- vapply(big, function(x) {
    if (is.double(x)) return(as.integer(anyNA(x)))
    if (is.integer(x) && !is.factor(x)) return(2L + anyNA(x))
    if (is.null(x)) return(4L)
    5L
  }, 0L)
  for (threads in c(1L, 2L, 3L, 8L, 1000L)) expect_identical(bulkem:::dataset_kinds_(big, threads), want)
})
