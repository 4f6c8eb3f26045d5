# The 2015 bulkem demo (B1 of DESIGN §6): 100 datasets of 2,000 observations
# from the inverse Gaussian mixture mu = (1, 3), lambda = (30, 0.2),
# alpha = (0.3, 0.7), each fitted with 2 components from 10 random starts.
#
#   Rscript inst/scripts/demo.R       (or source(system.file("scripts", "demo.R", package = "bulkem")))

library(bulkem)
bench <- if (file.exists("inst/bench/workloads.R")) "inst/bench/workloads.R" else
  system.file("bench", "workloads.R", package = "bulkem")
source(bench)

w <- workload("B1")
set.seed(2015)
fits <- do.call(bulkem, c(list(w$datasets), w$args))

cat(sprintf("bulkem: %d datasets x %d observations, %s, %d components, %d starts each\n",
            length(fits), length(w$datasets[[1]]), w$args$family,
            w$args$num.components, w$args$random.inits))
cat(sprintf("engine: %s, threads: %d, elapsed: %.3f s\n\n",
            attr(fits, "engine"), attr(fits, "threads"), attr(fits, "elapsed")))

row <- function(label, mu, lambda, alpha, loglik = NA) {
  sprintf("%-12s mu = (%6.3f, %6.3f)  lambda = (%7.3f, %6.3f)  alpha = (%5.3f, %5.3f)%s",
          label, mu[1], mu[2], lambda[1], lambda[2], alpha[1], alpha[2],
          if (is.na(loglik)) "" else sprintf("  loglik = %.2f", loglik))
}
cat(row("true", w$truth$mu, w$truth$shape, w$truth$alpha), "\n")
for (i in 1:5) {
  f <- fits[[i]]
  cat(row(sprintf("dataset %d", i), f$mu, f$lambda, f$alpha, f$loglik), "\n")
}
status <- table(vapply(fits, `[[`, "", "status"))
cat("\nstatus of all fits:", paste(names(status), status, sep = ": ", collapse = ", "), "\n")
