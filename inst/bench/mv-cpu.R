# Multivariate Normal mixtures on the CPU engine (issue 33's CPU goal:
# >= 50x mclust::Mclust called in a loop, per start-fit, on 200 datasets of
# M1's shape): 200 datasets x 1,000 observations, d = 4, K = 3, full
# covariance, bulkem's defaults (20 starts); Mclust(G = 3, "VVV") on each
# dataset in a loop (one fit from its hierarchical start). Reports wall
# time, time per start-fit, and how often bulkem's log-likelihood reaches
# mclust's.
#   Rscript inst/bench/mv-cpu.R [threads=2] [datasets=200] [mclust=50]
suppressPackageStartupMessages({
  library(bulkem)
  library(mclust)
})
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) as.integer(sub(".*=", "", a[1])) else default
}
threads <- arg("threads", 2L)
n_sets <- arg("datasets", 200L)
n_mclust <- min(arg("mclust", 50L), n_sets)

set.seed(33)
data <- m1_datasets(n_sets)

t0 <- proc.time()[["elapsed"]]
fits <- bulkem(data, num.components = 3, seed = 1, use.gpu = FALSE, control = list(threads = threads))
bulkem_s <- proc.time()[["elapsed"]] - t0

t0 <- proc.time()[["elapsed"]]
ref <- lapply(data[seq_len(n_mclust)], function(x) Mclust(x, G = 3, modelNames = "VVV", verbose = FALSE))
mclust_s <- proc.time()[["elapsed"]] - t0

starts <- sum(vapply(fits, function(f) f$starts_run, 0L))
per_fit_bulkem <- bulkem_s / starts
per_fit_mclust <- mclust_s / n_mclust
ll_b <- vapply(fits[seq_len(n_mclust)], function(f) f$loglik, 0)
ll_m <- vapply(ref, function(m) m$loglik, 0)
cat(sprintf("machine: %s, %d thread(s); R %s\n", Sys.info()[["nodename"]], threads, getRversion()))
cat(sprintf("bulkem: %d datasets, %d start-fits, %.3f s (%.1f us per start-fit, %s E-step passes)\n",
            n_sets, starts, bulkem_s, 1e6 * per_fit_bulkem, format(attr(fits, "em_iterations"))))
cat(sprintf("mclust: %d datasets in a loop, %.3f s (%.1f ms per fit)\n", n_mclust, mclust_s,
            1e3 * per_fit_mclust))
cat(sprintf("per start-fit: bulkem %.1fx mclust\n", per_fit_mclust / per_fit_bulkem))
cat(sprintf("per dataset (bulkem's 20 starts against mclust's one fit): %.2fx\n",
            per_fit_mclust / (bulkem_s / n_sets)))
cat(sprintf("log-likelihood: bulkem >= mclust - 1e-6 |ll| on %d of %d; higher by > 0.01 on %d; worst %.3g\n",
            sum(ll_b >= ll_m - 1e-6 * abs(ll_m)), n_mclust, sum(ll_b > ll_m + 0.01),
            min(ll_b - ll_m)))
cat(sprintf("status: %s\n", paste(names(table(vapply(fits, function(f) f$status, ""))),
                                   table(vapply(fits, function(f) f$status, "")), collapse = ", ")))
