# SQUAREM's cpu vs cuda-batched disagreements, classified (issue 31 goal 2):
# on the GPU machine, `Rscript inst/bench/agreement-classes.R`; results in
# inst/bench/results-agreement.md
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))
classify <- function(cpu, gpu) {
  out <- character(length(cpu))
  for (i in seq_along(cpu)) {
    a <- cpu[[i]]; b <- gpu[[i]]
    if (!identical(a$status, b$status)) { out[i] <- "status differs"; next }
    if (!isTRUE(a$fit_success)) { out[i] <- "same (no fit)"; next }
    rll <- abs(a$loglik - b$loglik) / abs(a$loglik)
    shape <- if (a$family == "invgauss") "lambda" else "sigma"
    rp <- max(unlist(lapply(c("mu", "alpha", shape), function(f) abs(b[[f]] - a[[f]]) / abs(a[[f]]))))
    same_start <- identical(a$best_start, b$best_start)
    out[i] <- if (rp < 1e-8 && rll < 1e-9 && same_start) "same" else if (rll > 1e-6) {
      if (same_start) "same start, other optimum" else "other start, other optimum"
    } else if (same_start) "same start, same optimum, params differ" else "other start, same optimum"
  }
  table(factor(out, levels = c("same", "same (no fit)", "status differs", "same start, same optimum, params differ",
                               "other start, same optimum", "same start, other optimum", "other start, other optimum")))
}
for (nm in c("B2", "B4")) {
  w <- workload(nm, fraction = 0.02)
  for (eps in c(1e-6, 1e-8)) {
    args <- w$args; args$epsilon <- eps
    cpu <- suppressWarnings(do.call(bulkem, c(list(w$datasets), args, list(seed = 99, use.gpu = FALSE, control = list(accelerate = TRUE)))))
    gpu <- suppressWarnings(do.call(bulkem, c(list(w$datasets), args, list(seed = 99, control = list(engine = "cuda-batched", accelerate = TRUE)))))
    cat("\n==", nm, "epsilon", eps, "max.iters", args$max.iters, "starts", args$random.inits, "\n")
    print(classify(cpu, gpu))
  }
}
