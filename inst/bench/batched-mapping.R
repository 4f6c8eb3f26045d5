# How cuda-batched maps fits onto the GPU, decided by measurement: the same
# workloads with one lane per fit, one warp per fit and one group of 16, 8 or
# 4 lanes per fit (forced through BULKEM_MAPPING), and the automatic choice,
# side by side in one run. `max_dll` is the largest difference of a dataset's
# log-likelihood from the first mapping's.
#
#   Rscript inst/bench/batched-mapping.R [accelerate=TRUE] [k=2] [mappings=lane,warp,auto] [workload[:fraction] ...]
#   Rscript inst/bench/batched-mapping.R [accelerate=TRUE] [k=2] [mappings=...] sweep [sweep:n:datasets ...]
# `sweep:n:datasets`: datasets of n observations from two Normals 1.5 sds
# apart, fitted with K = 2 (or k=) from 20 starts (the bootstrap's shape: equal n,
# EM that creeps); `sweep` alone: 1,000 datasets at n = 100 .. 2000.
# accelerate=TRUE runs SQUAREM (default: plain EM, as the other benchmarks).
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
args <- commandArgs(trailingOnly = TRUE)
accelerate <- any(args == "accelerate=TRUE")
opt <- function(key, default) {
  hit <- grep(paste0("^", key, "="), args, value = TRUE)
  if (length(hit)) sub("^[^=]*=", "", hit[[1]]) else default
}
mappings <- strsplit(opt("mappings", "lane,warp,auto"), ",", fixed = TRUE)[[1]]
sweep_k <- as.integer(opt("k", "2"))
args <- args[!grepl("^(accelerate|mappings|k)=", args)]
if (!length(args)) args <- c("B1", "B2:0.1", "B3:0.1", "B4:0.2", "B5:0.05")
if (identical(args, "sweep")) args <- paste0("sweep:", c(100, 250, 500, 1000, 2000), ":1000")
invisible(bulkem(list(c(1, 2, 3, 4, 5, 6, 7.5)), control = list(engine = "cuda-batched", accelerate = accelerate)))
sweep_workload <- function(n, datasets) {
  set.seed(n)
  sets <- replicate(datasets, c(rnorm(n %/% 2), rnorm(n - n %/% 2, 1.5)), simplify = FALSE)
  list(datasets = sets, args = list(num.components = sweep_k, family = "normal", random.inits = 20, max.iters = 5000))
}
rows <- list()
for (a in args) {
  parts <- strsplit(a, ":", fixed = TRUE)[[1]]
  w <- if (parts[1] == "sweep") sweep_workload(as.integer(parts[2]), as.integer(parts[3])) else
    workload(parts[1], fraction = if (length(parts) > 1) as.numeric(parts[2]) else 1)
  first <- NULL
  for (mapping in mappings) {
    Sys.setenv(BULKEM_MAPPING = mapping)
    t0 <- proc.time()[["elapsed"]]
    f <- do.call(bulkem, c(list(w$datasets), w$args, list(seed = 1, control = list(engine = "cuda-batched", accelerate = accelerate))))
    ll <- vapply(unclass(f), function(x) if (is.null(x$loglik)) NA_real_ else x$loglik, 0)
    if (is.null(first)) first <- ll
    rows[[length(rows) + 1]] <- data.frame(
      workload = a, datasets = length(w$datasets), fits = length(w$datasets) * w$args$random.inits,
      mean_n = round(mean(lengths(w$datasets))), mapping = mapping,
      em_iterations = attr(f, "em_iterations"), kernel_s = round(attr(f, "kernel_seconds"), 3),
      ns_per_pass = round(attr(f, "kernel_seconds") / attr(f, "em_iterations") * 1e9, 2),
      engine_s = round(attr(f, "timings")[["engine"]], 3), wall_s = round(proc.time()[["elapsed"]] - t0, 3),
      max_dll = signif(max(abs(ll - first), na.rm = TRUE), 2))
  }
}
Sys.unsetenv("BULKEM_MAPPING")
tab <- do.call(rbind, rows)
cat("command: Rscript inst/bench/batched-mapping.R", commandArgs(trailingOnly = TRUE), "\n\n")
cat("|", paste(names(tab), collapse = " | "), "|\n|", paste(rep("---", ncol(tab)), collapse = " | "), "|\n")
for (i in seq_len(nrow(tab))) cat("|", paste(tab[i, ], collapse = " | "), "|\n")
