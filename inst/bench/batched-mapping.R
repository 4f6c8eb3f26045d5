# How cuda-batched maps fits onto the GPU, decided by measurement: the same
# workloads with one lane per fit and with one warp per fit (forced through
# BULKEM_MAPPING), and the automatic choice, side by side in one run.
#
#   Rscript inst/bench/batched-mapping.R [workload[:fraction] ...]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
args <- commandArgs(trailingOnly = TRUE)
if (!length(args)) args <- c("B1", "B2:0.1", "B3:0.1", "B4:0.2", "B5:0.05")
invisible(bulkem(list(c(1, 2, 3, 4, 5, 6, 7.5)), control = list(engine = "cuda-batched", accelerate = FALSE)))
rows <- list()
for (a in args) {
  parts <- strsplit(a, ":", fixed = TRUE)[[1]]
  w <- workload(parts[1], fraction = if (length(parts) > 1) as.numeric(parts[2]) else 1)
  for (mapping in c("lane", "warp", "auto")) {
    Sys.setenv(BULKEM_MAPPING = mapping)
    t0 <- proc.time()[["elapsed"]]
    f <- do.call(bulkem, c(list(w$datasets), w$args, list(seed = 1, control = list(engine = "cuda-batched", accelerate = FALSE))))
    rows[[length(rows) + 1]] <- data.frame(
      workload = a, datasets = length(w$datasets), fits = length(w$datasets) * w$args$random.inits,
      mean_n = round(mean(lengths(w$datasets))), mapping = mapping,
      kernel_s = round(attr(f, "kernel_seconds"), 3),
      wall_s = round(proc.time()[["elapsed"]] - t0, 3))
  }
}
Sys.unsetenv("BULKEM_MAPPING")
tab <- do.call(rbind, rows)
cat("command: Rscript inst/bench/batched-mapping.R", args, "\n\n")
cat("|", paste(names(tab), collapse = " | "), "|\n|", paste(rep("---", ncol(tab)), collapse = " | "), "|\n")
for (i in seq_len(nrow(tab))) cat("|", paste(tab[i, ], collapse = " | "), "|\n")
