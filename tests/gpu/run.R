# GPU checks, run on the GPU machine (see ../../README.md and
# ../shared/gpu/README.md):
#   source .gpu/device-setup.sh && Rscript tests/gpu/run.R
# 1. the testthat suite with the GPU present (GPU tests no longer skip);
# 2. engine agreement on larger samples than the unit tests use: every GPU
#    engine against the CPU engine on the same seeds, with plain EM and with
#    SQUAREM at bulkem()'s max.iters, by the criterion of inst/bench/agreement-criterion.R
#    (the same optimum on >= 99.5% of the datasets, no converged fits more
#    than 1e-6 apart in log-likelihood), which every row must meet.
suppressPackageStartupMessages({
  library(bulkem)
  library(testthat)
})
info <- bulkem_gpu_info()
cat("GPU:", if (nrow(info$devices)) paste(info$devices$name, "cc", info$devices$compute_capability,
    sprintf("%.0f GiB", info$devices$memory_gib)) else "none", "| usable:", info$usable, info$reason, "\n")

cat("\n== testthat (tests/testthat) ==\n")
res <- as.data.frame(test_dir("tests/testthat", reporter = "summary", load_package = "none",
                              stop_on_failure = FALSE))
cat(sprintf("testthat: %d tests, %d failed, %d skipped, %d errors\n",
            nrow(res), sum(res$failed), sum(res$skipped), sum(res$error)))

source("inst/bench/workloads.R")

cat("\n== interrupting a long GPU run (setTimeLimit 1 s) ==\n")
for (engine in setdiff(bulkem:::engine_names, c("auto", "cpu"))) {
  big <- workload("B4", fraction = 0.02)$datasets
  free0 <- bulkem_gpu_info()$devices$free_gib[1]
  t0 <- proc.time()[["elapsed"]]
  setTimeLimit(elapsed = 1, transient = TRUE)
  msg <- tryCatch({
    bulkem(big, num.components = 3, random.inits = 1000, max.iters = 5000, epsilon = 1e-300,
           control = list(engine = engine))
    "finished (not interrupted)"
  }, error = function(e) conditionMessage(e))
  setTimeLimit(elapsed = Inf)
  cat(sprintf("%s: returned after %.2f s with \"%s\"; free GPU memory %.2f GiB before, %.2f GiB after\n",
              engine, proc.time()[["elapsed"]] - t0, msg, free0, bulkem_gpu_info()$devices$free_gib[1]))
}
source("inst/bench/agreement-criterion.R")

cat("\n== engine agreement (cpu vs GPU engines, same seed; plain EM and SQUAREM, max.iters 5000) ==\n")
cases <- list(
  B1 = workload("B1"),
  B2_sample = workload("B2", fraction = 0.02),
  B3_sample = workload("B3", fraction = 0.02),
  B4_sample = workload("B4", fraction = 0.02),
  B5_sample = workload("B5", fraction = 0.005)
)
rows <- list()
for (accelerate in c(FALSE, TRUE)) for (nm in names(cases)) {
  w <- cases[[nm]]
  w$args$max.iters <- 5000
  d <- c(w$datasets, list(c(1, NA, 2, 3, 4, 5, 6, 7, 8, 9), rep(3, 50)))
  cpu <- suppressWarnings(do.call(bulkem, c(list(d), w$args, list(seed = 99, use.gpu = FALSE,
                                                                   control = list(accelerate = accelerate)))))
  for (engine in setdiff(bulkem:::engine_names, c("auto", "cpu"))) {
    gpu <- suppressWarnings(do.call(bulkem, c(list(d), w$args, list(seed = 99, control = list(engine = engine,
                                                                                            accelerate = accelerate)))))
    a <- agreement(cpu, gpu)
    rows[[length(rows) + 1]] <- data.frame(workload = nm, engine = engine, accelerate = accelerate, t(a),
                                           met = agreement_met(a))
  }
}
agree <- do.call(rbind, rows)
print(agree, row.names = FALSE)
cat(sprintf("agreement: %d of %d rows meet the goal\n", sum(agree$met), nrow(agree)))
if (sum(res$failed) + sum(res$error) > 0 || !all(agree$met)) quit(status = 1)
