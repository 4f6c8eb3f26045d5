# Argument checks for bulkem(). Each stops with stop_arg() (R/conditions.R),
# with a message that names the argument as the user wrote it; problems with
# one dataset's values are not checked here but reported per dataset by the
# engine (status "invalid").

# A list of datasets or one numeric vector (data frames, formulas and a
# matrix given as `datasets` were dealt with by make_datasets(), R/input.R);
# returns the list of double vectors and which of them hold NA or NaN (for
# drop_missing()). A list of matrices or data frames (multivariate data) is
# checked by check_matrices(), whose value also has `variables`.
# `threads` scan the values (control$threads).
check_datasets <- function(datasets, threads = 1L) {
  if (is.numeric(datasets) && !is.object(datasets)) {
    datasets <- list(datasets)
  }
  if (!is.list(datasets)) {
    stop_arg("`datasets` must be a list of numeric vectors or one numeric ",
             "vector, not ", describe_type(datasets))
  }
  if (length(datasets) == 0) {
    stop_arg("`datasets` is empty: give at least one dataset")
  }
  # one compiled pass over the list (a call may hold hundreds of thousands
  # of datasets): the engine reads double vectors in place
  kinds <- dataset_kinds_(datasets, as.integer(threads))
  if (multivariate_list(datasets, kinds)) return(check_matrices(datasets))
  double <- kinds <= 1L
  if (!all(double)) {
    ok <- kinds[!double] <= 4L
    if (!all(ok)) {
      bad <- which(!double)[which(!ok)[1]]
      stop_arg("`datasets[[", bad, "]]` must be a numeric vector, not ",
               describe_type(datasets[[bad]]),
               if (sum(!ok) > 1) sprintf(" (%d datasets are not numeric)", sum(!ok)))
    }
    datasets[!double] <- lapply(datasets[!double], as.double)
  }
  list(datasets = datasets, has_na = kinds == 1L | kinds == 3L)
}

# Whether a list holds multivariate data: a numeric matrix of two or more
# columns (kind 6; a one-column matrix is its column, univariate), a data
# frame, or a matrix of two or more columns and no rows (which the compiled
# scan counts as an empty vector). Only the few elements that are neither
# numeric vectors with values nor NULL are looked at in R.
multivariate_list <- function(datasets, kinds) {
  if (any(kinds == 6L)) return(TRUE)
  other <- which(kinds == 5L)
  if (length(other) && any(vapply(datasets[other], is.data.frame, NA))) return(TRUE)
  empty <- which(kinds <= 3L & lengths(datasets) == 0L)
  length(empty) > 0 && any(vapply(datasets[empty], function(x) length(dim(x)) == 2L && ncol(x) >= 2L, NA))
}

