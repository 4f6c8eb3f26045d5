# bulkem()'s `weights` for multivariate data (issue 34, item 1, with issue
# 33's multivariate fits): frequency weights give the fit of the expanded
# data under every structure, t and noise included; case weights maximise
# the weighted log-likelihood (R's own densities, optim() and a numerical
# Hessian for the standard errors); the formula interface and na.action
# carry a row's weight with it; bad weights are classed errors.

# Rows of `x` rounded so that they repeat: the distinct rows, their counts
# and the data expanded from them in order.
heaped_rows <- function(x) {
  key <- apply(x, 1, paste, collapse = " ")
  first <- !duplicated(key)
  counts <- as.numeric(table(factor(key, levels = key[first])))
  values <- x[first, , drop = FALSE]
  list(values = values, counts = counts, all = values[rep(seq_len(nrow(values)), counts), , drop = FALSE])
}

# The weighted log-likelihood of a multivariate Normal or t mixture fit,
# from R's own linear algebra (solve(), determinant(), gamma functions).
mv_weighted_loglik <- function(f, x, w) {
  dens <- numeric(nrow(x))
  for (m in seq_len(f$k)) {
    s <- f$sigma[, , m]
    e <- sweep(x, 2, f$mu[m, ])
    q <- rowSums((e %*% solve(s)) * e)
    logdet <- as.numeric(determinant(s)$modulus)
    d <- ncol(x)
    ld <- if (f$family == "t") {
      nu <- f$df[m]
      lgamma((nu + d) / 2) - lgamma(nu / 2) - d / 2 * log(nu * pi) - logdet / 2 - (nu + d) / 2 * log1p(q / nu)
    } else {
      -d / 2 * log(2 * pi) - logdet / 2 - q / 2
    }
    dens <- dens + f$alpha[m] * exp(ld)
  }
  if (!is.na(f$noise)) dens <- dens + f$noise / prod(f$noise_support[, 2] - f$noise_support[, 1])
  sum(w * log(dens))
}

test_that("multivariate frequency weights give the fit of the expanded data, every structure, t and noise", {
  set.seed(61)
  x <- round(rbind(matrix(rnorm(300), 150), matrix(rnorm(240, 3.5), 120) %*% diag(c(1, 1.5))), 1)
  h <- heaped_rows(x)
  expect_lt(nrow(h$values), nrow(x))
  cases <- list(c("normal", "full", FALSE), c("normal", "tied", TRUE), c("normal", "diagonal", FALSE),
                c("normal", "spherical", TRUE), c("t", "full", TRUE), c("t", "diagonal", FALSE))
  for (case in cases) {
    args <- list(2, family = case[1], covariance = case[2], noise = as.logical(case[3]), seed = 1,
                 use.gpu = FALSE, epsilon = 1e-12, max.iters = 5000)
    expanded <- do.call(bulkem, c(list(list(h$all)), args))[[1]]
    weighted <- do.call(bulkem, c(list(list(h$values), weights = list(h$counts)), args))[[1]]
    info <- paste(case, collapse = " ")
    expect_identical(weighted$status, "converged", info = info)
    expect_equal(weighted$loglik, expanded$loglik, tolerance = 1e-10, info = info)
    # (a t mixture with noise is flat in the noise's weight against the
    # tails: the same log-likelihood to 1e-12 leaves the parameters to 1e-5)
    tol <- if (case[1] == "t") 1e-4 else 1e-6
    for (field in c("alpha", "mu", "sigma", if (case[1] == "t") "df", if (case[3] == "TRUE") "noise")) {
      expect_equal(weighted[[field]], expanded[[field]], tolerance = tol, info = paste(info, field))
    }
    expect_equal(weighted$se, expanded$se, tolerance = 1e-4, info = info)
    expect_equal(weighted$bic, expanded$bic, tolerance = 1e-10, info = info)
    expect_equal(weighted$icl, expanded$icl, tolerance = tol / 100, info = info)
    expect_identical(weighted$nobs, as.double(nrow(x)))
    expect_identical(weighted$n, nrow(h$values))
    # the log-likelihood is the weighted one of R's own densities
    expect_equal(weighted$loglik, mv_weighted_loglik(weighted, h$values, h$counts), tolerance = 1e-10,
                 info = info)
  }
})

