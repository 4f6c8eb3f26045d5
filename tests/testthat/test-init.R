# bulkem()'s `init` (issue 34, item 5): starting values of the user's own,
# run as extra starts beside the random ones, in every form bulkem() takes
# them; the random starts unchanged; bad starts as classed errors naming
# `init`.

# Three Normal groups, the third of 8 observations: one random start
# (seed 4, starts = "random", no short runs) misses it. (The default
# scheme's first start, the quantile cut, finds it: these tests take the
# random scheme, whose miss the given start is to make up for.)
three_groups <- function() {
  set.seed(2)
  c(rnorm(400, 0, 1), rnorm(300, 4, 1), rnorm(8, 12, 0.2))
}

normal_loglik <- function(f, x) {
  sum(log(Reduce(`+`, lapply(seq_along(f$mu), function(m) f$alpha[m] * dnorm(x, f$mu[m], f$sigma[m])))))
}

test_that("a given start reaches the optimum the random start misses, as one more start", {
  x <- three_groups()
  given <- list(mu = c(0, 4, 12), sigma = c(1, 1, 0.2))
  plain <- bulkem(list(a = x), num.components = 3, family = "normal", seed = 4, random.inits = 1,
                  use.gpu = FALSE, control = list(keep.starts = TRUE, starts = "random", short.runs = 0))$a
  with_init <- bulkem(list(a = x), num.components = 3, family = "normal", seed = 4, random.inits = 1,
                      use.gpu = FALSE, init = given, control = list(keep.starts = TRUE, starts = "random", short.runs = 0))$a
  # the random start alone misses the small group; the given one finds it
  expect_lt(max(plain$mu), 10)
  expect_gt(max(with_init$mu), 11.5)
  expect_gt(with_init$loglik, plain$loglik + 10)
  expect_equal(with_init$loglik, normal_loglik(with_init, x), tolerance = 1e-10)
  expect_identical(with_init$starts_run, 2L)
  # numbered after every start the random, restart and refinement rounds
  # may take
  ctl <- bulkem_control()
  expect_identical(with_init$best_start, as.integer(1 * (ctl$restarts + 1) + ctl$refine * 3 + 1))
  # it began where the user said (equal weights where none were given)
  expect_equal(with_init$init_mu, given$mu)
  expect_equal(with_init$init_sigma, given$sigma)
  expect_equal(with_init$init_alpha, rep(1 / 3, 3))
  # the random start is the same draw, run the same way
  expect_identical(with_init$starts[1, ], plain$starts[1, ])
})

test_that("init takes one start, a list, starts by dataset name, and a result", {
  x <- three_groups()
  d <- list(a = x, b = x * 2 + 1)
  one <- list(mu = c(0, 4, 12), sigma = c(1, 1, 0.2), alpha = c(0.5, 0.45, 0.05))
  fit <- function(init, ...) {
    bulkem(d, num.components = 3, family = "normal", seed = 4, random.inits = 1, use.gpu = FALSE,
           init = init, control = list(starts = "random", short.runs = 0), ...)
  }
  every <- fit(one)
  expect_identical(vapply(every, function(f) f$starts_run, 0L), c(a = 2L, b = 2L))
  expect_equal(every$a$init_alpha, one$alpha)
  # two starts for every dataset: the second of them is start 3
  two <- fit(list(one, list(mu = c(-1, 3, 11), sigma = c(1, 1, 1))))
  expect_identical(vapply(two, function(f) f$starts_run, 0L), c(a = 3L, b = 3L))
  # by name: b's own start, none for a
  by_name <- fit(list(b = list(mu = c(1, 9, 25), sigma = c(2, 2, 0.4))))
  expect_identical(by_name$a$starts_run, 1L)
  expect_identical(by_name$b$starts_run, 2L)
  expect_gt(max(by_name$b$mu), 23)
  expect_identical(by_name$a, fit(NULL)$a)
  # a result: every K's fit starts its refit, which returns to its optimum
  first <- bulkem(d, num.components = 2:3, family = "normal", seed = 9, use.gpu = FALSE)
  again <- bulkem(d, num.components = 2:3, family = "normal", seed = 1, random.inits = 1,
                  use.gpu = FALSE, init = first)
  for (nm in names(d)) {
    expect_equal(again[[nm]]$by_k$loglik, first[[nm]]$by_k$loglik, tolerance = 1e-9)
    expect_identical(again[[nm]]$by_k$K, 2:3)
  }
  # a result's fits of Ks the call does not fit are left out
  three <- bulkem(d, num.components = 3, family = "normal", seed = 1, random.inits = 1, use.gpu = FALSE,
                  init = first)
  expect_equal(vapply(unclass(three), function(f) f$loglik, 0),
               vapply(unclass(first), function(f) f$by_k$loglik[2], 0), tolerance = 1e-9)
  expect_identical(vapply(unclass(three), function(f) f$starts_run, 0L), c(a = 2L, b = 2L))
})

