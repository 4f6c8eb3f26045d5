# control$future = TRUE: one call sharded over the workers of the user's
# future::plan() (issue 12, item 2). Each test sets the plan it needs and
# puts the caller's back.

skip_if_no_future <- function() {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
}

# Runs `expr` under plan(...), restoring the previous plan after.
with_plan <- function(expr, ...) {
  old <- future::plan(...)
  on.exit(future::plan(old), add = TRUE)
  expr
}

future_data <- function(n = 11) {
  set.seed(31)
  d <- lapply(seq_len(n), function(i) c(rnorm(120 + i), rnorm(80, 3 + i / 10, 0.7)))
  names(d) <- sprintf("d%02d", seq_len(n))
  d
}

# The per-dataset fits and the call-level attributes that must not depend on
# the sharding.
expect_same_fits <- function(sharded, local) {
  expect_identical(names(sharded), names(local))
  expect_identical(length(sharded), length(local))
  for (i in seq_along(local)) expect_identical(sharded[[i]], local[[i]])
  for (a in c("class", "seed", "family", "num.components", "em_iterations", "na.action")) {
    expect_identical(attr(sharded, a), attr(local, a), label = a)
  }
}

test_that("a sharded call under plan(sequential) is identical to the local call", {
  skip_if_no_future()
  d <- future_data()
  args <- list(d, family = "normal", random.inits = 4, use.gpu = FALSE)
  set.seed(7)
  local <- do.call(bulkem, args)
  before <- future::plan()
  with_plan({
    set.seed(7) # the seed is drawn once, in the caller, as without future
    sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE))))
    # 4 shards per worker by default; the 11 datasets in uneven shards
    shards <- attr(sharded, "shards")
    expect_identical(nrow(shards), 4L)
    expect_identical(shards$last - shards$first + 1L, c(3L, 3L, 3L, 2L))
    # uneven shards, one dataset each, and more shards than datasets
    for (s in c(3, 5, 11, 50)) {
      again <- do.call(bulkem, c(args, list(seed = attr(local, "seed"),
                                            control = list(future = TRUE, shards = s))))
      expect_same_fits(again, local)
      expect_identical(nrow(attr(again, "shards")), as.integer(min(s, 11)))
    }
  }, future::sequential)
  expect_same_fits(sharded, local)
  expect_identical(future::plan(), before)
  expect_true(attr(sharded, "elapsed") >= attr(sharded, "timings")[["shards"]])
  expect_identical(attr(sharded, "engine"), "cpu")
})

test_that("several Ks, keep.data, keep.starts, dropped values and the convergence warning survive sharding", {
  skip_if_no_future()
  d <- future_data(7)
  d$d03[5:7] <- NA # dropped by na.omit, counted in n_dropped
  d$d05 <- c(1, 2) # too few: invalid
  d$d07 <- d$d07[1:8] # too few for K = 3: K = 1 or 2 chosen without it, and said so
  args <- list(d, num.components = 1:3, family = "normal", random.inits = 3, max.iters = 20,
               use.gpu = FALSE, seed = 99)
  ctl <- list(keep.data = TRUE, keep.starts = TRUE)
  w_local <- NULL
  local <- withCallingHandlers(do.call(bulkem, c(args, list(control = ctl))),
                               bulkem_warning_convergence = function(w) {
                                 w_local <<- c(w_local, conditionMessage(w))
                                 invokeRestart("muffleWarning")
                               })
  w_sharded <- NULL
  sharded <- with_plan(
    withCallingHandlers(do.call(bulkem, c(args, list(control = c(ctl, future = TRUE, shards = 3)))),
                        bulkem_warning_convergence = function(w) {
                          w_sharded <<- c(w_sharded, conditionMessage(w))
                          invokeRestart("muffleWarning")
                        }),
    future::sequential)
  expect_same_fits(sharded, local)
  expect_identical(sharded$d03$n_dropped, 3L)
  expect_false(is.null(sharded$d01$starts))
  expect_identical(sharded$d02$data, d$d02)
  # one warning for the whole call, with the same counts as without future,
  # and the same fits named as chosen because another K was not sound
  expect_length(w_local, 1)
  expect_identical(w_sharded, w_local)
  expect_match(w_local, "chose (its|their) K because another K (was|failed)")
})

