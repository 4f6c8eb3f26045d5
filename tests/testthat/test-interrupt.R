# A long fit stops soon after R asks (Ctrl-C or setTimeLimit), with R's own
# condition raised once the workers have stopped, and R goes on.

# R code for a child process: `long()`, a CPU fit of minutes.
long_fit_code <- '
  library(bulkem)
  set.seed(1)
  d <- replicate(400, c(rexp(1400, 1), rexp(600, 0.2)), simplify = FALSE)
  long <- function() bulkem(d, random.inits = 200, max.iters = 1000, epsilon = 1e-300,
                            use.gpu = FALSE, control = list(threads = 2))
  # SIGINT to this process `after` seconds from now, as Ctrl-C sends it
  interrupt_in <- function(after) system(sprintf("sh -c \'sleep %g; kill -INT %d\' &", after, Sys.getpid()))
  small_fit_ok <- function() bulkem(d[1], random.inits = 2)[[1]]$fit_success
'

test_that("setTimeLimit stops a long fit and the session survives", {
  set.seed(1)
  d <- replicate(400, b1_dataset(2000), simplify = FALSE)
  setTimeLimit(elapsed = 1, transient = TRUE)
  on.exit(setTimeLimit(elapsed = Inf), add = TRUE)
  # far more work than a second: 400 datasets x 200 starts (minutes)
  # on the CPU: a GPU would finish this in a second (test-gpu.R interrupts GPU runs)
  started <- proc.time()[["elapsed"]]
  e <- tryCatch(bulkem(d, random.inits = 200, max.iters = 1000, epsilon = 1e-300,
                       use.gpu = FALSE, control = list(threads = 2)),
                error = function(e) e)
  setTimeLimit(elapsed = Inf)
  expect_lt(proc.time()[["elapsed"]] - started, 5)
  # R's own error, with no internal call
  expect_s3_class(e, "error")
  expect_false(inherits(e, "bulkem_error"))
  expect_identical(conditionMessage(e), "reached elapsed time limit")
  expect_null(conditionCall(e))
  # still usable afterwards, with no worker left running
  f <- bulkem(d[1], random.inits = 2)[[1]]
  expect_true(f$fit_success)
})

test_that("a time limit while R builds the fits' lists stops the call as cleanly", {
  # R's main thread builds each fit's R list while the workers go on
  # (src/rust/src/fit.rs); a limit that fires then is caught there too
  set.seed(2)
  d <- replicate(60000, rnorm(30), simplify = FALSE)
  for (limit in c(0.1, 0.15, 0.2, 0.25, 0.3)) {
    setTimeLimit(elapsed = limit, transient = TRUE)
    started <- proc.time()[["elapsed"]]
    e <- tryCatch(bulkem(d, random.inits = 1, max.iters = 3, family = "normal", use.gpu = FALSE,
                         control = list(threads = 2)),
                  error = function(e) e, warning = function(w) w)
    setTimeLimit(elapsed = Inf)
    expect_lt(proc.time()[["elapsed"]] - started, limit + 5)
    # stopped with R's own error, or done before the limit
    if (inherits(e, "error")) {
      expect_identical(conditionMessage(e), "reached elapsed time limit")
    } else {
      expect_s3_class(e, "warning")
    }
  }
  f <- bulkem(d[1:3], random.inits = 2, family = "normal", use.gpu = FALSE)
  expect_true(all(vapply(f, `[[`, TRUE, "fit_success")))
})

test_that("a time limit caught by the caller prints nothing", {
  skip_on_os("windows")
  out <- run_child(paste(long_fit_code, '
    local({
      setTimeLimit(elapsed = 1, transient = TRUE)
      e <- tryCatch(long(), error = function(e) e)
      setTimeLimit(elapsed = Inf)
      cat("CAUGHT", conditionMessage(e), "\\n")
    })
    cat("ALIVE", small_fit_ok(), "\\n")'))
  expect_identical(out$stdout, "CAUGHT reached elapsed time limit \nALIVE TRUE \n")
  expect_identical(out$stderr, "")
  # not caught: R's message, with no internal call
  out <- run_child(paste(long_fit_code, '
    local({ setTimeLimit(elapsed = 1, transient = TRUE); long() })'))
  expect_identical(out$stderr, "Error: reached elapsed time limit\nExecution halted\n")
})

test_that("Ctrl-C is R's interrupt: tryCatch(interrupt = ) catches it and the session goes on", {
  skip_on_os("windows")
  out <- run_child(paste(long_fit_code, '
    started <- proc.time()[["elapsed"]]
    interrupt_in(1)
    r <- tryCatch(long(), interrupt = function(i) {
      cat("caught interrupt", class(i), "\\n")
      "interrupted"
    })
    cat("RESULT", r, "AFTER", proc.time()[["elapsed"]] - started < 5, "\\n")
    cat("ALIVE", small_fit_ok(), "\\n")'))
  expect_identical(out$stdout, "caught interrupt interrupt condition \nRESULT interrupted AFTER TRUE \nALIVE TRUE \n")
  expect_identical(out$stderr, "")
})

test_that("Ctrl-C nobody handles ends a script as R's own Ctrl-C does, after calling handlers", {
  skip_on_os("windows")
  code <- function(what) paste(long_fit_code, sprintf('
    interrupt_in(1)
    withCallingHandlers(%s, interrupt = function(i) cat("handler saw it\\n"))
    cat("not reached\\n")', what))
  ours <- run_child(code("long()"))
  rs <- run_child(code("Sys.sleep(30)"))
  expect_identical(ours$stdout, "handler saw it\n")
  expect_identical(ours$stdout, rs$stdout)
  expect_identical(ours$stderr, rs$stderr)
  expect_identical(ours$status, rs$status)
})
