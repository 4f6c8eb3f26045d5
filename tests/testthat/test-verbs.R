# logLik, AIC, BIC, nobs, deviance on a whole result and one fit; fitted,
# residuals, sigma as errors; summary() of one fit; c() and [; the table of
# Ks. Each against an independent computation (statmod / dnorm
# log-likelihoods, the closed forms with df = 3K - 1).

verb_fits <- function(family) {
  set.seed(if (family == "normal") 21 else 22)
  d <- if (family == "normal") {
    list(a = rmix(400, c(0.4, 0.6), c(0, 4), c(1, 1.5), "normal"),
         b = rmix(300, c(0.5, 0.5), c(10, 20), c(2, 3), "normal"),
         bad = c(1, Inf, 3))
  } else {
    list(a = b1_dataset(600), b = rmix(400, c(0.6, 0.4), c(1, 5), c(5, 20)), bad = c(-1, 2, 3))
  }
  fits <- quiet_bulkem(d, random.inits = 5, family = family, seed = 3, use.gpu = FALSE)
  list(d = d, fits = fits)
}

for (family in c("normal", "invgauss")) {
  test_that(paste("logLik, AIC, BIC, nobs and deviance of a result, one value per dataset:", family), {
    skip_if_not_installed("statmod")
    m <- verb_fits(family)
    ref <- c(a = reference_loglik(m$d$a, m$fits$a), b = reference_loglik(m$d$b, m$fits$b), bad = NA)
    n <- lengths(m$d)
    df <- 3 * 2 - 1
    expect_equal(logLik(m$fits), ref, tolerance = 1e-10)
    expect_identical(names(logLik(m$fits)), c("a", "b", "bad"))
    expect_equal(AIC(m$fits), -2 * ref + 2 * df, tolerance = 1e-10)
    expect_equal(AIC(m$fits, k = 3.5), -2 * ref + 3.5 * df, tolerance = 1e-10)
    expect_equal(BIC(m$fits), -2 * ref + log(n) * df, tolerance = 1e-10)
    expect_equal(deviance(m$fits), -2 * ref, tolerance = 1e-10)
    expect_identical(nobs(m$fits), c(a = n[["a"]], b = n[["b"]], bad = 3L))
    # the per-fit fields agree
    expect_equal(unname(AIC(m$fits)[1:2]), c(m$fits$a$aic, m$fits$b$aic), tolerance = 1e-10)
    expect_equal(unname(BIC(m$fits)[1:2]), c(m$fits$a$bic, m$fits$b$bic), tolerance = 1e-10)
    # one fit: stats::AIC/BIC through logLik's df and nobs
    f <- m$fits$b
    expect_identical(attr(logLik(f), "df"), 5L)
    expect_identical(attr(logLik(f), "nobs"), n[["b"]])
    expect_equal(AIC(f), -2 * ref[["b"]] + 10, tolerance = 1e-10)
    expect_equal(BIC(f), -2 * ref[["b"]] + 5 * log(n[["b"]]), tolerance = 1e-10)
    expect_equal(deviance(f), -2 * ref[["b"]], tolerance = 1e-10)
    expect_identical(deviance(m$fits$bad), NA_real_)
  })
}

test_that("an unnamed result is named by position", {
  set.seed(23)
  d <- list(rnorm(100), rnorm(120, 3, 2))
  fits <- bulkem(d, num.components = 1, family = "normal", use.gpu = FALSE)
  expect_named(logLik(fits), c("1", "2"))
  expect_named(nobs(fits), c("1", "2"))
  # K = 1 has a closed form: the Normal MLE
  ml <- vapply(d, function(x) sum(dnorm(x, mean(x), sqrt(mean((x - mean(x))^2)), log = TRUE)), 0)
  expect_equal(unname(logLik(fits)), ml, tolerance = 1e-8)
  expect_equal(unname(AIC(fits)), -2 * ml + 2 * 2, tolerance = 1e-8)
})

test_that("several results to AIC() or BIC() are an argument error", {
  m <- verb_fits("normal")
  expect_error(AIC(m$fits, m$fits), class = "bulkem_error_argument")
  expect_error(BIC(m$fits, m$fits), class = "bulkem_error_argument")
  expect_error(logLik(m$fits, m$fits), class = "bulkem_error_argument")
})

