# Several numbers of components in one call; each dataset keeps its fit with
# the lowest BIC.

test_that("BIC picks the simulated number of components", {
  set.seed(21)
  d <- list(
    one = rnorm(600, 5, 1),
    two = c(rnorm(300, 0, 1), rnorm(300, 6, 1)),
    three = c(rnorm(300, 0, 0.5), rnorm(300, 5, 0.5), rnorm(300, 10, 0.5))
  )
  fits <- bulkem(d, num.components = 1:4, random.inits = 10, family = "normal",
                 use.gpu = FALSE, seed = 4)
  expect_identical(vapply(fits, `[[`, 0L, "num_components"), c(one = 1L, two = 2L, three = 3L))
  expect_identical(attr(fits, "num.components"), 1:4)
  for (nm in names(d)) {
    f <- fits[[nm]]
    expect_identical(f$by_k$K, 1:4)
    expect_identical(min(f$by_k$bic), f$bic)
    expect_length(f$mu, f$num_components)
  }
  # each K's fit is the fit that K alone gives with the same seed
  two <- bulkem(d, num.components = 2, random.inits = 10, family = "normal", use.gpu = FALSE, seed = 4)
  expect_identical(unclass(two$two)[1:18], unclass(fits$two)[1:18])
  expect_identical(fits$one$by_k$bic[2], two$one$bic)
  one <- bulkem(d, num.components = 1, family = "normal", use.gpu = FALSE, seed = 4)
  expect_identical(fits$one$by_k$loglik[1], one$one$loglik)
  long <- as.data.frame(fits)
  expect_identical(nrow(long), 6L)
  expect_output(print(fits), "1, 2, 3, 4 components \\(chosen by BIC\\)")
})

test_that("a dataset too short for the larger Ks keeps a smaller K", {
  set.seed(22)
  d <- list(short = rnorm(7, 1), long = c(rnorm(200), rnorm(200, 5)))
  # BIC could not weigh K = 3 for `short`: the call says so
  expect_warning(fits <- bulkem(d, num.components = 1:3, random.inits = 5, family = "normal", use.gpu = FALSE),
                 "dataset short: K = [12] chosen because K = 3 was invalid: dataset has 7 observations",
                 class = "bulkem_warning_convergence")
  expect_identical(fits$short$by_k$status[3], "invalid")
  expect_true(fits$short$num_components %in% 1:2)
  expect_true(fits$short$fit_success)
})

test_that("several Ks: one pass, progress never goes back, the same shape as one K", {
  set.seed(23)
  d <- replicate(30, c(rnorm(300), rnorm(300, 4)), simplify = FALSE)
  seen <- list()
  report <- function(done, total) seen[[length(seen) + 1]] <<- c(done, total)
  res <- bulkem:::fit_(d, list(), bulkem:::core_settings("normal", 1:3, 2000L, 30L, 1e-12, 5,
    bulkem:::check_control(list(threads = 1L, accelerate = FALSE, restarts = 0L, short.runs = 0L)), "cpu"), report)
  expect_gt(length(seen), 1)
  done <- vapply(seen, `[`, 0, 1)
  total <- vapply(seen, `[`, 0, 2)
  # every K's work is counted before any of it runs: one total, from the first report
  expect_true(all(total == 30 * (1 + 30 + 30)))
  expect_false(is.unsorted(done))
  # the glue returns a list of fits, whether one K or several
  expect_length(res$fits, 30)
  expect_s3_class(res$fits[[1]], "bulkem_fit")
  one <- bulkem:::fit_(d[1:2], list(), bulkem:::core_settings("normal", 2L, 100L, 3L, 1e-6, 5,
    bulkem:::check_control(list(threads = 1L, accelerate = FALSE, restarts = 0L)), "cpu"), NULL)
  expect_length(one$fits, 2)
  expect_s3_class(one$fits[[1]], "bulkem_fit")
  # the choice of K happens in compiled code, inside the timed call
  expect_true("choose K" %in% names(res$timings))
})

test_that("choosing K among many datasets costs next to nothing after the fits", {
  set.seed(24)
  d <- replicate(20000, rnorm(10), simplify = FALSE)
  fits <- quiet_bulkem(d, num.components = 1:3, random.inits = 1, max.iters = 5,
                       family = "normal", use.gpu = FALSE, seed = 1)
  tm <- attr(fits, "timings")
  # elapsed covers all the work R does after the engine too
  expect_gte(attr(fits, "elapsed"), sum(tm[setdiff(names(tm), "total")]) - 0.05)
  expect_identical(vapply(fits[1:3], function(f) nrow(f$by_k), 0L), rep(3L, 3))
  expect_s3_class(fits[[1]]$by_k, "data.frame")
  expect_identical(fits[[1]]$by_k$K, 1:3)
})

