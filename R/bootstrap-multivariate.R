# bulkem_bootstrap() of multivariate fits (issues 33 and 34): the
# replicates drawn in R as simulate() draws them (mv_draws(), R's generator
# set from `seed` and the dataset's position), refitted by bulkem() on the
# engine it chooses (the CPU or cuda-batched), every replicate of one K in
# one bulk call (in chunks of bounded size). The test of K vs K + 1 is
# bootstrap_lrt()'s, with bootstrap_run_mv() in place of the core's run;
# the standard errors match each replicate's components to the estimate's
# by Mahalanobis distance.

# The datasets as fitted, as matrices: kept in the fits or given (rows with
# a missing value dropped, as na.omit did), checked against the fits'
# sizes; frequency-weighted fits as the data they stand for (each row
# repeated as often as its weight says: replicates of the sum of the
# weights, refitted without weights).
bootstrap_data_mv <- function(items, data, weighted, variables) {
  nd <- length(items)
  d <- length(variables)
  if (weighted) return(bootstrap_weighted_data(items, data))
  if (is.null(data)) {
    if (!all(vapply(items, function(f) !is.null(f$data), NA, USE.NAMES = FALSE))) {
      stop_arg("the fits hold no data: fit with control = list(keep.data = TRUE), or pass `data` ",
               "(a list with one numeric matrix per dataset)")
    }
    data <- lapply(items, `[[`, "data")
  }
  ok <- function(x) (is.matrix(x) || is.data.frame(x)) && NCOL(x) == d &&
    all(vapply(as.data.frame(x), function(v) is.numeric(v) && !is.object(v), NA))
  if (!is.list(data) || is.data.frame(data) || length(data) != nd || !all(vapply(data, ok, NA))) {
    stop_arg("`data` must be a list with one numeric matrix of ", d, " columns (",
             paste(variables, collapse = ", "), ") per dataset (", nd, ")")
  }
  data <- lapply(data, function(x) {
    x <- unname(as.matrix(x))
    storage.mode(x) <- "double"
    x[stats::complete.cases(x), , drop = FALSE]
  })
  n <- vapply(data, nrow, 0L)
  bad <- which(vapply(items, has_fit, NA) & n != vapply(items, function(f) as.integer(f$n), 0L))
  if (length(bad) > 0) {
    stop_arg("`data` does not match the fits: dataset ", bad[1], " has ", n[bad[1]],
             " complete rows, its fit ", items[[bad[1]]]$n)
  }
  unname(data)
}

# A noise fit's box as the user gave it, or NULL where it is its data's
# bounding box (the default: each replicate's refit takes its own box, as
# a fit of that replicate would).
given_box <- function(fit, x) {
  if (!mv_has_noise(fit) || NROW(x) == 0) return(NULL)
  box <- unname(fit$noise_support)
  own <- cbind(apply(x, 2, min), apply(x, 2, max))
  if (identical(as.double(box), as.double(own))) NULL else box
}

# The settings of a multivariate bootstrap's refits (bootstrap_run_mv()),
# checked: the fits' family, structure and noise (all with a noise
# component or none), t's degrees of freedom where bulkem(df =) fixed them
# (NULL where estimated), and bulkem_bootstrap()'s checked arguments.
bootstrap_settings_mv <- function(fits, items, data, control, max.iters, epsilon, random.inits, seed,
                                  use.gpu) {
  # (control settings multivariate fits do not take: bulkem()'s refits
  # refuse them, check_multivariate_args())
  fitted <- vapply(items, has_fit, NA, USE.NAMES = FALSE)
  noisy <- vapply(items, mv_has_noise, NA, USE.NAMES = FALSE)
  if (any(noisy) && any(fitted & !noisy)) {
    stop_arg("`fits` mix fits with a noise component (noise = TRUE) and fits without one: ",
             "bootstrap them separately")
  }
  family <- attr(fits, "family")
  covariance <- attr(fits, "covariance")
  if (is.null(family) || is.null(covariance)) {
    used <- items[fitted]
    if (length(unique(vapply(used, mv_family_name, ""))) > 1 ||
        length(unique(vapply(used, `[[`, "", "covariance"))) > 1) {
      stop_arg("`fits` mix families or covariance structures: bootstrap them separately")
    }
    if (length(used) > 0) {
      family <- mv_family_name(used[[1]])
      covariance <- used[[1]]$covariance
    }
  }
  fixed <- Filter(function(f) has_fit(f) && mv_is_t(f) && isTRUE(attr(f$df, "fixed")), items)
  df <- if (length(fixed) > 0) unique(unlist(lapply(fixed, function(f) as.double(f$df))))
  if (length(df) > 1) {
    stop_arg("`fits` are t fits whose degrees of freedom were fixed to several values: ",
             "bulkem_bootstrap() refits them with one value")
  }
  list(multivariate = TRUE, family = family, covariance = covariance, noise = any(noisy), df = df,
       noise.support = if (any(noisy)) Map(given_box, items, data), max.iters = max.iters,
       epsilon = epsilon, random.inits = random.inits, seed = as.double(seed), use.gpu = use.gpu,
       control = control, given_control = given_control(control, drop = c("keep.data", "keep.starts")))
}

