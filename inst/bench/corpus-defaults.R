# The defaults corpus (inst/bench/results-defaults.md): 56 simulated and
# 64 real datasets, each with the family and K it is fitted with. Sourced by
# defaults.R and starts.R (after workloads.R); defines `corpus` (a list of
# name, source, x, family, k) and `real` (the real datasets by name).
corpus <- list()
add <- function(name, source, x, family, k) {
  corpus[[length(corpus) + 1]] <<- list(name = name, source = source, x = as.numeric(x),
                                         family = family, k = k)
}
set.seed(2026)
# (a) simulated
b1 <- workload_specs$B1
for (n in c(50, 100, 200, 500, 1000, 2000)) for (r in 1:2)
  add(sprintf("B1 IG n=%d #%d", n, r), "simulated", rmixture(n, b1$alpha, b1$mu, b1$shape, "invgauss"), "invgauss", 2)
b4 <- workload_specs$B4
for (n in c(200, 1000)) for (r in 1:2)
  add(sprintf("B4 IG3 n=%d #%d", n, r), "simulated", rmixture(n, b4$alpha, b4$mu, b4$shape, "invgauss"), "invgauss", 3)
# Normal, 2 components: separation d (difference of means over the first sd),
# equal or 3:1 weights, second sd 1 or 1.5; n = 2000 with equal weights only
for (d in c(1.5, 2, 3, 5)) for (w in c(0.5, 0.75)) for (n in c(50, 200, 1000, 2000)) {
  if (n == 2000 && w != 0.5) next
  s2 <- if (n %in% c(200, 2000)) 1.5 else 1
  add(sprintf("N2 d=%g w=%g sd2=%g n=%d", d, w, s2, n), "simulated",
      rmixture(n, c(w, 1 - w), c(0, d), c(1, s2), "normal"), "normal", 2)
}
# the README's easy mixture (users met max_iters on it with the old defaults)
for (r in 1:4)
  add(sprintf("N2 README n=250 #%d", r), "simulated",
      c(rnorm(150, 0.45, 0.05), rnorm(100, 0.8, 0.15)), "normal", 2)
# Normal, 3 components: B3's truth and a closer one
b3 <- workload_specs$B3
for (n in c(100, 300, 1000, 2000)) for (r in 1) {
  add(sprintf("N3 B3 n=%d #%d", n, r), "simulated", rmixture(n, b3$alpha, b3$mu, b3$shape, "normal"), "normal", 3)
  add(sprintf("N3 close n=%d #%d", n, r), "simulated",
      rmixture(n, c(0.3, 0.4, 0.3), c(0, 2, 4.5), c(1, 0.8, 1.2), "normal"), "normal", 3)
}
# (b) real, public, all positive: both families, K = 2 and 3
real <- list(
  Nile = as.numeric(datasets::Nile),
  `faithful$eruptions` = datasets::faithful$eruptions,
  `faithful$waiting` = datasets::faithful$waiting,
  `quakes$depth` = datasets::quakes$depth,
  `quakes$mag` = datasets::quakes$mag,
  `iris$Sepal.Length` = datasets::iris$Sepal.Length,
  `iris$Petal.Length` = datasets::iris$Petal.Length,
  `airquality$Ozone` = stats::na.omit(datasets::airquality$Ozone),
  precip = as.numeric(datasets::precip),
  rivers = as.numeric(datasets::rivers),
  `chickwts$weight` = datasets::chickwts$weight,
  `ToothGrowth$len` = datasets::ToothGrowth$len
)
if (requireNamespace("mclust", quietly = TRUE)) {
  e <- new.env()
  utils::data("acidity", package = "mclust", envir = e)
  real$`mclust acidity` <- e$acidity
}
if (requireNamespace("MASS", quietly = TRUE)) {
  real$`MASS galaxies` <- MASS::galaxies
  real$`MASS geyser$duration` <- MASS::geyser$duration
  real$`MASS geyser$waiting` <- MASS::geyser$waiting
}
for (nm in names(real)) for (fam in c("normal", "invgauss")) for (k in 2:3)
  add(sprintf("%s %s K=%d", nm, if (fam == "normal") "N" else "IG", k), "real", real[[nm]], fam, k)

