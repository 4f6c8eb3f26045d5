# The bootstrap of the fits the core's bootstrap (bootstrap_() through
# bootstrap_run()) does not refit: shifted fits (bulkem(shift = TRUE)),
# whose replicates need their shift estimated too, which R/shift.R does
# over bulk core calls; and fits of censored values, whose replicates are
# censored as the data were (or, for histograms, binned by the data's
# breaks). So here, in R, with the result laid out as
# bootstrap_run()'s, for bootstrap_se() and bootstrap_lrt() to read alike:
# each null's B replicates drawn as simulate() draws them (R's generator,
# set from `seed` and the dataset's position), censored into the data's
# windows, then the data and every replicate refitted with K0 + e
# components (shifted by fit_shifted(), stopping at the estimate: no
# interval, no standard errors; else by bulkem()), every dataset of one K
# in one call.
bootstrap_run_r <- function(data, nulls, B, extra, s, report) {
  nd <- length(nulls)
  k0 <- vapply(nulls, function(p) if (is.null(p)) 0L else NROW(p$mu), 0L)
  live <- which(k0 > 0)
  # the replicates of dataset d: draw_samples() of its null, R's generator
  # set to seed + d and put back after
  rng <- simulation_seed(NULL)
  on.exit(assign(".Random.seed", rng$state, envir = .GlobalEnv), add = TRUE)
  reps <- vector("list", nd)
  for (d in live) {
    set.seed((s$seed + d) %% .Machine$integer.max)
    windows <- as.double(nulls[[d]]$windows)
    if (isTRUE(nulls[[d]]$binned)) {
      # a histogram: as many draws as it counted, binned by its breaks
      # (and the open tails beyond them)
      h <- windows_histogram(windows)
      draws <- draw_samples(null_fit(nulls[[d]], s$family), sum(h$counts), B)
      reps[[d]] <- lapply(draws, bin_into, breaks = h$breaks)
      next
    }
    total <- length(data[[d]]) + sum(matrix(windows, nrow = 3)[3, ])
    draws <- draw_samples(null_fit(nulls[[d]], s$family), total, B)
    side <- if (!fixed_censoring(as.double(data[[d]]), windows)) random_censoring(as.double(data[[d]]), windows)
    reps[[d]] <- if (is.null(side)) {
      lapply(draws, censor_into, windows = windows)
    } else {
      # censoring points drawn from their own distribution, estimated
      # from the data (random_censoring_points())
      points <- random_censoring_points(as.double(data[[d]]), windows, side, total, B)
      Map(censor_randomly, draws, points, MoreArgs = list(side = side))
    }
  }
  observed <- lapply(seq_len(nd), function(d) {
    if (isTRUE(nulls[[d]]$binned)) windows_histogram(nulls[[d]]$windows)
    else list(values = data[[d]], windows = nulls[[d]]$windows)
  })
  args <- list(max.iters = s$max.iters, random.inits = s$random.inits, use.gpu = s$use.gpu,
               epsilon = s$epsilon, family = s$family, seed = s$seed, criterion = "bic",
               noise = isTRUE(s$noise), equal.scale = isTRUE(s$equal.scale), control = s$given_control)
  engines <- character()
  out <- lapply(seq_along(extra), function(j) {
    e <- extra[j]
    k <- ifelse(k0 > 0, k0 + e, 0L)
    # by dataset: its own refit (the observed one) and its B replicates'
    refits <- vector("list", nd)
    for (kk in sort(unique(k[live]))) {
      ds <- live[k[live] == kk]
      sets <- unlist(lapply(ds, function(d) c(list(observed[[d]]), reps[[d]])), recursive = FALSE)
      windows <- unlist(lapply(ds, function(d) {
        w <- nulls[[d]]$truncation
        rep(if (length(w) == 2) w else c(NA_real_, NA_real_), B + 1)
      }))
      # a noise support given (NA: each set's own range)
      supports <- if (args$noise) {
        unlist(lapply(ds, function(d) rep(if (length(nulls[[d]]$support) == 2) nulls[[d]]$support else c(NA, NA), B + 1)))
      }
      # values held fixed (test = "none" only: no fit of K + 1 has them)
      held <- if (any(vapply(ds, function(d) !is.null(nulls[[d]]$fixed), NA))) {
        structure(unlist(lapply(ds, function(d) rep(list(nulls[[d]]$fixed), B + 1)), recursive = FALSE),
                  class = "bulkem_fixed")
      }
      fitted <- refit_drawn(sets, windows, c(args, list(num.components = kk, fixed = held)), isTRUE(s$shift),
                            as.double(supports))
      engines <<- c(engines, attr(fitted$result, "engine"))
      for (i in seq_along(ds)) refits[[ds[i]]] <- fitted$fits[(i - 1) * (B + 1) + seq_len(B + 1)]
    }
    if (!is.null(report)) report(j, length(extra))
    drawn_refits(refits, k, B, e, isTRUE(s$shift))
  })
  engine <- paste(unique(engines), collapse = ", ")
  lapply(out, function(r) c(r, list(engine = engine, costs = NULL)))
}

