#' Conditions bulkem raises
#'
#' Every error bulkem raises is a condition of class `bulkem_error`, with a
#' more specific class first, so that code can react to a kind of failure
#' with [tryCatch()] or [withCallingHandlers()] without matching message
#' text. No internal call is shown with them.
#'
#' \describe{
#'   \item{`bulkem_error_argument`}{An argument is invalid; the message names
#'     it as written in the call.}
#'   \item{`bulkem_error_gpu_unavailable`}{A GPU was required (`use.gpu =
#'     TRUE`, or a GPU engine in `control$engine`) but none can be used; its
#'     field `reason` says why. With `use.gpu = NA`, bulkem fits on the CPU
#'     instead. When no NVIDIA driver is installed at all, the class
#'     `bulkem_error_gpu_no_driver` comes first.}
#'   \item{`bulkem_error_gpu`}{The GPU failed during the fit (memory, a
#'     kernel). With `use.gpu = NA`, bulkem says so in a message and fits
#'     on the CPU instead.}
#'   \item{`bulkem_error_future`}{A shard of a call with `control$future =
#'     TRUE` failed, or its worker died; the message names the shard and its
#'     datasets ("shard 3 of 8 (datasets 201-300) failed: ..."), the fields
#'     `shard` and `datasets` give them, and `parent` is the worker's own
#'     condition (e.g. a `bulkem_error_gpu_unavailable`).}
#'   \item{`bulkem_error_internal`}{A bug in bulkem; please report it.}
#' }
#'
#' Interrupting a fit (Ctrl-C, or a limit set with [setTimeLimit()]) stops
#' its workers and then gives R's own condition, as any other R computation
#' would: an `interrupt` condition (caught by `tryCatch(interrupt = )`) or
#' R's time limit error.
#'
#' @name bulkem_conditions
#' @aliases bulkem_error
#' @examples
#' r <- tryCatch(bulkem(list(), use.gpu = FALSE),
#'               bulkem_error_argument = function(e) conditionMessage(e))
#' r
#' # a GPU if one can be used, and otherwise the CPU, on purpose and quietly
#' x <- list(c(rnorm(100), rnorm(100, 4)))
#' fits <- tryCatch(bulkem(x, family = "normal", use.gpu = TRUE),
#'                  bulkem_error_gpu_unavailable = function(e)
#'                    bulkem(x, family = "normal", use.gpu = FALSE))
#' attr(fits, "engine")
NULL

# How the classes come about. They are named once, in the table of the Rust
# glue (KINDS in src/rust/src/error.rs): glue functions return an error as a
# condition object built from it rather than failing, and R builds every
# condition it raises itself (argument errors, a failed future shard, an
# internal error, the convergence warning) with bulkem_condition(), whose
# classes come from the same table through condition_classes_(). R code
# decides by class, never by message text.
# Ctrl-C and setTimeLimit() give R's own condition, which the glue caught
# while the workers ran and returns to be raised again here.

# The glue's table: a named list, one character vector of classes (most
# specific first) per kind of condition; asked of the compiled code once per
# session.
condition_classes <- local({
  cache <- NULL
  function() {
    if (is.null(cache)) cache <<- condition_classes_()
    cache
  }
})

# A condition of `kind` (a name of the glue's table: "argument", "future",
# "internal", "warning_convergence", ...) with `message`, no call, and the
# fields given in `...` after them; to be raised with raise() or warning().
bulkem_condition <- function(kind, message, ...) {
  classes <- condition_classes()[[kind]]
  if (is.null(classes)) {
    raise(bulkem_condition("internal", paste0("no condition class for the kind \"", kind, "\"")))
  }
  structure(class = classes, c(list(message = message, call = NULL), list(...)))
}

# Raises `cond`: an error with no call, so none of bulkem's internals are
# shown ("Error: <message>"); an interrupt as R raises one.
raise <- function(cond) {
  if (inherits(cond, "interrupt")) signal_interrupt(cond)
  cond["call"] <- list(NULL)
  stop(cond)
}

# What R does on Ctrl-C (R_CheckUserInterrupt): handlers for the interrupt
# (tryCatch(interrupt = ), withCallingHandlers) see it; if none takes it,
# options(interrupt) runs, and R returns to the top level: the prompt in an
# interactive session, "Execution halted" in Rscript, as after an unhandled
# Ctrl-C (compared with R's own in Rscript by tests/testthat/test-interrupt.R,
# and by hand in an interactive session). R also offers a "resume" restart;
# a fit cannot resume once its workers have stopped, so there is none here.
signal_interrupt <- function(cond) {
  signalCondition(cond)
  handler <- getOption("interrupt")
  if (is.function(handler)) handler()
  cat("\n", file = stderr()) # as R ends the line the terminal echoed ^C on
  invokeRestart("abort")
}

# The value of a glue function, or the condition it returned raised.
core_value <- function(x) if (inherits(x, "condition")) raise(x) else x

