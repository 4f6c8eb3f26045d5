# Choosing the number of components: each dataset's fit with the lowest BIC
# among the Ks fitted in one call.

choose_by_bic <- function(per_k, ks) {
  n <- length(per_k[[1]])
  field <- function(name, type) {
    matrix(vapply(per_k, function(fits) vapply(fits, `[[`, type, name, USE.NAMES = FALSE),
                  type[rep(1, n)]), nrow = n)
  }
  bic <- field("bic", 0)
  loglik <- field("loglik", 0)
  aic <- field("aic", 0)
  status <- field("status", "")
  lapply(seq_len(n), function(d) {
    best <- if (all(is.na(bic[d, ]))) 1L else which.min(bic[d, ])
    fit <- per_k[[best]][[d]]
    fit$num_components <- ks[best]
    fit$by_k <- data.frame(K = ks, loglik = loglik[d, ], aic = aic[d, ], bic = bic[d, ],
                           status = status[d, ], stringsAsFactors = FALSE)
    fit
  })
}
