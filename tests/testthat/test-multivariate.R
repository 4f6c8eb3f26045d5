# Multivariate Normal mixtures (issue 33), end to end from bulkem(), checked
# against independent references: mclust's fits of the same covariance
# model, a log-likelihood computed here from the density's definition, and
# mclust's parameter counts.

# log Σ_k α_k N(x; μ_k, Σ_k), from det() and solve(), not from the
# Cholesky path of the package
mv_loglik <- function(x, fit) {
  dens <- vapply(seq_len(fit$k), function(m) {
    s <- fit$sigma[, , m]
    xc <- sweep(x, 2, fit$mu[m, ])
    q <- rowSums((xc %*% solve(s)) * xc)
    fit$alpha[m] * exp(-0.5 * q) / sqrt(det(2 * pi * s))
  }, numeric(nrow(x)))
  if (!is.null(fit$noise_support)) {
    box <- fit$noise_support
    dens <- cbind(dens, fit$noise / prod(box[, 2] - box[, 1]))
  }
  sum(log(rowSums(dens)))
}

test_that("iris with K = 3 reaches mclust's optimum and its classes", {
  skip_if_not_installed("mclust")
  x <- as.matrix(iris[1:4])
  fit <- bulkem(list(iris = x), num.components = 3, seed = 1,
                control = list(threads = 2, keep.data = TRUE))$iris
  m <- mclust_fit(x, 3, "VVV")
  expect_equal(fit$status, "converged")
  expect_gte(fit$loglik, m$loglik - 1e-6 * abs(m$loglik))
  expect_equal(fit$loglik, mv_loglik(x, fit), tolerance = 1e-10)
  # same optimum: the same MAP classes, up to the components' labels
  tab <- table(predict(fit, type = "class"), m$classification)
  expect_equal(sum(apply(tab, 1, max)), nrow(x))
  expect_equal(dim(fit$mu), c(3L, 4L))
  expect_equal(colnames(fit$mu), colnames(x))
  expect_equal(dim(fit$sigma), c(4L, 4L, 3L))
  # the canonical order: ascending first coordinate
  expect_false(is.unsorted(fit$mu[, 1]))
  # BIC with mclust's parameter count
  p <- mclust::nMclustParams("VVV", d = 4, G = 3)
  expect_equal(fit$bic, -2 * fit$loglik + p * log(150), tolerance = 1e-12)
  expect_equal(as.numeric(BIC(fit)), fit$bic, tolerance = 1e-12)
})

test_that("faithful with K = 2 to 4 reaches mclust's log-likelihood under every covariance structure", {
  skip_if_not_installed("mclust")
  x <- as.matrix(faithful)
  for (cv in names(mclust_model)) {
    for (k in 2:4) {
      fit <- bulkem(list(x), num.components = k, covariance = cv, seed = 2,
                    control = list(threads = 2))[[1]]
      m <- mclust_fit(x, k, mclust_model[[cv]])
      label <- paste(cv, k)
      expect_equal(fit$status, "converged", label = label)
      expect_gte(fit$loglik, m$loglik - 1e-6 * abs(m$loglik))
      expect_equal(fit$loglik, mv_loglik(x, fit), tolerance = 1e-10, label = label)
      expect_equal(fit$df_model, mclust::nMclustParams(mclust_model[[cv]], d = 2, G = k), label = label)
      s <- fit$sigma
      switch(cv,
             tied = for (m2 in 2:k) expect_equal(s[, , m2], s[, , 1], label = label),
             diagonal = expect_true(all(s[1, 2, ] == 0 & s[2, 1, ] == 0), label = label),
             spherical = {
               expect_true(all(s[1, 2, ] == 0), label = label)
               expect_equal(s[1, 1, ], s[2, 2, ], tolerance = 1e-12, label = label)
             },
             full = expect_true(all(s[1, 2, ] == s[2, 1, ]), label = label))
    }
  }
})

