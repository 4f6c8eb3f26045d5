# predict() (posterior, class, uncertainty, density, cdf), quantile() and
# simulate() on one fit and on a result, both families, against independent
# computations: mclust's E-step, statmod and dnorm/pnorm sums, integrate(),
# the cdf at the quantiles, moments and KS tests of the draws.

predict_fits <- function(family, keep = TRUE) {
  set.seed(if (family == "normal") 31 else 32)
  d <- if (family == "normal") {
    list(a = rmix(400, c(0.4, 0.6), c(0, 4), c(1, 1.5), "normal"),
         b = rmix(300, c(0.3, 0.3, 0.4), c(-5, 0, 6), c(1, 0.7, 1.2), "normal"),
         bad = c(1, NA, 3))
  } else {
    list(a = b1_dataset(600), b = rmix(400, c(0.6, 0.4), c(1, 5), c(5, 20)), bad = c(-1, 2, 3))
  }
  k <- if (family == "normal") 2:3 else 2
  fits <- quiet_bulkem(d, num.components = k, random.inits = 5, family = family, seed = 5,
                       use.gpu = FALSE, control = list(keep.data = keep))
  list(d = d, fits = fits)
}

# Independent references from the fitted parameters.
ref_components <- function(fit, x) {
  shape <- if (fit$family == "normal") fit$sigma else fit$lambda
  vapply(seq_along(fit$mu), function(m) {
    fit$alpha[m] * if (fit$family == "normal") {
      dnorm(x, fit$mu[m], shape[m])
    } else {
      statmod::dinvgauss(x, mean = fit$mu[m], shape = shape[m])
    }
  }, numeric(length(x)))
}
ref_density <- function(fit, x) rowSums(matrix(ref_components(fit, x), nrow = length(x)))
ref_cdf <- function(fit, x) {
  shape <- if (fit$family == "normal") fit$sigma else fit$lambda
  Reduce(`+`, lapply(seq_along(fit$mu), function(m) {
    fit$alpha[m] * if (fit$family == "normal") {
      pnorm(x, fit$mu[m], shape[m])
    } else {
      statmod::pinvgauss(x, mean = fit$mu[m], shape = shape[m])
    }
  }))
}

test_that("Normal posteriors, classes and uncertainty agree with mclust's E-step", {
  skip_if_not_installed("mclust")
  m <- predict_fits("normal")
  for (ds in c("a", "b")) {
    f <- m$fits[[ds]]
    x <- m$d[[ds]]
    k <- length(f$mu)
    e <- mclust::estepV(data = x,
                        parameters = list(pro = f$alpha, mean = f$mu,
                                         variance = list(modelName = "V", d = 1, G = k, sigmasq = f$sigma^2)))
    p <- predict(f) # the kept data
    expect_identical(p$x, x)
    expect_equal(unname(as.matrix(p[, paste0("comp", seq_len(k))])), unname(e$z), tolerance = 1e-10)
    expect_identical(p$component, as.integer(mclust::map(e$z)))
    expect_identical(predict(f, type = "class"), as.integer(mclust::map(e$z)))
    expect_equal(predict(f, type = "uncertainty"), 1 - apply(e$z, 1, max), tolerance = 1e-10)
    expect_equal(predict(f, x), p)
  }
  expect_identical(length(m$fits$b$mu), 3L) # the three-component case was tested
})

test_that("inverse Gaussian posteriors agree with a hand computation from statmod densities", {
  skip_if_not_installed("statmod")
  m <- predict_fits("invgauss")
  f <- m$fits$b
  x <- c(m$d$b, -1, 0, NA)
  dens <- ref_components(f, x[seq_along(m$d$b)])
  z <- dens / rowSums(dens)
  p <- predict(f, x)
  expect_equal(unname(as.matrix(p[seq_along(m$d$b), c("comp1", "comp2")])), unname(z), tolerance = 1e-10)
  expect_identical(predict(f, x, type = "class")[seq_along(m$d$b)], max.col(z, ties.method = "first"))
  expect_equal(predict(f, x, type = "uncertainty")[seq_along(m$d$b)], 1 - apply(z, 1, max), tolerance = 1e-10)
  # outside the support and NA: NA
  tail3 <- length(x) - 2:0
  expect_true(all(is.na(as.matrix(p[tail3, c("comp1", "comp2", "component")]))))
  expect_true(all(is.na(predict(f, x, type = "uncertainty")[tail3])))
})

