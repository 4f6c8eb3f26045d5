# B1 (the 2015 demo: 100 datasets x 2,000 observations, IG, 2 components,
# 10 starts each) with bulkem's CPU engine, side by side in one run with
# flexmix (FLXMCdist1 invGauss, best of 10 starts by stepFlexmix) and a plain
# vectorised R EM loop on a subset of the same datasets. Prints a markdown
# report: seconds per start-fit, the ratio to flexmix, and the log-likelihoods
# reached on the shared subset.
#
#   Rscript inst/bench/b1-cpu-vs-peers.R [subset-size]     (from the source tree)
#
# Needs bulkem installed, and flexmix + SuppDists for the flexmix column.

args <- commandArgs(trailingOnly = TRUE)
subset_n <- if (length(args) >= 1) as.integer(args[1]) else 10L
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else
  system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
suppressPackageStartupMessages(library(bulkem))

w <- workload("B1")
a <- w$args
starts <- a$random.inits
sub <- seq_len(subset_n)

# A plain vectorised EM in R: the same mathematics as bulkem (log domain,
# exact lambda update), the same kind of start (ML of 3 observations per
# component), one start per call.
r_em_ig <- function(x, max.iters = 100, epsilon = 1e-6) {
  n <- length(x)
  start <- function() {
    s <- sample(x, 3)
    c(mean(s), 1 / mean(1 / s - 1 / mean(s)))
  }
  p <- cbind(start(), start())
  mu <- p[1, ]
  lambda <- p[2, ]
  alpha <- c(0.5, 0.5)
  prev <- -Inf
  for (it in 0:max.iters) {
    l1 <- log(alpha[1]) + 0.5 * log(lambda[1] / (2 * pi * x^3)) - lambda[1] * (x - mu[1])^2 / (2 * mu[1]^2 * x)
    l2 <- log(alpha[2]) + 0.5 * log(lambda[2] / (2 * pi * x^3)) - lambda[2] * (x - mu[2])^2 / (2 * mu[2]^2 * x)
    mx <- pmax(l1, l2)
    lse <- mx + log(exp(l1 - mx) + exp(l2 - mx))
    ll <- sum(lse)
    if (!is.finite(ll) || ll - prev < epsilon || it == max.iters) break
    r1 <- exp(l1 - lse)
    r2 <- 1 - r1
    s0 <- c(sum(r1), sum(r2))
    s1 <- c(sum(r1 * x), sum(r2 * x))
    sinv <- c(sum(r1 / x), sum(r2 / x))
    alpha <- s0 / n
    mu <- s1 / s0
    lambda <- s0 / (sinv - s0^2 / s1)
    if (any(!is.finite(lambda)) || any(lambda <= 0) || any(s0 < 2)) { ll <- NA; break }
    prev <- ll
  }
  list(loglik = ll, iterations = it)
}

timed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  value <- force(expr)
  list(value = value, seconds = proc.time()[["elapsed"]] - t0)
}

# bulkem: all of B1, all cores (warm-up call first so loading is not timed)
invisible(bulkem(w$datasets[1], random.inits = 1, family = a$family))
set.seed(1)
ours <- timed(do.call(bulkem, c(list(w$datasets), a, list(control = list(accelerate = FALSE, short.runs = 0)))))
ours_ll <- vapply(ours$value, `[[`, numeric(1), "loglik")
ours_iters <- vapply(ours$value, `[[`, integer(1), "num_iterations")

# plain R EM: the subset, `starts` starts each, best kept
set.seed(1)
rem <- timed(lapply(w$datasets[sub], function(x) {
  fits <- replicate(starts, r_em_ig(x, a$max.iters, a$epsilon), simplify = FALSE)
  max(vapply(fits, `[[`, numeric(1), "loglik"), na.rm = TRUE)
}))
rem_ll <- unlist(rem$value)

have_flexmix <- requireNamespace("flexmix", quietly = TRUE) &&
  requireNamespace("SuppDists", quietly = TRUE)
