# What the E-step's exponential floor (mathx::EXP_FLOOR) costs on the CPU
# engine: two builds of bulkem, side by side in one run and alternated,
# each fitting B2 (a fraction of its datasets, IG K = 2) and B4 (IG K = 3,
# ragged) with random and partition starts at bulkem()'s defaults otherwise.
# Wall seconds and E-step passes per build; the fits themselves are
# compared with inst/bench/cpu-fingerprint.R.
#   Rscript inst/bench/exp-floor.R libs=/tmp/lib-old,/tmp/lib-new [fraction=0.2] [rounds=2]
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
libs <- strsplit(arg("libs", ""), ",")[[1]]
fraction <- as.numeric(arg("fraction", "0.2"))
rounds <- as.integer(arg("rounds", "2"))
if (length(libs) < 1) stop("usage: exp-floor.R libs=LIB1,LIB2 [fraction=0.2] [rounds=2]")
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
one <- function(lib, b, starts) {
  # each build in a fresh R, so that two builds of one package never meet
  code <- sprintf(paste(
    "suppressPackageStartupMessages(library(bulkem, lib.loc = '%s'));",
    "source('%s'); w <- workload('%s', %g);",
    "t0 <- proc.time()[['elapsed']];",
    "f <- suppressWarnings(bulkem(w$datasets, w$args$num.components, seed = 1, use.gpu = FALSE,",
    "  control = list(engine = 'cpu', starts = '%s')));",
    "cat(proc.time()[['elapsed']] - t0, attr(f, 'em_iterations'))"),
    lib, file.path(here, "workloads.R"), b, fraction, starts)
  out <- system2(file.path(R.home("bin"), "Rscript"), c("-e", shQuote(code)), stdout = TRUE)
  v <- as.numeric(strsplit(tail(out, 1), " ")[[1]])
  data.frame(build = lib, workload = b, starts = starts, seconds = round(v[1], 3), passes = v[2])
}
rows <- list()
for (r in seq_len(rounds)) {
  for (b in c("B2", "B4")) for (s in c("random", "partition")) for (lib in libs) {
    rows[[length(rows) + 1]] <- cbind(round = r, one(lib, b, s))
  }
}
cat(sprintf("machine: %s, %d cores; fraction %g\n", Sys.info()[["nodename"]], parallel::detectCores(), fraction))
print(do.call(rbind, rows), row.names = FALSE)
