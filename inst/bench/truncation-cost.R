# What truncation costs (issue 34's goal: each feature at most 1.5x the
# plain fit of the same shape), side by side in one run on one machine:
# the same datasets (B1's, cut to the window [0.1, 8], about 4% of the
# values dropped) fitted without and with `truncation = c(0.1, 8)`, plain
# EM with max.iters 100, time per E-step pass and the ratio; then each at
# bulkem()'s defaults (SQUAREM, to convergence), total time and passes.
# B1's shape (100 datasets x 2,000, K = 2, 10 starts), IG; on the CPU
# engine or cuda-streams (cuda-batched does not fit truncated data).
# `fixed=alpha`: both fits with the first weight held at 0.3 (B1's), so
# the truncated one takes the coupled M-step of truncation_constrained.rs.
#   Rscript inst/bench/truncation-cost.R [engine=cpu|cuda-streams] [rounds=3] [fixed=none|alpha]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
engine <- arg("engine", "cpu")
rounds <- as.integer(arg("rounds", "3"))
held <- if (arg("fixed", "none") == "alpha") list(alpha = c(0.3, NA))
w <- workload("B1")
window <- c(0.1, 8)
datasets <- lapply(w$datasets, function(x) x[x > window[1] & x < window[2]])
run <- function(truncated, defaults = FALSE) {
  t0 <- proc.time()[["elapsed"]]
  f <- suppressWarnings(bulkem(datasets, 2, random.inits = w$args$random.inits,
                               max.iters = if (defaults) 5000 else 100,
                               seed = 1, use.gpu = engine != "cpu",
                               truncation = if (truncated) window, fixed = held,
                               control = list(accelerate = defaults, standard.errors = defaults,
                                              engine = engine)))
  s <- proc.time()[["elapsed"]] - t0
  c(seconds = s, passes = attr(f, "em_iterations"))
}
invisible(run(FALSE))  # warm-up
n_obs <- mean(lengths(datasets))
rows <- lapply(seq_len(rounds), function(r) {
  lapply(c(FALSE, TRUE), function(truncated) {
    m <- run(truncated)
    data.frame(round = r, truncated = truncated, seconds = round(m[["seconds"]], 3), passes = m[["passes"]],
               ns_per_obs_pass = signif(1e9 * m[["seconds"]] / m[["passes"]] / n_obs, 4))
  })
})
tab <- do.call(rbind, unlist(rows, recursive = FALSE))
cat(sprintf("B1 cut to [%g, %g] on the %s engine (%d threads), %d datasets x %.0f (mean), K = 2, %d starts%s\n",
            window[1], window[2], engine, parallelly::availableCores(), length(datasets), n_obs,
            w$args$random.inits, if (!is.null(held)) ", alpha1 held at 0.3" else ""))
print(tab, row.names = FALSE)
best <- tapply(tab$ns_per_obs_pass, tab$truncated, min)
cat(sprintf("plain EM, per pass, best of %d: plain %.4g ns/obs, truncated %.4g ns/obs, ratio %.3f\n",
            rounds, best[["FALSE"]], best[["TRUE"]], best[["TRUE"]] / best[["FALSE"]]))
d <- lapply(c(FALSE, TRUE), function(truncated) run(truncated, defaults = TRUE))
cat(sprintf("defaults (SQUAREM, to convergence, standard errors): plain %.3f s (%d passes), truncated %.3f s (%d passes), ratio %.3f\n",
            d[[1]][["seconds"]], d[[1]][["passes"]], d[[2]][["seconds"]], d[[2]][["passes"]],
            d[[2]][["seconds"]] / d[[1]][["seconds"]]))
