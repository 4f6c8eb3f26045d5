# The bootstrap of multivariate fits (issue 33): M1-shaped datasets (1,000
# observations, d = 4, K = 3, full covariance) fitted, then bootstrapped
# (standard errors, B replicates each) on the CPU engine and on cuda-batched
# where a GPU is usable, side by side in one run; the two engines' standard
# errors compared.
#   Rscript inst/bench/bootstrap-mv.R [datasets=100] [B=100] [starts=5] [gpu=1]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) as.integer(sub(".*=", "", a[1])) else default
}
n_sets <- arg("datasets", 100L)
B <- arg("B", 100L)
starts <- arg("starts", 5L)
gpu <- arg("gpu", 1L) == 1L && isTRUE(bulkem_gpu_info()$usable)
set.seed(33)
data <- m1_datasets(n_sets)
cat(sprintf("%d datasets of 1,000 x 4, K = 3; B = %d, %d start(s) per refit; %d CPU threads; GPU: %s\n",
            n_sets, B, starts, parallel::detectCores(),
            if (gpu) paste(bulkem_gpu_info()$devices$name, collapse = ", ") else "none"))
fits <- bulkem(data, num.components = 3, seed = 1, use.gpu = FALSE, control = list(keep.data = TRUE))
one <- function(engine) {
  t0 <- proc.time()[["elapsed"]]
  bs <- bulkem_bootstrap(fits, B = B, seed = 2, random.inits = starts, control = list(engine = engine))
  s <- proc.time()[["elapsed"]] - t0
  reps <- attr(bs, "replicates")
  cat(sprintf("%s: %.2f s wall for %d refits (%.2f ms per refit), replicates used %d of %d\n", engine, s,
              n_sets * (B + 1), 1000 * s / (n_sets * (B + 1)), sum(reps$used), sum(reps$B)))
  bs
}
cpu <- one("cpu")
if (gpu) {
  one("cuda-batched")
  g <- one("cuda-batched")
  rel <- abs(g$std.error - cpu$std.error) / pmax(abs(cpu$std.error), 1e-12)
  cat(sprintf("standard errors, cuda-batched vs cpu: median relative difference %.2g, largest %.2g\n",
              stats::median(rel, na.rm = TRUE), max(rel, na.rm = TRUE)))
}
info <- tidy(fits)
ratio <- cpu$std.error / info$std.error
cat(sprintf("bootstrap / observed-information standard errors (cpu): quartiles %s\n",
            paste(format(stats::quantile(ratio, c(0.25, 0.5, 0.75), na.rm = TRUE), digits = 3), collapse = ", ")))
