# Multivariate Normal mixtures on one GPU (issue 33's GPU goal: workload M1,
# 10,000 datasets x 1,000 observations, d = 4, K = 3, full covariance, 20
# starts, defaults, <= 0.5 s wall from R on one H100), beside the CPU engine
# on a sample of the same datasets, and the agreement of the two engines.
#   Rscript inst/bench/mv-gpu.R [datasets=10000] [cpu=200] [rounds=2]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) as.integer(sub(".*=", "", a[1])) else default
}
n_sets <- arg("datasets", 10000L)
n_cpu <- min(arg("cpu", 200L), n_sets)
rounds <- arg("rounds", 2L)
set.seed(33)
data <- m1_datasets(n_sets)
info <- bulkem_gpu_info()
cat(sprintf("GPU: %s; %d CPU threads\n", paste(info$devices$name, collapse = ", "), parallel::detectCores()))
for (r in seq_len(rounds)) {
  t0 <- proc.time()[["elapsed"]]
  gpu <- bulkem(data, num.components = 3, seed = 1, control = list(engine = "cuda-batched"))
  s <- proc.time()[["elapsed"]] - t0
  tm <- attr(gpu, "timings")
  cat(sprintf("round %d: cuda-batched, %d datasets: %.3f s wall (engine %.3f, starts %.3f, kernels %.3f, record %.3f, R after %.3f, passes %s, launches %d)\n",
              r, n_sets, s, tm[["engine"]], tm[["cuda-batched: starts"]], tm[["cuda-batched: kernels"]], tm[["cuda-batched: record"]], tm[["after"]], format(attr(gpu, "em_iterations")), attr(gpu, "kernel_launches")))
}
t0 <- proc.time()[["elapsed"]]
cpu <- bulkem(data[seq_len(n_cpu)], num.components = 3, seed = 1, use.gpu = FALSE)
s <- proc.time()[["elapsed"]] - t0
cat(sprintf("cpu, %d datasets: %.3f s wall (%d threads)\n", n_cpu, s, attr(cpu, "threads")))
llc <- vapply(cpu, function(f) f$loglik, 0)
llg <- vapply(gpu[seq_len(n_cpu)], function(f) f$loglik, 0)
same <- mapply(function(a, b) identical(a$best_start, b$best_start), cpu, gpu[seq_len(n_cpu)])
cat(sprintf("agreement on %d datasets: loglik within 1e-6 relative %d, same winning start %d, worst |dll| %.3g\n",
            n_cpu, sum(abs(llg - llc) <= 1e-6 * (1 + abs(llc))), sum(same), max(abs(llg - llc))))
cat(sprintf("status: %s\n", paste(names(table(vapply(gpu, function(f) f$status, ""))),
                                   table(vapply(gpu, function(f) f$status, "")), collapse = ", ")))
