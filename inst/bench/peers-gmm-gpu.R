# bulkem's cuda-batched against gmm_gpu (PyPI gmm-gpu 0.2.8, PyTorch), the
# one library built to fit many small GMMs in one GPU call (issue 33's
# anchors), side by side in one run on one GPU:
#   Rscript inst/bench/peers-gmm-gpu.R [m1=1000] [python=python3]
# Workloads: gmm_gpu's README (1,000 datasets x 400 points, d = 2, K = 2)
# and `m1` datasets of M1 (1,000 x 4, K = 3; 20 starts: gmm_gpu runs 20
# instances of each dataset). Two comparisons each:
# - equal work: gmm_gpu's fits 100 EM iterations each (tol 0); bulkem's
#   up to 100 (epsilon 1e-300: a fit stops only where fp64 sees no more
#   gain), one start for the README's one instance; time per fit-iteration;
# - defaults: gmm_gpu at its defaults (tol 1e-3, max_iter 100) against
#   bulkem's defaults, and on how many datasets gmm_gpu's best instance
#   reaches bulkem's log-likelihood (per observation, to 1e-6 of fp32's
#   reach).
# Needs python3 with torch and gmm_gpu (carried as a wheel to the GPU
# machine: `pip install --no-deps gmm_gpu-0.2.8-py3-none-any.whl`).
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
python <- arg("python", "python3")
n_m1 <- as.integer(arg("m1", "1000"))
peer <- function(data, k, reps, max_iter, tol) {
  f <- tempfile(fileext = ".bin")
  on.exit(unlink(f))
  writeBin(unlist(lapply(data, function(m) as.double(t(m)))), f)
  out <- system2(python, c(file.path(here, "peers_gmm_gpu.py"), f, length(data), nrow(data[[1]]),
                           ncol(data[[1]]), k, reps, max_iter, tol), stdout = TRUE)
  line <- utils::tail(out, 1)
  parse <- function(key) {
    m <- regmatches(line, regexpr(paste0("\"", key, "\": [^,}]+"), line))
    as.numeric(sub(".*: ", "", m))
  }
  best <- sub(".*\"best_per_obs\": \\[([^]]*)\\].*", "\\1", line)
  list(seconds = parse("seconds"), instances = parse("instances"), iterations = parse("mean_iterations"),
       best = as.numeric(strsplit(best, ", ")[[1]]))
}
ours <- function(data, k, ...) {
  invisible(suppressWarnings(bulkem(data[1:2], k, seed = 1, control = list(engine = "cuda-batched"), ...)))
  t0 <- proc.time()[["elapsed"]]
  f <- suppressWarnings(bulkem(data, k, seed = 1, control = list(engine = "cuda-batched"), ...))
  list(seconds = proc.time()[["elapsed"]] - t0, passes = attr(f, "em_iterations"),
       loglik = vapply(f, function(g) g$loglik, 0), n = vapply(f, function(g) g$n, 0L))
}
rows <- list()
add <- function(workload, run, who, seconds, fits, passes, reached = NA) {
  rows[[length(rows) + 1]] <<- data.frame(workload = workload, run = run, library = who, seconds = round(seconds, 3),
                                          fits = fits, passes = passes, ns_per_fit_pass = round(1e9 * seconds / passes, 1),
                                          reaches_bulkem = reached)
}
set.seed(1)
readme <- lapply(1:1000, function(i) {
  rbind(matrix(rnorm(400), 200), matrix(rnorm(400), 200) + 1.5)
})
set.seed(33)
m1 <- m1_datasets(n_m1)
for (w in list(list("README (1,000 x 400, d 2, K 2)", readme, 2, 1), list(sprintf("M1 (%d x 1,000, d 4, K 3)", n_m1), m1, 3, 20))) {
  name <- w[[1]]; data <- w[[2]]; k <- w[[3]]; reps <- w[[4]]
  p <- peer(data, k, reps, 100, 0)
  add(name, "equal work: 100 iterations", "gmm_gpu fp32", p$seconds, p$instances, p$instances * 100)
  b <- ours(data, k, random.inits = reps, max.iters = 100, epsilon = 1e-300)
  add(name, "equal work: 100 iterations", "bulkem fp64", b$seconds, length(data) * reps, b$passes)
  p <- peer(data, k, reps, 100, 1e-3)
  b <- ours(data, k, random.inits = reps)
  reached <- mean(p$best >= b$loglik / b$n - 1e-6, na.rm = TRUE)
  add(name, "defaults", "gmm_gpu fp32", p$seconds, p$instances, round(p$instances * p$iterations), round(reached, 3))
  add(name, "defaults", "bulkem fp64", b$seconds, length(data) * reps, b$passes)
}
print(do.call(rbind, rows), row.names = FALSE)
