# Censored values (issue 34, item 3): a survival::Surv() response, each
# censored value adding log(F(upper) - F(lower)) of its window to the
# likelihood. Against that likelihood written with R's own densities and
# cdfs, its direct numerical maximisation (optim from many starts), and its
# numerical Hessian for the standard errors.

skip_if_not_installed("survival")

# The log-likelihood of exact values x, right-censored values at `right`,
# left-censored at `left`, within the window `trunc` (or none).
cs_loglik <- function(x, right, left, family, alpha, mu, shape, trunc = NULL) {
  k <- length(mu)
  mix <- function(f) Reduce(`+`, lapply(seq_len(k), function(m) alpha[m] * f(m)))
  hi <- if (is.null(trunc)) Inf else trunc[2]
  lo <- if (is.null(trunc)) -Inf else trunc[1]
  cdf <- function(v, m) if (is.infinite(v)) as.numeric(v > 0) else family_cdf(v, family, mu[m], shape[m])
  ll <- sum(log(mix(function(m) family_density(x, family, mu[m], shape[m])))) +
    sum(log(mix(function(m) vapply(right, function(c) cdf(hi, m) - cdf(c, m), 0)))) +
    sum(log(mix(function(m) vapply(left, function(c) cdf(c, m) - cdf(lo, m), 0))))
  if (!is.null(trunc)) ll <- ll - (length(x) + length(right) + length(left)) * log(mix(function(m) cdf(hi, m) - cdf(lo, m)))
  ll
}

# a deadline (right-censoring) near the upper end of each family's data
cs_deadline <- c(normal = 3.3, lognormal = 3.3, gamma = 3.4, invgauss = 3.5)

test_that("right-censored fits reach the best of optim on the censored likelihood, with its standard errors", {
  for (family in names(cs_deadline)) {
    v <- two_component_data(family, 21)
    c0 <- cs_deadline[[family]]
    observed <- v <= c0
    d <- data.frame(rt = pmin(v, c0), observed = observed, s = "one")
    f <- bulkem(survival::Surv(rt, observed) ~ s, data = d, family = family, use.gpu = FALSE, seed = 3,
                control = list(threads = 1))[[1]]
    expect_equal(f$status, "converged", info = family)
    expect_equal(f$censored, sum(!observed))
    expect_equal(f$n, sum(observed))
    expect_equal(f$nobs, length(v))
    x <- v[observed]
    right <- rep(c0, sum(!observed))
    sname <- bulkem:::shape_name(family)
    expect_equal(f$loglik, cs_loglik(x, right, numeric(0), family, f$alpha, f$mu, f[[sname]]),
                 tolerance = 1e-10, info = family)
    best <- best_of_optim(function(alpha, mu, shape) cs_loglik(x, right, numeric(0), family, alpha, mu, shape),
                          x, family, 10)
    expect_gte(f$loglik, -best - 1e-6 * abs(best))
    g <- function(th) -cs_loglik(x, right, numeric(0), family, c(th[1], 1 - th[1]), th[2:3], th[4:5])
    th <- c(f$alpha[1], f$mu, f[[sname]])
    h <- stats::optimHess(th, g, control = list(ndeps = 1e-4 * pmax(abs(th), 1e-2)))
    se <- unlist(f$se)[c("alpha1", "mu1", "mu2", paste0(sname, 1:2))]
    expect_equal(unname(se), sqrt(diag(solve(h))), tolerance = 1e-3, info = family)
  }
})

test_that("left- and interval-censored values, with truncation, and Surv datasets in a list", {
  v <- two_component_data("invgauss", 22)
  # a detection limit below, a deadline above, cut-offs outside both
  lo <- 0.5
  hi <- 3.5
  v <- v[v > 0.2 & v < 6]
  left <- v < lo
  right <- v > hi
  status <- ifelse(left, 2, ifelse(right, 0, 1))
  # (interval2: NA for an open end)
  y <- survival::Surv(ifelse(left, NA, ifelse(right, hi, v)), ifelse(left, lo, ifelse(right, NA, v)),
                      type = "interval2")
  f <- bulkem(list(s = y), truncation = c(0.2, 6), use.gpu = FALSE, seed = 4)$s
  expect_equal(f$status, "converged")
  expect_equal(f$censored, sum(left | right))
  expect_equal(f$loglik, cs_loglik(v[!left & !right], rep(hi, sum(right)), rep(lo, sum(left)), "invgauss",
                                   f$alpha, f$mu, f$lambda, trunc = c(0.2, 6)), tolerance = 1e-10)
  # the same values as a right- and a left-censored Surv: each its part
  g <- bulkem(list(s = survival::Surv(pmin(v, hi), !right)), use.gpu = FALSE, seed = 4)$s
  expect_equal(g$loglik, cs_loglik(v[!right], rep(hi, sum(right)), numeric(0), "invgauss", g$alpha, g$mu, g$lambda),
               tolerance = 1e-10)
  l <- bulkem(list(s = survival::Surv(pmax(v, lo), !left, type = "left")), use.gpu = FALSE, seed = 4)$s
  expect_equal(l$loglik, cs_loglik(v[!left], numeric(0), rep(lo, sum(left)), "invgauss", l$alpha, l$mu, l$lambda),
               tolerance = 1e-10)
  expect_output(print(g), "censored value")
})

