# R asks the compiled core for its limits and names rather than keeping
# copies; these tests fail if the two could disagree.

test_that("R's largest K, degrees of freedom and shape names are the core's", {
  lim <- bulkem:::model_limits()
  kmax <- lim$max_components
  expect_true(is.integer(kmax) && kmax >= 2)
  # K means, K shapes, K - 1 weights
  expect_identical(lim$free_parameters, 3L * seq_len(kmax) - 1L)
  expect_identical(unname(lim$shape_names[c("invgauss", "normal")]), c("lambda", "sigma"))
  # validation accepts exactly 1 .. kmax, and says so with the core's number
  expect_error(bulkem(list(rnorm(100)), num.components = kmax + 1),
               paste0("from 1 to ", kmax), fixed = TRUE)
  set.seed(51)
  x <- rnorm(3 * kmax + 20)
  f <- quiet_bulkem(list(x), num.components = kmax, random.inits = 1, family = "normal",
              use.gpu = FALSE, seed = 1)[[1]]
  expect_length(f$mu, kmax)
  # the core's AIC uses the same count as logLik() in R
  if (f$fit_success) {
    expect_identical(attr(logLik(f), "df"), lim$free_parameters[kmax])
    expect_equal(f$aic, AIC(logLik(f)), tolerance = 1e-12)
  }
  f2 <- bulkem(list(c(rnorm(100), rnorm(100, 5))), family = "normal", random.inits = 2,
               use.gpu = FALSE, seed = 1)[[1]]
  expect_identical(attr(logLik(f2), "df"), 5L)
  expect_equal(f2$bic, BIC(logLik(f2)), tolerance = 1e-12)
})

test_that("R's observations per component are the core's: a dataset with fewer is invalid", {
  per <- bulkem:::model_limits()$obs_per_component
  expect_true(is.integer(per) && per >= 1)
  set.seed(52)
  f <- quiet_bulkem(list(short = rnorm(2 * per - 1), enough = rnorm(2 * per)), num.components = 2,
                    family = "normal", random.inits = 2, use.gpu = FALSE, seed = 1)
  expect_identical(f$short$status, "invalid")
  expect_match(f$short$message, paste0("at least ", 2 * per, " \\(", per, " per component\\)"))
  expect_false(identical(f$enough$status, "invalid"))
})