test_that("K is chosen by BIC over num.components, every K's fit kept", {
  x <- as.matrix(faithful)
  fit <- bulkem(list(f = x), num.components = 1:3, seed = 4, control = list(threads = 2))$f
  expect_equal(fit$by_k$K, 1:3)
  expect_equal(fit$k, fit$by_k$K[which.min(fit$by_k$bic)])
  expect_equal(fit$num_components, fit$k)
  ks <- vapply(fit$all_k, function(f) f$k, 0L)
  expect_setequal(ks, 1:3)
  # K = 1 is the sample mean and the ML covariance
  one <- fit$all_k[[which(ks == 1)]]
  expect_equal(one$mu[1, ], colMeans(x), tolerance = 1e-12)
  expect_equal(one$sigma[, , 1], cov(x) * (nrow(x) - 1) / nrow(x), tolerance = 1e-10)
  alone <- bulkem(list(f = x), num.components = 2, seed = 4, control = list(threads = 2))$f
  expect_equal(fit$all_k[[which(ks == 2)]]$loglik, alone$loglik)
})

test_that("fits are reproducible and independent of threads and of the other datasets", {
  set.seed(5)
  sim <- function(n) rbind(matrix(rnorm(2 * n), n), matrix(rnorm(n, 3), n / 2))
  data <- list(a = sim(100), b = sim(60), c = sim(200))
  one <- bulkem(data, num.components = 2, seed = 9, control = list(threads = 1))
  two <- bulkem(data, num.components = 2, seed = 9, control = list(threads = 2))
  strip <- function(r) lapply(unclass(r), unclass)
  expect_identical(strip(one), strip(two))
  alone <- bulkem(data["b"], num.components = 2, seed = 9, control = list(threads = 2))
  expect_identical(unclass(alone$b), unclass(one$b))
  other <- bulkem(data, num.components = 2, seed = 10, control = list(threads = 2))
  expect_false(identical(one$a$best_start, other$a$best_start) && identical(one$a$loglik, other$a$loglik) &&
                 identical(one$c$loglik, other$c$loglik) && identical(one$b$loglik, other$b$loglik))
})

test_that("a dataset that cannot be fitted gets its status while the rest fit unchanged", {
  x <- as.matrix(faithful)
  bad <- list(ok = x, const = cbind(eruptions = rep(1, 50), waiting = seq_len(50)),
              small = x[1:3, ], inf = rbind(x[1:30, ], c(Inf, 1)))
  expect_warning(r <- bulkem(bad, num.components = 2, seed = 1, control = list(threads = 2)),
                 class = "bulkem_warning_convergence")
  expect_equal(vapply(r, function(f) f$status, ""), c(ok = "converged", const = "invalid",
                                                       small = "invalid", inf = "invalid"))
  expect_match(r$const$message, "constant")
  expect_match(r$small$message, "too few")
  expect_match(r$inf$message, "not finite")
  expect_true(all(is.na(r$small$mu)))
  ok <- bulkem(list(ok = x), num.components = 2, seed = 1, control = list(threads = 2))
  expect_identical(unclass(r$ok), unclass(ok$ok))
})

test_that("predict() gives posteriors, classes, uncertainty and the density", {
  x <- as.matrix(faithful)
  fit <- bulkem(list(x), num.components = 2, seed = 3,
                control = list(threads = 2, keep.data = TRUE))[[1]]
  post <- predict(fit)
  expect_equal(dim(post), c(nrow(x), 2L))
  expect_equal(rowSums(post), rep(1, nrow(x)), tolerance = 1e-12)
  expect_equal(predict(fit, type = "class"), max.col(post, ties.method = "first"))
  expect_equal(predict(fit, type = "uncertainty"), 1 - apply(post, 1, max))
  dens <- predict(fit, newdata = x[1:5, 2:1], type = "density")
  expect_equal(sum(log(predict(fit, type = "density"))), fit$loglik, tolerance = 1e-10)
  expect_equal(dens, predict(fit, type = "density")[1:5], tolerance = 1e-14)
  expect_error(predict(fit, newdata = x[, 1, drop = FALSE]), class = "bulkem_error_argument")
})

