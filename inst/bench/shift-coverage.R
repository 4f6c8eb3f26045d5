# The shifted Wald's shift (issue 34's goal: on 1,000 simulated subjects of
# n = 200 from a two-component shifted Wald mixture, the shift's 95%
# intervals cover it 92-98% of the time): bulkem(shift = TRUE) on all
# subjects in one call, the coverage of the profile-likelihood intervals
# (shift_ci) and of Wald intervals from the standard errors, the estimates'
# bias and spread, and the time.
#   Rscript inst/bench/shift-coverage.R [subjects=1000] [engine=cpu] [family=invgauss]
# (family=lognormal or gamma: 60% and 40% of components with the same
# means as the IG's, 0.4 and 1.2, and sds 0.16 and 0.3, shifted by 0.3)
suppressPackageStartupMessages(library(bulkem))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) sub(".*=", "", a[1]) else default
}
subjects <- as.integer(arg("subjects", "1000"))
engine <- arg("engine", "cpu")
family <- arg("family", "invgauss")
truth <- 0.3
# 60% IG(0.4, 3) and 40% IG(1.2, 8), shifted by 0.3: response times in s;
# or lognormal or gamma components of the same means
draw <- function(s) {
  set.seed(1000 + s)
  lognormal <- function(n, m, sd) {
    s2 <- log1p((sd / m)^2)
    stats::rlnorm(n, log(m) - s2 / 2, sqrt(s2))
  }
  truth + switch(family,
    invgauss = c(statmod::rinvgauss(120, 0.4, 3), statmod::rinvgauss(80, 1.2, 8)),
    lognormal = c(lognormal(120, 0.4, 0.16), lognormal(80, 1.2, 0.3)),
    gamma = c(stats::rgamma(120, shape = (0.4 / 0.16)^2, rate = 0.4 / 0.16^2),
              stats::rgamma(80, shape = (1.2 / 0.3)^2, rate = 1.2 / 0.3^2)))
}
datasets <- lapply(seq_len(subjects), draw)
t0 <- proc.time()[["elapsed"]]
fits <- bulkem(datasets, shift = TRUE, seed = 1, random.inits = 10, use.gpu = engine != "cpu", family = family,
               control = list(engine = engine))
seconds <- proc.time()[["elapsed"]] - t0
f <- unclass(fits)
shift <- vapply(f, function(x) if (is.null(x$shift)) NA_real_ else x$shift, 0)
se <- vapply(f, function(x) if (is.null(x$se)) NA_real_ else x$se[["shift"]], 0)
ci <- t(vapply(f, function(x) if (is.null(x$shift_ci)) c(NA_real_, NA_real_) else x$shift_ci, numeric(2)))
cat(sprintf("%d subjects x 200, %s, K = 2, 10 starts, %s engine (%d cores): %.1f s\n", subjects, family,
            engine, parallelly::availableCores(), seconds))
edge <- vapply(f, function(x) grepl("edge of the search", x$message), NA)
cat(sprintf("shifts at the search's edge (the smallest value): %d\n", sum(edge)))
cat(sprintf("shift %.2f: mean estimate %.4f, sd %.4f, median SE %.4f; fits with a shift %d, with SEs %d\n",
            truth, mean(shift, na.rm = TRUE), stats::sd(shift, na.rm = TRUE), stats::median(se, na.rm = TRUE),
            sum(!is.na(shift)), sum(!is.na(se))))
cat(sprintf("95%% coverage: profile-likelihood intervals %.1f%%, Wald intervals %.1f%%\n",
            100 * mean(ci[, 1] <= truth & truth <= ci[, 2], na.rm = TRUE),
            100 * mean(abs(shift - truth) <= 1.96 * se, na.rm = TRUE)))