# The variables of a multivariate result (its fits' where it lost them).
fits_variables <- function(fits) {
  variables <- attr(fits, "variables")
  if (is.null(variables)) {
    first <- Find(has_fit, unclass(fits))
    variables <- if (!is.null(first)) colnames(first$mu)
  }
  variables
}

# The start a refit of K + e components takes from null fit `f` (e = 0:
# the fit; e = 1: its heaviest component split in two along its major
# axis, the pair's mean and covariance the component's), as the records
# check_mv_init() makes; t's df where they were estimated.
bootstrap_start_mv <- function(f, e, df_fixed) {
  k <- f$k
  alpha <- f$alpha
  mu <- unname(f$mu)
  sigma <- array(unname(f$sigma), dim(f$sigma))
  df <- if (mv_is_t(f) && !df_fixed) as.double(f$df) else rep(NA_real_, k)
  if (e == 1) {
    m <- which.max(alpha)
    eig <- eigen(sigma[, , m], symmetric = TRUE)
    v <- eig$vectors[, 1]
    l <- eig$values[1]
    step <- 0.5 * sqrt(l) * v
    split <- sigma[, , m] - 0.25 * l * tcrossprod(v)
    mu <- rbind(mu, mu[m, ] - step)
    mu[m, ] <- mu[m, ] + step
    sigma <- array(c(sigma, split), c(dim(sigma)[1:2], k + 1))
    sigma[, , m] <- split
    alpha <- c(alpha, alpha[m] / 2)
    alpha[m] <- alpha[m] / 2
    df <- c(df, df[m])
    k <- k + 1
  }
  list(k = k, alpha = as.double(alpha), mu = mu, sigma = sigma, df = df,
       noise = if (mv_has_noise(f)) as.double(f$noise) else NA_real_)
}

