# control$future = TRUE: one bulkem() call sharded over the workers of the
# user's future::plan() (DESIGN §8). bulkem never sets the plan. The datasets,
# already made by make_datasets() (na.action applied), are cut into
# contiguous shards; future.apply::future_lapply() runs one future per shard,
# and each worker fits its shard by calling bulkem() itself with the same
# settings and the seed drawn once here, with its own GPU or cores
# (control$threads, unless given, from parallelly::availableCores() there).
# Every start depends only on the seed, its index and its dataset's values,
# so the fits are identical to the same call without future; the parent puts
# them back in dataset order, adds what it owns (keep.data, n_dropped, the
# call's attributes) and raises the call's one convergence warning.

# Shards per worker when control$shards is not given, so that workers that
# finish early take more work; and the workers assumed when the plan gives
# no finite number (a scheduler's queue: nbrOfWorkers() is Inf).
shards_per_worker <- 4L
workers_if_unlimited <- 32L

# control$future and control$shards, as check_control() needs them: a flag,
# and NULL or a whole number; with future = TRUE the packages must be there.
check_future_control <- function(control) {
  check_flag(control$future, "control$future")
  if (!is.null(control$shards)) {
    control$shards <- as.integer(check_whole(control$shards, "control$shards", 1, .Machine$integer.max))
  }
  if (control$future) {
    for (pkg in c("future", "future.apply")) {
      if (!requireNamespace(pkg, quietly = TRUE)) {
        stop_arg("`control$future = TRUE` needs the ", pkg, " package, which is not installed: ",
                 "install.packages(\"", pkg, "\")")
      }
    }
  } else if (!is.null(control$shards)) {
    stop_arg("`control$shards` goes with `control$future = TRUE`")
  }
  control
}

# The datasets' indices cut into `n` contiguous shards whose sizes differ by
# at most one (the first ones the larger).
shard_ranges <- function(n_datasets, n) {
  n <- max(1L, min(as.integer(n), n_datasets))
  size <- n_datasets %/% n
  sizes <- size + (seq_len(n) <= n_datasets %% n)
  last <- cumsum(sizes)
  data.frame(shard = seq_len(n), first = last - sizes + 1L, last = last)
}

# How many shards: control$shards, or shards_per_worker per worker of the
# current plan; never more than the datasets.
shard_count <- function(given, n_datasets) {
  if (!is.null(given)) return(min(given, n_datasets))
  workers <- suppressWarnings(as.numeric(future::nbrOfWorkers()))
  if (length(workers) != 1 || is.na(workers) || workers < 1) workers <- 1
  if (!is.finite(workers)) workers <- workers_if_unlimited
  as.integer(min(n_datasets, shards_per_worker * workers))
}

# What runs on a worker: bulkem() on the shard's datasets, with the
# convergence warning muffled (the parent raises one for the whole call) and
# the shard's progress forwarded, step by step, to the parent's progressor
# `p` (future relays progressr's conditions to the parent). Errors come back
# as the value, so that the parent can name the shard.
fit_shard <- function(shard, args, p, fault) {
  started <- proc.time()[["elapsed"]]
  if (identical(fault, paste0("die:", shard$index))) {
    # a worker process that dies, as one killed by a scheduler
    quit(save = "no", status = 1, runLast = FALSE)
  }
  old <- options(progressr.enable = TRUE)
  on.exit(options(old))
  # the shard's convergence counts, for the caller's one warning
  counts <- NULL
  fits <- tryCatch(
    withCallingHandlers({
      if (identical(fault, paste0("error:", shard$index))) {
        stop("injected failure (BULKEM_FUTURE_FAULT)")
      }
      do.call(bulkem::bulkem, c(list(datasets = shard$datasets, noise.support = shard$noise.support,
                                     init = shard$init, weights = shard$weights, fixed = shard$fixed,
                                     truncation = shard$truncation), args))
    },
      bulkem_warning_convergence = function(w) {
        counts <<- w$counts
        invokeRestart("muffleWarning")
      },
      progression = function(cond) {
        if (identical(cond$type, "update") && isTRUE(cond$amount > 0)) p(amount = cond$amount)
        invokeRestart("muffleProgression")
      }),
    error = function(e) e)
  list(index = shard$index, fits = fits, counts = counts,
       worker = paste(Sys.info()[["nodename"]], Sys.getpid()), elapsed = proc.time()[["elapsed"]] - started)
}

