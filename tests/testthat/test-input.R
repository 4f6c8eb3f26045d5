# The forms of input (issue 11, item 1): a formula with data, subset and
# na.action, a long data frame, a list; each against the list built by hand
# with split(), which the 2015 interface fits.

# A long data frame of three subjects in two blocks, IG-like positive values.
input_frame <- function() {
  set.seed(101)
  n <- c(s2 = 160, s1 = 120, s3 = 90)
  data.frame(subject = rep(names(n), times = n),
             block = rep(c("x", "y"), length.out = sum(n)),
             rt = unlist(lapply(n, b1_dataset), use.names = FALSE))
}

# The fields of a fit that the data determine.
fit_values <- function(fits) {
  lapply(unclass(fits), function(f) f[c("lambda", "mu", "alpha", "loglik", "n", "status")])
}

test_that("a formula with data gives the fits of the list split() makes", {
  df <- input_frame()
  by_formula <- bulkem(rt ~ subject, data = df, random.inits = 3, seed = 8)
  by_list <- bulkem(split(df$rt, df$subject), random.inits = 3, seed = 8)
  expect_named(by_formula, c("s1", "s2", "s3"))
  expect_identical(unclass(by_formula)[1:3], unclass(by_list)[1:3])
  # the same with the formula given by name, as lm(formula = , data = )
  by_name <- bulkem(formula = rt ~ subject, data = df, random.inits = 3, seed = 8)
  expect_identical(unclass(by_name)[1:3], unclass(by_list)[1:3])
  # and as the data frame's alias of 2015-style scripts
  by_alias <- bulkem(df, formula = rt ~ subject, random.inits = 3, seed = 8)
  expect_identical(unclass(by_alias)[1:3], unclass(by_list)[1:3])
})

test_that("the left-hand side is evaluated: log(rt) ~ subject fits log(rt)", {
  df <- input_frame()
  logged <- bulkem(log(rt) ~ subject, data = df, family = "normal", random.inits = 3, seed = 8)
  by_list <- bulkem(split(log(df$rt), df$subject), family = "normal", random.inits = 3, seed = 8)
  expect_identical(fit_values(logged), fit_values(by_list))
  plain <- bulkem(rt ~ subject, data = df, family = "normal", random.inits = 3, seed = 8)
  expect_false(isTRUE(all.equal(logged$s1$mu, plain$s1$mu)))
  # through the data frame's `formula =` too (it used to fit rt)
  alias <- bulkem(df, formula = log(rt) ~ subject, family = "normal", random.inits = 3, seed = 8)
  expect_identical(fit_values(alias), fit_values(by_list))
})

test_that("subset selects rows as in lm(), evaluated in the data and then the caller", {
  df <- input_frame()
  cut <- stats::quantile(df$rt, 0.2)
  sub <- bulkem(rt ~ subject, data = df, subset = rt > cut & block == "x", random.inits = 3, seed = 8)
  keep <- df$rt > cut & df$block == "x"
  by_list <- bulkem(split(df$rt[keep], df$subject[keep]), random.inits = 3, seed = 8)
  expect_identical(unclass(sub)[1:3], unclass(by_list)[1:3])
  expect_identical(sub$s1$n, sum(keep & df$subject == "s1"))
  # the same on the data frame form
  cols <- bulkem(df, value = "rt", group = "subject", subset = rt > cut & block == "x",
                 random.inits = 3, seed = 8)
  expect_identical(unclass(cols)[1:3], unclass(by_list)[1:3])
  # inside a function, subset sees its local variables, as lm()'s does
  f <- function(d, q) bulkem(rt ~ subject, data = d, subset = rt > q & block == "x",
                             random.inits = 3, seed = 8)
  expect_identical(unclass(f(df, cut))[1:3], unclass(by_list)[1:3])
})

