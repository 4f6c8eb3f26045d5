# bulkem_bootstrap() of multivariate fits (issue 33's "everything around
# the fit"): standard errors against closed forms and the observed
# information, components matched whatever order the refits take, the test
# of K vs K + 1 against closed-form log-likelihoods, weights, t and noise,
# and bad input as classed errors.

skip_if_not_installed("MASS")

# n rows of a bivariate mixture: alpha, means (a row per component), one
# covariance matrix per component.
rmvmix <- function(n, alpha, mu, sigma) {
  comp <- sample.int(length(alpha), n, replace = TRUE, prob = alpha)
  x <- matrix(0, n, ncol(mu), dimnames = list(NULL, paste0("v", seq_len(ncol(mu)))))
  for (m in seq_along(alpha)) {
    i <- comp == m
    if (any(i)) x[i, ] <- MASS::mvrnorm(sum(i), mu[m, ], sigma[[m]])
  }
  x
}

test_that("a single Normal's bootstrap standard errors match the closed forms", {
  set.seed(11)
  s <- matrix(c(2, 0.6, 0.6, 1), 2)
  x <- MASS::mvrnorm(500, c(1, -1), s)
  f <- bulkem(list(x), num.components = 1, family = "normal", use.gpu = FALSE, seed = 1,
              control = list(keep.data = TRUE, threads = 1))
  bs <- bulkem_bootstrap(f, B = 300, seed = 2, random.inits = 2, use.gpu = FALSE, control = list(threads = 1))
  expect_s3_class(bs, "bulkem_bootstrap")
  expect_equal(attr(bs, "replicates")$used, 300)
  sh <- unclass(f)[[1]]$sigma[, , 1]
  n <- 500
  mu <- bs[bs$term == "mu", ]
  # sd(mean_j) = sqrt(S_jj / n)
  expect_equal(mu$std.error, unname(sqrt(diag(sh) / n)), tolerance = 0.15)
  # the ML covariance's entries: var(S_jk) = (S_jk^2 + S_jj S_kk) / n
  sg <- bs[bs$term == "sigma", ]
  j <- match(sg$variable, colnames(sh))
  k <- match(sg$variable2, colnames(sh))
  expect_equal(sg$std.error, sqrt((sh[cbind(j, k)]^2 + sh[cbind(j, j)] * sh[cbind(k, k)]) / n), tolerance = 0.15)
  # the weight of one component is 1 in every replicate
  expect_equal(bs$std.error[bs$term == "alpha"], 0)
  expect_true(all(bs$conf.low <= bs$estimate & bs$estimate <= bs$conf.high))
  expect_identical(bs$estimate, tidy(f)$estimate)
})

test_that("components are matched to the estimate's: standard errors near the observed information's", {
  set.seed(12)
  mu <- rbind(c(0, 0), c(5, 0), c(0, 5))
  sig <- list(diag(2), matrix(c(1, 0.4, 0.4, 0.8), 2), diag(c(0.5, 1.5)))
  d <- lapply(1:2, function(i) rmvmix(600, c(0.5, 0.3, 0.2), mu, sig))
  f <- bulkem(d, num.components = 3, family = "normal", use.gpu = FALSE, seed = 1,
              control = list(keep.data = TRUE, threads = 2))
  bs <- bulkem_bootstrap(f, B = 150, seed = 5, random.inits = 4, use.gpu = FALSE, control = list(threads = 2))
  td <- tidy(f)
  cols <- c("dataset", "component", "term", "variable", "variable2")
  expect_identical(as.data.frame(unclass(bs))[cols], td[cols])
  expect_true(all(attr(bs, "replicates")$used >= 140))
  # matched replicates: each parameter's spread within 35% of the observed
  # information's standard error (mismatched labels would give spreads the
  # size of the distance between the means)
  ratio <- bs$std.error / td$std.error
  expect_true(all(ratio > 0.65 & ratio < 1.35), info = paste(range(ratio), collapse = " "))
  # reproducible from the seed, whatever the threads
  again <- bulkem_bootstrap(f, B = 150, seed = 5, random.inits = 4, use.gpu = FALSE, control = list(threads = 1))
  expect_identical(again$std.error, bs$std.error)
  # the same from `data` as from the kept data
  plain <- bulkem(d, num.components = 3, family = "normal", use.gpu = FALSE, seed = 1, control = list(threads = 2))
  given <- bulkem_bootstrap(plain, B = 150, seed = 5, random.inits = 4, use.gpu = FALSE, data = d,
                            control = list(threads = 2))
  expect_identical(given$std.error, bs$std.error)
})