test_that("without censored values a Surv response is the plain fit; bad combinations are refused", {
  set.seed(7)
  x <- c(rnorm(150), rnorm(100, 4))
  plain <- bulkem(list(a = x), family = "normal", use.gpu = FALSE, seed = 2)$a
  all_observed <- bulkem(list(a = survival::Surv(x, rep(1, length(x)))), family = "normal", use.gpu = FALSE,
                         seed = 2)$a
  expect_identical(all_observed[c("mu", "sigma", "alpha", "loglik")], plain[c("mu", "sigma", "alpha", "loglik")])
  y <- list(a = survival::Surv(pmin(x, 5), x <= 5))
  expect_error(bulkem(y, family = "t", use.gpu = FALSE), class = "bulkem_error_argument", regexp = "censored")
  expect_error(bulkem(list(a = y$a, b = x), use.gpu = FALSE), class = "bulkem_error_argument", regexp = "Surv")
  f <- bulkem(y, family = "normal", use.gpu = FALSE, seed = 1)
  expect_error(bulkem_bootstrap(f, B = 19), class = "bulkem_error_argument", regexp = "censored")
  # a right-censored value above the truncation window's upper end: nothing
  # is left of its window, and the dataset cannot be fitted
  z <- suppressWarnings(bulkem(list(a = survival::Surv(c(x[x < 5], 7), c(rep(1, sum(x < 5)), 0))), family = "normal",
                               truncation = c(-5, 6), use.gpu = FALSE, seed = 1))$a
  expect_equal(z$status, "invalid")
  expect_match(z$message, "censored")
})

test_that("a censored fit plots", {
  set.seed(9)
  x <- c(rnorm(300, 0, 1), rnorm(200, 3, 0.7))
  f <- bulkem(list(a = survival::Surv(pmin(x, 3), x <= 3)), family = "normal", use.gpu = FALSE, seed = 1)$a
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_silent(plot(f, data = x[x <= 3]))
})

test_that("shards carry each dataset's censored values", {
  skip_if_not_installed("future")
  set.seed(10)
  x <- list(a = c(rnorm(80), rnorm(60, 3)), b = c(rnorm(70, 1), rnorm(90, 5)), c = rnorm(100, 2))
  y <- lapply(x, function(v) survival::Surv(pmin(v, 4), v <= 4))
  local <- bulkem(y, family = "normal", use.gpu = FALSE, seed = 4)
  old <- future::plan(future::sequential)
  on.exit(future::plan(old))
  sharded <- bulkem(y, family = "normal", use.gpu = FALSE, seed = 4, control = list(future = TRUE, shards = 2))
  for (d in 1:3) {
    expect_identical(sharded[[d]][c("mu", "sigma", "alpha", "loglik", "censored")],
                     local[[d]][c("mu", "sigma", "alpha", "loglik", "censored")])
  }
  expect_equal(local$b$censored, sum(x$b > 4))
})

test_that("frequency weights of a Surv response give the fit of the expanded rows", {
  set.seed(12)
  v <- round(c(rnorm(120, 0, 1), rnorm(80, 3, 0.7)), 1)
  d <- data.frame(v = pmin(v, 3), obs = v <= 3, s = "a")
  agg <- stats::aggregate(list(w = rep(1, nrow(d))), d[c("v", "obs", "s")], sum)
  expanded <- bulkem(survival::Surv(v, obs) ~ s, data = d, family = "normal", use.gpu = FALSE, seed = 6,
                     epsilon = 1e-12, max.iters = 20000, control = list(accelerate = FALSE))[[1]]
  weighted <- bulkem(survival::Surv(v, obs) ~ s, data = agg, weights = w, family = "normal", use.gpu = FALSE,
                     seed = 6, epsilon = 1e-12, max.iters = 20000, control = list(accelerate = FALSE))[[1]]
  expect_equal(weighted$loglik, expanded$loglik, tolerance = 1e-10)
  expect_equal(weighted$mu, expanded$mu, tolerance = 1e-6)
  expect_equal(weighted$sigma, expanded$sigma, tolerance = 1e-6)
  expect_equal(weighted$censored, sum(!d$obs))
  expect_equal(weighted$nobs, nrow(d))
})

