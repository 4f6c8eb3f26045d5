# bulkem(equal.scale = TRUE) (issue 34, item 2): one shape shared by the
# components. Against mclust's "E" model (equal variances), direct
# numerical maximisation of the constrained likelihood for the other
# families, a numerical Hessian for the standard errors, and the parameter
# count in AIC/BIC.

mclust_e <- function(x, k) {
  if (!"package:mclust" %in% search()) {
    suppressPackageStartupMessages(attachNamespace("mclust"))
    on.exit(detach("package:mclust"), add = TRUE)
  }
  mclust::Mclust(x, G = k, modelNames = "E", verbose = FALSE,
                 control = mclust::emControl(tol = c(1e-12, 1e-12)))
}

# The constrained log-likelihood in theta = (alpha_1..alpha_{K-1}, mu_1..mu_K,
# log shape), from R's densities.
constrained_loglik <- function(theta, x, k, family) {
  a <- theta[seq_len(k - 1)]
  a <- c(a, 1 - sum(a))
  if (any(a <= 0)) return(-1e10)
  mu <- theta[k - 1 + seq_len(k)]
  s <- exp(theta[2 * k])
  dens <- Reduce(`+`, lapply(seq_len(k), function(m) {
    a[m] * switch(family,
      invgauss = statmod::dinvgauss(x, mean = mu[m], shape = s),
      gamma = stats::dgamma(x, shape = s, rate = s / mu[m]),
      lognormal = stats::dlnorm(x, mu[m], s),
      stats::dnorm(x, mu[m], s))
  }))
  if (any(!is.finite(dens)) || any(dens <= 0)) return(-1e10)
  sum(log(dens))
}

test_that("equal variances reach mclust's E model: loglik, sigma, BIC", {
  set.seed(51)
  x <- c(rnorm(200, 0, 1), rnorm(150, 3, 1.3), rnorm(100, 7, 0.8))
  fits <- bulkem(list(x), num.components = 1:3, family = "normal", equal.scale = TRUE, seed = 1,
                 use.gpu = FALSE, epsilon = 1e-10)[[1]]
  for (g in fits$all_k) {
    k <- NROW(g$mu)
    if (k == 1) next
    m <- mclust_e(x, k)
    expect_equal(g$loglik, m$loglik, tolerance = 1e-8)
    expect_equal(g$sigma, rep(sqrt(m$parameters$variance$sigmasq), k), tolerance = 1e-5)
    expect_equal(g$bic, -m$bic, tolerance = 1e-8)
    expect_true(isTRUE(g$equal_scale))
    expect_identical(length(unique(g$sigma)), 1L)
  }
  # at the defaults (epsilon 1e-6) the Newton polish in the constrained
  # parameters takes the fit to the maximum itself: where EM run to a
  # 1e-13 stop rule ends (mclust's E at tol 1e-12 stops 1e-6 short of it)
  d <- bulkem(list(x), num.components = 3, family = "normal", equal.scale = TRUE, seed = 1, use.gpu = FALSE)[[1]]
  tight <- bulkem(list(x), num.components = 3, family = "normal", equal.scale = TRUE, seed = 1, use.gpu = FALSE,
                  epsilon = 1e-13, max.iters = 1e5, control = list(accelerate = FALSE))[[1]]
  expect_equal(d$sigma, tight$sigma, tolerance = 1e-8)
  expect_equal(d$mu, tight$mu, tolerance = 1e-8)
  expect_equal(d$alpha, tight$alpha, tolerance = 1e-8)
  # 2K free parameters
  g <- glance(bulkem(list(x), num.components = 3, family = "normal", equal.scale = TRUE, seed = 1,
                     use.gpu = FALSE))
  expect_identical(g$df, 6L)
  expect_equal(g$BIC, -2 * g$logLik + 6 * log(length(x)))
  cmp <- bulkem_compare(bulkem(list(x), num.components = 1:3, family = "normal", equal.scale = TRUE,
                               seed = 1, use.gpu = FALSE))
  expect_identical(cmp$df, c(2L, 4L, 6L))
})

