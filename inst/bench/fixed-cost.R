# What values held fixed cost per E-step pass (issue 34's goal: each feature
# at most 1.5x the plain fit of the same shape), side by side in one run on
# one machine: the same datasets fitted with and without `fixed` (the
# first component's mean held at B1's truth, 1, and the second's weight at
# 0.7: a fixed mean's shape given it, and the free weight taking what the
# fixed one leaves), plain EM with max.iters 100, time per E-step pass and
# the ratio. B1's shape on the CPU engine (100 datasets x 2,000, K = 2, 10
# starts), IG; B2's on a GPU engine (10,000 x 1,000, K = 2, 100 starts).
#   Rscript inst/bench/fixed-cost.R [engine=cpu|cuda-batched|cuda-streams] [rounds=3]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
engine <- arg("engine", "cpu")
rounds <- as.integer(arg("rounds", "3"))
shape <- switch(engine, cpu = "B1", "cuda-streams" = "B1", "B2")
w <- workload(shape)
run <- function(fixed) {
  t0 <- proc.time()[["elapsed"]]
  f <- suppressWarnings(bulkem(w$datasets, 2, random.inits = w$args$random.inits, max.iters = 100,
                               epsilon = 1e-6, seed = 1, use.gpu = engine != "cpu",
                               fixed = if (fixed) list(mu = c(1, NA), alpha = c(NA, 0.7)),
                               control = list(accelerate = FALSE, short.runs = 0, standard.errors = FALSE, engine = engine)))
  s <- proc.time()[["elapsed"]] - t0
  c(seconds = s, passes = attr(f, "em_iterations"))
}
invisible(run(FALSE))  # warm-up
rows <- lapply(seq_len(rounds), function(r) {
  lapply(c(FALSE, TRUE), function(fixed) {
    m <- run(fixed)
    data.frame(round = r, fixed = fixed, seconds = round(m[["seconds"]], 3), passes = m[["passes"]],
               ns_per_obs_pass = signif(1e9 * m[["seconds"]] / m[["passes"]] / length(w$datasets[[1]]), 4))
  })
})
tab <- do.call(rbind, unlist(rows, recursive = FALSE))
cat(sprintf("%s on the %s engine (%d threads), %d datasets x %d, K = 2, %d starts\n",
            shape, engine, parallelly::availableCores(), length(w$datasets), length(w$datasets[[1]]),
            w$args$random.inits))
print(tab, row.names = FALSE)
best <- tapply(tab$ns_per_obs_pass, tab$fixed, min)
cat(sprintf("per pass, best of %d: plain %.4g ns/obs, fixed %.4g ns/obs, ratio %.3f\n",
            rounds, best[["FALSE"]], best[["TRUE"]], best[["TRUE"]] / best[["FALSE"]]))
