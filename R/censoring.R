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
# flat (lower, upper, count) triples the core takes, each row's count its
# weight (`weights`: one per row, or 1).
censored_windows <- function(rows, weights = 1) {
  counts <- rep_len(as.double(weights), length(rows$exact))
  out <- rbind(rows$lower[!rows$exact], rows$upper[!rows$exact], counts[!rows$exact])
  as.double(out)
}

# A list of Surv objects as datasets: the exact values, one vector per
# dataset, and the censored windows (`censored`, a list parallel to them);
# rows with a missing time or status are left out, as NA values are.
# `weights` (NULL, or a list parallel to the datasets of NULLs and vectors
# with one weight per row, as bulkem() takes them): an exact row's weight
# goes with its value (`weights` of the result), a censored row's is its
# window's count, as the formula interface does it.
datasets_from_surv <- function(datasets, weights = NULL) {
  ok <- vapply(datasets, is_surv, NA)
  if (!all(ok)) {
    stop_arg("`datasets` mixes Surv objects (censored values) with other data: give every dataset ",
             "as a Surv object, e.g. survival::Surv(rt, observed)")
  }
  if (is.numeric(weights) && !is.list(weights) && length(datasets) == 1) weights <- list(weights)
  if (!is.null(weights) && (!is.list(weights) || is.data.frame(weights) || length(weights) != length(datasets))) {
    stop_arg("`weights` must be a list of ", length(datasets), " numeric vectors, one per dataset and ",
             "one weight per row of its Surv object (or NULL for a dataset of equal weights), not ",
             describe_type(weights))
  }
  parts <- lapply(seq_along(datasets), function(i) {
    rows <- surv_rows(datasets[[i]], paste0("dataset ", i))
    wi <- weights[[i]]
    if (!is.null(wi) && (!is.numeric(wi) || is.factor(wi) || !is.null(dim(wi)) ||
                         length(wi) != length(rows$value) || !all(is.finite(wi) & wi >= 0))) {
      stop_arg("`weights[[", i, "]]` must be finite numbers >= 0, one per row of its Surv object (",
               length(rows$value), " rows), not ", describe_type(wi))
    }
    keep <- !is.na(rows$value) & !is.na(rows$exact)
    rows <- lapply(rows, function(v) v[keep])
    wi <- if (!is.null(wi)) as.double(wi)[keep]
    list(values = rows$value[rows$exact], censored = censored_windows(rows, if (is.null(wi)) 1 else wi),
         weights = if (!is.null(wi)) wi[rows$exact], dropped = sum(!keep))
  })
  w <- lapply(parts, `[[`, "weights")
  list(datasets = stats::setNames(lapply(parts, `[[`, "values"), names(datasets)),
       censored = lapply(parts, `[[`, "censored"),
       weights = if (!all(vapply(w, is.null, NA))) w,
       n_dropped = vapply(parts, `[[`, 0L, "dropped"))
}

# The exact values `values` and censored windows `windows` (flat triples)
# of a dataset as one Surv object of type "interval2" (NA for an open end),
# which datasets_from_surv() takes apart into the same values and windows
# (a window of count c repeated c times; with `repeated = FALSE` once, its
# count then the row's weight): what a future shard and a shifted fit's
# steps get (R/future.R, R/shift.R).
as_surv <- function(values, windows, repeated = TRUE) {
  m <- matrix(windows, nrow = 3)
  times <- if (repeated) rep(seq_len(ncol(m)), m[3, ]) else seq_len(ncol(m))
  open <- function(v) ifelse(is.infinite(v), NA_real_, v)
  survival::Surv(c(values, open(m[1, times])), c(values, open(m[2, times])), type = "interval2")
}

# A list of histograms (hist(x, plot = FALSE), or lists with `breaks` and
# `counts`) as datasets: each bin's count interval-censored in its window
# (lower, upper), and, for the rescaling and the starts, the midpoints of
# the bins that hold any as values of weight 0 (which the likelihood does
# not see).
datasets_from_histograms <- function(datasets) {
  parts <- lapply(seq_along(datasets), function(i) {
    h <- datasets[[i]]
    b <- as.double(h$breaks)
    k <- as.double(h$counts)
    # finite breaks, but for an open first (-Inf) or last (Inf) bin
    inner <- b[-c(1, length(b))]
    if (!is.numeric(h$breaks) || !is.numeric(h$counts) || length(b) != length(k) + 1 || anyNA(b) ||
        is.unsorted(b, strictly = TRUE) || anyNA(k) || any(k < 0) || !all(is.finite(inner)) ||
        identical(b[1], Inf) || identical(b[length(b)], -Inf) || !any(is.finite(b))) {
      stop_arg("dataset ", i, " is a histogram whose `breaks` must be increasing and finite (but for a first ",
               "-Inf and a last Inf) and whose `counts` (one per bin) must be numbers >= 0")
    }
    on <- k > 0
    lo <- b[-length(b)][on]
    hi <- b[-1][on]
    # an open bin's value (for the rescaling and the starts) is its finite edge
    mid <- ifelse(is.finite(lo) & is.finite(hi), (lo + hi) / 2, ifelse(is.finite(lo), lo, hi))
    list(values = mid, censored = as.double(rbind(lo, hi, k[on])))
  })
  list(datasets = stats::setNames(lapply(parts, `[[`, "values"), names(datasets)),
       weights = lapply(parts, function(p) numeric(length(p$values))),
       censored = lapply(parts, `[[`, "censored"))
}

# Whether a dataset is a Surv object (censored values).
is_surv <- function(d) inherits(d, "Surv")

# Whether a fit was made of a histogram (binned data): its kept windows
# are its bins.
is_binned_fit <- function(f) isTRUE(attr(f$censored_windows, "binned"))

# Whether a dataset is a histogram.
is_histogram <- function(d) inherits(d, "histogram") || (is.list(d) && !is.null(d$breaks) && !is.null(d$counts))

# How many censored values a fit's dataset had (the sum of their counts),
# for print().
censored_count <- function(fit) if (is.null(fit$censored)) 0 else fit$censored