test_that("every family's shared shape reaches the constrained likelihood's maximum", {
  set.seed(52)
  pos <- c(statmod::rinvgauss(300, 1, 5), statmod::rinvgauss(200, 4, 5))
  for (family in c("invgauss", "gamma", "lognormal", "normal")) {
    x <- if (family == "normal") log(pos) else pos
    f <- bulkem(list(x), family = family, equal.scale = TRUE, seed = 2, use.gpu = FALSE, epsilon = 1e-10)[[1]]
    shape <- f[[bulkem:::shape_name(family)]]
    expect_identical(f$status, "converged", info = family)
    expect_identical(length(unique(shape)), 1L)
    theta <- c(f$alpha[1], f$mu, log(shape[1]))
    expect_equal(constrained_loglik(theta, x, 2, family), f$loglik, tolerance = 1e-10, info = family)
    starts <- list(theta, theta + c(0.05, -0.1, 0.1, 0.2), c(0.5, quantile(x, c(0.25, 0.75)), log(sd(x))))
    best <- max(vapply(starts, function(s) {
      stats::optim(s, constrained_loglik, x = x, k = 2, family = family,
                   control = list(fnscale = -1, maxit = 5000, reltol = 1e-14))$value
    }, 0))
    expect_gte(f$loglik, best - 1e-6)
  }
})

test_that("standard errors of a shared shape match a numerical Hessian", {
  set.seed(53)
  x <- c(statmod::rinvgauss(250, 1, 6), statmod::rinvgauss(200, 3.5, 6))
  for (family in c("invgauss", "normal")) {
    f <- bulkem(list(x), family = family, equal.scale = TRUE, seed = 3, use.gpu = FALSE, epsilon = 1e-12)[[1]]
    shape <- bulkem:::shape_name(family)
    # theta in the parameters themselves: alpha1, mu1, mu2, the shape
    ll <- function(th) constrained_loglik(c(th[1:3], log(th[4])), x, 2, family)
    theta <- c(f$alpha[1], f$mu, f[[shape]][1])
    h <- stats::optimHess(theta, ll, control = list(parscale = abs(theta), ndeps = rep(1e-4, 4)))
    se <- sqrt(diag(solve(-h)))
    got <- unname(f$se[c("alpha1", "mu1", "mu2", paste0(shape, 1))])
    expect_equal(got, se, tolerance = 1e-3, info = family)
    expect_equal(unname(f$se[[paste0(shape, 2)]]), se[4], tolerance = 1e-3)
    # the shapes move together: their covariance is the common variance
    v <- f$vcov
    expect_equal(v[paste0(shape, 1), paste0(shape, 2)], v[paste0(shape, 1), paste0(shape, 1)])
  }
})

test_that("Student's t shares its scale, each component keeping its df; weights and noise combine", {
  set.seed(54)
  x <- c(rt(300, 4), 6 + 1 * rt(200, 20))
  f <- bulkem(list(x), family = "t", equal.scale = TRUE, seed = 4, use.gpu = FALSE)[[1]]
  expect_identical(length(unique(f$sigma)), 1L)
  expect_identical(length(f$df), 2L)
  # polished in its free parameters: at the defaults, the maximum where EM
  # run to a 1e-13 stop rule ends
  tight <- bulkem(list(x), family = "t", equal.scale = TRUE, seed = 4, use.gpu = FALSE, epsilon = 1e-13,
                  max.iters = 1e5, control = list(accelerate = FALSE))[[1]]
  for (field in c("mu", "sigma", "alpha", "df")) expect_equal(f[[field]], tight[[field]], tolerance = 1e-6)
  expect_gte(f$loglik, tight$loglik - 1e-9)
  # and with a location fixed, likewise
  g <- bulkem(list(x), family = "t", fixed = list(mu = c(0, NA)), seed = 4, use.gpu = FALSE)[[1]]
  g_tight <- bulkem(list(x), family = "t", fixed = list(mu = c(0, NA)), seed = 4, use.gpu = FALSE, epsilon = 1e-13,
                    max.iters = 1e5, control = list(accelerate = FALSE))[[1]]
  for (field in c("mu", "sigma", "alpha", "df")) expect_equal(g[[field]], g_tight[[field]], tolerance = 1e-6)
  expect_true(0 %in% g$mu)
  expect_identical(glance(bulkem(list(x), family = "t", equal.scale = TRUE, seed = 4, use.gpu = FALSE))$df, 6L)
  u <- sort(unique(round(x, 1)))
  cnt <- as.numeric(table(factor(round(x, 1), levels = u)))
  a <- bulkem(list(round(x, 1)), family = "normal", equal.scale = TRUE, noise = TRUE, seed = 5, use.gpu = FALSE)[[1]]
  b <- bulkem(list(u), family = "normal", equal.scale = TRUE, noise = TRUE, seed = 5, use.gpu = FALSE,
              weights = list(cnt))[[1]]
  expect_equal(b$loglik, a$loglik, tolerance = 1e-9)
  expect_equal(b$sigma, a$sigma, tolerance = 1e-6)
})

