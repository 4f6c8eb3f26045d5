# Shared by test-progress.R and test-future.R.

# A progressr handler that records what it is shown: the step and the
# number of steps at each initiate, update and finish; `seen()` returns them
# as a data frame.
recording_handler <- function() {
  rows <- list()
  add <- function(type) {
    force(type)
    function(config, state, ...) {
      rows[[length(rows) + 1L]] <<- data.frame(type = type, step = state$step, steps = config$max_steps)
    }
  }
  handler <- function(...) {
    progressr::make_progression_handler(
      "record", reporter = list(initiate = add("initiate"), update = add("update"), finish = add("finish")),
      enable = TRUE, ...)
  }
  list(handler = handler, seen = function() do.call(rbind, rows))
}

with_recorded_progress <- function(expr, rec) {
  progressr::with_progress(expr, handlers = rec$handler, enable = TRUE)
}
