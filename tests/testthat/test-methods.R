# S3 methods, each against an independent computation.

method_fits <- function() {
  set.seed(11)
  d <- list(a = c(rnorm(200), rnorm(100, 4)), b = c(rnorm(150, 1), rnorm(150, 6, 2)), bad = c(1, NA))
  # na.pass: `bad` keeps its NA, to be an invalid fit of 2 observations
  list(d = d, fits = quiet_bulkem(d, random.inits = 5, family = "normal", use.gpu = FALSE,
                            control = list(keep.data = TRUE), na.action = na.pass))
}

test_that("summary and as.data.frame tabulate every fit", {
  m <- method_fits()
  s <- summary(m$fits)
  expect_s3_class(s, "data.frame")
  expect_identical(s$dataset, c("a", "b", "bad"))
  expect_identical(s$status, vapply(m$fits, `[[`, "", "status", USE.NAMES = FALSE))
  expect_identical(s$loglik, vapply(m$fits, `[[`, 0, "loglik", USE.NAMES = FALSE))
  expect_identical(s$n, c(300L, 300L, 2L))
  # what to mistrust, from the fits' own fields; one K: no `why`
  expect_named(s, c("dataset", "n", "k", "status", "converged", "iterations", "loglik", "aic", "bic",
                    "icl", "starts_ok", "best_start", "starts_at_best", "fragile", "spurious", "far"))
  expect_identical(s$starts_at_best, vapply(m$fits, `[[`, 0L, "starts_at_best", USE.NAMES = FALSE))
  expect_identical(s$fragile, vapply(m$fits, function(f) f$starts_at_best == 1L && f$starts_run > 1L, NA,
                                     USE.NAMES = FALSE))
  expect_identical(s$spurious, vapply(m$fits, `[[`, NA, "spurious", USE.NAMES = FALSE))
  expect_output(print(s), sprintf("^attention: 0 spurious, %d fragile \\(best log-likelihood reached by one start only\\), 0 stopped at max.iters, 0 failed, 1 invalid", sum(s$fragile)))
  long <- as.data.frame(m$fits)
  expect_named(long, c("dataset", "component", "alpha", "mu", "sigma"))
  expect_identical(nrow(long), 6L)
  expect_identical(long$mu[long$dataset == "b"], m$fits$b$mu)
  expect_identical(as.data.frame(m$fits, what = "datasets"), s)
  expect_identical(coef(m$fits), long)
  cf <- coef(m$fits$a)
  expect_identical(dim(cf), c(2L, 3L))
  expect_identical(unname(cf[, "sigma"]), m$fits$a$sigma)
})

test_that("[ keeps the class and the call's attributes", {
  m <- method_fits()
  sub <- m$fits[c("b", "a")]
  expect_s3_class(sub, "bulkem")
  expect_named(sub, c("b", "a"))
  expect_identical(attr(sub, "engine"), attr(m$fits, "engine"))
  expect_identical(unclass(sub$a), unclass(m$fits$a))
  expect_length(m$fits, 3)
})

test_that("logLik, AIC, BIC and nobs agree with a brute-force computation", {
  skip_if_not_installed("statmod")
  m <- method_fits()
  f <- m$fits$a
  ll <- logLik(f)
  expect_equal(as.numeric(ll), reference_loglik(m$d$a, f), tolerance = 1e-10)
  expect_identical(attr(ll, "df"), 5L)
  expect_identical(nobs(f), 300L)
  expect_equal(AIC(f), -2 * reference_loglik(m$d$a, f) + 2 * 5, tolerance = 1e-10)
  expect_equal(BIC(f), -2 * reference_loglik(m$d$a, f) + 5 * log(300), tolerance = 1e-10)
  set.seed(12)
  x <- b1_dataset(500)
  g <- bulkem(list(x), random.inits = 3, use.gpu = FALSE)[[1]]
  expect_equal(as.numeric(logLik(g)), reference_loglik(x, g), tolerance = 1e-10)
})

test_that("predict gives the posterior probabilities of a direct R computation", {
  skip_if_not_installed("statmod")
  m <- method_fits()
  f <- m$fits$b
  x <- c(-2, 0.5, 3, 6, 12)
  p <- predict(f, x)
  dens <- sapply(1:2, function(k) f$alpha[k] * dnorm(x, f$mu[k], f$sigma[k]))
  expect_equal(as.matrix(p[, c("comp1", "comp2")]), dens / rowSums(dens), tolerance = 1e-12,
               ignore_attr = TRUE)
  expect_identical(p$component, unname(max.col(dens, ties.method = "first")))
  set.seed(13)
  g <- bulkem(list(b1_dataset(400)), random.inits = 3, use.gpu = FALSE)[[1]]
  y <- c(0.5, 1, 2, 8, -1)
  q <- predict(g, y)
  dens <- sapply(1:2, function(k) g$alpha[k] * statmod::dinvgauss(y[1:4], g$mu[k], shape = g$lambda[k]))
  expect_equal(as.matrix(q[1:4, c("comp1", "comp2")]), dens / rowSums(dens), tolerance = 1e-12,
               ignore_attr = TRUE)
  expect_true(all(is.na(q[5, c("comp1", "comp2", "component")])))
  all <- predict(m$fits, list(1, 2, 3))
  expect_named(all, c("a", "b", "bad"))
  expect_true(is.na(all$bad$comp1))
  expect_error(predict(m$fits, list(1)), "`newdata`")
  expect_error(predict(f, "a"), "`newdata`")
})

