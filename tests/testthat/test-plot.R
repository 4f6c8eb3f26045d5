# plot() of one fit and of many, every family: the caller's graphical
# arguments replace the defaults without collisions or warnings, par() is
# restored, titles count correctly, and bad arguments are classed errors.

plot_fits <- function(family) {
  set.seed(if (family == "normal") 41 else 42)
  d <- if (family == "normal") {
    list(a = rmix(300, c(0.5, 0.5), c(0, 4), c(1, 0.8), "normal"),
         b = rmix(300, c(0.3, 0.3, 0.4), c(-5, 0, 6), c(1, 0.7, 1.2), "normal"),
         c = rmix(200, 1, 3, 1, "normal"),
         bad = c(1, NA))
  } else if (family == "lognormal") {
    list(a = exp(rmix(500, c(0.5, 0.5), c(-0.5, 1), c(0.3, 0.4), "normal")),
         b = exp(rmix(400, c(0.6, 0.4), c(0, 2), c(0.5, 0.3), "normal")),
         c = exp(rnorm(300, 1, 0.5)), bad = c(-1, 2, 3))
  } else if (family == "gamma") {
    g <- function(n, shape, mu) rgamma(n, shape = shape, rate = shape / mu)
    list(a = c(g(300, 12, 1), g(200, 6, 4)), b = c(g(250, 20, 2), g(150, 8, 6)),
         c = g(300, 5, 3), bad = c(-1, 2, 3))
  } else {
    list(a = b1_dataset(500), b = rmix(400, c(0.6, 0.4), c(1, 5), c(5, 20)),
         c = rmix(300, 1, 2, 8), bad = c(-1, 2, 3))
  }
  fits <- quiet_bulkem(d, num.components = 1:3, random.inits = 5, family = family, seed = 3,
                       use.gpu = FALSE, control = list(keep.data = TRUE))
  list(d = d, fits = fits)
}

# Runs `expr` into a null device; fails on any warning or output, and if
# the settable par() values are not as they were.
expect_clean_plot <- function(expr) {
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  settings <- c("mar", "mai", "oma", "mfrow", "xpd", "cex", "las", "col", "pch", "lty", "lwd",
                "bg", "fg", "mgp", "xaxs", "yaxs")
  before <- graphics::par(settings)
  expect_silent(expr)
  expect_identical(graphics::par(settings), before)
}

for (family in c("normal", "invgauss", "lognormal", "gamma")) {
  test_that(paste("one-fit plots take the caller's graphical arguments:", family), {
    m <- plot_fits(family)
    f <- m$fits$a
    expect_clean_plot(plot(f))
    expect_clean_plot(plot(f, xlab = "RT (s)"))
    expect_clean_plot(plot(f, col = "lightblue", border = "white"))
    expect_clean_plot(plot(f, xlab = "RT (s)", ylab = "dens", main = "mine", col = "red",
                           xlim = c(0, 5), ylim = c(0, 1), las = 1, lwd = 2, sub = "s"))
    expect_clean_plot(plot(f, data = NULL, col = "red", xlab = "v", xlim = c(1, 2)))
    expect_clean_plot(plot(f, log = "y"))
    expect_clean_plot(plot(f, breaks = 30, main = "30 bins"))
    for (which in c("pp", "qq")) {
      expect_clean_plot(plot(f, which = which, xlab = "x", ylab = "y", main = "m", col = "blue",
                             pch = 1, xlim = c(-1, 1), ylim = c(-1, 1), las = 1))
    }
    expect_clean_plot(plot(m$fits))
    expect_clean_plot(plot(m$fits, xlab = "mean", ylab = "shape", main = "mine", col = "red",
                           pch = 3, xlim = c(0.1, 10), log = "y", las = 1, cex = 2))
    expect_clean_plot(plot(m$fits, legend = FALSE))
    expect_clean_plot(plot(m$fits["a"], log = ""))
  })
}

test_that("log = \"x\": positive data on a log axis, else a classed error", {
  ig <- plot_fits("invgauss")
  expect_clean_plot(plot(ig$fits$a, log = "x", xlab = "RT (s)"))
  expect_clean_plot(plot(ig$fits$a, log = "xy"))
  expect_clean_plot(plot(ig$fits$a, log = "x", breaks = c(0, 0.5, 1, 2, 5, 1e4)))
  expect_clean_plot(plot(ig$fits$a, data = NULL, log = "x"))
  expect_clean_plot(plot(ig$fits, log = "x"))
  expect_clean_plot(plot(ig$fits$a, which = "qq", log = "xy", xlab = "fitted", main = "QQ"))
  expect_clean_plot(plot(ig$fits$a, which = "pp", log = "xy", xlim = c(0.01, 1), ylim = c(0.01, 1)))
  nm <- plot_fits("normal")
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_error(plot(nm$fits$a, log = "x"), "positive data", class = "bulkem_error_argument")
  expect_error(plot(nm$fits, log = "x"), "positive means", class = "bulkem_error_argument")
  expect_error(plot(nm$fits$a, which = "qq", log = "y"), "positive values on the y axis",
               class = "bulkem_error_argument")
  expect_error(plot(nm$fits$a, which = "qq", log = "w"), "`log`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, log = "x", xlim = c(0, 3)), "`xlim`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, log = "y", ylim = c(0, 3)), "`ylim`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, log = "z"), "`log`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, xlim = "a"), "`xlim`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, "red"), class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, data = "a"), "`data`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$a, which = "hist"), "`which`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits$bad), "no fit", class = "bulkem_error_argument")
  expect_error(plot(ig$fits, legend = NA), "`legend`", class = "bulkem_error_argument")
  expect_error(plot(ig$fits["bad"]), "none of these", class = "bulkem_error_argument")
})