test_that("every K's fit is kept, the chosen one first, each the fit a call with that K alone makes", {
  set.seed(2)
  d <- list(a = c(rnorm(200), rnorm(150, 4)), b = rnorm(100, 3), c = c(1, 2))
  fit <- function(k) {
    suppressWarnings(bulkem(d, num.components = k, family = "normal", random.inits = 5, seed = 4,
                            use.gpu = FALSE, control = list(threads = 2)))
  }
  many <- fit(1:3)
  for (nm in names(d)) {
    ak <- many[[nm]]$all_k
    ks <- vapply(ak, `[[`, 0L, "k")
    # the chosen K first, then the others ascending
    expect_identical(ks[1], many[[nm]]$k)
    expect_identical(ks[1], many[[nm]]$num_components)
    expect_identical(sort(ks), 1:3)
    expect_identical(ks[-1], sort(ks[-1]))
    expect_true(all(vapply(ak, inherits, NA, "bulkem_fit")))
    expect_null(ak[[1]]$all_k)
  }
  for (k in 1:3) {
    one <- fit(k)
    for (nm in names(d)) {
      expect_identical(one[[nm]]$k, as.integer(k))
      ak <- many[[nm]]$all_k
      kept <- unclass(ak[[which(vapply(ak, `[[`, 0L, "k") == k)]])
      expect_identical(kept, unclass(one[[nm]])[names(kept)])
    }
  }
})

# 300 reaction times of 0.3-2 s (simulated), and two absurd ones: 1e6 and
# 2e6 s at positions 50 and 100 of `outlier`; or one, 1e6 s, at position 37
# of `single`.
outlier_data <- function() {
  set.seed(5)
  x <- pmin(pmax(exp(rnorm(300, log(0.7), 0.4)), 0.3), 2)
  outlier <- x
  outlier[c(50, 100)] <- c(1e6, 2e6)
  set.seed(3)
  single <- runif(200, 0.3, 2)
  single[37] <- 1e6
  list(clean = x, outlier = outlier, single = single)
}

