# The default search against an earlier one on the benchmark workloads'
# data (issue 31): per workload, bulkem()'s defaults (20 starts, SQUAREM,
# epsilon 1e-6, the workload's K and family) with `control` as bulkem()
# sets it and with the earlier search's settings (before=: "mixed", 20 mixed
# starts without short runs, the default of 2026-11-27; "random", 20 random
# starts, the default before), same seed; how many datasets end higher (by
# more than 1e-6 (1 + |l|)), lower or the same, and the E-step passes per
# dataset.
#   Rscript inst/bench/default-starts.R [fraction=0.01] [seeds=1,2] [before=mixed]
suppressPackageStartupMessages(library(bulkem))
opt <- list(fraction = "0.01", seeds = "1,2", before = "mixed")
for (a in commandArgs(TRUE)) opt[[sub("=.*", "", a)]] <- sub("^[^=]*=", "", a)
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
fraction <- as.numeric(opt$fraction)
seeds <- as.integer(strsplit(opt$seeds, ",")[[1]])
before <- list(starts = opt$before, short.runs = 0L)
cat(sprintf("| workload | datasets | starts | seed | default higher | default lower | same | passes per dataset, %s | default |\n",
            opt$before))
cat("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
for (name in c("B1", "B2", "B3", "B4", "B5")) {
  w <- workload(name, if (name == "B1") 1 else fraction)
  for (seed in seeds) {
    fit <- function(control) {
      do.call(bulkem, c(list(w$datasets), w$args[c("num.components", "family")],
                        list(seed = seed, use.gpu = FALSE, control = control)))
    }
    r <- fit(before)
    m <- fit(list())
    lr <- vapply(r, function(f) f$loglik, 0)
    lm <- vapply(m, function(f) f$loglik, 0)
    tol <- 1e-6 * (1 + abs(lr))
    hi <- sum(lm > lr + tol, na.rm = TRUE)
    lo <- sum(lm < lr - tol, na.rm = TRUE)
    cat(sprintf("| %s | %d | %d | %d | %d | %d | %d | %.0f | %.0f |\n", name, length(r),
                20L, seed, hi, lo, length(r) - hi - lo,
                sum(attr(r, "em_iterations")) / length(r), sum(attr(m, "em_iterations")) / length(m)))
  }
}