if (have_flexmix) {
  set.seed(1)
  flx <- timed(lapply(w$datasets[sub], function(x) {
    m <- suppressWarnings(flexmix::stepFlexmix(
      x ~ 1, k = 2, nrep = starts, verbose = FALSE,
      model = flexmix::FLXMCdist1(dist = "invGauss"),
      control = list(iter.max = a$max.iters, tolerance = a$epsilon)))
    m@logLik
  }))
  flx_ll <- unlist(flx$value)
}

per_fit <- function(seconds, fits) seconds / fits
ours_pf <- per_fit(ours$seconds, length(w$datasets) * starts)
rem_pf <- per_fit(rem$seconds, subset_n * starts)
rows <- data.frame(
  engine = c(sprintf("bulkem cpu (%d threads)", attr(ours$value, "threads")),
             "plain vectorised R EM"),
  start_fits = c(length(w$datasets) * starts, subset_n * starts),
  seconds = c(ours$seconds, rem$seconds),
  ms_per_start_fit = 1000 * c(ours_pf, rem_pf),
  mean_loglik_subset = c(mean(ours_ll[sub]), mean(rem_ll)),
  stringsAsFactors = FALSE)
if (have_flexmix) {
  flx_pf <- per_fit(flx$seconds, subset_n * starts)
  rows <- rbind(rows, data.frame(
    engine = "flexmix FLXMCdist1 invGauss (stepFlexmix)", start_fits = subset_n * starts,
    seconds = flx$seconds, ms_per_start_fit = 1000 * flx_pf,
    mean_loglik_subset = mean(flx_ll)))
  rows$speedup_vs_flexmix <- flx_pf / (rows$ms_per_start_fit / 1000)
}

cpu <- tryCatch({
  l <- grep("^model name", readLines("/proc/cpuinfo"), value = TRUE)
  sub("^model name\\s*:\\s*", "", l[1])
}, error = function(e) "unknown CPU", warning = function(w) "unknown CPU")
cat("## B1 on the CPU: bulkem against flexmix and a plain R EM\n\n")
cat(sprintf("- date: %s; machine: %s, %d cores; %s\n", format(Sys.time(), "%Y-%m-%d"),
            cpu, parallel::detectCores(), R.version.string))
cat(sprintf("- command: `Rscript inst/bench/b1-cpu-vs-peers.R %d`\n", subset_n))
cat(sprintf("- B1: %d datasets x %d observations, IG, K = 2, %d starts, max.iters = %d, epsilon = %g;",
            length(w$datasets), length(w$datasets[[1]]), starts, a$max.iters, a$epsilon),
    sprintf("peers run on the first %d datasets with the same number of starts each\n", subset_n))
cat(sprintf("- bulkem: mean iterations of the winning starts %.1f; statuses: %s\n\n",
            mean(ours_iters), paste(names(table(vapply(ours$value, `[[`, "", "status"))),
                                    table(vapply(ours$value, `[[`, "", "status")), collapse = ", ")))
fmt <- rows
fmt$seconds <- sprintf("%.3f", fmt$seconds)
fmt$ms_per_start_fit <- sprintf("%.3f", fmt$ms_per_start_fit)
fmt$mean_loglik_subset <- sprintf("%.4f", fmt$mean_loglik_subset)
if (!is.null(fmt$speedup_vs_flexmix)) fmt$speedup_vs_flexmix <- sprintf("%.1f", fmt$speedup_vs_flexmix)
cat("|", paste(names(fmt), collapse = " | "), "|\n")
cat("|", paste(rep("---", ncol(fmt)), collapse = " | "), "|\n")
for (i in seq_len(nrow(fmt))) cat("|", paste(fmt[i, ], collapse = " | "), "|\n")
if (have_flexmix) {
  cat(sprintf("\nOn the shared %d datasets bulkem's log-likelihood is >= flexmix's on %d and >= the R EM's on %d (tolerance 1e-6).\n",
              subset_n, sum(ours_ll[sub] >= flx_ll - 1e-6), sum(ours_ll[sub] >= rem_ll - 1e-6)))
}