for (family in c("normal", "invgauss")) {
  test_that(paste("density and cdf agree with statmod/dnorm sums and with integrate():", family), {
    skip_if_not_installed("statmod")
    m <- predict_fits(family)
    for (ds in c("a", "b")) {
      f <- m$fits[[ds]]
      x <- as.numeric(quantile(m$d[[ds]], c(0.01, 0.2, 0.5, 0.8, 0.99)))
      expect_equal(predict(f, x, type = "density"), ref_density(f, x), tolerance = 1e-10)
      cdf <- predict(f, x, type = "cdf")
      expect_equal(cdf, ref_cdf(f, x), tolerance = 1e-10)
      lower <- if (family == "normal") -Inf else 0
      num <- vapply(x, function(q) integrate(function(t) ref_density(f, t), lower, q,
                                             rel.tol = 1e-10, subdivisions = 1000)$value, 0)
      expect_equal(cdf, num, tolerance = 1e-7)
      expect_true(all(diff(cdf) > 0))
    }
    f <- m$fits$a
    expect_identical(predict(f, NA_real_, type = "density"), NA_real_)
    expect_identical(predict(f, NA_real_, type = "cdf"), NA_real_)
    expect_equal(predict(f, c(-Inf, Inf), type = "cdf"), c(0, 1))
    if (family == "invgauss") {
      expect_identical(predict(f, c(-1, 0), type = "density"), c(0, 0))
      expect_identical(predict(f, c(-1, 0), type = "cdf"), c(0, 0))
    }
    # the kept data by default; a dataset without a fit gives NA
    expect_equal(predict(f, type = "density"), ref_density(f, m$d$a), tolerance = 1e-10)
    expect_true(all(is.na(predict(m$fits$bad, c(1, 2), type = "cdf"))))
  })
}

test_that("predict() of a result: one element per dataset, as predict() of each fit", {
  m <- predict_fits("normal")
  all <- predict(m$fits, type = "class")
  expect_named(all, c("a", "b", "bad"))
  expect_identical(all$a, predict(m$fits$a, m$d$a, type = "class"))
  expect_identical(all$b, predict(m$fits$b, m$d$b, type = "class"))
  expect_true(all(is.na(all$bad)))
  grid <- c(-3, 0, 3, 6)
  dens <- predict(m$fits, grid, type = "density")
  expect_equal(dens$b, ref_density(m$fits$b, grid), tolerance = 1e-10)
  cdf <- predict(m$fits, list(1, 2, 3), type = "cdf")
  expect_equal(cdf$a, ref_cdf(m$fits$a, 1), tolerance = 1e-10)
  post <- predict(m$fits, list(1, 2, 3))
  expect_named(post$b, c("x", "comp1", "comp2", "comp3", "component"))
  expect_error(predict(m$fits, list(1, 2)), class = "bulkem_error_argument")
  expect_error(predict(m$fits, data.frame(x = 1:3)), class = "bulkem_error_argument")
})

test_that("predict() errors: no kept data, unknown type, unknown argument", {
  m <- predict_fits("normal", keep = FALSE)
  e <- expect_error(predict(m$fits$a), class = "bulkem_error_argument")
  expect_match(conditionMessage(e), "keep.data = TRUE")
  expect_match(conditionMessage(e), "newdata")
  expect_error(predict(m$fits), class = "bulkem_error_argument")
  expect_error(predict(m$fits$a, 1, type = "response"), class = "bulkem_error_argument")
  expect_error(predict(m$fits$a, 1, type = c("cdf", "density")), class = "bulkem_error_argument")
  expect_error(predict(m$fits$a, 1, types = "density"), class = "bulkem_error_argument")
  expect_error(predict(m$fits$a, 1, "density", 2), class = "bulkem_error_argument")
  expect_error(predict(m$fits$a, "a"), class = "bulkem_error_argument")
  expect_identical(predict(m$fits$a, 1, type = "dens"), predict(m$fits$a, 1, type = "density"))
})

for (family in c("normal", "invgauss")) {
  test_that(paste("quantile() inverts the mixture cdf:", family), {
    skip_if_not_installed("statmod")
    m <- predict_fits(family)
    p <- c(1e-8, 0.001, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-8)
    for (ds in c("a", "b")) {
      f <- m$fits[[ds]]
      q <- quantile(f, p)
      expect_named(q, names(quantile(1:10, p)))
      expect_equal(ref_cdf(f, unname(q)), p, tolerance = 1e-8)
      expect_true(all(diff(q) > 0))
    }
    ends <- quantile(m$fits$a, c(0, 1), names = FALSE)
    expect_identical(ends, c(if (family == "normal") -Inf else 0, Inf))
    # a result: one row per dataset, NA without a fit
    qq <- quantile(m$fits, c(0.25, 0.75))
    expect_identical(dim(qq), c(3L, 2L))
    expect_identical(dimnames(qq), list(c("a", "b", "bad"), c("25%", "75%")))
    expect_identical(qq["a", ], quantile(m$fits$a, c(0.25, 0.75)))
    expect_true(all(is.na(qq["bad", ])))
    expect_error(quantile(m$fits$a, 1.5), class = "bulkem_error_argument")
    expect_error(quantile(m$fits, NA), class = "bulkem_error_argument")
  })
}