# A null as the fit draw_samples() draws from (with its noise component
# over the fit's support, in the data's units).
null_fit <- function(p, family) {
  f <- list(family = family, fit_success = TRUE, alpha = p$alpha, mu = p$mu, shift = p$shift,
            truncation = p$truncation)
  f[[shape_name(family)]] <- p$shape
  if (isTRUE(p$noise > 0) && length(p$noise_support) == 2) {
    f$noise <- p$noise
    f$noise_support <- p$noise_support
  }
  f
}

# One replicate's draws `x` censored as the data were: each draw inside one
# of the data's censored `windows` (flat lower, upper, count triples,
# disjoint: check_censoring_scheme()) is known only to lie there. Returns
# the exact values and the windows with the replicate's counts (those of
# count 0 dropped).
censor_into <- function(x, windows) {
  if (length(windows) == 0) return(list(values = x, windows = NULL))
  m <- matrix(windows, nrow = 3)
  inside <- vapply(seq_len(ncol(m)), function(j) x > m[1, j] & x < m[2, j], logical(length(x)))
  inside <- matrix(inside, nrow = length(x))
  counts <- colSums(inside)
  on <- counts > 0
  list(values = x[rowSums(inside) == 0],
       windows = if (any(on)) as.double(rbind(m[1, on], m[2, on], counts[on])))
}

# A histogram's bins as bulkem() takes them (breaks and counts) from the
# windows a binned fit keeps (flat lower, upper, count triples of the bins
# that held any): a break at every edge, so that a gap between two such
# bins (bins of count 0 in the data, merged) is a bin of its own.
windows_histogram <- function(windows) {
  m <- matrix(windows, nrow = 3)
  breaks <- sort(unique(c(m[1, ], m[2, ])))
  counts <- numeric(length(breaks) - 1)
  counts[match(m[1, ], breaks)] <- m[3, ]
  list(breaks = breaks, counts = counts)
}

# Draws `x` binned by `breaks` (bins closed on the right, as hist()'s),
# with an open bin below the first break and above the last: the data's
# histogram had none there, which its likelihood counts as such (a
# multinomial whose tails held 0), so a replicate's draws there are kept in
# them, not left out (which would make every replicate a truncated sample
# the fit is not).
bin_into <- function(x, breaks) {
  nb <- length(breaks) - 1
  bin <- findInterval(x, breaks, left.open = TRUE)
  # (a histogram whose outer bins are open already has them)
  below <- is.finite(breaks[1])
  above <- is.finite(breaks[nb + 1])
  counts <- c(if (below) sum(bin < 1), tabulate(bin[bin >= 1 & bin <= nb], nb), if (above) sum(bin > nb))
  list(breaks = c(if (below) -Inf, breaks, if (above) Inf), counts = as.double(counts))
}

# The fits of drawn datasets (`sets`: lists of exact values and censored
# windows, or histograms; `truncation`: flat window pairs, NA where none; `supports`: with
# a noise component, flat support pairs, NA where each set's range):
# shifted by
# fit_shifted() (to the estimate), else by one bulkem() call (Surv objects
# where any set has censored values). Returns the fits and the last bulk
# call's result (its engine).
refit_drawn <- function(sets, truncation, args, shift, supports = numeric(0)) {
  binned <- is_histogram(sets[[1]])
  values <- if (binned) sets else lapply(sets, `[[`, "values")
  names(values) <- paste0("s", seq_along(sets))
  censored <- if (!binned) lapply(sets, `[[`, "windows")
  any_censored <- any(lengths(censored) > 0)
  if (shift) {
    return(fit_shifted(values, NULL, truncation, if (any_censored) censored, args, finish = FALSE,
                       supports = if (!all(is.na(supports))) supports else numeric(0)))
  }
  if (args$noise && !all(is.na(supports))) {
    args$noise.support <- lapply(seq_along(sets), function(i) {
      p <- supports[2 * i - c(1, 0)]
      if (!anyNA(p)) p
    })
  }
  if (any_censored) values <- Map(as_surv, values, lapply(censored, as.double))
  tr <- lapply(seq_along(sets), function(i) {
    w <- truncation[2 * i - c(1, 0)]
    if (!anyNA(w)) w
  })
  call <- c(list(datasets = values, truncation = if (any(lengths(tr) == 2)) tr), args)
  result <- suppressWarnings(do.call(bulkem, call))
  list(fits = unclass(result), result = result)
}

