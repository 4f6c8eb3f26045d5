# Standard errors of multivariate fits: the observed information against
# an independent numerical Hessian of a log-likelihood written here (its
# own parameter map and normal density, by chol() and backsolve()), the
# names, the delta method, singular fits, and vcov()/confint()/tidy().

# The mixture's parameters from theta in the fits' documented order
# (?`bulkem-multivariate`, "Standard errors").
# `df`: NULL for normal components, a t's fixed degrees of freedom, or
# "estimated" (then the last k entries of theta).
mv_params_of <- function(theta, k, d, structure, noise, df = NULL) {
  w <- k - 1 + noise
  a <- theta[seq_len(w)]
  alpha <- if (noise) a else c(a, 1 - sum(a))
  mu <- matrix(theta[w + seq_len(k * d)], k, d, byrow = TRUE)
  pos <- w + k * d
  low <- which(lower.tri(diag(d), diag = TRUE), arr.ind = TRUE)
  per <- switch(structure, full = , tied = nrow(low), diagonal = d, spherical = 1)
  sigma <- array(0, c(d, d, k))
  for (m in seq_len(k)) {
    v <- theta[pos + (if (structure == "tied") 0 else (m - 1) * per) + seq_len(per)]
    s <- matrix(0, d, d)
    if (structure %in% c("full", "tied")) {
      s[low] <- v
      s[low[, 2:1, drop = FALSE]] <- v
    } else {
      diag(s) <- v
    }
    sigma[, , m] <- s
  }
  if (identical(df, "estimated")) df <- theta[length(theta) - k + seq_len(k)]
  list(alpha = alpha, noise = if (noise) 1 - sum(a) else 0, mu = mu, sigma = sigma, df = df)
}

# What mv_params_of() is told of a fit's degrees of freedom.
mv_df_of <- function(f) {
  if (!identical(f$family, "t")) NULL else if (any(grepl("^df", names(f$se)))) "estimated" else f$df
}

# theta of a fit: its free parameters in that order.
mv_theta_of <- function(f) {
  k <- f$k
  low <- which(lower.tri(diag(f$d), diag = TRUE), arr.ind = TRUE)
  cov <- unlist(lapply(seq_len(if (f$covariance == "tied") 1 else k), function(m) {
    s <- f$sigma[, , m]
    switch(f$covariance, full = , tied = s[low], diagonal = diag(s), spherical = s[1, 1])
  }))
  unname(c(if (is.null(f$noise_support)) f$alpha[-k] else f$alpha, t(f$mu), cov,
           if (identical(mv_df_of(f), "estimated")) f$df))
}

# The log-likelihood: each normal's (or t's) log-density by its Cholesky
# factor, the noise's the uniform over the box `support` (d x 2).
mv_loglik <- function(theta, x, k, structure, support = NULL, df = NULL) {
  d <- ncol(x)
  p <- mv_params_of(theta, k, d, structure, !is.null(support), df)
  dens <- 0
  for (m in seq_len(k)) {
    r <- chol(p$sigma[, , m])
    z <- backsolve(r, t(x) - p$mu[m, ], transpose = TRUE)
    delta <- colSums(z^2)
    log_d <- if (is.null(p$df)) {
      -0.5 * d * log(2 * pi) - sum(log(diag(r))) - 0.5 * delta
    } else {
      nu <- p$df[m]
      lgamma((nu + d) / 2) - lgamma(nu / 2) - 0.5 * d * log(nu * pi) - sum(log(diag(r))) -
        (nu + d) / 2 * log1p(delta / nu)
    }
    dens <- dens + p$alpha[m] * exp(log_d)
  }
  if (!is.null(support)) dens <- dens + p$noise / prod(support[, 2] - support[, 1])
  sum(log(dens))
}

