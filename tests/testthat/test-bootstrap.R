# bulkem_bootstrap(): parametric bootstrap standard errors and percentile
# intervals, checked against closed forms and the observed information.

boot_fit <- function(d, family = "normal", k = 2, starts = 5) {
  suppressWarnings(bulkem(d, num.components = k, family = family, random.inits = starts,
                          seed = 7, use.gpu = FALSE,
                          control = list(keep.data = TRUE, threads = 2)))
}

boot <- function(fits, ..., random.inits = 5) {
  bulkem_bootstrap(fits, random.inits = random.inits, use.gpu = FALSE, control = list(threads = 2), ...)
}

test_that("K = 1 Normal: bootstrap SEs match sigma / sqrt(n) and sigma / sqrt(2n)", {
  set.seed(101)
  d <- list(a = rnorm(60, 10, 2), b = rnorm(150, -3, 0.5))
  fits <- boot_fit(d, k = 1, starts = 1)
  bs <- boot(fits, B = 400, seed = 11)
  expect_s3_class(bs, "bulkem_bootstrap")
  expect_s3_class(bs, "data.frame")
  for (nm in names(d)) {
    f <- fits[[nm]]
    n <- length(d[[nm]])
    # MLE sigma is the population sd of the data
    sig <- sqrt(mean((d[[nm]] - mean(d[[nm]]))^2))
    expect_equal(f$sigma, sig, tolerance = 1e-5)
    row <- bs[bs$dataset == nm & bs$term == "mu", ]
    expect_equal(row$estimate, mean(d[[nm]]), tolerance = 1e-6)
    expect_equal(row$std.error, sig / sqrt(n), tolerance = 0.15)
    # percentile interval close to the normal-theory one
    z <- qnorm(0.975)
    expect_equal(row$conf.low, mean(d[[nm]]) - z * sig / sqrt(n), tolerance = 0.15 * z * sig / sqrt(n) / abs(row$conf.low))
    expect_equal(row$conf.high, mean(d[[nm]]) + z * sig / sqrt(n), tolerance = 0.15 * z * sig / sqrt(n) / abs(row$conf.high))
    srow <- bs[bs$dataset == nm & bs$term == "sigma", ]
    expect_equal(srow$std.error, sig / sqrt(2 * n), tolerance = 0.15)
    arow <- bs[bs$dataset == nm & bs$term == "alpha", ]
    expect_equal(arow$std.error, 0)
    expect_equal(row$B, 400L)
    expect_equal(row$B_used, 400L)
  }
  reps <- attr(bs, "replicates")
  expect_equal(reps$used, c(400L, 400L))
  expect_equal(reps$failed + reps$spurious, c(0L, 0L))
})

test_that("well-separated K = 2: bootstrap SEs agree with the observed information", {
  set.seed(202)
  dn <- list(n = rmix(600, c(0.4, 0.6), c(0, 6), c(1, 1.5), family = "normal"))
  di <- list(ig = rmix(600, c(0.5, 0.5), c(1, 6), c(20, 60), family = "invgauss"))
  # start 1 of every refit is the fitted mixture: 5 starts suffice for both
  # (with random starts alone, 5 left some inverse Gaussian replicates in
  # a local optimum and inflated the SEs of mu 40-fold)
  for (case in list(list(d = dn, family = "normal", starts = 5),
                    list(d = di, family = "invgauss", starts = 5))) {
    fits <- boot_fit(case$d, family = case$family)
    bs <- boot(fits, B = 200, seed = 5, random.inits = case$starts)
    td <- tidy(fits)
    expect_equal(bs[c("dataset", "component", "term", "estimate")],
                 td[c("dataset", "component", "term", "estimate")], ignore_attr = TRUE)
    expect_true(all(is.finite(td$std.error)))
    # alpha1 and alpha2 share one standard error; compare each row
    expect_equal(bs$std.error, td$std.error, tolerance = 0.25,
                 label = paste(case$family, "bootstrap SEs"))
    expect_true(all(bs$conf.low < bs$estimate & bs$estimate < bs$conf.high))
    expect_gte(min(bs$B_used), 190L)
  }
})