test_that("several grouping terms give one dataset per combination, named as split() names them", {
  df <- input_frame()
  two <- bulkem(rt ~ subject + block, data = df, random.inits = 3, seed = 8)
  by_list <- bulkem(split(df$rt, list(df$subject, df$block), drop = TRUE, sep = ":"),
                    random.inits = 3, seed = 8)
  expect_identical(names(two), names(by_list))
  expect_identical(names(two), c("s1:x", "s2:x", "s3:x", "s1:y", "s2:y", "s3:y"))
  expect_identical(unclass(two)[seq_along(two)], unclass(by_list)[seq_along(by_list)])
  # a combination that does not occur is no dataset
  df2 <- df[!(df$subject == "s3" & df$block == "y"), ]
  expect_false("s3:y" %in% names(bulkem(rt ~ subject + block, data = df2, random.inits = 2)))
  # value/group with several columns: the same
  cols <- bulkem(df, value = "rt", group = c("subject", "block"), random.inits = 3, seed = 8)
  expect_identical(unclass(cols)[seq_along(cols)], unclass(by_list)[seq_along(by_list)])
})

test_that("value ~ 1, or a formula without data, makes datasets from the variables", {
  df <- input_frame()
  one <- bulkem(rt ~ 1, data = df, random.inits = 3, seed = 8)
  expect_length(one, 1)
  expect_identical(unclass(one)[[1]], unclass(bulkem(list(df$rt), random.inits = 3, seed = 8))[[1]])
  rt <- df$rt
  subject <- df$subject
  no_data <- bulkem(rt ~ subject, random.inits = 3, seed = 8)
  expect_identical(unclass(no_data)[1:3], unclass(bulkem(split(rt, subject), random.inits = 3, seed = 8))[1:3])
})

test_that("Ozone ~ Month on airquality drops the missing values and counts them per month", {
  aq <- datasets::airquality
  # K = 2 fails for a month: the call warns that K = 1 was chosen for that
  expect_warning(oz <- bulkem(Ozone ~ Month, data = aq, num.components = 1:2, random.inits = 3, seed = 4),
                 "^of 5 fits, 1 chose its K because another K failed \\(see bulkem_compare\\(\\); e.g. dataset 6: ",
                 class = "bulkem_warning_convergence")
  expect_named(oz, as.character(5:9))
  missing_per_month <- tapply(is.na(aq$Ozone), aq$Month, sum)
  present_per_month <- tapply(!is.na(aq$Ozone), aq$Month, sum)
  expect_identical(vapply(oz, `[[`, 0L, "n_dropped"), setNames(as.integer(missing_per_month), 5:9))
  expect_identical(vapply(oz, `[[`, 0L, "n"), setNames(as.integer(present_per_month), 5:9))
  # the rows dropped, as lm() records them
  expect_identical(as.integer(attr(oz, "na.action")), which(is.na(aq$Ozone)))
  expect_s3_class(attr(oz, "na.action"), "omit")
  # the same fits as the list of each month's observed values
  by_hand <- lapply(split(aq$Ozone, aq$Month), function(v) v[!is.na(v)])
  ref <- quiet_bulkem(by_hand, num.components = 1:2, random.inits = 3, seed = 4)
  expect_identical(fit_values(oz), fit_values(ref))
  # and as the list with its NAs in, dropped the same way, counts included
  with_na <- quiet_bulkem(split(aq$Ozone, aq$Month), num.components = 1:2, random.inits = 3, seed = 4)
  expect_identical(unclass(with_na)[1:5], unclass(oz)[1:5])
})

