# Engine agreement at bulkem()'s defaults (issue 31, goal 2): every engine
# named against the CPU engine, same seed, on an agreement corpus like the
# issue's 715 datasets: inverse Gaussian K = 3 (B4's truth, ragged n
# 30..5,000), Normal K = 2 (overlapping, n 50..2,000) and K = 5 (n 200..3,000),
# and the real datasets of the defaults corpus as IG and Normal K = 2 and 3.
#   Rscript inst/bench/agreement.R [engines=cuda-batched,cuda-streams] [starts=20]
#                                   [epsilon=1e-6] [max.iters=5000] [accelerate=TRUE] [refine=N]
# Per engine: datasets whose fit is the same optimum as the CPU engine's
# and the converged fits more than 1e-6 apart in log-likelihood (the
# criterion of agreement-criterion.R), the worst parameter and
# log-likelihood differences, and the fits' E-step passes.
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
source(file.path(here, "corpus-defaults.R"))
source(file.path(here, "agreement-criterion.R"))
opt <- list(engines = "cuda-batched,cuda-streams", starts = "20", epsilon = "1e-6", max.iters = "5000",
            accelerate = "TRUE", refine = "")
for (a in commandArgs(TRUE)) {
  kv <- strsplit(a, "=", fixed = TRUE)[[1]]
  if (length(kv) != 2 || !kv[1] %in% names(opt)) stop("unknown argument ", a)
  opt[[kv[1]]] <- kv[2]
}
engines <- strsplit(opt$engines, ",", fixed = TRUE)[[1]]

set.seed(715)
groups <- list(
  `IG K=3` = list(family = "invgauss", k = 3, d = lapply(round(exp(runif(300, log(30), log(5000)))), function(n)
    rmixture(n, c(0.3, 0.4, 0.3), c(1, 3, 8), c(30, 5, 20), "invgauss"))),
  `N K=2` = list(family = "normal", k = 2, d = lapply(round(exp(runif(200, log(50), log(2000)))), function(n)
    rmixture(n, c(0.6, 0.4), c(0, runif(1, 1, 3)), c(1, 1.3), "normal"))),
  `N K=5` = list(family = "normal", k = 5, d = lapply(round(exp(runif(200, log(200), log(3000)))), function(n)
    rmixture(n, rep(0.2, 5), c(0, 2, 4, 7, 10), c(0.8, 1, 0.7, 1.2, 1), "normal")))
)
for (fam in c("normal", "invgauss")) for (k in 2:3)
  groups[[sprintf("real %s K=%d", fam, k)]] <- list(family = fam, k = k, d = unname(real))

fit <- function(g, engine) {
  ctl <- list(accelerate = as.logical(opt$accelerate))
  if (nzchar(opt$refine)) ctl$refine <- as.integer(opt$refine)
  if (engine != "cpu") ctl$engine <- engine
  t0 <- proc.time()[["elapsed"]]
  f <- suppressWarnings(bulkem(g$d, g$k, family = g$family, random.inits = as.integer(opt$starts),
                               epsilon = as.numeric(opt$epsilon), max.iters = as.integer(opt$max.iters),
                               seed = 7, use.gpu = engine != "cpu", control = ctl))
  attr(f, "wall") <- proc.time()[["elapsed"]] - t0
  f
}
cat(sprintf("bulkem %s from %s; starts %s, epsilon %s, max.iters %s, accelerate %s, refine %s\n",
            utils::packageVersion("bulkem"), find.package("bulkem"), opt$starts, opt$epsilon,
            opt$max.iters, opt$accelerate, if (nzchar(opt$refine)) opt$refine else "(default)"))
options(width = 200)
rows <- list()
for (nm in names(groups)) {
  g <- groups[[nm]]
  cpu <- fit(g, "cpu")
  rows[[length(rows) + 1]] <- data.frame(group = nm, engine = "cpu (reference)", datasets = length(g$d),
                                         same_optimum = NA, converged_apart = NA, worst_param_rel = NA,
                                         worst_loglik_rel = NA, em_iterations = attr(cpu, "em_iterations"),
                                         seconds = round(attr(cpu, "wall"), 3))
  for (e in engines) {
    other <- fit(g, e)
    rows[[length(rows) + 1]] <- data.frame(group = nm, engine = e, t(agreement(cpu, other)),
                                           em_iterations = attr(other, "em_iterations"),
                                           seconds = round(attr(other, "wall"), 3))
  }
}
tab <- do.call(rbind, rows)
print(tab, row.names = FALSE, digits = 3)
for (e in engines) {
  s <- tab[tab$engine == e, ]
  cat(sprintf("%s: the same optimum on %d of %d datasets (%.1f%%); %d converged fits more than 1e-6 apart in log-likelihood\n",
              e, sum(s$same_optimum), sum(s$datasets), 100 * sum(s$same_optimum) / sum(s$datasets),
              sum(s$converged_apart)))
}