test_that("the test of K vs K + 1 takes closed-form log-likelihoods and rejects a missing component", {
  set.seed(13)
  d <- list(two = rmvmix(300, c(0.6, 0.4), rbind(c(0, 0), c(4, 4)), list(diag(2), diag(2))),
            one = MASS::mvrnorm(300, c(0, 0), matrix(c(1, 0.3, 0.3, 1), 2)))
  colnames(d$one) <- c("v1", "v2")
  f <- bulkem(d, num.components = 1, family = "normal", use.gpu = FALSE, seed = 1,
              control = list(keep.data = TRUE, threads = 2))
  lrt <- bulkem_bootstrap(f, B = 39, test = "lrt", seed = 3, random.inits = 3, use.gpu = FALSE,
                          control = list(threads = 2))
  expect_s3_class(lrt, "bulkem_lrt")
  # K = 1's maximum: -n/2 (d log 2 pi + log det S + d), S the ML covariance
  closed <- vapply(d, function(x) {
    n <- nrow(x)
    S <- stats::cov(x) * (n - 1) / n
    -n / 2 * (2 * log(2 * pi) + as.numeric(determinant(S)$modulus) + 2)
  }, 0)
  expect_equal(lrt$loglik, unname(closed), tolerance = 1e-10)
  two <- bulkem(d, num.components = 2, family = "normal", use.gpu = FALSE, seed = 1, control = list(threads = 2))
  expect_equal(lrt$loglik_alt[1], unclass(two)[[1]]$loglik, tolerance = 1e-8)
  expect_equal(lrt$lrt, 2 * (lrt$loglik_alt - lrt$loglik))
  expect_equal(lrt$p_value[1], 1 / 40)
  expect_gt(lrt$p_value[2], 0.05)
  expect_equal(lengths(lrt$null), c(39L, 39L))
  # the sequential procedure picks 2 and 1
  seq_lrt <- bulkem_bootstrap(f, B = 39, test = "lrt", max.components = 2, seed = 3, random.inits = 3,
                              use.gpu = FALSE, control = list(threads = 2))
  expect_identical(attr(seq_lrt, "selected")$k, c(2L, 1L))
})

test_that("frequency weights bootstrap as the expanded data; t and noise fits bootstrap", {
  set.seed(14)
  x <- round(rmvmix(200, c(0.6, 0.4), rbind(c(0, 0), c(3, 3)), list(diag(2), diag(2))), 0)
  key <- apply(x, 1, paste, collapse = " ")
  first <- !duplicated(key)
  w <- as.numeric(table(factor(key, levels = key[first])))
  rows <- x[first, , drop = FALSE]
  expanded <- rows[rep(seq_len(nrow(rows)), w), , drop = FALSE]
  # (fits and refits run to a tight stop, so that the weighted fit and the
  # expanded one differ at rounding level only)
  fw <- bulkem(list(rows), weights = list(w), num.components = 2, family = "normal", use.gpu = FALSE,
               seed = 1, epsilon = 1e-12, control = list(keep.data = TRUE, threads = 1))
  fe <- bulkem(list(expanded), num.components = 2, family = "normal", use.gpu = FALSE, seed = 1,
               epsilon = 1e-12, control = list(keep.data = TRUE, threads = 1))
  bw <- bulkem_bootstrap(fw, B = 30, seed = 4, random.inits = 3, use.gpu = FALSE, epsilon = 1e-12,
                         control = list(threads = 1))
  be <- bulkem_bootstrap(fe, B = 30, seed = 4, random.inits = 3, use.gpu = FALSE, epsilon = 1e-12,
                         control = list(threads = 1))
  expect_equal(bw$std.error, be$std.error, tolerance = 1e-6)
  expect_error(bulkem_bootstrap(fw, B = 30, data = list(rows), use.gpu = FALSE), class = "bulkem_error_argument")

  set.seed(15)
  y <- rmvmix(300, c(0.6, 0.4), rbind(c(0, 0), c(5, 5)), list(diag(2), diag(2)))
  ft <- bulkem(list(y), num.components = 2, family = "t", use.gpu = FALSE, seed = 1,
               control = list(keep.data = TRUE, threads = 1))
  bt <- bulkem_bootstrap(ft, B = 20, seed = 4, random.inits = 2, use.gpu = FALSE, control = list(threads = 1))
  expect_identical(sum(bt$term == "df"), 2L)
  expect_true(all(is.finite(bt$std.error)))
  fd <- bulkem(list(y), num.components = 2, family = "t", df = 6, use.gpu = FALSE, seed = 1,
               control = list(keep.data = TRUE, threads = 1))
  bd <- bulkem_bootstrap(fd, B = 20, seed = 4, random.inits = 2, use.gpu = FALSE, control = list(threads = 1))
  expect_true(all(is.na(bd$std.error[bd$term == "df"])))
  expect_true(all(is.finite(bd$std.error[bd$term == "mu"])))

  z <- rbind(y, cbind(runif(15, -10, 15), runif(15, -10, 15)))
  fn <- bulkem(list(z), num.components = 2, family = "normal", noise = TRUE, use.gpu = FALSE, seed = 1,
               control = list(keep.data = TRUE, threads = 1))
  bn <- bulkem_bootstrap(fn, B = 30, seed = 4, random.inits = 2, use.gpu = FALSE, control = list(threads = 1))
  noise <- bn[bn$term == "noise", ]
  expect_equal(nrow(noise), 1L)
  expect_gt(noise$std.error, 0)
  expect_lt(noise$std.error, 0.05)
  lrt <- bulkem_bootstrap(fn, B = 19, test = "lrt", seed = 4, random.inits = 2, use.gpu = FALSE,
                          control = list(threads = 1))
  expect_true(is.finite(lrt$lrt))
})