test_that("the formula interface fits one multivariate dataset per group", {
  df <- data.frame(g = rep(c("u", "v"), each = 75), iris[1:4])
  r <- bulkem(cbind(Sepal.Length, Petal.Length) ~ g, data = df, num.components = 2, seed = 1,
              control = list(threads = 2))
  expect_s3_class(r, "bulkem_mv")
  expect_equal(names(r), c("u", "v"))
  expect_equal(colnames(r$u$mu), c("Sepal.Length", "Petal.Length"))
  expect_equal(glance(r)$g, c("u", "v"))
  direct <- bulkem(list(u = as.matrix(df[df$g == "u", c("Sepal.Length", "Petal.Length")])),
                   num.components = 2, seed = 1, control = list(threads = 2))
  expect_equal(r$u$loglik, direct$u$loglik)
  td <- tidy(r)
  expect_equal(nrow(td), 2 * 2 * (1 + 2 + 3))
})

test_that("what multivariate fits do not take is an argument error naming it", {
  x <- list(as.matrix(faithful))
  for (call in list(quote(bulkem(x, family = "invgauss")),
                    quote(bulkem(x, noise = TRUE, noise.support = c(0, 1))),
                    quote(bulkem(x, noise.support = cbind(c(0, 0), c(9, 99)))),
                    quote(bulkem(x, noise = TRUE, noise.support = cbind(c(9, 0), c(0, 99)))),
                    quote(bulkem(x, noise = TRUE, noise.support = list(NULL, NULL))),
                    quote(bulkem(x, control = list(accelerate = FALSE))),
                    quote(bulkem(x, control = list(engine = "cuda-streams"))),
                    quote(bulkem(x, covariance = "banded")),
                    quote(bulkem(list(rnorm(50)), covariance = "tied")))) {
    expect_error(eval(call), class = "bulkem_error_argument")
  }
  fit <- bulkem(x, num.components = 2, seed = 1, control = list(threads = 1))
  # vcov() and confint() take them (test-vcov-multivariate.R); quantile()
  # does not; bulkem_bootstrap() needs the data (test-bootstrap-multivariate.R)
  expect_error(bulkem_bootstrap(fit), "keep.data", class = "bulkem_error_argument")
  expect_error(quantile(fit[[1]]), class = "bulkem_error_argument")
})

test_that("plot() draws the scatter-plot matrix with the components' ellipses", {
  x <- as.matrix(iris[1:4])
  fits <- bulkem(list(iris = x), num.components = 3, seed = 1,
                 control = list(threads = 2, keep.data = TRUE))
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_identical(plot(fits$iris), fits$iris)
  expect_identical(plot(fits, which = "iris"), fits)
  plain <- fits$iris
  plain$data <- NULL
  expect_silent(plot(plain))
  expect_error(plot(fits, which = 2), class = "bulkem_error_argument")
  expect_error(plot(fits$iris, level = 2), class = "bulkem_error_argument")
  wide <- bulkem(list(matrix(rnorm(700), 100, 7)), num.components = 1, control = list(threads = 1))
  expect_error(plot(wide[[1]]), class = "bulkem_error_argument")
})

test_that("simulate() draws from the fitted mixture, and augment() adds the posteriors", {
  x <- as.matrix(faithful)
  fits <- bulkem(list(f = x), num.components = 2, seed = 2,
                 control = list(threads = 2, keep.data = TRUE))
  fit <- fits$f
  s <- simulate(fit, nsim = 2, seed = 1, n = 20000)
  expect_named(s, c("sim_1", "sim_2"))
  expect_equal(dim(s$sim_1), c(20000L, 2L))
  expect_equal(colnames(s$sim_1), colnames(x))
  expect_identical(s, simulate(fit, nsim = 2, seed = 1, n = 20000))
  # the mixture's mean and covariance, from its parameters
  m <- colSums(fit$alpha * fit$mu)
  v <- Reduce(`+`, lapply(1:2, function(k) fit$alpha[k] * (fit$sigma[, , k] + tcrossprod(fit$mu[k, ])))) -
    tcrossprod(m)
  both <- rbind(s$sim_1, s$sim_2)
  se <- sqrt(diag(v) / nrow(both))
  expect_true(all(abs(colMeans(both) - m) < 4 * se))
  expect_equal(cov(both), v, tolerance = 0.03)
  all <- simulate(fits, n = 5, seed = 3)
  expect_equal(dim(all$f$sim_1), c(5L, 2L))

  a <- augment(fit)
  expect_equal(nrow(a), nrow(x))
  expect_equal(a$.component, predict(fit, type = "class"))
  expect_equal(a$.posterior_1 + a$.posterior_2, rep(1, nrow(x)), tolerance = 1e-12)
  expect_equal(a$.uncertainty, predict(fit, type = "uncertainty"))
  ar <- augment(fits)
  expect_equal(ar$dataset, rep("f", nrow(x)))
  expect_error(augment(bulkem(list(x), 2, seed = 1, control = list(threads = 1))),
               class = "bulkem_error_argument")
})

