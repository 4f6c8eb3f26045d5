# Every error is a classed condition: bulkem_error, with bulkem_error_argument
# for bad arguments and bulkem_error_gpu_unavailable / bulkem_error_gpu for the
# GPU; no internal call is shown. (Interrupts: test-interrupt.R.)

expect_bulkem_error <- function(expr, class) {
  e <- tryCatch(expr, error = function(e) e)
  expect_s3_class(e, class)
  expect_s3_class(e, "bulkem_error")
  expect_null(conditionCall(e))
  invisible(e)
}

argument_classes <- c("bulkem_error_argument", "bulkem_error", "error", "condition")

test_that("argument errors are bulkem_error_argument, with no call", {
  x <- c(1, 2, 3, 4, 5, 6, 7)
  df <- data.frame(rt = x, subject = rep(1:2, length.out = 7))
  calls <- list(
    quote(bulkem("a")),
    quote(bulkem(list())),
    quote(bulkem(list(x, letters))),
    quote(bulkem(x, num.components = 9)),
    quote(bulkem(x, max.iters = 0)),
    quote(bulkem(x, random.inits = NA)),
    quote(bulkem(x, use.gpu = "yes")),
    quote(bulkem(x, epsilon = -1)),
    quote(bulkem(x, family = "weibull")),
    quote(bulkem(x, seed = -1)),
    quote(bulkem(x, foo = 5)),
    quote(bulkem(x, control = "fast")),
    quote(bulkem(x, control = list(thread = 2))),
    quote(bulkem(x, control = list(threads = 0))),
    quote(bulkem(x, control = list(engine = "gpu"))),
    quote(bulkem(x, control = list(precision = "single"))),
    quote(bulkem(x, control = list(keep.data = NA))),
    quote(bulkem(x, use.gpu = TRUE, control = list(engine = "cpu"))),
    quote(bulkem(df)),
    quote(bulkem(df, value = "rt")),
    quote(bulkem(df, value = "nope", group = "subject")),
    quote(bulkem(df, formula = ~ subject)),
    quote(predict(bulkem(x, family = "normal", use.gpu = FALSE)[[1]], "a"))
  )
  for (call in calls) {
    e <- tryCatch(eval(call), error = function(e) e)
    expect_identical(class(e), argument_classes, label = deparse(call))
    expect_null(conditionCall(e))
  }
})

test_that("argument errors print without an internal call", {
  out <- run_child('library(bulkem); bulkem(list())')
  expect_identical(out$stderr, "Error: `datasets` is empty: give at least one dataset\nExecution halted\n")
  out <- run_child('library(bulkem); try(bulkem(1:10, control = list(threads = 0)))')
  expect_match(out$stderr, "^Error : `control\\$threads` must be")
})

test_that("a fit edited into an inconsistent one is an argument error, not a crash", {
  set.seed(1)
  fit <- bulkem(list(c(rnorm(100), rnorm(100, 5))), family = "normal", use.gpu = FALSE)[[1]]
  fit$mu <- c(fit$mu, 9)
  e <- expect_bulkem_error(predict(fit, 1:3 + 0.5), "bulkem_error_argument")
  expect_match(conditionMessage(e), "`mu` of a fit")
  d <- bulkem:::weighted_densities_(1:3 + 0.5, "weibull", fit$alpha, fit$mu[1:2], fit$sigma, numeric(0))
  expect_identical(class(d), argument_classes)
  # and one whose family is not a family
  fit$mu <- fit$mu[1:2]
  fit$family <- "weibull"
  e <- expect_bulkem_error(predict(fit, 1:3 + 0.5), "bulkem_error_argument")
  expect_match(conditionMessage(e), "`family` of a fit must be one of \"invgauss\", \"normal\"")
})

test_that("the glue returns a core error as a condition object, for R to raise", {
  settings <- bulkem:::core_settings("weibull", 2L, 10L, 1L, 1e-6, 1, bulkem:::check_control(list(threads = 1)), "cpu")
  x <- bulkem:::fit_(list(c(1, 2, 3)), list(), settings, NULL)
  expect_identical(class(x), c("bulkem_error_internal", "bulkem_error", "error", "condition"))
  expect_null(conditionCall(x))
  expect_error(bulkem:::core_value(x), "unknown family", class = "bulkem_error_internal")
  expect_identical(bulkem:::core_value(1:3), 1:3)
})

