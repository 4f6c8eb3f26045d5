# tidy(), glance() and augment() (generics) on a result and on one fit, both
# families, against the fits' fields, statmod/dnorm log-likelihoods, the
# closed forms of AIC/BIC and mclust's E-step.

tidy_fits <- function(family, keep = TRUE) {
  set.seed(if (family == "normal") 41 else 42)
  d <- if (family == "normal") {
    list(a = rmix(300, c(0.4, 0.6), c(0, 4), c(1, 1.5), "normal"),
         b = rmix(300, c(0.3, 0.3, 0.4), c(-5, 0, 6), c(1, 0.7, 1.2), "normal"),
         bad = c(1, Inf, 3))
  } else {
    list(a = b1_dataset(500), b = rmix(400, c(0.6, 0.4), c(1, 5), c(5, 20)), bad = c(-1, 2, 3))
  }
  k <- if (family == "normal") 2:3 else 2
  fits <- quiet_bulkem(d, num.components = k, random.inits = 5, family = family, seed = 6,
                       use.gpu = FALSE, control = list(keep.data = keep))
  list(d = d, fits = fits)
}

test_that("tidy, glance and augment are the generics package's, re-exported", {
  expect_identical(bulkem::tidy, generics::tidy)
  expect_identical(bulkem::glance, generics::glance)
  expect_identical(bulkem::augment, generics::augment)
})

