# bulkem(truncation =) (issue 34, item 3): data observed only inside a
# window, the likelihood renormalised over it. Against the truncated
# likelihood written with R's own densities and cdfs (dnorm/pnorm,
# statmod's dinvgauss/pinvgauss, dgamma/pgamma, dlnorm/plnorm), its direct
# numerical maximisation (optim from many starts), and its numerical
# Hessian for the standard errors.

# A component's mass in the window w, from the tail that does not cancel
# (optim finds the rounding of 1 - 1 otherwise).
tr_mass <- function(w, family, mu, shape) {
  if (family_cdf(w[1], family, mu, shape) < 0.5) {
    family_cdf(w[2], family, mu, shape) - family_cdf(w[1], family, mu, shape)
  } else {
    family_cdf(w[1], family, mu, shape, FALSE) - family_cdf(w[2], family, mu, shape, FALSE)
  }
}

# The truncated log-likelihood of (alpha, mu, shape) on x in window w.
tr_loglik <- function(x, w, family, alpha, mu, shape) {
  k <- length(mu)
  dens <- Reduce(`+`, lapply(seq_len(k), function(m) alpha[m] * family_density(x, family, mu[m], shape[m])))
  mass <- sum(vapply(seq_len(k), function(m) alpha[m] * tr_mass(w, family, mu[m], shape[m]), numeric(1)))
  sum(log(dens)) - length(x) * log(mass)
}

# Two-component data of `family` cut to the window w.
tr_data <- function(family, w, seed) {
  x <- two_component_data(family, seed)
  x[x > w[1] & x < w[2]]
}

tr_windows <- list(normal = c(-1, 3.5), lognormal = c(0.5, 3.5), gamma = c(0.4, 3.6), invgauss = c(0.45, 3.8))

test_that("truncated fits reach the best of optim on the renormalised likelihood, and report it", {
  for (family in names(tr_windows)) {
    w <- tr_windows[[family]]
    x <- tr_data(family, w, 11)
    f <- bulkem(list(x), family = family, truncation = w, use.gpu = FALSE, seed = 3,
                control = list(threads = 1))[[1]]
    expect_equal(f$status, "converged", info = family)
    expect_equal(f$truncation, w)
    shape <- f[[switch(family, invgauss = "lambda", gamma = "shape", "sigma")]]
    expect_equal(f$loglik, tr_loglik(x, w, family, f$alpha, f$mu, shape), tolerance = 1e-10, info = family)
    best <- best_of_optim(function(alpha, mu, shape) tr_loglik(x, w, family, alpha, mu, shape), x, family, 15)
    expect_gte(f$loglik, -best - 1e-6 * abs(best))
    # every weight in (0, 1), the components in ascending mu
    expect_true(all(f$alpha > 0 & f$alpha < 1) && abs(sum(f$alpha) - 1) < 1e-12)
    expect_false(is.unsorted(f$mu))
  }
})

test_that("truncated standard errors match a numerical Hessian of the renormalised likelihood", {
  for (family in names(tr_windows)) {
    w <- tr_windows[[family]]
    x <- tr_data(family, w, 12)
    f <- bulkem(list(x), family = family, truncation = w, use.gpu = FALSE, seed = 4,
                control = list(threads = 1))[[1]]
    sname <- switch(family, invgauss = "lambda", gamma = "shape", "sigma")
    g <- function(th) -tr_loglik(x, w, family, c(th[1], 1 - th[1]), th[2:3], th[4:5])
    th <- c(f$alpha[1], f$mu, f[[sname]])
    h <- stats::optimHess(th, g, control = list(ndeps = 1e-4 * pmax(abs(th), 1e-2)))
    numeric_se <- sqrt(diag(solve(h)))
    se <- unlist(f$se)[c("alpha1", "mu1", "mu2", paste0(sname, 1:2))]
    expect_equal(unname(se), numeric_se, tolerance = 1e-3, info = family)
  }
})

test_that("a window that cuts nothing gives the untruncated fit", {
  set.seed(2)
  x <- c(rnorm(200), rnorm(150, 4))
  plain <- bulkem(list(x), family = "normal", use.gpu = FALSE, seed = 9)[[1]]
  wide <- bulkem(list(x), family = "normal", truncation = c(-100, 100), use.gpu = FALSE, seed = 9)[[1]]
  open <- bulkem(list(x), family = "normal", truncation = c(-Inf, 100), use.gpu = FALSE, seed = 9)[[1]]
  for (f in list(wide, open)) {
    expect_equal(f$loglik, plain$loglik, tolerance = 1e-10)
    expect_equal(f$mu, plain$mu, tolerance = 1e-6)
    expect_equal(f$sigma, plain$sigma, tolerance = 1e-6)
    expect_equal(f$alpha, plain$alpha, tolerance = 1e-6)
  }
})

