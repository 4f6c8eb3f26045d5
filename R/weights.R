# bulkem()'s `weights`: one weight per observation, from a list parallel to
# the datasets or (lm()'s way) a column of the formula's data; checked here
# and handed to the core with the datasets, read in place.

# Whether bulkem()'s `weights` is an expression to evaluate in the data, as
# lm() takes it (a formula or a data frame of values), rather than a value
# (a list of weight vectors, evaluated where bulkem() was called).
weights_in_data <- function(datasets, formula) {
  !is.null(formula) || inherits(datasets, "formula") || is.data.frame(datasets)
}

# The weights of a list of datasets, `w` as the caller gave it, aligned with
# the datasets after `na.action`: `before` are the datasets as given
# (vectors, or matrices with an observation per row), `has_na` which held
# missing values, `after` the datasets kept. An observation dropped for
# being missing takes its weight with it.
weights_of_list <- function(w, before, has_na, after) {
  if (is.numeric(w) && !is.list(w) && length(before) == 1) w <- list(w)
  if (!is.list(w) || is.data.frame(w) || length(w) != length(before)) {
    stop_arg("`weights` must be a list of ", length(before), " numeric vectors, one per dataset ",
             "and as long as it (or NULL for a dataset of equal weights), not ", describe_type(w))
  }
  lapply(seq_along(before), function(i) {
    wi <- w[[i]]
    if (is.null(wi)) return(NULL)
    rows <- is.matrix(before[[i]])
    if (!is.numeric(wi) || is.factor(wi) || !is.null(dim(wi)) || length(wi) != NROW(before[[i]])) {
      stop_arg("`weights[[", i, "]]` must be a numeric vector as long as its dataset (",
               NROW(before[[i]]), if (rows) " rows" else " values", "), not ", describe_type(wi))
    }
    wi <- as.double(wi)
    if (isTRUE(has_na[i])) {
      kept <- if (rows) stats::complete.cases(before[[i]]) else !is.na(before[[i]])
      if (sum(kept) != NROW(after[[i]])) {
        stop_arg("with `weights`, `na.action` must drop exactly the missing values, as na.omit ",
                 "does (dataset ", i, ")")
      }
      wi <- wi[kept]
    }
    wi
  })
}

# The weights checked against the datasets: NULL (none), or a list as
# long as `datasets` of NULLs and vectors as long as their dataset (one
# weight per row of a multivariate dataset), every weight a finite number
# >= 0, at least one positive per dataset; a dataset's weights all 1 are no
# weights.
check_weights <- function(weights, datasets) {
  if (is.null(weights)) return(NULL)
  names <- dataset_names(datasets)
  out <- lapply(seq_along(datasets), function(i) {
    wi <- weights[[i]]
    if (is.null(wi)) return(NULL)
    bad <- which(!is.finite(wi) | wi < 0)
    if (length(bad) > 0) {
      stop_arg("`weights` must be finite numbers >= 0: dataset \"", names[i], "\" has ",
               format_value(wi[bad[1]]), " at position ", bad[1],
               if (length(bad) > 1) paste0(" (and ", length(bad) - 1, " more)"))
    }
    if (length(wi) > 0 && !any(wi > 0)) {
      stop_arg("`weights` of dataset \"", names[i], "\" are all 0: nothing is left to fit")
    }
    if (all(wi == 1)) NULL else wi
  })
  if (all(vapply(out, is.null, NA))) return(NULL)
  out
}