# Each free parameter's unit: 1 for a weight, the variable's sd for a mean,
# the product of two for a covariance entry.
mv_units <- function(f, sd) {
  low <- which(lower.tri(diag(f$d), diag = TRUE), arr.ind = TRUE)
  cov <- switch(f$covariance, full = , tied = sd[low[, 1]] * sd[low[, 2]], diagonal = sd^2, spherical = mean(sd^2))
  c(rep(1, f$k - 1 + !is.null(f$noise_support)), rep(sd, f$k),
    rep(cov, if (f$covariance == "tied") 1 else f$k), if (identical(mv_df_of(f), "estimated")) rep(1, f$k))
}

# -Hessian by optimHess with one Richardson extrapolation (steps h and 2h),
# as helper-loglik.R's numerical_information, but in u with theta =
# estimate + s * u: optimHess differences the gradient with steps of ndeps
# in the parameters' own units whatever parscale says (R's optim.c,
# optimhess), far too long for a variance of 0.01 (a 1.5e-3 error on
# iris); in u every step is ndeps * s, s being each parameter's size plus a
# hundredth of its unit, so that a covariance near 0 gets a step too.
mv_numerical_information <- function(f, x, h = 1e-3) {
  theta <- mv_theta_of(f)
  s <- abs(theta) + 0.01 * mv_units(f, apply(x, 2, stats::sd))
  ll <- function(u) mv_loglik(theta + s * u, x, f$k, f$covariance, f$noise_support, mv_df_of(f))
  hess <- function(h) stats::optimHess(rep(0, length(theta)), ll, control = list(ndeps = rep(h, length(theta))))
  -((4 * hess(h) - hess(2 * h)) / 3) / outer(s, s)
}

# n draws per component in d variables of different units (sd about 1, 3
# and 0.5: the map to the data's units is not the identity), correlated,
# the means apart; with `noise`, a tenth more uniform over a wider box.
mv_draw <- function(n, k, d, noise) {
  units <- c(1, 3, 0.5)[seq_len(d)]
  x <- do.call(rbind, lapply(seq_len(k), function(m) {
    s <- diag(d) * (0.6 + 0.3 * m) + 0.4 * (-1)^m * (1 - diag(d)) * 0.6
    z <- matrix(stats::rnorm(n * d), n, d) %*% chol(s)
    sweep(z, 2, 4 * (m - 1) * c(1, -0.5, 0.7)[seq_len(d)], "+")
  }))
  if (noise) {
    box <- apply(x, 2, range) + c(-3, 3)
    x <- rbind(x, vapply(seq_len(d), function(j) stats::runif(n * k / 10, box[1, j], box[2, j]),
                         numeric(n * k / 10)))
  }
  x <- sweep(x, 2, units, "*")
  colnames(x) <- c("a", "b", "c")[seq_len(d)]
  x
}

mv_worst_relative <- function(a, b) {
  d <- sqrt(abs(diag(b)))
  max(abs(a - b) / outer(d, d))
}

test_that("vcov is the inverse of an independent numerical Hessian (d = 2, 3; K = 1..3; every structure; noise)", {
  for (d in 2:3) {
    for (k in 1:3) {
      for (noise in c(FALSE, TRUE)) {
        set.seed(10 * d + k + 100 * noise)
        x <- mv_draw(120, k, d, noise)
        for (structure in c("full", "tied", "diagonal", "spherical")) {
          label <- paste0(structure, ", d = ", d, ", K = ", k, if (noise) ", noise")
          f <- bulkem(list(x), num.components = k, covariance = structure, noise = noise, random.inits = 10,
                      epsilon = 1e-10, max.iters = 1e5, use.gpu = FALSE, seed = 1,
                      control = list(threads = 2))[[1]]
          expect_identical(f$status, "converged", label = label)
          expect_false(is.null(f$vcov), label = label)
          if (is.null(f$vcov)) next
          # the map back: the fit's parameters give its log-likelihood
          expect_equal(mv_loglik(mv_theta_of(f), x, k, structure, f$noise_support), f$loglik,
                       tolerance = 1e-10, label = label)
          info <- mv_numerical_information(f, x)
          expect_lt(mv_worst_relative(solve(f$vcov), info), 1e-5, label = label)
          expect_lt(mv_worst_relative(f$vcov, solve(info)), 1e-5, label = label)
          # se: the diagonal's roots, the dependent weight's by the delta
          # method (alphaK after the weights, or noise last)
          w <- seq_len(k - 1 + noise)
          free_se <- sqrt(diag(f$vcov))
          dependent <- sqrt(sum(f$vcov[w, w]))
          rest <- setdiff(seq_along(free_se), w)
          want <- if (noise) c(free_se, dependent) else c(free_se[w], dependent, free_se[rest])
          expect_equal(unname(f$se), unname(want), tolerance = 1e-12, label = label)
          expect_identical(setdiff(names(f$se), if (noise) "noise" else paste0("alpha", k)), rownames(f$vcov))
          expect_identical(colnames(f$vcov), rownames(f$vcov))
          expect_length(f$se, f$df_model + 1L)
        }
      }
    }
  }
})

