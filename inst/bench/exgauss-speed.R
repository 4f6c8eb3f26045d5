# The ex-Gaussian against the inverse Gaussian on the engines that fit it:
# N datasets x n observations of two components (ex-Gaussian data: weights
# 0.3/0.7, mu 0.8/2.2, sigma 0.1/0.5, tau 0.2/0.8; the IG on IG data of the
# same means and variances), K = 2, 20 starts, plain EM, max.iters 200,
# seed 1. Seconds, E-step passes and ns per observation and pass (NA: the
# engine does not fit the family).
#   Rscript inst/bench/exgauss-speed.R [datasets=200] [n=1000] [engines=cpu,cuda-streams]
suppressPackageStartupMessages(library(bulkem))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
N <- as.integer(arg("datasets", "200"))
n <- as.integer(arg("n", "1000"))
engines <- strsplit(arg("engines", "cpu,cuda-streams"), ",")[[1]]
set.seed(2026)
mu <- c(0.8, 2.2); sigma <- c(0.1, 0.5); tau <- c(0.2, 0.8)
mean <- mu + tau; var <- sigma^2 + tau^2
data <- list(
  exgauss = lapply(seq_len(N), function(i) {
    comp <- sample.int(2, n, TRUE, c(0.3, 0.7))
    stats::rnorm(n, mu[comp], sigma[comp]) + stats::rexp(n, 1 / tau[comp])
  }),
  invgauss = lapply(seq_len(N), function(i) {
    comp <- sample.int(2, n, TRUE, c(0.3, 0.7))
    statmod::rinvgauss(n, mean = mean[comp], shape = mean[comp]^3 / var[comp])
  }))
rows <- NULL
for (engine in engines) for (family in names(data)) {
  ok <- tryCatch({
    bulkem(data[[family]][1:2], 2, family = family, random.inits = 2, max.iters = 5, seed = 1,
           control = list(engine = engine))
    TRUE
  }, error = function(e) FALSE)
  if (!ok) {
    rows <- rbind(rows, data.frame(engine = engine, family = family, seconds = NA, passes = NA, ns_per_obs_pass = NA))
    next
  }
  bulkem(data[[family]][1:2], 2, family = family, random.inits = 2, max.iters = 5, seed = 1,
         control = list(engine = engine))  # warm-up: kernels compiled
  t0 <- proc.time()[["elapsed"]]
  f <- bulkem(data[[family]], 2, family = family, random.inits = 20, max.iters = 200, seed = 1,
              control = list(engine = engine, accelerate = FALSE, short.runs = 0))
  s <- proc.time()[["elapsed"]] - t0
  passes <- attr(f, "em_iterations")
  rows <- rbind(rows, data.frame(engine = engine, family = family, seconds = round(s, 3), passes = passes,
                                 ns_per_obs_pass = round(1e9 * s / (passes * n), 2)))
}
print(rows, row.names = FALSE)
