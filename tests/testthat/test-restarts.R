# control$restarts: a dataset whose starts all collapse (or are all rejected
# by the screen) gets more starts; nothing else changes.

sepal <- iris$Sepal.Length # 150 values in tenths of a cm: 35 distinct

# The random scheme's starts (control$starts = "random", no short runs),
# all 20 of which collapse on these tied values for some seeds; the
# default search's partition starts (contiguous blocks, so 3 or more
# distinct values each) do not, and leave the restart rounds nothing to do
# here.

fit_sepal <- function(seed, restarts, starts = 20, ...) {
  quiet_bulkem(list(sepal), num.components = 3, family = "normal", seed = seed, random.inits = starts,
               use.gpu = FALSE, control = list(restarts = restarts, starts = "random", short.runs = 0, ...))[[1]]
}

# seeds whose 20 starts all fail on the tied data (found by searching, then
# checked here, so the test fails if they stop failing)
failing <- Filter(function(s) fit_sepal(s, 0)$status == "failed", 1:12)

test_that("tied data whose 20 random starts all collapse gets a sound fit by default", {
  expect_gte(length(failing), 1)
  for (s in failing) {
    none <- fit_sepal(s, 0)
    expect_identical(none$starts_run, 20L)
    expect_match(none$message, "all 20 random starts failed")
    # the default search's 20 starts find a sound fit in the first round
    dflt <- quiet_bulkem(list(sepal), num.components = 3, family = "normal", seed = s, use.gpu = FALSE,
                         control = list(restarts = 0))[[1]]
    expect_identical(dflt$status, "converged")
    expect_false(dflt$spurious)
    expect_identical(dflt$starts_run, 20L)
    f <- fit_sepal(s, restarts = bulkem:::model_limits()$restarts)
    expect_identical(f$status, "converged")
    expect_false(f$spurious)
    # more rounds of 20 were run, and the winner came from one of them
    expect_gt(f$starts_run, 20L)
    expect_identical(f$starts_run %% 20L, 0L)
    expect_gt(f$best_start, 20L)
    # a sound three-component fit: every component carries real weight
    expect_true(all(150 * f$alpha > 5))
    # the log-likelihood is the mixture's, summed here with dnorm
    dens <- vapply(sepal, function(x) sum(f$alpha * dnorm(x, f$mu, f$sigma)), numeric(1))
    expect_equal(f$loglik, sum(log(dens)), tolerance = 1e-10)
  }
})

test_that("a restart round runs exactly the starts that more random.inits would", {
  s <- failing[[1]]
  f <- fit_sepal(s, restarts = 4, keep.starts = TRUE)
  rounds <- f$starts_run / 20L
  wide <- fit_sepal(s, restarts = 0, starts = f$starts_run, keep.starts = TRUE)
  # start i is the same draw whichever round runs it
  expect_identical(f$starts, wide$starts)
  expect_identical(f[c("mu", "sigma", "alpha", "loglik", "best_start")],
                   wide[c("mu", "sigma", "alpha", "loglik", "best_start")])
  # and the rounds stopped at the first one with a sound start
  first_sound_round <- (f$best_start - 1L) %/% 20L + 1L
  expect_identical(as.integer(rounds), first_sound_round)
})

test_that("datasets with a sound fit are untouched by restarts", {
  set.seed(3)
  sets <- list(a = rnorm(200), b = c(rnorm(100), rnorm(100, 4)), tied = sepal)
  fit <- function(r) quiet_bulkem(sets, num.components = 3, family = "normal", seed = failing[[1]],
                                   use.gpu = FALSE, control = list(restarts = r, starts = "random", short.runs = 0))
  none <- fit(0)
  some <- fit(4)
  expect_identical(none$tied$status, "failed")
  expect_identical(some$tied$status, "converged")
  for (d in c("a", "b")) {
    expect_identical(none[[d]]$starts_run, 20L)
    expect_identical(none[[d]], some[[d]])
  }
})

test_that("control$restarts is checked", {
  for (bad in list(-1, 1.5, NA, "2", 1001, c(1, 2))) {
    expect_error(bulkem(list(sepal), control = list(restarts = bad)), "control\\$restarts",
                 class = "bulkem_error_argument")
  }
  expect_error(bulkem(list(sepal), random.inits = 1e7, control = list(restarts = 1000)),
               class = "bulkem_error_argument")
})