test_that("reproducible: same seed, same result, whatever else the call holds", {
  set.seed(303)
  d <- list(a = rmix(120, c(0.5, 0.5), c(0, 5), c(1, 1), family = "normal"),
            b = rmix(100, c(0.3, 0.7), c(-2, 4), c(1, 2), family = "normal"))
  fits <- boot_fit(d)
  before <- .Random.seed
  r1 <- boot(fits, B = 30, seed = 99)
  expect_identical(.Random.seed, before)   # a given seed leaves R's generator alone
  r2 <- boot(fits, B = 30, seed = 99)
  expect_identical(unclass(r1)[1:9], unclass(r2)[1:9])
  expect_identical(attr(r1, "replicates"), attr(r2, "replicates"))
  r3 <- boot(fits, B = 30, seed = 100)
  expect_false(identical(r1$std.error, r3$std.error))
  # dataset a alone, or after b, gives the same rows as a within a and b:
  # a replicate depends on its dataset's values, not on its position
  alone <- boot(fits[1], B = 30, seed = 99)
  expect_equal(unclass(alone)[1:9], lapply(unclass(r1)[1:9], `[`, r1$dataset == "a"))
  swapped <- boot(fits[2:1], B = 30, seed = 99)
  expect_equal(unclass(swapped)[1:9], lapply(unclass(r1)[1:9], `[`, c(which(r1$dataset == "b"), which(r1$dataset == "a"))))
  # with 1, 2 or 8 threads
  for (th in c(1, 8)) {
    expect_identical(bulkem_bootstrap(fits, B = 30, seed = 99, random.inits = 5, use.gpu = FALSE,
                                      control = list(threads = th))$std.error, r1$std.error)
  }
  # replicate b is the same for any B: the first 10 null statistics of B = 30
  t30 <- boot(fits, B = 30, seed = 99, test = "lrt", level = 0.1)
  t10 <- boot(fits, B = 10, seed = 99, test = "lrt", level = 0.1)
  for (i in 1:2) expect_identical(t10$null[[i]], t30$null[[i]][1:10])
  expect_identical(t10$lrt, t30$lrt)
  # seed NULL draws from R's generator: set.seed() makes it reproducible
  set.seed(4); n1 <- boot(fits, B = 10)
  set.seed(4); n2 <- boot(fits, B = 10)
  expect_identical(n1$std.error, n2$std.error)
  expect_identical(attr(n1, "seed"), attr(n2, "seed"))
})

test_that("replicates come from the fitted distribution: K = 1 bootstrap SEs match the MLE's sampling law", {
  # K = 1: the bootstrap standard errors of mu and the shape are those of
  # the closed-form MLE's sampling distribution under the fitted law
  set.seed(9)
  for (family in c("normal", "invgauss")) {
    x <- if (family == "normal") rnorm(400, 3, 2) else statmod::rinvgauss(400, mean = 2, shape = 5)
    fits <- boot_fit(list(x = x), family = family, k = 1, starts = 1)
    bs <- boot(fits, B = 1000, seed = 2, random.inits = 1)
    mu <- bs[bs$term == "mu", ]
    shape <- bs[bs$term == if (family == "normal") "sigma" else "lambda", ]
    f <- fits$x
    if (family == "normal") {
      expect_equal(mu$std.error, f$sigma / sqrt(400), tolerance = 0.08)
      expect_equal(shape$std.error, f$sigma / sqrt(800), tolerance = 0.1)
    } else {
      # the inverse Gaussian MLE of mu is the sample mean (variance
      # mu^3 / (lambda n)); lambda-hat = n lambda / chi-squared(n - 1), whose
      # sd is n lambda / (n - 3) * sqrt(2 / (n - 5))
      expect_equal(mu$std.error, sqrt(f$mu^3 / f$lambda / 400), tolerance = 0.08)
      expect_equal(shape$std.error, f$lambda * 400 / 397 * sqrt(2 / 395), tolerance = 0.1)
    }
    # the percentile interval of mu is centred on the estimate
    expect_lt(abs((mu$conf.low + mu$conf.high) / 2 - mu$estimate), 0.15 * (mu$conf.high - mu$conf.low))
  }
})

