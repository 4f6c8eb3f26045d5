# One constructor for every result: group keys, the caller's rows, and the
# tables that join back to the caller's data.

grouped_data <- function() {
  set.seed(21)
  df <- data.frame(subject = rep(sprintf("s%02d", 1:4), each = 120),
                   cond = factor(rep(c("A", "B"), 240)),
                   rt = c(rnorm(240, 1, 0.2), rnorm(240, 2, 0.3)))
  df$rt[c(3, 50)] <- NA
  df <- df[sample(nrow(df)), ]
  row.names(df) <- paste0("row", seq_len(nrow(df)))
  df
}

fit_grouped <- function(df, ...) {
  suppressWarnings(bulkem(rt ~ subject + cond, data = df, num.components = 2, family = "normal",
                          random.inits = 3, seed = 5, use.gpu = FALSE,
                          control = list(keep.data = TRUE, threads = 2), ...))
}

test_that("a formula's result knows its group keys, and the tables carry them", {
  df <- grouped_data()
  fits <- fit_grouped(df)
  g <- attr(fits, "groups")
  expect_identical(names(g), c("subject", "cond"))
  expect_identical(nrow(g), length(fits))
  # each dataset's name is its keys joined, as split() names them
  expect_identical(paste(g$subject, g$cond, sep = ":"), names(fits))
  expect_true(is.factor(g$cond))
  gl <- glance(fits)
  expect_identical(names(gl)[1:3], c("dataset", "subject", "cond"))
  expect_identical(gl$subject, g$subject)
  td <- tidy(fits)
  expect_identical(td$subject, g$subject[match(td$dataset, names(fits))])
  expect_identical(as.character(td$cond), as.character(g$cond[match(td$dataset, names(fits))]))
  au <- augment(fits)
  expect_identical(au$subject, g$subject[match(au$dataset, names(fits))])
  # the same grouping given as columns
  by_cols <- suppressWarnings(bulkem(df, value = "rt", group = c("subject", "cond"), num.components = 2,
                                     family = "normal", random.inits = 3, seed = 5, use.gpu = FALSE,
                                     control = list(keep.data = TRUE, threads = 2)))
  expect_identical(attr(by_cols, "groups"), g)
  # a list has no group keys, nor does value ~ 1
  expect_null(attr(bulkem(list(a = df$rt[1:100]), family = "normal", random.inits = 2, use.gpu = FALSE,
                          control = list(threads = 1)), "groups"))
  expect_null(attr(bulkem(rt ~ 1, data = df, family = "normal", random.inits = 2, use.gpu = FALSE,
                          control = list(threads = 1)), "groups"))
  expect_false("subject" %in% names(glance(bulkem(list(a = df$rt[1:100]), family = "normal",
                                                  random.inits = 2, use.gpu = FALSE,
                                                  control = list(threads = 1)))))
})

test_that("subsets and combinations keep their group keys", {
  fits <- fit_grouped(grouped_data())
  g <- attr(fits, "groups")
  expected <- g[c(4, 2), , drop = FALSE]
  row.names(expected) <- NULL
  expect_identical(attr(fits[c(4, 2)], "groups"), expected)
  expect_identical(attr(fits["s03:B"], "groups")$subject, "s03")
  expect_identical(attr(fits[-1], "groups")$subject, g$subject[-1])
  expect_identical(attr(fits[names(fits) == "s01:A"], "groups")$cond, g$cond[names(fits) == "s01:A"])
  both <- c(fits[1:2], fits[5:6])
  expect_identical(attr(both, "groups")$subject, g$subject[c(1, 2, 5, 6)])
  expect_identical(glance(both)$subject, g$subject[c(1, 2, 5, 6)])
  # the whole result's attributes survive a full subset
  expect_identical(attributes(fits[seq_along(fits)]), attributes(fits))
})

test_that("augment(fits, data = df) returns the caller's rows, results in place, NA where dropped", {
  df <- grouped_data()
  fits <- fit_grouped(df, subset = rt > 0.5)
  out <- augment(fits, data = df)
  expect_identical(out[names(df)], df)
  expect_identical(row.names(out), row.names(df))
  dropped <- is.na(df$rt) | df$rt <= 0.5
  expect_identical(is.na(out$.component), dropped)
  # independent check of one row: the posterior of its own dataset's fit, by dnorm
  i <- which(!dropped)[7]
  key <- paste(df$subject[i], df$cond[i], sep = ":")
  f <- fits[[key]]
  w <- f$alpha * dnorm(df$rt[i], f$mu, f$sigma)
  expect_equal(c(out$.posterior_1[i], out$.posterior_2[i]), w / sum(w), tolerance = 1e-12)
  expect_identical(out$.component[i], which.max(w))
  # (1 - max: absolute, as the subtraction's rounding is)
  expect_lt(abs(out$.uncertainty[i] - (1 - max(w / sum(w)))), 1e-12)
  # and the same numbers as augment() of the kept data
  au <- augment(fits)
  expect_equal(sort(out$.uncertainty[!dropped]), sort(au$.uncertainty))
})

test_that("augment(fits, data = df) refuses data it cannot place", {
  df <- grouped_data()
  no_rows <- suppressWarnings(bulkem(rt ~ subject, data = df, family = "normal", random.inits = 2,
                                     use.gpu = FALSE, control = list(threads = 1)))
  expect_error(augment(no_rows, data = df), class = "bulkem_error_argument", regexp = "keep.data")
  from_list <- bulkem(list(a = df$rt[1:100]), family = "normal", random.inits = 2, use.gpu = FALSE,
                      control = list(keep.data = TRUE, threads = 1))
  expect_error(augment(from_list, data = df), class = "bulkem_error_argument", regexp = "formula or a data frame")
  fits <- fit_grouped(df)
  other <- df
  other$rt <- other$rt + 1
  expect_error(augment(fits, data = other), class = "bulkem_error_argument", regexp = "holds other values")
  expect_error(augment(fits, data = df[1:10, ]), class = "bulkem_error_argument", regexp = "not the data frame")
  taken <- df
  taken$.uncertainty <- 1
  expect_error(augment(fits, data = taken), class = "bulkem_error_argument", regexp = ".uncertainty")
})

test_that("every K's fits and the group keys come through a sharded call unchanged", {
  skip_if_not_installed("future")
  skip_if_not_installed("future.apply")
  df <- grouped_data()
  plain <- fit_grouped(df)
  old <- future::plan(future::sequential)
  on.exit(future::plan(old), add = TRUE)
  sharded <- suppressWarnings(bulkem(rt ~ subject + cond, data = df, num.components = 2, family = "normal",
                                     random.inits = 3, seed = 5, use.gpu = FALSE,
                                     control = list(keep.data = TRUE, threads = 2, future = TRUE, shards = 3)))
  expect_identical(attr(sharded, "groups"), attr(plain, "groups"))
  expect_identical(attr(sharded, "response"), "rt")
  strip <- function(x) {
    attributes(x) <- NULL
    x
  }
  expect_identical(strip(sharded), strip(plain))
  expect_identical(augment(sharded, data = df), augment(plain, data = df))
})