test_that("a noise component takes the outliers, and its density is the uniform over the data's box", {
  set.seed(21)
  n <- 600
  core <- rbind(matrix(rnorm(n, sd = 0.5), n / 2), matrix(rnorm(n, 3, 0.5), n / 2))
  outliers <- cbind(runif(30, -15, 15), runif(30, -15, 15))
  x <- rbind(core, outliers)
  colnames(x) <- c("a", "b")
  fits <- bulkem(list(x), num.components = 2, noise = TRUE, seed = 4,
                 control = list(threads = 2, keep.data = TRUE))
  fit <- fits[[1]]
  expect_equal(fit$status, "converged")
  expect_equal(unname(fit$noise_support), unname(t(apply(x, 2, range))))
  expect_equal(rownames(fit$noise_support), c("a", "b"))
  expect_equal(fit$loglik, mv_loglik(x, fit), tolerance = 1e-10)
  expect_equal(sum(fit$alpha) + fit$noise, 1, tolerance = 1e-12)
  # about 30 of 630 are noise (a few outliers fall near the clusters)
  expect_gt(fit$noise * nrow(x), 20)
  expect_lt(fit$noise * nrow(x), 40)
  expect_equal(fit$df_model, mclust::nMclustParams("VVV", d = 2, G = 2) + 1)
  # the clusters' means are recovered despite the outliers
  expect_equal(unname(fit$mu), rbind(c(0, 0), c(3, 3)), tolerance = 0.15)
  post <- predict(fit)
  expect_equal(colnames(post), c("comp1", "comp2", "noise"))
  expect_equal(rowSums(post), rep(1, nrow(x)), tolerance = 1e-12)
  far <- abs(x[, 1]) > 8 | abs(x[, 2]) > 8
  expect_true(all(predict(fit, type = "class")[far] == 0))
  expect_true(all(augment(fit)$.noise[far] > 0.99))
  expect_true("noise" %in% tidy(fit)$term)
  s <- simulate(fit, n = 50000, seed = 2)$sim_1
  inside <- abs(s[, 1] - 1.5) > 6
  expect_equal(mean(inside), fit$noise * mean(abs(runif(1e5, fit$noise_support[1, 1], fit$noise_support[1, 2]) - 1.5) > 6),
               tolerance = 0.15)
  # without the noise component the outliers stretch the components
  plain <- bulkem(list(x), num.components = 2, seed = 4, control = list(threads = 2))[[1]]
  expect_gt(max(plain$sigma), 3 * max(fit$sigma))
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_identical(plot(fit), fit)
})