test_that("the likelihood-ratio test: p-values, statistics, the sequential procedure", {
  set.seed(21)
  d <- list(two = rmix(300, c(0.5, 0.5), c(0, 5), c(1, 1), family = "normal"),
            one = rnorm(200, 2))
  fits <- boot_fit(d, k = 1, starts = 1)
  lrt <- boot(fits, B = 60, seed = 3, test = "lrt", random.inits = 10)
  expect_s3_class(lrt, "bulkem_lrt")
  expect_identical(lrt$dataset, c("two", "one"))
  expect_identical(lrt$k, c(1L, 1L))
  # the observed statistic from the K = 1 closed form and a K = 2 fit
  expect_equal(lrt$loglik, vapply(d, function(x) sum(dnorm(x, mean(x), sqrt(mean((x - mean(x))^2)), log = TRUE)), 0),
               tolerance = 1e-9, ignore_attr = TRUE)
  k2 <- suppressWarnings(bulkem(d, num.components = 2, family = "normal", random.inits = 10, seed = 3,
                                use.gpu = FALSE))
  expect_equal(lrt$loglik_alt, vapply(k2, `[[`, 0, "loglik"), tolerance = 1e-6, ignore_attr = TRUE)
  expect_equal(lrt$lrt, 2 * (lrt$loglik_alt - lrt$loglik))
  # p-values from the null statistics
  for (i in 1:2) {
    t <- lrt$null[[i]]
    expect_length(t, 60)
    expect_identical(sum(!is.na(t)), lrt$B_used[i])
    t <- t[!is.na(t)]
    expect_equal(lrt$p_value[i], (1 + sum(t >= lrt$lrt[i])) / (1 + length(t)))
    expect_true(all(t > -1e-6))   # K + 1 starts from the split K fit: never below it
  }
  expect_equal(lrt$p_value[1], 1 / 61)   # two well-separated components
  expect_gt(lrt$p_value[2], 0.01)        # one Normal (p = 0.049 with these seeds)
  # sequential: K = 1 vs 2, then 2 vs 3 only where 1 was rejected
  # (B = 120: the smallest p-value, 1 / 121, is below the level)
  seq_lrt <- boot(fits, B = 120, seed = 3, test = "lrt", max.components = 3, random.inits = 10, level = 0.01)
  expect_identical(seq_lrt$dataset, c("two", "two", "one"))
  expect_identical(seq_lrt$k, c(1L, 2L, 1L))
  expect_identical(attr(seq_lrt, "selected")$k, c(2L, 1L))
  expect_match(capture.output(print(seq_lrt))[1], "Bootstrap likelihood-ratio tests")
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  expect_identical(plot(seq_lrt), seq_lrt)
  expect_identical(plot(seq_lrt, which = "pvalues"), seq_lrt)
  expect_error(plot(seq_lrt, rows = 9), class = "bulkem_error_argument")
  # rows keep their null distributions when subset
  sub <- seq_lrt[seq_lrt$k == 2, ]
  expect_identical(sub$null[[1]], seq_lrt$null[[2]])
  expect_false(any(grepl("\\bone\\b", capture.output(print(sub)))))
})

test_that("the K = 1 vs 2 statistics and p-values agree with mclust's mclustBootstrapLRT", {
  skip_if_not_installed("mclust")
  # Normal components of unequal variance (mclust's "V"), B = 199 each: a
  # p-value near 0.02 has a Monte-Carlo sd of about 0.01, so two
  # independent estimates agree within 0.05 (3.5 sd of their difference).
  # Datasets where mclust's hierarchical start reaches the K = 2 maximum
  # (it does not on its own `acidity`, where its statistic is 5 lower)
  set.seed(5)
  cases <- list(sim = c(rnorm(120, 0, 1), rnorm(80, 2.2, 0.8)), precip = as.numeric(precip))
  for (nm in names(cases)) {
    x <- cases[[nm]]
    set.seed(1)
    ref <- mclust::mclustBootstrapLRT(x, modelName = "V", nboot = 199, maxG = 1, verbose = FALSE)
    fits <- boot_fit(list(x = x), k = 1, starts = 1)
    ours <- boot(fits, B = 199, seed = 1, test = "lrt", max.components = 1, random.inits = 20)
    # mclust's EM stops at a relative change of 1e-5: its statistic is low by about 1e-3
    expect_equal(ours$lrt, unname(ref$obs), tolerance = 3e-3, label = nm)
    expect_gte(ours$lrt, unname(ref$obs) - 1e-6)
    expect_lt(abs(ours$p_value - unname(ref$p.value)), 0.05, label = nm)
  }
})

