# bulkem(fixed =) (issue 34, item 2): weights, means and shapes held at
# given values. Against direct numerical maximisation (optim from several
# starts) of the constrained likelihood written with R's densities, a
# numerical Hessian of it for the standard errors, and the parameter count
# in AIC/BIC.

# log-density of one component of `family` at x, R's own functions
component_density <- function(x, family, mu, shape) {
  switch(family,
    invgauss = statmod::dinvgauss(x, mean = mu, shape = shape),
    gamma = stats::dgamma(x, shape = shape, rate = shape / mu),
    lognormal = stats::dlnorm(x, mu, shape),
    stats::dnorm(x, mu, shape))
}

# The constrained log-likelihood as a function of the free parameters phi:
# the free weights but the last free one (which takes what is left), the
# free means, the logs of the free shapes.
constrained <- function(x, family, fixed_alpha, fixed_mu, fixed_shape) {
  k <- length(fixed_mu)
  fa <- which(is.na(fixed_alpha))
  own <- fa[-length(fa)]
  fm <- which(is.na(fixed_mu))
  fs <- which(is.na(fixed_shape))
  expand <- function(phi) {
    a <- fixed_alpha
    a[own] <- phi[seq_along(own)]
    a[fa[length(fa)]] <- 1 - sum(a, na.rm = TRUE)
    mu <- fixed_mu
    mu[fm] <- phi[length(own) + seq_along(fm)]
    s <- fixed_shape
    s[fs] <- exp(phi[length(own) + length(fm) + seq_along(fs)])
    list(alpha = a, mu = mu, shape = s)
  }
  loglik <- function(phi) {
    p <- expand(phi)
    if (any(p$alpha <= 0) || (family %in% c("invgauss", "gamma") && any(p$mu <= 0))) return(-1e10)
    dens <- Reduce(`+`, lapply(seq_len(k), function(m) p$alpha[m] * component_density(x, family, p$mu[m], p$shape[m])))
    if (any(!is.finite(dens)) || any(dens <= 0)) return(-1e10)
    sum(log(dens))
  }
  list(loglik = loglik, expand = expand, free = list(alpha = own, mu = fm, shape = fs))
}

best_optim <- function(model, starts) {
  fits <- lapply(starts, function(s) {
    stats::optim(s, model$loglik, method = "BFGS", control = list(fnscale = -1, maxit = 5000, reltol = 1e-14))
  })
  fits[[which.max(vapply(fits, `[[`, 0, "value"))]]
}

fit_shape <- function(f) f[[c(invgauss = "lambda", gamma = "shape", normal = "sigma", lognormal = "sigma")[[f$family]]]]

check_against_optim <- function(x, family, fixed, starts) {
  k <- max(lengths(fixed))
  shape <- c(invgauss = "lambda", gamma = "shape", normal = "sigma", lognormal = "sigma")[[family]]
  given <- list(alpha = if (is.null(fixed$alpha)) rep(NA, k) else fixed$alpha,
                mu = if (is.null(fixed$mu)) rep(NA, k) else fixed$mu,
                shape = if (is.null(fixed[[shape]])) rep(NA, k) else fixed[[shape]])
  f <- bulkem(list(x), num.components = k, family = family, fixed = fixed, seed = 2, random.inits = 30,
              use.gpu = FALSE)[[1]]
  expect_identical(f$status, "converged")
  model <- constrained(x, family, as.double(given$alpha), as.double(given$mu), as.double(given$shape))
  o <- best_optim(model, starts)
  # the fit reaches the best of optim's maxima, and is the same point
  expect_gte(f$loglik, o$value - 1e-6)
  expect_equal(f$loglik, model$loglik(phi_of(f, model$free, given)), tolerance = 1e-10)
  p <- model$expand(o$par)
  ord <- order(p$mu)
  expect_equal(f$mu, p$mu[ord], tolerance = 1e-4)
  expect_equal(fit_shape(f), p$shape[ord], tolerance = 1e-4)
  expect_equal(f$alpha, p$alpha[ord], tolerance = 1e-4)
  # the fixed values are the fit's, exactly, each with its component
  at <- match(given$mu[!is.na(given$mu)], f$mu)
  expect_false(anyNA(at))
  # standard errors: the free parameters' from the inverse of a numerical
  # Hessian of the constrained log-likelihood (delta method for the log
  # shapes), the fixed ones NA
  phi <- phi_of(f, model$free, given)
  h <- stats::optimHess(phi, model$loglik, control = list(fnscale = -1, ndeps = rep(1e-4, length(phi))))
  v <- solve(-h)
  se_phi <- sqrt(diag(v))
  nf <- model$free
  q <- fit_order(f, given)
  se <- f$se
  expect_equal(unname(se[q$alpha[nf$alpha]]), se_phi[seq_along(nf$alpha)], tolerance = 1e-3)
  expect_equal(unname(se[k + q$mu[nf$mu]]), se_phi[length(nf$alpha) + seq_along(nf$mu)], tolerance = 1e-3)
  s_idx <- length(nf$alpha) + length(nf$mu) + seq_along(nf$shape)
  expect_equal(unname(se[2 * k + q$shape[nf$shape]]), se_phi[s_idx] * fit_shape(f)[q$shape[nf$shape]],
               tolerance = 1e-3)
  fixed_at <- c(which(!is.na(f$fixed[seq_len(k)])), k + which(!is.na(f$fixed[k + seq_len(k)])),
                2 * k + which(!is.na(f$fixed[2 * k + seq_len(k)])))
  expect_true(all(is.na(se[fixed_at])))
  # AIC/BIC count the free parameters: optim's
  expect_equal(f$bic, -2 * f$loglik + length(phi) * log(length(x)), tolerance = 1e-12)
  expect_equal(f$aic, -2 * f$loglik + 2 * length(phi), tolerance = 1e-12)
  expect_equal(glance(bulkem(list(x), num.components = k, family = family, fixed = fixed, seed = 2,
                             random.inits = 30, use.gpu = FALSE))$df, length(phi))
  invisible(f)
}

