# Simulated data shared by the tests. IG draws by Michael, Schucany & Haas
# (1976), written out so the tests do not depend on which package draws them.
rinvgauss_msh <- function(n, mu, lambda) {
  y <- stats::rnorm(n)^2
  x <- mu + mu^2 * y / (2 * lambda) -
    mu / (2 * lambda) * sqrt(4 * mu * lambda * y + mu^2 * y^2)
  ifelse(stats::runif(n) <= mu / (mu + x), x, mu^2 / x)
}

# n draws from a mixture; `shape` is lambda (IG) or sigma (Normal).
rmix <- function(n, alpha, mu, shape, family = "invgauss") {
  comp <- sample.int(length(alpha), n, replace = TRUE, prob = alpha)
  out <- numeric(n)
  for (m in seq_along(alpha)) {
    i <- comp == m
    out[i] <- if (family == "invgauss") {
      rinvgauss_msh(sum(i), mu[m], shape[m])
    } else {
      stats::rnorm(sum(i), mu[m], shape[m])
    }
  }
  out
}

# The 2015 demo mixture (B1 of DESIGN §6).
b1_dataset <- function(n = 2000) rmix(n, c(0.3, 0.7), c(1, 3), c(30, 0.2))

# Log-likelihood of a fitted mixture computed independently of bulkem, from
# statmod's inverse Gaussian density or stats::dnorm.
reference_loglik <- function(x, fit) {
  dens <- if (fit$family == "invgauss") {
    function(m) statmod::dinvgauss(x, mean = fit$mu[m], shape = fit$lambda[m])
  } else {
    function(m) stats::dnorm(x, fit$mu[m], fit$sigma[m])
  }
  sum(log(Reduce(`+`, lapply(seq_along(fit$mu), function(m) fit$alpha[m] * dens(m)))))
}

# bulkem() where the test means to have fits that end badly (an invalid
# dataset, max.iters reached): the call's one convergence warning is
# expected there, and tested in test-spurious.R.
quiet_bulkem <- function(...) suppressWarnings(bulkem(...), classes = "bulkem_warning_convergence")
