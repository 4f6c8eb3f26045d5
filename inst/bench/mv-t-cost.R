# Multivariate t against Normal mixtures of the same shape (issue 33's
# goal: a t mixture at most 2x the Normal one), and what the standard
# errors (on by default) add to a multivariate call: workload M1's shape
# (d = 4, K = 3, full covariance, 20 starts, 1,000 observations), on
# cuda-batched when a GPU is usable and on the CPU engine.
#   Rscript inst/bench/mv-t-cost.R [gpu=10000] [cpu=200] [rounds=2]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) as.integer(sub(".*=", "", a[1])) else default
}
n_gpu <- arg("gpu", 10000L)
n_cpu <- arg("cpu", 200L)
rounds <- arg("rounds", 2L)
set.seed(33)
data <- m1_datasets(max(n_gpu, n_cpu))
gpu <- isTRUE(bulkem_gpu_info()$usable)
cat(sprintf("%s; %d CPU threads\n", if (gpu) paste("GPU:", paste(bulkem_gpu_info()$devices$name, collapse = ", "))
            else "no GPU", parallel::detectCores()))
run <- function(label, engine, n, family, se = TRUE) {
  ctl <- list(engine = engine, standard.errors = se)
  for (r in seq_len(rounds)) {
    t0 <- proc.time()[["elapsed"]]
    f <- bulkem(data[seq_len(n)], num.components = 3, family = family, seed = 1, control = ctl,
                use.gpu = engine != "cpu")
    s <- proc.time()[["elapsed"]] - t0
    tm <- attr(f, "timings")
    passes <- attr(f, "em_iterations")
    st <- table(vapply(f, function(x) x$status, ""))
    cat(sprintf("%-28s round %d: %8.3f s wall, %8.3f s engine, %.4g E-step passes (%.1f per start-fit), %.3g us per pass; %s\n",
                label, r, s, tm[["engine"]], passes, passes / (n * 20), 1e6 * tm[["engine"]] / passes,
                paste(names(st), st, collapse = ", ")))
  }
  invisible(f)
}
if (gpu) {
  run(sprintf("cuda-batched normal (%d)", n_gpu), "cuda-batched", n_gpu, "normal")
  run(sprintf("cuda-batched normal, no se (%d)", n_gpu), "cuda-batched", n_gpu, "normal", se = FALSE)
  run(sprintf("cuda-batched t (%d)", n_gpu), "cuda-batched", n_gpu, "t")
}
if (n_cpu > 0) {
  run(sprintf("cpu normal (%d)", n_cpu), "cpu", n_cpu, "normal")
  run(sprintf("cpu normal, no se (%d)", n_cpu), "cpu", n_cpu, "normal", se = FALSE)
  run(sprintf("cpu t (%d)", n_cpu), "cpu", n_cpu, "t")
}
