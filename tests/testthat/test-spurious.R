# The spurious-solution screen, the convergence warning, starts_at_best and
# the choice of K among sound fits.

nile <- as.numeric(datasets::Nile)

# A component is a spike when it is small (few expected observations) and
# narrow relative to the widest: what the screen is meant to catch, written
# out here independently of the package.
has_spike <- function(f, count = 5, ratio = 0.1) {
  sd <- f$sigma
  any(length(nile) * f$alpha < count & sd < ratio * max(sd))
}

test_that("a spike that wins without the screen is screened out, and said so", {
  off <- bulkem(list(nile), num.components = 3, random.inits = 200, family = "normal", seed = 1,
                use.gpu = FALSE, control = list(spurious.ratio = 0, spurious.count = 0, spurious.distinct = 0))[[1]]
  # the trap the screen is for: with many starts, the best likelihood is a spike
  expect_true(has_spike(off))
  expect_identical(off$spurious_starts, 0L)
  on <- bulkem(list(nile), num.components = 3, random.inits = 200, family = "normal", seed = 1,
               use.gpu = FALSE)[[1]]
  expect_false(has_spike(on))
  expect_false(on$spurious)
  expect_gt(on$spurious_starts, 0L)
  # the rejected spike had the higher likelihood, and the fit says how much
  expect_equal(on$loglik_spurious, off$loglik, tolerance = 1e-9)
  expect_gt(on$loglik_spurious, on$loglik)
  # with the same seed the starts are the same: the screen only changes the winner
  expect_identical(on$starts_ok, off$starts_ok)
})

test_that("if every start fails the screen, the best is returned and marked spurious", {
  set.seed(61)
  x <- c(rnorm(150, 0, 1), rnorm(150, 5, 2))
  # a screen so strict that no two-component fit with unequal sds passes
  # (mixed starts without short runs, the search before short runs, so that
  # the restart rounds' starts are the draws after the first round's)
  expect_warning(f <- bulkem(list(x), random.inits = 6, family = "normal", seed = 2, use.gpu = FALSE,
                             control = list(starts = "mixed", short.runs = 0, spurious.ratio = 0.99))[[1]],
                 "1 are marked spurious", class = "bulkem_warning_convergence")
  # the warning and the fit say which component, and without the data kept
  # how to see its observations
  w <- tryCatch(bulkem(list(x), random.inits = 6, family = "normal", seed = 2, use.gpu = FALSE,
                       control = list(starts = "mixed", short.runs = 0, spurious.ratio = 0.99)), warning = function(w) w)
  expect_match(conditionMessage(w), "(e.g. dataset 1: a component of weight ", fixed = TRUE)
  expect_match(conditionMessage(w), "control = list(keep.data = TRUE) to see which observations", fixed = TRUE)
  kept <- quiet_bulkem(list(x), random.inits = 6, family = "normal", seed = 2, use.gpu = FALSE,
                       control = list(starts = "mixed", short.runs = 0, spurious.ratio = 0.99, keep.data = TRUE))[[1]]
  # the narrower component (the screen's culprit with two equal-sized ones is
  # the smaller), and the observations it is the most likely component of
  small <- which.min(kept$alpha)
  mine <- which(predict(kept, x)$component == small)
  expect_output(print(kept), sprintf("spurious: a component of %d observations from %s to %s", length(mine),
                                     format(min(x[mine]), digits = 4), format(max(x[mine]), digits = 4)))
  expect_identical(summary(bulkem:::new_bulkem(list(kept)))$spurious, TRUE)
  # every start rejected: control$restarts ran its rounds of 6 more
  expect_identical(f$starts_run, 6L * (1L + bulkem:::model_limits()$restarts))
  plain <- bulkem(list(x), random.inits = f$starts_run, family = "normal", seed = 2, use.gpu = FALSE,
                  control = list(starts = "mixed", short.runs = 0))[[1]]
  expect_true(f$spurious)
  expect_identical(f$spurious_starts, f$starts_ok)
  expect_true(is.na(f$loglik_spurious))
  expect_match(f$message, "spurious")
  # the best of the rejected starts: the fit the screen leaves alone otherwise
  expect_identical(f$best_start, plain$best_start)
  expect_identical(f$mu, plain$mu)
  expect_false(plain$spurious)
  expect_identical(plain$spurious_starts, 0L)
})

