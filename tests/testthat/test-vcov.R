# Standard errors: the observed information against an independent
# numerical Hessian, Wald coverage by simulation, singular fits, any scale.

# The largest |A - B| entry relative to sqrt(|B_aa B_bb|), a relative error
# that does not depend on each parameter's units.
worst_relative <- function(a, b) {
  d <- sqrt(abs(diag(b)))
  max(abs(a - b) / outer(d, d))
}

# Mixtures of 1 to 4 separated components.
vcov_truths <- list(
  invgauss = list(list(1, 2, 5), list(c(.4, .6), c(1, 3), c(20, 30)),
                  list(c(.3, .4, .3), c(1, 3, 8), c(20, 60, 300)),
                  list(c(.2, .3, .3, .2), c(1, 3, 8, 20), c(30, 100, 300, 1000))),
  normal = list(list(1, 0, 1), list(c(.4, .6), c(0, 4), c(1, .8)),
                list(c(.3, .4, .3), c(0, 4, 8), c(1, .8, 1)),
                list(c(.2, .3, .3, .2), c(0, 4, 8, 12), c(1, .8, 1, .7))))

test_that("the observed information is the Hessian of an independent log-likelihood (K = 1..4)", {
  skip_if_not_installed("statmod")
  for (family in c("invgauss", "normal")) {
    for (k in 1:4) {
      set.seed(100 + k)
      tr <- vcov_truths[[family]][[k]]
      x <- rmix(500 * k, tr[[1]], tr[[2]], tr[[3]], family)
      f <- bulkem(list(x), num.components = k, family = family, random.inits = 20,
                  max.iters = 2000, epsilon = 1e-10, use.gpu = FALSE, seed = 1)[[1]]
      expect_identical(f$status, "converged")
      shape <- f[[if (family == "invgauss") "lambda" else "sigma"]]
      theta <- c(f$alpha[-k], f$mu, shape)
      info <- numerical_information(theta, x, k, family)
      ref <- solve(info)
      label <- paste(family, "K =", k)
      nm <- c(if (k > 1) paste0("alpha", 1:(k - 1)), paste0("mu", 1:k),
              paste0(if (family == "invgauss") "lambda" else "sigma", 1:k))
      expect_identical(dimnames(vcov(f)), list(nm, nm), label = label)
      expect_lt(worst_relative(solve(vcov(f)), info), 1e-5, label = label)
      expect_lt(worst_relative(vcov(f), ref), 1e-5, label = label)
      # se: the diagonal's roots, and alphaK's by the delta method
      se_ref <- c(sqrt(diag(ref))[seq_len(k - 1)], sqrt(sum(ref[seq_len(k - 1), seq_len(k - 1)])),
                  sqrt(diag(ref))[k - 1 + seq_len(2 * k)])
      expect_equal(unname(f$se), unname(se_ref), tolerance = 1e-5, label = label)
      expect_identical(names(f$se), c(paste0("alpha", 1:k), nm[k - 1 + seq_len(2 * k)]))
    }
  }
})

test_that("95% Wald intervals cover the truth 92-98% of the time (1,000 datasets, one call each)", {
  designs <- list(normal = list(alpha = c(0.4, 0.6), mu = c(0, 5), shape = c(1, 1.5), starts = 3),
                  invgauss = list(alpha = c(0.4, 0.6), mu = c(1, 4), shape = c(20, 40), starts = 5))
  for (family in names(designs)) {
    p <- designs[[family]]
    set.seed(2024)
    d <- replicate(1000, rmix(2000, p$alpha, p$mu, p$shape, family), simplify = FALSE)
    fits <- quiet_bulkem(d, family = family, random.inits = p$starts, use.gpu = FALSE, seed = 5)
    ci <- confint(fits)
    terms <- c("alpha1", "alpha2", "mu1", "mu2", paste0(if (family == "invgauss") "lambda" else "sigma", 1:2))
    expect_identical(unique(ci$term), terms)
    expect_identical(nrow(ci), 6000L)
    # a fit without standard errors counts as a miss, and must be rare
    expect_lt(sum(is.na(ci$std.error)), 60)
    truth <- c(p$alpha, p$mu, p$shape)[match(ci$term, terms)]
    hit <- !is.na(ci$conf.low) & ci$conf.low <= truth & truth <= ci$conf.high
    coverage <- tapply(hit, factor(ci$term, terms), mean)
    for (t in terms) {
      expect_gte(coverage[[t]], 0.92, label = paste(family, t, "coverage"))
      expect_lte(coverage[[t]], 0.98, label = paste(family, t, "coverage"))
    }
  }
})

