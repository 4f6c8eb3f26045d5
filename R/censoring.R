# Censored data (issue 34): a survival::Surv() response, in a formula
# (`Surv(rt, observed) ~ subject`) or as the datasets of a list, split into
# the exact values bulkem() fits as before and, per dataset, the windows its
# censored values are known to lie in (right-censored at c: (c, Inf); left:
# (-Inf, c); interval-censored: (lower, upper)), which the core adds to the
# likelihood as log(F(upper) - F(lower)) each (src/rust/core/src/truncation.rs).

# A Surv object's rows: `value` (the time, the exact value where `exact`),
# and each row's window (lower, upper) where it is censored.
surv_rows <- function(y, what) {
  type <- attr(y, "type")
  if (!type %in% c("right", "left", "interval")) {
    stop_arg(what, " is a Surv object of type \"", type, "\": bulkem fits right-, left- and ",
             "interval-censored values (Surv types \"right\", \"left\", \"interval\", \"interval2\")")
  }
  y <- unclass(y)
  st <- y[, "status"]
  t1 <- if (type == "interval") y[, "time1"] else y[, "time"]
  t2 <- if (type == "interval") y[, "time2"] else rep(NA_real_, length(t1))
  # right: 1 observed, 0 above t1; left: 1 observed, 0 below t1; interval:
  # 1 observed, 0 above t1, 2 below t1, 3 in (t1, t2)
  lower <- switch(type, right = t1, left = rep(-Inf, length(t1)),
                  interval = ifelse(st == 2, -Inf, t1))
  upper <- switch(type, right = rep(Inf, length(t1)), left = t1,
                  interval = ifelse(st == 0, Inf, ifelse(st == 2, t1, t2)))
  list(value = as.double(unclass(t1)), exact = st == 1, lower = as.double(lower), upper = as.double(upper))
}

# The censored rows of one dataset (surv_rows()'s parts for its rows) as the
# flat (lower, upper) pairs the core takes.
censored_windows <- function(rows) {
  out <- rbind(rows$lower[!rows$exact], rows$upper[!rows$exact])
  as.double(out)
}

# A list of Surv objects as datasets: the exact values, one vector per
# dataset, and the censored windows (`censored`, a list parallel to them);
# rows with a missing time or status are left out, as NA values are.
datasets_from_surv <- function(datasets) {
  ok <- vapply(datasets, function(d) inherits(d, "Surv"), NA)
  if (!all(ok)) {
    stop_arg("`datasets` mixes Surv objects (censored values) with other data: give every dataset ",
             "as a Surv object, e.g. survival::Surv(rt, observed)")
  }
  parts <- lapply(seq_along(datasets), function(i) {
    rows <- surv_rows(datasets[[i]], paste0("dataset ", i))
    keep <- !is.na(rows$value) & !is.na(rows$exact)
    rows <- lapply(rows, function(v) v[keep])
    list(values = rows$value[rows$exact], censored = censored_windows(rows), dropped = sum(!keep))
  })
  list(datasets = stats::setNames(lapply(parts, `[[`, "values"), names(datasets)),
       censored = lapply(parts, `[[`, "censored"),
       n_dropped = vapply(parts, `[[`, 0L, "dropped"))
}

# The exact values `values` and censored windows `windows` (flat pairs) of
# a dataset as one Surv object of type "interval2" (NA for an open end),
# which datasets_from_surv() takes apart into the same values and windows:
# what a future shard gets (R/future.R).
as_surv <- function(values, windows) {
  lower <- windows[c(TRUE, FALSE)]
  upper <- windows[c(FALSE, TRUE)]
  open <- function(v) ifelse(is.infinite(v), NA_real_, v)
  survival::Surv(c(values, open(lower)), c(values, open(upper)), type = "interval2")
}

# How many censored values a fit's dataset had, for print().
censored_count <- function(fit) if (is.null(fit$censored)) 0L else as.integer(fit$censored)
