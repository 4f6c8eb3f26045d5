# Multivariate input (issue 33, item 1): a list of numeric matrices, a
# formula with a matrix response, a long data frame with several `value`
# columns, each made by make_datasets() into a list of bare double matrices
# (n_i x d, colnames the variables) and checked against matrices built by
# hand here. bulkem() end-to-end: see test-multivariate.R

# A matrix as make_datasets() must give it: double, `dim` and `dimnames =
# list(NULL, variables)` its only attributes.
bare <- function(values, nrow, variables) {
  structure(as.double(values), dim = c(as.integer(nrow), length(variables)),
            dimnames = list(NULL, variables))
}

# Every dataset of `input` has exactly those attributes, in that order.
expect_bare <- function(input) {
  for (m in input$datasets) {
    expect_type(m, "double")
    expect_identical(names(attributes(m)), c("dim", "dimnames"))
    expect_null(rownames(m))
    expect_identical(colnames(m), input$variables)
  }
}

# Flow-cytometry-like cells of three samples, with missing values here and
# there (NA and NaN), an infinite value, and integer CD8 counts.
cells_frame <- function() {
  set.seed(33)
  n <- c(s2 = 9, s1 = 7, s3 = 6)
  d <- data.frame(sample = rep(names(n), times = n),
                  batch = rep(c("x", "y"), length.out = sum(n)),
                  CD4 = round(rnorm(sum(n), 5), 3),
                  CD8 = as.integer(rpois(sum(n), 20)),
                  CD3 = round(rnorm(sum(n), 2), 3))
  d$CD4[c(2, 12)] <- NA
  d$CD3[c(2, 5)] <- NaN
  d$CD8[20] <- NA
  d$CD4[15] <- Inf
  d
}

test_that("a list of matrices with ragged row counts is kept as bare double matrices", {
  set.seed(1)
  a <- matrix(rnorm(20), 10, 2, dimnames = list(paste0("r", 1:10), c("CD4", "CD8")))
  b <- matrix(rnorm(6), 3, 2)
  c0 <- matrix(numeric(0), 0, 2)
  input <- make_input(list(a = a, b = b, c = c0))
  expect_identical(input$datasets, list(a = bare(c(a), 10, c("CD4", "CD8")),
                                        b = bare(c(b), 3, c("CD4", "CD8")),
                                        c = bare(numeric(0), 0, c("CD4", "CD8"))))
  expect_identical(input$n_dropped, c(0L, 0L, 0L))
  expect_null(input$na.action)
  expect_true(input$multivariate)
  expect_identical(input$variables, c("CD4", "CD8"))
  expect_identical(names(input), c("datasets", "n_dropped", "na.action", "multivariate", "variables"))
  expect_bare(input)
  # column-major as R stores it: row i of the data is row i of the matrix
  expect_identical(input$datasets$a[7, ], c(CD4 = a[7, 1], CD8 = a[7, 2]))
  # an unnamed list stays unnamed, as a univariate one does
  expect_null(names(make_input(list(b, b))$datasets))
  # a list whose only matrix has no rows is multivariate too
  expect_identical(make_input(list(c0))$datasets, list(bare(numeric(0), 0, c("x1", "x2"))))
})

test_that("integer matrices and data frames of numeric columns become double matrices", {
  m <- matrix(1:12, 4, 3)
  df <- data.frame(u = c(1.5, 2.5), v = 3:4, w = c(7, 8))
  input <- make_input(list(m, df, m + 0.25))
  expect_identical(input$variables, c("u", "v", "w"))
  expect_identical(input$datasets, list(bare(1:12, 4, c("u", "v", "w")),
                                        bare(c(1.5, 2.5, 3, 4, 7, 8), 2, c("u", "v", "w")),
                                        bare(1:12 + 0.25, 4, c("u", "v", "w"))))
  expect_bare(input)
  # a list of data frames alone, integer columns only
  only <- make_input(list(g1 = data.frame(a = 1:3, b = 4:6)))
  expect_identical(only$datasets, list(g1 = bare(1:6, 3, c("a", "b"))))
  expect_error(make_input(list(m, data.frame(u = 1, v = "a", w = 2))),
               "column `v` of `datasets[[2]]` (a data frame) must be numeric", fixed = TRUE,
               class = "bulkem_error_argument")
})

