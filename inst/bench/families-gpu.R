# The families side by side on B2's shape (10,000 datasets x 1,000
# observations, K = 2, 100 starts, plain EM, max.iters 100) on a GPU engine:
# wall seconds, E-step passes and the kernels' summed seconds per pass. IG,
# lognormal and Student's t on B2's data, the gamma on gamma data of B2's
# means and shapes (issue 32's "fast" goal: each new family at most 2x the
# inverse Gaussian on the GPU). A warm-up call of two datasets first for
# each family (it compiles the family's kernel).
#   Rscript inst/bench/families-gpu.R [engine=cuda-batched] [rounds=2] [families=invgauss,lognormal,gamma,t]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
engine <- arg("engine", "cuda-batched")
rounds <- as.integer(arg("rounds", "2"))
families <- strsplit(arg("families", "invgauss,lognormal,gamma,t"), ",")[[1]]
w <- workload("B2")
set.seed(2015)
gamma_data <- lapply(seq_along(w$datasets), function(i) {
  comp <- sample.int(2, 1000, TRUE, c(0.3, 0.7))
  stats::rgamma(1000, shape = c(30, 5)[comp], rate = c(30, 5)[comp] / c(1, 3)[comp])
})
fit <- function(d, family) {
  bulkem(d, 2, family = family, random.inits = 100, max.iters = 100, epsilon = 1e-6, seed = 1,
         control = list(engine = engine, accelerate = FALSE, short.runs = 0))
}
run <- function(family) {
  d <- if (family == "gamma") gamma_data else w$datasets
  t0 <- proc.time()[["elapsed"]]
  f <- fit(d, family)
  s <- proc.time()[["elapsed"]] - t0
  passes <- attr(f, "em_iterations")
  kernel <- attr(f, "kernel_seconds")
  data.frame(family = family, seconds = round(s, 3), passes = passes,
             kernel_s = if (is.null(kernel)) NA else round(kernel, 3),
             kernel_ns_per_pass = if (is.null(kernel)) NA else round(1e9 * kernel / passes, 1))
}
for (family in families) invisible(fit(if (family == "gamma") gamma_data[1:2] else w$datasets[1:2], family))
rows <- do.call(rbind, lapply(seq_len(rounds), function(r) do.call(rbind, lapply(families, run))))
cat(sprintf("engine %s\n", engine))
print(rows, row.names = FALSE)