gpu_code <- '
  library(bulkem)
  show <- function(expr) {
    msgs <- character()
    r <- withCallingHandlers(
      tryCatch({ f <- expr; paste("ENGINE", attr(f, "engine")) },
               error = function(e) paste0("CLASS ", paste(class(e), collapse = ","),
                                          " CALL ", is.null(conditionCall(e)),
                                          " MESSAGE ", conditionMessage(e))),
      message = function(m) {
        # message() ends the text with a newline; one line per call here
        msgs <<- c(msgs, sub("\\n$", "", conditionMessage(m)))
        invokeRestart("muffleMessage")
      })
    cat(r, "| MESSAGES", length(msgs), msgs, "\\n")
  }
  set.seed(1)
  x <- list(c(rexp(200, 1), rexp(100, 0.2)))
  show(bulkem(x, random.inits = 3))
  show(bulkem(x, random.inits = 3, use.gpu = TRUE))
  show(bulkem(x, random.inits = 3, control = list(engine = "cuda-batched")))
  u <- bulkem:::gpu_usable_()
  cat("USABLE", paste(class(u), collapse = ","), if (is.list(u)) c("REASON", u$reason), "\\n")'

test_that("no NVIDIA driver: bulkem_error_gpu_no_driver, and silently the CPU under use.gpu = NA", {
  no_driver <- run_child(gpu_code, "BULKEM_CUDA_FAULT=no-driver")
  lines <- strsplit(no_driver$stdout, "\n")[[1]]
  # no driver at all: a machine without a GPU, so no message
  expect_match(lines[1], "^ENGINE cpu \\| MESSAGES 0 *$")
  unavailable <- "CLASS bulkem_error_gpu_no_driver,bulkem_error_gpu_unavailable,bulkem_error,error,condition CALL TRUE"
  expect_identical(substr(lines[2], 1, nchar(unavailable)), unavailable)
  expect_match(lines[2], "MESSAGE `use.gpu = TRUE` needs a usable GPU, but the CUDA driver library (libcuda.so) was not found",
               fixed = TRUE)
  expect_match(lines[3], "CLASS bulkem_error_gpu_no_driver.*MESSAGE `control\\$engine = \"cuda-batched\"` needs a usable GPU")
  expect_match(lines[4], "USABLE bulkem_error_gpu_no_driver,bulkem_error_gpu_unavailable,bulkem_error,error,condition REASON the CUDA driver",
               fixed = TRUE)
  expect_identical(no_driver$stderr, "")
})

test_that("a driver without NVRTC: bulkem_error_gpu_unavailable, said once under use.gpu = NA", {
  # without a driver, bulkem stops at the driver (the case above)
  skip_if_not(bulkem_gpu_info()$driver_found, "no NVIDIA driver on this machine")
  no_nvrtc <- run_child(gpu_code, "BULKEM_CUDA_FAULT=no-nvrtc")
  lines <- strsplit(no_nvrtc$stdout, "\n")[[1]]
  # a driver but no compiler: a GPU that cannot be used, said once
  expect_match(lines[1], "^ENGINE cpu \\| MESSAGES 1 bulkem: the GPU cannot be used \\(.*libnvrtc.*\\); fitting on the CPU")
  expect_match(lines[2], "^CLASS bulkem_error_gpu_unavailable,bulkem_error,error,condition CALL TRUE MESSAGE `use.gpu = TRUE` needs a usable GPU, but .*libnvrtc")
  expect_match(lines[3], "^CLASS bulkem_error_gpu_unavailable,bulkem_error,error,condition .*`control\\$engine = \"cuda-batched\"`")
  expect_identical(no_nvrtc$stderr, "")
})

test_that("a GPU failing during a run: bulkem_error_gpu, or the CPU under use.gpu = NA", {
  skip_if_no_gpu()
  for (fault in c("launch", "oom")) {
    out <- run_child(gpu_code, paste0("BULKEM_CUDA_FAULT=", fault))
    lines <- strsplit(out$stdout, "\n")[[1]]
    expect_match(lines[1], "^ENGINE cpu \\| MESSAGES 1 bulkem: GPU error: .*; fitting on the CPU instead", label = fault)
    expect_match(lines[2], "^CLASS bulkem_error_gpu,bulkem_error,error,condition CALL TRUE MESSAGE GPU error: ", label = fault)
    # an explicit GPU engine falls back too: it is use.gpu that decides
    expect_match(lines[3], "^ENGINE cpu \\| MESSAGES 1 bulkem: GPU error: ", label = fault)
    expect_match(lines[4], "^USABLE logical", label = fault)
  }
})