# A list of multivariate datasets: numeric matrices (or data frames of
# numeric columns, made matrices by as.matrix()), observations in rows, the
# same d >= 2 variables in the columns of every one; the number of rows may
# differ. Returns list(datasets, has_na, variables): the matrices as double
# n_i x d matrices whose only attributes are `dim` and `dimnames =
# list(NULL, variables)`, which of them hold NA or NaN (for
# drop_missing_rows(), R/input.R), and the variables' names: the column
# names of the first dataset that has any (those of every other dataset
# that has any must be the same), "x1", "x2", ... otherwise (also for a
# name that is NA or empty). Infinite values are left for the engine to
# report per dataset.
check_matrices <- function(datasets) {
  frame <- vapply(datasets, is.data.frame, NA)
  ndim <- lengths(lapply(datasets, dim))
  deep <- which(ndim > 2L)
  if (length(deep)) {
    i <- deep[1]
    stop_arg("`datasets[[", i, "]]` is an array of ", paste(dim(datasets[[i]]), collapse = " x "),
             " values: a multivariate dataset is a matrix, one row per observation and one column ",
             "per variable")
  }
  tabular <- ndim == 2L
  mixed <- which(tabular != tabular[1])
  if (length(mixed)) {
    what <- function(i) {
      x <- datasets[[i]]
      if (frame[i]) return(paste0("a data frame of ", nrow(x), " x ", ncol(x)))
      if (tabular[i]) return(paste0("a matrix of ", nrow(x), " x ", ncol(x), " values"))
      if (is.null(x)) return("NULL")
      if (is.numeric(x) && !is.object(x)) return("a numeric vector")
      describe_type(x)
    }
    i <- mixed[1]
    stop_arg("`datasets[[", i, "]]` is ", what(i), " but `datasets[[1]]` is ", what(1),
             ": the datasets of a list are either all numeric vectors (univariate data) or all ",
             "numeric matrices, one row per observation and one column per variable (multivariate data)")
  }
  for (i in which(frame)) {
    df <- datasets[[i]]
    ok <- vapply(df, function(v) is.numeric(v) && is.null(dim(v)), NA)
    if (!all(ok)) {
      bad <- which(!ok)[1]
      stop_arg("column `", names(df)[bad], "` of `datasets[[", i, "]]` (a data frame) must be numeric, not ",
               describe_type(df[[bad]]))
    }
    datasets[i] <- list(as.matrix(df))
  }
  numeric <- vapply(datasets, is.numeric, NA)
  if (!all(numeric)) {
    i <- which(!numeric)[1]
    stop_arg("`datasets[[", i, "]]` must be a numeric matrix, not a matrix ", describe_type(datasets[[i]]))
  }
  d <- vapply(datasets, ncol, 0L)
  few <- which(d < 2L)
  if (length(few)) {
    i <- few[1]
    stop_arg("`datasets[[", i, "]]` has ", d[i], " column", if (d[i] != 1L) "s",
             ": a multivariate dataset has one column per variable, at least 2; give univariate ",
             "data as numeric vectors")
  }
  other <- which(d != d[1])
  if (length(other)) {
    i <- other[1]
    stop_arg("`datasets[[", i, "]]` has ", d[i], " columns but `datasets[[1]]` has ", d[1],
             ": every dataset holds the same variables, one per column")
  }
  d <- d[1]
  names_of <- lapply(datasets, colnames)
  named <- which(!vapply(names_of, is.null, NA))
  variables <- paste0("x", seq_len(d))
  if (length(named)) {
    first <- named[1]
    differ <- named[!vapply(names_of[named], identical, NA, names_of[[first]])]
    if (length(differ)) {
      i <- differ[1]
      shown <- function(nm) paste0("`", nm, "`", collapse = ", ")
      stop_arg("`datasets[[", first, "]]` and `datasets[[", i, "]]` have different column names (",
               shown(names_of[[first]]), " and ", shown(names_of[[i]]),
               "): every dataset holds the same variables, in the same order")
    }
    given <- names_of[[first]]
    ok <- !is.na(given) & nzchar(given)
    variables[ok] <- given[ok]
  }
  datasets <- lapply(datasets, bare_matrix, variables)
  list(datasets = datasets, has_na = vapply(datasets, anyNA, NA), variables = variables)
}

# `x`, a numeric matrix, as the engine reads a multivariate dataset: double,
# with `dim` and `dimnames = list(NULL, variables)` its only attributes
# (not copied when it is so already).
bare_matrix <- function(x, variables) {
  want <- list(dim = dim(x), dimnames = list(NULL, variables))
  if (is.double(x) && identical(attributes(x), want)) return(x)
  if (!is.double(x)) storage.mode(x) <- "double"
  attributes(x) <- want
  x
}

describe_type <- function(x) {
  if (is.factor(x)) return("a factor")
  if (is.data.frame(x)) return("a data frame")
  paste0("of type ", typeof(x), if (is.object(x)) paste0(" (class ", class(x)[1], ")"))
}

check_whole <- function(x, arg, lower, upper) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || !is.finite(x) ||
      x != round(x) || x < lower || x > upper) {
    stop_arg("`", arg, "` must be a single whole number from ",
             format(lower, scientific = FALSE), " to ",
             format(upper, big.mark = ",", scientific = FALSE), ", not ",
             format_value(x))
  }
  x
}

check_components <- function(x) {
  ok <- is.numeric(x) && length(x) >= 1 && !anyNA(x) && all(is.finite(x)) &&
    all(x == round(x)) && all(x >= 1 & x <= max_components()) && !anyDuplicated(x)
  if (!ok) {
    stop_arg("`num.components` must be a whole number from 1 to ", max_components(), ", or several distinct ",
             "ones (e.g. 1:4), not ", format_value(x))
  }
  sort(as.integer(x))
}