test_that("t fits' vcov is the inverse of an independent numerical Hessian, df estimated or fixed", {
  for (case in list(list("full", FALSE, NULL, 2, 2), list("tied", TRUE, NULL, 2, 3),
                    list("diagonal", FALSE, 6, 2, 2), list("spherical", TRUE, NULL, 1, 3),
                    list("full", FALSE, NULL, 3, 2))) {
    structure <- case[[1]]
    noise <- case[[2]]
    df <- case[[3]]
    k <- case[[4]]
    d <- case[[5]]
    label <- paste0("t, ", structure, ", K = ", k, ", d = ", d, if (noise) ", noise", if (!is.null(df)) ", df fixed")
    set.seed(70 + k + d)
    x <- mv_draw(150, k, d, noise)
    # heavier tails than the normal's
    x <- x + matrix(stats::rt(length(x), 4) * 0.3, nrow(x))
    f <- bulkem(list(x), num.components = k, family = "t", covariance = structure, noise = noise, df = df,
                random.inits = 10, epsilon = 1e-12, max.iters = 1e5, use.gpu = FALSE, seed = 1,
                control = list(threads = 2))[[1]]
    expect_identical(f$status, "converged", label = label)
    expect_false(is.null(f$vcov), label = label)
    if (is.null(f$vcov)) next
    expect_equal(mv_loglik(mv_theta_of(f), x, k, structure, f$noise_support, mv_df_of(f)), f$loglik,
                 tolerance = 1e-10, label = label)
    info <- mv_numerical_information(f, x)
    expect_lt(mv_worst_relative(solve(f$vcov), info), 1e-5, label = label)
    expect_lt(mv_worst_relative(f$vcov, solve(info)), 1e-5, label = label)
    expect_equal(sum(grepl("^df", rownames(f$vcov))), if (is.null(df)) k else 0, label = label)
    expect_length(f$se, f$df_model + 1L)
    ci <- confint(f)
    if (is.null(df)) {
      # df's interval on the log scale: positive, around the estimate
      expect_true(all(ci[paste0("df", seq_len(k)), 1] > 0 & ci[paste0("df", seq_len(k)), 1] < f$df))
    }
  }
})

