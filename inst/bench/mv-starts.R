# The multivariate start search (issue 33's item 3): how often the fit
# bulkem() returns reaches the best known optimum (of `ref` starts, or
# better where a variant found better) on a corpus of simulated datasets
# with a minor cluster (d = 2-4, K = 2-4, n = 200-2,000 log-uniform, the
# minor cluster 3-8% of the rows with a third of the others' spread) and
# real ones (faithful, iris, trees, swiss, K = 2-4), each fitted with its K;
# the default (20 starts, D²-seeded), emEM short runs (control$short.runs,
# 10 iterations, the best 20 continued) and 40 starts, with their E-step
# passes per dataset. CPU engine.
#   Rscript inst/bench/mv-starts.R [sets=150] [ref=500] [seeds=2]
suppressPackageStartupMessages(library(bulkem))
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), commandArgs(TRUE), value = TRUE)
  if (length(a)) as.integer(sub(".*=", "", a[1])) else default
}
n_sets <- arg("sets", 150L)
n_ref <- arg("ref", 500L)
seeds <- seq_len(arg("seeds", 2L))

corpus <- function(n_sets, seed = 7) {
  set.seed(seed)
  out <- list()
  ks <- integer()
  for (i in seq_len(n_sets)) {
    d <- sample(2:4, 1)
    k <- sample(2:4, 1)
    n <- round(exp(stats::runif(1, log(200), log(2000))))
    minor <- stats::runif(1, 0.03, 0.08)
    alpha <- stats::runif(k - 1, 0.7, 1.3)
    alpha <- c(alpha / sum(alpha) * (1 - minor), minor)
    mu <- matrix(stats::rnorm(k * d, 0, 3), k, d)
    comp <- sample.int(k, n, replace = TRUE, prob = alpha)
    x <- matrix(0, n, d, dimnames = list(NULL, paste0("v", seq_len(d))))
    for (m in seq_len(k)) {
      a <- matrix(stats::rnorm(d * d, 0, 0.6), d) + diag(stats::runif(d, 0.3, 1.2), d)
      s <- crossprod(a) * (if (m == k) 0.3 else 1)
      idx <- which(comp == m)
      if (length(idx)) x[idx, ] <- sweep(matrix(stats::rnorm(length(idx) * d), ncol = d) %*% chol(s), 2, mu[m, ], "+")
    }
    out[[i]] <- x
    ks[i] <- k
  }
  real <- list(faithful = faithful, iris = iris[1:4], trees = trees, swiss = swiss[, 1:4])
  for (nm in names(real)) {
    for (k in 2:4) {
      x <- unname(as.matrix(real[[nm]]))
      colnames(x) <- paste0("v", seq_len(ncol(x)))
      out[[length(out) + 1]] <- x
      ks <- c(ks, k)
    }
  }
  list(data = out, k = ks)
}

# every dataset fitted with its K (calls grouped by d and K): the
# admissible log-likelihood (NA where none) and E-step passes per dataset
fit_corpus <- function(cp, ...) {
  ll <- rep(NA_real_, length(cp$data))
  passes <- 0
  group <- paste(vapply(cp$data, ncol, 0L), cp$k)
  for (g in unique(group)) {
    i <- which(group == g)
    f <- suppressWarnings(bulkem(cp$data[i], num.components = cp$k[i[1]], use.gpu = FALSE, ...))
    ll[i] <- vapply(unclass(f), function(z) if (isTRUE(z$fit_success) && !isTRUE(z$spurious)) z$loglik else NA, 0)
    passes <- passes + attr(f, "em_iterations")
  }
  list(loglik = ll, passes = passes / length(cp$data))
}

cp <- corpus(n_sets)
cat(sprintf("%d datasets (%d simulated, %d real), %d CPU threads\n", length(cp$data), n_sets,
            length(cp$data) - n_sets, parallel::detectCores()))
t0 <- proc.time()[["elapsed"]]
ref <- fit_corpus(cp, random.inits = n_ref, seed = 99, control = list(standard.errors = FALSE))
cat(sprintf("reference: %d starts, %.0f s, %.0f passes per dataset\n", n_ref, proc.time()[["elapsed"]] - t0, ref$passes))
variants <- list(`20 starts (default)` = list(starts = 20, control = list()),
                 `short.runs = 60` = list(starts = 20, control = list(short.runs = 60)),
                 `short.runs = 100` = list(starts = 20, control = list(short.runs = 100)),
                 `short.runs = 200` = list(starts = 20, control = list(short.runs = 200)),
                 `40 starts` = list(starts = 40, control = list()))
res <- list()
for (seed in seeds) {
  for (v in names(variants)) {
    t0 <- proc.time()[["elapsed"]]
    r <- fit_corpus(cp, random.inits = variants[[v]]$starts, seed = seed,
                    control = c(list(standard.errors = FALSE), variants[[v]]$control))
    res[[length(res) + 1]] <- c(r, list(variant = v, seed = seed, time = proc.time()[["elapsed"]] - t0))
  }
}
best <- do.call(pmax, c(list(ref$loglik), lapply(res, `[[`, "loglik"), na.rm = TRUE))
known <- !is.na(best)
reached <- function(ll) !is.na(ll[known]) & ll[known] >= best[known] - 1e-6 * abs(best[known])
cat(sprintf("\n| variant | seed | best known reached | E-step passes per dataset | time, s |\n| --- | ---: | ---: | ---: | ---: |\n"))
for (r in res) {
  cat(sprintf("| %s | %d | %.1f%% (%d of %d) | %.0f | %.1f |\n", r$variant, r$seed, 100 * mean(reached(r$loglik)),
              sum(reached(r$loglik)), sum(known), r$passes, r$time))
}
cat(sprintf("| reference, %d starts | 99 | %.1f%% | %.0f | |\n", n_ref, 100 * mean(reached(ref$loglik)), ref$passes))
