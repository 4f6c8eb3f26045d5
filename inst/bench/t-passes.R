# E-step passes of Student's t fits (family = "t", df estimated, bulkem()'s
# defaults: 20 starts, SQUAREM) on two workloads: 200 of robust.R's Normal
# datasets with 1-2% gross outliers (set.seed(2027), n = 300, K = 2), and
# the rtdists speed_acc response times per participant and condition (the
# reaction-times vignette's data, K = 1:3 by BIC). CPU engine.
#   Rscript inst/bench/t-passes.R [out.rds]   (out: the 200 log-likelihoods)
suppressPackageStartupMessages(library(bulkem))
set.seed(2027); n <- 300; reps <- 200
sets <- vector("list", reps); truth <- matrix(0, reps, 2)
for (i in seq_len(reps)) {
  c <- sample(3:6, 1); comp <- sample.int(2, n - c, TRUE)
  m <- c(runif(1, -0.25, 0.25), 4 + runif(1, -0.25, 0.25)); x <- rnorm(n - c, m[comp], 1)
  out <- ifelse(runif(c) < 0.5, runif(c, -40, -10), runif(c, 14, 44))
  sets[[i]] <- sample(c(x, out)); truth[i, ] <- m
}
el <- system.time(f <- suppressWarnings(bulkem(sets, 2, family = "t", seed = 1, use.gpu = FALSE)))[["elapsed"]]
ok <- vapply(seq_len(reps), function(i) {
  x <- f[[i]]; se <- x$se[c("mu1", "mu2")]
  !anyNA(se) && all(abs(x$mu - truth[i, ]) <= 3 * se)
}, NA)
ll <- vapply(unclass(f), `[[`, 0, "loglik")
cat(sprintf("contaminated: seconds %.1f passes %.0f recovered %.3f sum of log-likelihoods %.4f\n",
            el, attr(f, "em_iterations"), mean(ok), sum(ll)))
if (length(commandArgs(TRUE))) saveRDS(ll, commandArgs(TRUE)[1])
if (requireNamespace("rtdists", quietly = TRUE)) {
  data(speed_acc, package = "rtdists")
  rt <- subset(speed_acc, !censor & rt > 0.15 & rt < 3)
  el <- system.time(tf <- bulkem(rt ~ id + condition, data = rt, num.components = 1:3, random.inits = 20,
                                 seed = 2008, family = "t", use.gpu = FALSE))[["elapsed"]]
  cat(sprintf("speed_acc: seconds %.1f passes %.0f sum of BIC %.3f\n", el, attr(tf, "em_iterations"),
              sum(glance(tf)$BIC)))
}