for (family in c("normal", "invgauss")) {
  shape <- if (family == "normal") "sigma" else "lambda"

  test_that(paste("tidy(): one row per dataset, component and parameter:", family), {
    m <- tidy_fits(family)
    t <- tidy(m$fits, conf.level = 0.9)
    expect_s3_class(t, "data.frame")
    expect_false(inherits(t, "tbl_df"))
    expect_named(t, c("dataset", "component", "term", "estimate", "std.error", "conf.low", "conf.high"))
    k <- vapply(m$fits, function(f) length(f$mu), 0L)
    expect_identical(nrow(t), as.integer(3 * sum(k)))
    for (ds in names(m$fits)) {
      f <- m$fits[[ds]]
      r <- t[t$dataset == ds, ]
      expect_identical(r$component, rep(seq_along(f$mu), each = 3))
      expect_identical(r$term, rep(c("alpha", "mu", shape), length(f$mu)))
      for (term in c("alpha", "mu", shape)) {
        expect_identical(r$estimate[r$term == term], f[[term]])
        expect_identical(r$std.error[r$term == term], unname(f$se[paste0(term, seq_along(f$mu))]))
      }
      if (isTRUE(f$fit_success)) {
        ci <- confint(f, level = 0.9)
        key <- paste0(r$term, r$component)
        expect_equal(r$conf.low, unname(ci[key, 1]), tolerance = 1e-12)
        expect_equal(r$conf.high, unname(ci[key, 2]), tolerance = 1e-12)
        # and by hand, by the delta method: weights on the logit scale,
        # positive parameters (lambda, sigma, the inverse Gaussian's mu) on
        # the log scale, the Normal's mu on its own
        z <- qnorm(0.95)
        est <- r$estimate
        se <- r$std.error
        w <- r$term == "alpha"
        l <- r$term == shape | (r$term == "mu" & family == "invgauss")
        nat <- !w & !l
        expect_equal(r$conf.low[w], plogis(qlogis(est[w]) - z * se[w] / (est[w] * (1 - est[w]))), tolerance = 1e-12)
        expect_equal(r$conf.high[w], plogis(qlogis(est[w]) + z * se[w] / (est[w] * (1 - est[w]))), tolerance = 1e-12)
        expect_equal(r$conf.low[l], exp(log(est[l]) - z * se[l] / est[l]), tolerance = 1e-12)
        expect_equal(r$conf.high[l], exp(log(est[l]) + z * se[l] / est[l]), tolerance = 1e-12)
        expect_equal(r$conf.low[nat], est[nat] - z * se[nat], tolerance = 1e-12)
        expect_equal(r$conf.high[nat], est[nat] + z * se[nat], tolerance = 1e-12)
      }
    }
    expect_true(all(is.na(t$estimate[t$dataset == "bad"])))
    one <- tidy(m$fits$b, conf.level = 0.9)
    expect_false("dataset" %in% names(one))
    expect_equal(one, t[t$dataset == "b", -1], ignore_attr = TRUE)
    expect_named(tidy(m$fits, conf.int = FALSE), c("dataset", "component", "term", "estimate", "std.error"))
    expect_error(tidy(m$fits, conf.level = 2), class = "bulkem_error_argument")
    expect_error(tidy(m$fits$a, conf.int = NA), class = "bulkem_error_argument")
    expect_error(tidy(m$fits, level = 0.9), class = "bulkem_error_argument")
  })

  test_that(paste("glance(): one row per dataset, against independent log-likelihoods:", family), {
    skip_if_not_installed("statmod")
    m <- tidy_fits(family)
    g <- glance(m$fits)
    expect_s3_class(g, "data.frame")
    expect_identical(g$dataset, c("a", "b", "bad"))
    for (col in c("k", "logLik", "AIC", "BIC", "nobs", "df", "status", "converged", "spurious",
                  "starts_at_best", "deviance", "iterations", "starts_ok", "spurious_starts", "family")) {
      expect_true(col %in% names(g), label = col)
    }
    # every column kept where it was, `fragile`, `ICL` and `far` added last
    expect_identical(names(g), c("dataset", "family", "k", "logLik", "AIC", "BIC", "deviance", "df", "nobs",
                                 "status", "converged", "iterations", "starts_ok", "starts_at_best",
                                 "spurious", "spurious_starts", "fragile", "ICL", "far"))
    k <- vapply(m$fits, function(f) length(f$mu), 0L, USE.NAMES = FALSE)
    ref <- c(reference_loglik(m$d$a, m$fits$a), reference_loglik(m$d$b, m$fits$b), NA)
    n <- unname(lengths(m$d))
    expect_identical(g$k, k)
    expect_identical(g$df, as.integer(3 * k - 1))
    expect_identical(g$nobs, n)
    expect_equal(g$logLik, ref, tolerance = 1e-10)
    expect_equal(g$AIC, -2 * ref + 2 * (3 * k - 1), tolerance = 1e-10)
    expect_equal(g$BIC, -2 * ref + log(n) * (3 * k - 1), tolerance = 1e-10)
    expect_equal(g$deviance, -2 * ref, tolerance = 1e-10)
    expect_identical(g$status, vapply(m$fits, `[[`, "", "status", USE.NAMES = FALSE))
    expect_identical(g$starts_at_best, vapply(m$fits, `[[`, 0L, "starts_at_best", USE.NAMES = FALSE))
    expect_identical(g$spurious, vapply(m$fits, `[[`, NA, "spurious", USE.NAMES = FALSE))
    # fragile: reached by one start only, of several
    expect_identical(g$fragile, vapply(m$fits, function(f) f$starts_at_best == 1L && f$starts_run > 1L, NA,
                                       USE.NAMES = FALSE))
    expect_identical(g$converged, c(TRUE, TRUE, FALSE))
    one <- glance(m$fits$a)
    expect_identical(nrow(one), 1L)
    expect_false("dataset" %in% names(one))
    expect_equal(one, g[1, -which(names(g) == "dataset")], ignore_attr = TRUE)
    expect_equal(unname(AIC(m$fits)), g$AIC)
  })
}

test_that("augment() adds classes, posteriors and uncertainty (mclust's E-step for the Normal)", {
  skip_if_not_installed("mclust")
  m <- tidy_fits("normal")
  a <- augment(m$fits)
  expect_s3_class(a, "data.frame")
  expect_named(a, c("dataset", "x", ".component", ".posterior_1", ".posterior_2", ".posterior_3",
                    ".uncertainty"))
  expect_identical(a$dataset, rep(c("a", "b", "bad"), lengths(m$d)))
  expect_identical(a$x, unlist(m$d, use.names = FALSE))
  for (ds in c("a", "b")) {
    f <- m$fits[[ds]]
    k <- length(f$mu)
    r <- a[a$dataset == ds, ]
    z <- mclust::estepV(data = m$d[[ds]], parameters = list(
      pro = f$alpha, mean = f$mu, variance = list(modelName = "V", d = 1, G = k, sigmasq = f$sigma^2)))$z
    expect_equal(unname(as.matrix(r[, paste0(".posterior_", seq_len(k))])), unname(z), tolerance = 1e-10)
    expect_identical(r$.component, as.integer(mclust::map(z)))
    expect_equal(r$.uncertainty, 1 - apply(z, 1, max), tolerance = 1e-10)
    if (k < 3) expect_true(all(is.na(r$.posterior_3)))
    # one fit: the same rows, without the dataset column and the padding
    one <- augment(f)
    expect_named(one, c("x", ".component", paste0(".posterior_", seq_len(k)), ".uncertainty"))
    expect_equal(one, r[, names(one)], ignore_attr = TRUE)
  }
  expect_identical(sort(unique(vapply(m$fits[1:2], function(f) length(f$mu), 0L))), 2:3)
  expect_true(all(is.na(a$.component[a$dataset == "bad"])))
})