# bootstrap_run()'s multivariate run: for each dataset with a null (a fit;
# NULL: none), B replicates of its size drawn from it, and the dataset and
# its replicates refitted with K0 + e components for each e of `extra`,
# each refit with start 1 from the null (bootstrap_start_mv()) and
# `random.inits` - 1 random starts (at least one). Returns, per e, the
# layout bootstrap_lrt() reads (replicates' log-likelihoods, statuses and
# spurious flags, dataset by dataset; the observed ones) and, where
# `s$summarise(d, refits, statuses, spurious)` is given, its value per
# dataset (`summaries`, NULL without a null).
bootstrap_run_mv <- function(data, nulls, B, extra, s, report) {
  nd <- length(nulls)
  k0 <- vapply(nulls, function(p) if (is.null(p)) 0L else as.integer(p$k), 0L)
  live <- which(k0 > 0)
  rng <- simulation_seed(NULL)
  on.exit(assign(".Random.seed", rng$state, envir = .GlobalEnv), add = TRUE)
  # dataset d's B replicates, drawn where a chunk needs them (the same
  # draws for every e and chunking: the generator is set from d)
  replicates <- function(d) {
    set.seed((s$seed + d) %% .Machine$integer.max)
    n <- nrow(data[[d]])
    lapply(seq_len(B), function(b) unname(mv_draws(nulls[[d]], n)))
  }
  # (the refits' standard errors are not needed)
  control <- s$given_control
  control$standard.errors <- FALSE
  df_fixed <- !is.null(s$df)
  levels <- c("converged", "max_iters", "failed", "invalid", "not_fitted")
  status_of <- function(f) {
    match(if (has_fit(f)) f$status else if (is.null(f$status)) "not_fitted" else f$status,
          levels, nomatch = match("failed", levels))
  }
  engines <- character()
  out <- lapply(seq_along(extra), function(j) {
    e <- extra[j]
    refits <- vector("list", nd)
    for (kk in sort(unique(k0[live]))) {
      ds <- live[k0[live] == kk]
      # chunks of about 2e7 values (160 MB of data), so that memory stays
      # bounded whatever the number of datasets and B
      size <- vapply(ds, function(d) (B + 1) * length(data[[d]]), 0)
      chunk <- cumsum(size) %/% 2e7
      for (part in split(ds, chunk)) {
        sets <- unlist(lapply(part, function(d) c(list(data[[d]]), replicates(d))), recursive = FALSE)
        starts <- unlist(lapply(part, function(d) {
          rep(list(list(bootstrap_start_mv(nulls[[d]], e, df_fixed))), B + 1)
        }), recursive = FALSE)
        boxes <- if (s$noise) unlist(lapply(part, function(d) rep(list(nulls[[d]]$support), B + 1)), recursive = FALSE)
        result <- withCallingHandlers(
          bulkem(sets, num.components = kk + e, family = s$family, covariance = s$covariance,
                 noise = s$noise, noise.support = if (!all(vapply(boxes, is.null, NA))) boxes,
                 df = s$df, init = structure(starts, class = "bulkem_given"),
                 random.inits = max(1L, s$random.inits - 1L), max.iters = s$max.iters,
                 epsilon = s$epsilon, seed = s$seed, use.gpu = s$use.gpu, criterion = "bic",
                 control = control),
          bulkem_warning_convergence = function(w) invokeRestart("muffleWarning"))
        engines <<- c(engines, attr(result, "engine"))
        fits <- unclass(result)
        rm(result, sets)
        # each dataset's refits reduced to what is read of them (with
        # `s$summarise`, its rows of standard errors), chunk by chunk, so
        # that memory stays bounded whatever B and the number of datasets
        for (i in seq_along(part)) {
          mine <- fits[(i - 1) * (B + 1) + seq_len(B + 1)]
          reps <- mine[-1]
          r <- list(loglik = vapply(reps, fit_loglik, 0), status = vapply(reps, status_of, 0L),
                    spurious = vapply(reps, function(f) isTRUE(f$spurious), NA),
                    observed = list(loglik = fit_loglik(mine[[1]]), status = status_of(mine[[1]]),
                                    spurious = isTRUE(mine[[1]]$spurious)))
          if (!is.null(s$summarise)) r$summary <- s$summarise(part[i], reps, levels[r$status], r$spurious)
          refits[[part[i]]] <- r
        }
        rm(fits)
      }
    }
    if (!is.null(report)) report(j, length(extra))
    per <- function(field, v) {
      unlist(lapply(seq_len(nd), function(d) if (k0[d] > 0) refits[[d]][[field]] else rep(v, B)))
    }
    obs <- function(field, v) vapply(seq_len(nd), function(d) if (k0[d] > 0) refits[[d]]$observed[[field]] else v, v)
    list(extra = e,
         loglik = per("loglik", NA_real_),
         status = per("status", NA_integer_), status_levels = levels,
         spurious = per("spurious", NA),
         observed_loglik = obs("loglik", NA_real_),
         observed_status = obs("status", NA_integer_),
         observed_spurious = obs("spurious", FALSE),
         summaries = lapply(refits, `[[`, "summary"))
  })
  engine <- paste(unique(engines), collapse = ", ")
  lapply(out, function(r) c(r, list(engine = engine, costs = NULL)))
}

