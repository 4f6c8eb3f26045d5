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
