# bulkem must reach log-likelihoods at least as high as the R packages users
# would otherwise loop over, on the same data.

peer_data <- function(seed) {
  set.seed(seed)
  c(rnorm(250, 0, 1), rnorm(150, 3, 0.6), rnorm(100, 7, 1.5))
}

test_that("Normal fits reach mixtools::normalmixEM's log-likelihood", {
  skip_if_not_installed("mixtools")
  for (seed in 1:3) {
    x <- peer_data(seed)
    set.seed(seed)
    # normalmixEM prints its iteration count with cat()
    utils::capture.output(
      peer <- mixtools::normalmixEM(x, k = 3, epsilon = 1e-8, maxit = 2000))
    ours <- bulkem(list(x), num.components = 3, random.inits = 20, max.iters = 1000,
                   epsilon = 1e-8, family = "normal")[[1]]
    expect_gte(ours$loglik, peer$loglik - 1e-6)
  }
})

test_that("Normal fits reach mclust::Mclust(modelNames = 'V')'s log-likelihood", {
  skip_if_not_installed("mclust")
  # Mclust() finds its helpers only when the package is attached
  suppressPackageStartupMessages(library(mclust))
  for (seed in 1:3) {
    x <- peer_data(seed)
    peer <- mclust::Mclust(x, G = 3, modelNames = "V", verbose = FALSE)
    ours <- bulkem(list(x), num.components = 3, random.inits = 20, max.iters = 1000,
                   epsilon = 1e-8, family = "normal")[[1]]
    expect_gte(ours$loglik, peer$loglik - 1e-6)
  }
})

test_that("IG fits reach flexmix's FLXMCdist1(dist = 'invGauss') log-likelihood", {
  skip_if_not_installed("flexmix")
  skip_if_not_installed("SuppDists")
  skip_if_not_installed("statmod")
  for (seed in 1:3) {
    set.seed(seed)
    x <- b1_dataset(1000)
    peer <- suppressWarnings(flexmix::flexmix(
      x ~ 1, k = 2, model = flexmix::FLXMCdist1(dist = "invGauss"),
      control = list(tolerance = 1e-8, iter.max = 1000)))
    ours <- bulkem(list(x), num.components = 2, random.inits = 20, max.iters = 1000,
                   epsilon = 1e-8)[[1]]
    peer_ll <- peer@logLik
    expect_gte(ours$loglik, peer_ll - 1e-6)
    # and flexmix's own parameters, scored by statmod, agree with its logLik:
    # the two packages use the same density
    p <- flexmix::parameters(peer)
    if (ncol(p) == 2) {
      ref <- list(family = "invgauss", mu = p["nu", ], lambda = p["lambda", ],
                  alpha = flexmix::prior(peer))
      expect_equal(reference_loglik(x, ref), peer_ll, tolerance = 1e-8)
    }
  }
})
