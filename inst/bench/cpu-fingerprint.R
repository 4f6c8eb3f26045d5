# Bitwise record of an engine's results (the CPU engine by default), for
# refactors that must not change a single fit: run it before and after, on
# the same machine, and compare.
#   Rscript inst/bench/cpu-fingerprint.R save before.rds [engine]
#   Rscript inst/bench/cpu-fingerprint.R compare before.rds [engine]
#   (an argument starts=SCHEME runs every case with control$starts = SCHEME,
#   short.runs=N with control$short.runs = N: fits saved before a change of
#   the default search compare with the old default named, e.g.
#   starts=mixed short.runs=0)
# Covers B1 and samples of B2-B5 (bad datasets mixed in), plain EM
# (accelerate = FALSE), several Ks in one call for both families,
# control$keep.starts, standard errors (in every fit), the bootstrap's
# refits (standard errors and the LRT, fixed seeds) and multivariate fits
# (M1's shape; every covariance structure, t, noise, several K). Only the fits are
# compared (timings differ).
suppressPackageStartupMessages(library(bulkem))
args <- commandArgs(TRUE)
scheme <- sub("^starts=", "", grep("^starts=", args, value = TRUE))
short <- as.integer(sub("^short.runs=", "", grep("^short.runs=", args, value = TRUE)))
args <- grep("^(starts|short.runs)=", args, value = TRUE, invert = TRUE)
if (!(length(args) %in% 2:3) || !(args[1] %in% c("save", "compare"))) {
  stop("usage: cpu-fingerprint.R save|compare FILE [engine]")
}
engine <- if (length(args) == 3) args[3] else "cpu"
settings <- if (engine == "cpu") {
  list(use.gpu = FALSE, control = list(threads = 2))
} else {
  list(control = list(engine = engine))
}
if (length(scheme)) settings$control$starts <- scheme
if (length(short)) settings$control$short.runs <- short
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))

