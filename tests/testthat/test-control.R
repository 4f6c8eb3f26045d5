# bulkem_control(): every control setting checked once, one object; a plain
# list goes through it, so both give the same fits.

test_that("bulkem_control() fills the defaults, records what was given, and a list is the same", {
  ctl <- bulkem_control(threads = 1, keep.data = TRUE)
  expect_s3_class(ctl, "bulkem_control")
  expect_identical(attr(ctl, "given"), c("threads", "keep.data"))
  expect_identical(ctl$threads, 1L)
  expect_identical(ctl$engine, "auto")
  expect_identical(ctl$restarts, 4L)
  expect_identical(ctl$spurious.ratio, 0.001)
  expect_identical(ctl$devices, integer(0))
  expect_identical(bulkem:::check_control(list(threads = 1, keep.data = TRUE)), ctl)
  # a NULL element is the default, as before
  expect_identical(bulkem:::check_control(list(threads = 1, devices = NULL))$devices, integer(0))
  expect_output(print(ctl), "bulkem control settings")
})

test_that("bulkem() gives the same fits with a control list and with bulkem_control()", {
  set.seed(3)
  d <- list(a = c(rnorm(150), rnorm(100, 4)), b = rnorm(90, 2))
  f1 <- bulkem(d, family = "normal", random.inits = 4, seed = 9, use.gpu = FALSE,
               control = list(threads = 2, accelerate = FALSE, keep.starts = TRUE))
  f2 <- bulkem(d, family = "normal", random.inits = 4, seed = 9, use.gpu = FALSE,
               control = bulkem_control(threads = 2, accelerate = FALSE, keep.starts = TRUE))
  strip <- function(f) {
    attributes(f)[c("elapsed", "timings")] <- NULL
    f
  }
  expect_identical(strip(f1), strip(f2))
  expect_false(identical(f1$a$loglik, NA_real_))
  expect_true(is.data.frame(f1$a$starts))
})

test_that("a bad control setting is a classed error naming it, from either form", {
  expect_error(bulkem_control(threads = 0), class = "bulkem_error_argument", regexp = "control\\$threads")
  expect_error(bulkem(list(rnorm(50)), control = list(engine = "gpu")),
               class = "bulkem_error_argument", regexp = "control\\$engine")
  expect_error(bulkem(list(rnorm(50)), control = list(thread = 2)),
               class = "bulkem_error_argument", regexp = "unknown `control` setting\\(s\\): thread")
  expect_error(bulkem(list(rnorm(50)), control = 3), class = "bulkem_error_argument",
               regexp = "bulkem_control")
  expect_error(bulkem_control(tuning = list(1)), class = "bulkem_error_argument", regexp = "control\\$tuning")
  # the compiled core checks the knobs' names and values
  expect_error(bulkem(list(rnorm(50)), family = "normal", use.gpu = FALSE,
                      control = list(threads = 1, tuning = list(no_such = 1))),
               class = "bulkem_error_argument", regexp = "unknown tuning knob `no_such`")
  expect_error(bulkem(list(rnorm(50)), family = "normal", use.gpu = FALSE,
                      control = list(threads = 1, tuning = list(chunk_bytes = -1))),
               class = "bulkem_error_argument", regexp = "positive whole number")
})

test_that("tuning knobs given in control lay the work out without changing a fit", {
  set.seed(4)
  d <- lapply(1:30, function(i) c(rnorm(80), rnorm(60, 3)))
  fit <- function(tuning) {
    f <- bulkem(d, family = "normal", random.inits = 3, seed = 2, use.gpu = FALSE,
                control = list(threads = 2, tuning = tuning))
    attributes(f) <- NULL
    f
  }
  base <- fit(list())
  # every list built after the engine, or reserved on the CPU too, or ahead
  for (during in c("0", "reserve", "ahead")) {
    expect_identical(fit(list(result_during = during)), base)
  }
})

test_that("bulkem_bootstrap() takes bulkem_control() as bulkem() does", {
  set.seed(5)
  d <- list(c(rnorm(100), rnorm(80, 5)), rnorm(70, 1))
  fits <- bulkem(d, family = "normal", random.inits = 3, seed = 1, use.gpu = FALSE,
                 control = list(threads = 1, keep.data = TRUE))
  b1 <- bulkem_bootstrap(fits, B = 9, seed = 3, random.inits = 3, use.gpu = FALSE,
                         control = list(threads = 1))
  b2 <- bulkem_bootstrap(fits, B = 9, seed = 3, random.inits = 3, use.gpu = FALSE,
                         control = bulkem_control(threads = 1, keep.data = TRUE))
  same <- function(b) {
    b <- as.data.frame(b)
    attributes(b)[c("costs", "elapsed")] <- NULL
    b
  }
  expect_identical(same(b1), same(b2))
  expect_false(anyNA(b1$std.error))
})

test_that("control$starts: checked, by family the default, every scheme reproducible", {
  # NULL: partition starts, mixed for the ex-Gaussian (chosen in the core)
  expect_null(bulkem_control()$starts)
  expect_error(bulkem_control(starts = "kmeans"), class = "bulkem_error_argument", regexp = "control\\$starts")
  expect_error(bulkem(list(rnorm(50)), control = list(starts = NA)), class = "bulkem_error_argument",
               regexp = "control\\$starts")
  expect_error(bulkem_control(starts = c("random", "mixed")), class = "bulkem_error_argument",
               regexp = "control\\$starts")
  set.seed(4)
  d <- list(a = c(rnorm(190), rnorm(10, 6)), b = c(rnorm(60), rnorm(60, 3)))
  strip <- function(f) {
    attributes(f)[c("elapsed", "timings", "threads")] <- NULL
    f
  }
  # without short runs, so that start i is draw i
  fit <- function(..., threads = 2, family = "normal") {
    strip(bulkem(d, family = family, random.inits = 6, seed = 5, use.gpu = FALSE,
                 control = list(threads = threads, keep.starts = TRUE, short.runs = 0, ...)))
  }
  base <- fit(starts = "random")
  expect_identical(fit(), fit(starts = "partition"))
  normal <- d
  d <- lapply(normal, function(x) x + 10)
  expect_identical(fit(family = "exgauss"), fit(family = "exgauss", starts = "mixed"))
  expect_false(identical(fit(family = "exgauss"), fit(family = "exgauss", starts = "partition")))
  d <- normal
  for (scheme in c("partition", "mixed")) {
    f <- fit(starts = scheme)
    expect_identical(fit(starts = scheme, threads = 1), f)
    expect_true(all(vapply(f, function(x) isTRUE(x$fit_success), NA)))
    # start 0 of a partition scheme: the halves of the sorted data, weights 1/2
    expect_equal(unlist(f$b$starts[1, c("init_alpha_1", "init_alpha_2")], use.names = FALSE), c(0.5, 0.5))
    # mixed: the odd starts are the random scheme's
    if (scheme == "mixed") {
      expect_identical(f$a$starts[c(2, 4, 6), ], base$a$starts[c(2, 4, 6), ], ignore_attr = TRUE)
    }
  }
})