test_that("given starts carry the noise's weight and the t's degrees of freedom", {
  set.seed(5)
  x <- c(rnorm(300, 0, 1), rnorm(200, 5, 1), runif(10, -30, 40))
  f <- bulkem(list(x), num.components = 2, family = "normal", noise = TRUE, seed = 1, random.inits = 1,
              use.gpu = FALSE, init = list(mu = c(0, 5), sigma = c(1, 1), alpha = c(0.5, 0.45), noise = 0.05))[[1]]
  expect_identical(f$starts_run, 2L)
  expect_gt(f$noise, 0.005)
  t <- bulkem(list(x), num.components = 2, family = "t", seed = 1, random.inits = 1, use.gpu = FALSE,
              init = list(mu = c(0, 5), sigma = c(1, 1), df = c(3, 30)))[[1]]
  expect_identical(t$starts_run, 2L)
  expect_error(bulkem(list(x), num.components = 2, family = "t", df = 4, use.gpu = FALSE,
                      init = list(mu = c(0, 5), sigma = c(1, 1), df = c(3, 30))),
               class = "bulkem_error_argument", regexp = "`df` is fixed")
})

test_that("a sharded call passes each shard its datasets' starts", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  x <- three_groups()
  d <- list(a = x, b = x + 1, c = x * 3)
  init <- list(b = list(mu = c(1, 5, 13), sigma = c(1, 1, 0.2)), c = list(mu = c(0, 12, 36), sigma = c(3, 3, 0.6)))
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  args <- list(d, num.components = 3, family = "normal", seed = 4, random.inits = 1, use.gpu = FALSE, init = init)
  local <- do.call(bulkem, args)
  sharded <- do.call(bulkem, c(args, list(control = list(future = TRUE, shards = 3))))
  for (nm in names(d)) expect_identical(sharded[[nm]], local[[nm]])
  expect_identical(vapply(local, function(f) f$starts_run, 0L), c(a = 1L, b = 2L, c = 2L))
})

test_that("bad starting values are classed argument errors naming init", {
  x <- three_groups()
  bad <- function(init, ..., regexp) {
    expect_error(bulkem(list(a = x), num.components = 2:3, family = "normal", use.gpu = FALSE, init = init, ...),
                 class = "bulkem_error_argument", regexp = regexp)
  }
  bad(list(mu = 1:4, sigma = rep(1, 4)), regexp = "4 components is not among num.components")
  bad(list(mu = c(0, 4), lambda = c(1, 1)), regexp = "not `lambda`")
  bad(list(mu = c(0, 4)), regexp = "`sigma` must be 2 positive")
  bad(list(mu = c(0, 4), sigma = c(1, -1)), regexp = "`sigma` must be 2 positive")
  bad(list(mu = c(0, NA), sigma = c(1, 1)), regexp = "`mu` must be")
  bad(list(mu = c(0, 4), sigma = c(1, 1), alpha = c(0.5, 0.6)), regexp = "summing to 1")
  bad(list(zz = list(mu = c(0, 4), sigma = c(1, 1))), regexp = "not fitted: \"zz\"")
  bad("start", regexp = "`init` must be a start")
  bad(list(mu = c(0, 4), sigma = c(1, 1), noise = 0.1), regexp = "not `noise`")
  expect_error(bulkem(list(a = x), family = "invgauss", use.gpu = FALSE, init = list(mu = c(-1, 4), lambda = c(1, 1))),
               class = "bulkem_error_argument", regexp = "`mu` must be positive")
  m <- list(cbind(rnorm(50), rnorm(50)))
  expect_error(bulkem(m, 1, use.gpu = FALSE, init = list(mu = c(0, 1), sigma = c(1, 1))),
               class = "bulkem_error_argument", regexp = "`sigma` must be a 2 x 2 x 1 array")
})