test_that("multivariate case weights reach the weighted likelihood's maximum, with its standard errors", {
  set.seed(62)
  x <- rbind(matrix(rnorm(300, 0, 1), 150), cbind(rnorm(100, 3.5, 0.8), rnorm(100, 2, 1.3)))
  w <- runif(nrow(x), 0.2, 3)
  fit <- bulkem(list(x), 2, covariance = "diagonal", seed = 2, use.gpu = FALSE, weights = list(w),
                epsilon = 1e-12)[[1]]
  expect_equal(fit$loglik, mv_weighted_loglik(fit, x, w), tolerance = 1e-10)
  expect_equal(fit$nobs, sum(w))
  expect_equal(fit$bic, -2 * fit$loglik + 9 * log(sum(w)), tolerance = 1e-12)
  # theta = (alpha1, mu1 (x1, x2), mu2 (x1, x2), sd1 (x1, x2), sd2 (x1, x2)),
  # the likelihood written here from dnorm()
  ll <- function(th) {
    a <- th[1]
    if (a <= 0 || a >= 1 || any(th[6:9] <= 0)) return(-1e10)
    f1 <- dnorm(x[, 1], th[2], th[6]) * dnorm(x[, 2], th[3], th[7])
    f2 <- dnorm(x[, 1], th[4], th[8]) * dnorm(x[, 2], th[5], th[9])
    sum(w * log(a * f1 + (1 - a) * f2))
  }
  theta <- c(fit$alpha[1], fit$mu[1, ], fit$mu[2, ], sqrt(diag(fit$sigma[, , 1])), sqrt(diag(fit$sigma[, , 2])))
  starts <- list(theta, c(0.5, -1, -1, 4, 3, 1, 1, 1, 1), c(0.3, 0.5, 0, 3, 2, 2, 1, 0.5, 1))
  best <- max(vapply(starts, function(s) {
    stats::optim(s, ll, control = list(fnscale = -1, maxit = 20000, reltol = 1e-14))$value
  }, 0))
  expect_gte(fit$loglik, best - 1e-7)
  # standard errors against a numerical Hessian in bulkem's parameters
  # (the variances on the diagonal)
  th <- c(fit$alpha[1], fit$mu[1, ], fit$mu[2, ], diag(fit$sigma[, , 1]), diag(fit$sigma[, , 2]))
  llv <- function(t) ll(c(t[1:5], sqrt(t[6:9])))
  hess <- stats::optimHess(th, llv, control = list(parscale = abs(th), ndeps = rep(1e-4, 9)))
  se <- unname(sqrt(diag(solve(-hess))))
  names <- c("alpha1", "mu1.x1", "mu1.x2", "mu2.x1", "mu2.x2", "sigma1.x1.x1", "sigma1.x2.x2",
             "sigma2.x1.x1", "sigma2.x2.x2")
  expect_equal(unname(fit$se[names]), se, tolerance = 1e-3)
  expect_equal(unname(fit$se[["alpha2"]]), se[1], tolerance = 1e-3)
})

