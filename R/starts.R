# control$keep.starts: each fit's `starts` data frame, from the engine's
# columns (for several Ks, those of the K chosen).
attach_starts <- function(fits, starts, family) {
  shape <- shape_name(family)
  for (d in seq_along(fits)) {
    k <- length(fits[[d]]$mu)
    s <- starts[[d]]
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