# A bad argument: the message names the argument as the user wrote it.
stop_arg <- function(...) raise(bulkem_condition("argument", paste0(...)))

# The one warning of a call whose fits did not all end well: how many stopped
# at max.iters, failed, were marked spurious, were invalid or converged to a
# saddle point (`outcomes`, counted by the glue), of class
# bulkem_warning_convergence; the condition carries the counts as `counts`.
# With the call's `fits` (names and kept data attached), `datasets` and
# `several` (whether several Ks were fitted), it also says how many fits
# kept their K because another K was not sound (`chosen_over`, naming the
# first), names the observations the first spurious fit's suspect
# component sits on, counts the fits with values far from the rest of their
# data (`far`, naming the first's), and counts the inverse Gaussian datasets invalid for
# values <= 0 (`not_positive`), with the `subset` that drops them
# (`response`: the values' expression of a formula or data frame).
warn_convergence <- function(outcomes, n, fits = NULL, datasets = NULL, response = NULL, several = TRUE) {
  what <- c(max_iters = "stopped at max.iters before the log-likelihood settled (raise max.iters)",
            failed = "failed (every start degenerated)",
            spurious = "are marked spurious (no start passed the spurious-solution screen; try more starts)",
            invalid = "were invalid (the data cannot be fitted)",
            saddle = "converged to a saddle point, not a maximum (no standard errors; try more starts)")
  counts <- stats::setNames(rep(0, length(what)), names(what))
  have <- intersect(names(outcomes), names(what))
  counts[have] <- outcomes[have]
  fits <- unclass(fits)
  over <- if (several && length(fits) > 0) chosen_over(fits) else logical()
  far <- if (length(fits) > 0) fits_far(fits) else logical()
  not_positive <- if (counts[["invalid"]] > 0) not_positive_datasets(fits, datasets) else 0L
  if (!any(counts > 0) && !any(over) && !any(far)) return(invisible(NULL))
  # counts arrive as doubles, which format() would write as 2e+05
  count <- function(x) formatC(x, format = "d", big.mark = ",")
  label <- function(i) {
    nm <- names(fits)[i]
    if (is.null(nm) || !nzchar(nm)) paste("dataset", i) else paste("dataset", nm)
  }
  if (counts[["spurious"]] > 0 && length(fits) > 0) {
    first <- Position(function(f) isTRUE(f$spurious) && has_fit(f), fits)
    if (!is.na(first)) {
      what[["spurious"]] <- paste0(what[["spurious"]], " (e.g. ", label(first), ": ",
                                   spurious_culprit(fits[[first]]), ")")
    }
  }
  if (not_positive > 0) {
    what[["invalid"]] <- paste0(
      "were invalid (the data cannot be fitted; ", count(not_positive), " of them because of values <= 0, ",
      "which the ", family_label(fits[[1]]$family), " cannot fit: drop them with ",
      if (!is.null(response)) paste0("subset = ", response, " > 0") else "x[x > 0] on each dataset", ")")
  }
  parts <- paste(count(counts[counts > 0]), what[counts > 0])
  if (any(over)) {
    first <- which(over)[1]
    parts <- c(parts, paste0(count(sum(over)), if (sum(over) == 1) " chose its K" else " chose their K",
                             " because another K ", over_reasons(fits[over]),
                             " (see bulkem_compare(); e.g. ", label(first), ": ",
                             result_notes(fits[first], "")[[1]], ")"))
  }
  if (any(far)) {
    first <- which(far)[1]
    parts <- c(parts, paste0(count(sum(far)), if (sum(far) == 1) " has values far from the rest of its data"
                             else " have values far from the rest of their data", " (e.g. ", label(first), ": ",
                             far_note(fits[[first]]), ")"))
  }
  warning(bulkem_condition("warning_convergence", paste0(
    "of ", count(n), " fit", if (n != 1) "s", ", ", paste(parts, collapse = ", "),
    "; see each fit's status and message, or summary()"), counts = counts,
    chosen_over = sum(over), not_positive = not_positive, far = sum(far)))
}

# How many of `fits` are invalid fits of a family for positive data
# (inverse Gaussian, lognormal) of `datasets` that are long enough and
# finite but hold a value <= 0 (the core's order of checks: length, then
# missing and infinite values, then the sign).
not_positive_datasets <- function(fits, datasets) {
  if (length(fits) == 0 || length(datasets) != length(fits) || !positive_family(fits[[1]]$family)) {
    return(0L)
  }
  per <- model_limits()$obs_per_component
  bad <- vapply(seq_along(fits), function(i) {
    f <- fits[[i]]
    if (!identical(f$status, "invalid") || !positive_family(f$family)) return(FALSE)
    x <- datasets[[i]]
    length(x) >= per * NROW(f$mu) && all(is.finite(x)) && any(x <= 0)
  }, NA)
  sum(bad)
}
