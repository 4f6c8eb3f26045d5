# bulkem()'s `weights` (issue 34, item 1): frequency weights give the fit of
# the expanded data; case weights maximise the weighted log-likelihood,
# checked against R's own densities, optim() and a numerical Hessian; the
# formula interface takes them as lm() does; bad weights are classed errors.

# Values rounded so that they repeat, and their counts.
heaped <- function(x) {
  u <- sort(unique(x))
  list(values = u, counts = as.numeric(table(factor(x, levels = u))), all = x)
}

# The weighted mixture log-likelihood from R's densities.
weighted_loglik <- function(f, x, w) {
  dens <- Reduce(`+`, lapply(seq_along(f$mu), function(m) {
    f$alpha[m] * switch(f$family,
      invgauss = statmod::dinvgauss(x, mean = f$mu[m], shape = f$lambda[m]),
      gamma = stats::dgamma(x, shape = f$shape[m], rate = f$shape[m] / f$mu[m]),
      lognormal = stats::dlnorm(x, f$mu[m], f$sigma[m]),
      t = stats::dt((x - f$mu[m]) / f$sigma[m], f$df[m]) / f$sigma[m],
      stats::dnorm(x, f$mu[m], f$sigma[m]))
  }))
  if (!is.na(f$noise)) dens <- dens + f$noise * stats::dunif(x, f$noise_support[1], f$noise_support[2])
  sum(w * log(dens))
}

test_that("frequency weights give the fit of the expanded data, every family, with noise too", {
  set.seed(41)
  normal <- heaped(round(c(rnorm(300, 0, 1), rnorm(200, 4, 1.5)), 1))
  positive <- heaped(round(c(statmod::rinvgauss(300, 1, 4), statmod::rinvgauss(200, 4, 30)), 2))
  for (family in c("normal", "invgauss", "gamma", "lognormal", "t")) {
    d <- if (family %in% c("normal", "t")) normal else positive
    for (noise in c(FALSE, TRUE)) {
      expanded <- bulkem(list(d$all), family = family, noise = noise, seed = 1, use.gpu = FALSE)[[1]]
      weighted <- bulkem(list(d$values), family = family, noise = noise, seed = 1, use.gpu = FALSE,
                         weights = list(d$counts))[[1]]
      info <- paste(family, noise)
      expect_identical(weighted$status, "converged", info = info)
      expect_equal(weighted$loglik, expanded$loglik, tolerance = 1e-10, info = info)
      for (field in c("alpha", "mu", bulkem:::shape_name(family), if (family == "t") "df")) {
        expect_equal(weighted[[field]], expanded[[field]], tolerance = 1e-8, info = paste(info, field))
      }
      expect_equal(weighted$se, expanded$se, tolerance = 1e-6, info = info)
      expect_equal(weighted$bic, expanded$bic, tolerance = 1e-10, info = info)
      expect_equal(weighted$icl, expanded$icl, tolerance = 1e-8, info = info)
      expect_identical(weighted$nobs, as.double(length(d$all)))
      expect_identical(weighted$n, length(d$values))
      expect_equal(weighted$loglik, weighted_loglik(weighted, d$values, d$counts), tolerance = 1e-10)
    }
  }
})

test_that("case weights reach the weighted likelihood's maximum, with its standard errors", {
  set.seed(42)
  x <- c(rnorm(150, 0, 1), rnorm(100, 3.5, 0.8))
  w <- runif(length(x), 0.2, 3)
  fit <- bulkem(list(x), family = "normal", seed = 2, use.gpu = FALSE, weights = list(w))[[1]]
  expect_equal(fit$loglik, weighted_loglik(fit, x, w), tolerance = 1e-10)
  expect_equal(fit$nobs, sum(w))
  # theta = (alpha1, mu1, mu2, log sigma1, log sigma2)
  ll <- function(th) {
    a <- th[1]
    if (a <= 0 || a >= 1) return(-1e10)
    sum(w * log(a * dnorm(x, th[2], exp(th[4])) + (1 - a) * dnorm(x, th[3], exp(th[5]))))
  }
  start <- c(fit$alpha[1], fit$mu, log(fit$sigma))
  best <- max(vapply(list(start, c(0.5, -1, 4, 0, 0), c(0.3, 0, 3, 0.5, -0.5)), function(s) {
    stats::optim(s, ll, control = list(fnscale = -1, maxit = 5000, reltol = 1e-14))$value
  }, 0))
  expect_gte(fit$loglik, best - 1e-7)
  # standard errors against a numerical Hessian of the weighted log-likelihood
  # in the parameters themselves
  theta <- c(fit$alpha[1], fit$mu, fit$sigma)
  lln <- function(th) sum(w * log(th[1] * dnorm(x, th[2], th[4]) + (1 - th[1]) * dnorm(x, th[3], th[5])))
  h <- stats::optimHess(theta, lln, control = list(parscale = abs(theta), ndeps = rep(1e-4, 5)))
  se <- sqrt(diag(solve(-h)))
  expect_equal(unname(fit$se[c("alpha1", "mu1", "mu2", "sigma1", "sigma2")]), se, tolerance = 1e-3)
  expect_equal(unname(fit$se[["alpha2"]]), se[1], tolerance = 1e-3)
})

