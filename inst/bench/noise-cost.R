# What a noise component costs (issue 32's "fast" goal: at most 10% more
# than the plain fit), side by side in one run on one machine: the same
# datasets fitted with and without noise = TRUE, plain EM with max.iters 100
# (so that both run about as many passes), time per E-step pass and the
# ratio. B1's shape on the CPU engine (100 datasets x 2,000, K = 2, 10
# starts), B2's on cuda-batched (10,000 x 1,000, K = 2, 100 starts), IG.
#   Rscript inst/bench/noise-cost.R [engine=cpu|cuda-batched|cuda-streams] [rounds=3]
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
run <- function(noise) {
  t0 <- proc.time()[["elapsed"]]
  f <- bulkem(w$datasets, 2, random.inits = w$args$random.inits, max.iters = 100, epsilon = 1e-6, seed = 1,
              noise = noise, use.gpu = engine != "cpu",
              control = list(accelerate = FALSE, short.runs = 0, engine = engine))
  s <- proc.time()[["elapsed"]] - t0
  c(seconds = s, passes = attr(f, "em_iterations"))
}
invisible(run(FALSE))  # warm-up (kernels compiled, memory touched)
rows <- lapply(seq_len(rounds), function(r) {
  lapply(c(FALSE, TRUE), function(noise) {
    m <- run(noise)
    data.frame(round = r, noise = noise, seconds = round(m[["seconds"]], 3), passes = m[["passes"]],
               ns_per_obs_pass = signif(1e9 * m[["seconds"]] / m[["passes"]] / length(w$datasets[[1]]), 4))
  })
})
tab <- do.call(rbind, unlist(rows, recursive = FALSE))
cat(sprintf("%s on the %s engine, %d datasets x %d, K = 2, %d starts\n", shape, engine,
            length(w$datasets), length(w$datasets[[1]]), w$args$random.inits))
print(tab, row.names = FALSE)
best <- tapply(tab$ns_per_obs_pass, tab$noise, min)
cat(sprintf("per pass, best of %d: plain %.4g ns/obs, noise %.4g ns/obs, ratio %.3f\n",
            rounds, best[["FALSE"]], best[["TRUE"]], best[["TRUE"]] / best[["FALSE"]]))