test_that("a singular information gives NA standard errors and says why", {
  # EM from most starts on these tied values ends at two identical
  # components: a saddle point where the weights cannot be told apart
  # (mixed starts without short runs, which would climb past it)
  d <- c(1, 1, 1, 1, 2, 2, 2, 2, 3)
  # three distinct values in all: the screen's rule against spikes on heaped
  # values (control$spurious.distinct) would reject every start; it is off
  # here, where the information is what is tested
  fit_seed <- function(seed, ...) {
    quiet_bulkem(list(d), family = "normal", random.inits = 5, use.gpu = FALSE, seed = seed,
                 control = list(spurious.distinct = 0, starts = "mixed", short.runs = 0), ...)[[1]]
  }
  fits <- lapply(1:10, fit_seed)
  same <- vapply(fits, function(f) isTRUE(f$fit_success) && abs(f$mu[1] - f$mu[2]) < 1e-9, NA)
  expect_gt(sum(same), 0)
  for (f in fits[same]) {
    expect_identical(f$status, "converged")
    expect_identical(f$message, "no standard errors: the observed information is singular (first at alpha1)")
    expect_true(all(is.na(f$se)))
    expect_named(f$se, c("alpha1", "alpha2", "mu1", "mu2", "sigma1", "sigma2"))
    expect_true(all(is.na(vcov(f))))
    expect_identical(dim(vcov(f)), c(5L, 5L))
    expect_true(all(is.na(confint(f))))
  }
  # stopped on the way there, short of a maximum: the information is not
  # positive definite, said after the fit's own message; the status stays
  short <- lapply(1:5, fit_seed, max.iters = 3)
  for (f in short) {
    expect_identical(f$status, "max_iters")
    expect_true(all(is.na(f$se)))
    expect_match(f$message, paste0(
      "^stopped after max.iters = 3 iterations before the log-likelihood settled; ",
      "no standard errors: the observed information is not positive definite \\(first at sigma[12]\\): ",
      "the fit is not at a local maximum$"))
  }
  # no fit: NA standard errors of the right shape, no extra message
  bad <- quiet_bulkem(list(c(1, NA, 3, 4, 5, 6, 7)), use.gpu = FALSE, na.action = na.pass)[[1]]
  expect_identical(bad$status, "invalid")
  expect_true(all(is.na(bad$se)) && length(bad$se) == 6)
  expect_identical(dim(bad$vcov), c(5L, 5L))
  expect_no_match(bad$message, "standard errors")
})

test_that("standard errors scale with the data, from 1e-200 to 1e200", {
  set.seed(21)
  for (family in c("invgauss", "normal")) {
    x <- if (family == "invgauss") b1_dataset(1000) else rmix(1000, c(.3, .7), c(0, 4), c(1, .7), "normal")
    fit <- function(c) {
      # the starts are drawn from the data as given (its hash), so each
      # scale has its own: enough of them that every scale finds the maximum
      bulkem(list(x * c), family = family, random.inits = 20, epsilon = 1e-12, max.iters = 5000,
             use.gpu = FALSE, seed = 9)[[1]]
    }
    unit <- fit(1)
    expect_false(anyNA(unit$se))
    for (c in c(1e-200, 1e200)) {
      scaled <- fit(c)
      want <- unit$se * c(1, 1, c, c, c, c)
      expect_equal(scaled$se, want, tolerance = 1e-6, label = paste(family, c))
      # every interval scales with the data (the weights' not at all), on
      # the log scale as on the natural one
      expect_equal(unname(confint(scaled)), unname(confint(unit) * c(1, 1, c, c, c, c)), tolerance = 1e-6)
    }
  }
})

