# The core's limits and names (largest K, free parameters per K, the shape
# parameter's name), asked of the compiled code once per session: R keeps no
# copy of its own.
model_limits <- local({
  cache <- NULL
  function() {
    if (is.null(cache)) cache <<- model_limits_()
    cache
  }
})

max_components <- function() model_limits()$max_components

# Free parameters of a K-component mixture (K means, K shapes, K - 1 weights).
free_parameters <- function(k) model_limits()$free_parameters[k]

shape_name <- function(family) {
  unname(model_limits()$shape_names[[family]])
}
