# bulkem against scikit-learn's GaussianMixture called in a loop over the
# datasets, spread over every core (issue 33's goal: ahead of scikit-learn
# in a loop on 16 cores), side by side in one run:
#   Rscript inst/bench/peers-sklearn.R [datasets=320] [jobs=<cores>] [python=python3]
# Workload: the first `datasets` of M1 (1,000 x 4, K = 3, full covariance,
# 20 starts each). Two comparisons:
# - equal work: every start runs 100 EM iterations (scikit-learn tol 0,
#   bulkem epsilon 1e-300 so that a fit stops only where fp64 sees no more
#   gain); time per start-iteration;
# - defaults: scikit-learn's defaults (k-means starts, tol 1e-3 on the mean
#   log-likelihood per observation, max_iter 100) with n_init = 20, against
#   bulkem's defaults; and on how many datasets scikit-learn's best start
#   reaches bulkem's log-likelihood (per observation, within 1e-6).
# bulkem runs on the CPU engine with `jobs` threads and, where a GPU is
# usable, on cuda-batched (a warm-up call first: NVRTC compiles once).
# Needs python3 with scikit-learn and joblib (Debian: python3-sklearn).
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
n_sets <- as.integer(arg("datasets", "320"))
jobs <- as.integer(arg("jobs", parallel::detectCores()))
python <- arg("python", "python3")
gpu <- isTRUE(bulkem_gpu_info()$usable)
starts <- 20L

set.seed(33)
data <- m1_datasets(n_sets)
file <- tempfile(fileext = ".bin")
writeBin(unlist(lapply(data, function(m) as.double(t(m)))), file)

sklearn <- function(max_iter, tol, init) {
  out <- system2(python, c(file.path(here, "peers_sklearn.py"), file, n_sets, 1000, 4, 3, starts, max_iter, tol,
                           init, jobs), stdout = TRUE)
  line <- utils::tail(out, 1)
  num <- function(key) as.numeric(sub(paste0(".*\"", key, "\": ([^,}]+).*"), "\\1", line))
  best <- sub(".*\"best_per_obs\": \\[([^]]*)\\].*", "\\1", line)
  list(seconds = num("seconds"), iterations = num("iterations"), best = as.numeric(strsplit(best, ", ")[[1]]))
}
ours <- function(engine, ...) {
  ctl <- list(engine = engine, threads = jobs)
  if (engine != "cpu") invisible(bulkem(data[1:2], 3, seed = 1, control = ctl, ...))
  t0 <- proc.time()[["elapsed"]]
  f <- bulkem(data, 3, seed = 1, random.inits = starts, control = ctl, ...)
  list(seconds = proc.time()[["elapsed"]] - t0, passes = attr(f, "em_iterations"),
       loglik = vapply(f, function(g) g$loglik, 0), n = vapply(f, function(g) g$n, 0L))
}
rows <- list()
add <- function(run, who, seconds, passes, reached = NA) {
  rows[[length(rows) + 1]] <<- data.frame(run = run, library = who, seconds = round(seconds, 3), passes = passes,
                                          us_per_start_pass = round(1e6 * seconds / passes, 2),
                                          reaches_bulkem = reached)
}
engines <- c("cpu", if (gpu) "cuda-batched")
cat(sprintf("%d datasets of M1 (1,000 x 4, K = 3), %d starts each; %d cores used; machine %s; GPU: %s\n", n_sets,
            starts, jobs, Sys.info()[["nodename"]],
            if (gpu) paste(bulkem_gpu_info()$devices$name, collapse = ", ") else "none"))

p <- sklearn(100, 0, "random_from_data")
add("equal work: 100 iterations", "scikit-learn (random points)", p$seconds, p$iterations)
for (e in engines) {
  b <- ours(e, max.iters = 100, epsilon = 1e-300)
  add("equal work: 100 iterations", paste("bulkem", e), b$seconds, b$passes)
}
p <- sklearn(100, 1e-3, "kmeans")
for (e in engines) {
  b <- ours(e)
  if (e == "cpu") ref <- b$loglik / b$n
  add("defaults", paste("bulkem", e), b$seconds, b$passes)
}
add("defaults", "scikit-learn (k-means starts)", p$seconds, p$iterations, round(mean(p$best >= ref - 1e-6), 3))
unlink(file)
print(do.call(rbind, rows), row.names = FALSE)
cat(sprintf("scikit-learn's best start per observation minus bulkem's (defaults): quartiles %s\n",
            paste(format(stats::quantile(p$best - ref, c(0, 0.25, 0.5, 0.75, 1)), digits = 3), collapse = ", ")))
