# Multivariate fits on two GPUs against one (issue 33: several GPUs, two
# >= 1.8x one): workload M1 (10,000 datasets x 1,000 observations, d = 4,
# K = 3, full covariance, 20 starts), Normal and t components, on
# control$devices = 0 and on 0 and 1; the fits must be the same bits.
#   Rscript inst/bench/mv-two-gpus.R      (a machine with two GPUs)
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
info <- bulkem_gpu_info(); print(info$devices)
set.seed(33); data <- m1_datasets(10000)
run <- function(dev, family = "normal") {
  for (r in 1:2) {
    t0 <- proc.time()[["elapsed"]]
    f <- bulkem(data, 3, family = family, seed = 1, control = list(engine = "cuda-batched", devices = dev))
    s <- proc.time()[["elapsed"]] - t0
    tm <- attr(f, "timings")
    cat(sprintf("%s devices %s round %d: %.3f s wall, kernels %.3f s, starts %.3f s, engine %.3f s, launches %d\n",
                family, paste(dev, collapse = ","), r, s, tm[["cuda-batched: kernels"]], tm[["cuda-batched: starts"]],
                tm[["engine"]], attr(f, "kernel_launches")))
  }
  f
}
one <- run(0L); two <- run(c(0L, 1L))
same <- mapply(function(a, b) identical(a$loglik, b$loglik) && identical(a$mu, b$mu) && identical(a$sigma, b$sigma) &&
               identical(a$se, b$se), one, two)
cat(sprintf("normal: two GPUs give the one GPU's fits bitwise on %d of %d datasets\n", sum(same), length(same)))
one <- run(0L, "t"); two <- run(c(0L, 1L), "t")
same <- mapply(function(a, b) identical(a$loglik, b$loglik) && identical(a$df, b$df), one, two)
cat(sprintf("t: two GPUs give the one GPU's fits bitwise on %d of %d datasets\n", sum(same), length(same)))
