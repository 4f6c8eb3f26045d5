# ICL and bulkem()'s `criterion`: every fit's icl against an independent
# computation from R's own densities (BIC - 2 * sum of the log of each
# observation's largest posterior probability, with the noise's column),
# against mclust::icl() where mclust reaches the same optimum, and K chosen
# by the criterion asked for.

# Each observation's weighted component densities (n x K, with a noise
# column last), from statmod, dnorm, dt or dunif, never from bulkem.
component_densities <- function(f, x) {
  k <- NROW(f$mu)
  dens <- vapply(seq_len(k), function(m) {
    f$alpha[m] * switch(f$family,
      invgauss = statmod::dinvgauss(x, mean = f$mu[m], shape = f$lambda[m]),
      t = stats::dt((x - f$mu[m]) / f$sigma[m], f$df[m]) / f$sigma[m],
      stats::dnorm(x, f$mu[m], f$sigma[m]))
  }, numeric(length(x)))
  dens <- matrix(dens, nrow = length(x))
  if (!is.na(f$noise)) {
    s <- f$noise_support
    dens <- cbind(dens, f$noise * stats::dunif(x, s[1], s[2]))
  }
  dens
}

# The Ks of a fit of several whose fits converged and passed the screen,
# in the order of its by_k.
sound_k <- function(f) {
  ks <- vapply(f$all_k, function(g) NROW(g$mu), 0L)
  spurious <- vapply(f$all_k, function(g) isTRUE(g$spurious), NA)[match(f$by_k$K, ks)]
  f$by_k$status == "converged" & !spurious
}

# ICL from those densities and a parameter count of our own.
independent_icl <- function(f, x, noise = FALSE) {
  dens <- component_densities(f, x)
  k <- NROW(f$mu)
  p <- 3 * k - 1 + noise + if (identical(f$family, "t")) k else 0
  total <- rowSums(dens)
  -2 * sum(log(total)) + p * log(length(x)) - 2 * sum(log(apply(dens / total, 1, max)))
}

test_that("every K's icl is BIC minus twice the log of the largest posteriors", {
  set.seed(31)
  normal <- c(rnorm(150, 0, 1), rnorm(100, 3, 0.7))
  ig <- c(statmod::rinvgauss(200, 1, 4), statmod::rinvgauss(120, 4, 30))
  heavy <- c(3 * rt(200, 4), 10 + rt(100, 4))
  cases <- list(
    list(x = normal, family = "normal", noise = FALSE),
    list(x = ig, family = "invgauss", noise = FALSE),
    list(x = c(ig, 60, 75), family = "invgauss", noise = TRUE),
    list(x = heavy, family = "t", noise = FALSE))
  for (case in cases) {
    fits <- bulkem(list(a = case$x), num.components = 1:3, family = case$family, noise = case$noise,
                   criterion = "icl", seed = 4, use.gpu = FALSE, control = list(threads = 1))
    f <- fits$a
    expect_identical(f$criterion, "icl")
    for (g in f$all_k) {
      k <- NROW(g$mu)
      want <- independent_icl(g, case$x, case$noise)
      expect_equal(g$icl, want, tolerance = 1e-9, info = paste(case$family, case$noise, k))
      expect_equal(f$by_k$icl[f$by_k$K == k], g$icl, tolerance = 1e-12)
      # K = 1 without noise: every posterior is 1, ICL is BIC
      if (k == 1 && !case$noise) expect_equal(g$icl, g$bic, tolerance = 1e-12)
      expect_gte(g$icl, g$bic)
    }
    sound <- sound_k(f)
    expect_identical(NROW(f$mu), f$by_k$K[sound][which.min(f$by_k$icl[sound])], info = case$family)
    expect_equal(glance(fits)$ICL, f$icl)
    expect_equal(bulkem_compare(fits)$icl, f$by_k$icl)
  }
})

test_that("icl matches mclust::icl where mclust reaches the same optimum", {
  mclust_icl <- function(x, k, model) {
    if (!"package:mclust" %in% search()) {
      suppressPackageStartupMessages(attachNamespace("mclust"))
      on.exit(detach("package:mclust"), add = TRUE)
    }
    m <- mclust::Mclust(x, G = k, modelNames = model, verbose = FALSE,
                        control = mclust::emControl(tol = c(1e-13, 1e-13)))
    # mclust's sign: higher is better
    c(loglik = m$loglik, icl = -unname(mclust::icl(m)))
  }
  set.seed(3)
  x <- c(rnorm(150, 0, 1), rnorm(100, 3, 0.7))
  uni <- bulkem(list(x), num.components = 1:3, family = "normal", seed = 1, use.gpu = FALSE)[[1]]
  mv <- bulkem(list(iris = as.matrix(iris[1:4])), num.components = 1:3, seed = 1, use.gpu = FALSE)[[1]]
  same <- 0
  for (k in 1:3) {
    ref <- mclust_icl(x, k, if (k == 1) "X" else "V")
    # the same optimum: then the classification term agrees to its own
    # first-order sensitivity to where each stopped; where bulkem's starts
    # find a higher maximum than mclust's hierarchical start, only that
    if (uni$by_k$loglik[k] > ref[["loglik"]] + 1e-6) {
      expect_gt(k, 2)
    } else {
      same <- same + 1
      expect_equal(uni$by_k$loglik[k], ref[["loglik"]], tolerance = 1e-8)
      expect_equal(uni$by_k$icl[k], ref[["icl"]], tolerance = 1e-5)
    }
    ref <- mclust_icl(iris[1:4], k, if (k == 1) "XXX" else "VVV")
    expect_equal(mv$by_k$loglik[k], ref[["loglik"]], tolerance = 1e-8)
    expect_equal(mv$by_k$icl[k], ref[["icl"]], tolerance = 1e-5)
  }
  expect_gte(same, 2)
})