# Where each of the user's components (by their fixed values' positions)
# sits in the fit: the fit's `fixed` field is in the fit's order, so the
# user's component j is the fit's component whose fixed pattern matches;
# components with nothing fixed are matched by order of mu.
fit_order <- function(f, given) {
  k <- NROW(f$mu)
  key_user <- paste(given$alpha, given$mu, given$shape)
  key_fit <- paste(f$fixed[seq_len(k)], f$fixed[k + seq_len(k)], f$fixed[2 * k + seq_len(k)])
  to <- integer(k)
  for (j in seq_len(k)) {
    cand <- which(key_fit == key_user[j] & !seq_len(k) %in% to)
    to[j] <- cand[1]
  }
  list(alpha = to, mu = to, shape = to)
}

# The fit's free parameters in the order `constrained()` takes them.
phi_of <- function(f, free, given) {
  q <- fit_order(f, given)
  c(f$alpha[q$alpha[free$alpha]], f$mu[q$mu[free$mu]], log(fit_shape(f)[q$shape[free$shape]]))
}

test_that("a fixed mean: the Normal fit is the constrained maximum, with its standard errors and BIC", {
  set.seed(31)
  x <- c(rnorm(300, 0, 1), rnorm(200, 3.2, 0.7))
  starts <- list(c(0.5, 0, 0, 0), c(0.6, 0.5, 0.2, -0.5), c(0.3, -0.5, -0.3, 0.3))
  f <- check_against_optim(x, "normal", list(mu = c(NA, 3)), starts)
  expect_true(3 %in% f$mu)
  # print() says what is held
  fit <- bulkem(list(x), num.components = 2, family = "normal", fixed = list(mu = c(NA, 3)), seed = 2,
                use.gpu = FALSE)[[1]]
  expect_output(print(fit), "held fixed: mu2 = 3")
})

test_that("a fixed shape and a fixed weight: the inverse Gaussian and the gamma", {
  set.seed(32)
  x <- c(statmod::rinvgauss(250, 1, 8), statmod::rinvgauss(150, 3, 20))
  starts <- list(c(0.5, 1, 3, log(5)), c(0.4, 0.8, 2.5, log(10)), c(0.6, 1.2, 3.5, log(2)))
  check_against_optim(x, "invgauss", list(lambda = c(NA, 20)), starts)
  starts <- list(c(1, 3, log(5), log(10)), c(0.8, 2.5, log(10), log(20)))
  check_against_optim(x, "invgauss", list(alpha = c(0.6, NA)), starts)
  y <- c(rgamma(250, shape = 6, rate = 6), rgamma(200, shape = 12, rate = 12 / 3))
  starts <- list(c(0.5, 1, log(5), log(10)), c(0.4, 0.8, log(3), log(20)))
  check_against_optim(y, "gamma", list(mu = c(NA, 3)), starts)
})

