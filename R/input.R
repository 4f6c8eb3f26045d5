# The first argument of bulkem(), in whichever form it came, made into the
# list of datasets the engine fits:
#   - a list of numeric vectors, or one numeric vector;
#   - a long data frame with `value` and `group` (column names), or with
#     `formula = value ~ group` (an alias of the formula form);
#   - a formula `value ~ group` with `data`, `subset` and `na.action`, built
#     by stats::model.frame() as lm() does, so `log(v) ~ g` fits log(v).
# Multivariate data (issue 33) comes in the same three forms: a list of
# numeric matrices (or data frames), observations in rows and the same
# variables in the columns of every one; a formula whose response is a
# matrix, cbind(a, b) ~ group; or a data frame with several `value` columns.
# Missing values are handled by `na.action` in every form. Errors name the
# arguments as the caller wrote them (stop_arg(), R/conditions.R).
#
# The dispatch is done here rather than by S3 methods of bulkem(): R's S3
# dispatch picks its object by matching argument names partially against the
# first formal (`datasets`), so `bulkem(y ~ g, data = df)` would dispatch on
# `df` (`data` is a prefix of `datasets`). One function with `data` as a
# formal of its own matches `data =` exactly and keeps the 2015 signature.

# Returns list(datasets, n_dropped, na.action, groups, rows, response,
# multivariate, variables): the named list of double vectors (or NULLs), how
# many values `na.action` dropped from each, the rows a data frame lost
# (`na.action`'s record, as lm() keeps it) or NULL; for a formula or data
# frame also the datasets' group keys (a data frame, one row per dataset and
# one column per grouping variable; NULL for `value ~ 1`), each value's row
# in the caller's data (a list parallel to the datasets) and the response as
# written (a list of datasets has no groups, rows or response: those
# elements are absent); then `multivariate = FALSE` and `variables = NULL`.
# For multivariate data the datasets are double matrices, n_i x d in R's
# column-major order, with `dimnames = list(NULL, variables)` and no other
# attribute (never NULL; one that lost all its rows has 0 rows), n_dropped
# counts the rows dropped (a row is missing where any of its values is NA
# or NaN; infinite values are kept for the engine to report), the response
# of a formula is its left-hand side as written ("cbind(a, b)") and that of
# `value` columns their names joined by ", "; `multivariate = TRUE` and
# `variables` the d variables' names.
# `given` says which arguments the caller supplied; `subset` is the
# unevaluated expression or NULL; `env` is the caller's frame.
make_datasets <- function(datasets, data, subset, na.action, value, group, formula,
                          given, env, threads = 1L, weights = NULL) {
  na <- resolve_na_action(na.action, given[["na.action"]])
  if (!given[["datasets"]]) {
    if (is.null(formula)) {
      stop_arg("`datasets` is missing: give a list of numeric vectors, one numeric vector, ",
               "a data frame with `value` and `group`, or a formula with `data`")
    }
    # bulkem(formula = y ~ g, data = df), as one would call lm()
    return(datasets_from_formula(formula, data, subset, na, env,
                                 labels = formula_labels(formula, "`formula`", "`data`"), weights = weights))
  }
  if (inherits(datasets, "formula")) {
    unused_with(c(value = !is.null(value), group = !is.null(group), formula = !is.null(formula)),
                "a formula `datasets` (the formula says which columns hold the values and groups)")
    return(datasets_from_formula(datasets, data, subset, na, env,
                                 labels = formula_labels(datasets, "the formula", "`data`"), weights = weights))
  }
  if (is.data.frame(datasets)) {
    if (given[["data"]]) {
      stop_arg("`data` goes with a formula as the first argument, e.g. bulkem(rt ~ subject, ",
               "data = df); here `datasets` is the data frame already")
    }
    if (!is.null(formula)) {
      unused_with(c(value = !is.null(value), group = !is.null(group)), "`formula`")
      return(datasets_from_formula(formula, datasets, subset, na, env,
                                   labels = formula_labels(formula, "`formula`", "`datasets`"), weights = weights))
    }
    return(datasets_from_columns(datasets, value, group, subset, na, env, weights))
  }
  if (is.matrix(datasets)) {
    # one multivariate dataset, or one univariate dataset per column?
    stop_arg("`datasets` is a matrix of ", nrow(datasets), " x ", ncol(datasets), " values: bulkem ",
             "fits one dataset per element of a list; give list(m) for one multivariate dataset, ",
             "or asplit(m, 2) for one dataset per column")
  }
  if (length(dim(datasets)) >= 2) {
    stop_arg("`datasets` is an array",
             ": bulkem fits one dataset per element of a list; give a list of its columns, ",
             "e.g. asplit(m, 2), or c(m) for a single dataset")
  }
  unused_with(c(data = given[["data"]], subset = !is.null(subset), value = !is.null(value),
                group = !is.null(group), formula = !is.null(formula)),
              "a data frame or a formula as `datasets`, e.g. bulkem(rt ~ subject, data = df)")
  if (is.list(datasets) && !is.data.frame(datasets) && !inherits(datasets, "histogram") &&
      length(datasets) > 0 && all(vapply(datasets, is_histogram, NA))) {
    if (!is.null(weights)) stop_arg("`weights` do not go with histograms: their counts are the weights")
    binned <- datasets_from_histograms(datasets)
    return(list(datasets = binned$datasets, n_dropped = integer(length(datasets)), na.action = NULL,
                multivariate = FALSE, variables = NULL, censored = binned$censored, binned_weights = binned$weights))
  }
  if (inherits(datasets, "histogram")) {
    stop_arg("`datasets` is one histogram: give a list of histograms, list(h), one per dataset")
  }
  if (is.list(datasets) && !is.data.frame(datasets) && any(vapply(datasets, is_surv, NA))) {
    surv <- datasets_from_surv(datasets, eval(weights, env))
    checked <- check_datasets(surv$datasets, threads)
    dropped <- drop_missing(checked$datasets, checked$has_na, na)
    out <- list(datasets = dropped$datasets, n_dropped = dropped$n_dropped + surv$n_dropped, na.action = NULL,
                multivariate = FALSE, variables = NULL, censored = surv$censored)
    if (!is.null(surv$weights)) out$weights <- surv$weights
    return(out)
  }
  checked <- check_datasets(datasets, threads)
  multivariate <- !is.null(checked$variables)
  dropped <- if (multivariate) {
    drop_missing_rows(checked$datasets, checked$has_na, na, checked$variables)
  } else {
    drop_missing(checked$datasets, checked$has_na, na)
  }
  out <- list(datasets = dropped$datasets, n_dropped = dropped$n_dropped, na.action = NULL,
              multivariate = multivariate, variables = checked$variables)
  w <- eval(weights, env)
  if (!is.null(w)) out$weights <- weights_of_list(w, checked$datasets, checked$has_na, dropped$datasets)
  out
}