# The refits of one e as bootstrap_run() lays them out: the replicates'
# log-likelihoods, statuses, spurious flags and shifts (B per dataset,
# dataset by dataset, NA where there is no null or no fit), the observed
# ones (one per dataset), and the parameters (K0 + e per replicate, dataset
# by dataset, for the datasets with a null).
drawn_refits <- function(refits, k, B, e, shift) {
  nd <- length(refits)
  ok <- function(f) isTRUE(f$fit_success) && (!shift || !is.null(f$shift))
  field <- function(f, value, kk) if (ok(f)) as.double(value(f)) else rep(NA_real_, kk)
  levels <- c("converged", "max_iters", "failed", "invalid", "not_fitted")
  status_of <- function(f) match(if (ok(f)) f$status else if (is.null(f$status)) "not_fitted" else f$status,
                                 levels, nomatch = match("failed", levels))
  reps <- lapply(seq_len(nd), function(d) if (k[d] > 0) refits[[d]][-1])
  per <- function(fun, v) {
    unlist(lapply(seq_len(nd), function(d) if (k[d] > 0) vapply(reps[[d]], fun, v) else rep(v, B)))
  }
  params <- function(value) {
    unlist(lapply(seq_len(nd), function(d) {
      if (k[d] > 0) unlist(lapply(reps[[d]], field, value = value, kk = k[d]))
    }))
  }
  obs <- lapply(seq_len(nd), function(d) if (k[d] > 0) refits[[d]][[1]])
  list(extra = e,
       loglik = per(function(f) if (ok(f)) f$loglik else NA_real_, NA_real_),
       status = per(status_of, NA_integer_), status_levels = levels,
       spurious = per(function(f) isTRUE(f$spurious), NA),
       shift = if (shift) per(function(f) if (ok(f)) f$shift else NA_real_, NA_real_),
       observed_loglik = vapply(obs, function(f) if (ok(f)) f$loglik else NA_real_, 0),
       observed_status = vapply(obs, status_of, 0L),
       observed_spurious = vapply(obs, function(f) isTRUE(f$spurious), NA),
       alpha = params(function(f) f$alpha), mu = params(function(f) f$mu), shape = params(fit_shape),
       df = NULL,
       # the noise weight of each replicate of a dataset with a null (0
       # without a noise component)
       noise = unlist(lapply(seq_len(nd), function(d) {
         if (k[d] > 0) vapply(reps[[d]], function(f) if (!ok(f)) NA_real_ else if (has_noise(f)) f$noise else 0, 0)
       })))
}

# Censored windows (flat lower, upper, count triples) with the counts of
# equal windows summed (a deadline's rows are one window), in order.
merge_windows <- function(w) {
  m <- matrix(as.double(w), nrow = 3)
  if (ncol(m) == 0) return(numeric(0))
  key <- paste(m[1, ], m[2, ])
  first <- !duplicated(key)
  counts <- tapply(m[3, ], factor(key, levels = key[first]), sum)
  out <- rbind(m[1, first], m[2, first], as.double(counts))
  as.double(out[, order(out[1, ], out[2, ]), drop = FALSE])
}