test_that("equal.scale is checked and refused where it does not apply", {
  x <- c(rnorm(50), rnorm(50, 3))
  expect_error(bulkem(list(x), equal.scale = NA, use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "equal.scale")
  expect_error(bulkem(list(cbind(x, x + rnorm(100))), equal.scale = TRUE, use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "tied")
})

test_that("the bootstrap refits equal-scale fits with one shape shared", {
  set.seed(55)
  x <- c(rnorm(150, 0, 1), rnorm(100, 4, 1))
  fits <- bulkem(list(a = x), family = "normal", equal.scale = TRUE, seed = 1, use.gpu = FALSE,
                 control = list(keep.data = TRUE))
  se <- bulkem_bootstrap(fits, B = 40, seed = 2, random.inits = 5, use.gpu = FALSE)
  s <- se[se$term == "sigma", ]
  # every replicate's components share sigma: so do the bootstrap's
  # standard errors, which sit near the observed information's
  expect_identical(length(unique(s$std.error)), 1L)
  expect_equal(s$std.error[1], unname(fits$a$se[["sigma1"]]), tolerance = 0.4)
  lrt <- bulkem_bootstrap(bulkem(list(a = x), family = "normal", num.components = 1, seed = 1,
                                 use.gpu = FALSE, equal.scale = TRUE, control = list(keep.data = TRUE)),
                          test = "lrt", B = 19, seed = 3, random.inits = 5, use.gpu = FALSE)
  expect_lte(lrt$p_value[1], 0.05)
  # the alternative is the K = 2 fit with one sigma, as bulkem() makes it
  two <- bulkem(list(a = x), family = "normal", num.components = 2, equal.scale = TRUE, seed = 1,
                use.gpu = FALSE)
  expect_equal(lrt$loglik_alt[1], two$a$loglik, tolerance = 1e-6)
})

test_that("every start begins inside the equal-scale model, so none breaks down at its first step", {
  # three groups of unequal spread: starts drawn with unequal shapes used to
  # be lowered by the first pooled M-step and reported as a numerical
  # breakdown ("the log-likelihood fell")
  set.seed(51)
  x <- c(rnorm(200, 0, 1), rnorm(150, 3, 1.3), rnorm(100, 7, 0.8))
  for (starts in c("random", "partition")) for (family in c("normal", "t")) {
    fit <- bulkem(list(x), num.components = 3, family = family, equal.scale = TRUE, seed = 1,
                  use.gpu = FALSE, epsilon = 1e-10,
                  control = list(starts = starts, keep.starts = TRUE))[[1]]
    s <- fit$starts
    expect_false(any(grepl("log-likelihood fell", s$reason)), label = paste(starts, family))
    # the kept initial sigmas are the projected ones: equal within each start
    sig <- as.matrix(s[grep("^init_sigma_", names(s))])
    expect_true(all(apply(sig, 1, function(v) diff(range(v)) <= 1e-12 * max(v))), label = paste(starts, family))
  }
})