# How the caller gave the formula and the data, for error messages.
formula_labels <- function(f, how, data) {
  shown <- if (inherits(f, "formula")) {
    paste0("`", paste(deparse(f, width.cutoff = 500L), collapse = " "), "`")
  } else {
    ""
  }
  list(formula = if (how == "`formula`") paste0("`formula = ", substring(shown, 2)) else
         paste(how, shown),
       data = data)
}

# Stops when arguments that only go with another form of input were given.
unused_with <- function(given, needs) {
  if (any(given)) {
    args <- paste0("`", names(given)[given], "`", collapse = ", ")
    stop_arg(args, if (sum(given) == 1) " goes" else " go", " with ", needs)
  }
}

# The na.action function and how to name it in messages: the argument, or
# getOption("na.action") (na.omit in a standard session) when not given, as
# model.frame() does; NULL (no option set) keeps missing values.
resolve_na_action <- function(na.action, given) {
  label <- if (given) "`na.action`" else "getOption(\"na.action\")"
  if (!given) na.action <- getOption("na.action")
  if (is.null(na.action)) return(list(fun = stats::na.pass, label = label))
  fun <- if (is.function(na.action)) {
    na.action
  } else if (is.character(na.action) && length(na.action) == 1 && !is.na(na.action)) {
    tryCatch(match.fun(na.action), error = function(e) NULL)
  }
  if (is.null(fun)) {
    stop_arg(label, " must be a function such as na.omit, na.exclude, na.fail or na.pass, ",
             "or its name, not ", format_value(na.action))
  }
  list(fun = fun, label = label)
}