test_that("fitted, residuals and sigma are classed errors, not NULL", {
  m <- verb_fits("normal")
  for (obj in list(m$fits, m$fits$a)) {
    e <- expect_error(fitted(obj), class = "bulkem_error_argument")
    expect_match(conditionMessage(e), "predict")
    expect_error(residuals(obj), class = "bulkem_error_argument")
    expect_error(resid(obj), class = "bulkem_error_argument")
    e <- expect_error(sigma(obj), class = "bulkem_error_argument")
    expect_match(conditionMessage(e), "coef")
  }
})

for (family in c("normal", "invgauss")) {
  test_that(paste("summary() of one fit: the parameters with their standard errors:", family), {
    m <- verb_fits(family)
    f <- m$fits$a
    shape <- if (family == "normal") "sigma" else "lambda"
    s <- summary(f)
    expect_s3_class(s, "summary.bulkem_fit")
    cf <- s$coefficients
    expect_named(cf, c("component", "alpha", "alpha.se", "mu", "mu.se", shape, paste0(shape, ".se")))
    expect_identical(cf$component, 1:2)
    expect_identical(cf$mu, f$mu)
    expect_identical(cf[[shape]], f[[shape]])
    expect_identical(cf$alpha.se, unname(f$se[c("alpha1", "alpha2")]))
    expect_identical(cf$mu.se, unname(f$se[c("mu1", "mu2")]))
    expect_identical(cf[[paste0(shape, ".se")]], unname(f$se[paste0(shape, 1:2)]))
    # the se is the one of the Wald interval (on the log scale for the
    # inverse Gaussian's mean, by the delta method)
    ci <- confint(f, "mu2", level = 0.95)
    width <- if (family == "normal") {
      2 * qnorm(0.975) * cf$mu.se[2]
    } else {
      cf$mu[2] * (exp(qnorm(0.975) * cf$mu.se[2] / cf$mu[2]) - exp(-qnorm(0.975) * cf$mu.se[2] / cf$mu[2]))
    }
    expect_equal(unname(ci[1, 2] - ci[1, 1]), width, tolerance = 1e-12)
    expect_equal(s$loglik, reference_loglik(m$d$a, f), tolerance = 1e-10)
    expect_identical(s$df, 5)
    expect_identical(s$n, length(m$d$a))
    expect_identical(s$status, f$status)
    expect_identical(s$starts_at_best, f$starts_at_best)
    expect_identical(s$spurious, f$spurious)
    out <- capture.output(print(s))
    expect_true(any(grepl("Components", out)))
    expect_true(any(grepl(shape, out)))
    expect_true(any(grepl(format(signif(f$mu[2], 4)), out, fixed = TRUE)))
    expect_true(any(grepl("AIC", out)) && any(grepl("BIC", out)))
    expect_output(print(summary(m$fits$bad)), "invalid")
  })
}

test_that("summary() of a result stays one row per dataset, with K", {
  m <- verb_fits("normal")
  s <- summary(m$fits)
  expect_s3_class(s, "data.frame")
  expect_identical(s$dataset, c("a", "b", "bad"))
  expect_identical(s$k, c(2L, 2L, 2L))
})

test_that("c() of results keeps the class, the fits and sensible attributes", {
  m <- verb_fits("normal")
  set.seed(24)
  other <- bulkem(list(z = rnorm(200)), num.components = 1, family = "normal", use.gpu = FALSE, seed = 99)
  both <- c(m$fits, other)
  expect_s3_class(both, "bulkem")
  expect_named(both, c("a", "b", "bad", "z"))
  expect_identical(unclass(both$z), unclass(other$z))
  expect_identical(unclass(both$a), unclass(m$fits$a))
  expect_identical(attr(both, "family"), "normal")
  expect_identical(attr(both, "num.components"), 1:2)
  expect_equal(attr(both, "elapsed"), attr(m$fits, "elapsed") + attr(other, "elapsed"))
  expect_equal(attr(both, "em_iterations"), attr(m$fits, "em_iterations") + attr(other, "em_iterations"))
  expect_identical(attr(both, "engine"), "cpu")
  expect_null(attr(both, "seed")) # the two calls had different seeds
  expect_identical(attr(c(m$fits, m$fits), "seed"), attr(m$fits, "seed"))
  expect_identical(logLik(both), c(logLik(m$fits), logLik(other)))
  expect_output(print(both), "4 datasets")
  # single fits join too, named as c() names them
  withfit <- c(other, extra = m$fits$a)
  expect_named(withfit, c("z", "extra"))
  expect_s3_class(withfit$extra, "bulkem_fit")
  ig <- quiet_bulkem(list(b1_dataset(300)), random.inits = 2, use.gpu = FALSE)
  expect_error(c(m$fits, ig), class = "bulkem_error_argument")
  expect_error(c(m$fits, list(1)), class = "bulkem_error_argument")
})

