# How the spurious-solution screen's thresholds were chosen: spikes provoked
# on purpose must be screened out, while true components must still be found.
#   Rscript inst/bench/spurious-screen.R            (about 6 minutes on 2 cores)
# Each case is simulated once; every threshold setting refits it with the
# same seed (same starts), so only the screen differs between settings.
# Truth-based scoring, independent of the screen:
#   spike:   a fitted component narrower than a quarter of the narrowest true one
#   found:   the small true component is among the fitted ones (mean within 1.5 sd)
#   flagged: the returned fit is marked spurious (no start passed the screen)
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
set.seed(2026)
reps <- 40
normal_mix <- function(n, alpha, mu, sd, digits = NULL) {
  x <- rmixture(n, alpha, mu, sd, "normal")
  if (is.null(digits)) x else round(x, digits)
}
cases <- list(
  # iris-like: three overlapping Normals measured to 0.1 (many ties), 200 starts
  ties = list(k = 3, starts = 200, family = "normal", min_sd = 0.35,
              data = replicate(reps, normal_mix(150, c(1, 1, 1) / 3, c(5, 5.9, 6.6), c(0.35, 0.5, 0.6), 1),
                               simplify = FALSE)),
  # too many components for small n (Nile-like), 200 starts
  overfit = list(k = 3, starts = 200, family = "normal", min_sd = 1,
                 data = replicate(reps, normal_mix(100, c(0.5, 0.5), c(0, 3), c(1, 1)), simplify = FALSE)),
  # a well-separated component of 2.5% weight (10 of 400 observations)
  small_component = list(k = 2, starts = 50, family = "normal", min_sd = 1, small = 10,
                         data = replicate(reps, normal_mix(400, c(0.975, 0.025), c(0, 10), c(1, 1)),
                                          simplify = FALSE)),
  # a cluster of 3 points, as spread as its neighbours
  three_points = list(k = 3, starts = 50, family = "normal", min_sd = 1, small = 20,
                      data = replicate(reps, c(rnorm(97 %/% 2, 0, 1), rnorm(97 - 97 %/% 2, 10, 1),
                                                rnorm(3, 20, 1)), simplify = FALSE)),
  # the 2015 demo's mixture: component sds differ 60-fold
  demo = list(k = 2, starts = 10, family = "invgauss", min_sd = sqrt(1 / 30),
              data = workload("B1", fraction = reps / 100)$datasets)
)
settings <- list(
  off = c(0, 0, 0.1),
  `ratio 1e-4` = c(1e-4, 0, 0.1), `ratio 1e-3` = c(1e-3, 0, 0.1), `ratio 1e-2` = c(1e-2, 0, 0.1),
  `ratio 2e-2` = c(2e-2, 0, 0.1),
  `count 3, 0.1` = c(0, 3, 0.1), `count 5, 0.1` = c(0, 5, 0.1), `count 10, 0.1` = c(0, 10, 0.1),
  `count 5, 0.05` = c(0, 5, 0.05), `count 5, 0.2` = c(0, 5, 0.2), `count 5, 0.3` = c(0, 5, 0.3),
  `default: ratio 1e-3 + count 10, 0.1` = c(1e-3, 10, 0.1)
)
# Rscript inst/bench/spurious-screen.R WORD: only the settings whose name holds WORD
only <- commandArgs(TRUE)
if (length(only)) settings <- settings[grepl(only[1], names(settings), fixed = TRUE)]
sd_of <- function(f) if (f$family == "normal") f$sigma else sqrt(f$mu^3 / f$lambda)
rows <- list()
for (cn in names(cases)) {
  cs <- cases[[cn]]
  for (sn in names(settings)) {
    s <- settings[[sn]]
    fits <- suppressWarnings(bulkem(cs$data, num.components = cs$k, random.inits = cs$starts,
      max.iters = 1000, family = cs$family, seed = 1, use.gpu = FALSE,
      control = list(spurious.ratio = s[1], spurious.count = s[2], spurious.count.ratio = s[3])))
    ok <- vapply(fits, `[[`, NA, "fit_success")
    spike <- vapply(fits, function(f) f$fit_success && any(sd_of(f) < cs$min_sd / 4), NA)
    found <- if (is.null(cs$small)) NA else
      mean(vapply(fits, function(f) f$fit_success && any(abs(f$mu - cs$small) < 1.5), NA))
    rows[[length(rows) + 1]] <- data.frame(case = cn, setting = sn, fitted = sum(ok),
      spike = mean(spike), found = found,
      flagged = mean(vapply(fits, `[[`, NA, "spurious")),
      mean_loglik = round(mean(vapply(fits, `[[`, 0, "loglik"), na.rm = TRUE), 3))
  }
}
tab <- do.call(rbind, rows)
cat(sprintf("R %s, %s; %d datasets per case\n\n", getRversion(), format(Sys.time(), "%Y-%m-%d"), reps))
cat("| case | setting | fitted | spike | found | flagged | mean_loglik |\n| --- | --- | --- | --- | --- | --- | --- |\n")
for (i in seq_len(nrow(tab))) cat("|", paste(tab[i, ], collapse = " | "), "|\n")