bad <- list(c(1, NA, 3, 4, 5, 6, 7), c(2, 2, 2, 2, 2, 2, 2), c(1, 2), c(-1, 1:10), numeric(0))
run <- function(name, fraction, ...) {
  w <- workload(name, fraction)
  extra <- list(...)
  s <- settings
  s$control <- c(s$control, extra$control)
  extra$control <- NULL
  args <- utils::modifyList(w$args, extra)
  fits <- do.call(bulkem, c(list(c(w$datasets, bad)), args, list(seed = 7), s))
  fits <- unclass(fits)
  attributes(fits) <- NULL
  fits
}
# the bootstrap's tables, as plain lists (attributes, timings among them, dropped)
boot <- function(test) {
  w <- workload("B3", 0.002)
  fits <- do.call(bulkem, c(list(w$datasets[1:6], num.components = 2, random.inits = 5, seed = 11), settings))
  b <- bulkem_bootstrap(fits, B = 19, test = test, seed = 5, data = w$datasets[1:6],
                        use.gpu = if (engine == "cpu") FALSE else NA, control = settings$control)
  b <- as.list(unclass(b))
  attributes(b) <- list(names = names(b))
  lapply(seq_along(b[[1]]), function(i) lapply(b, `[[`, i))
}
# multivariate fits (issue 33): M1's shape, a sample, every covariance
# structure, t and noise components, several K, bad datasets mixed in
mv_bad <- list(matrix(c(1, NA, 3, 4, 5, 6), 3), matrix(1, 5, 4), matrix(1:8 + 0.5, 2))
mv_run <- function(sets, n, ...) {
  set.seed(33)
  data <- m1_datasets(sets, n = n)
  bad <- lapply(mv_bad, function(m) { m <- cbind(m, m)[, 1:4]; colnames(m) <- colnames(data[[1]]); m })
  # the univariate search's arguments do not apply
  s <- settings
  s$control[c("starts", "short.runs")] <- NULL
  fits <- do.call(bulkem, c(list(c(data, bad)), list(...), list(seed = 7), s))
  fits <- unclass(fits)
  attributes(fits) <- NULL
  fits
}
cases <- list(
  B1 = function() run("B1", 1),
  B2 = function() run("B2", 0.005),
  B3 = function() run("B3", 0.005),
  B4 = function() run("B4", 0.01),
  B5 = function() run("B5", 0.002),
  B3_k1to4 = function() run("B3", 0.002, num.components = 1:4, random.inits = 10),
  B1_plain = function() run("B1", 0.2, control = list(accelerate = FALSE)),
  B4_k1to4 = function() run("B4", 0.004, num.components = 1:4, random.inits = 10),
  boot_se = function() boot("none"),
  boot_lrt = function() boot("lrt"),
  M1 = function() mv_run(20, 1000, num.components = 3),
  M1_structures = function() c(mv_run(6, 300, num.components = 2, covariance = "tied"),
                               mv_run(6, 300, num.components = 2, covariance = "diagonal"),
                               mv_run(6, 300, num.components = 2, covariance = "spherical")),
  M1_t_noise = function() c(mv_run(6, 300, num.components = 2, family = "t"),
                            mv_run(6, 300, num.components = 2, noise = TRUE)),
  M1_k1to3 = function() mv_run(6, 300, num.components = 1:3),
  B1_starts = function() {
    w <- workload("B1", 0.05)
    s <- settings
    s$control$keep.starts <- TRUE
    f <- do.call(bulkem, c(list(c(w$datasets, bad), random.inits = 5, seed = 3), s))
    f <- unclass(f)
    attributes(f) <- NULL
    f
  }
)
if (args[1] == "save") {
  res <- lapply(cases, function(f) f())
  saveRDS(res, args[2])
  for (n in names(res)) cat(n, ": ", length(res[[n]]), " fits\n", sep = "")
} else {
  old <- readRDS(args[2])
  ok <- TRUE
  for (n in names(cases)) {
    if (is.null(old[[n]])) {
      cat(sprintf("%-10s a case the saved fingerprint lacks: not compared\n", n))
      next
    }
    new <- cases[[n]]()
    # a field the old results lack is new, not a changed result: reported,
    # then left out of the comparison
    # (in every K's fit of a choice over K too, and a new column of by_k)
    added <- unique(unlist(lapply(seq_along(new), function(i) {
      f <- new[[i]]
      o <- old[[n]][[i]]
      c(setdiff(names(f), names(o)),
        if (is.data.frame(f$by_k) && is.data.frame(o$by_k)) {
          cols <- setdiff(names(f$by_k), names(o$by_k))
          if (length(cols) > 0) paste0("by_k$", cols)
        })
    })))
    drop_new <- function(f, o) {
      f[setdiff(names(f), names(o))] <- NULL
      if (is.data.frame(f$by_k) && is.data.frame(o$by_k)) f$by_k <- f$by_k[intersect(names(f$by_k), names(o$by_k))]
      if (is.list(f$all_k) && is.list(o$all_k) && length(f$all_k) == length(o$all_k)) {
        f$all_k <- Map(drop_new, f$all_k, o$all_k)
      }
      f
    }
    new <- Map(drop_new, new, old[[n]])
    same <- vapply(seq_along(new), function(i) identical(old[[n]][[i]], new[[i]]), NA)
    fields <- unique(unlist(lapply(which(!same), function(i) {
      o <- old[[n]][[i]]
      w <- new[[i]]
      nm <- union(names(o), names(w))
      paste0(nm[!vapply(nm, function(f) identical(o[[f]], w[[f]]), NA)], " (", o$status, ")")
    })))
    cat(sprintf("%-10s %5d fits, %d bitwise identical, %d differ%s%s\n", n, length(new), sum(same),
                sum(!same), if (any(!same)) paste0(" in: ", paste(fields, collapse = ", ")) else "",
                if (length(added) > 0) paste0(" (new fields, not compared: ", paste(added, collapse = ", "), ")") else ""))
    for (i in which(!same)) {
      o <- old[[n]][[i]]
      w <- new[[i]]
      cat(sprintf("  fit %d: was %s%s, loglik %.6f, best start %s; now %s%s, loglik %.6f, best start %s\n",
                  i, o$status, if (isTRUE(o$spurious)) " (spurious)" else "", o$loglik, o$best_start,
                  w$status, if (isTRUE(w$spurious)) " (spurious)" else "", w$loglik, w$best_start))
    }
    if (!all(same)) ok <- FALSE
  }
  if (!ok) quit(status = 1)
}
