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

# The name of the family's shape parameter; a fit whose `family` was edited
# into something else is an argument error.
shape_name <- function(family) {
  known <- model_limits()$shape_names
  if (!is.character(family) || length(family) != 1 || !family %in% names(known)) {
    stop_arg("`family` of a fit must be one of ", paste0("\"", names(known), "\"", collapse = ", "))
  }
  unname(known[[family]])
}
