# Workload generators of DESIGN §6 (B1-B5). Each returns the datasets and the
# bulkem() arguments that go with them; `fraction` keeps the first part of the
# datasets (same data, fewer of them) for quick runs and peer comparisons.
# Generated data depends only on `seed`; no package beyond base R is needed.
#
#   source(system.file("bench", "workloads.R", package = "bulkem"))
#   w <- workload("B1")
#   fits <- do.call(bulkem::bulkem, c(list(w$datasets), w$args))
# The benchmarks run the workloads with plain EM (control$accelerate =
# FALSE) and without short runs (control$short.runs = 0): a start-fit is
# then the fixed number of EM iterations the peers and the earlier
# measurements do.

# Inverse Gaussian draws by Michael, Schucany & Haas (1976).
rinvgauss_msh <- function(n, mu, lambda) {
  y <- stats::rnorm(n)^2
  x <- mu + mu^2 * y / (2 * lambda) -
    mu / (2 * lambda) * sqrt(4 * mu * lambda * y + mu^2 * y^2)
  ifelse(stats::runif(n) <= mu / (mu + x), x, mu^2 / x)
}

# n draws from a mixture; `shape` is lambda (IG) or sigma (Normal).
rmixture <- function(n, alpha, mu, shape, family) {
  comp <- sample.int(length(alpha), n, replace = TRUE, prob = alpha)
  out <- numeric(n)
  for (m in seq_along(alpha)) {
    i <- comp == m
    out[i] <- switch(family,
                     invgauss = rinvgauss_msh(sum(i), mu[m], shape[m]),
                     lognormal = stats::rlnorm(sum(i), mu[m], shape[m]),
                     gamma = stats::rgamma(sum(i), shape = shape[m], rate = shape[m] / mu[m]),
                     stats::rnorm(sum(i), mu[m], shape[m]))
  }
  out
}

workload_specs <- list(
  B1 = list(datasets = 100, n = function(d) rep(2000, d), starts = 10,
            family = "invgauss", alpha = c(0.3, 0.7), mu = c(1, 3), shape = c(30, 0.2),
            note = "the 2015 demo"),
  B2 = list(datasets = 10000, n = function(d) rep(1000, d), starts = 100,
            family = "invgauss", alpha = c(0.3, 0.7), mu = c(1, 3), shape = c(30, 0.2),
            note = "one million start-fits"),
  B3 = list(datasets = 10000, n = function(d) rep(1000, d), starts = 100,
            family = "normal", alpha = c(0.3, 0.4, 0.3), mu = c(0, 3, 7), shape = c(1, 0.6, 1.5),
            note = "Normal, 3 components"),
  B4 = list(datasets = 5000,
            n = function(d) round(exp(stats::runif(d, log(50), log(14000)))), starts = 50,
            family = "invgauss", alpha = c(0.3, 0.4, 0.3), mu = c(1, 3, 8), shape = c(30, 5, 20),
            note = "ragged sizes, log-uniform 50..14,000"),
  B5 = list(datasets = 200000, n = function(d) rep(100, d), starts = 10,
            family = "normal", alpha = c(0.5, 0.5), mu = c(0, 3), shape = c(1, 1),
            note = "per-dataset overhead")
)

workload <- function(name, fraction = 1, seed = 2015) {
  spec <- workload_specs[[name]]
  if (is.null(spec)) stop("unknown workload ", name, call. = FALSE)
  old <- if (exists(".Random.seed", envir = globalenv())) get(".Random.seed", envir = globalenv())
  on.exit(if (is.null(old)) rm(".Random.seed", envir = globalenv())
          else assign(".Random.seed", old, envir = globalenv()))
  set.seed(seed)
  sizes <- spec$n(spec$datasets)
  keep <- seq_len(max(1, round(spec$datasets * fraction)))
  datasets <- lapply(sizes[keep], function(n)
    rmixture(n, spec$alpha, spec$mu, spec$shape, spec$family))
  list(name = name, datasets = datasets, note = spec$note,
       truth = spec[c("alpha", "mu", "shape")],
       args = list(num.components = length(spec$alpha), max.iters = 100,
                   random.inits = spec$starts, epsilon = 1e-6, family = spec$family))
}

# Workload M1 of issue 33: `n_sets` multivariate datasets of `n`
# observations of d = 4 variables, three normal components of weights
# 0.5/0.3/0.2 with random means (sd 2) and random correlations; the
# matrices' columns are x1..x4. Depends only on R's random state.
m1_datasets <- function(n_sets, n = 1000, d = 4, k = 3) {
  one <- function() {
    comp <- sample.int(k, n, TRUE, c(0.5, 0.3, 0.2))
    mus <- matrix(stats::rnorm(k * d, sd = 2), k, d)
    out <- matrix(0, n, d)
    for (m in seq_len(k)) {
      a <- matrix(stats::rnorm(d * d, sd = 0.5), d) + diag(d)
      idx <- comp == m
      out[idx, ] <- sweep(matrix(stats::rnorm(sum(idx) * d), ncol = d) %*% a, 2, mus[m, ], "+")
    }
    colnames(out) <- paste0("x", seq_len(d))
    out
  }
  replicate(n_sets, one(), simplify = FALSE)
}