test_that("thresholds are checked and named", {
  x <- list(rnorm(50))
  for (bad in list(list(spurious.ratio = -1), list(spurious.ratio = 2), list(spurious.count = NA),
                   list(spurious.count.ratio = "a"), list(spurious.count = Inf))) {
    expect_error(bulkem(x, control = bad), paste0("control$", names(bad)), fixed = TRUE,
                 class = "bulkem_error_argument")
  }
})

test_that("starts_at_best counts the starts that reached the winning log-likelihood", {
  # Nile as three Normals has several optima; screen off, so every finished
  # start is a candidate and keep.starts shows them all
  f <- bulkem(list(nile), num.components = 3, random.inits = 60, family = "normal", seed = 3,
              use.gpu = FALSE, max.iters = 5000, epsilon = 1e-10,
              control = list(keep.starts = TRUE, spurious.ratio = 0, spurious.count = 0,
                             spurious.distinct = 0))[[1]]
  s <- f$starts
  ok <- s$status %in% c("converged", "max_iters")
  best <- max(s$loglik[ok])
  expect_equal(f$loglik, best, tolerance = 1e-9)
  reached <- ok & s$loglik >= best - 1e-6 * (1 + abs(best))
  expect_identical(f$starts_at_best, sum(reached))
  expect_gte(f$starts_at_best, 1L)
  expect_lt(f$starts_at_best, f$starts_ok) # other starts end at other optima
})

test_that("one warning per call counts what did not end well, and none when all did", {
  set.seed(63)
  good <- c(rnorm(200), rnorm(200, 6))
  # na.pass keeps the NA, so that the second dataset is invalid
  w <- tryCatch(bulkem(list(good, c(1, NA, 3, 4, 5, 6, 7), good + 1), max.iters = 2, random.inits = 2,
                       family = "normal", use.gpu = FALSE, seed = 1, na.action = na.pass),
                warning = function(w) w)
  expect_s3_class(w, "bulkem_warning_convergence")
  expect_s3_class(w, "bulkem_warning")
  expect_null(conditionCall(w))
  expect_match(conditionMessage(w), "^of 3 fits, 2 stopped at max.iters.*, 1 were invalid")
  expect_identical(w$counts, c(max_iters = 2, failed = 0, spurious = 0, invalid = 1, saddle = 0))
  # a fit that converged to a saddle point (detected by the core's observed
  # information, tests in src/rust/core/tests/em.rs) is counted as such
  w <- tryCatch(bulkem:::warn_convergence(c(max_iters = 0, failed = 0, spurious = 0, invalid = 0, saddle = 2), 9),
                warning = function(w) w)
  expect_s3_class(w, "bulkem_warning_convergence")
  expect_match(conditionMessage(w), "^of 9 fits, 2 converged to a saddle point, not a maximum")
  # large counts are written out in full, not as 2e+05
  w <- tryCatch(bulkem:::warn_convergence(c(max_iters = 2e5, failed = 1234, spurious = 0, invalid = 0, saddle = 0), 1e6),
                warning = function(w) w)
  expect_match(conditionMessage(w), "^of 1,000,000 fits, 200,000 stopped at max.iters.*, 1,234 failed")
  expect_silent(bulkem(list(good), random.inits = 3, family = "normal", use.gpu = FALSE, seed = 1))
})