test_that("one table of condition classes: the glue's, and R builds every condition from it", {
  tab <- bulkem:::condition_classes_()
  expect_type(tab, "list")
  expect_true(all(c("argument", "gpu_unavailable", "gpu_no_driver", "gpu", "future", "internal",
                    "warning_convergence") %in% names(tab)))
  expect_false(anyDuplicated(names(tab)) > 0)
  for (kind in names(tab)) {
    classes <- tab[[kind]]
    expect_type(classes, "character")
    base <- if (startsWith(kind, "warning")) c("bulkem_warning", "warning", "condition") else
      c("bulkem_error", "error", "condition")
    expect_identical(utils::tail(classes, length(base)), base, label = kind)
  }
  expect_identical(tab$argument, argument_classes)
  # the conditions the glue returns have the table's classes
  settings <- bulkem:::core_settings("weibull", 2L, 10L, 1L, 1e-6, 1, bulkem:::check_control(list(threads = 1)), "cpu")
  x <- bulkem:::fit_(list(c(1, 2, 3)), list(), settings, NULL)
  expect_identical(class(x), tab$internal)
  d <- bulkem:::weighted_densities_(1:3 + 0.5, "normal", c(0.5, 0.5), 1, 1, numeric(0))
  expect_identical(class(d), tab$argument)
  gpu <- bulkem:::gpu_usable_()
  if (!isTRUE(gpu)) expect_true(any(vapply(tab, identical, NA, class(gpu))))
  # and so do the conditions R raises itself
  e <- tryCatch(bulkem(list()), error = identity)
  expect_identical(class(e), tab$argument)
  w <- tryCatch(bulkem(list(c(1, 2)), family = "normal", use.gpu = FALSE), warning = identity)
  expect_identical(class(w), tab$warning_convergence)
  expect_identical(names(w$counts), c("max_iters", "failed", "spurious", "invalid", "saddle"))
  ranges <- bulkem:::shard_ranges(10, 4)
  f <- bulkem:::shard_error(ranges[2, ], 4L, simpleError("boom"))
  expect_identical(class(f), tab$future)
  expect_identical(f$shard, 2L)
  expect_identical(conditionMessage(f), "shard 2 of 4 (datasets 4-6) failed: boom")
  expect_null(conditionCall(f))
  # every class R code of bulkem names (handlers, inherits()) is in the table
  ns <- asNamespace("bulkem")
  named <- unlist(lapply(ls(ns, all.names = TRUE), function(name) {
    f <- get(name, envir = ns)
    if (!is.function(f) || is.primitive(f)) return(NULL)
    code <- paste(deparse(f), collapse = "\n")
    regmatches(code, gregexpr("bulkem_(error|warning)[A-Za-z0-9_]*", code))[[1]]
  }))
  expect_true(length(named) > 0)
  expect_identical(setdiff(named, unlist(tab)), character())
  i <- bulkem:::bulkem_condition("internal", "a bug")
  expect_identical(class(i), tab$internal)
  expect_error(bulkem:::bulkem_condition("no such kind", "x"), class = "bulkem_error_internal")
})

test_that("no R code of bulkem decides by a condition's message text", {
  # no function of the namespace (handlers written inside one included) both
  # reads a condition's message and runs a text matcher
  matchers <- c("grepl", "grep", "sub", "gsub", "regexpr", "gregexpr", "regexec", "regmatches",
                "startsWith", "endsWith", "strsplit", "substr", "substring", "agrepl", "agrep")
  ns <- asNamespace("bulkem")
  offenders <- character()
  for (name in ls(ns, all.names = TRUE)) {
    f <- get(name, envir = ns)
    if (!is.function(f) || is.primitive(f)) next
    used <- all.names(body(f))
    if ("conditionMessage" %in% used && any(matchers %in% used)) offenders <- c(offenders, name)
  }
  expect_identical(unique(offenders), character())
})
