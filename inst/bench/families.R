# The families side by side on B1's shape (100 datasets x 2,000
# observations, K = 2, 10 starts, plain EM, max.iters 100) on the CPU
# engine: wall time and E-step passes, IG and Normal on B1's data, the
# lognormal and Student's t on B1's data, the gamma on gamma data of B1's
# means and shapes, the ex-Gaussian on ex-Gaussian data of B1's means
# (issue 32's "fast" goal: each new family at most 2x the inverse
# Gaussian; issue 34's 1.5x).
#   Rscript inst/bench/families.R [threads=2] [rounds=3]
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) as.integer(sub(".*=", "", a[1])) else default
}
threads <- arg("threads", 2L)
rounds <- arg("rounds", 3L)
w <- workload("B1")
set.seed(2015)
gamma_data <- lapply(seq_along(w$datasets), function(i) {
  comp <- sample.int(2, 2000, TRUE, c(0.3, 0.7))
  stats::rgamma(2000, shape = c(30, 5)[comp], rate = c(30, 5)[comp] / c(1, 3)[comp])
})
exgauss_data <- lapply(seq_along(w$datasets), function(i) {
  comp <- sample.int(2, 2000, TRUE, c(0.3, 0.7))
  stats::rnorm(2000, c(0.8, 2.2)[comp], c(0.1, 0.5)[comp]) + stats::rexp(2000, 1 / c(0.2, 0.8)[comp])
})
run <- function(family) {
  d <- switch(family, gamma = gamma_data, exgauss = exgauss_data, w$datasets)
  t0 <- proc.time()[["elapsed"]]
  f <- bulkem(d, 2, family = family, random.inits = 10, max.iters = 100, epsilon = 1e-6, seed = 1,
              use.gpu = FALSE, control = list(accelerate = FALSE, short.runs = 0, threads = threads))
  s <- proc.time()[["elapsed"]] - t0
  data.frame(family = family, seconds = round(s, 3), passes = attr(f, "em_iterations"),
             us_per_pass = round(1e6 * s / attr(f, "em_iterations"), 2))
}
rows <- do.call(rbind, lapply(seq_len(rounds), function(r) do.call(rbind, lapply(c("invgauss", "normal", "lognormal", "gamma", "t", "exgauss"), run))))
print(rows, row.names = FALSE)