test_that("vcov and confint follow stats' conventions, for a fit and a whole result", {
  set.seed(8)
  d <- list(a = c(rnorm(300), rnorm(200, 5, 0.5)), b = c(rnorm(200, 1), rnorm(300, 7, 2)),
            bad = c(1, 2))
  fits <- quiet_bulkem(d, family = "normal", random.inits = 3, use.gpu = FALSE)
  f <- fits$a
  est <- c(f$alpha, f$mu, f$sigma)
  ci <- confint(f)
  expect_identical(colnames(ci), c("2.5 %", "97.5 %"))
  expect_identical(rownames(ci), names(f$se))
  # by hand: the Normal's means on their own scale, the sigmas on the log
  # scale, the weights on the logit scale (delta method)
  z <- qnorm(0.975)
  se <- unname(f$se)
  expect_equal(unname(ci[3:4, 1]), est[3:4] - z * se[3:4], tolerance = 1e-14)
  expect_equal(unname(ci[3:4, 2]), est[3:4] + z * se[3:4], tolerance = 1e-14)
  expect_equal(unname(ci[5:6, 1]), exp(log(est[5:6]) - z * se[5:6] / est[5:6]), tolerance = 1e-14)
  expect_equal(unname(ci[5:6, 2]), exp(log(est[5:6]) + z * se[5:6] / est[5:6]), tolerance = 1e-14)
  expect_equal(unname(ci[1:2, 1]), plogis(qlogis(est[1:2]) - z * se[1:2] / (est[1:2] * (1 - est[1:2]))),
               tolerance = 1e-14)
  expect_equal(unname(ci[1:2, 2]), plogis(qlogis(est[1:2]) + z * se[1:2] / (est[1:2] * (1 - est[1:2]))),
               tolerance = 1e-14)
  ci90 <- confint(f, c("mu2", "alpha1"), level = 0.9)
  expect_identical(dimnames(ci90), list(c("mu2", "alpha1"), c("5 %", "95 %")))
  expect_equal(unname(ci90[1, ]), f$mu[2] + qnorm(c(0.05, 0.95)) * f$se[["mu2"]], tolerance = 1e-14)
  a <- f$alpha[1]
  expect_equal(unname(ci90[2, ]), plogis(qlogis(a) + qnorm(c(0.05, 0.95)) * f$se[["alpha1"]] / (a * (1 - a))),
               tolerance = 1e-14)
  expect_identical(confint(f, 3:4), ci[3:4, ])
  expect_error(confint(f, "nu1"), class = "bulkem_error_argument")
  expect_error(confint(f, 7), class = "bulkem_error_argument")
  expect_error(confint(f, level = 1), class = "bulkem_error_argument")
  expect_error(confint(fits, level = NA), class = "bulkem_error_argument")
  expect_error(vcov(structure(list(mu = 1), class = "bulkem_fit")), class = "bulkem_error_argument")
  # the whole result: a list of matrices, a long (broom-style) data frame
  v <- vcov(fits)
  expect_named(v, c("a", "b", "bad"))
  expect_identical(v$b, fits$b$vcov)
  long <- confint(fits)
  expect_named(long, c("dataset", "term", "estimate", "std.error", "conf.low", "conf.high"))
  expect_identical(nrow(long), 18L)
  expect_identical(long$dataset, rep(c("a", "b", "bad"), each = 6))
  expect_identical(long$term[1:6], names(f$se))
  expect_equal(as.matrix(long[1:6, c("conf.low", "conf.high")]), ci, ignore_attr = TRUE, tolerance = 1e-14)
  expect_true(all(is.na(long$std.error[13:18])))
  sub <- confint(fits, "mu1", level = 0.8)
  expect_identical(sub$dataset, c("a", "b", "bad"))
  expect_equal(sub$conf.high[2], fits$b$mu[1] + qnorm(0.9) * fits$b$se[["mu1"]], tolerance = 1e-14)
  s1 <- confint(fits, "sigma1", level = 0.8)
  b <- fits$b
  expect_equal(s1$conf.low[2], exp(log(b$sigma[1]) - qnorm(0.9) * b$se[["sigma1"]] / b$sigma[1]), tolerance = 1e-14)
  # with several Ks, each fit's own parameters
  several <- bulkem(d[1:2], num.components = 1:3, family = "normal", random.inits = 3, use.gpu = FALSE)
  k <- vapply(several, function(f) length(f$mu), 0L)
  expect_identical(nrow(confint(several)), as.integer(sum(3 * k)))
  expect_identical(dim(vcov(several)$a), rep(3L * k[[1]] - 1L, 2))
})

test_that("control$standard.errors = FALSE leaves se and vcov NULL and every other field as it was", {
  set.seed(31)
  d <- list(a = c(rnorm(150), rnorm(100, 5)), b = rexp(80), bad = c(1, 2))
  args <- list(d, num.components = 2, family = "normal", random.inits = 4, seed = 2,
               control = list(threads = 1))
  with_se <- suppressWarnings(do.call(bulkem, args))
  args$control$standard.errors <- FALSE
  without <- suppressWarnings(do.call(bulkem, args))
  for (i in seq_along(d)) {
    expect_null(without[[i]]$se)
    expect_null(without[[i]]$vcov)
    expect_identical(names(without[[i]]), names(with_se[[i]]))
    keep <- setdiff(names(with_se[[i]]), c("se", "vcov"))
    expect_identical(unclass(without[[i]])[keep], unclass(with_se[[i]])[keep])
  }
  expect_length(with_se$a$se, 6)
  err <- expect_error(vcov(without$a), class = "bulkem_error_argument")
  expect_match(conditionMessage(err), "control$standard.errors = FALSE", fixed = TRUE)
  expect_error(confint(without), class = "bulkem_error_argument")
  td <- tidy(without)
  expect_true(all(is.na(td$std.error)))
  expect_identical(td$estimate, tidy(with_se)$estimate)
  expect_error(bulkem(d, control = list(standard.errors = NA)), "control$standard.errors", fixed = TRUE,
               class = "bulkem_error_argument")
})