# Applies na.action to each dataset of a checked list that holds NA or NaN
# (`has_na`, from check_datasets()); the others are left alone.
drop_missing <- function(datasets, has_na, na) {
  n_dropped <- integer(length(datasets))
  for (i in which(has_na)) {
    d <- datasets[[i]]
    kept <- tryCatch(na$fun(d), error = function(e) {
      stop_arg(na$label, " stopped at `datasets[[", i, "]]`: ", conditionMessage(e))
    })
    if (!is.numeric(kept)) {
      stop_arg(na$label, " must return the values it keeps, as na.omit does; for ",
               "`datasets[[", i, "]]` it returned ", describe_type(kept))
    }
    kept <- as.double(kept) # without na.omit's attributes
    n_dropped[i] <- length(d) - length(kept)
    datasets[i] <- list(kept)
  }
  list(datasets = datasets, n_dropped = n_dropped)
}

# The same for a list of multivariate datasets (check_matrices(),
# R/validate.R): `na.action` on each matrix that holds NA or NaN (na.omit
# drops the rows with any), n_dropped counting rows.
drop_missing_rows <- function(datasets, has_na, na, variables) {
  n_dropped <- integer(length(datasets))
  for (i in which(has_na)) {
    m <- datasets[[i]]
    kept <- tryCatch(na$fun(m), error = function(e) {
      stop_arg(na$label, " stopped at `datasets[[", i, "]]`: ", conditionMessage(e))
    })
    if (!is.numeric(kept) || length(dim(kept)) != 2L || ncol(kept) != ncol(m)) {
      stop_arg(na$label, " must return the rows it keeps, as na.omit does; for ",
               "`datasets[[", i, "]]` (a matrix of ", ncol(m), " columns) it returned ",
               if (length(dim(kept)) == 2L) paste("a matrix of", ncol(kept), "columns") else describe_type(kept))
    }
    n_dropped[i] <- nrow(m) - nrow(kept)
    datasets[i] <- list(bare_matrix(kept, variables)) # without na.omit's attributes
  }
  list(datasets = datasets, n_dropped = n_dropped)
}

