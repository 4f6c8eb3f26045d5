# What observation weights cost (issue 34's goal: each feature at most 1.5x
# the plain fit of the same shape), side by side in one run on one machine:
# the same datasets fitted without weights and with weights (each
# observation a weight drawn from 0.5-1.5, so every pass takes the weighted
# loops), plain EM with max.iters 100 (both run about as many passes), time
# per E-step pass and the ratio. B1's shape on the CPU engine (100 datasets x
# 2,000, K = 2, 10 starts), IG; the weighted pass is the block loops with
# one logarithm per observation, the plain one the AVX2/AVX-512 pass. On a
# GPU engine, B2's shape (10,000 x 1,000, K = 2, 100 starts). `shape=M1`:
# multivariate data, M1's (1,000 x 4, K = 3, 20 starts; `datasets` of them,
# 10,000 by default), each row a weight from 0.5-1.5.
#   Rscript inst/bench/weights-cost.R [engine=cpu|cuda-batched|cuda-streams] [rounds=3] [noise=FALSE]
#     [shape=M1 datasets=N]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
engine <- arg("engine", "cpu")
rounds <- as.integer(arg("rounds", "3"))
noise <- as.logical(arg("noise", "FALSE"))
shape <- arg("shape", switch(engine, cpu = "B1", "cuda-streams" = "B1", "B2"))
multivariate <- shape == "M1"
w <- if (multivariate) {
  set.seed(33)
  list(datasets = m1_datasets(as.integer(arg("datasets", "10000"))), args = list(random.inits = 20))
} else {
  workload(shape)
}
k <- if (multivariate) 3 else 2
set.seed(7)
wts <- lapply(w$datasets, function(x) stats::runif(NROW(x), 0.5, 1.5))
run <- function(weighted) {
  t0 <- proc.time()[["elapsed"]]
  control <- list(standard.errors = FALSE, engine = engine)
  if (!multivariate) control <- c(control, list(accelerate = FALSE, short.runs = 0))
  f <- bulkem(w$datasets, k, random.inits = w$args$random.inits, max.iters = 100, epsilon = 1e-6, seed = 1,
              noise = noise, use.gpu = engine != "cpu", weights = if (weighted) wts, control = control)
  s <- proc.time()[["elapsed"]] - t0
  c(seconds = s, passes = attr(f, "em_iterations"))
}
invisible(run(FALSE))  # warm-up
rows <- lapply(seq_len(rounds), function(r) {
  lapply(c(FALSE, TRUE), function(weighted) {
    m <- run(weighted)
    data.frame(round = r, weighted = weighted, seconds = round(m[["seconds"]], 3), passes = m[["passes"]],
               ns_per_obs_pass = signif(1e9 * m[["seconds"]] / m[["passes"]] / NROW(w$datasets[[1]]), 4))
  })
})
tab <- do.call(rbind, unlist(rows, recursive = FALSE))
cat(sprintf("%s on the %s engine (%d threads), %d datasets x %d, K = %d, %d starts, noise = %s\n",
            shape, engine, parallelly::availableCores(), length(w$datasets), NROW(w$datasets[[1]]), k,
            w$args$random.inits, noise))
print(tab, row.names = FALSE)
best <- tapply(tab$ns_per_obs_pass, tab$weighted, min)
cat(sprintf("per pass, best of %d: plain %.4g ns/obs, weighted %.4g ns/obs, ratio %.3f\n",
            rounds, best[["FALSE"]], best[["TRUE"]], best[["TRUE"]] / best[["FALSE"]]))