test_that("the x axis label is the data's expression, else \"value\"", {
  expect_identical(bulkem:::plot_data_label(quote(rt)), "rt")
  expect_identical(bulkem:::plot_data_label(quote(d$a)), "d$a")
  expect_identical(bulkem:::plot_data_label(NULL), "value")
  expect_identical(bulkem:::plot_data_label(quote(c(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13))), "value")
})

test_that("titles name the family, K (and how it was chosen), n, and count fits", {
  nm <- plot_fits("normal")
  f <- nm$fits$b
  expect_identical(bulkem:::plot_title_fit(f),
                   sprintf("normal mixture, K = %d chosen by BIC, n = 300", length(f$mu)))
  expect_match(bulkem:::plot_title_fit(f, "qq"), "^QQ plot: normal mixture, K = \\d chosen by BIC")
  expect_match(bulkem:::plot_title_fit(f, "pp"), "^PP plot: ")
  one <- quiet_bulkem(nm$d["a"], random.inits = 5, family = "normal", use.gpu = FALSE)
  expect_identical(bulkem:::plot_title_fit(one$a), "normal mixture, K = 2, n = 300")
  expect_identical(bulkem:::plot_title_many(one), "1 normal fit, K = 2")
  two <- quiet_bulkem(nm$d[c("a", "c", "bad")], random.inits = 5, family = "normal", use.gpu = FALSE)
  expect_identical(bulkem:::plot_title_many(two), "2 normal fits, K = 2 (1 dataset without a fit)")
  k <- vapply(nm$fits[1:3], function(f) length(f$mu), 0L)
  expect_identical(bulkem:::plot_title_many(nm$fits),
                   sprintf("3 normal fits, K = %d to %d chosen by BIC (1 dataset without a fit)",
                           min(k), max(k)))
  bad <- quiet_bulkem(list(x = c(1, NA), y = c(2, NA)), family = "normal", use.gpu = FALSE)
  expect_identical(bulkem:::plot_title_many(bad), "0 normal fits (2 datasets without a fit)")
})

test_that("the many-fits legend goes in the right margin, which is restored", {
  m <- plot_fits("normal")
  grDevices::pdf(NULL, width = 7, height = 5)
  on.exit(grDevices::dev.off())
  mar <- graphics::par("mar")
  plot(m$fits)
  # the plot was drawn with a wider right margin, and par() is back
  expect_identical(graphics::par("mar"), mar)
  graphics::par(mar = c(5, 4, 4, 2) + 0.1)
  plot(m$fits, legend = FALSE)
  expect_identical(graphics::par("mar"), c(5, 4, 4, 2) + 0.1)
})

test_that("plot(which =) of a result: one dataset draws its fit, several are a classed error", {
  m <- plot_fits("normal")
  one <- m$fits["a"]
  for (which in c("density", "pp", "qq")) {
    expect_clean_plot(plot(one, which = which))
    expect_clean_plot(plot(one, which = which, xlab = "v"))
  }
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  for (x in list(m$fits, m$fits[c("a", "c")])) {
    e <- tryCatch(plot(x, which = "density"), error = identity)
    expect_s3_class(e, "bulkem_error_argument")
    expect_match(conditionMessage(e), "`which = \"density\"`", fixed = TRUE)
    expect_match(conditionMessage(e), "plot(x[[1]], which = \"density\")", fixed = TRUE)
  }
  expect_error(plot(one, which = "hist"), "`which`", class = "bulkem_error_argument")
  expect_error(plot(m$fits["bad"], which = "density"), "no fit", class = "bulkem_error_argument")
  # nothing to plot: a result of no datasets
  expect_error(plot(m$fits[0]), "no datasets", class = "bulkem_error_argument")
  expect_error(plot(m$fits[0], which = "density"), "no datasets", class = "bulkem_error_argument")
})

test_that("one-fit density plots: a single value, and breaks that miss the data", {
  m <- plot_fits("normal")
  f <- m$fits$a
  expect_clean_plot(plot(f, data = 3))
  expect_clean_plot(plot(f, data = c(2, 2)))
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  expect_error(plot(f, breaks = c(0, 1)), "`breaks`", class = "bulkem_error_argument")
  expect_error(plot(f, breaks = "nope"), "`breaks`", class = "bulkem_error_argument")
})