test_that("the parameters are named after the variables, in the documented order", {
  x <- as.matrix(faithful)
  fit <- function(structure, noise = FALSE) {
    bulkem(list(x), num.components = 2, covariance = structure, noise = noise, seed = 1, use.gpu = FALSE,
           control = list(threads = 2))[[1]]
  }
  e <- "eruptions"
  w <- "waiting"
  expect_identical(names(fit("full")$se),
                   c("alpha1", "alpha2", "mu1.eruptions", "mu1.waiting", "mu2.eruptions", "mu2.waiting",
                     paste0("sigma1.", c("eruptions.eruptions", "waiting.eruptions", "waiting.waiting")),
                     paste0("sigma2.", c("eruptions.eruptions", "waiting.eruptions", "waiting.waiting"))))
  tied <- fit("tied", noise = TRUE)
  expect_identical(rownames(vcov(tied)),
                   c("alpha1", "alpha2", paste0("mu", rep(1:2, each = 2), ".", c(e, w)),
                     paste0("sigma.", c("eruptions.eruptions", "waiting.eruptions", "waiting.waiting"))))
  expect_identical(names(tied$se)[length(tied$se)], "noise")
  expect_identical(names(fit("diagonal")$se)[7:10],
                   c("sigma1.eruptions.eruptions", "sigma1.waiting.waiting",
                     "sigma2.eruptions.eruptions", "sigma2.waiting.waiting"))
  expect_identical(names(fit("spherical")$se)[7:8], c("sigma1", "sigma2"))
  # the fits of one call share their names (made once per K): renaming one
  # fit's leaves the others' alone, as R's copy-on-modify promises
  set.seed(5)
  fits <- bulkem(list(x, x[-(1:20), ], x[-(1:40), ]), num.components = 1:2, seed = 1, use.gpu = FALSE,
                 control = list(threads = 2))
  first <- fits[[1]]
  names(first$se)[1] <- "renamed"
  dimnames(first$vcov)[[1]][1] <- "renamed"
  full <- names(fit("full")$se)
  for (g in fits) {
    for (f in g$all_k) {
      expect_identical(names(f$se)[1], "alpha1")
      # (one component has no free weight)
      expect_identical(rownames(f$vcov)[1], if (f$k == 2) "alpha1" else "mu1.eruptions")
      expect_identical(names(f$se), if (f$k == 2) full else c("alpha1", full[c(3:4, 7:9)]))
    }
  }
})

test_that("confint() and tidy() use the standard errors, on the documented scales", {
  set.seed(3)
  x <- mv_draw(150, 2, 2, FALSE)
  r <- bulkem(list(p = x, q = x[1:200, ]), num.components = 2, covariance = "full", seed = 2,
              use.gpu = FALSE, control = list(threads = 2))
  f <- r$p
  ci <- confint(f)
  expect_identical(colnames(ci), c("2.5 %", "97.5 %"))
  expect_identical(rownames(ci), names(f$se))
  z <- qnorm(0.975)
  se <- f$se
  est <- unname(c(f$alpha[1], f$mu[1, "a"], f$sigma[1, 1, 1], f$sigma[2, 1, 1]))
  names(est) <- c("alpha1", "mu1.a", "sigma1.a.a", "sigma1.b.a")
  # weights on the logit scale, means and covariances on their own,
  # variances on the log scale (the delta method's se on each)
  expect_equal(ci["alpha1", ], plogis(qlogis(est[[1]]) + c(-1, 1) * z * se[["alpha1"]] / (est[[1]] * (1 - est[[1]]))),
               ignore_attr = TRUE, tolerance = 1e-14)
  expect_equal(ci["mu1.a", ], est[["mu1.a"]] + c(-1, 1) * z * se[["mu1.a"]], ignore_attr = TRUE, tolerance = 1e-14)
  expect_equal(ci["sigma1.a.a", ], exp(log(est[["sigma1.a.a"]]) + c(-1, 1) * z * se[["sigma1.a.a"]] / est[["sigma1.a.a"]]),
               ignore_attr = TRUE, tolerance = 1e-14)
  expect_equal(ci["sigma1.b.a", ], est[["sigma1.b.a"]] + c(-1, 1) * z * se[["sigma1.b.a"]], ignore_attr = TRUE,
               tolerance = 1e-14)
  expect_identical(rownames(confint(f, c("mu2.b", "alpha2"), level = 0.9)), c("mu2.b", "alpha2"))
  expect_error(confint(f, "mu3.a"), class = "bulkem_error_argument")
  # a whole result: a row per dataset and parameter, tidy()'s columns
  all <- confint(r)
  expect_identical(names(all), c("dataset", "term", "component", "variable", "variable2", "estimate",
                                 "std.error", "conf.low", "conf.high"))
  expect_identical(nrow(all), 2L * length(f$se))
  expect_equal(all$std.error[all$dataset == "p"], unname(f$se))
  expect_equal(as.matrix(all[all$dataset == "p", c("conf.low", "conf.high")]), ci, ignore_attr = TRUE)
  expect_identical(all$variable2[all$term == "sigma2.b.a"], c("a", "a"))
  expect_identical(vcov(r), list(p = f$vcov, q = r$q$vcov))
  # tidy(): each covariance entry's parameter; tied, the shared one's; the
  # zeros a structure fixes, 0
  td <- tidy(f)
  expect_equal(td$std.error[td$term == "sigma" & td$component == 2 & td$variable == "b" & td$variable2 == "a"],
               se[["sigma2.b.a"]])
  expect_equal(td$std.error[td$term == "alpha"], unname(se[c("alpha1", "alpha2")]))
  for (structure in c("tied", "diagonal", "spherical")) {
    g <- bulkem(list(x), num.components = 2, covariance = structure, seed = 2, use.gpu = FALSE,
                control = list(threads = 2))[[1]]
    td <- tidy(g)
    sig <- td[td$term == "sigma", ]
    off <- sig$variable != sig$variable2
    if (structure == "tied") {
      expect_equal(sig$std.error[sig$component == 1], sig$std.error[sig$component == 2])
      expect_equal(sig$std.error[sig$component == 1], unname(g$se[c("sigma.a.a", "sigma.b.a", "sigma.b.b")]))
    } else {
      expect_identical(sig$std.error[off], c(0, 0))
      expect_equal(sig$std.error[!off & sig$component == 2],
                   unname(g$se[if (structure == "diagonal") c("sigma2.a.a", "sigma2.b.b") else c("sigma2", "sigma2")]))
    }
  }
})

