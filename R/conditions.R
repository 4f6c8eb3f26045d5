# The conditions bulkem raises. Their classes are named once, in the Rust
# glue (src/rust/src/error.rs): glue functions return an error as a condition
# object rather than failing, R's own checks get theirs from
# argument_condition_(), and R code decides by class, never by message text.
# Ctrl-C and setTimeLimit() give R's own condition, which the glue caught
# while the workers ran and returns to be raised again here.

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
stop_arg <- function(...) raise(argument_condition_(paste0(...)))
