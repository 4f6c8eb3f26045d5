# Multivariate Student's t mixtures (issue 33, family = "t"): the fitted
# log-likelihood against an independent R computation of the t density,
# its maximum against optim()'s from many starts, fixed degrees of freedom,
# the t's weights, and the methods around a t fit.

# n draws of a d-variate t: Normal over the square root of a Gamma(nu/2,
# rate nu/2) weight.
rmvt_test <- function(n, mu, s, nu) {
  z <- matrix(stats::rnorm(n * length(mu)), n) %*% chol(s)
  sweep(z / sqrt(stats::rgamma(n, nu / 2, rate = nu / 2)), 2, mu, "+")
}

# log sum_m alpha_m t_d(x; mu_m, Sigma_m, nu_m) summed: stats::mahalanobis
# and determinant(), nothing of the package's.
t_mixture_loglik <- function(x, alpha, mu, sigma, df) {
  d <- ncol(x)
  dens <- vapply(seq_along(alpha), function(m) {
    delta <- stats::mahalanobis(x, mu[m, ], sigma[, , m])
    logdet <- as.numeric(determinant(sigma[, , m], logarithm = TRUE)$modulus)
    nu <- df[m]
    exp(log(alpha[m]) + lgamma((nu + d) / 2) - lgamma(nu / 2) - d / 2 * log(nu * pi) - logdet / 2 -
          (nu + d) / 2 * log(1 + delta / nu))
  }, numeric(nrow(x)))
  sum(log(rowSums(matrix(dens, nrow = nrow(x)))))
}

# A 2-component bivariate t mixture's parameters from an unconstrained
# vector: logit alpha1, the means, each scale matrix's Cholesky factor
# (log diagonal), log df.
unpack_t2 <- function(th) {
  a <- stats::plogis(th[1])
  mu <- matrix(th[2:5], 2, byrow = TRUE)
  sig <- array(0, c(2, 2, 2))
  for (m in 1:2) {
    p <- th[5 + 3 * (m - 1) + 1:3]
    l <- matrix(c(exp(p[1]), p[2], 0, exp(p[3])), 2)
    sig[, , m] <- l %*% t(l)
  }
  list(alpha = c(a, 1 - a), mu = mu, sigma = sig, df = exp(th[12:13]))
}

pack_t2 <- function(alpha, mu, sigma, df) {
  ch <- function(s) {
    l <- t(chol(s))
    c(log(l[1, 1]), l[2, 1], log(l[2, 2]))
  }
  c(stats::qlogis(alpha[1]), t(mu), ch(sigma[, , 1]), ch(sigma[, , 2]), log(df))
}

two_t <- function(seed, n1 = 400, n2 = 200) {
  set.seed(seed)
  x <- rbind(rmvt_test(n1, c(0, 0), matrix(c(1, .5, .5, 1), 2), 4),
             rmvt_test(n2, c(4, 3), matrix(c(1, -.3, -.3, .6), 2), 8))
  colnames(x) <- c("a", "b")
  x
}

test_that("a t fit's log-likelihood is the t mixture density, under every structure, with noise", {
  x <- two_t(1)
  for (cv in c("full", "tied", "diagonal", "spherical")) {
    f <- bulkem(list(x), num.components = 2, family = "t", covariance = cv, random.inits = 10,
                use.gpu = FALSE, seed = 3)[[1]]
    expect_identical(f$family, "t")
    expect_identical(f$status, "converged", label = cv)
    expect_length(f$df, 2)
    expect_true(all(f$df >= 0.5 & f$df <= 200))
    expect_equal(f$loglik, t_mixture_loglik(x, f$alpha, f$mu, f$sigma, f$df), tolerance = 1e-10, label = cv)
    s <- f$sigma
    switch(cv,
           tied = expect_equal(s[, , 1], s[, , 2]),
           diagonal = expect_equal(c(s[1, 2, ], s[2, 1, ]), rep(0, 4)),
           spherical = expect_equal(s[1, 1, ], s[2, 2, ]))
    # each structure's parameters plus one df per component
    base <- c(full = 11, tied = 8, diagonal = 9, spherical = 7)[[cv]]
    expect_identical(f$df_model, as.integer(base + 2), label = cv)
    expect_equal(f$bic, -2 * f$loglik + f$df_model * log(nrow(x)))
  }
  # with a noise component: the uniform over the bounding box beside the ts
  f <- bulkem(list(x), num.components = 2, family = "t", noise = TRUE, random.inits = 10,
              use.gpu = FALSE, seed = 3)[[1]]
  box <- f$noise_support
  d <- vapply(1:2, function(m) {
    delta <- stats::mahalanobis(x, f$mu[m, ], f$sigma[, , m])
    nu <- f$df[m]
    f$alpha[m] * gamma((nu + 2) / 2) / gamma(nu / 2) / (nu * pi * sqrt(det(f$sigma[, , m]))) *
      (1 + delta / nu)^(-(nu + 2) / 2)
  }, numeric(nrow(x)))
  ref <- sum(log(rowSums(d) + f$noise / prod(box[, 2] - box[, 1])))
  expect_equal(f$loglik, ref, tolerance = 1e-10)
  expect_identical(f$df_model, 14L)
})

