# Progress through progressr and the default thread count (issue 11,
# item 7).

# recording_handler() and with_recorded_progress(): helper-progress.R.

test_that("the reporter turns the engine's reports into monotone progressr steps ending at 1", {
  rec <- recording_handler()
  f <- function() {
    r <- bulkem:::progress_reporter()
    r$update(10, 100)
    r$update(5, 100) # the engine's count must never move progress back
    r$update(0, 0) # nothing counted yet: ignored
    r$update(50.5, 100)
    r$update(130, 100) # more than the total: capped at 1
    r$finish()
    r$finish()
  }
  with_recorded_progress(f(), rec)
  seen <- rec$seen()
  updates <- seen[seen$type == "update", ]
  steps <- bulkem:::progress_steps
  expect_identical(seen$type[1], "initiate")
  expect_identical(as.numeric(updates$step), c(0.1, 0.505, 1) * steps)
  expect_true(all(seen$steps == steps))
  expect_identical(seen$type[nrow(seen)], "finish")
})

test_that("a fit reports its progress through progressr while the engine works", {
  rec <- recording_handler()
  set.seed(12)
  d <- replicate(24, c(rnorm(1500), rnorm(1500, 2.5)), simplify = FALSE)
  # plain EM, so that the engine works for several of the 0.25 s between
  # reports (32 starts: 1.5 s on one Zen 5 core with the AVX-512 E-step;
  # 16 starts took 1.3 s before it and 0.74 s with it; with SQUAREM, 0.16 s,
  # no report at all)
  with_recorded_progress(
    fits <- bulkem(d, random.inits = 32, max.iters = 1000, epsilon = 1e-12, family = "normal",
                   use.gpu = FALSE, control = list(threads = 1, accelerate = FALSE)),
    rec)
  expect_length(fits, 24)
  seen <- rec$seen()
  frac <- seen$step / seen$steps
  expect_identical(seen$type[1], "initiate")
  expect_identical(frac[1], 0)
  expect_false(is.unsorted(frac))
  expect_identical(frac[length(frac)], 1)
  expect_identical(seen$type[nrow(seen)], "finish")
  # the engine ran for seconds: some reports came while it worked
  expect_true(any(frac > 0 & frac < 1))
})

test_that("without handlers nothing is shown, and verbose only adds its two lines", {
  set.seed(13)
  x <- b1_dataset(300)
  expect_silent(bulkem(list(x), random.inits = 2, use.gpu = FALSE))
  msgs <- capture_messages(bulkem(list(x), random.inits = 2, use.gpu = FALSE, verbose = TRUE))
  expect_length(msgs, 2)
  expect_false(any(grepl("\r", msgs, fixed = TRUE)))
  # a call stopped by a bad argument shows no progress at all
  rec <- recording_handler()
  stopped <- tryCatch(with_recorded_progress(bulkem(list(x), control = list(threads = 0)), rec),
                      bulkem_error_argument = function(e) "stopped")
  expect_identical(stopped, "stopped")
  expect_null(rec$seen())
})

test_that("a handler that leaves the progress report by a jump stops the fit with an error", {
  # progress is signalled with the caller's handlers in place, so a handler
  # may invoke a restart (or be an exiting one) while the engine runs: the
  # jump cannot cross the running fit, which stops; the caller gets an error
  set.seed(15)
  d <- replicate(24, c(rnorm(1500), rnorm(1500, 2.5)), simplify = FALSE)
  # plain EM: long enough for reports while the engine runs (above)
  run <- function() bulkem(d, random.inits = 32, max.iters = 1000, epsilon = 1e-12, family = "normal",
                           use.gpu = FALSE, control = list(threads = 1, accelerate = FALSE))
  old <- options(progressr.enable = TRUE)
  on.exit(options(old))
  leave_on_update <- function(p) if (identical(p$type, "update")) invokeRestart("leave")
  e <- tryCatch(withRestarts(withCallingHandlers(run(), progression = leave_on_update),
                             leave = function() "left"),
                error = identity)
  expect_s3_class(e, "error")
  expect_match(conditionMessage(e), "left bulkem's progress report by a jump")
  # R goes on, and so does bulkem
  expect_true(bulkem(d[1:2], random.inits = 2, family = "normal", use.gpu = FALSE)[[1]]$fit_success)
})

test_that("the default thread count is parallelly::availableCores(), so options(mc.cores) limits it", {
  set.seed(14)
  d <- list(b1_dataset(200), b1_dataset(200))
  old <- options(mc.cores = 1)
  on.exit(options(old))
  one <- bulkem(d, random.inits = 2, use.gpu = FALSE)
  expect_identical(attr(one, "threads"), 1L)
  # control$threads still decides when given
  two <- bulkem(d, random.inits = 2, use.gpu = FALSE, control = list(threads = 2))
  expect_identical(attr(two, "threads"), 2L)
  options(old)
  all <- bulkem(d, random.inits = 2, use.gpu = FALSE)
  expect_identical(attr(all, "threads"), as.integer(parallelly::availableCores()))
})
