# The bootstrap of shifted fits (bulkem(shift = TRUE), R/shift.R). The
# core's bootstrap (bootstrap_() through bootstrap_run()) draws and refits
# mixtures without a shift; a shifted fit's replicates need their shift
# estimated too, which R/shift.R does over bulk core calls. So here, in R,
# with the result laid out as bootstrap_run()'s, for bootstrap_se() and
# bootstrap_lrt() to read alike: each null's B replicates drawn as
# simulate() draws them (R's generator, set from `seed` and the dataset's
# position), then the data and every replicate refitted shifted with
# K0 + e components by fit_shifted() (stopping at the estimate: no
# interval, no standard errors), every dataset of one K in one search.
bootstrap_run_shifted <- function(data, nulls, B, extra, s, report) {
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
    reps[[d]] <- as.list(draw_samples(null_fit(nulls[[d]], s$family), length(data[[d]]), B))
  }
  args <- list(max.iters = s$max.iters, random.inits = s$random.inits, use.gpu = s$use.gpu,
               epsilon = s$epsilon, family = s$family, seed = s$seed, criterion = "bic",
               control = s$given_control)
  engines <- character()
  out <- lapply(seq_along(extra), function(j) {
    e <- extra[j]
    k <- ifelse(k0 > 0, k0 + e, 0L)
    # by dataset: its own refit (the observed one) and its B replicates'
    refits <- vector("list", nd)
    for (kk in sort(unique(k[live]))) {
      ds <- live[k[live] == kk]
      values <- unlist(lapply(ds, function(d) c(list(data[[d]]), reps[[d]])), recursive = FALSE)
      names(values) <- paste0("d", rep(ds, each = B + 1), "_", rep(0:B, length(ds)))
      windows <- unlist(lapply(ds, function(d) {
        w <- nulls[[d]]$truncation
        rep(if (length(w) == 2) w else c(NA_real_, NA_real_), B + 1)
      }))
      fitted <- fit_shifted(values, NULL, windows, NULL, c(args, list(num.components = kk)), finish = FALSE)
      engines <<- c(engines, attr(fitted$result, "engine"))
      for (i in seq_along(ds)) refits[[ds[i]]] <- fitted$fits[(i - 1) * (B + 1) + seq_len(B + 1)]
    }
    if (!is.null(report)) report(j, length(extra))
    shifted_refits(refits, k, B, e)
  })
  engine <- paste(unique(engines), collapse = ", ")
  lapply(out, function(r) c(r, list(engine = engine, costs = NULL)))
}

# A null as the fit draw_samples() draws from.
null_fit <- function(p, family) {
  f <- list(family = family, fit_success = TRUE, alpha = p$alpha, mu = p$mu, shift = p$shift,
            truncation = p$truncation)
  f[[shape_name(family)]] <- p$shape
  f
}

# The refits of one e as bootstrap_run() lays them out: the replicates'
# log-likelihoods, statuses, spurious flags and shifts (B per dataset,
# dataset by dataset, NA where there is no null or no shifted fit), the
# observed ones (one per dataset), and the parameters (K0 + e per
# replicate, dataset by dataset, for the datasets with a null).
shifted_refits <- function(refits, k, B, e) {
  nd <- length(refits)
  ok <- function(f) isTRUE(f$fit_success) && !is.null(f$shift)
  field <- function(f, name, kk) if (ok(f)) as.double(f[[name]]) else rep(NA_real_, kk)
  levels <- c("converged", "max_iters", "failed", "invalid", "not_fitted")
  status_of <- function(f) match(if (ok(f)) f$status else if (is.null(f$status)) "not_fitted" else f$status,
                                 levels, nomatch = match("failed", levels))
  empty <- function(v) rep(v, B)
  reps <- lapply(seq_len(nd), function(d) if (k[d] > 0) refits[[d]][-1])
  per <- function(fun, v) unlist(lapply(seq_len(nd), function(d) if (k[d] > 0) vapply(reps[[d]], fun, v) else empty(v)))
  params <- function(name) {
    unlist(lapply(seq_len(nd), function(d) {
      if (k[d] > 0) unlist(lapply(reps[[d]], field, name = name, kk = k[d]))
    }))
  }
  obs <- lapply(seq_len(nd), function(d) if (k[d] > 0) refits[[d]][[1]])
  list(extra = e,
       loglik = per(function(f) if (ok(f)) f$loglik else NA_real_, NA_real_),
       status = per(status_of, NA_integer_), status_levels = levels,
       spurious = per(function(f) isTRUE(f$spurious), NA),
       shift = per(function(f) if (ok(f)) f$shift else NA_real_, NA_real_),
       observed_loglik = vapply(obs, function(f) if (ok(f)) f$loglik else NA_real_, 0),
       observed_status = vapply(obs, status_of, 0L),
       observed_spurious = vapply(obs, function(f) isTRUE(f$spurious), NA),
       alpha = params("alpha"), mu = params("mu"),
       shape = unlist(lapply(seq_len(nd), function(d) {
         if (k[d] > 0) unlist(lapply(reps[[d]], function(f) if (ok(f)) as.double(fit_shape(f)) else rep(NA_real_, k[d])))
       })),
       df = NULL, noise = rep(0, sum(k > 0) * B))
}
