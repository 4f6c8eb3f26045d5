# Progress of a call, through progressr: the engine's watcher on R's main
# thread calls `update(done, total)` about four times a second while the
# engine works (src/rust/src/watch.rs, run_watched), and this turns the
# fraction done into progressr steps. progressr shows nothing unless the
# user asked for it (progressr::with_progress(), or
# progressr::handlers(global = TRUE)), with the handler the user chose.

# Steps of a call's progressor: the fraction done in thousandths. (progressr
# keeps a timestamp per step, so the steps cannot be the units of work,
# which may number in the hundreds of millions.)
progress_steps <- 1000L

# A progressor for the call whose frame is `envir` (progressr finishes it
# when that frame exits, also on an error or interrupt), and the functions
# the glue and bulkem() call: `update(done, total)` signals the steps gained
# since the last call, never going back; `finish()` the rest, up to 1.
progress_reporter <- function(envir = parent.frame()) {
  p <- progressr::progressor(steps = progress_steps, envir = envir)
  sent <- 0L
  advance <- function(to) {
    if (to > sent) {
      p(amount = to - sent)
      sent <<- to
    }
    invisible(NULL)
  }
  list(
    update = function(done, total) {
      if (total > 0) advance(as.integer(floor(progress_steps * min(1, done / total))))
      invisible(NULL)
    },
    finish = function() advance(progress_steps)
  )
}