test_that("a sharded call under plan(multisession, workers = 2) is identical to the local call", {
  skip_if_no_future()
  d <- future_data(9)
  args <- list(d, family = "normal", random.inits = 4, use.gpu = FALSE, seed = 2024,
               num.components = 2:3)
  local <- do.call(bulkem, args)
  # the workers find bulkem where this session does
  withr_libs <- Sys.getenv("R_LIBS")
  Sys.setenv(R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep))
  on.exit(Sys.setenv(R_LIBS = withr_libs), add = TRUE)
  before <- future::plan()
  with_plan({
    sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE))))
    uneven <- do.call(bulkem, c(args, list(control = list(future = TRUE, shards = 4))))
  }, future::multisession, workers = 2)
  expect_identical(future::plan(), before)
  expect_same_fits(sharded, local)
  expect_same_fits(uneven, local)
  expect_identical(nrow(attr(sharded, "shards")), 8L)
  expect_identical(length(unique(attr(sharded, "shards")$worker)), 2L)
})

test_that("progress from the shards reaches the caller's progressr handler, monotone, ending at 1", {
  skip_if_no_future()
  rec <- recording_handler()
  d <- future_data(8)
  with_plan(
    progressr::with_progress(
      fits <- bulkem(d, family = "normal", random.inits = 4, use.gpu = FALSE,
                     control = list(future = TRUE, shards = 4)),
      handlers = rec$handler, enable = TRUE),
    future::sequential)
  expect_length(fits, 8)
  seen <- rec$seen()
  frac <- seen$step / seen$steps
  expect_true(all(seen$steps == 4 * bulkem:::progress_steps))
  expect_false(is.unsorted(frac))
  expect_identical(frac[length(frac)], 1)
  expect_identical(seen$type[nrow(seen)], "finish")
  # more than one step per call: the shards' own progress came through
  expect_gt(sum(seen$type == "update"), 1)
})

test_that("a failing shard is a classed error naming it, never a partial result", {
  skip_if_no_future()
  d <- future_data(10)
  old <- Sys.getenv("BULKEM_FUTURE_FAULT", NA)
  on.exit(if (is.na(old)) Sys.unsetenv("BULKEM_FUTURE_FAULT") else Sys.setenv(BULKEM_FUTURE_FAULT = old))
  Sys.setenv(BULKEM_FUTURE_FAULT = "error:3")
  err <- with_plan(
    tryCatch(bulkem(d, family = "normal", random.inits = 2, use.gpu = FALSE,
                    control = list(future = TRUE, shards = 4)),
             error = function(e) e),
    future::sequential)
  expect_s3_class(err, "bulkem_error_future")
  expect_s3_class(err, "bulkem_error")
  expect_identical(err$shard, 3L)
  expect_match(conditionMessage(err), "shard 3 of 4 (datasets 7-8) failed: injected failure",
               fixed = TRUE)
  # an error of bulkem's in a shard keeps its own condition as `parent`
  Sys.unsetenv("BULKEM_FUTURE_FAULT")
  err <- with_plan(
    tryCatch(bulkem(d, family = "normal", random.inits = 2, use.gpu = TRUE,
                    control = list(future = TRUE, shards = 2, engine = "cpu")),
             error = function(e) e),
    future::sequential)
  expect_s3_class(err, "bulkem_error_future")
  expect_s3_class(err$parent, "bulkem_error_argument")
  expect_match(conditionMessage(err), "shard 1 of 2 (datasets 1-5) failed (and 1 more shard(s)): ",
               fixed = TRUE)
})

