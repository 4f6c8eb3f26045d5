test_that("the CPU E-step gives the same fits in AVX-512, AVX2 and plain loops", {
  # src/rust/core/src/estep_avx512.rs and estep_avx2.rs must give the block
  # loops' bits. BULKEM_CPU_VECTORS caps the width a process uses (read
  # once), so each width runs in a child process; on a CPU without the
  # wider instructions the capped runs fall back to what it has, and the
  # comparison still holds.
  code <- '
    set.seed(5)
    d <- c(replicate(4, c(statmod::rinvgauss(120, 1, 4), statmod::rinvgauss(90, 3, 12)), simplify = FALSE),
           list(statmod::rinvgauss(37, 2, 5), statmod::rinvgauss(64, 1, 2)))
    n <- replicate(4, c(rnorm(150), rnorm(100, 3, 0.7), rnorm(61, 6)), simplify = FALSE)
    fits <- list(
      ig = bulkem::bulkem(d, num.components = 1:4, random.inits = 4, seed = 3, use.gpu = FALSE,
                          control = list(keep.starts = TRUE)),
      normal = bulkem::bulkem(n, num.components = 3, family = "normal", random.inits = 4, seed = 3,
                              use.gpu = FALSE, control = list(keep.starts = TRUE, accelerate = FALSE)))
    fits <- lapply(fits, function(f) { attr(f, "timings") <- NULL; attr(f, "elapsed") <- NULL; f })
    saveRDS(fits, Sys.getenv("OUT_RDS"))
  '
  run_width <- function(width) {
    out <- tempfile(fileext = ".rds")
    on.exit(unlink(out))
    env <- c(paste0("OUT_RDS=", out), if (!is.null(width)) paste0("BULKEM_CPU_VECTORS=", width))
    res <- run_child(code, env)
    expect_identical(res$status, 0L, info = res$stderr)
    readRDS(out)
  }
  widest <- run_width(NULL)
  expect_identical(run_width("avx2"), widest)
  expect_identical(run_width("none"), widest)
  # the comparison sees real fits, not empty ones
  expect_length(widest$ig, 6)
  expect_true(all(vapply(widest$normal, `[[`, logical(1), "fit_success")))
})
