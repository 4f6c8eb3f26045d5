# Do starts on tied data still end without a sound fit? control$restarts
# against none, on the cases of issue 10 where every start of a dataset can
# collapse onto a tied value:
#   - iris$Sepal.Length (cm to one decimal, 35 distinct values in 150) as 3
#     Normals, and as 3 inverse Gaussians: one dataset, 100 seeds;
#   - 200 simulated datasets of 150 draws of a 2-Normal mixture rounded to
#     0.1, fitted with K = 3 (overfitted, so narrow components tempt);
#   - 200 simulated datasets of 300 draws of the 2015 demo mixture
#     (IG mu = 1, 3; lambda = 30, 0.2) rounded to 0.05.
# A fit is "sound" when it converged and passed the spurious-solution screen.
# Every setting sees the same datasets and the same seeds, and start i is
# the same draw in every round, so restarts only add starts where every
# start so far failed or was rejected.
#   Rscript inst/bench/restarts.R [restarts ...]    (default: 0 4)
suppressPackageStartupMessages(library(bulkem))
args <- commandArgs(TRUE)
settings <- if (length(args) > 0) as.integer(args) else c(0L, 4L)

set.seed(20261123)
rounded_normal <- lapply(1:200, function(i) {
  z <- rbinom(150, 1, 0.4)
  round(ifelse(z == 1, rnorm(150, 5, 0.35), rnorm(150, 6.3, 0.6)), 1)
})
rounded_demo <- lapply(1:200, function(i) {
  z <- rbinom(300, 1, 0.5)
  v <- ifelse(z == 1, statmod::rinvgauss(300, 1, 30), statmod::rinvgauss(300, 3, 0.2))
  pmax(round(v / 0.05) * 0.05, 0.05)
})

summarise <- function(fits, seconds) {
  sound <- vapply(fits, function(f) f$status == "converged" && !f$spurious, logical(1))
  run <- vapply(fits, function(f) f$starts_run, integer(1))
  data.frame(sound = sprintf("%d/%d", sum(sound), length(fits)),
             failed = sum(vapply(fits, function(f) f$status == "failed", logical(1))),
             spurious = sum(vapply(fits, function(f) isTRUE(f$spurious), logical(1))),
             starts_mean = round(mean(run), 1), starts_max = max(run),
             seconds = round(seconds, 2))
}

one_dataset_many_seeds <- function(x, family, restarts) {
  t0 <- proc.time()[["elapsed"]]
  fits <- lapply(1:100, function(s) {
    suppressWarnings(bulkem(list(x), num.components = 3, family = family, seed = s,
                            use.gpu = FALSE, control = list(restarts = restarts)))[[1]]
  })
  list(fits = fits, seconds = proc.time()[["elapsed"]] - t0)
}

many_datasets <- function(sets, family, restarts) {
  t0 <- proc.time()[["elapsed"]]
  fits <- suppressWarnings(bulkem(sets, num.components = 3, family = family, seed = 1,
                                  use.gpu = FALSE, control = list(restarts = restarts)))
  list(fits = unclass(fits), seconds = proc.time()[["elapsed"]] - t0)
}

cases <- list(
  "iris Sepal.Length, 3 Normals, 100 seeds" = function(r) one_dataset_many_seeds(iris$Sepal.Length, "normal", r),
  "iris Sepal.Length, 3 inverse Gaussians, 100 seeds" = function(r) one_dataset_many_seeds(iris$Sepal.Length, "invgauss", r),
  "200 x 2-Normal rounded to 0.1, K = 3" = function(r) many_datasets(rounded_normal, "normal", r),
  "200 x 2015 demo rounded to 0.05, K = 3" = function(r) many_datasets(rounded_demo, "invgauss", r)
)

cat(sprintf("bulkem %s, %s, %d cores; random.inits = 20 (default)\n\n",
            utils::packageVersion("bulkem"), R.version.string, parallel::detectCores()))
for (name in names(cases)) {
  rows <- do.call(rbind, lapply(settings, function(r) {
    res <- cases[[name]](r)
    cbind(restarts = r, summarise(res$fits, res$seconds))
  }))
  cat("##", name, "\n")
  print(rows, row.names = FALSE)
  cat("\n")
}