test_that("a weight of 0 is an observation left out; weights of 1 are no weights", {
  set.seed(43)
  x <- c(rnorm(200), rnorm(150, 4))
  drop <- c(3, 50, 290)
  w <- rep(1, length(x))
  w[drop] <- 0
  zero <- bulkem(list(x), family = "normal", seed = 3, use.gpu = FALSE, weights = list(w))[[1]]
  left <- bulkem(list(x[-drop]), family = "normal", seed = 3, use.gpu = FALSE)[[1]]
  expect_equal(zero$loglik, left$loglik, tolerance = 1e-10)
  expect_equal(zero$mu, left$mu, tolerance = 1e-8)
  expect_identical(zero$nobs, as.double(length(x) - 3))
  ones <- bulkem(list(x), family = "normal", seed = 3, use.gpu = FALSE, weights = list(rep(1, length(x))))
  plain <- bulkem(list(x), family = "normal", seed = 3, use.gpu = FALSE)
  expect_identical(unclass(ones)[[1]], unclass(plain)[[1]])
  expect_null(attr(ones, "weighted"))
})

test_that("the formula interface takes weights as lm() does, subset and NA included", {
  set.seed(44)
  df <- data.frame(g = rep(c("a", "b"), each = 120), y = round(c(rnorm(120), rnorm(120, 3)), 1),
                   w = rpois(240, 3) + 1)
  df$y[c(5, 130)] <- NA
  df$w[c(7, 140)] <- NA
  fits <- bulkem(y ~ g, data = df, weights = w, family = "normal", seed = 5, use.gpu = FALSE,
                 subset = y > -2.5)
  keep <- with(df, !is.na(y) & !is.na(w) & y > -2.5)
  by_list <- bulkem(split(df$y[keep], df$g[keep]), family = "normal", seed = 5, use.gpu = FALSE,
                    weights = split(df$w[keep], df$g[keep]))
  for (g in c("a", "b")) {
    expect_equal(fits[[g]]$loglik, by_list[[g]]$loglik, tolerance = 1e-12)
    expect_equal(fits[[g]]$nobs, sum(df$w[keep & df$g == g]))
  }
  expect_true(isTRUE(attr(fits, "weighted")))
  expect_equal(unname(nobs(fits)), vapply(c("a", "b"), function(g) sum(df$w[keep & df$g == g]), 0),
               ignore_attr = TRUE)
  expect_equal(unname(BIC(fits)), vapply(unclass(fits), function(f) f$bic, 0), ignore_attr = TRUE)
  expect_equal(glance(fits)$BIC, unname(vapply(unclass(fits), function(f) f$bic, 0)))
  expect_equal(stats::BIC(fits$a), fits$a$bic)
  # a list of datasets with missing values: a value's weight goes with it
  y <- c(1.2, NA, 3.4, 2.2, 5.1, 4.4, 0.3, 2.9, 3.3, 1.8)
  a <- bulkem(list(y), family = "normal", num.components = 1, use.gpu = FALSE, weights = list(1:10))[[1]]
  b <- bulkem(list(y[-2]), family = "normal", num.components = 1, use.gpu = FALSE, weights = list((1:10)[-2]))[[1]]
  expect_equal(a$mu, b$mu)
  expect_equal(a$mu, weighted.mean(y[-2], (1:10)[-2]))
})

test_that("a sharded call passes each shard its weights", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  set.seed(45)
  d <- replicate(4, c(rnorm(100), rnorm(80, 3)), simplify = FALSE)
  w <- lapply(d, function(x) runif(length(x), 0.5, 2))
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  local <- bulkem(d, family = "normal", seed = 6, use.gpu = FALSE, weights = w)
  sharded <- bulkem(d, family = "normal", seed = 6, use.gpu = FALSE, weights = w,
                    control = list(future = TRUE, shards = 2))
  for (i in seq_along(d)) expect_identical(unclass(sharded)[[i]], unclass(local)[[i]])
  expect_true(isTRUE(attr(sharded, "weighted")))
})