test_that("[ keeps the class and refuses datasets that are not there", {
  m <- verb_fits("normal")
  sub <- m$fits[c(TRUE, FALSE, TRUE)]
  expect_s3_class(sub, "bulkem")
  expect_named(sub, c("a", "bad"))
  expect_identical(attr(sub, "family"), "normal")
  expect_identical(logLik(sub), logLik(m$fits)[c("a", "bad")])
  expect_error(m$fits["nope"], class = "bulkem_error_argument")
  expect_error(m$fits[5], class = "bulkem_error_argument")
})

test_that("bulkem_compare() tabulates every dataset and K against the closed forms", {
  skip_if_not_installed("statmod")
  set.seed(25)
  d <- list(one = rnorm(300, 5, 1), two = rmix(400, c(0.5, 0.5), c(0, 6), c(1, 1), "normal"),
            bad = c(1, 1))
  fits <- quiet_bulkem(d, num.components = 1:3, family = "normal", random.inits = 5, seed = 4,
                       use.gpu = FALSE)
  cmp <- bulkem_compare(fits)
  expect_named(cmp, c("dataset", "K", "df", "loglik", "aic", "bic", "icl", "status", "delta_bic", "chosen",
                      "why_not"))
  expect_identical(cmp$dataset, rep(c("one", "two", "bad"), each = 3))
  expect_identical(cmp$K, rep(1:3, 3))
  expect_identical(cmp$df, rep(c(2L, 5L, 8L), 3))
  n <- rep(unname(lengths(d)), each = 3)
  expect_equal(cmp$aic, -2 * cmp$loglik + 2 * (3 * cmp$K - 1), tolerance = 1e-10)
  expect_equal(cmp$bic, -2 * cmp$loglik + log(n) * (3 * cmp$K - 1), tolerance = 1e-10)
  # K = 1 is the Normal MLE, in closed form
  x <- d$one
  expect_equal(cmp$loglik[1], sum(dnorm(x, mean(x), sqrt(mean((x - mean(x))^2)), log = TRUE)),
               tolerance = 1e-8)
  # the chosen rows are the returned fits, whose log-likelihood is recomputed here
  ch <- cmp[cmp$chosen, ]
  expect_identical(ch$dataset, c("one", "two"))
  expect_identical(ch$K, c(1L, 2L))
  expect_equal(ch$loglik, c(reference_loglik(d$one, fits$one), reference_loglik(d$two, fits$two)),
               tolerance = 1e-10)
  for (ds in c("one", "two")) {
    r <- cmp[cmp$dataset == ds, ]
    expect_equal(r$delta_bic, r$bic - min(r$bic, na.rm = TRUE))
  }
  expect_true(all(is.na(cmp$delta_bic[cmp$dataset == "bad"])))
  expect_true(all(cmp$status[cmp$dataset == "bad"] == "invalid"))
  # why each K was not chosen: NA for the chosen K, else its status, or
  # "spurious" or "higher BIC" for one that converged (each K's fit's own
  # flag and BIC, against the chosen fit's)
  for (ds in names(d)) {
    r <- cmp[cmp$dataset == ds, ]
    ak <- fits[[ds]]$all_k
    spurious <- vapply(ak, `[[`, NA, "spurious")[match(r$K, vapply(ak, `[[`, 0L, "k"))]
    want <- r$status
    for (i in which(r$status == "converged")) {
      want[i] <- if (spurious[i]) "spurious" else if (r$bic[i] > r$bic[r$chosen]) "higher BIC" else "equal BIC"
    }
    want[r$chosen] <- NA
    expect_identical(r$why_not, want, label = ds)
  }
  expect_identical(cmp$why_not[cmp$dataset == "bad"], rep("invalid", 3))
  # a result with one K: one row per dataset
  single <- bulkem_compare(quiet_bulkem(d[1:2], family = "normal", random.inits = 3, use.gpu = FALSE))
  expect_identical(single$K, c(2L, 2L))
  expect_true(all(single$chosen))
  expect_identical(nrow(bulkem_compare(fits$two)), 3L)
  expect_error(bulkem_compare(list()), class = "bulkem_error_argument")
})
