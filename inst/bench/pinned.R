# cuda-batched packing into pinned host buffers (gpu/staging.rs) against
# ordinary memory (BULKEM_PINNED=0), side by side in one process on the GPU
# machine: per workload, ordinary, "cold" (the first call that may use
# pinned buffers: it packs into ordinary memory where the pool has none
# large enough and has them made after its engine), "warm" (pinned), then
# ordinary and warm again. Prints wall and engine seconds, the summed
# packing and upload phases, E-step passes and the sum of log-likelihoods,
# and whether every fit is identical() to the ordinary one.
#
#   Rscript inst/bench/pinned.R [workload ...]
#
# Workloads: B2, B2sq (B2 with SQUAREM), B2mx (B2 in mixed precision), B3,
# B4, K2 (the bootstrap LRT's K = 2 refits: 20,000 standard Normal datasets
# of 500, 20 starts, SQUAREM).
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
args <- commandArgs(trailingOnly = TRUE)
if (!length(args)) args <- c("B2", "B2sq", "B2mx", "B3", "B4", "K2")
spec <- function(name) {
  batched <- function(...) list(engine = "cuda-batched", ...)
  switch(name,
    B2 = { w <- workload("B2"); list(w$datasets, w$args, batched(accelerate = FALSE, short.runs = 0)) },
    B2sq = { w <- workload("B2"); list(w$datasets, w$args, batched(accelerate = TRUE)) },
    B2mx = { w <- workload("B2"); list(w$datasets, w$args, batched(accelerate = FALSE, short.runs = 0, precision = "mixed")) },
    B3 = { w <- workload("B3"); list(w$datasets, w$args, batched(accelerate = FALSE, short.runs = 0)) },
    B4 = { w <- workload("B4"); list(w$datasets, w$args, batched(accelerate = FALSE, short.runs = 0)) },
    K2 = {
      set.seed(5)
      list(replicate(20000, stats::rnorm(500), simplify = FALSE),
           list(num.components = 2, family = "normal", random.inits = 20), batched(accelerate = TRUE))
    },
    stop("unknown workload ", name, call. = FALSE))
}
old <- Sys.getenv("BULKEM_PINNED", NA)
on.exit(if (is.na(old)) Sys.unsetenv("BULKEM_PINNED") else Sys.setenv(BULKEM_PINNED = old))
invisible(bulkem(list(c(1, 2, 3, 4, 5, 6, 7.5)), control = list(engine = "cuda-batched")))
strip <- function(f) {
  attributes(f) <- attributes(f)[c("names", "class")]
  f
}
for (name in args) {
  s <- spec(name)
  run <- function(label, pinned) {
    Sys.setenv(BULKEM_PINNED = if (pinned) "1" else "0")
    invisible(bulkem(s[[1]][1:2], num.components = s[[2]]$num.components, family = s[[2]]$family, control = s[[3]]))
    t0 <- proc.time()[["elapsed"]]
    f <- suppressWarnings(do.call(bulkem, c(list(s[[1]]), s[[2]], list(seed = 1, control = s[[3]]))))
    wall <- proc.time()[["elapsed"]] - t0
    t <- attr(f, "timings")
    ll <- vapply(unclass(f), function(x) x$loglik, 0)
    cat(sprintf("%-5s %-8s wall %.3f engine %.3f packing %.3f upload %.3f passes %.0f sum_ll %.10f\n", name, label,
                wall, t[["engine"]], t[["batched: starts and packing"]], t[["batched: upload"]],
                attr(f, "em_iterations"), sum(ll, na.rm = TRUE)))
    strip(f)
  }
  a <- run("ordinary", FALSE)
  b <- run("cold", TRUE)
  Sys.sleep(0.3) # the buffers the cold call wanted are made in the background
  c1 <- run("warm", TRUE)
  a2 <- run("ordinary", FALSE)
  c2 <- run("warm", TRUE)
  cat(sprintf("%-5s identical to ordinary: cold %s, warm %s, %s\n", name,
              identical(b, a), identical(c1, a), identical(c2, a2)))
}
