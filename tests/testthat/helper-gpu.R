gpu_usable <- function() isTRUE(bulkem_gpu_info()$usable)
skip_if_no_gpu <- function() skip_if_not(gpu_usable(), "no usable CUDA GPU")

# Runs R code in a fresh R process (the GPU set-up is cached per process)
# with BULKEM_CUDA_FAULT set; returns its output lines and exit status.
run_with_fault <- function(fault, code) {
  rscript <- file.path(R.home("bin"), "Rscript")
  out <- suppressWarnings(system2(rscript, c("-e", shQuote(code)),
                                  env = paste0("BULKEM_CUDA_FAULT=", fault),
                                  stdout = TRUE, stderr = TRUE))
  list(output = paste(out, collapse = "\n"), status = attr(out, "status") %||% 0L)
}
`%||%` <- function(a, b) if (is.null(a)) b else a
