# Several GPUs of one host (run on a machine with two or more):
#   source .gpu/device-setup.sh && Rscript tests/gpu/multi.R [fraction]
# B2 x 4 (40,000 datasets x 1,000 observations x 100 starts) on GPU 0 alone
# and on every GPU, alternated twice in one run; the fits must be identical,
# and the wall times are printed side by side. Then agreement of the
# several-GPU fits with the CPU engine on a sample (inst/bench/agreement-criterion.R);
# then the same for fits with a noise component, and for Student's t.
suppressPackageStartupMessages(library(bulkem))
source("inst/bench/workloads.R")
args <- commandArgs(TRUE)
fraction <- if (length(args)) as.numeric(args[1]) else 1
info <- bulkem_gpu_info()
print(info$devices)
n_gpu <- nrow(info$devices)
if (n_gpu < 2) stop("tests/gpu/multi.R needs two GPUs or more")
w <- workload("B2", fraction)
datasets <- rep(w$datasets, 4)
names(datasets) <- NULL
cat(sprintf("%d datasets x %d starts\n", length(datasets), w$args$random.inits))
run <- function(devices) {
  t0 <- proc.time()[["elapsed"]]
  f <- do.call(bulkem, c(list(datasets), w$args, list(seed = 11, use.gpu = TRUE,
                 control = list(engine = "cuda-batched", devices = devices))))
  list(fits = f, seconds = proc.time()[["elapsed"]] - t0, kernel = attr(f, "kernel_seconds"))
}
invisible(run(0)); invisible(run(seq_len(n_gpu) - 1)) # warm-up: kernels compiled on every GPU
strip <- function(f) { f <- unclass(f); attributes(f) <- NULL; f }
rows <- list()
for (rep in 1:2) {
  for (devices in list(0, seq_len(n_gpu) - 1)) {
    r <- run(devices)
    if (rep == 1 && length(devices) == 1) reference <- strip(r$fits)
    same <- identical(strip(r$fits), reference)
    rows[[length(rows) + 1]] <- data.frame(run = rep, gpus = length(devices), seconds = round(r$seconds, 3),
                                           kernel_seconds = round(r$kernel, 3), identical_to_one_gpu = same)
    if (length(devices) > 1) several <- r$fits
  }
}
tab <- do.call(rbind, rows)
print(tab, row.names = FALSE)
one <- tab$seconds[tab$gpus == 1]
many <- tab$seconds[tab$gpus > 1]
cat(sprintf("speed-up, %d GPUs over 1: %.2fx (best of 2 each: %.3f s vs %.3f s)\n",
            n_gpu, min(one) / min(many), min(one), min(many)))
# agreement with the CPU engine on 200 of the datasets
pick <- seq(1, length(datasets), length.out = 200)
cpu <- do.call(bulkem, c(list(datasets[pick]), w$args, list(seed = 11, use.gpu = FALSE)))
gpu <- unclass(several)[pick]
source("inst/bench/agreement-criterion.R")
a <- agreement(cpu, gpu)
cat(sprintf("several GPUs vs CPU on %d datasets: the same optimum on %d; %d converged fits more than 1e-6 apart in log-likelihood; worst parameter %.2e relative\n",
            length(pick), a[["same_optimum"]], a[["converged_apart"]], a[["worst_param_rel"]]))
# with a noise component (issue 32): 2,000 of the datasets with 5 gross
# outliers each, on GPU 0 and on every GPU (identical), and against the CPU
set.seed(32)
noisy <- lapply(datasets[round(seq(1, length(datasets), length.out = 2000))], function(x) c(x, runif(5, 20, 60)))
noisy_run <- function(devices) {
  bulkem(noisy, 2, random.inits = 20, seed = 11, noise = TRUE, use.gpu = TRUE,
         control = list(engine = "cuda-batched", devices = devices))
}
noise_one <- noisy_run(0)
noise_all <- noisy_run(seq_len(n_gpu) - 1)
noise_same <- identical(strip(noise_one), strip(noise_all))
noise_cpu <- bulkem(noisy[1:200], 2, random.inits = 20, seed = 11, noise = TRUE, use.gpu = FALSE)
na <- agreement(noise_cpu, unclass(noise_all)[1:200])
weights <- function(f) vapply(unclass(f), function(x) x$noise, 0)
cat(sprintf("noise: %d GPUs identical to one: %s; vs CPU on 200: the same optimum on %d, worst parameter %.2e relative, worst noise weight %.2e absolute\n",
            n_gpu, noise_same, na[["same_optimum"]], na[["worst_param_rel"]],
            max(abs(weights(noise_cpu) - weights(noise_all)[1:200]))))
# Student's t (issue 32) on the same 2,000 datasets with their outliers
t_run <- function(devices) {
  bulkem(noisy, 2, family = "t", random.inits = 20, seed = 11, use.gpu = TRUE,
         control = list(engine = "cuda-batched", devices = devices))
}
t_one <- t_run(0)
t_all <- t_run(seq_len(n_gpu) - 1)
t_same <- identical(strip(t_one), strip(t_all))
t_cpu <- bulkem(noisy[1:200], 2, family = "t", random.inits = 20, seed = 11, use.gpu = FALSE)
ta <- agreement(t_cpu, unclass(t_all)[1:200])
cat(sprintf("t: %d GPUs identical to one: %s; vs CPU on 200: the same optimum on %d, %d converged fits apart, worst parameter %.2e relative\n",
            n_gpu, t_same, ta[["same_optimum"]], ta[["converged_apart"]], ta[["worst_param_rel"]]))
if (!all(tab$identical_to_one_gpu) || !agreement_met(a) || !noise_same || !agreement_met(na) || !t_same ||
    !agreement_met(ta)) {
  quit(status = 1)
}