test_that("multivariate icl counts the noise's column and t's densities", {
  set.seed(32)
  a <- rbind(matrix(rnorm(300, 0, 1), ncol = 2), matrix(rnorm(200, 4, 0.8), ncol = 2))
  a <- rbind(a, cbind(runif(12, -6, 10), runif(12, -6, 10)))
  for (family in c("normal", "t")) {
    f <- bulkem(list(a = a), num.components = 2, family = family, noise = TRUE, seed = 2,
                use.gpu = FALSE)$a
    d <- 2
    dens <- vapply(1:2, function(m) {
      s <- f$sigma[, , m]
      delta <- stats::mahalanobis(a, f$mu[m, ], s)
      logd <- if (family == "t") {
        nu <- f$df[m]
        lgamma((nu + d) / 2) - lgamma(nu / 2) - d / 2 * log(nu * pi) - log(det(s)) / 2 -
          (nu + d) / 2 * log1p(delta / nu)
      } else {
        -d / 2 * log(2 * pi) - log(det(s)) / 2 - delta / 2
      }
      f$alpha[m] * exp(logd)
    }, numeric(nrow(a)))
    box <- f$noise_support
    dens <- cbind(dens, f$noise / prod(box[, 2] - box[, 1]))
    total <- rowSums(dens)
    want <- f$bic - 2 * sum(log(apply(dens / total, 1, max)))
    expect_equal(f$icl, want, tolerance = 1e-9, info = family)
    expect_equal(-2 * sum(log(total)), -2 * f$loglik, tolerance = 1e-9)
  }
})

test_that("criterion chooses K by its own value; BIC stays the default", {
  set.seed(33)
  # overlapping groups: BIC and ICL disagree about K on some datasets
  data <- lapply(1:12, function(i) c(rnorm(120, 0, 1), rnorm(80, 1.6 + i / 10, 1)))
  chosen <- list()
  for (criterion in c("bic", "icl", "aic")) {
    fits <- suppressWarnings(bulkem(data, num.components = 1:3, family = "normal", seed = 5,
                                    use.gpu = FALSE, criterion = criterion))
    for (f in fits) {
      expect_identical(f$criterion, criterion)
      ok <- sound_k(f)
      expect_identical(NROW(f$mu), f$by_k$K[ok][which.min(f$by_k[[criterion]][ok])])
    }
    chosen[[criterion]] <- vapply(fits, function(f) NROW(f$mu), 0L)
    if (criterion != "bic") {
      expect_true(any(summary(fits)$why == paste("lowest", toupper(criterion))))
      expect_output(print(fits), paste0("chosen by ", toupper(criterion)))
    }
  }
  # the data were made for the criteria to disagree: ICL fewer, AIC more
  expect_true(any(chosen$icl < chosen$bic))
  expect_true(any(chosen$aic > chosen$bic))
  default <- bulkem(data[1:3], num.components = 1:3, family = "normal", seed = 5, use.gpu = FALSE)
  expect_identical(default[[1]]$criterion, "bic")
  expect_identical(unname(vapply(default, function(f) NROW(f$mu), 0L)),
                   unname(vapply(default, function(f) f$by_k$K[which.min(f$by_k$bic)], 0L)))
  # a criterion changes which K is returned, never any K's fit
  icl <- bulkem(data[1:3], num.components = 1:3, family = "normal", seed = 5, use.gpu = FALSE,
                criterion = "icl")
  for (i in 1:3) expect_identical(icl[[i]]$by_k, default[[i]]$by_k)
})

test_that("a bad criterion is a classed argument error naming it", {
  expect_error(bulkem(list(rnorm(50)), criterion = "bicc", use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "`criterion` must be one of")
  expect_error(bulkem(list(rnorm(50)), criterion = c("bic", "icl"), use.gpu = FALSE),
               class = "bulkem_error_argument", regexp = "criterion")
})