test_that("augment() of inverse Gaussian fits agrees with statmod densities", {
  skip_if_not_installed("statmod")
  m <- tidy_fits("invgauss")
  f <- m$fits$b
  x <- c(0.3, 1, 4, 9, -2)
  a <- augment(f, newdata = x)
  dens <- sapply(1:2, function(j) f$alpha[j] * statmod::dinvgauss(x[1:4], f$mu[j], shape = f$lambda[j]))
  z <- dens / rowSums(dens)
  expect_equal(unname(as.matrix(a[1:4, c(".posterior_1", ".posterior_2")])), z, tolerance = 1e-10)
  expect_identical(a$.component[1:4], max.col(z, ties.method = "first"))
  expect_equal(a$.uncertainty[1:4], 1 - apply(z, 1, max), tolerance = 1e-10)
  expect_true(all(is.na(a[5, -1])))
  all <- augment(m$fits)
  expect_equal(all[all$dataset == "b", ".posterior_2"],
               augment(f)$.posterior_2, tolerance = 0)
})

test_that("augment() takes data or newdata, and says what to do without either", {
  m <- tidy_fits("normal", keep = FALSE)
  e <- expect_error(augment(m$fits$a), class = "bulkem_error_argument")
  expect_match(conditionMessage(e), "keep.data = TRUE")
  expect_error(augment(m$fits), class = "bulkem_error_argument")
  withdata <- augment(m$fits, data = m$d)
  expect_identical(withdata$x, unlist(m$d, use.names = FALSE))
  grid <- augment(m$fits, newdata = c(-1, 2))
  expect_identical(grid$dataset, rep(c("a", "b", "bad"), each = 2))
  expect_equal(grid[grid$dataset == "a", ".posterior_1"], predict(m$fits$a, c(-1, 2))$comp1)
  expect_identical(augment(m$fits$a, data = m$d$a)$x, m$d$a)
  expect_error(augment(m$fits, data = m$d[1:2]), class = "bulkem_error_argument")
  expect_error(augment(m$fits$a, data = "x"), class = "bulkem_error_argument")
  expect_error(augment(m$fits$a, m$d$a, extra = 1), class = "bulkem_error_argument")
})

test_that("glance()'s fragile: the best log-likelihood reached by one start, counted from every start's", {
  # Nile as three Normals has several optima, each reached by few of 8
  # starts; keep.starts gives every start's log-likelihood
  nile <- as.numeric(datasets::Nile)
  d <- list(a = nile, b = nile + 1, c = 2 * nile, d = nile[-1], e = nile[-(1:2)], f = nile[-(1:3)])
  fits <- bulkem(d, num.components = 3, random.inits = 8, family = "normal", seed = 2,
                 use.gpu = FALSE, control = list(keep.starts = TRUE, threads = 1))
  by_hand <- vapply(fits, function(f) {
    s <- f$starts
    ok <- s$status %in% c("converged", "max_iters")
    best <- f$loglik
    sum(ok & abs(s$loglik - best) <= 1e-6 * (1 + abs(best))) == 1 && nrow(s) > 1
  }, NA, USE.NAMES = FALSE)
  g <- glance(fits)
  expect_identical(g$fragile, by_hand)
  expect_true(any(by_hand))
  expect_identical(summary(fits)$fragile, by_hand)
  expect_output(print(fits), sprintf("%d fragile", sum(by_hand)))
  # K = 1 has one start (a closed form): never fragile
  expect_false(glance(bulkem(list(nile), num.components = 1, family = "normal", use.gpu = FALSE))$fragile)
})