test_that("bad weights are classed argument errors naming weights", {
  x <- c(rnorm(50), rnorm(50, 3))
  bad <- function(w, regexp, ...) {
    expect_error(bulkem(list(a = x), family = "normal", use.gpu = FALSE, weights = w, ...),
                 class = "bulkem_error_argument", regexp = regexp)
  }
  bad(list(rep(1, 10)), "as long as its dataset")
  bad(list(c(-1, rep(1, 99))), "finite numbers >= 0")
  bad(list(c(NA, rep(1, 99))), "finite numbers >= 0")
  bad(list(rep(0, 100)), "all 0")
  bad("w", "must be a list of 1 numeric vectors")
  bad(list(1:100, 1:100), "must be a list of 1")
  m <- list(cbind(rnorm(50), rnorm(50)))
  expect_error(bulkem(m, use.gpu = FALSE, weights = list(rep(1, 49))),
               class = "bulkem_error_argument", regexp = "as long as its dataset \\(50 rows\\)")
  expect_error(bulkem(m, use.gpu = FALSE, weights = list(c(Inf, rep(1, 49)))),
               class = "bulkem_error_argument", regexp = "finite numbers >= 0")
  fits <- bulkem(list(a = x), family = "normal", use.gpu = FALSE, weights = list(runif(100)),
                 control = list(keep.data = TRUE))
  expect_error(bulkem_bootstrap(fits, B = 9), class = "bulkem_error_argument", regexp = "whole numbers")
  kept_not <- bulkem(list(a = x), family = "normal", use.gpu = FALSE, weights = list(rep(2, 100)))
  expect_error(bulkem_bootstrap(kept_not, B = 9, data = list(x)), class = "bulkem_error_argument",
               regexp = "keep.data")
})

test_that("the bootstrap of frequency-weighted fits is that of the data they stand for", {
  set.seed(46)
  d <- heaped(round(c(rnorm(150, 0, 1), rnorm(100, 3.5, 1)), 1))
  # the expanded data in the order the bootstrap expands the kept values
  expanded <- rep(d$values, d$counts)
  a <- bulkem(list(a = expanded), family = "normal", seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
  b <- bulkem(list(a = d$values), family = "normal", seed = 1, use.gpu = FALSE, weights = list(d$counts),
              control = list(keep.data = TRUE))
  expect_identical(b$a$weights, d$counts)
  sa <- bulkem_bootstrap(a, B = 30, seed = 4, random.inits = 5, use.gpu = FALSE)
  sb <- bulkem_bootstrap(b, B = 30, seed = 4, random.inits = 5, use.gpu = FALSE)
  expect_equal(sb$std.error, sa$std.error, tolerance = 1e-6)
  expect_equal(sb$estimate, sa$estimate, tolerance = 1e-6)
})

test_that("a list of Surv datasets takes weights: frequency weights give the expanded data's fit", {
  set.seed(45)
  # response times, heaped, with a deadline at 3.2 (the later ones censored
  # there) and a few left-censored below 0.4
  y <- round(c(statmod::rinvgauss(250, 1, 6), statmod::rinvgauss(150, 2.5, 20)), 2)
  u <- sort(unique(y))
  counts <- as.numeric(table(factor(y, levels = u)))
  surv <- function(v) {
    t <- ifelse(v > 3.2, 3.2, ifelse(v < 0.4, 0.4, v))
    survival::Surv(t, t, ifelse(v > 3.2, 0, ifelse(v < 0.4, 2, 1)), type = "interval")
  }
  # the same with an NA row, whose weight goes with it
  values <- c(u, NA)
  w <- c(counts, 5)
  expanded <- bulkem(list(a = surv(y)), 2, seed = 1, use.gpu = FALSE)$a
  weighted <- bulkem(list(a = surv(values)), 2, seed = 1, use.gpu = FALSE, weights = list(w))$a
  expect_gt(weighted$censored, 0)
  expect_equal(weighted$censored, expanded$censored)
  expect_identical(weighted$status, "converged")
  expect_equal(weighted$loglik, expanded$loglik, tolerance = 1e-10)
  expect_equal(weighted$mu, expanded$mu, tolerance = 1e-8)
  expect_equal(weighted$lambda, expanded$lambda, tolerance = 1e-8)
  expect_equal(weighted$se, expanded$se, tolerance = 1e-6)
  expect_equal(weighted$bic, expanded$bic, tolerance = 1e-10)
  # the formula interface's weights give the same fit
  df <- data.frame(v = values, w = w, g = "a")
  df$rt <- surv(df$v)
  by_formula <- bulkem(rt ~ g, data = df, weights = w, num.components = 2, seed = 1, use.gpu = FALSE)$a
  expect_equal(by_formula$loglik, weighted$loglik, tolerance = 1e-10)
  # bad weights: classed errors naming them
  bad <- function(w, what) {
    expect_error(bulkem(list(a = surv(values)), 2, use.gpu = FALSE, weights = w), class = "bulkem_error_argument",
                 regexp = what)
  }
  bad(list(w[-1]), "weights\\[\\[1\\]\\]")
  bad(list(replace(w, 3, -1)), "weights\\[\\[1\\]\\]")
  bad(list(w, w), "weights")
  # shards carry each censored window once, its count as its weight
  skip_if_not_installed("future")
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  d <- list(a = surv(values), b = surv(values * 1.1))
  local <- bulkem(d, 2, seed = 1, use.gpu = FALSE, weights = list(w, NULL))
  sharded <- bulkem(d, 2, seed = 1, use.gpu = FALSE, weights = list(w, NULL),
                    control = list(future = TRUE, shards = 2))
  for (n in names(d)) expect_equal(sharded[[n]]$loglik, local[[n]]$loglik, tolerance = 1e-12)
})