test_that("print and plot methods run", {
  m <- method_fits()
  expect_output(print(m$fits), "3 datasets, normal mixtures of 2 components")
  expect_output(print(m$fits), "attention: 0 spurious, [0-9]+ fragile .*, 0 stopped at max.iters, 0 failed, 1 invalid")
  expect_output(print(m$fits$a), "normal mixture of 2 components, n = 300")
  expect_output(print(m$fits$bad), "invalid")
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(m$fits$a))
  expect_silent(plot(m$fits$a, data = NULL))
  expect_silent(plot(m$fits))
  expect_error(plot(m$fits$bad), "no fit")
  expect_identical(m$fits$a$data, m$d$a)
  expect_null(bulkem(m$d["a"], family = "normal", use.gpu = FALSE)$a$data)
  expect_error(bulkem(m$d["a"], control = list(keep.data = NA)), "`control\\$keep.data`")
})

test_that("keep.starts gives every start's outcome, log-likelihood and initial values", {
  set.seed(14)
  d <- list(a = b1_dataset(800), b = c(1, 1, 1))
  fits <- quiet_bulkem(d, random.inits = 12, seed = 5, use.gpu = FALSE, control = list(keep.starts = TRUE))
  s <- fits$a$starts
  expect_s3_class(s, "data.frame")
  expect_identical(s$start, 1:12)
  expect_named(s, c("start", "loglik", "iterations", "status", "reason", "init_alpha_1", "init_alpha_2",
                    "init_mu_1", "init_mu_2", "init_lambda_1", "init_lambda_2"))
  expect_identical(sum(s$status != "failed"), fits$a$starts_ok)
  best <- s[s$start == fits$a$best_start, ]
  expect_equal(best$loglik, fits$a$loglik, tolerance = 1e-10)
  expect_identical(best$iterations, fits$a$num_iterations)
  expect_equal(sort(c(best$init_mu_1, best$init_mu_2)), sort(fits$a$init_mu))
  expect_true(all(s$loglik[s$status != "failed"] <= fits$a$loglik + 1e-8))
  # the same starts as without keep.starts
  plain <- quiet_bulkem(d, random.inits = 12, seed = 5, use.gpu = FALSE)
  expect_identical(unclass(plain$a)[1:18], unclass(fits$a)[1:18])
  expect_identical(nrow(fits$b$starts), 0L)
  multi <- bulkem(d["a"], num.components = 1:2, random.inits = 4, seed = 5, use.gpu = FALSE,
                  control = list(keep.starts = TRUE))
  expect_identical(nrow(multi$a$starts), if (multi$a$num_components == 1) 1L else 4L)
})

test_that("every subset of a result prints, with its summaries and tables", {
  m <- method_fits()
  for (sub in list(m$fits[2], m$fits[0], m$fits["bad"], m$fits[c(TRUE, FALSE, TRUE)], rev(m$fits),
                   head(m$fits, 1))) {
    expect_output(expect_identical(print(sub), sub), "^bulkem: ")
    s <- summary(sub)
    expect_identical(nrow(s), length(sub))
    expect_output(print(s))
    long <- as.data.frame(sub)
    expect_named(long, c("dataset", "component", "alpha", "mu", "sigma"))
    expect_identical(nrow(long), 2L * length(sub))
    expect_identical(coef(sub), long)
    td <- tidy(sub)
    expect_identical(nrow(td), 6L * length(sub))
    expect_identical(nrow(glance(sub)), length(sub))
    expect_identical(nrow(bulkem_compare(sub)), length(sub))
  }
  empty <- m$fits[0]
  expect_output(print(empty), "0 datasets")
  expect_identical(names(tidy(empty)), names(tidy(m$fits)))
  expect_identical(vapply(as.data.frame(empty), class, ""), vapply(as.data.frame(m$fits), class, ""))
  # attributes lost (a list made a bulkem by hand): still prints
  bare <- structure(unclass(m$fits)[1:2], class = "bulkem")
  expect_output(print(bare), "2 datasets")
  # one fit and its summary, with and without a fit
  for (f in unclass(m$fits)) {
    expect_output(print(f), "bulkem fit")
    expect_output(print(summary(f)), "bulkem fit")
  }
})