test_that("the weight the others determine fixed: a linear constraint on the free weights", {
  set.seed(33)
  x <- c(rnorm(250, 0, 1), rnorm(150, 3, 0.6), rnorm(100, 6, 0.8))
  # the third (largest-mean) component's weight fixed: the two free
  # weights sum to 0.8; the fit's alpha3 is exactly 0.2
  starts <- list(c(0.5, 0, 3, 6, 0, 0, 0), c(0.4, -0.3, 2.5, 5.5, 0.2, -0.4, -0.2))
  f <- check_against_optim(x, "normal", list(alpha = c(NA, NA, 0.2)), starts)
  expect_true(0.2 %in% f$alpha)
  expect_equal(sum(f$alpha), 1, tolerance = 1e-14)
  # two of three weights fixed: one free weight left, none estimated
  g <- bulkem(list(x), num.components = 3, family = "normal", fixed = list(alpha = c(0.5, 0.3, NA)),
              seed = 2, use.gpu = FALSE)[[1]]
  expect_true(all(c(0.5, 0.3) %in% g$alpha))
  expect_equal(g$bic, -2 * g$loglik + 6 * log(length(x)), tolerance = 1e-12)
  # (the third is determined, 1 - 0.8: known exactly, not fixed)
  third <- which(!g$alpha %in% c(0.5, 0.3))
  expect_true(all(is.na(g$se[-third][1:2])))
  expect_equal(unname(g$se[third]), 0)
})

test_that("fixed values on the log scale, with noise and with the t", {
  set.seed(34)
  x <- c(rlnorm(300, 0, 0.3), rlnorm(200, 1, 0.2))
  starts <- list(c(0.5, 0, log(0.3), log(0.2)), c(0.4, 0.2, log(0.5), log(0.1)))
  check_against_optim(x, "lognormal", list(mu = c(NA, 1)), starts)
  # noise: the fixed weight as given, the free weight and the noise's
  # sharing the rest; the log-likelihood an R computation of the mixture
  y <- c(rnorm(300, 0, 1), rnorm(200, 4, 1), runif(10, -20, 30))
  f <- bulkem(list(y), num.components = 2, family = "normal", noise = TRUE, fixed = list(alpha = c(0.55, NA)),
              seed = 2, use.gpu = FALSE)[[1]]
  expect_true(0.55 %in% f$alpha)
  expect_equal(sum(f$alpha) + f$noise, 1, tolerance = 1e-14)
  width <- diff(f$noise_support)
  dens <- f$alpha[1] * dnorm(y, f$mu[1], f$sigma[1]) + f$alpha[2] * dnorm(y, f$mu[2], f$sigma[2]) + f$noise / width
  expect_equal(f$loglik, sum(log(dens)), tolerance = 1e-10)
  # free: 1 weight of 2 + noise gives one free weight; 2 means, 2 sigmas
  expect_equal(f$bic, -2 * f$loglik + 5 * log(length(y)), tolerance = 1e-12)
  # the t: a fixed location keeps its value; the fit beats the free
  # fit's log-likelihood at most by nothing
  z <- c(rt(300, 4), 5 + rt(200, 6))
  t1 <- bulkem(list(z), num.components = 2, family = "t", fixed = list(mu = c(0, NA)), seed = 2,
               use.gpu = FALSE)[[1]]
  free <- bulkem(list(z), num.components = 2, family = "t", seed = 2, use.gpu = FALSE)[[1]]
  expect_true(0 %in% t1$mu)
  expect_lte(t1$loglik, free$loglik + 1e-8)
  dt_mix <- t1$alpha[1] * dt((z - t1$mu[1]) / t1$sigma[1], t1$df[1]) / t1$sigma[1] +
    t1$alpha[2] * dt((z - t1$mu[2]) / t1$sigma[2], t1$df[2]) / t1$sigma[2]
  expect_equal(t1$loglik, sum(log(dt_mix)), tolerance = 1e-10)
  # with equal.scale: a fixed mean and one shared sigma
  e <- bulkem(list(x), num.components = 2, family = "lognormal", equal.scale = TRUE, fixed = list(mu = c(NA, 1)),
              seed = 2, use.gpu = FALSE)[[1]]
  expect_true(1 %in% e$mu)
  expect_identical(length(unique(e$sigma)), 1L)
  expect_equal(e$bic, -2 * e$loglik + 3 * log(length(x)), tolerance = 1e-12)
})

