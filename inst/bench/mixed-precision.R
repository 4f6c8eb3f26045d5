# Mixed precision (control$precision = "mixed": whole E-step passes in fp32
# with fp64 sums, every fit finished by a second, fp64 launch) against fp64
# on cuda-batched, on B1-B5:
# time, and the error of the returned fits (relative log-likelihood and
# largest relative parameter difference per dataset: median, 99th
# percentile, worst), side by side in one run on the GPU machine.
#
#   Rscript inst/bench/mixed-precision.R [accelerate] [workload[:fraction] ...]
#
# `accelerate` runs both with SQUAREM (the package default); without it,
# plain EM.
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
args <- commandArgs(trailingOnly = TRUE)
accelerate <- "accelerate" %in% args
args <- setdiff(args, "accelerate")
if (!length(args)) args <- c("B1", "B2", "B3", "B4", "B5")
q <- function(x) sprintf("%.1e / %.1e / %.1e", stats::median(x), stats::quantile(x, 0.99), max(x))
rows <- list()
for (a in args) {
  parts <- strsplit(a, ":", fixed = TRUE)[[1]]
  w <- workload(parts[1], fraction = if (length(parts) > 1) as.numeric(parts[2]) else 1)
  run <- function(precision) {
    ctl <- list(engine = "cuda-batched", precision = precision, accelerate = accelerate)
    invisible(bulkem(w$datasets[1], num.components = w$args$num.components, family = w$args$family, control = ctl))
    t0 <- proc.time()[["elapsed"]]
    f <- do.call(bulkem, c(list(w$datasets), w$args, list(seed = 1, control = ctl)))
    list(fits = f, seconds = proc.time()[["elapsed"]] - t0, kernel = attr(f, "kernel_seconds"), passes = attr(f, "em_iterations"))
  }
  dbl <- run("double")
  mix <- run("mixed")
  shape <- if (w$args$family == "invgauss") "lambda" else "sigma"
  ok <- vapply(dbl$fits, `[[`, NA, "fit_success") & vapply(mix$fits, `[[`, NA, "fit_success")
  ll <- function(f) vapply(f, `[[`, 0, "loglik")[ok]
  rel_ll <- abs(ll(mix$fits) - ll(dbl$fits)) / abs(ll(dbl$fits))
  rel_par <- mapply(function(a, b) max(unlist(lapply(c("mu", "alpha", shape), function(p) abs(b[[p]] - a[[p]]) / abs(a[[p]])))),
                    dbl$fits[ok], mix$fits[ok])
  rows[[length(rows) + 1]] <- data.frame(
    workload = a, fp64_s = round(dbl$seconds, 3), mixed_s = round(mix$seconds, 3),
    fp64_kernel_s = round(dbl$kernel, 3), mixed_kernel_s = round(mix$kernel, 3),
    passes_mixed_over_fp64 = sprintf("%.3f", mix$passes / dbl$passes),
    loglik_rel_err_median_p99_worst = q(rel_ll), param_rel_err_median_p99_worst = q(rel_par),
    same_winning_start = sprintf("%.1f%%", 100 * mean(vapply(dbl$fits, `[[`, 0L, "best_start")[ok] ==
                                                    vapply(mix$fits, `[[`, 0L, "best_start")[ok])))
}
tab <- do.call(rbind, rows)
cat("command: Rscript inst/bench/mixed-precision.R", if (accelerate) "accelerate", args, "\n\n")
cat("|", paste(names(tab), collapse = " | "), "|\n|", paste(rep("---", ncol(tab)), collapse = " | "), "|\n")
for (i in seq_len(nrow(tab))) cat("|", paste(tab[i, ], collapse = " | "), "|\n")