test_that("sharded over future workers, the same result", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  set.seed(8)
  d <- lapply(1:5, function(i) rmix(100 + 10 * i, c(0.5, 0.5), c(0, 4), c(1, 1), family = "normal"))
  fits <- boot_fit(d)
  local <- boot(fits, B = 12, seed = 5)
  local_t <- boot(fits, B = 12, seed = 5, test = "lrt", level = 0.1)
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  for (shards in c(2, 5)) {
    sharded <- bulkem_bootstrap(fits, B = 12, seed = 5, random.inits = 5, use.gpu = FALSE,
                                control = list(future = TRUE, shards = shards))
    expect_identical(unclass(sharded)[1:9], unclass(local)[1:9])
    sharded_t <- bulkem_bootstrap(fits, B = 12, seed = 5, random.inits = 5, use.gpu = FALSE, test = "lrt", level = 0.1,
                                  control = list(future = TRUE, shards = shards))
    expect_identical(unclass(sharded_t)[1:10], unclass(local_t)[1:10])
    expect_identical(sharded_t$null, local_t$null)
  }
})

test_that("progress is reported, and a time limit stops a long bootstrap", {
  set.seed(12)
  d <- list(a = rmix(2000, c(0.5, 0.5), c(0, 2), c(1, 1), family = "normal"))
  fits <- boot_fit(d)
  rec <- recording_handler()
  # plain EM, so that the refits run for several of the 0.25 s between
  # reports (B = 80: 1.8 s on one Zen 5 core with the AVX-512 E-step; B = 40
  # took 1.8 s before it and 0.89 s with it; with SQUAREM 0.27 s,
  # which left no report in between on one CI run)
  with_recorded_progress(bs <- bulkem_bootstrap(fits, B = 80, seed = 1, random.inits = 10, max.iters = 1000,
                                                epsilon = 1e-12, use.gpu = FALSE,
                                                control = list(threads = 1, accelerate = FALSE)),
                         rec)
  seen <- rec$seen()
  frac <- seen$step / seen$steps
  expect_false(is.unsorted(frac))
  expect_identical(frac[length(frac)], 1)
  expect_true(any(frac > 0 & frac < 1))
  setTimeLimit(elapsed = 1, transient = TRUE)
  on.exit(setTimeLimit(elapsed = Inf), add = TRUE)
  started <- proc.time()[["elapsed"]]
  e <- tryCatch(bulkem_bootstrap(fits, B = 5000, seed = 1, random.inits = 50, max.iters = 1000,
                                 epsilon = 1e-300, use.gpu = FALSE, control = list(threads = 2)),
                error = function(e) e)
  setTimeLimit(elapsed = Inf)
  expect_lt(proc.time()[["elapsed"]] - started, 5)
  expect_identical(conditionMessage(e), "reached elapsed time limit")
})

test_that("label switching: replicate components are matched to the estimate's", {
  set.seed(404)
  d <- list(a = rmix(300, c(0.5, 0.5), c(0, 8), c(1, 1), family = "normal"))
  fits <- boot_fit(d)
  # the same mixture with its components listed in descending mu: matching
  # by position (replicate fits come in ascending mu) would mix them
  rev_fit <- fits
  f <- rev_fit$a
  for (p in c("alpha", "mu", "sigma")) f[[p]] <- rev(f[[p]])
  rev_fit$a <- f
  for (ff in list(fits, rev_fit)) {
    bs <- boot(ff, B = 100, seed = 3)
    mu <- bs[bs$term == "mu", ]
    expect_equal(mu$estimate, ff$a$mu)
    # each component's bootstrap distribution sits on its own estimate
    expect_true(all(mu$conf.low < mu$estimate & mu$estimate < mu$conf.high))
    expect_true(all(mu$std.error < 0.3))
    expect_true(all(abs((mu$conf.low + mu$conf.high) / 2 - mu$estimate) < 0.3))
  }
  # the permutations of 1..k, and the matching for K = 3 in any order
  expect_equal(nrow(unique(bulkem:::permutations(4))), 24L)
  expect_true(all(apply(bulkem:::permutations(4), 1, function(p) all(sort(p) == 1:4))))
})