test_that("the bootstrap draws replicates censored as the data were", {
  # the windows' counts merged, each draw censored into the window it falls in
  w <- c(3.5, Inf, 1, 3.5, Inf, 1, -Inf, 0.2, 1)
  expect_equal(bulkem:::merge_windows(w), c(-Inf, 0.2, 1, 3.5, Inf, 2))
  cut <- bulkem:::censor_into(c(0.1, 1, 2, 4, 5, 0.15), bulkem:::merge_windows(w))
  expect_equal(cut$values, c(1, 2))
  expect_equal(cut$windows, c(-Inf, 0.2, 2, 3.5, Inf, 2))
  expect_null(bulkem:::censor_into(c(1, 2), c(3.5, Inf, 4))$windows)
  # right-censored at a deadline (inverse Gaussian) and left-censored at a
  # detection limit (lognormal): the bootstrap's standard errors against the
  # observed information's, on well-separated components
  set.seed(5)
  x <- c(statmod::rinvgauss(300, 1, 8), statmod::rinvgauss(200, 3, 40))
  late <- x > 3.5
  f <- bulkem(list(a = survival::Surv(pmin(x, 3.5), !late)), seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE))
  expect_equal(f$a$censored_windows, rep(c(3.5, Inf, 1), sum(late)), ignore_attr = TRUE)
  bs <- bulkem_bootstrap(f, B = 199, seed = 2, use.gpu = FALSE)
  expect_equal(attr(bs, "replicates")$used, 199L)
  ratio <- bs$std.error / tidy(f)$std.error
  expect_true(all(ratio > 0.75 & ratio < 1.25))
  z <- exp(c(stats::rnorm(300, 0, 0.4), stats::rnorm(200, 1.5, 0.3)))
  low <- z < 0.6
  g <- bulkem(list(b = survival::Surv(pmax(z, 0.6), !low, type = "left")), family = "lognormal", seed = 1,
              use.gpu = FALSE, control = list(keep.data = TRUE))
  gb <- bulkem_bootstrap(g, B = 199, seed = 2, use.gpu = FALSE)
  ratio <- gb$std.error / tidy(g)$std.error
  expect_true(all(ratio > 0.75 & ratio < 1.25))
  # the test: its observed statistic is that of bulkem()'s censored fits
  # with the bootstrap's settings; K = 2 is kept
  lr <- bulkem_bootstrap(f, B = 39, test = "lrt", max.components = 2, seed = 2, use.gpu = FALSE)
  at <- function(k) bulkem(list(a = survival::Surv(pmin(x, 3.5), !late)), num.components = k, seed = 2,
                           epsilon = 1e-5, max.iters = 5000, use.gpu = FALSE)$a$loglik
  expect_equal(lr$loglik, c(at(1), at(2)), tolerance = 1e-10)
  expect_equal(lr$loglik_alt, c(at(2), at(3)), tolerance = 1e-10)
  expect_equal(lr$p_value[1], 1 / 40)
  expect_equal(attr(lr, "selected")$k, 2L)
  # censoring neither scheme can redraw: windows on both sides that
  # overlap or hold observed values (histograms: test-binned.R)
  both <- survival::Surv(time = c(x[x > 0.3 & !late], 3.5, 2.5, 0.3, 0.2), time2 = c(x[x > 0.3 & !late], Inf, Inf, 0.3, 0.2),
                         event = c(rep(1, sum(x > 0.3 & !late)), 0, 0, 2, 2), type = "interval")
  fit <- suppressWarnings(bulkem(list(a = both), seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE)))
  expect_error(bulkem_bootstrap(fit, B = 19, use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "not all on one side")
})