# value = "rt", group = c("subject", "block"): checked by name, then made
# into the formula `rt ~ subject + block` (any column name works, as a
# symbol) and built like one. Several values, value = c("a", "b"), are
# multivariate data: the formula `cbind(a, b) ~ subject + block`.
datasets_from_columns <- function(df, value, group, subset, na, env, weights = NULL) {
  for (arg in c("value", "group")) {
    col <- if (arg == "value") value else group
    what <- if (arg == "value") "one of its columns" else "one or more of its columns"
    if (is.null(col)) {
      stop_arg("a data frame `datasets` needs `", arg, "`, the name of ", what,
               " (or give a formula: bulkem(rt ~ subject, data = df))")
    }
    if (!is.character(col) || length(col) < 1 || anyNA(col)) {
      stop_arg("`", arg, "` must be ", if (arg == "value") "the name of one column" else
               "the names of one or more columns", " of `datasets` (a character ",
               if (arg == "value") "string, or several names for multivariate data" else "vector",
               "), not ", format_value(col))
    }
    if (arg == "value" && anyDuplicated(col)) {
      stop_arg("`value` names the column `", col[anyDuplicated(col)], "` more than once; ",
               "give each variable once")
    }
    absent <- unique(col[!col %in% names(df)])
    if (length(absent) > 0) stop_arg(absent_columns(arg, absent, names(df)))
  }
  several <- length(value) > 1
  own <- value[value %in% group]
  if (length(own) > 0) {
    stop_arg("`group = ", deparse1(group), "` groups by its own values `", own[1],
             "`, the column `value` names: group by the column that says which dataset each row ",
             "belongs to (e.g. group = \"subject\"), or fit the values as one dataset with bulkem(",
             if (several) paste0("cbind(", paste(value, collapse = ", "), ")") else value,
             " ~ 1, data = df)")
  }
  for (v in value) {
    values <- df[[v]]
    if (!is.numeric(values) || is.factor(values)) {
      stop_arg("column `", v, "` of `datasets` must be numeric, not ", describe_type(values))
    }
  }
  rhs <- Reduce(function(a, b) call("+", a, b), lapply(group, as.name))
  lhs <- if (several) as.call(c(as.name("cbind"), lapply(value, as.name))) else as.name(value)
  f <- eval(call("~", lhs, rhs))
  environment(f) <- env
  labels <- list(formula = paste0("`value = ", if (several) deparse1(value) else paste0("\"", value, "\""),
                                  "` and `group = ", deparse1(group), "`"),
                 data = "`datasets`")
  datasets_from_formula(f, df, subset, na, env, labels,
                        response = if (several) paste(value, collapse = ", "), weights = weights)
}

# The message for names in `value` or `group` (`arg`) that are not columns
# of the data frame (`absent`): which, the columns it has (the first 20), and
# the columns that differ from one of them only in case.
absent_columns <- function(arg, absent, columns) {
  shown <- paste0("`", utils::head(columns, 20), "`", collapse = ", ")
  if (length(columns) > 20) shown <- paste0(shown, ", ... (", length(columns), " in all)")
  near <- unique(columns[tolower(columns) %in% tolower(absent)])
  paste0("`", arg, "` names ", if (length(absent) > 1) "columns" else "a column",
         " that `datasets` does not have: ", paste0("`", absent, "`", collapse = ", "),
         if (length(near) > 0) paste0(" (did you mean ", paste0("`", near, "`", collapse = ", "), "?)"),
         "; ", if (length(columns) == 0) "it has no columns" else paste("its columns are", shown))
}

