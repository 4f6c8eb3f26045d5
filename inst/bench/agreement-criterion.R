# The engines' agreement criterion of issue 31 (goal 2), shared by
# inst/bench/agreement.R and tests/gpu/run.R and multi.R: per dataset, whether the fit `b` is the same optimum as the CPU
# engine's fit `a` (same status; log-likelihood within 1e-8 relative and
# every parameter within 1e-6 relative), and whether two converged fits are
# more than 1e-6 apart in log-likelihood (which the goal allows for none).
agreement <- function(cpu, other) {
  shape <- bulkem:::shape_name(cpu[[1]]$family)
  rows <- lapply(seq_along(cpu), function(i) {
    a <- cpu[[i]]
    b <- other[[i]]
    if (!identical(a$status, b$status)) return(c(same = FALSE, apart = FALSE, rp = NA, rll = NA))
    if (!isTRUE(a$fit_success)) return(c(same = TRUE, apart = FALSE, rp = 0, rll = 0))
    rll <- abs(b$loglik - a$loglik) / abs(a$loglik)
    # Student's t fits: df too
    fields <- c("mu", "alpha", shape, if (!is.null(a$df)) "df")
    rp <- max(unlist(lapply(fields, function(f) abs(b[[f]] - a[[f]]) / pmax(abs(a[[f]]), 1e-300))))
    c(same = rll < 1e-8 && rp < 1e-6, apart = a$status == "converged" && rll > 1e-6, rp = rp, rll = rll)
  })
  m <- do.call(rbind, rows)
  c(datasets = length(cpu), same_optimum = sum(m[, "same"]), converged_apart = sum(m[, "apart"]),
    worst_param_rel = max(m[, "rp"], na.rm = TRUE), worst_loglik_rel = max(m[, "rll"], na.rm = TRUE))
}

# The goal: the same optimum on at least 99.5% of the datasets, and no
# converged fits more than 1e-6 apart in log-likelihood.
agreement_met <- function(a) a[["same_optimum"]] >= 0.995 * a[["datasets"]] && a[["converged_apart"]] == 0