test_that("fixed values by dataset: each dataset its own, the others as without", {
  set.seed(35)
  x <- list(a = c(rnorm(200, 0, 1), rnorm(150, 3, 0.7)), b = c(rnorm(150, 1, 1), rnorm(200, 5, 1)),
            c = c(rnorm(100, 0, 2), rnorm(100, 6, 1)))
  fixed <- list(a = list(mu = c(NA, 3)), c = list(sigma = c(2, NA), alpha = c(0.5, NA)))
  f <- bulkem(x, num.components = 2, family = "normal", fixed = fixed, seed = 6, use.gpu = FALSE)
  free <- bulkem(x, num.components = 2, family = "normal", seed = 6, use.gpu = FALSE)
  # each as the call with its values alone
  a <- bulkem(x["a"], num.components = 2, family = "normal", fixed = fixed$a, seed = 6, use.gpu = FALSE)
  cc <- bulkem(x["c"], num.components = 2, family = "normal", fixed = fixed$c, seed = 6, use.gpu = FALSE)
  fields <- c("mu", "sigma", "alpha", "loglik", "bic", "se", "fixed")
  expect_identical(f[["a"]][fields], a[["a"]][fields])
  expect_identical(f[["c"]][fields], cc[["c"]][fields])
  expect_identical(f[["b"]][fields], free[["b"]][fields])
  expect_null(f[["b"]]$fixed)
  expect_true(3 %in% f[["a"]]$mu)
  expect_true(all(c(2, 0.5) %in% c(f[["c"]]$sigma, f[["c"]]$alpha)))
  # BIC counts each dataset's own free parameters
  expect_identical(glance(f)$df, c(4L, 5L, 3L))
  expect_error(bulkem(x, num.components = 2, family = "normal", fixed = list(d = list(mu = c(NA, 1))),
                      use.gpu = FALSE), class = "bulkem_error_argument", regexp = "not fitted")
  expect_error(bulkem(x, num.components = 2, family = "normal", fixed = list(a = list(mu = c(NA, 1, 2))),
                      use.gpu = FALSE), class = "bulkem_error_argument", regexp = "dataset \"a\"")
  skip_if_not_installed("future")
  old <- future::plan(future::sequential)
  on.exit(future::plan(old))
  sharded <- bulkem(x, num.components = 2, family = "normal", fixed = fixed, seed = 6, use.gpu = FALSE,
                    control = list(future = TRUE, shards = 3))
  for (d in names(x)) expect_identical(sharded[[d]][fields], f[[d]][fields])
})

test_that("the bootstrap refits fits with fixed values with those values held", {
  set.seed(36)
  # (a fixed weight anchors its component where the weights differ: with
  # weights near each other a replicate's refit may give it to the other)
  x <- list(a = c(rnorm(150, 0, 1), rnorm(100, 3, 0.7)), b = c(rnorm(75, 1, 1), rnorm(175, 4.5, 1)))
  fixed <- list(a = list(mu = c(NA, 3)), b = list(alpha = c(0.3, NA)))
  f <- bulkem(x, num.components = 2, family = "normal", fixed = fixed, seed = 7, use.gpu = FALSE,
              control = list(keep.data = TRUE))
  bs <- bulkem_bootstrap(f, B = 25, seed = 3, random.inits = 5)
  # every replicate's refit keeps the fixed value exactly: its bootstrap
  # standard error is 0; the free parameters' are positive, and near the
  # fits' own (observed information)
  row <- function(d, term, estimate) bs[bs$dataset == d & bs$term == term & abs(bs$estimate - estimate) < 1e-12, ]
  expect_identical(row("a", "mu", 3)$std.error, 0)
  expect_identical(row("b", "alpha", 0.3)$std.error, 0)
  free_mu <- bs[bs$dataset == "a" & bs$term == "mu" & bs$estimate != 3, ]
  expect_gt(free_mu$std.error, 0)
  expect_lt(abs(log(free_mu$std.error / unname(f$a$se[["mu1"]]))), log(2))
  expect_error(bulkem_bootstrap(f, B = 19, test = "lrt"), class = "bulkem_error_argument", regexp = "fixed")
})