# The classed error of a failed shard: bulkem_error_future, naming the shard
# and its datasets; `parent` is the worker's condition.
shard_error <- function(range, n_shards, cond, failed = 1L) {
  msg <- sprintf("shard %d of %d (datasets %d-%d) failed%s: %s", range$shard, n_shards,
                 range$first, range$last,
                 if (failed > 1) sprintf(" (and %d more shard(s))", failed - 1L) else "",
                 conditionMessage(cond))
  bulkem_condition("future", msg, shard = range$shard, datasets = c(range$first, range$last),
                   parent = cond)
}

# The noise supports (check_noise_support()'s pairs) of the datasets `at`
# as bulkem()'s `noise.support`: NULL, the one pair, or a list of pairs
# (NULL for a dataset's range).
shard_supports <- function(pairs, at) {
  if (length(pairs) <= 2) return(if (length(pairs) == 2) pairs)
  lapply(at, function(d) {
    p <- pairs[2 * d - c(1, 0)]
    if (anyNA(p)) NULL else p
  })
}

# bulkem() with control$future = TRUE, called by bulkem() once its arguments
# are checked and the seed is drawn. `input` is make_datasets()'s value,
# `args` the arguments every shard's bulkem() gets besides its datasets,
# `control` the checked bulkem_control(), `started` the call's start time.
fit_future <- function(input, args, control, verbose, started, noise.support = numeric(0),
                       given = NULL, weights = NULL, fixed = NULL, truncation = numeric(0)) {
  datasets <- input$datasets
  n <- length(datasets)
  ranges <- shard_ranges(n, shard_count(control$shards, n))
  n_shards <- nrow(ranges)
  # Every shard gets the same settings: the caller's control (threads only
  # if given, so that each worker counts its own cores), the data as made
  # here (na.action already applied: missing values kept by na.pass stay),
  # data kept here rather than sent back, and no sharding inside.
  shard_control <- given_control(control, drop = c("future", "shards", "keep.data"))
  args <- c(args, list(control = shard_control, verbose = FALSE, na.action = "na.pass"))
  shards <- lapply(seq_len(n_shards), function(s) {
    at <- ranges$first[s]:ranges$last[s]
    # a dataset with censored values travels as the Surv object it came as;
    # with weights, a row per window, its count the row's weight
    weighted_surv <- !is.null(input$censored) && !is.null(weights)
    shard_data <- if (is.null(input$censored)) {
      datasets[at]
    } else {
      Map(as_surv, datasets[at], input$censored[at], MoreArgs = list(repeated = !weighted_surv))
    }
    shard_weights <- if (weighted_surv) {
      Map(function(w, x, windows) c(if (is.null(w)) rep(1, length(x)) else w, matrix(windows, nrow = 3)[3, ]),
          weights[at], datasets[at], input$censored[at])
    } else if (!is.null(weights)) {
      weights[at]
    }
    list(index = s, datasets = shard_data, noise.support = shard_supports(noise.support, at),
         init = if (!is.null(given)) structure(unclass(given)[at], class = "bulkem_given"),
         weights = shard_weights,
         fixed = if (!is.null(fixed)) structure(unclass(fixed)[at], class = "bulkem_fixed"),
         # (truncation windows are pairs as the supports are)
         truncation = shard_supports(truncation, at))
  })
  if (verbose) {
    message(sprintf(
      "bulkem: %d datasets, %s, %s component(s), %d start(s) each, in %d shard(s) over %s future worker(s)",
      n, args$family, paste(args$num.components, collapse = ", "), args$random.inits, n_shards,
      format(future::nbrOfWorkers())))
  }
  checked <- proc.time()[["elapsed"]]
  # progressr finishes it when this call exits, however it exits; every
  # shard contributes its own call's progress_steps
  p <- progressr::progressor(steps = n_shards * progress_steps)
  fault <- Sys.getenv("BULKEM_FUTURE_FAULT")
  # future.apply labels future i (one per shard: future.chunk.size = 1)
  # sprintf(future.label, i): these labels, one per shard
  label_format <- "bulkem-shard-%d"
  labels <- sprintf(label_format, seq_len(n_shards))
  out <- tryCatch(
    future.apply::future_lapply(
      shards, fit_shard, args = args, p = p, fault = fault,
      future.seed = NULL, future.chunk.size = 1, future.packages = "bulkem",
      future.label = label_format),
    FutureError = function(e) {
      # a worker that died: the condition carries its future (the attribute
      # `future`, as future::FutureCondition() sets it; a field in some other
      # versions), whose label is exactly one of the shards' labels
      future <- attr(e, "future", exact = TRUE)
      if (is.null(future)) future <- e[["future"]]
      label <- if (inherits(future, "Future")) future$label
      s <- if (is.character(label) && length(label) == 1) match(label, labels) else NA_integer_
      if (is.na(s)) {
        raise(bulkem_condition("future", paste0("a future worker failed: ", conditionMessage(e)),
                               shard = NA_integer_, parent = e))
      }
      raise(shard_error(ranges[s, ], n_shards, e))
    })
  computed <- proc.time()[["elapsed"]]
  failed <- which(vapply(out, function(o) inherits(o$fits, "condition"), NA))
  if (length(failed) > 0) {
    s <- failed[1]
    raise(shard_error(ranges[s, ], n_shards, out[[s]]$fits, failed = length(failed)))
  }
  if (!identical(vapply(out, function(o) o$index, 0L), seq_len(n_shards)) ||
      !identical(vapply(out, function(o) length(o$fits), 0L), ranges$last - ranges$first + 1L)) {
    raise(bulkem_condition("internal", "the shards' results do not match the shards"))
  }
  results <- lapply(out, `[[`, "fits")
  fits <- do.call(c, lapply(results, unclass))
  fits <- attach_inputs(fits, datasets, input, control$keep.data, weights)
  attr_of <- function(name) lapply(results, attr, name)
  total <- function(name) Reduce(`+`, attr_of(name))
  engines <- unique(unlist(attr_of("engine")))
  threads <- unlist(attr_of("threads"))
  workers <- vapply(out, `[[`, "", "worker")
  shard_info <- data.frame(ranges, engine = unlist(attr_of("engine")), threads = threads,
                           worker = workers, elapsed = vapply(out, `[[`, 0, "elapsed"),
                           stringsAsFactors = FALSE)
  elapsed <- proc.time()[["elapsed"]] - started
  if (verbose) {
    message(sprintf("bulkem: done in %.3f s (%d shard(s) on %d worker(s), %s engine)",
                    elapsed, n_shards, length(unique(workers)), paste(engines, collapse = ", ")))
  }
  timings <- c(check = checked - started, shards = computed - checked,
               result = proc.time()[["elapsed"]] - computed, total = elapsed)
  counts <- Filter(Negate(is.null), lapply(out, `[[`, "counts"))
  warn_convergence(if (length(counts) > 0) Reduce(`+`, counts), length(fits), fits, datasets, input$response,
                   length(args$num.components) > 1)
  new_bulkem(fits, engine = paste(engines, collapse = ", "),
             threads = as.integer(sum(threads[!duplicated(workers)])),
             elapsed = elapsed, seed = args$seed, family = args$family,
             num.components = as.integer(args$num.components),
             em_iterations = total("em_iterations"),
             kernel_launches = total("kernel_launches"),
             kernel_seconds = total("kernel_seconds"),
             timings = timings, shards = shard_info, na.action = input$na.action,
             groups = input$groups, response = input$response,
             weighted = if (!is.null(weights)) TRUE)
}