test_that("the t fit reaches the best of optim() from many starts (simulated and faithful)", {
  check_reach <- function(x, f, seed) {
    nll <- function(th) {
      p <- unpack_t2(th)
      if (any(p$df > 200 | p$df < 0.5)) return(1e10)
      # optim wanders through singular matrices on its way: they are no maximum
      v <- tryCatch(-t_mixture_loglik(x, p$alpha, p$mu, p$sigma, p$df), error = function(e) 1e10)
      if (is.finite(v)) v else 1e10
    }
    set.seed(seed)
    # starts: k-means-like splits of the data with df 3..30, each polished
    best <- Inf
    for (s in 1:12) {
      cl <- stats::kmeans(x, 2, nstart = 1)$cluster
      mu <- rbind(colMeans(x[cl == 1, ]), colMeans(x[cl == 2, ]))
      sg <- array(c(stats::cov(x[cl == 1, ]), stats::cov(x[cl == 2, ])), c(2, 2, 2))
      th <- pack_t2(c(mean(cl == 1), mean(cl == 2)), mu, sg, stats::runif(2, 3, 30))
      o <- stats::optim(th, nll, method = "BFGS", control = list(maxit = 2000, reltol = 1e-14))
      o <- stats::optim(o$par, nll, method = "Nelder-Mead", control = list(maxit = 4000, reltol = 1e-14))
      o <- stats::optim(o$par, nll, method = "BFGS", control = list(maxit = 2000, reltol = 1e-14))
      best <- min(best, o$value)
    }
    expect_gte(f$loglik, -best - 1e-6)
    # and it is a maximum: optim from the fit finds nothing higher
    o <- stats::optim(pack_t2(f$alpha, f$mu, f$sigma, f$df), nll, method = "BFGS",
                      control = list(maxit = 2000, reltol = 1e-14))
    expect_lt(-o$value - f$loglik, 1e-5)
  }
  x <- two_t(2)
  f <- bulkem(list(x), num.components = 2, family = "t", random.inits = 30, epsilon = 1e-12,
              max.iters = 20000, use.gpu = FALSE, seed = 4)[[1]]
  expect_identical(f$status, "converged")
  check_reach(x, f, 5)
  fa <- as.matrix(faithful)
  f <- bulkem(list(fa), num.components = 2, family = "t", random.inits = 30, epsilon = 1e-12,
              max.iters = 20000, use.gpu = FALSE, seed = 4)[[1]]
  expect_identical(f$status, "converged")
  check_reach(fa, f, 6)
})

test_that("df fixed by the user stays fixed and is not counted", {
  x <- two_t(3)
  f <- bulkem(list(x), num.components = 2, family = "t", df = 5, use.gpu = FALSE, seed = 1)[[1]]
  # (marked fixed, as a univariate fit's df are)
  expect_identical(f$df, structure(c(5, 5), fixed = TRUE))
  expect_identical(f$df_model, 11L)
  # the standard errors cover the free parameters only: no df
  expect_false(any(grepl("^df", names(f$se))))
  expect_equal(f$loglik, t_mixture_loglik(x, f$alpha, f$mu, f$sigma, f$df), tolerance = 1e-10)
  expect_error(bulkem(list(x), num.components = 2, family = "t", df = c(4, 5), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "one number")
  expect_error(bulkem(list(x), num.components = 2, family = "t", df = 0.1, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "df")
  expect_error(bulkem(list(x), family = "gamma", use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "\"t\"")
})

test_that("t weights single out outliers; predict, augment, tidy, simulate, print and plot know the t", {
  x <- two_t(4)
  x[1, ] <- c(40, -40)
  f <- bulkem(list(s = x), num.components = 2, family = "t", use.gpu = FALSE, seed = 2,
              control = list(keep.data = TRUE))
  fit <- f$s
  w <- predict(fit, type = "weight")
  # by hand: (df + d) / (df + delta) per component, averaged by the posterior
  post <- predict(fit, type = "posterior")
  u <- vapply(1:2, function(m) (fit$df[m] + 2) / (fit$df[m] + stats::mahalanobis(x, fit$mu[m, ], fit$sigma[, , m])),
              numeric(nrow(x)))
  expect_equal(w, rowSums(post * u), tolerance = 1e-12)
  expect_identical(which.min(w), 1L)
  expect_lt(w[1], 0.01)
  dens <- predict(fit, newdata = x[1:5, ], type = "density")
  expect_equal(sum(log(predict(fit, type = "density"))), fit$loglik, tolerance = 1e-10)
  expect_length(dens, 5)
  a <- augment(fit)
  expect_equal(a$.weight, w)
  td <- tidy(f)
  expect_equal(td$estimate[td$term == "df"], fit$df)
  expect_identical(colnames(coef(fit)), c("alpha", "mu.a", "mu.b", "df"))
  sims <- simulate(fit, nsim = 2, seed = 1, n = 5000)
  expect_identical(dim(sims$sim_1), c(5000L, 2L))
  expect_output(print(fit), "multivariate t mixture")
  pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_invisible(plot(fit))
  expect_error(predict(bulkem(list(x), num.components = 2, use.gpu = FALSE, seed = 1,
                              control = list(keep.data = TRUE))[[1]], type = "weight"),
               class = "bulkem_error_argument")
})

test_that("a t fit of simulated data recovers df and its draws refit to the same t", {
  set.seed(11)
  x <- rmvt_test(4000, c(1, 2, 3), diag(3) + 0.4, 5)
  f <- bulkem(list(x), num.components = 1, family = "t", use.gpu = FALSE, seed = 1,
              control = list(keep.data = TRUE))[[1]]
  expect_lt(abs(f$df - 5), 1)
  expect_equal(unname(f$mu[1, ]), c(1, 2, 3), tolerance = 0.05)
  y <- simulate(f, nsim = 1, seed = 2, n = 20000)$sim_1
  g <- bulkem(list(y), num.components = 1, family = "t", use.gpu = FALSE, seed = 1)[[1]]
  expect_lt(abs(g$df - f$df), 0.6)
  expect_equal(g$sigma, f$sigma, tolerance = 0.05)
})