test_that("column names come from the first dataset that has any, or are x1, x2, ...", {
  m <- matrix(as.double(1:6), 3)
  named <- m
  colnames(named) <- c("p", "q")
  expect_identical(make_input(list(m, named, m))$variables, c("p", "q"))
  expect_identical(make_input(list(m, named, m))$datasets[[1]], bare(1:6, 3, c("p", "q")))
  expect_identical(make_input(list(m, m))$variables, c("x1", "x2"))
  expect_identical(colnames(make_input(list(m, m))$datasets[[2]]), c("x1", "x2"))
  # different names in two datasets: an error naming both
  other <- m
  colnames(other) <- c("p", "r")
  e <- tryCatch(make_input(list(m, named, m, other)), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`datasets[[2]]` and `datasets[[4]]` have different column names",
               fixed = TRUE)
  expect_match(conditionMessage(e), "`p`, `q` and `p`, `r`", fixed = TRUE)
  # a data frame's names count as column names
  expect_error(make_input(list(named, data.frame(a = 1, b = 2))),
               "`datasets[[1]]` and `datasets[[2]]` have different column names", fixed = TRUE,
               class = "bulkem_error_argument")
})

test_that("a list mixing vectors and matrices, and other bad lists, are argument errors", {
  x <- c(1, 2, 3, 4, 5, 6, 7)
  m <- matrix(c(x, rev(x)), ncol = 2)
  e <- tryCatch(make_input(list(x, x, m, m)), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`datasets[[3]]` is a matrix of 7 x 2 values but `datasets[[1]]` is a numeric vector",
               fixed = TRUE)
  expect_error(make_input(list(m, m, x)), "`datasets[[3]]` is a numeric vector but `datasets[[1]]` is a matrix",
               fixed = TRUE, class = "bulkem_error_argument")
  expect_error(make_input(list(m, NULL)), "`datasets[[2]]` is NULL", fixed = TRUE,
               class = "bulkem_error_argument")
  expect_error(make_input(list(m, data.frame(a = x, b = x), letters)), "`datasets[[3]]` is of type character",
               fixed = TRUE, class = "bulkem_error_argument")
  expect_error(make_input(list(m, array(1:24 + 0.5, c(4, 3, 2)))), "`datasets[[2]]` is an array of 4 x 3 x 2",
               fixed = TRUE, class = "bulkem_error_argument")
  expect_error(make_input(list(m, matrix(1:21, 7))), "`datasets[[2]]` has 3 columns but `datasets[[1]]` has 2",
               fixed = TRUE, class = "bulkem_error_argument")
  expect_error(make_input(list(m, cbind(x))), "`datasets[[2]]` has 1 column:", fixed = TRUE,
               class = "bulkem_error_argument")
  expect_error(make_input(list(m, matrix(letters[1:4], 2))), "`datasets[[2]]` must be a numeric matrix",
               fixed = TRUE, class = "bulkem_error_argument")
  # one matrix alone is ambiguous
  e <- tryCatch(make_input(m), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`datasets` is a matrix of 7 x 2 values", fixed = TRUE)
  expect_match(conditionMessage(e), "give list(m) for one multivariate dataset, or asplit(m, 2) for one dataset per column",
               fixed = TRUE)
  # a list of one-column matrices is univariate, as before
  one <- make_input(list(cbind(x), cbind(x + 1)))
  expect_false(one$multivariate)
  expect_identical(lapply(one$datasets, c), list(x, x + 1))
})

test_that("rows with a missing value go through na.action; infinite values are kept", {
  a <- cbind(u = c(1, NA, 3, 4, 5), v = c(1, 2, NaN, 4, Inf))
  b <- cbind(u = c(NA, NaN), v = c(1, NA))
  clean <- cbind(u = 1:3, v = 4:6)
  input <- make_input(list(a, b, clean))
  ok <- complete.cases(a)
  expect_identical(input$datasets, list(bare(a[ok, ], sum(ok), c("u", "v")),
                                        bare(numeric(0), 0, c("u", "v")),
                                        bare(1:6, 3, c("u", "v"))))
  expect_identical(input$n_dropped, c(nrow(a) - sum(ok), 2L, 0L))
  expect_identical(input$n_dropped, c(2L, 2L, 0L))
  expect_identical(input$datasets[[1]][3, ], c(u = 5, v = Inf))
  expect_bare(input)
  # na.pass keeps them; na.exclude drops as na.omit does; na.fail stops naming the dataset
  kept <- make_input(list(a, b), na.action = na.pass)
  expect_identical(kept$datasets, list(bare(a, 5, c("u", "v")), bare(b, 2, c("u", "v"))))
  expect_identical(kept$n_dropped, c(0L, 0L))
  expect_identical(make_input(list(a, b), na.action = "na.exclude")$datasets, input$datasets[1:2])
  e <- tryCatch(make_input(list(clean, a), na.action = na.fail), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`na.action` stopped at `datasets[[2]]`", fixed = TRUE)
  # getOption("na.action") when not given, as model.frame() does
  old <- options(na.action = "na.fail")
  on.exit(options(old), add = TRUE)
  expect_error(make_input(list(a)), "getOption(\"na.action\") stopped at `datasets[[1]]`", fixed = TRUE,
               class = "bulkem_error_argument")
})

test_that("a formula with a matrix response gives one matrix per group, with subset and na.action", {
  cells <- cells_frame()
  input <- make_input(cbind(CD4, CD8, CD3) ~ sample, data = cells)
  vars <- c("CD4", "CD8", "CD3")
  ok <- complete.cases(cells[vars])
  expect_identical(sum(!ok), 4L)
  expected <- lapply(split(seq_len(nrow(cells))[ok], cells$sample[ok]), function(r) {
    bare(as.matrix(cells[r, vars]), length(r), vars)
  })
  expect_identical(input$datasets, expected)
  expect_named(input$datasets, c("s1", "s2", "s3"))
  expect_identical(input$n_dropped, as.integer(tapply(!ok, cells$sample, sum)))
  expect_identical(input$rows, unname(split(which(ok), cells$sample[ok])))
  expect_identical(input$groups, data.frame(sample = c("s1", "s2", "s3")))
  expect_identical(input$response, "cbind(CD4, CD8, CD3)")
  expect_true(input$multivariate)
  expect_identical(input$variables, vars)
  expect_identical(as.integer(input$na.action), which(!ok))
  expect_s3_class(input$na.action, "omit")
  expect_true(Inf %in% input$datasets$s1[, "CD4"])
  expect_bare(input)
  # the same through `formula =` and the data frame's alias
  expect_identical(make_input(formula = cbind(CD4, CD8, CD3) ~ sample, data = cells), input)
  expect_identical(make_input(cells, formula = cbind(CD4, CD8, CD3) ~ sample), input)
  # subset, evaluated in the data; rows lost by it are not counted as dropped
  cut <- 18L
  sub <- make_input(cbind(CD4, CD8) ~ sample, data = cells, subset = CD8 > cut & batch == "x")
  keep <- which(cells$CD8 > cut & cells$batch == "x")
  kept <- keep[complete.cases(cells[keep, c("CD4", "CD8")])]
  by_hand <- lapply(split(kept, factor(cells$sample[kept], levels = sort(unique(cells$sample[keep])))),
                    function(r) bare(as.matrix(cells[r, c("CD4", "CD8")]), length(r), c("CD4", "CD8")))
  expect_identical(sub$datasets, by_hand)
  expect_identical(unlist(sub$rows), unlist(split(kept, cells$sample[kept]), use.names = FALSE))
  expect_identical(sum(sub$n_dropped), length(keep) - length(kept))
  # na.fail stops the call; na.pass keeps the rows (the core reports them)
  expect_error(make_input(cbind(CD4, CD8) ~ sample, data = cells, na.action = na.fail),
               "`na.action` stopped the call", class = "bulkem_error_argument")
  all_rows <- make_input(cbind(CD4, CD8) ~ sample, data = cells, na.action = na.pass)
  expect_identical(vapply(all_rows$datasets, nrow, 0L), c(s1 = 7L, s2 = 9L, s3 = 6L))
  expect_identical(all_rows$n_dropped, c(0L, 0L, 0L))
})

test_that("formula details: two groups, ~ 1, unnamed columns, a group that loses every row", {
  cells <- cells_frame()
  two <- make_input(cbind(CD4, CD3) ~ sample + batch, data = cells)
  ok <- complete.cases(cells[c("CD4", "CD3")])
  g <- interaction(cells$sample, cells$batch, sep = ":", drop = TRUE)
  expect_named(two$datasets, levels(g))
  expect_identical(unname(lapply(two$datasets, nrow)), as.list(as.integer(tapply(ok, g, sum))))
  expect_identical(two$groups, data.frame(sample = c("s1", "s2", "s3", "s1", "s2", "s3"),
                                          batch = rep(c("x", "y"), each = 3)))
  one <- make_input(cbind(CD4, CD3) ~ 1, data = cells)
  expect_identical(one$datasets, list(bare(as.matrix(cells[ok, c("CD4", "CD3")]), sum(ok), c("CD4", "CD3"))))
  expect_null(one$groups)
  expect_identical(one$n_dropped, sum(!ok))
  # cbind() names only the symbols it was given
  logged <- make_input(cbind(CD4, log(CD8)) ~ sample, data = cells)
  expect_identical(logged$variables, c("CD4", "x2"))
  expect_identical(logged$response, "cbind(CD4, log(CD8))")
  expect_identical(logged$datasets$s3[, "x2"], with(cells, log(CD8[sample == "s3" & !is.na(CD4) & !is.na(CD8)])))
  # variables where the formula was written
  u <- c(1, NA, 3, 4); v <- c(2, 2, 3, 5); h <- c("a", "a", "b", "b")
  free <- make_input(cbind(u, v) ~ h)
  expect_identical(free$datasets, list(a = bare(c(1, 2), 1, c("u", "v")), b = bare(c(3, 4, 3, 5), 2, c("u", "v"))))
  expect_identical(free$rows, list(1L, 3:4))
  # a group whose rows all have a missing value stays, with no rows
  cells$CD4[cells$sample == "s3"] <- NA
  gone <- make_input(cbind(CD4, CD8) ~ sample, data = cells)
  expect_identical(gone$datasets$s3, bare(numeric(0), 0, c("CD4", "CD8")))
  expect_identical(gone$n_dropped[3], 6L)
  expect_identical(gone$rows[[3]], integer(0))
  # a matrix response that is not numeric
  expect_error(make_input(cbind(CD4, sample) ~ 1, data = cells), "are a matrix of 2 columns that must be numeric",
               class = "bulkem_error_argument")
})

test_that("a long data frame with several `value` columns is the formula cbind(...) ~ group", {
  cells <- cells_frame()
  cols <- make_input(cells, value = c("CD4", "CD8"), group = "sample")
  by_formula <- make_input(cbind(CD4, CD8) ~ sample, data = cells)
  expect_identical(cols$response, "CD4, CD8")
  cols$response <- by_formula$response
  expect_identical(cols, by_formula)
  ok <- complete.cases(cells[c("CD4", "CD8")])
  expect_identical(cols$datasets$s1, bare(as.matrix(cells[ok & cells$sample == "s1", c("CD4", "CD8")]),
                                          sum(ok & cells$sample == "s1"), c("CD4", "CD8")))
  # subset, two groups, and the groups data frame
  sub <- make_input(cells, value = c("CD3", "CD4"), group = c("batch", "sample"), subset = CD8 > 15)
  expect_identical(sub, local({
    r <- make_input(cbind(CD3, CD4) ~ batch + sample, data = cells, subset = CD8 > 15)
    r$response <- "CD3, CD4"
    r
  }))
  expect_identical(names(sub$groups), c("batch", "sample"))
  expect_identical(sub$variables, c("CD3", "CD4"))
  # columns whose names are not syntactic
  odd <- data.frame(`CD 4` = c(1, 2, 3), `CD-8` = c(4, 5, 6), g = c("a", "a", "b"), check.names = FALSE)
  named <- make_input(odd, value = c("CD 4", "CD-8"), group = "g")
  expect_identical(named$variables, c("CD 4", "CD-8"))
  expect_identical(named$datasets$a, bare(c(1, 2, 4, 5), 2, c("CD 4", "CD-8")))
  # errors
  expect_error(make_input(cells, value = c("CD4", "sample"), group = "batch"),
               "column `sample` of `datasets` must be numeric", class = "bulkem_error_argument")
  expect_error(make_input(cells, value = c("CD4", "CD4"), group = "sample"),
               "`value` names the column `CD4` more than once", class = "bulkem_error_argument")
  expect_error(make_input(cells, value = c("CD4", "cd8"), group = "sample"),
               "did you mean `CD8`?", fixed = TRUE, class = "bulkem_error_argument")
  expect_error(make_input(cells, value = c("CD4", "CD8"), group = c("sample", "CD8")),
               "groups by its own values `CD8`", class = "bulkem_error_argument")
})

test_that("univariate input says so and is otherwise as before", {
  x <- list(a = c(1, NA, 3), b = 4:6)
  input <- make_input(x)
  expect_identical(input, list(datasets = list(a = c(1, 3), b = c(4, 5, 6)), n_dropped = c(1L, 0L),
                               na.action = NULL, multivariate = FALSE, variables = NULL))
  d <- data.frame(v = c(1, 2, NA, 4), g = c("p", "p", "q", "q"))
  f <- make_input(v ~ g, data = d)
  expect_false(f$multivariate)
  expect_true("variables" %in% names(f))
  expect_null(f$variables)
  expect_identical(f$datasets, list(p = c(1, 2), q = 4))
  expect_identical(f$response, "v")
  expect_identical(make_input(d, value = "v", group = "g"), f)
})