test_that("a K chosen because a K of lower BIC was spurious or failed is said so everywhere, with the outlier", {
  d <- outlier_data()
  w <- NULL
  fits <- withCallingHandlers(
    # random starts: every one of them ends at the spike for `outlier` and
    # collapses for `single` (partition blocks end at a duplicated
    # component there instead, of higher BIC: K = 1 either way)
    bulkem(d, num.components = 1:2, use.gpu = FALSE, seed = 1, control = list(keep.data = TRUE, starts = "random")),
    bulkem_warning_convergence = function(c) {
      w <<- c
      invokeRestart("muffleWarning")
    })
  k_fit <- function(f, k) f$all_k[[which(vapply(f$all_k, `[[`, 0L, "k") == k)]]
  # the situation, from the fits' own fields: for `outlier`, K = 2 has the
  # lower BIC but is spurious, and K = 1 (mu in the thousands) is returned;
  # for `single`, K = 2 failed; `clean` chose K = 1 on BIC alone
  o2 <- k_fit(fits$outlier, 2)
  expect_true(o2$spurious)
  expect_identical(o2$status, "converged")
  expect_lt(o2$bic, fits$outlier$bic)
  expect_identical(fits$outlier$k, 1L)
  expect_gt(fits$outlier$mu, 1000)
  expect_identical(k_fit(fits$single, 2)$status, "failed")
  expect_identical(fits$single$k, 1L)
  expect_false(k_fit(fits$clean, 2)$spurious)
  expect_gt(k_fit(fits$clean, 2)$bic, fits$clean$bic)
  # the component K = 2 of `outlier` is blamed on holds the two absurd values
  post <- predict(o2, d$outlier)
  held <- which(post$component == which.min(o2$alpha))
  expect_identical(held, c(50L, 100L))
  said <- "K = 2 was spurious: a component of 2 observations at 1e+06 and 2e+06 (observations 50 and 100)"

  # bulkem_compare(): why each K was not chosen
  cmp <- bulkem_compare(fits)
  expect_identical(cmp$why_not, c(NA, "higher BIC", NA, "spurious", NA, "failed"))
  # summary(): the counts' columns and why each K was chosen
  s <- summary(fits)
  expect_s3_class(s, "data.frame")
  expect_identical(s$why, c("lowest BIC", "K = 2 spurious", "K = 2 failed"))
  expect_identical(s$spurious, c(FALSE, FALSE, FALSE))
  expect_identical(s$starts_at_best, vapply(fits, `[[`, 0L, "starts_at_best", USE.NAMES = FALSE))
  notes <- attr(s, "notes")
  expect_identical(names(notes), c("outlier", "single"))
  far_said <- paste("2 values far from the rest of the data: 1e+06 and 2e+06 (observations 50 and 100);",
                    "a noise component (noise = TRUE) takes such values instead of bending the components to them")
  expect_identical(notes[["outlier"]], paste0("K = 1 chosen because ", said, "; ", far_said))
  expect_match(notes[["single"]], "^K = 1 chosen because K = 2 failed: all [0-9]+ random starts failed")
  out <- capture.output(print(s))
  expect_match(out[1], "0 spurious, 0 fragile .*0 invalid; 2 chose its K because another K was not sound")
  expect_true(any(grepl(said, out, fixed = TRUE)))
  # print(): the counts, and the notes
  out <- capture.output(print(fits))
  expect_true(any(grepl("attention: 0 spurious, 0 fragile", out)))
  expect_true(any(grepl(paste0("outlier: K = 1 chosen because ", said), out, fixed = TRUE)))
  expect_output(print(fits$outlier), said, fixed = TRUE)
  expect_output(print(summary(fits$outlier)), said, fixed = TRUE)
  expect_identical(summary(fits$outlier)$by_k$why_not, c(NA, "spurious"))
  # the warning: counted, and the first named
  expect_s3_class(w, "bulkem_warning_convergence")
  expect_identical(w$chosen_over, 2L)
  expect_identical(w$counts, c(max_iters = 0, failed = 0, spurious = 0, invalid = 0, saddle = 0))
  expect_match(conditionMessage(w), paste0("^of 3 fits, 2 chose their K because another K was spurious or failed ",
                                           "\\(see bulkem_compare\\(\\); e.g. dataset outlier: K = 1 chosen because"))
  expect_match(conditionMessage(w), said, fixed = TRUE)

  # without the data kept, how to get them; from a data frame, the rows
  bare <- quiet_bulkem(d["outlier"], num.components = 1:2, use.gpu = FALSE, seed = 1,
                       control = list(starts = "random"))
  expect_match(capture.output(print(bare$outlier))[2],
               "K = 2 was spurious: a component of weight 0.0067 \\(2 expected observations\\) at mu = .*control = list\\(keep.data = TRUE\\)")
  df <- data.frame(rt = c(d$clean, d$outlier), subject = rep(c("clean", "outlier"), each = 300))
  long <- quiet_bulkem(rt ~ subject, data = df, num.components = 1:2, use.gpu = FALSE, seed = 1,
                       control = list(keep.data = TRUE, starts = "random"))
  expect_output(print(long$outlier), "(observations 50 and 100, rows 350 and 400 of the data)", fixed = TRUE)
  # one K: no `why`, nothing chosen over
  one <- bulkem(d["clean"], num.components = 1, use.gpu = FALSE)
  expect_false("why" %in% names(summary(one)))
  expect_identical(bulkem_compare(one)$why_not, NA_character_)
})

# The fences of far values (far.rs) written again here: beyond 4
# interquartile ranges from R's quartiles (type 7) where the family's tail
# is light and 10 where it may be heavy, on the logarithms for a family of
# positive values (4 above, 10 below), on the values for the Normal (10
# both sides) and the ex-Gaussian (4 below, 10 above); at most 1% of the
# values (at least one).
far_reference <- function(x, family) {
  logs <- family %in% c("invgauss", "lognormal", "gamma")
  widths <- switch(family, normal = c(10, 10), exgauss = c(4, 10), c(10, 4))
  y <- if (logs) log(x) else x
  q <- stats::quantile(y, c(0.25, 0.75), names = FALSE, type = 7)
  far <- which(y < q[1] - widths[1] * diff(q) | y > q[2] + widths[2] * diff(q))
  if (length(far) > max(1, floor(0.01 * length(x)))) integer() else far
}