test_that("datasets without a fit get NA rows; print works", {
  set.seed(505)
  d <- list(a = rnorm(80, 1), bad = c(2, 2, 2, 2))
  fits <- boot_fit(d, k = 1, starts = 1)
  bs <- boot(fits, B = 20, seed = 1)
  bad <- bs[bs$dataset == "bad", ]
  expect_equal(nrow(bad), 3L)
  expect_true(all(is.na(bad$std.error) & is.na(bad$conf.low)))
  expect_equal(bad$B_used, c(0L, 0L, 0L))
  expect_equal(attr(bs, "replicates")$B, c(20L, 0L))
  out <- capture.output(print(bs))
  expect_match(out[1], "Parametric bootstrap of 2 dataset")
})

test_that("bad arguments are classed argument errors", {
  set.seed(606)
  d <- list(a = rnorm(50), b = rnorm(50, 3))
  kept <- boot_fit(d, k = 1, starts = 1)
  nodata <- suppressWarnings(bulkem(d, num.components = 1, family = "normal", random.inits = 1,
                                    use.gpu = FALSE, control = list(threads = 2)))
  for (b in list(1, 0, -5, 2.5, NA, "10", c(10, 20), Inf)) {
    expect_error(boot(kept, B = b), class = "bulkem_error_argument")
  }
  expect_error(boot(nodata, B = 10), class = "bulkem_error_argument")
  expect_error(boot(nodata, B = 10), "keep.data")
  expect_error(boot(nodata, B = 10, data = d[1]), class = "bulkem_error_argument")
  expect_error(boot(nodata, B = 10, data = list(a = 1:3, b = d$b)), class = "bulkem_error_argument")
  expect_s3_class(boot(nodata, B = 10, data = d, seed = 1), "bulkem_bootstrap")
  expect_identical(boot(nodata, B = 10, data = d, seed = 1)$std.error,
                   boot(kept, B = 10, seed = 1)$std.error)
  expect_error(boot(d, B = 10), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, conf.level = 1), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, seed = -1), class = "bulkem_error_argument")
  expect_error(bulkem_bootstrap(kept, B = 10, random.inits = 0, use.gpu = FALSE),
               class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, test = "wald"), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, max.components = 2), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, test = "lrt", max.components = 0), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, test = "lrt", level = 0), class = "bulkem_error_argument")
  # B = 10 cannot reach p < 0.05
  expect_error(boot(kept, B = 10, test = "lrt"), "no test could reject", class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, max.iters = 0), class = "bulkem_error_argument")
  expect_error(bulkem_bootstrap(kept, B = 10, control = list(threadz = 2)), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, epsilon = -1), class = "bulkem_error_argument")
  expect_error(bulkem_bootstrap(kept, B = 10, use.gpu = "yes"), class = "bulkem_error_argument")
  expect_error(boot(kept, B = 10, verbose = NA), class = "bulkem_error_argument")
})

test_that("the refits stop at epsilon = 1e-5 unless told otherwise", {
  set.seed(31)
  # one Normal: the K = 2 refits of the test creep, so the tolerance shows
  fits <- boot_fit(list(a = rnorm(150), b = rnorm(150)), k = 1, starts = 1)
  tests <- function(l) list(lrt = l$lrt, p_value = l$p_value, null = l$null)
  by_default <- boot(fits, B = 20, seed = 4, test = "lrt", level = 0.1)
  expect_identical(tests(by_default), tests(boot(fits, B = 20, seed = 4, test = "lrt", level = 0.1, epsilon = 1e-5)))
  stricter <- boot(fits, B = 20, seed = 4, test = "lrt", level = 0.1, epsilon = 1e-6)
  expect_false(identical(by_default$null, stricter$null))
})