# test = "none" for multivariate fits: standard errors and percentile
# intervals in the rows of tidy() (dataset, component, term, variable,
# variable2, estimate), with B and B_used.
bootstrap_se_mv <- function(items, data, B, conf.level, s, names_d) {
  nulls <- bootstrap_nulls(items, s$noise.support)
  reporter <- progress_reporter()
  s$summarise <- function(d, reps, status, spurious) {
    mv_bootstrap_summary(items[[d]], reps, status, spurious, B, conf.level)
  }
  r <- bootstrap_run(data, nulls, B, 0L, s, reporter$update)[[1]]
  reporter$finish()
  parts <- lapply(seq_along(items), function(d) {
    if (is.null(r$summaries[[d]])) mv_bootstrap_summary(items[[d]], NULL, character(), logical(), B, conf.level)
    else r$summaries[[d]]
  })
  rows <- do.call(rbind, lapply(seq_along(parts), function(d) {
    p <- parts[[d]]$rows
    if (nrow(p) > 0) cbind(dataset = names_d[d], p, stringsAsFactors = FALSE)
  }))
  if (is.null(rows)) {
    rows <- data.frame(dataset = character(), component = integer(), term = character(),
                       variable = character(), variable2 = character(), estimate = numeric(),
                       std.error = numeric(), conf.low = numeric(), conf.high = numeric(),
                       B = integer(), B_used = integer(), stringsAsFactors = FALSE)
  }
  rownames(rows) <- NULL
  counts <- do.call(rbind, lapply(parts, `[[`, "counts"))
  fitted <- vapply(items, has_fit, NA, USE.NAMES = FALSE)
  replicates <- data.frame(dataset = names_d, B = ifelse(fitted, B, 0L), used = counts[, "used"],
                           failed = counts[, "failed"], spurious = counts[, "spurious"],
                           stringsAsFactors = FALSE)
  structure(rows, class = c("bulkem_bootstrap", "data.frame"), replicates = replicates,
            conf.level = conf.level, engine = r$engine, costs = NULL)
}

# One dataset's rows (tidy()'s, with the bootstrap's columns) and its
# counts of used, failed and spurious replicates, from its replicate fits
# `reps` (NULL without a fit) and their statuses. A replicate's components
# are matched to the estimate's: for K <= 6, the permutation minimising
# the sum of the Mahalanobis distances of the matched means under the
# estimate's covariances; for larger K, each estimate's component takes
# the nearest replicate component not yet taken, in the estimate's order.
mv_bootstrap_summary <- function(fit, reps, status, spurious, B, conf.level) {
  rows <- tidy_mv(fit)
  if (nrow(rows) == 0) return(list(rows = rows, counts = c(used = 0L, failed = 0L, spurious = 0L)))
  rows$std.error <- NA_real_
  rows$conf.low <- NA_real_
  rows$conf.high <- NA_real_
  rows$B <- B
  ok <- status == "converged"
  use <- ok & !spurious
  counts <- c(used = sum(use), failed = sum(!ok & !spurious), spurious = sum(spurious))
  rows$B_used <- counts[["used"]]
  if (sum(use) < 2) return(list(rows = rows, counts = counts))
  k <- fit$k
  d <- fit$d
  low <- which(lower.tri(diag(d), diag = TRUE), arr.ind = TRUE)
  precision <- lapply(seq_len(k), function(m) solve(fit$sigma[, , m]))
  perms <- if (k <= 6) permutations(k)
  t_fit <- mv_is_t(fit)
  values <- vapply(reps[use], function(f) {
    # distance[j, m]: replicate component j to the estimate's m
    distance <- vapply(seq_len(k), function(m) {
      stats::mahalanobis(f$mu, fit$mu[m, ], precision[[m]], inverted = TRUE)
    }, numeric(k))
    distance <- matrix(distance, k, k)
    p <- if (k == 1) {
      1L
    } else if (!is.null(perms)) {
      perms[which.min(vapply(seq_len(nrow(perms)), function(i) sum(distance[cbind(perms[i, ], seq_len(k))]), 0)), ]
    } else {
      taken <- integer()
      for (m in seq_len(k)) taken <- c(taken, setdiff(order(distance[, m]), taken)[1])
      taken
    }
    c(unlist(lapply(p, function(j) c(f$alpha[j], f$mu[j, ], f$sigma[, , j][low], if (t_fit) f$df[j]))),
      if (mv_has_noise(fit)) f$noise)
  }, numeric(nrow(rows)))
  values <- matrix(values, nrow = nrow(rows))
  probs <- c((1 - conf.level) / 2, (1 + conf.level) / 2)
  rows$std.error <- apply(values, 1, stats::sd)
  q <- apply(values, 1, stats::quantile, probs = probs, names = FALSE, type = 7)
  rows$conf.low <- q[1, ]
  rows$conf.high <- q[2, ]
  # df fixed by bulkem(df =): no spread to report
  if (t_fit && isTRUE(attr(fit$df, "fixed"))) {
    rows[rows$term == "df", c("std.error", "conf.low", "conf.high")] <- NA_real_
  }
  list(rows = rows, counts = counts)
}