test_that("quantile() of one component is the component's own quantile", {
  skip_if_not_installed("statmod")
  set.seed(33)
  x <- rnorm(200, 3, 2)
  f <- bulkem(list(x), num.components = 1, family = "normal", use.gpu = FALSE)[[1]]
  p <- c(0.1, 0.5, 0.9)
  expect_equal(quantile(f, p, names = FALSE), qnorm(p, mean(x), sqrt(mean((x - mean(x))^2))),
               tolerance = 1e-8)
  y <- rinvgauss_msh(300, 2, 5)
  g <- bulkem(list(y), num.components = 1, use.gpu = FALSE)[[1]]
  # the IG MLE in closed form: mean, and n / sum(1/y - 1/mean)
  lambda <- length(y) / sum(1 / y - 1 / mean(y))
  expect_equal(quantile(g, p, names = FALSE), statmod::qinvgauss(p, mean(y), shape = lambda),
               tolerance = 1e-6)
})

for (family in c("normal", "invgauss")) {
  test_that(paste("simulate() draws from the fitted mixture, with R's seed convention:", family), {
    skip_if_not_installed("statmod")
    m <- predict_fits(family)
    f <- m$fits$a
    s <- simulate(f, nsim = 2, seed = 1)
    expect_s3_class(s, "data.frame")
    expect_named(s, c("sim_1", "sim_2"))
    expect_identical(nrow(s), length(m$d$a))
    expect_identical(as.numeric(attr(s, "seed")), 1)
    expect_identical(simulate(f, nsim = 2, seed = 1), s)
    # the caller's random state is restored (seed given) or advanced (NULL)
    set.seed(77)
    before <- .Random.seed
    simulate(f, seed = 3)
    expect_identical(.Random.seed, before)
    s0 <- simulate(f, n = 10)
    expect_identical(attr(s0, "seed"), before)
    expect_false(identical(.Random.seed, before))
    # a large sample: moments, the probability integral transform and a KS
    # test against the fitted cdf
    n <- 20000
    big <- simulate(f, n = n, seed = 2)$sim_1
    sd <- if (family == "normal") f$sigma else sqrt(f$mu^3 / f$lambda)
    mean_mix <- sum(f$alpha * f$mu)
    var_mix <- sum(f$alpha * (sd^2 + f$mu^2)) - mean_mix^2
    expect_lt(abs(mean(big) - mean_mix), 4 * sqrt(var_mix / n))
    # (B1's wide IG component has kurtosis about 200: its sample variance is too rough)
    if (family == "normal") expect_lt(abs(var(big) / var_mix - 1), 0.05)
    u <- ref_cdf(f, big)
    expect_lt(abs(mean(u) - 1 / 2), 4 * sqrt(1 / 12 / n))
    expect_lt(abs(var(u) - 1 / 12), 4 * sqrt((1 / 80 - 1 / 144) / n))
    expect_gt(suppressWarnings(ks.test(big, function(q) ref_cdf(f, q)))$p.value, 0.001)
    if (family == "invgauss") expect_true(all(big > 0))
    expect_error(simulate(m$fits$bad), class = "bulkem_error_argument")
    expect_error(simulate(f, nsim = -1), class = "bulkem_error_argument")
    expect_error(simulate(f, nsims = 2), class = "bulkem_error_argument")
  })
}

test_that("simulate() of a result: one data frame per dataset", {
  m <- predict_fits("normal")
  s <- simulate(m$fits, nsim = 3, seed = 4)
  expect_named(s, c("a", "b", "bad"))
  expect_identical(dim(s$a), c(400L, 3L))
  expect_identical(dim(s$b), c(300L, 3L))
  expect_true(all(is.na(s$bad)))
  expect_identical(as.numeric(attr(s, "seed")), 4)
  expect_identical(simulate(m$fits, nsim = 3, seed = 4), s)
  small <- simulate(m$fits, n = 5, seed = 4)
  expect_identical(vapply(small, nrow, 0L), c(a = 5L, b = 5L, bad = 5L))
  # the three-component dataset's draws follow its fit
  big <- simulate(m$fits["b"], n = 20000, seed = 6)$b$sim_1
  expect_gt(suppressWarnings(ks.test(big, function(q) ref_cdf(m$fits$b, q)))$p.value, 0.001)
})

test_that("goodness-of-fit plots: PP and QQ against the fitted mixture", {
  m <- predict_fits("invgauss")
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(m$fits$a, which = "pp"))
  expect_silent(plot(m$fits$a, which = "qq", log = "xy", col = "blue", xlab = "fitted", main = "QQ"))
  expect_silent(plot(m$fits$a, which = "density"))
  expect_error(plot(m$fits$a, which = "hist"), class = "bulkem_error_argument")
  nodata <- predict_fits("normal", keep = FALSE)
  expect_error(plot(nodata$fits$a, which = "pp"), class = "bulkem_error_argument")
  expect_silent(plot(nodata$fits$a, data = nodata$d$a, which = "qq"))
})
