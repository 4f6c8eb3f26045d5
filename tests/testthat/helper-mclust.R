# mclust as the multivariate fits' reference.

mclust_model <- c(full = "VVV", tied = "EEE", diagonal = "VVI", spherical = "VII")

# mclust's fit of one model and K (Mclust(), whose helpers look each other
# up on the search path: mclust is attached for the call only)
mclust_fit <- function(x, k, model) {
  if (!"package:mclust" %in% search()) {
    suppressPackageStartupMessages(attachNamespace("mclust"))
    on.exit(detach("package:mclust"), add = TRUE)
  }
  mclust::Mclust(x, G = k, modelNames = model, verbose = FALSE)
}