# The censored values of the fits (`items`), checked: the bootstrap draws
# each replicate and censors it into the data's windows, which needs the
# windows kept (keep.data), and either disjoint windows holding none of the
# data's exact values (a fixed censoring scheme, such as a deadline) or
# random censoring on one side (random_censoring()); histograms
# (binned data: every value in a bin, drawn and binned by its breaks) all
# of them or none. Returns whether any fit has censored values.
bootstrap_censoring <- function(items) {
  censored <- vapply(items, function(f) isTRUE(f$censored > 0), NA, USE.NAMES = FALSE)
  if (!any(censored)) return(FALSE)
  binned <- vapply(items[censored], is_binned_fit, NA)
  if (any(binned) && (!all(binned) || !all(censored))) {
    stop_arg("`fits` mix histograms (binned data) with other data: bootstrap them in separate calls")
  }
  for (d in which(censored)) {
    f <- items[[d]]
    w <- f$censored_windows
    if (is.null(w)) {
      stop_arg("`fits` were fitted to censored values (a Surv response) without their data: ",
               "bulkem_bootstrap() draws replicates censored as the data were; fit with ",
               "control = list(keep.data = TRUE)")
    }
    # a histogram's midpoints (weight 0, for the starts) lie in its bins
    if (is_binned_fit(f)) next
    x <- as.double(f$data)
    fixed <- fixed_censoring(x, w)
    if (!fixed && is.null(random_censoring(x, w))) {
      stop_arg("dataset ", d, " of `fits` has censored values whose windows overlap or hold observed ",
               "values and are not all on one side (right-censored at several points, or left-censored): ",
               "bulkem_bootstrap() draws replicates censored by a fixed scheme (such as one deadline), ",
               "or by random censoring on one side")
    }
  }
  TRUE
}

# Whether censored `windows` (flat triples) are a fixed scheme for exact
# values `x`: disjoint windows holding none of them (a deadline, a
# detection limit), each draw falling in one censored to it (censor_into()).
fixed_censoring <- function(x, windows) {
  m <- matrix(merge_windows(windows), nrow = 3)
  overlap <- ncol(m) > 1 && any(m[2, -ncol(m)] > m[1, -1])
  inside <- any(vapply(seq_len(ncol(m)), function(j) any(x > m[1, j] & x < m[2, j]), NA))
  !overlap && !inside
}

# Random censoring (each value censored at its own point, e.g. a deadline
# that varies from trial to trial), which the fixed scheme of censor_into()
# cannot draw: "right" where every censored window is (c, Inf), "left"
# where every one is (-Inf, c), else NULL (the fixed scheme, or a mix the
# bootstrap has no model for). `x`: the exact values; `windows`: the flat
# lower, upper, count triples.
random_censoring <- function(x, windows) {
  m <- matrix(as.double(windows), nrow = 3)
  if (ncol(m) == 0) return(NULL)
  if (all(is.infinite(m[2, ]) & m[2, ] > 0 & is.finite(m[1, ]))) return("right")
  if (all(is.infinite(m[1, ]) & m[1, ] < 0 & is.finite(m[2, ]))) return("left")
  NULL
}

# For B replicates of n values each, the censoring points drawn from the
# censoring distribution the data show: the reverse Kaplan-Meier estimate
# (survival::survfit() with the censored values as the events and the
# exact ones as censored, the exact value a lower bound of its own
# censoring point), its mass beyond the last point at Inf (never
# censored). `side` "left" does the same on -x. Returns a list of B
# vectors.
random_censoring_points <- function(x, windows, side, n, B) {
  if (!requireNamespace("survival", quietly = TRUE)) {
    stop_arg("bootstrapping randomly censored values needs the survival package (install.packages(\"survival\"))")
  }
  m <- matrix(as.double(windows), nrow = 3)
  flip <- if (side == "left") -1 else 1
  points <- flip * (if (side == "left") m[2, ] else m[1, ])
  time <- c(flip * x, rep(points, m[3, ]))
  event <- c(rep(0, length(x)), rep(1, sum(m[3, ])))
  km <- survival::survfit(survival::Surv(time, event) ~ 1)
  at <- km$time[km$n.event > 0]
  surv <- km$surv[km$n.event > 0]
  jump <- -diff(c(1, surv))
  beyond <- max(0, utils::tail(surv, 1))
  lapply(seq_len(B), function(b) {
    c_star <- sample(c(at, Inf), n, replace = TRUE, prob = c(jump, beyond))
    flip * c_star
  })
}

# One replicate's draws `x` randomly censored at `points` (one per draw):
# on the right, a draw above its point is known only to exceed it; on the
# left, a draw below its point only to lie below it. Returns the exact
# values and the windows (flat lower, upper, count triples, equal points
# merged) as censor_into() does.
censor_randomly <- function(x, points, side) {
  cut <- if (side == "right") x > points else x < points
  if (!any(cut)) return(list(values = x, windows = NULL))
  counts <- table(points[cut])
  at <- as.double(names(counts))
  lower <- if (side == "right") at else rep(-Inf, length(at))
  upper <- if (side == "right") rep(Inf, length(at)) else at
  list(values = x[!cut], windows = as.double(rbind(lower, upper, as.double(counts))))
}