test_that("na.action: na.fail stops, na.pass keeps (invalid), the option is the default", {
  aq <- datasets::airquality
  e <- tryCatch(bulkem(Ozone ~ Month, data = aq, na.action = na.fail), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`na.action`")
  expect_error(bulkem(Ozone ~ Month, data = aq, na.action = "na.fail"), class = "bulkem_error_argument")
  kept <- quiet_bulkem(Ozone ~ Month, data = aq, na.action = na.pass, random.inits = 2)
  expect_identical(vapply(kept, `[[`, "", "status"), setNames(rep("invalid", 5), 5:9))
  expect_null(kept[[1]]$n_dropped)
  old <- options(na.action = "na.fail")
  on.exit(options(old))
  e <- tryCatch(bulkem(Ozone ~ Month, data = aq), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "getOption(\"na.action\")", fixed = TRUE)
  expect_error(bulkem(list(c(1:10, NA))), class = "bulkem_error_argument")
  options(old)
  expect_error(bulkem(1:10, na.action = "no_such_function"), class = "bulkem_error_argument")
})

test_that("a group whose values are all missing stays, invalid and empty; a missing group is no dataset", {
  df <- input_frame()
  df$rt[df$subject == "s3"] <- NA
  df$subject[1:5] <- NA
  fits <- quiet_bulkem(rt ~ subject, data = df, random.inits = 2, seed = 3)
  expect_named(fits, c("s1", "s2", "s3"))
  expect_identical(fits$s3$status, "invalid")
  expect_identical(fits$s3$n, 0L)
  expect_identical(fits$s3$n_dropped, sum(df$subject == "s3", na.rm = TRUE))
  # rows 1:5 (subject s2) have no group: dropped, not counted against a dataset
  expect_null(fits$s2$n_dropped)
  expect_identical(fits$s2$n, sum(df$subject == "s2", na.rm = TRUE))
  expect_true(all(1:5 %in% attr(fits, "na.action")))
})

test_that("a list drops NA and NaN by default and counts them per dataset", {
  set.seed(5)
  x <- c(rnorm(150), rnorm(100, 4))
  y <- c(rnorm(120), rnorm(120, 3))
  holed <- list(a = c(x[1:100], NA, x[101:250], NaN), b = y)
  fits <- bulkem(holed, family = "normal", random.inits = 3, seed = 2)
  clean <- bulkem(list(a = x, b = y), family = "normal", random.inits = 3, seed = 2)
  expect_identical(fit_values(fits), fit_values(clean))
  expect_identical(fits$a$n_dropped, 2L)
  # a fit depends on its dataset alone: b lost nothing and has no n_dropped,
  # exactly as b fitted in a call without a
  expect_null(fits$b$n_dropped)
  expect_identical(unclass(fits$b), unclass(bulkem(list(b = y), family = "normal", random.inits = 3, seed = 2)$b))
  expect_identical(fits$a$n, length(x))
  # a dataset that lost nothing has no n_dropped, as before
  expect_null(clean$a$n_dropped)
  # one vector, likewise
  expect_identical(bulkem(c(x, NA), family = "normal", random.inits = 3, seed = 2)[[1]]$n_dropped, 1L)
  # na.pass keeps them: the dataset is invalid, the other fits as alone
  kept <- quiet_bulkem(holed, family = "normal", random.inits = 3, seed = 2, na.action = na.pass)
  expect_identical(kept$a$status, "invalid")
  expect_identical(fit_values(kept)$b, fit_values(clean)$b)
  e <- tryCatch(bulkem(holed, na.action = na.fail), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "datasets[[1]]", fixed = TRUE)
  # what stays invalid after dropping NAs is still reported per dataset
  inf <- quiet_bulkem(list(c(x, NA, Inf)), family = "normal", random.inits = 2)
  expect_identical(inf[[1]]$status, "invalid")
  expect_identical(inf[[1]]$n_dropped, 1L)
})

test_that("a matrix is an error that says what to do, and its advice works", {
  set.seed(6)
  m <- matrix(c(b1_dataset(200), b1_dataset(200)), ncol = 2, dimnames = list(NULL, c("p", "q")))
  e <- tryCatch(bulkem(m), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`datasets` is a matrix")
  expect_match(conditionMessage(e), "asplit(m, 2)", fixed = TRUE)
  expect_match(conditionMessage(e), "list(m) for one multivariate dataset", fixed = TRUE)
  # bulkem() end-to-end: see test-multivariate.R
  expect_identical(make_input(list(m))$datasets, list(m))
  fits <- bulkem(asplit(m, 2), random.inits = 2, seed = 1)
  ref <- bulkem(list(p = m[, 1], q = m[, 2]), random.inits = 2, seed = 1)
  expect_named(fits, c("p", "q"))
  expect_identical(fit_values(fits), fit_values(ref))
  expect_error(bulkem(array(1, c(2, 2, 2))), class = "bulkem_error_argument")
})

test_that("errors name the argument and the variable the caller wrote", {
  df <- input_frame()
  e <- tryCatch(bulkem(w ~ subject, data = df), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "the formula `w ~ subject` uses `w`", fixed = TRUE)
  expect_match(conditionMessage(e), "`data`", fixed = TRUE)
  # a column named like a function (t) that data lacks is missing too
  expect_error(bulkem(t ~ subject, data = df), "uses `t`", class = "bulkem_error_argument")
  e <- tryCatch(bulkem(df, formula = w ~ subject), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "`formula = w ~ subject` uses `w`", fixed = TRUE)
  expect_no_match(conditionMessage(e), "needs `value`", fixed = TRUE)
  # a list column as the group
  df$listed <- I(as.list(df$subject))
  for (call in list(quote(bulkem(rt ~ listed, data = df)),
                    quote(bulkem(df, value = "rt", group = "listed")),
                    quote(bulkem(df, formula = rt ~ listed)))) {
    e <- tryCatch(eval(call), error = identity)
    expect_s3_class(e, "bulkem_error_argument")
    expect_match(conditionMessage(e), "`listed`", fixed = TRUE, label = deparse(call))
  }
  # non-numeric values, no response, data in the place of num.components
  expect_error(bulkem(subject ~ block, data = df), "`subject`", class = "bulkem_error_argument")
  expect_error(bulkem(~ subject, data = df), "no response", class = "bulkem_error_argument")
  e <- tryCatch(bulkem(rt ~ subject, df), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  expect_match(conditionMessage(e), "data = df", fixed = TRUE)
  # arguments for another form of input
  expect_error(bulkem(df$rt, data = df), "`data`", class = "bulkem_error_argument")
  expect_error(bulkem(df$rt, subset = rt > 1), "`subset`", class = "bulkem_error_argument")
  expect_error(bulkem(rt ~ subject, data = df, value = "rt"), "`value`", class = "bulkem_error_argument")
  expect_error(bulkem(rt ~ subject, data = as.list(df)), "`data`", class = "bulkem_error_argument")
  expect_error(bulkem(rt ~ subject, data = df, subset = rt < 0), "no rows", class = "bulkem_error_argument")
  expect_error(bulkem(), "`datasets` is missing", class = "bulkem_error_argument")
  # a subset R cannot evaluate: the message of model.frame, as an argument error
  expect_error(bulkem(rt ~ subject, data = df, subset = no_such_variable > 1),
               class = "bulkem_error_argument")
})

test_that("2015 positional calls are unchanged by the new arguments", {
  set.seed(9)
  x <- b1_dataset(300)
  a <- bulkem(list(x), 2, 100, 3, FALSE, 1e-6, FALSE, seed = 1)
  b <- bulkem(datasets = list(x), num.components = 2, max.iters = 100, random.inits = 3,
              use.gpu = FALSE, epsilon = 1e-6, verbose = FALSE, seed = 1)
  expect_identical(unclass(a)[[1]], unclass(b)[[1]])
  expect_identical(a[[1]]$num_iterations <= 100, TRUE)
  expect_null(a[[1]]$n_dropped)
})

test_that("a column named in `value` or `group` that is not there is named, with the columns there", {
  df <- input_frame()
  e <- tryCatch(bulkem(df, value = "RT", group = "subject"), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  msg <- conditionMessage(e)
  expect_match(msg, "`value` names a column that `datasets` does not have: `RT`", fixed = TRUE)
  expect_match(msg, "`subject`, `block`, `rt`", fixed = TRUE)
  expect_match(msg, "did you mean `rt`?", fixed = TRUE)
  expect_no_match(msg, "needs `value`", fixed = TRUE)
  # several group columns, some missing: only those are named as missing
  e <- tryCatch(bulkem(df, value = "rt", group = c("subject", "Block", "cond")), error = identity)
  expect_s3_class(e, "bulkem_error_argument")
  msg <- conditionMessage(e)
  expect_match(msg, "`group` names columns that `datasets` does not have: `Block`, `cond`", fixed = TRUE)
  expect_match(msg, "its columns are `subject`, `block`, `rt`", fixed = TRUE)
  expect_no_match(msg, "needs `group`", fixed = TRUE)
  # a name that is not a string
  expect_error(bulkem(df, value = 3, group = "subject"), "`value` must be the name of one column", class = "bulkem_error_argument")
  expect_error(bulkem(df, value = "rt", group = NA_character_), "`group` must be", class = "bulkem_error_argument")
  # several values are multivariate data, each numeric
  # (bulkem() end-to-end: see test-multivariate.R)
  expect_error(bulkem(df, value = c("rt", "subject"), group = "block"), "column `subject` of `datasets` must be numeric",
               class = "bulkem_error_argument")
  # not given at all: the message of old
  expect_error(bulkem(df, group = "subject"), "a data frame `datasets` needs `value`",
               class = "bulkem_error_argument")
  expect_error(bulkem(df, value = "rt"), "a data frame `datasets` needs `group`",
               class = "bulkem_error_argument")
  # a data frame of many columns lists the first ones
  wide <- cbind(df, as.data.frame(matrix(0, nrow(df), 40)))
  e <- tryCatch(bulkem(wide, value = "RT", group = "subject"), error = identity)
  expect_match(conditionMessage(e), "`V17`, ... (43 in all)", fixed = TRUE)
})

test_that("grouping by the value column itself is an argument error", {
  d <- data.frame(v = rexp(200), g = rep(c("a", "b"), 100))
  calls <- list(quote(bulkem(d, value = "v", group = "v")),
                quote(bulkem(d, value = "v", group = c("g", "v"))),
                quote(bulkem(v ~ v, data = d)),
                quote(bulkem(v ~ g + v, data = d)),
                quote(bulkem(v ~ g:v, data = d)),
                quote(bulkem(d, formula = v ~ v)),
                quote(bulkem(formula = v ~ v, data = d)))
  for (call in calls) {
    e <- tryCatch(eval(call), error = identity)
    expect_s3_class(e, "bulkem_error_argument")
    expect_match(conditionMessage(e), "groups by its own values `v`", fixed = TRUE, label = deparse(call))
  }
  # the value is not its grouping: these fit as before
  fits <- bulkem(v ~ ., data = d, random.inits = 2, family = "normal", use.gpu = FALSE)
  expect_named(fits, c("a", "b"))
  fits <- bulkem(v ~ 1, data = d, random.inits = 2, family = "normal", use.gpu = FALSE)
  expect_length(fits, 1)
})

test_that("a grouping that leaves no rows (every group missing) is an argument error", {
  d <- data.frame(v = rexp(200), g = NA, h = rep(c("a", "b"), 100))
  calls <- list(quote(bulkem(d, value = "v", group = "g")),
                quote(bulkem(v ~ g, data = d)),
                quote(bulkem(d, value = "v", group = c("h", "g"))),
                quote(bulkem(v ~ h, data = transform(d, h = NA_character_))),
                quote(bulkem(v ~ h, data = transform(d, h = ifelse(v > 1, NA, h)), subset = v > 1)))
  for (call in calls) {
    e <- tryCatch(eval(call), error = identity)
    expect_s3_class(e, "bulkem_error_argument")
    expect_match(conditionMessage(e), "gives no rows to fit", fixed = TRUE, label = deparse(call))
    expect_match(conditionMessage(e), "missing", fixed = TRUE, label = deparse(call))
  }
  # some groups missing: their rows belong to no dataset, as before
  d$g[1:10] <- "x"
  fits <- bulkem(d, value = "v", group = "g", random.inits = 2, family = "normal", use.gpu = FALSE)
  expect_named(fits, "x")
  expect_identical(fits$x$n, 10L)
})
