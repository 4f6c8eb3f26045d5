# The one constructor of a `bulkem` result: every path that makes one (a
# plain call, several Ks, a sharded call, the bootstrap's fits, c(), `[`)
# goes through new_bulkem(), so the result's attributes are written in one
# place and a result is the same whichever path made it.

# The attributes a result may carry, in the order they are set. See
# ?bulkem ("Value") for what each means.
result_attributes <- c("engine", "threads", "elapsed", "seed", "family", "num.components",
                       "em_iterations", "kernel_launches", "kernel_seconds", "timings",
                       "shards", "na.action", "groups", "response", "covariance", "variables",
                       "weighted")

# `fits`: a list of bulkem_fit (names kept); `...`: attributes by name (of
# result_attributes; NULL ones are left out). `groups`, when given, is a
# data frame with one row per fit: the datasets' group keys.
new_bulkem <- function(fits, ...) {
  attrs <- list(...)
  unknown <- setdiff(names(attrs), result_attributes)
  if (length(unknown) > 0 || is.null(names(attrs)) && length(attrs) > 0) {
    raise(bulkem_condition("internal", paste0("new_bulkem(): unknown attribute(s) ",
                                              paste(unknown, collapse = ", "))))
  }
  fits <- unclass(fits)
  # the elements are the glue's bulkem_fit lists (or a result's): not looked
  # at one by one, which over 200,000 fits costs a garbage collection of
  # R's whole heap (measured on B5: about a second)
  if (!is.list(fits)) {
    raise(bulkem_condition("internal", "new_bulkem(): the fits must be a list"))
  }
  g <- attrs$groups
  if (!is.null(g) && (!is.data.frame(g) || nrow(g) != length(fits) || ncol(g) == 0)) {
    attrs$groups <- NULL
  } else if (!is.null(g)) {
    row.names(attrs$groups) <- NULL
  }
  attrs <- attrs[intersect(result_attributes, names(attrs))]
  attrs <- attrs[!vapply(attrs, is.null, NA)]
  # multivariate fits (R/multivariate.R) make a multivariate result: every
  # fit of a result has the same data shape, so the first says which
  mv <- length(fits) > 0 && inherits(fits[[1]], "bulkem_mvfit")
  attributes(fits) <- c(list(names = names(fits), class = c(if (mv) "bulkem_mv", "bulkem")), attrs)
  fits
}

# The attributes of result `x` that new_bulkem() takes.
result_attrs <- function(x) {
  a <- attributes(x)
  a[intersect(result_attributes, names(a))]
}

# The result's group keys for datasets `idx` (one row each), or NULL.
result_groups <- function(x, idx = seq_along(x)) {
  g <- attr(x, "groups")
  if (is.null(g)) return(NULL)
  out <- g[idx, , drop = FALSE]
  row.names(out) <- NULL
  out
}

# A table whose first column is `dataset` (indices `idx` into `x` on its
# rows), with the result's group columns put after it. A group column named
# like a column of the table is given the suffix ".group".
with_group_columns <- function(out, x, idx) {
  keys <- result_groups(x, idx)
  if (is.null(keys)) return(out)
  clash <- names(keys) %in% names(out)
  names(keys)[clash] <- paste0(names(keys)[clash], ".group")
  out <- cbind(out[1], keys, out[-1])
  row.names(out) <- NULL
  out
}
