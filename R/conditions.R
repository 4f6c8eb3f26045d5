# The conditions bulkem raises. Their classes are named once, in the Rust
# glue (src/rust/src/error.rs): glue functions return an error as a condition
# object rather than failing, R's own checks get theirs from
# argument_condition_(), and R code decides by class, never by message text.

# Raises `cond`, an error, with no call, so none of bulkem's internals are
# shown ("Error: <message>").
raise <- function(cond) {
  cond["call"] <- list(NULL)
  stop(cond)
}

# The value of a glue function, or the condition it returned raised.
core_value <- function(x) if (inherits(x, "condition")) raise(x) else x

# A bad argument: the message names the argument as the user wrote it.
stop_arg <- function(...) raise(argument_condition_(paste0(...)))
