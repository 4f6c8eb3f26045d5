# The package page answers to ?`bulkem-package` only: ?bulkem belongs to the
# bulkem() function (roxygen would give both pages the alias "bulkem").
#' @keywords internal
#' @aliases NULL bulkem-package
"_PACKAGE"

# Registers the compiled routines (R_init_bulkem in src/entrypoint.c); the
# .Call() stubs in R/extendr-wrappers.R refer to them as symbols.
#' @useDynLib bulkem, .registration = TRUE
NULL
