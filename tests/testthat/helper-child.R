# Runs R code in a fresh Rscript, with this session's library paths and the
# environment variables `env` (e.g. "BULKEM_CUDA_FAULT=no-driver"); returns
# its stdout and stderr (each one string, exactly as written) and exit status. For what must not
# happen in the test session itself: an unhandled Ctrl-C, R's printing of an
# error, a GPU set-up cached per process.
run_child <- function(code, env = character()) {
  rscript <- file.path(R.home("bin"), "Rscript")
  out <- tempfile()
  err <- tempfile()
  on.exit(unlink(c(out, err)))
  libs <- sprintf(".libPaths(c(%s))", paste(deparse(.libPaths()), collapse = ""))
  status <- suppressWarnings(system2(rscript, c("-e", shQuote(paste(libs, code, sep = "\n"))),
                                     env = env, stdout = out, stderr = err))
  read <- function(f) paste(readChar(f, file.size(f), useBytes = TRUE), collapse = "")
  list(stdout = read(out), stderr = read(err), status = status)
}