test_that("multivariate starts of your own run beside the random ones, numbered after them", {
  x <- as.matrix(faithful)
  best <- bulkem(list(x), num.components = 2, seed = 1, use.gpu = FALSE)[[1]]
  own <- list(mu = best$mu, sigma = best$sigma, alpha = best$alpha)
  # one EM pass from the optimum stays there; three random starts' one pass does not
  # (max.iters = 1: the fits stop there, and say so in a warning)
  one <- suppressWarnings(bulkem(list(x), num.components = 2, random.inits = 3, max.iters = 1, seed = 1,
                                 use.gpu = FALSE, init = own, control = list(restarts = 0)))[[1]]
  expect_identical(one$best_start, 4L)
  expect_identical(one$starts_run, 4L)
  expect_equal(one$loglik, best$loglik, tolerance = 1e-9)
  # with restart rounds the user's starts are numbered after all of them
  more <- suppressWarnings(bulkem(list(x), num.components = 2, random.inits = 3, max.iters = 1, seed = 1,
                                  use.gpu = FALSE, init = own, control = list(restarts = 2)))[[1]]
  expect_identical(more$best_start, 10L)
  # the random starts are the draws they are without init
  plain <- bulkem(list(x), num.components = 2, random.inits = 3, seed = 1, use.gpu = FALSE)[[1]]
  with_own <- bulkem(list(x), num.components = 2, random.inits = 3, seed = 1, use.gpu = FALSE,
                     init = list(mu = best$mu[2:1, ] + 1, sigma = best$sigma))[[1]]
  expect_identical(with_own$starts_run, plain$starts_run + 1L)
  expect_equal(with_own$loglik, plain$loglik, tolerance = 1e-9)
  # a result starts its refit, every K's fit of it with that K, by name
  d <- list(a = x, b = x[-(1:30), ])
  first <- bulkem(d, num.components = 1:3, seed = 2, use.gpu = FALSE)
  again <- bulkem(d, num.components = 1:3, random.inits = 1, seed = 9, use.gpu = FALSE, init = first)
  for (nm in names(d)) {
    for (k in 1:3) {
      expect_gte(again[[nm]]$all_k[[k]]$loglik, first[[nm]]$all_k[[k]]$loglik - 1e-6)
    }
  }
  # variables matched by name: a start with its columns in another order
  swapped <- list(mu = best$mu[, 2:1], sigma = best$sigma[2:1, 2:1, ], alpha = best$alpha)
  by_name <- suppressWarnings(bulkem(list(x), num.components = 2, random.inits = 3, max.iters = 1, seed = 1,
                                     use.gpu = FALSE, init = swapped, control = list(restarts = 0)))[[1]]
  expect_identical(by_name$best_start, 4L)
  expect_equal(by_name$loglik, best$loglik, tolerance = 1e-9)
})

test_that("a multivariate start is made into the covariance structure, and t starts take df", {
  set.seed(12)
  x <- rbind(matrix(rnorm(400), 200) %*% matrix(c(1, 0.6, 0, 0.8), 2),
             sweep(matrix(rnorm(300), 150), 2, c(4, -3), "+"))
  colnames(x) <- c("u", "v")
  full <- bulkem(list(x), num.components = 2, seed = 1, use.gpu = FALSE)[[1]]
  for (structure in c("diagonal", "spherical", "tied")) {
    searched <- bulkem(list(x), num.components = 2, covariance = structure, seed = 1, use.gpu = FALSE)[[1]]
    given <- bulkem(list(x), num.components = 2, covariance = structure, random.inits = 1, seed = 5,
                    use.gpu = FALSE, init = list(mu = full$mu, sigma = full$sigma, alpha = full$alpha))[[1]]
    expect_identical(given$status, "converged", info = structure)
    expect_gte(given$loglik, searched$loglik - 1e-6 * abs(searched$loglik))
    if (structure != "tied") expect_equal(given$sigma[1, 2, ], c(0, 0), info = structure)
  }
  tf <- bulkem(list(x), num.components = 2, family = "t", random.inits = 2, seed = 3, use.gpu = FALSE,
               init = list(mu = full$mu, sigma = full$sigma, df = 12))[[1]]
  expect_identical(tf$status, "converged")
  expect_error(bulkem(list(x), num.components = 2, family = "t", df = 5, use.gpu = FALSE,
                      init = list(mu = full$mu, sigma = full$sigma, df = 12)),
               class = "bulkem_error_argument", regexp = "fixed by bulkem")
})

test_that("bad multivariate starts are classed argument errors naming init", {
  x <- as.matrix(faithful)
  s <- array(c(diag(2), diag(2)), c(2, 2, 2))
  bad <- function(init, ..., regexp) {
    expect_error(bulkem(list(a = x), num.components = 2:3, use.gpu = FALSE, init = init, ...),
                 class = "bulkem_error_argument", regexp = regexp)
  }
  bad(list(mu = matrix(0, 4, 2), sigma = array(diag(2), c(2, 2, 4))), regexp = "4 components is not among")
  bad(list(mu = matrix(0, 2, 3), sigma = s), regexp = "`mu` must be a K x 2 matrix")
  bad(list(mu = matrix(c(1, NA, 3, 4), 2), sigma = s), regexp = "`mu` must be a K x 2 matrix")
  bad(list(mu = matrix(1:4, 2), sigma = diag(2)), regexp = "`sigma` must be a 2 x 2 x 2 array")
  bad(list(mu = matrix(1:4, 2), sigma = array(c(1, 2, 2, 1, diag(2)), c(2, 2, 2))),
      regexp = "sigma\\[, , 1\\]` is not a symmetric positive definite")
  bad(list(mu = matrix(1:4, 2), sigma = array(c(1, 0.5, 0, 1, diag(2)), c(2, 2, 2))),
      regexp = "not a symmetric")
  bad(list(mu = matrix(1:4, 2), sigma = s, alpha = c(0.5, 0.6)), regexp = "summing to 1")
  bad(list(mu = matrix(1:4, 2), sigma = s, lambda = 1), regexp = "not `lambda`")
  bad(list(mu = matrix(1:4, 2), sigma = s, df = 4), regexp = "not `df`")
  bad(list(zz = list(mu = matrix(1:4, 2), sigma = s)), regexp = "not fitted: \"zz\"")
  bad("start", regexp = "`init` for multivariate data must be a start")
})
