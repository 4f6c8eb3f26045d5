# What control$short.runs (emEM, issue 31) costs on an engine, at bulkem()'s
# defaults otherwise (SQUAREM, epsilon 1e-6, max.iters 5000, 20 starts):
# B2's data (10,000 datasets x 1,000 observations, IG K = 2), B4's
# (5,000 ragged datasets, IG K = 3) and, with b5=TRUE, B5's (200,000
# datasets x 100 observations, Normal K = 2), each with the search before
# short runs were the default (mixed starts, none), bulkem()'s default since 2026-11-28
# (partition starts, short runs by K: 30 for K = 2, 100 for K = 3), and
# partition starts with 200 short runs of 10 iterations, the best 20
# continued. Wall seconds (a warm-up call first) and E-step passes; then, on
# a GPU engine, each scheme's agreement with the CPU engine on 200 of B4's
# datasets (inst/bench/agreement-criterion.R).
#   Rscript inst/bench/short-runs-cost.R [engine=cuda-batched] [rounds=2] [b5=TRUE]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
source(file.path(here, "agreement-criterion.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
engine <- arg("engine", "cuda-batched")
rounds <- as.integer(arg("rounds", "2"))
schemes <- list(`mixed, none (before)` = list(starts = "mixed", short.runs = 0L),
                `default: partition, by K` = list(),
                `partition, 200 x 10` = list(starts = "partition", short.runs = 200L, short.iters = 10L))
fit <- function(w, ctl, eng = engine, pick = seq_along(w$datasets)) {
  suppressWarnings(bulkem(w$datasets[pick], w$args$num.components, family = w$args$family, seed = 1,
                          use.gpu = if (eng == "cpu") FALSE else NA, control = c(list(engine = eng), ctl)))
}
rows <- list()
for (b in c("B2", "B4", if (as.logical(arg("b5", "FALSE"))) "B5")) {
  w <- workload(b)
  invisible(fit(w, list(), pick = 1:2))
  for (r in seq_len(rounds)) {
    for (s in names(schemes)) {
      t0 <- proc.time()[["elapsed"]]
      f <- fit(w, schemes[[s]])
      rows[[length(rows) + 1]] <- data.frame(workload = b, scheme = s, round = r,
                                             seconds = round(proc.time()[["elapsed"]] - t0, 3),
                                             passes = attr(f, "em_iterations"))
    }
  }
}
cat(sprintf("engine %s\n", engine))
print(do.call(rbind, rows), row.names = FALSE)
if (engine != "cpu") {
  w <- workload("B4")
  pick <- round(seq(1, length(w$datasets), length.out = 200))
  for (s in names(schemes)) {
    a <- agreement(unclass(fit(w, schemes[[s]], "cpu", pick)), unclass(fit(w, schemes[[s]], engine, pick)))
    cat(sprintf("B4, %s: the CPU's optimum on %d of 200; %d converged fits apart; worst parameter %.2e\n",
                s, a[["same_optimum"]], a[["converged_apart"]], a[["worst_param_rel"]]))
  }
}
