# A long fit stops soon after R asks (Ctrl-C or setTimeLimit), and R goes on.

test_that("setTimeLimit stops a long fit and the session survives", {
  set.seed(1)
  d <- replicate(400, b1_dataset(2000), simplify = FALSE)
  setTimeLimit(elapsed = 1, transient = TRUE)
  on.exit(setTimeLimit(elapsed = Inf), add = TRUE)
  # far more work than a second: 400 datasets x 200 starts (minutes)
  # on the CPU: a GPU would finish this in a second (test-gpu.R interrupts GPU runs)
  expect_error(bulkem(d, random.inits = 200, max.iters = 1000, epsilon = 1e-300,
                      use.gpu = FALSE, control = list(threads = 2)))
  setTimeLimit(elapsed = Inf)
  # still usable afterwards, with no worker left running
  f <- bulkem(d[1], random.inits = 2)[[1]]
  expect_true(f$fit_success)
})