check_positive <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || !is.finite(x) || x <= 0) {
    stop_arg("`", arg, "` must be a single positive finite number, not ",
             format_value(x))
  }
  invisible(x)
}

check_flag <- function(x, arg, na_ok = FALSE) {
  if (!is.logical(x) || length(x) != 1 || (!na_ok && is.na(x))) {
    stop_arg("`", arg, "` must be ", if (na_ok) "TRUE, FALSE or NA" else "TRUE or FALSE",
             ", not ", format_value(x))
  }
  invisible(x)
}

# A single number strictly between 0 and 1 (a level or a confidence level).
check_unit <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || x <= 0 || x >= 1) {
    stop_arg("`", arg, "` must be a single number between 0 and 1")
  }
  invisible(x)
}

check_choice <- function(x, arg, choices) {
  # the default is the whole vector of choices: take the first, like match.arg
  if (identical(x, choices)) return(choices[1])
  if (!is.character(x) || length(x) != 1 || is.na(x) || !(x %in% choices)) {
    stop_arg("`", arg, "` must be one of ",
             paste0('"', choices, '"', collapse = ", "), ", not ", format_value(x))
  }
  x
}

format_value <- function(x) {
  if (is.null(x)) return("NULL")
  if (length(x) != 1) return(paste0("a ", typeof(x), " vector of length ", length(x)))
  if (is.character(x)) return(paste0('"', x, '"'))
  if (is.numeric(x) || is.logical(x)) return(format(x))
  describe_type(x)
}



# The cores this R session may use, as parallelly counts them: the fewest of
# the machine's cores, the cgroup (container) limit, options(mc.cores), a
# Slurm/PBS/SGE/LSF allocation and _R_CHECK_LIMIT_CORES_ (R CMD check).
default_threads <- function() {
  max(1L, as.integer(parallelly::availableCores()))
}

# A screen threshold: a number from 0 (the rule off) to `most`.
check_threshold <- function(x, arg, most) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x < 0 || x > most) {
    stop_arg("`", arg, "` must be a single number from 0 (the rule off) to ",
             if (is.finite(most)) most else "any finite value", ", not ", format_value(x))
  }
  invisible(x)
}

# control$devices: CUDA ordinals (0, 1, ...), distinct; NULL: every GPU.
check_devices <- function(x) {
  if (is.null(x)) return(integer(0))
  if (!is.numeric(x) || length(x) == 0 || anyNA(x) || any(x != round(x)) || any(x < 0) ||
      any(x > 1023) || anyDuplicated(x)) {
    stop_arg("`control$devices` must be distinct GPU numbers as bulkem_gpu_info() lists them ",
             "(0, 1, ...), or NULL for every GPU, not ", format_value(x))
  }
  as.integer(x)
}

# An argument of one (lower, upper) pair for every dataset or one pair per
# dataset (a list, NULL where a dataset has none, or a two-column matrix
# with a row per dataset), flattened: the pairs one after the other, NA, NA
# for a dataset without one. `ok(p)` says whether a numeric pair is
# acceptable; `bad(where)` raises the argument's error, `where` saying which
# element (or "").
flatten_pairs <- function(value, n_datasets, ok, bad) {
  pair <- function(p, i = NULL) {
    if (is.null(p)) return(c(NA_real_, NA_real_))
    where <- if (is.null(i)) "" else paste0("; element ", i, " is not")
    if (!is.numeric(p) || length(p) != 2 || anyNA(p) || !ok(p)) bad(where)
    as.double(p)
  }
  if (is.matrix(value)) {
    if (!is.numeric(value) || ncol(value) != 2 || nrow(value) != n_datasets) bad("")
    return(as.double(unlist(lapply(seq_len(nrow(value)), function(i) pair(value[i, ], i)))))
  }
  if (is.list(value) && !is.data.frame(value)) {
    if (length(value) != n_datasets) bad(paste0("; it has ", length(value), " elements"))
    return(as.double(unlist(Map(pair, value, seq_along(value)))))
  }
  pair(value)
}
