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

# control$keep.starts: each fit's `starts` data frame, from the engine's
# columns (for several Ks, those of the K chosen).
attach_starts <- function(fits, starts, ks, family) {
  shape <- shape_name(family)
  for (d in seq_along(fits)) {
    k <- if (length(ks) > 1) fits[[d]]$num_components else ks
    s <- if (length(ks) > 1) starts[[match(k, ks)]][[d]] else starts[[d]]
    frame <- data.frame(start = s$start, loglik = s$loglik, iterations = s$iterations,
                        status = s$status, reason = s$reason, stringsAsFactors = FALSE)
    for (p in c("alpha", "mu", "shape")) {
      m <- matrix(s[[paste0("init_", p)]], ncol = k, byrow = TRUE)
      colnames(m) <- paste0("init_", if (p == "shape") shape else p, "_", seq_len(k))
      frame <- cbind(frame, m)
    }
    fits[[d]]$starts <- frame
  }
  fits
}