test_that("a fit stuck at a saddle point is continued to the maximum, unless standard errors are off", {
  # with one random start, about 1 in 20 of these two-group datasets ends
  # at the saddle between the groups (EM's steps there shrink to nothing)
  set.seed(5)
  x <- replicate(12, c(rnorm(100), rnorm(100, 5)), simplify = FALSE)[[12]]
  fit1 <- function(..., control = list()) {
    quiet_bulkem(list(x), family = "normal", seed = 3, use.gpu = FALSE, ...,
                 control = c(control, list(starts = "random", short.runs = 0)))[[1]]
  }
  one <- fit1(random.inits = 1)
  expect_identical(one$status, "converged")
  expect_match(one$message, "^continued from a saddle point \\(log-likelihood -[0-9.]+\\) to a maximum$")
  at_saddle <- as.numeric(sub(".*log-likelihood (-[0-9.]+).*", "\\1", one$message))
  expect_gt(one$loglik, at_saddle + 10)
  # the maximum 20 starts find, and the log-likelihood of the parameters
  many <- fit1(random.inits = 20)
  expect_equal(one$loglik, many$loglik, tolerance = 1e-8)
  expect_equal(one$mu, many$mu, tolerance = 1e-4)
  expect_equal(one$loglik, sum(log(one$alpha[1] * dnorm(x, one$mu[1], one$sigma[1]) +
                                   one$alpha[2] * dnorm(x, one$mu[2], one$sigma[2]))), tolerance = 1e-10)
  expect_false(anyNA(one$se))
  expect_identical(one$starts_at_best, 1L)
  # without standard errors no information is computed: the saddle stays
  stuck <- fit1(random.inits = 1, control = list(standard.errors = FALSE))
  expect_identical(stuck$status, "converged")
  expect_equal(stuck$loglik, at_saddle, tolerance = 1e-6)
  expect_lt(stuck$num_iterations, one$num_iterations)
})

test_that("intervals stay inside the parameter space: log scale for positive parameters, logit for weights", {
  # a small component: Wald intervals on the parameters' own scale leave the
  # parameter space (a weight below 0, a shape below 0); these do not
  set.seed(7)
  x <- c(rnorm(400), rnorm(4, 8))
  f <- bulkem(list(x), family = "normal", random.inits = 10, seed = 1, use.gpu = FALSE)[[1]]
  set.seed(8)
  y <- c(rinvgauss_msh(300, 1, 2), rinvgauss_msh(6, 6, 4))
  g <- bulkem(list(y), random.inits = 10, seed = 1, use.gpu = FALSE)[[1]]
  z <- qnorm(0.995)
  for (fit in list(f, g)) {
    k <- length(fit$mu)
    shape <- if (fit$family == "normal") "sigma" else "lambda"
    est <- c(fit$alpha, fit$mu, fit[[shape]])
    term <- rep(c("alpha", "mu", shape), each = k)
    se <- unname(fit$se)
    expect_false(anyNA(se))
    # the case: estimate - z se is outside for some weight or positive parameter
    positive <- term != "mu" | fit$family == "invgauss"
    expect_true(any((est - z * se)[positive] < 0))
    ci <- confint(fit, level = 0.99)
    td <- tidy(fit, conf.level = 0.99)
    td <- td[order(match(td$term, c("alpha", "mu", "lambda", "sigma")), td$component), ]
    expect_equal(unname(ci[, 1]), td$conf.low, tolerance = 1e-14)
    expect_equal(unname(ci[, 2]), td$conf.high, tolerance = 1e-14)
    # std.error stays the observed-information SE on the natural scale
    expect_identical(td$std.error, se)
    w <- term == "alpha"
    l <- term %in% c("lambda", "sigma") | (term == "mu" & fit$family == "invgauss")
    expect_equal(unname(ci[w, 1]), plogis(qlogis(est[w]) - z * se[w] / (est[w] * (1 - est[w]))), tolerance = 1e-12)
    expect_equal(unname(ci[w, 2]), plogis(qlogis(est[w]) + z * se[w] / (est[w] * (1 - est[w]))), tolerance = 1e-12)
    expect_equal(unname(ci[l, 1]), exp(log(est[l]) - z * se[l] / est[l]), tolerance = 1e-12)
    expect_equal(unname(ci[l, 2]), exp(log(est[l]) + z * se[l] / est[l]), tolerance = 1e-12)
    expect_true(all(ci[w, ] > 0 & ci[w, ] < 1))
    expect_true(all(ci[l, ] > 0))
    expect_true(all(ci[, 1] < est & est < ci[, 2]))
  }
  # one component: its weight is 1 with standard error 0, and so its interval
  one <- bulkem(list(y), num.components = 1, use.gpu = FALSE)[[1]]
  expect_identical(unname(confint(one)["alpha1", ]), c(1, 1))
  expect_identical(tidy(one)$conf.low[1], 1)
})