test_that("bad multivariate bootstrap calls are classed errors", {
  set.seed(16)
  d <- list(rmvmix(100, c(0.5, 0.5), rbind(c(0, 0), c(4, 4)), list(diag(2), diag(2))))
  f <- bulkem(d, num.components = 2, family = "normal", use.gpu = FALSE, seed = 1, control = list(threads = 1))
  expect_error(bulkem_bootstrap(f, B = 10, use.gpu = FALSE), class = "bulkem_error_argument")
  expect_error(bulkem_bootstrap(f, B = 10, data = list(d[[1]][-1, ]), use.gpu = FALSE),
               class = "bulkem_error_argument")
  expect_error(bulkem_bootstrap(f, B = 10, data = list(d[[1]][, 1]), use.gpu = FALSE),
               class = "bulkem_error_argument")
  expect_error(bulkem_bootstrap(f, B = 10, data = d, use.gpu = FALSE, control = list(refine = 1)),
               "univariate data only", class = "bulkem_error_argument")
  fn <- bulkem(d, num.components = 2, family = "normal", noise = TRUE, use.gpu = FALSE, seed = 1,
               control = list(threads = 1))
  both <- c(f, fn)
  expect_error(bulkem_bootstrap(both, B = 10, data = c(d, d), use.gpu = FALSE), "noise",
               class = "bulkem_error_argument")
  # results of two structures combined (c() itself refuses two families)
  fd <- bulkem(d, num.components = 2, family = "normal", covariance = "diagonal", use.gpu = FALSE, seed = 1,
               control = list(threads = 1))
  expect_error(bulkem_bootstrap(c(f, fd), B = 10, data = c(d, d), use.gpu = FALSE),
               "mix families or covariance structures", class = "bulkem_error_argument")
  # t fits whose df were fixed to two values: one refit call takes one
  f4 <- bulkem(d, num.components = 2, family = "t", df = 4, use.gpu = FALSE, seed = 1, control = list(threads = 1))
  f8 <- bulkem(d, num.components = 2, family = "t", df = 8, use.gpu = FALSE, seed = 1, control = list(threads = 1))
  expect_error(bulkem_bootstrap(c(f4, f8), B = 10, data = c(d, d), use.gpu = FALSE),
               "fixed to several values", class = "bulkem_error_argument")
  # the same fixed value twice is one refit call
  expect_s3_class(bulkem_bootstrap(c(f4, f4), B = 5, data = c(d, d), use.gpu = FALSE, random.inits = 2),
                  "data.frame")
})

test_that("the test's statistic on faithful is mclust's", {
  skip_if_not_installed("mclust")
  fits <- bulkem(list(faithful = as.matrix(faithful)), num.components = 1, seed = 1,
                 use.gpu = FALSE, control = list(keep.data = TRUE, threads = 2))
  lrt <- bulkem_bootstrap(fits, B = 19, test = "lrt", seed = 1, random.inits = 5, use.gpu = FALSE,
                          control = list(threads = 2))
  m1 <- mclust_fit(faithful, 1, "VVV")
  m2 <- mclust_fit(faithful, 2, "VVV")
  expect_equal(lrt$loglik, m1$loglik, tolerance = 1e-10)
  expect_equal(lrt$loglik_alt, m2$loglik, tolerance = 1e-7)
  expect_equal(lrt$lrt, 2 * (m2$loglik - m1$loglik), tolerance = 1e-6)
  expect_equal(lrt$p_value, 1 / 20)
})

test_that("a dataset without a fit gets no replicates while the others are bootstrapped", {
  set.seed(17)
  d <- list(ok = rmvmix(200, c(0.5, 0.5), rbind(c(0, 0), c(4, 4)), list(diag(2), diag(2))),
            tiny = matrix(rnorm(8), 4, dimnames = list(NULL, c("v1", "v2"))))
  f <- suppressWarnings(bulkem(d, num.components = 2, family = "normal", use.gpu = FALSE, seed = 1,
                               control = list(keep.data = TRUE, threads = 1)))
  expect_identical(f$tiny$status, "invalid")
  bs <- bulkem_bootstrap(f, B = 10, seed = 1, random.inits = 2, use.gpu = FALSE, control = list(threads = 1))
  expect_identical(unique(bs$dataset), "ok")
  reps <- attr(bs, "replicates")
  expect_identical(reps$B, c(10L, 0L))
  expect_identical(reps$used[2], 0L)
  lrt <- bulkem_bootstrap(f, B = 19, test = "lrt", seed = 1, random.inits = 2, use.gpu = FALSE,
                          control = list(threads = 1))
  expect_true(is.na(lrt$p_value[lrt$dataset == "tiny"]))
  expect_true(is.finite(lrt$p_value[lrt$dataset == "ok"]))
})