test_that("inverse Gaussian datasets invalid for values <= 0: the warning counts them and gives the subset", {
  set.seed(65)
  good <- rinvgauss_msh(200, 1, 3)
  # two with a value <= 0; one also too short to fit, which dropping values
  # would not cure; one with a missing value kept (na.pass): not counted
  d <- list(a = good, neg = c(good, -1), zero = c(0, good), short = c(-1, 2), na = c(good, NA, -2))
  w <- tryCatch(bulkem(d, random.inits = 3, use.gpu = FALSE, seed = 1, na.action = na.pass),
                warning = function(w) w)
  expect_s3_class(w, "bulkem_warning_convergence")
  expect_identical(w$counts[["invalid"]], 4)
  bad <- vapply(d, function(x) length(x) >= 6 && all(is.finite(x)) && any(x <= 0), NA)
  expect_identical(w$not_positive, sum(bad))
  expect_identical(w$not_positive, 2L)
  expect_match(conditionMessage(w), paste0("4 were invalid (the data cannot be fitted; 2 of them because of values ",
                                           "<= 0, which the inverse Gaussian cannot fit: drop them with ",
                                           "x[x > 0] on each dataset)"), fixed = TRUE)
  # from a formula: the subset, named by the response, that cures them
  df <- data.frame(rt = c(d$a, d$neg, d$zero), subject = rep(c("a", "neg", "zero"), c(200, 201, 201)))
  w <- tryCatch(bulkem(rt ~ subject, data = df, random.inits = 3, use.gpu = FALSE, seed = 1),
                warning = function(w) w)
  expect_match(conditionMessage(w), "2 of them because of values <= 0, which the inverse Gaussian cannot fit: drop them with subset = rt > 0",
               fixed = TRUE)
  expect_silent(ok <- bulkem(rt ~ subject, data = df, subset = rt > 0, random.inits = 3, use.gpu = FALSE, seed = 1))
  expect_true(all(vapply(ok, `[[`, "", "status") == "converged"))
  # the Normal fits such data: nothing to say
  expect_silent(bulkem(d[c("a", "neg")], random.inits = 3, family = "normal", use.gpu = FALSE, seed = 1))
})

test_that("BIC chooses only among converged fits that pass the screen", {
  set.seed(64)
  x <- c(rnorm(300, 0, 1), rnorm(300, 4, 1), rnorm(300, 8, 1))
  # two EM updates: K = 2 and 3 stop at max.iters; K = 1 (closed form) converges
  f <- quiet_bulkem(list(x), num.components = 1:3, max.iters = 2, random.inits = 3,
                    family = "normal", use.gpu = FALSE, seed = 1)[[1]]
  expect_identical(f$by_k$status, c("converged", "max_iters", "max_iters"))
  expect_lt(min(f$by_k$bic[2:3]), f$by_k$bic[1]) # the lower BIC is not converged...
  expect_identical(f$num_components, 1L)          # ...so it is not chosen
  # no K converged: the lowest BIC is returned, and its message says so
  g <- quiet_bulkem(list(x), num.components = 2:3, max.iters = 2, random.inits = 3,
                    family = "normal", use.gpu = FALSE, seed = 1)[[1]]
  expect_identical(g$bic, min(g$by_k$bic))
  expect_match(g$message, "no K gave a converged fit that passes the spurious-solution screen")
})

test_that("a spike on heaped values is spurious: heights to the centimetre (MASS::survey)", {
  skip_if_not_installed("MASS")
  h <- as.numeric(stats::na.omit(MASS::survey$Height))
  # the number of distinct values within two sds of each component's mean, by hand
  cover <- function(f) {
    sd <- sqrt(f$mu^3 / f$lambda)
    vapply(seq_along(f$mu), function(m) length(unique(h[abs(h - f$mu[m]) <= 2 * sd[m]])), 0L)
  }
  fit <- function(distinct) {
    suppressWarnings(bulkem(list(h), num.components = 2, random.inits = 1000, seed = 1, use.gpu = FALSE,
                            control = list(threads = 2, spurious.distinct = distinct)))[[1]]
  }
  # the rule off (as before): the best "admissible" fit is 16.5 people on 165 cm
  old <- fit(0)
  expect_false(old$spurious)
  expect_lt(min(cover(old)), 3)
  # the default rejects it, and returns the best fit whose components are real
  new <- fit(3)
  expect_false(new$spurious)
  expect_gte(min(cover(new)), 3)
  expect_gt(new$spurious_starts, old$spurious_starts)
  expect_lt(new$loglik, old$loglik)
  expect_identical(bulkem_control()$spurious.distinct, 3)
  expect_error(bulkem_control(spurious.distinct = 2.5), class = "bulkem_error_argument",
               regexp = "control\\$spurious.distinct")
  expect_error(bulkem_control(spurious.distinct = 9), class = "bulkem_error_argument")
})
