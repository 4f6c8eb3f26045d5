# A call's cost in R's garbage collector, side by side: each setting below
# is a fresh R process (R's heap is sized when R starts, so only a new
# process can show it), alternated over rounds, timing a process's first
# bulkem() call of the workload (after engines.R's one-dataset warm-up)
# and its second.
#
#   Rscript inst/bench/r-heap.R [engine=cuda-batched] [rounds=2] [workload[:fraction]]
#   e.g. Rscript inst/bench/r-heap.R B5
#        Rscript inst/bench/r-heap.R engine=cpu B5:0.1
#
# Settings: R's defaults; R started with a larger heap (R_NSIZE = 10M cons
# cells, R_VSIZE = 1G bytes: see ?Memory, the same as `R --min-nsize=10M
# --min-vsize=1G`); and that with glibc's malloc keeping freed memory
# (GLIBC_TUNABLES, Linux with glibc only). Plain EM, as in engines.R.
# Prints a markdown table; record it with the command and the machine.
args <- commandArgs(trailingOnly = TRUE)
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")

if (length(args) && args[1] == "--child") {
  suppressPackageStartupMessages(library(bulkem))
  source(file.path(here, "workloads.R"))
  parts <- strsplit(args[3], ":", fixed = TRUE)[[1]]
  w <- workload(parts[1], fraction = if (length(parts) > 1) as.numeric(parts[2]) else 1)
  control <- list(engine = args[2], accelerate = FALSE, short.runs = 0)
  invisible(suppressWarnings(bulkem(w$datasets[1], num.components = w$args$num.components,
                                    family = w$args$family, control = control)))
  for (call in c("first", "second")) {
    t0 <- proc.time()[["elapsed"]]
    f <- suppressWarnings(do.call(bulkem, c(list(w$datasets), w$args, list(seed = 1, control = control))))
    secs <- proc.time()[["elapsed"]] - t0
    tm <- attr(f, "timings")
    tm <- tm[!grepl("^batched", names(tm)) & !names(tm) %in% c("choose K", "total")]
    cat(sprintf("RESULT\t%s\t%.3f\t%s\t%.10f\n", call, secs, paste(sprintf("%s %.3f", names(tm), tm), collapse = ", "),
                sum(vapply(f, `[[`, 0, "loglik"), na.rm = TRUE)))
    rm(f)
    invisible(gc())
  }
  quit(save = "no")
}

pick <- function(key, default) {
  hit <- grep(paste0("^", key, "="), args, value = TRUE)
  if (length(hit)) sub("^[^=]*=", "", hit[1]) else default
}
gpu <- isTRUE(tryCatch(bulkem::bulkem_gpu_info()$usable, error = function(e) FALSE))
engine <- pick("engine", if (gpu) "cuda-batched" else "cpu")
rounds <- as.integer(pick("rounds", "2"))
load <- grep("=", args, fixed = TRUE, invert = TRUE, value = TRUE)
load <- if (length(load)) load[1] else "B5"

no_trim <- paste0("GLIBC_TUNABLES=glibc.malloc.trim_threshold=4294967295:",
                  "glibc.malloc.top_pad=268435456:glibc.malloc.mmap_threshold=33554432")
settings <- list(
  "R's defaults" = character(),
  "R_NSIZE=10M R_VSIZE=1G" = c("R_NSIZE=10M", "R_VSIZE=1G"),
  "the same, and glibc keeping freed memory" = c("R_NSIZE=10M", "R_VSIZE=1G", no_trim)
)
rscript <- file.path(R.home("bin"), "Rscript")
script <- if (file.exists("inst/bench/r-heap.R")) "inst/bench/r-heap.R" else file.path(here, "r-heap.R")
rows <- list()
for (round in seq_len(rounds)) {
  for (s in names(settings)) {
    out <- system2(rscript, c(script, "--child", engine, load), env = settings[[s]], stdout = TRUE, stderr = TRUE)
    res <- grep("^RESULT\t", out, value = TRUE)
    if (length(res) != 2) {
      cat(out, sep = "\n")
      stop("the child process for '", s, "' gave no result", call. = FALSE)
    }
    for (r in strsplit(res, "\t", fixed = TRUE)) {
      rows[[length(rows) + 1]] <- data.frame(round = round, setting = s, call = r[2], seconds = as.numeric(r[3]),
                                             timings = r[4], loglik_sum = r[5])
    }
  }
}
tab <- do.call(rbind, rows)
cpu <- tryCatch(sub("^model name\\s*:\\s*", "", grep("^model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
                error = function(e) "unknown CPU", warning = function(e) "unknown CPU")
cat(sprintf("machine: %s, %d cores; engine %s\n", cpu, parallel::detectCores(), engine))
cat(sprintf("command: Rscript inst/bench/r-heap.R %s\n\n", paste(args, collapse = " ")))
cat("|", paste(names(tab), collapse = " | "), "|\n|", paste(rep("---", ncol(tab)), collapse = " | "), "|\n")
for (i in seq_len(nrow(tab))) cat("|", paste(tab[i, ], collapse = " | "), "|\n")