test_that("a singular information gives NULL standard errors and says why, and no crash", {
  # iris has no outliers: the noise component's weight goes to 0, where
  # the information about it is lost (as a univariate fit says it)
  x <- as.matrix(iris[1:4])
  set.seed(5)
  box <- apply(x, 2, range)
  outliers <- vapply(1:4, function(j) runif(30, box[1, j] - 2, box[2, j] + 2), numeric(30))
  r <- bulkem(list(iris = x, outliers = rbind(x, outliers)),
              num.components = 2, covariance = "full", noise = TRUE, seed = 1, use.gpu = FALSE,
              random.inits = 20, epsilon = 1e-10, max.iters = 1e5, control = list(threads = 2))
  f <- r$iris
  expect_lt(f$noise, 1e-6)
  expect_identical(f$status, "converged")
  expect_null(f$se)
  expect_null(f$vcov)
  expect_match(f$message, "^no standard errors: the observed information is singular \\(first at [a-z0-9.A-Z]+\\)$")
  expect_error(vcov(f), "no standard errors", class = "bulkem_error_argument")
  expect_error(confint(f), class = "bulkem_error_argument")
  expect_true(all(is.na(tidy(f)$std.error)))
  # in a result: NULL and NA rows for it, the other fit's as they are
  expect_null(vcov(r)$iris)
  ci <- confint(r)
  expect_true(all(is.na(ci[ci$dataset == "iris", c("std.error", "conf.low", "conf.high")])))
  expect_identical(sum(ci$dataset == "iris"), 2L + 2L * 4L + 2L * 10L + 1L)
  expect_false(anyNA(ci$std.error[ci$dataset == "outliers"]))
  # without standard errors asked for: NULL, nothing said, vcov() an error
  off <- bulkem(list(as.matrix(faithful)), num.components = 2, seed = 1, use.gpu = FALSE,
                control = list(threads = 2, standard.errors = FALSE))
  expect_null(off[[1]]$se)
  expect_null(off[[1]]$vcov)
  expect_identical(off[[1]]$message, "")
  expect_error(vcov(off[[1]]), "standard.errors = FALSE", class = "bulkem_error_argument")
  expect_error(confint(off), "standard.errors = FALSE", class = "bulkem_error_argument")
  # K chosen by BIC: every K's fit has its own
  many <- bulkem(list(as.matrix(faithful)), num.components = 1:3, seed = 1, use.gpu = FALSE,
                 control = list(threads = 2))[[1]]
  expect_identical(vapply(many$all_k, function(g) length(g$se), 0L), c(6L, 12L, 18L)[order(c(1, 2, 3) != many$k)])
})