# The formula form, as lm() builds its data: stats::model.frame() with
# `data` and `subset` (evaluated in `data`, then where the formula was
# written), keeping missing values; then `na.action` on that frame, so that
# the rows it drops are known and counted per dataset. One dataset per
# combination of the grouping variables present after `subset` (named
# "a:b", in the order of split()); a group whose values were all dropped is
# kept, empty ("invalid", with its count dropped). Rows whose group is
# missing belong to no dataset. A response that is a numeric matrix of two
# or more columns (cbind(a, b) ~ g) gives multivariate datasets: the rows of
# the matrix, a row missing where any of its values is; `response`, when
# given, replaces the left-hand side as written.
datasets_from_formula <- function(f, data, subset, na, env, labels, response = NULL, weights = NULL) {
  if (!inherits(f, "formula")) {
    stop_arg("`formula` must be a formula such as value ~ group, not ", format_value(f))
  }
  if (length(f) != 3L) {
    stop_arg(labels$formula, " has no response (the values): write it as value ~ group, ",
             "value ~ group1 + group2, or value ~ 1 for one dataset")
  }
  if (!is.null(data) && !is.data.frame(data)) {
    stop_arg(labels$data, " must be a data frame, not ", describe_type(data))
  }
  # a grouping term that is the response itself (v ~ v, v ~ g + v): model.frame()
  # would keep one column for both and fit every value as one dataset
  tt <- tryCatch(stats::terms(f, data = data), error = function(e) NULL)
  factors <- attr(tt, "factors")
  if (length(factors) > 0 && identical(attr(tt, "response"), 1L) && any(factors[1L, ] > 0)) {
    stop_arg(labels$formula, " groups by its own values `", rownames(factors)[1L],
             "`: the right-hand side names the grouping column(s) that say which dataset each ",
             "row belongs to, e.g. ", rownames(factors)[1L], " ~ subject, or ", rownames(factors)[1L],
             " ~ 1 for one dataset")
  }
  fenv <- if (is.null(environment(f))) env else environment(f)
  vars <- setdiff(all.vars(f), ".")
  in_data <- vars %in% names(data)
  # a variable, not a function of the same name (t, c, df), must be there
  visible <- function(v) {
    x <- get0(v, envir = fenv)
    !is.null(x) && !is.function(x)
  }
  absent <- vars[!in_data & !vapply(vars, visible, NA)]
  if (length(absent) > 0) {
    stop_arg(labels$formula, " uses ", paste0("`", absent, "`", collapse = ", "), ", which ",
             if (length(absent) == 1) "is" else "are",
             if (is.null(data)) " not a variable" else paste0(" neither a column of ", labels$data, " nor a variable"),
             " where the formula was written")
  }
  for (v in vars[in_data]) {
    if (is.list(data[[v]])) {
      stop_arg("column `", v, "` of ", labels$data, " is a list column; the values and the groups ",
               "must be vectors (groups: factor, character, numeric or logical)")
    }
  }
  build <- call("model.frame", formula = f, data = data, subset = subset,
                na.action = stats::na.pass, drop.unused.levels = TRUE)
  build[[1L]] <- quote(stats::model.frame)
  if (is.null(subset)) build$subset <- NULL
  # weights as lm() takes them: evaluated in the data, a row's weight
  # dropped with it
  if (!is.null(weights)) build$weights <- weights
  mf <- tryCatch(eval(build, env), error = function(e) {
    stop_arg("cannot make the datasets from ", labels$formula, ": ", conditionMessage(e))
  })
  if (nrow(mf) == 0L) {
    stop_arg(labels$formula, " with ", labels$data, if (!is.null(subset)) " and `subset`",
             " gives no rows to fit")
  }
  y <- mf[[1L]]
  surv <- if (inherits(y, "Surv")) surv_rows(y, paste0("the response of ", labels$formula))
  if (!is.null(surv)) y <- surv$value
  multivariate <- length(dim(y)) == 2L && ncol(y) > 1L
  if (multivariate) {
    if (!is.numeric(y)) {
      stop_arg("the values `", paste(deparse(f[[2L]], width.cutoff = 500L), collapse = " "), "` of ",
               labels$formula, " are a matrix of ", ncol(y), " columns that must be numeric, not ",
               describe_type(y))
    }
    # cbind() names the columns it was given as variables; the others x<j>
    variables <- paste0("x", seq_len(ncol(y)))
    given <- colnames(y)
    if (!is.null(given)) {
      ok <- !is.na(given) & nzchar(given)
      variables[ok] <- given[ok]
    }
  } else if (!is.numeric(y) || is.factor(y) || !is.null(dim(y))) {
    stop_arg("the values `", paste(deparse(f[[2L]], width.cutoff = 500L), collapse = " "), "` of ",
             labels$formula, " must be a numeric vector, not ", describe_type(y))
  }
  # the grouping variables: the columns after the response, but not the
  # weights model.frame() adds as "(weights)"
  groups <- as.list(mf[-1L])
  groups <- groups[names(groups) != "(weights)"]
  for (v in names(groups)) {
    if (is.list(groups[[v]]) || !is.null(dim(groups[[v]]))) {
      stop_arg("the group `", v, "` of ", labels$formula, " must be a vector ",
               "(factor, character, numeric or logical), not ", describe_type(groups[[v]]))
    }
  }
  # groups as split() would make them, before any row is dropped
  g <- if (length(groups) > 0) interaction(groups, drop = TRUE, sep = ":")
  if (!is.null(g) && nlevels(g) == 0L) {
    # every row's group is missing: the rows belong to no dataset
    na_rows <- vapply(groups, function(v) sum(is.na(v)), 0L)
    na_rows <- na_rows[na_rows > 0]
    stop_arg(labels$formula, " with ", labels$data, if (!is.null(subset)) " and `subset`",
             " gives no rows to fit: every row's group is missing (",
             paste0("`", names(na_rows), "` missing in ", na_rows, " of ", nrow(mf), " rows", collapse = ", "),
             ")")
  }
  kept_frame <- tryCatch(na$fun(mf), error = function(e) stop_arg(na$label, " stopped the call: ", conditionMessage(e)))
  if (!is.data.frame(kept_frame)) {
    stop_arg(na$label, " must return the rows it keeps, as na.omit does, not ", describe_type(kept_frame))
  }
  keep <- match(row.names(kept_frame), row.names(mf))
  values <- if (!multivariate) as.double(y[keep])
  # each value's row in the caller's data: model.frame keeps its row names
  # (variables found where the formula was written are numbered 1..n); a
  # row that `subset` made of a missing condition is named "NA" and is
  # from no row (NA here, and its group is missing too)
  rows <- if (is.data.frame(data)) {
    match(row.names(mf), row.names(data))
  } else {
    suppressWarnings(as.integer(row.names(mf)))
  }
  rows <- rows[keep]
  if (is.null(g)) {
    datasets <- if (multivariate) list(bare_matrix(y[keep, , drop = FALSE], variables)) else list(values)
    rows <- list(rows)
    n_dropped <- nrow(mf) - length(keep)
    keys <- NULL
  } else {
    datasets <- if (multivariate) {
      # a group whose rows were all dropped is a matrix of no rows
      lapply(split(keep, g[keep]), function(r) bare_matrix(y[r, , drop = FALSE], variables))
    } else {
      split(values, g[keep])
    }
    rows <- unname(split(rows, g[keep]))
    dropped <- rep(TRUE, nrow(mf))
    dropped[keep] <- FALSE
    n_dropped <- tabulate(as.integer(g)[dropped], nlevels(g))
    # one row per dataset: its value of every grouping variable
    first <- match(levels(g), as.character(g))
    keys <- as.data.frame(lapply(groups, function(v) v[first]), optional = TRUE, stringsAsFactors = FALSE)
    names(keys) <- names(groups)
  }
  w <- stats::model.weights(kept_frame)
  if (!is.null(w)) {
    if (!is.numeric(w) || is.factor(w)) stop_arg("`weights` must be numeric, not ", describe_type(w))
    w <- as.double(w)
    w <- if (is.null(g)) list(w) else unname(split(w, g[keep]))
  }
  censored <- NULL
  if (!is.null(surv)) {
    # the censored rows leave the values: each dataset's exact ones, and
    # the windows of its censored ones
    parts <- lapply(surv, function(v) v[keep])
    by <- if (is.null(g)) list(seq_along(keep)) else unname(split(seq_along(keep), g[keep]))
    # (a censored row's weight is its window's count)
    censored <- lapply(seq_along(by), function(k) {
      censored_windows(lapply(parts, function(v) v[by[[k]]]), if (is.null(w)) 1 else w[[k]])
    })
    exact <- lapply(by, function(i) parts$exact[i])
    datasets <- stats::setNames(Map(function(d, e) d[e], datasets, exact), names(datasets))
    rows <- Map(function(r, e) r[e], rows, exact)
    if (!is.null(w)) w <- Map(function(wi, e) wi[e], w, exact)
  }
  out <- list(datasets = datasets, n_dropped = as.integer(n_dropped),
              na.action = attr(kept_frame, "na.action"), groups = keys, rows = rows,
              response = if (is.null(response)) paste(deparse(f[[2L]], width.cutoff = 500L), collapse = " ") else response,
              multivariate = multivariate, variables = if (multivariate) variables)
  if (!is.null(w)) out$weights <- w
  if (!is.null(censored)) out$censored <- censored
  out
}