test_that("a multivariate weight of 0 is a row left out; weights of 1 are no weights", {
  set.seed(63)
  x <- rbind(matrix(rnorm(300), 150), matrix(rnorm(200, 4), 100))
  drop <- c(3, 60, 222)
  w <- rep(1, nrow(x))
  w[drop] <- 0
  zero <- bulkem(list(x), 2, seed = 3, use.gpu = FALSE, weights = list(w), epsilon = 1e-12)[[1]]
  left <- bulkem(list(x[-drop, ]), 2, seed = 3, use.gpu = FALSE, epsilon = 1e-12)[[1]]
  expect_equal(zero$loglik, left$loglik, tolerance = 1e-10)
  expect_equal(zero$mu, left$mu, tolerance = 1e-6)
  expect_identical(zero$nobs, as.double(nrow(x) - 3))
  expect_identical(zero$n, nrow(x))
  ones <- bulkem(list(x), 2, seed = 3, use.gpu = FALSE, weights = list(rep(1, nrow(x))))
  plain <- bulkem(list(x), 2, seed = 3, use.gpu = FALSE)
  expect_identical(unclass(ones)[[1]], unclass(plain)[[1]])
  expect_null(attr(ones, "weighted"))
  # too few rows of positive weight for K components: that dataset's status
  few <- rep(0, nrow(x))
  few[1:4] <- 1
  fits <- suppressWarnings(bulkem(list(x, x), 2, seed = 3, use.gpu = FALSE, weights = list(few, NULL)))
  expect_identical(fits[[1]]$status, "invalid")
  expect_match(fits[[1]]$message, "4 observations of positive weight are too few")
  expect_identical(fits[[2]]$status, "converged")
  expect_identical(unclass(fits)[[2]]$loglik, unclass(plain)[[1]]$loglik)
})

test_that("multivariate weights go with their rows: na.action, the formula interface, print", {
  set.seed(64)
  df <- data.frame(g = rep(c("a", "b"), each = 150), u = c(rnorm(80), rnorm(70, 3), rnorm(150)),
                   v = c(rnorm(80), rnorm(70, 3), rnorm(150)), w = rpois(300, 2) + 1)
  df$u[c(5, 160)] <- NA
  fits <- bulkem(cbind(u, v) ~ g, data = df, weights = w, seed = 5, use.gpu = FALSE, num.components = 1:2)
  keep <- !is.na(df$u)
  x <- lapply(split(df[keep, c("u", "v")], df$g[keep]), as.matrix)
  by_list <- bulkem(x, seed = 5, use.gpu = FALSE, num.components = 1:2,
                    weights = split(df$w[keep], df$g[keep]))
  for (g in c("a", "b")) {
    expect_equal(fits[[g]]$loglik, by_list[[g]]$loglik, tolerance = 1e-12)
    expect_equal(fits[[g]]$nobs, sum(df$w[keep & df$g == g]))
    expect_identical(fits[[g]]$k, by_list[[g]]$k)
  }
  expect_true(isTRUE(attr(fits, "weighted")))
  expect_equal(unname(BIC(fits)), vapply(unclass(fits), function(f) f$bic, 0), ignore_attr = TRUE)
  expect_equal(stats::nobs(fits$a), sum(df$w[keep & df$g == "a"]))
  # a list of matrices with missing values: a dropped row's weight goes with it
  m <- as.matrix(df[df$g == "a", c("u", "v")])
  wa <- df$w[df$g == "a"]
  a <- bulkem(list(m), 1, use.gpu = FALSE, weights = list(wa))[[1]]
  expect_equal(unname(a$mu[1, ]), unname(colSums(m[-5, ] * wa[-5]) / sum(wa[-5])), tolerance = 1e-12)
  expect_output(print(a), sprintf("n = 149 \\(weights summing to %s\\)", format(sum(wa[-5]))))
})

test_that("bad multivariate weights are classed argument errors naming weights", {
  m <- list(cbind(rnorm(50), rnorm(50)))
  bad <- function(w, regexp) {
    expect_error(bulkem(m, use.gpu = FALSE, weights = w), class = "bulkem_error_argument", regexp = regexp)
  }
  bad(list(rep(1, 100)), "as long as its dataset \\(50 rows\\)")
  bad(list(c(-1, rep(1, 49))), "finite numbers >= 0")
  bad(list(rep(0, 50)), "all 0")
  bad(list(matrix(1, 50, 2)), "numeric vector")
  # a variable constant among the rows of positive weight cannot be scaled
  x <- cbind(c(rep(1, 25), rnorm(25)), rnorm(50))
  f <- suppressWarnings(bulkem(list(x), 1, use.gpu = FALSE, weights = list(rep(c(1, 0), each = 25))))[[1]]
  expect_identical(f$status, "invalid")
  expect_match(f$message, "variable 1 is constant")
})