test_that("bad fixed values are classed errors naming `fixed`", {
  x <- list(c(rnorm(50), rnorm(50, 4)))
  err <- function(...) expect_error(bulkem(x, use.gpu = FALSE, family = "normal", ...), class = "bulkem_error_argument",
                                    regexp = "fixed")
  err(num.components = 1:2, fixed = list(mu = c(NA, 3)))
  err(num.components = 2, fixed = list(sd = c(NA, 3)))
  err(num.components = 2, fixed = list(mu = c(NA, 3, 4)))
  err(num.components = 2, fixed = list(mu = c(NA, NA)))
  err(num.components = 2, fixed = list(alpha = c(0.5, 0.6)))
  err(num.components = 2, fixed = list(alpha = c(1.2, NA)))
  err(num.components = 2, fixed = list(sigma = c(-1, NA)))
  err(num.components = 2, fixed = list(sigma = c(1, NA)), equal.scale = TRUE)
  err(num.components = 2, fixed = list(mu = c("a", NA)))
  err(num.components = 2, fixed = c(mu = 1))
  expect_error(bulkem(list(c(1, 2, 3, 5, 8, 9)), num.components = 2, fixed = list(mu = c(-1, NA)), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "positive")
  # every weight fixed: they must sum to 1 without noise, below 1 with it
  err(num.components = 2, fixed = list(alpha = c(0.3, 0.6)))
  err(num.components = 2, fixed = list(alpha = c(0.3, 0.7)), noise = TRUE)
  ok <- bulkem(x, num.components = 2, family = "normal", fixed = list(alpha = c(0.3, 0.7)), use.gpu = FALSE, seed = 1)
  expect_true(all(c(0.3, 0.7) %in% ok[[1]]$alpha))
  # multivariate data refuse them for now, and the bootstrap's LRT for K
  m <- list(matrix(rnorm(200), ncol = 2))
  expect_error(bulkem(m, num.components = 2, fixed = list(mu = c(NA, 1))), class = "bulkem_error_argument",
               regexp = "fixed")
  b <- bulkem(x, num.components = 2, family = "normal", fixed = list(mu = c(NA, 4)), use.gpu = FALSE, seed = 1,
              control = list(keep.data = TRUE))
  expect_error(bulkem_bootstrap(b, B = 19, test = "lrt"), class = "bulkem_error_argument", regexp = "fixed")
})

test_that("fits without fixed values are unchanged by the option's existence, and shards agree", {
  x <- list(a = c(rnorm(80), rnorm(60, 3)), b = c(rnorm(70, 1), rnorm(90, 5)))
  f <- bulkem(x, num.components = 2, family = "normal", use.gpu = FALSE, seed = 4)
  expect_null(f[[1]]$fixed)
  g <- bulkem(x, num.components = 2, family = "normal", use.gpu = FALSE, seed = 4, fixed = NULL)
  expect_identical(unclass(f)[[1]][c("mu", "sigma", "alpha", "loglik")], unclass(g)[[1]][c("mu", "sigma", "alpha", "loglik")])
  skip_if_not_installed("future")
  fixed <- list(mu = c(NA, 3))
  local <- bulkem(x, num.components = 2, family = "normal", use.gpu = FALSE, seed = 4, fixed = fixed)
  old <- future::plan(future::sequential)
  on.exit(future::plan(old))
  sharded <- bulkem(x, num.components = 2, family = "normal", use.gpu = FALSE, seed = 4, fixed = fixed,
                    control = list(future = TRUE, shards = 2))
  for (d in 1:2) {
    expect_identical(sharded[[d]][c("mu", "sigma", "alpha", "loglik", "fixed")],
                     local[[d]][c("mu", "sigma", "alpha", "loglik", "fixed")])
  }
})

test_that("a value held on a component that the ascending means reorder stays with it, in the polish and the SEs", {
  # the held mean is given for component 1 and ends as component 2 (the
  # larger mean): the fit, its polish to the maximum and its standard
  # errors are those of the same constraint given in the fit's order
  set.seed(3)
  x <- c(stats::rnorm(300, 0, 1), stats::rnorm(200, 3, 0.7))
  first <- bulkem(list(a = x), family = "normal", fixed = list(mu = c(3, NA)), seed = 1, use.gpu = FALSE)$a
  second <- bulkem(list(a = x), family = "normal", fixed = list(mu = c(NA, 3)), seed = 1, use.gpu = FALSE)$a
  expect_equal(first$mu[2], 3)
  expect_equal(first[c("alpha", "mu", "sigma", "loglik")], second[c("alpha", "mu", "sigma", "loglik")],
               tolerance = 1e-10)
  expect_true(is.na(first$se[["mu2"]]))
  expect_false(is.na(first$se[["mu1"]]))
  expect_equal(first$se, second$se, tolerance = 1e-8)
  # against the numerical Hessian of the constrained likelihood
  ll <- function(t) sum(log(t[1] * stats::dnorm(x, t[2], t[3]) + (1 - t[1]) * stats::dnorm(x, 3, t[4])))
  th <- c(first$alpha[1], first$mu[1], first$sigma)
  h <- stats::optimHess(th, function(t) -ll(t))
  expect_equal(unname(first$se[c("alpha1", "mu1", "sigma1", "sigma2")]), sqrt(diag(solve(h))), tolerance = 1e-3)
})