test_that("conf.level, verbose and the call's attributes", {
  set.seed(707)
  d <- list(a = rmix(300, c(0.5, 0.5), c(0, 5), c(1, 1), family = "normal"))
  fits <- boot_fit(d)
  b95 <- boot(fits, B = 60, seed = 2)
  b50 <- boot(fits, B = 60, seed = 2, conf.level = 0.5)
  # the same replicates: the 50% intervals lie inside the 95% ones
  expect_identical(b50$std.error, b95$std.error)
  expect_true(all(b50$conf.low >= b95$conf.low & b50$conf.high <= b95$conf.high))
  expect_true(all(b50$conf.high - b50$conf.low < b95$conf.high - b95$conf.low))
  expect_identical(attr(b50, "conf.level"), 0.5)
  expect_identical(attr(b95, "engine"), "cpu")
  expect_identical(attr(b95, "random.inits"), 5L)
  costs <- attr(b95, "costs")
  expect_true(all(c("simulate", "engine", "em_iterations") %in% names(costs)))
  expect_gt(costs[["em_iterations"]], 0)
  msgs <- capture_messages(boot(fits, B = 20, seed = 2, verbose = TRUE))
  expect_length(msgs, 2)
  expect_match(msgs[1], "bulkem_bootstrap: 1 datasets, B = 20")
  expect_match(msgs[2], "bulkem_bootstrap: done in")
})

test_that("every subset of a bootstrap result prints, its header counting what is printed", {
  set.seed(707)
  fits <- boot_fit(list(a = rnorm(100), b = rnorm(120, 3)), starts = 3)
  # the test of each fit's own K: no `selected` (no max.components)
  lrt <- boot(fits, B = 19, seed = 2, test = "lrt", random.inits = 3)
  expect_null(attr(lrt, "selected"))
  printed <- function(x) {
    out <- capture.output(res <- print(x))
    expect_identical(res, x)
    out
  }
  out <- printed(lrt)
  expect_match(out[1], "2 dataset(s), 2 test(s), B = 19", fixed = TRUE)
  expect_false(any(grepl("Components selected", out)))
  out <- printed(lrt[1, ])
  expect_match(out[1], "1 dataset(s), 1 test(s)", fixed = TRUE)
  expect_true(any(grepl("^1 +a +2", out)))
  expect_false(any(grepl("^2 +b", out)))
  printed(lrt[lrt$k == 1, ])
  printed(lrt[lrt$k == 99, ])
  printed(lrt[0, ])
  printed(head(lrt, 1))
  printed(lrt[c("dataset", "p_value")])
  printed(lrt[, c("dataset", "k", "null")])
  # with max.components, `selected` is cut to the datasets printed
  seq_lrt <- boot(fits, B = 19, seed = 2, test = "lrt", max.components = 1, random.inits = 3)
  out <- printed(seq_lrt[seq_lrt$dataset == "b", ])
  expect_match(out[1], "1 dataset(s)", fixed = TRUE)
  expect_true(any(grepl("Components selected", out)))
  expect_false(any(grepl("Components selected", printed(seq_lrt[0, ]))))
  # standard errors: the header counts the datasets printed
  bs <- boot(fits, B = 19, seed = 2, random.inits = 3)
  expect_match(printed(bs)[1], "Parametric bootstrap of 2 dataset(s): B = 19", fixed = TRUE)
  out <- printed(bs[bs$dataset == "b", ])
  expect_match(out[1], "Parametric bootstrap of 1 dataset(s)", fixed = TRUE)
  expect_false(any(grepl("^[0-9]+ +a ", out)))
  out <- printed(bs[0, ])
  expect_match(out[1], "Parametric bootstrap of 0 dataset(s)", fixed = TRUE)
  printed(bs[bs$term == "mu", ])
  printed(bs[, c("dataset", "std.error")])
  printed(head(bs, 2))
  # and plots: a row subset, or a classed error for no rows
  pdf(NULL)
  on.exit(dev.off(), add = TRUE)
  expect_identical(plot(lrt[2, ]), lrt[2, ])
  expect_error(plot(lrt[0, ]), "no rows", class = "bulkem_error_argument")
})
