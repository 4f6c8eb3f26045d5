# How loose may the bootstrap's refits stop? The LRT (1 vs 2 vs 3) of N
# Normal datasets of n = 500 (0.5 N(0, 1) + 0.5 N(2.5, 1)) with B replicates,
# for several `epsilon`s of bulkem_bootstrap(): wall seconds, E-step passes,
# and each test's p-value and statistic against those at the first epsilon,
# beside what a second seed changes at that epsilon (the Monte-Carlo error
# the refits' tolerance should stay well inside).
#
#   Rscript inst/bench/bootstrap-epsilon.R [N=1000] [B=199] [eps=1e-6,1e-5,1e-4]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R")) # rmixture()
opts <- list(N = "1000", B = "199", eps = "1e-6,1e-5,1e-4")
for (a in commandArgs(trailingOnly = TRUE)) opts[[sub("=.*", "", a)]] <- sub("^[^=]*=", "", a)
N <- as.integer(opts$N)
B <- as.integer(opts$B)
eps <- as.numeric(strsplit(opts$eps, ",")[[1]])
set.seed(21261124)
sets <- lapply(seq_len(N), function(i) rmixture(500, c(0.5, 0.5), c(0, 2.5), c(1, 1), "normal"))
fits1 <- suppressWarnings(bulkem(sets, num.components = 1, family = "normal", seed = 1,
                                 control = list(keep.data = TRUE)))
# warm-up (GPU set-up, kernel compilation), not timed
invisible(suppressWarnings(bulkem_bootstrap(fits1[1:2], B = 20, test = "lrt", max.components = 2, seed = 1)))
run <- function(e, seed) {
  t0 <- proc.time()[["elapsed"]]
  l <- suppressWarnings(bulkem_bootstrap(fits1, B = B, test = "lrt", max.components = 2, seed = seed, epsilon = e))
  list(lrt = as.data.frame(l)[, c("dataset", "k", "lrt", "p_value")], seconds = proc.time()[["elapsed"]] - t0,
       passes = attr(l, "costs")[["em_iterations"]], engine = attr(l, "engine"))
}
compare <- function(label, a, b) {
  m <- merge(a$lrt, b$lrt, by = c("dataset", "k"))
  d <- abs(m$p_value.x - m$p_value.y)
  s <- abs(m$lrt.x - m$lrt.y)
  data.frame(comparison = label, tests = nrow(m), p_diff_mean = mean(d, na.rm = TRUE),
             p_diff_median = stats::median(d, na.rm = TRUE), p_diff_max = max(d, na.rm = TRUE),
             decisions_changed_at_0.05 = sum((m$p_value.x <= 0.05) != (m$p_value.y <= 0.05), na.rm = TRUE),
             `lrt_within_1e-6` = sum(s < 1e-6, na.rm = TRUE), lrt_off_by_0.01 = sum(s > 0.01, na.rm = TRUE),
             check.names = FALSE)
}
runs <- lapply(eps, run, seed = 7)
second <- run(eps[1], seed = 8)
cat(sprintf("LRT 1 vs 2 vs 3, %d Normal datasets of n = 500, B = %d, engine %s; %s\n\n", N, B, runs[[1]]$engine,
            format(Sys.time(), "%Y-%m-%d")))
print(data.frame(epsilon = c(eps, eps[1]), seed = c(rep(7, length(eps)), 8),
                 seconds = c(vapply(runs, `[[`, 0, "seconds"), second$seconds),
                 e_step_passes = c(vapply(runs, `[[`, 0, "passes"), second$passes)), row.names = FALSE)
cat("\n")
out <- rbind(compare(sprintf("epsilon %g, seed 7 vs seed 8", eps[1]), runs[[1]], second),
             do.call(rbind, lapply(seq_along(eps)[-1], function(i)
               compare(sprintf("epsilon %g vs %g, seed 7", eps[1], eps[i]), runs[[1]], runs[[i]]))))
print(out, row.names = FALSE, digits = 3)