test_that("predict, quantile and simulate of a truncated fit are the renormalised mixture's", {
  w <- tr_windows$invgauss
  x <- tr_data("invgauss", w, 13)
  f <- bulkem(list(x), truncation = w, use.gpu = FALSE, seed = 5)[[1]]
  inside <- stats::integrate(function(z) predict(f, newdata = z, type = "density"), w[1], w[2])$value
  expect_equal(inside, 1, tolerance = 1e-6)
  expect_equal(predict(f, newdata = c(w[1] / 2, w[2] * 2), type = "density"), c(0, 0))
  expect_equal(predict(f, newdata = c(w[1] / 2, w[1], w[2], 10), type = "cdf"), c(0, 0, 1, 1))
  q <- quantile(f, c(0, 0.3, 1))
  expect_equal(unname(q[c(1, 3)]), w)
  expect_equal(predict(f, newdata = q[2], type = "cdf"), 0.3, tolerance = 1e-8)
  s <- simulate(f, nsim = 2, n = 2000, seed = 1)
  expect_true(all(unlist(s) >= w[1] & unlist(s) <= w[2]))
  # the draws follow the truncated cdf
  expect_gt(stats::ks.test(s$sim_1, function(z) predict(f, newdata = z, type = "cdf"))$p.value, 1e-3)
  # a window holding 0.1% of the mixture (the fit's upper tail): its draws
  # in rounds of bounded size, and an error, not hours of drawing or an
  # allocation of billions, where the draws would be too many
  tail <- f
  up <- stats::uniroot(function(z) predict(f, newdata = z, type = "cdf") - 0.999, w)$root
  tail$truncation <- c(stats::uniroot(function(z) bulkem:::untruncated_cdf(f, z) - 0.999, c(up, 1e3))$root, 1e4)
  expect_equal(bulkem:::window_mass(tail), 1e-3, tolerance = 1e-6)
  s <- simulate(tail, nsim = 2, n = 500, seed = 1)
  expect_true(all(unlist(s) >= tail$truncation[1] & unlist(s) <= tail$truncation[2]))
  expect_error(simulate(tail, nsim = 100, n = 2000), class = "bulkem_error_argument",
               regexp = "about 2e\\+08 draws.*nsim")
  far <- tail
  far$truncation <- c(1e5, 1e6)
  expect_error(simulate(far), class = "bulkem_error_argument", regexp = "too little to simulate")
  # posteriors are the untruncated mixture's responsibilities
  post <- predict(f, newdata = x[1:5], type = "posterior")
  d <- sapply(1:2, function(m) f$alpha[m] * statmod::dinvgauss(x[1:5], f$mu[m], f$lambda[m]))
  expect_equal(unname(as.matrix(post[c("comp1", "comp2")])), d / rowSums(d), tolerance = 1e-10)
  expect_output(print(f), "truncated to")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_silent(plot(f, data = x))
})

