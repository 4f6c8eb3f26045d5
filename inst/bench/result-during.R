# Building the R result while the engine runs (src/rust/src/fit.rs: R's main
# thread builds each fit's list as soon as the fit is final and, on GPU
# engines, makes the lists of the fits to come meanwhile, for their numbers
# to be written in) against building it after the call
# (BULKEM_RESULT_DURING=0), side by side in one
# process, alternated: after, during, after, during, after, during. Prints
# wall seconds and the timings that move (engine, finish, result), whether
# every fit is identical() to the first call's, and the median walls.
#
#   Rscript inst/bench/result-during.R [workload ...]
#
# Workloads: B2 and B5 on cuda-batched (the GPU machine), B5cpu (B5 at 10%,
# 20,000 datasets, on the CPU engine). engines.R's calls: plain EM, seed 1.
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
args <- commandArgs(trailingOnly = TRUE)
if (!length(args)) args <- if (bulkem_gpu_info()$usable) c("B2", "B5", "B5cpu") else "B5cpu"
spec <- function(name) {
  switch(name,
    B2 = c(workload("B2"), list(settings = list(control = list(engine = "cuda-batched", accelerate = FALSE, short.runs = 0)))),
    B5 = c(workload("B5"), list(settings = list(control = list(engine = "cuda-batched", accelerate = FALSE, short.runs = 0)))),
    B5cpu = c(workload("B5", 0.1), list(settings = list(use.gpu = FALSE, control = list(accelerate = FALSE, short.runs = 0)))),
    stop("unknown workload ", name, call. = FALSE))
}
old <- Sys.getenv("BULKEM_RESULT_DURING", NA)
on.exit(if (is.na(old)) Sys.unsetenv("BULKEM_RESULT_DURING") else Sys.setenv(BULKEM_RESULT_DURING = old))
strip <- function(f) {
  attributes(f) <- attributes(f)[c("names", "class")]
  f
}
rows <- list()
for (name in args) {
  w <- spec(name)
  call <- function() suppressWarnings(do.call(bulkem, c(list(w$datasets), w$args, list(seed = 1), w$settings)))
  Sys.unsetenv("BULKEM_RESULT_DURING")
  invisible(suppressWarnings(do.call(bulkem, c(list(w$datasets[1:2]), w$args, list(seed = 1), w$settings)))) # warm-up
  first <- NULL
  for (round in 1:3) {
    for (during in c(FALSE, TRUE)) {
      Sys.setenv(BULKEM_RESULT_DURING = if (during) "1" else "0")
      invisible(gc())
      t0 <- proc.time()[["elapsed"]]
      f <- call()
      wall <- proc.time()[["elapsed"]] - t0
      t <- attr(f, "timings")
      f <- strip(f)
      if (is.null(first)) first <- f
      rows[[length(rows) + 1]] <- data.frame(
        workload = name, round = round, result_built = if (during) "during" else "after",
        wall = round(wall, 3), engine = round(t[["engine"]], 3), finish = round(t[["finish"]], 3),
        result = round(t[["result"]], 3), identical_fits = identical(f, first))
      rm(f)
    }
  }
}
tab <- do.call(rbind, rows)
cat("| ", paste(names(tab), collapse = " | "), " |\n|", strrep(" --- |", ncol(tab)), "\n", sep = "")
for (i in seq_len(nrow(tab))) cat("| ", paste(format(tab[i, ]), collapse = " | "), " |\n", sep = "")
med <- aggregate(wall ~ workload + result_built, tab, stats::median)
cat("\nmedian wall (s):\n")
print(med, row.names = FALSE)
