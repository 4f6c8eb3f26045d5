# The engines side by side in one run, on the machine at hand (the GPU
# machine for GPU engines): wall time of the bulkem() call from R, start-fits
# per second, EM iterations (E-step passes) and kernel launches.
#
#   Rscript inst/bench/engines.R [engines=e1,e2] [setting=value ...] [workload[:fraction] ...]
#   e.g. Rscript inst/bench/engines.R B1 B2:0.1
#        Rscript inst/bench/engines.R engines=cuda-batched B2 B3
#        Rscript inst/bench/engines.R standard.errors=FALSE spurious.ratio=0 B5
# (a setting=value is a `control` setting, its value an R expression; every
# run has accelerate = FALSE and short.runs = 0, so that a start-fit is the
# peers' fixed EM)
#
# Prints a markdown table; record it with the command and the machine.
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
args <- commandArgs(trailingOnly = TRUE)
info <- bulkem_gpu_info()
engines <- c("cpu", if (info$usable) setdiff(bulkem:::engine_names, c("auto", "cpu")))
pick <- grepl("^engines=", args)
if (any(pick)) engines <- strsplit(sub("^engines=", "", args[pick][1]), ",")[[1]]
cmd_args <- args
args <- args[!pick]
setting <- grepl("=", args, fixed = TRUE)
control <- list(accelerate = FALSE, short.runs = 0)
for (a in args[setting]) control[[sub("=.*", "", a)]] <- eval(parse(text = sub("^[^=]*=", "", a)))
args <- args[!setting]
if (!length(args)) args <- c("B1", "B2:0.1")

# warm-up per workload and engine (below): loading, GPU set-up and kernel
# compilation (once per family and K) stay out of the timings
warm_up <- function(w, engine) invisible(bulkem(w$datasets[1], num.components = w$args$num.components,
  family = w$args$family, control = c(list(engine = engine), control)))

# Useful floating-point work: observations x E-step passes x the operations
# of one observation's E-step for K components (q: 3 (IG) or 2, log-density
# term: 2, max: 1, exponential: ~27, sum: 1, per-component responsibility
# and the 3 sums: 7; then 1 division and 3 for the log-likelihood), the
# M-step being negligible. An estimate of the work a fused E+M step must do,
# not a count of instructions.
useful_flops <- function(w, em_iterations) {
  k <- w$args$num.components
  per_obs <- k * ((if (w$args$family == "invgauss") 3 else 2) + 2 + 1 + 27 + 1 + 7) + 4
  mean_n <- mean(lengths(w$datasets))
  em_iterations * mean_n * per_obs
}

rows <- list()
for (a in args) {
  parts <- strsplit(a, ":", fixed = TRUE)[[1]]
  frac <- if (length(parts) > 1) as.numeric(parts[2]) else 1
  w <- workload(parts[1], fraction = frac)
  fits_total <- length(w$datasets) * w$args$random.inits
  for (engine in engines) {
    warm_up(w, engine)
    t0 <- proc.time()[["elapsed"]]
    f <- do.call(bulkem, c(list(w$datasets), w$args, list(seed = 1, control = c(list(engine = engine), control))))
    secs <- proc.time()[["elapsed"]] - t0
    rows[[length(rows) + 1]] <- data.frame(
      workload = if (frac < 1) sprintf("%s (%g: %d datasets)", parts[1], frac, length(w$datasets)) else parts[1],
      engine = engine, threads = attr(f, "threads"), seconds = round(secs, 3),
      start_fits = fits_total, start_fits_per_s = round(fits_total / secs),
      em_iterations = attr(f, "em_iterations"), kernel_launches = attr(f, "kernel_launches"),
      kernel_s = round(attr(f, "kernel_seconds"), 3),
      timings = paste(sprintf("%s %.3f", names(attr(f, "timings")), attr(f, "timings")), collapse = ", "),
      fp64_tflops = round(useful_flops(w, attr(f, "em_iterations")) / secs / 1e12, 2),
      mean_loglik = round(mean(vapply(f, `[[`, 0, "loglik"), na.rm = TRUE), 4))
  }
}
tab <- do.call(rbind, rows)
cpu <- tryCatch(sub("^model name\\s*:\\s*", "", grep("^model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
                error = function(e) "unknown CPU", warning = function(e) "unknown CPU")
cat(sprintf("machine: %s, %d cores; GPU: %s\n", cpu, parallel::detectCores(),
            if (nrow(info$devices)) paste(info$devices$name[1], "cc", info$devices$compute_capability[1]) else "none"))
cat(sprintf("command: Rscript inst/bench/engines.R %s\n\n", paste(cmd_args, collapse = " ")))
cat("|", paste(names(tab), collapse = " | "), "|\n|", paste(rep("---", ncol(tab)), collapse = " | "), "|\n")
for (i in seq_len(nrow(tab))) cat("|", paste(tab[i, ], collapse = " | "), "|\n")