test_that("a worker that dies is a classed error naming its shard", {
  skip_if_no_future()
  skip_on_os("windows")
  d <- future_data(6)
  old_libs <- Sys.getenv("R_LIBS")
  Sys.setenv(R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep))
  on.exit(Sys.setenv(R_LIBS = old_libs), add = TRUE)
  Sys.setenv(BULKEM_FUTURE_FAULT = "die:2")
  on.exit(Sys.unsetenv("BULKEM_FUTURE_FAULT"), add = TRUE)
  err <- with_plan(
    tryCatch(bulkem(d, family = "normal", random.inits = 2, use.gpu = FALSE,
                    control = list(future = TRUE, shards = 3)),
             error = function(e) e),
    future::multisession, workers = 2)
  expect_s3_class(err, "bulkem_error_future")
  expect_identical(err$shard, 2L)
  expect_match(conditionMessage(err), "shard 2 of 3 (datasets 3-4) failed", fixed = TRUE)
})

test_that("control$future and control$shards are checked", {
  expect_error(bulkem(list(rnorm(50)), control = list(future = NA)), class = "bulkem_error_argument",
               regexp = "control$future", fixed = TRUE)
  expect_error(bulkem(list(rnorm(50)), control = list(future = "yes")), class = "bulkem_error_argument")
  expect_error(bulkem(list(rnorm(50)), control = list(future = TRUE, shards = 0)),
               class = "bulkem_error_argument")
  expect_error(bulkem(list(rnorm(50)), control = list(shards = 2)), class = "bulkem_error_argument",
               regexp = "goes with `control$future = TRUE`", fixed = TRUE)
})

test_that("without future.apply, control$future = TRUE says to install it", {
  # future itself is checked first, so it must be there
  skip_if_not_installed("future")
  # in a child R whose requireNamespace() does not find future.apply
  res <- run_child(paste(
    "library(bulkem)",
    "real <- requireNamespace",
    "unlockBinding('requireNamespace', baseenv())",
    "assign('requireNamespace', function(package, ...)",
    "  if (identical(package, 'future.apply')) FALSE else real(package, ...), envir = baseenv())",
    "r <- tryCatch(bulkem(list(rnorm(50)), control = list(future = TRUE)),",
    "              bulkem_error_argument = function(e) conditionMessage(e))",
    "cat(r)", sep = "\n"))
  expect_identical(res$status, 0L)
  expect_match(res$stdout, "needs the future.apply package, which is not installed: install.packages(\"future.apply\")",
               fixed = TRUE)
})

test_that("a sharded noise call takes each shard's supports and equals the local call", {
  skip_if_no_future()
  d <- lapply(future_data(5), function(x) c(x, -30, 40))
  supports <- list(c(-50, 50), NULL, c(-40, 45), NULL, c(-31, 41))
  args <- list(d, family = "normal", random.inits = 4, use.gpu = FALSE, seed = 3, noise = TRUE,
               noise.support = supports)
  local <- do.call(bulkem, args)
  expect_equal(local[[3]]$noise_support, c(-40, 45))
  expect_equal(local[[2]]$noise_support, range(d[[2]]))
  with_plan({
    sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE, shards = 3))))
  }, future::sequential)
  expect_same_fits(sharded, local)
})

test_that("a sharded ex-Gaussian call equals the local call", {
  skip_if_no_future()
  set.seed(8)
  d <- lapply(1:4, function(i) c(rnorm(150, 0.4, 0.04) + rexp(150, 1 / 0.08), rnorm(100, 0.8, 0.08) + rexp(100, 1 / 0.25)))
  args <- list(d, family = "exgauss", random.inits = 4, use.gpu = FALSE, seed = 3)
  local <- do.call(bulkem, args)
  with_plan({
    sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE, shards = 2))))
  }, future::sequential)
  expect_same_fits(sharded, local)
  expect_identical(sharded[[4]]$tau, local[[4]]$tau)
})

test_that("a sharded t call, df estimated or fixed, equals the local call", {
  skip_if_no_future()
  d <- lapply(future_data(4), function(x) c(x, -30, 40))
  for (df in list(NULL, 5)) {
    args <- list(d, family = "t", random.inits = 4, use.gpu = FALSE, seed = 3, df = df)
    local <- do.call(bulkem, args)
    with_plan({
      sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE, shards = 2))))
    }, future::sequential)
    expect_same_fits(sharded, local)
    expect_identical(sharded[[1]]$df, local[[1]]$df)
  }
})