test_that("truncation per dataset, values outside the window and bad arguments", {
  set.seed(3)
  a <- stats::runif(100, 1, 2) + rep(c(0, 1.5), 50)
  b <- c(a, 10)
  fits <- suppressWarnings(bulkem(list(a = a, b = b, c = a), family = "normal",
                                  truncation = list(c(0.5, 4), c(0.5, 4), NULL), use.gpu = FALSE, seed = 1))
  expect_equal(fits$a$truncation, c(0.5, 4))
  expect_null(fits$c$truncation)
  expect_equal(fits$b$status, "invalid")
  expect_match(fits$b$message, "outside the truncation window")
  expect_equal(fits$a$status, "converged")
  one <- bulkem(list(a = a), family = "normal", truncation = c(0.5, 4), use.gpu = FALSE, seed = 1)
  expect_equal(one$a$loglik, fits$a$loglik)
  expect_equal(bulkem(list(a = a), family = "normal", truncation = matrix(c(0.5, 4), 1), use.gpu = FALSE,
                      seed = 1)$a$loglik, fits$a$loglik)
  bad <- function(...) expect_error(bulkem(list(a = a), family = "normal", use.gpu = FALSE, ...),
                                    class = "bulkem_error_argument", regexp = "truncation")
  bad(truncation = c(4, 1))
  bad(truncation = c(-Inf, Inf))
  bad(truncation = c(1, NA))
  bad(truncation = "a")
  bad(truncation = list(c(0, 1), c(0, 1)))
  expect_error(bulkem(list(a = a), family = "t", truncation = c(0.5, 4), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "truncat")
  expect_error(bulkem(list(a = a), family = "gamma", truncation = c(-2, -1), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "truncation")
})

test_that("the bootstrap draws a truncated fit's replicates inside its window and refits them truncated", {
  w <- tr_windows$invgauss
  x <- tr_data("invgauss", w, 13)
  f <- bulkem(list(a = x), truncation = w, use.gpu = FALSE, seed = 5, control = list(keep.data = TRUE))
  # standard errors: near the observed information's (itself checked
  # against a numerical Hessian of the truncated likelihood above)
  se <- bulkem_bootstrap(f, B = 100, seed = 2, random.inits = 5, use.gpu = FALSE)
  expect_identical(attr(se, "replicates")$used, 100L)
  wald <- unname(f$a$se[c("alpha1", "mu1", "lambda1", "alpha2", "mu2", "lambda2")])
  expect_equal(se$std.error, wald, tolerance = 0.35)
  # the test of K = 1 against 2: the observed statistic is that of the
  # truncated fits bulkem() makes (untruncated refits would give others)
  one <- bulkem(list(a = x), num.components = 1, truncation = w, use.gpu = FALSE, seed = 5,
                control = list(keep.data = TRUE))
  lrt <- bulkem_bootstrap(one, test = "lrt", B = 39, seed = 3, random.inits = 5, use.gpu = FALSE)
  two <- bulkem(list(a = x), num.components = 2, truncation = w, use.gpu = FALSE, seed = 1)
  expect_equal(lrt$loglik[1], one$a$loglik, tolerance = 1e-6)
  expect_equal(lrt$loglik_alt[1], two$a$loglik, tolerance = 1e-6)
  expect_lte(lrt$p_value[1], 0.05)
  # under a truncated null the replicates' statistics are of truncated
  # data too: a one-component truncated sample is rarely rejected
  set.seed(8)
  y <- statmod::rinvgauss(600, 1.5, 4)
  y <- y[y > w[1] & y < w[2]]
  null <- bulkem(list(y = y), num.components = 1, truncation = w, use.gpu = FALSE, seed = 1,
                 control = list(keep.data = TRUE))
  t1 <- bulkem_bootstrap(null, test = "lrt", B = 39, seed = 4, random.inits = 5, use.gpu = FALSE)
  expect_gt(t1$p_value[1], 0.05)
  # the sequential procedure refits each K truncated as well
  seq2 <- bulkem_bootstrap(one, test = "lrt", B = 19, max.components = 2, seed = 3, random.inits = 5,
                           use.gpu = FALSE)
  expect_equal(seq2$loglik_alt[seq2$k == 1], two$a$loglik, tolerance = 1e-6)
  # a window holding under 1% of its mixture is refused
  thin <- f
  thin$a$truncation <- c(40, 50)
  expect_error(bulkem_bootstrap(thin, B = 19, use.gpu = FALSE), class = "bulkem_error_argument",
               regexp = "under 1%")
})

test_that("shards carry each dataset's window", {
  skip_if_not_installed("future")
  set.seed(4)
  x <- list(a = c(rnorm(80), rnorm(60, 3)), b = c(rnorm(70, 1), rnorm(90, 5)), c = rnorm(100, 2))
  x <- lapply(x, function(v) v[v > -1 & v < 6])
  windows <- list(c(-1, 6), NULL, c(-1, Inf))
  local <- bulkem(x, family = "normal", use.gpu = FALSE, seed = 4, truncation = windows)
  old <- future::plan(future::sequential)
  on.exit(future::plan(old))
  sharded <- bulkem(x, family = "normal", use.gpu = FALSE, seed = 4, truncation = windows,
                    control = list(future = TRUE, shards = 2))
  for (d in 1:3) {
    expect_identical(sharded[[d]][c("mu", "sigma", "alpha", "loglik", "truncation")],
                     local[[d]][c("mu", "sigma", "alpha", "loglik", "truncation")])
  }
  expect_null(local$b$truncation)
  expect_equal(local$c$truncation, c(-1, Inf))
})

test_that("frequency weights give the truncated fit of the expanded data", {
  set.seed(8)
  x <- round(c(rnorm(120, 0, 1), rnorm(80, 3, 0.7)), 1)
  x <- x[x > -1 & x < 3.5]
  tab <- table(x)
  values <- as.numeric(names(tab))
  counts <- as.numeric(tab)
  expanded <- bulkem(list(a = x), family = "normal", truncation = c(-1, 3.5), use.gpu = FALSE, seed = 6,
                     control = list(accelerate = FALSE), epsilon = 1e-12, max.iters = 20000)$a
  weighted <- bulkem(list(a = values), weights = list(counts), family = "normal", truncation = c(-1, 3.5),
                     use.gpu = FALSE, seed = 6, control = list(accelerate = FALSE), epsilon = 1e-12,
                     max.iters = 20000)$a
  expect_equal(weighted$loglik, expanded$loglik, tolerance = 1e-10)
  expect_equal(weighted$mu, expanded$mu, tolerance = 1e-6)
  expect_equal(weighted$sigma, expanded$sigma, tolerance = 1e-6)
  expect_equal(weighted$alpha, expanded$alpha, tolerance = 1e-6)
  expect_equal(unlist(weighted$se), unlist(expanded$se), tolerance = 1e-4)
})