test_that("values far from the rest of a dataset are named wherever a user looks, at the defaults", {
  d <- outlier_data()
  w <- NULL
  # the default search: K = 2 ends at a duplicated component for `outlier`
  # and `single` (not spurious), so K = 1 is chosen on BIC, its mean in the
  # thousands; only the far values say what happened
  fits <- withCallingHandlers(
    bulkem(d, num.components = 1:2, use.gpu = FALSE, seed = 1),
    bulkem_warning_convergence = function(c) {
      w <<- c
      invokeRestart("muffleWarning")
    })
  expect_identical(fits$outlier$k, 1L)
  expect_gt(fits$outlier$mu, 1000)
  expect_identical(fits$outlier$far, c("50" = 1e6, "100" = 2e6))
  expect_identical(fits$single$far, c("37" = 1e6))
  expect_null(fits$clean$far)
  for (nm in names(d)) {
    expect_identical(as.integer(names(fits[[nm]]$far)), far_reference(d[[nm]], "invgauss"), label = nm)
  }
  said <- paste("2 values far from the rest of the data: 1e+06 and 2e+06 (observations 50 and 100);",
                "a noise component (noise = TRUE) takes such values instead of bending the components to them")
  # the warning: counted, and the first named
  expect_s3_class(w, "bulkem_warning_convergence")
  expect_identical(w$far, 2L)
  expect_match(conditionMessage(w), paste0("2 have values far from the rest of their data (e.g. dataset outlier: ",
                                           said, ")"), fixed = TRUE)
  # print(), summary(), glance()
  expect_output(print(fits$outlier), said, fixed = TRUE)
  expect_output(print(summary(fits$outlier)), said, fixed = TRUE)
  s <- summary(fits)
  expect_identical(s$far, c(0L, 2L, 1L))
  expect_identical(names(attr(s, "notes")), c("outlier", "single"))
  expect_match(capture.output(print(s))[1], "; 2 with values far from the rest of their data *$")
  expect_identical(glance(fits)$far, c(0L, 2L, 1L))
  # from a data frame, the rows of the caller's data too
  df <- data.frame(rt = c(d$clean, d$outlier), subject = rep(c("clean", "outlier"), each = 300))
  long <- quiet_bulkem(rt ~ subject, data = df, num.components = 1, use.gpu = FALSE, seed = 1,
                       control = list(keep.data = TRUE))
  expect_output(print(long$outlier), "(observations 50 and 100, rows 350 and 400 of the data)", fixed = TRUE)
  # a Normal fit judges on the values themselves: the same two are far; an
  # ex-Gaussian fit names a value far below sooner (4 interquartile ranges
  # below, 10 above)
  expect_identical(quiet_bulkem(d["outlier"], 1, family = "normal", use.gpu = FALSE)$outlier$far,
                   c("50" = 1e6, "100" = 2e6))
  y <- d$clean
  y[7] <- stats::quantile(y, 0.25, names = FALSE) - 6 * stats::IQR(y)
  expect_identical(far_reference(y, "exgauss"), 7L)
  expect_identical(far_reference(y, "normal"), integer())
  expect_identical(quiet_bulkem(list(y), 1, family = "exgauss", use.gpu = FALSE)[[1]]$far, stats::setNames(y[7], 7))
  expect_null(quiet_bulkem(list(y), 1, family = "normal", use.gpu = FALSE)[[1]]$far)
  # response times a thousand times the rest, on the logarithms: far
  z <- d$clean
  z[9] <- 1000
  expect_identical(far_reference(z, "gamma"), 9L)
  expect_identical(quiet_bulkem(list(z), 1, use.gpu = FALSE, family = "gamma")[[1]]$far, c("9" = 1000))
  # a noise component or t components take such values: none looked for,
  # and no warning
  expect_silent(noisy <- bulkem(d["outlier"], 1, noise = TRUE, use.gpu = FALSE, seed = 1))
  expect_null(noisy$outlier$far)
  expect_lt(noisy$outlier$mu, 2)
  expect_null(quiet_bulkem(d["outlier"], 1, family = "t", use.gpu = FALSE)$outlier$far)
  # weights count observations (a far value may stand for many): none
  # looked for; weights of 1 are no weights
  expect_null(quiet_bulkem(d["outlier"], 1, weights = list(rep(2, 300)), use.gpu = FALSE)$outlier$far)
  expect_identical(quiet_bulkem(d["outlier"], 1, weights = list(rep(1, 300)), use.gpu = FALSE)$outlier$far,
                   c("50" = 1e6, "100" = 2e6))
  # one value in a hundred at most: four far values of 300 are a mode
  x <- d$clean
  x[1:4] <- c(1e6, 2e6, 3e6, 4e6)
  expect_identical(far_reference(x, "invgauss"), integer())
  expect_null(quiet_bulkem(list(x), 1, use.gpu = FALSE)[[1]]$far)
  x[4] <- 1
  expect_identical(far_reference(x, "invgauss"), 1:3)
  expect_identical(quiet_bulkem(list(x), 1, use.gpu = FALSE)[[1]]$far, c("1" = 1e6, "2" = 2e6, "3" = 3e6))
})