test_that("randomly censored values are bootstrapped with the censoring distribution the data show", {
  # a draw above its own point is known only to exceed it; below, only to
  # lie below it
  r <- bulkem:::censor_randomly(c(1, 5, 3, 6), c(2, 4, Inf, 4), "right")
  expect_equal(r$values, c(1, 3))
  expect_equal(r$windows, c(4, Inf, 2))
  l <- bulkem:::censor_randomly(c(1, 5, 3), c(2, 4, 0), "left")
  expect_equal(l$values, c(5, 3))
  expect_equal(l$windows, c(-Inf, 2, 1))
  expect_null(bulkem:::censor_randomly(c(1, 2), c(3, Inf), "right")$windows)
  # each trial its own deadline, uniform on (1.5, 6)
  set.seed(11)
  x <- c(statmod::rinvgauss(300, 1, 8), statmod::rinvgauss(200, 3, 40))
  cens <- stats::runif(length(x), 1.5, 6)
  late <- x > cens
  f <- bulkem(list(a = survival::Surv(pmin(x, cens), !late)), seed = 1, use.gpu = FALSE,
              control = list(keep.data = TRUE))
  pts <- bulkem:::random_censoring_points(as.double(f$a$data), f$a$censored_windows, "right", 500, 40)
  # the points drawn are the data's censoring points (or never), with the
  # reverse Kaplan-Meier estimate's probabilities: the model's draws
  # censored at them are censored about as often as the data were
  expect_true(all(unlist(pts) %in% c(cens[late], Inf)))
  draws <- lapply(pts, function(p) {
    y <- ifelse(stats::runif(500) < 0.6, statmod::rinvgauss(500, 1, 8), statmod::rinvgauss(500, 3, 40))
    mean(y > p)
  })
  expect_equal(mean(unlist(draws)), mean(late), tolerance = 0.05 / mean(late))
  # the bootstrap's standard errors against the observed information's
  bs <- bulkem_bootstrap(f, B = 199, seed = 2, use.gpu = FALSE)
  expect_equal(attr(bs, "replicates")$used, 199L)
  ratio <- bs$std.error / tidy(f)$std.error
  expect_true(all(ratio > 0.75 & ratio < 1.25))
  # left-censored at detection limits that vary (lognormal)
  set.seed(12)
  z <- exp(c(stats::rnorm(300, 0, 0.4), stats::rnorm(200, 1.5, 0.3)))
  limit <- stats::runif(length(z), 0.4, 1)
  low <- z < limit
  g <- bulkem(list(b = survival::Surv(pmax(z, limit), !low, type = "left")), family = "lognormal", seed = 1,
              use.gpu = FALSE, control = list(keep.data = TRUE))
  gb <- bulkem_bootstrap(g, B = 99, seed = 2, use.gpu = FALSE)
  ratio <- gb$std.error / tidy(g)$std.error
  expect_true(all(ratio > 0.7 & ratio < 1.3))
})

test_that("weighted randomly censored values are bootstrapped as the rows they stand for", {
  # rows rounded so that they repeat: the distinct rows with their counts
  # as frequency weights against the expanded rows, each deadline its own
  set.seed(13)
  x <- round(c(stats::rnorm(150, 2, 0.5), stats::rnorm(100, 5, 0.7)), 1)
  cens <- round(stats::runif(250, 3, 8))
  time <- pmin(x, cens)
  event <- x <= cens
  key <- paste(time, event)
  first <- !duplicated(key)
  w <- as.numeric(table(factor(key, levels = key[first])))
  rows <- rep(which(first), w)
  fit <- function(s, weights = NULL) {
    bulkem(list(a = s), weights = weights, family = "normal", seed = 1, use.gpu = FALSE, epsilon = 1e-12,
           control = list(keep.data = TRUE))
  }
  fw <- fit(survival::Surv(time[first], event[first]), list(w))
  fe <- fit(survival::Surv(time[rows], event[rows]))
  expect_equal(fw$a$loglik, fe$a$loglik, tolerance = 1e-10)
  bw <- bulkem_bootstrap(fw, B = 39, seed = 2, use.gpu = FALSE, epsilon = 1e-12)
  be <- bulkem_bootstrap(fe, B = 39, seed = 2, use.gpu = FALSE, epsilon = 1e-12)
  expect_equal(attr(bw, "replicates"), attr(be, "replicates"))
  expect_equal(bw$std.error, be$std.error, tolerance = 1e-8)
  # weights that are not whole numbers have no data to stand for
  fc <- fit(survival::Surv(time[first], event[first]), list(w + 0.5))
  expect_error(bulkem_bootstrap(fc, B = 19, use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "whole numbers")
})