test_that("noise.support gives the noise component a box of the user's, per call or per dataset", {
  set.seed(22)
  x <- rbind(matrix(rnorm(400, sd = 0.5), 200), matrix(rnorm(400, 3, 0.5), 200),
             cbind(runif(20, -10, 10), runif(20, -10, 10)))
  colnames(x) <- c("a", "b")
  y <- x[-(1:50), ]
  # the instrument's range, rows by name in another order
  box <- rbind(b = c(-20, 30), a = c(-12, 12))
  fits <- bulkem(list(x, y), num.components = 2, noise = TRUE, noise.support = box, seed = 4,
                 control = list(threads = 2))
  for (f in fits) {
    expect_identical(f$status, "converged")
    expect_equal(f$noise_support, box[c("a", "b"), ], ignore_attr = TRUE)
    # the uniform over the user's box: volume 24 x 50
    expect_equal(f$loglik, mv_loglik(x[seq_len(f$n) + (nrow(x) - f$n), ], f), tolerance = 1e-10)
  }
  # a wider box is a thinner noise density: the fit differs from the
  # bounding box's
  own <- bulkem(list(x), num.components = 2, noise = TRUE, seed = 4, control = list(threads = 2))[[1]]
  expect_false(isTRUE(all.equal(own$noise, fits[[1]]$noise)))
  # one box per dataset, NULL for the dataset's own; a box that does not
  # hold its dataset makes that dataset invalid and the other unchanged
  each <- suppressWarnings(bulkem(list(x, y), num.components = 2, noise = TRUE, seed = 4,
                                  noise.support = list(NULL, cbind(c(-1, -1), c(1, 1))),
                                  control = list(threads = 2)))
  expect_equal(each[[1]]$loglik, own$loglik)
  expect_equal(each[[1]]$noise_support, own$noise_support)
  expect_identical(each[[2]]$status, "invalid")
  expect_match(each[[2]]$message, "noise.support")
})


test_that("multivariate short runs (emEM) continue their best draws, reproducibly", {
  set.seed(69)
  x <- replicate(4, rbind(matrix(rnorm(400), 200), matrix(rnorm(200, 3), 100), matrix(rnorm(40, -3, 0.3), 20)),
                 simplify = FALSE)
  ctl <- list(short.runs = 40, short.iters = 8)
  one <- bulkem(x, 3, seed = 1, random.inits = 10, control = c(ctl, threads = 1))
  two <- bulkem(x, 3, seed = 1, random.inits = 10, control = c(ctl, threads = 2))
  expect_identical(lapply(unclass(one), `[[`, "mu"), lapply(unclass(two), `[[`, "mu"))
  plain <- bulkem(x, 3, seed = 1, random.inits = 10, control = list(threads = 2))
  ll <- function(f) vapply(unclass(f), `[[`, 0, "loglik")
  # these well-separated clusters: the same optimum either way
  expect_equal(ll(one), ll(plain), tolerance = 1e-8)
  for (f in unclass(one)) {
    expect_identical(f$starts_run, 10L)
    # a continued start is numbered by its draw, one of the 40
    expect_true(f$best_start >= 1 && f$best_start <= 40)
    # the continued draw run alone (a given start of the same parameters
    # as the draw is not available from R, so: its optimum is the fit's)
    expect_identical(f$status, "converged")
  }
  # without an explicit short.runs, multivariate fits run none: the
  # results of a call with short.runs = 0
  zero <- bulkem(x, 3, seed = 1, random.inits = 10, control = list(threads = 2, short.runs = 0))
  expect_identical(lapply(unclass(plain), `[[`, "mu"), lapply(unclass(zero), `[[`, "mu"))
  expect_identical(attr(plain, "em_iterations"), attr(zero, "em_iterations"))
  # the short runs' passes count: 4 datasets x 40 runs of up to 8 iterations
  # (each run's first pass too) beside the continued starts'
  expect_gt(attr(one, "em_iterations"), 4 * 40 * 2)
  # fewer short runs than continued starts: an error naming the setting
  expect_error(bulkem(x, 3, seed = 1, random.inits = 10, control = list(short.runs = 5)),
               "short.runs", class = "bulkem_error_argument")
  # a user's start is numbered after every draw the rounds may take
  st <- list(mu = one[[1]]$mu, sigma = one[[1]]$sigma, alpha = one[[1]]$alpha)
  g <- bulkem(x[1], 3, seed = 1, random.inits = 10, init = st, control = c(ctl, restarts = 2, threads = 1))
  expect_identical(g[[1]]$starts_run, 11L)
  expect_true(g[[1]]$best_start <= 40 || g[[1]]$best_start == 10 * 3 + 40 + 1)
})
