# The progress bar of long calls: drawn from R's main thread while the engine
# works (the glue calls `update` about four times a second), with message()
# so that suppressMessages() silences it. Nothing shows before `after`
# seconds, so short calls stay quiet.

progress_reporter <- function(show, after = 2) {
  if (!show) return(NULL)
  started <- proc.time()[["elapsed"]]
  drawn <- FALSE
  width <- 30
  draw <- function(frac, tail) {
    message(sprintf("\r|%-*s| %3.0f%% %s", width, strrep("=", round(width * frac)), 100 * frac, tail),
            appendLF = FALSE)
  }
  list(
    update = function(done, total) {
      elapsed <- proc.time()[["elapsed"]] - started
      if (elapsed < after || total <= 0) return(invisible(NULL))
      frac <- min(1, done / total)
      eta <- if (frac > 0) sprintf("ETA %s   ", format_seconds(elapsed * (1 - frac) / frac)) else ""
      draw(frac, eta)
      drawn <<- TRUE
      invisible(NULL)
    },
    finish = function() {
      if (drawn) {
        draw(1, sprintf("done in %s   ", format_seconds(proc.time()[["elapsed"]] - started)))
        message("")
        drawn <<- FALSE
      }
      invisible(NULL)
    },
    # ends the bar's line if the call stopped before finish()
    close = function() {
      if (drawn) message("")
      drawn <<- FALSE
      invisible(NULL)
    }
  )
}

format_seconds <- function(s) {
  if (s < 60) return(sprintf("%.0fs", s))
  if (s < 3600) return(sprintf("%dm%02.0fs", s %/% 60, s %% 60))
  sprintf("%dh%02.0fm", s %/% 3600, (s %% 3600) / 60)
}
