# Base-graphics plots of bulkem fits.

#' Plot bulkem fits
#'
#' For one fit: a histogram of its data with the fitted mixture density and
#' each weighted component drawn over it. For many fits: the fitted
#' components of every dataset, mean against shape (`lambda` or `sigma`, on a
#' log scale; the mean too for the inverse Gaussian), one colour per component, open symbols for fits that stopped at
#' `max.iters`.
#'
#' For one fit, `which = "pp"` or `"qq"` draws a goodness-of-fit plot
#' against the fitted mixture instead (the data are needed): a PP plot (the
#' fitted cdf at each sorted observation against its plotting position
#' [stats::ppoints()]) or a QQ plot (the sorted observations against the
#' fitted mixture's quantiles, from [quantile.bulkem_fit()], at those
#' positions; at most 500 of them for larger datasets, against the sample
#' quantiles there), both with the identity line: points near it mean the
#' mixture describes the data.
#'
#' @param x A `bulkem_fit` or a `bulkem` result.
#' @param data The fit's data: kept by `bulkem(..., control = list(keep.data
#'   = TRUE))`, or given here. Without it only the fitted density is drawn.
#' @param which For one fit: `"density"` (default), `"pp"` or `"qq"`.
#' @param breaks Passed to [graphics::hist()].
#' @param main Plot title.
#' @param ... Further arguments to the underlying plotting function.
#' @returns `x`, invisibly.
#' @examples
#' set.seed(4)
#' d <- replicate(20, c(rnorm(150, 0, 1), rnorm(100, 4, 0.7)), simplify = FALSE)
#' fits <- bulkem(d, random.inits = 5, family = "normal", use.gpu = FALSE,
#'                control = list(keep.data = TRUE))
#' plot(fits[[1]])
#' plot(fits[[1]], which = "pp")
#' plot(fits[[1]], which = "qq")
#' plot(fits)
#' @export
plot.bulkem_fit <- function(x, data = x$data, breaks = "FD", main = NULL,
                            which = c("density", "pp", "qq"), ...) {
  if (!isTRUE(x$fit_success)) stop_arg("this dataset has no fit (status \"", x$status, "\")")
  which <- match_choice(which, c("density", "pp", "qq"), "which")
  if (which != "density") return(invisible(plot_fit_check(x, data, which, main, ...)))
  shape <- x[[shape_name(x$family)]]
  sd <- if (x$family == "normal") shape else sqrt(x$mu^3 / shape)
  lo <- min(x$mu - 4 * sd)
  hi <- max(x$mu + 4 * sd)
  if (!is.null(data)) {
    lo <- min(lo, data, na.rm = TRUE)
    hi <- max(hi, data, na.rm = TRUE)
  }
  if (x$family == "invgauss") lo <- max(lo, 1e-9 * hi)
  grid <- seq(lo, hi, length.out = 512)
  comp <- matrix(core_value(weighted_densities_(grid, x$family, x$alpha, x$mu, shape)), nrow = length(grid))
  total <- rowSums(comp)
  if (is.null(main)) main <- sprintf("%s mixture, K = %d, n = %d", x$family, length(x$mu), x$n)
  if (!is.null(data)) {
    h <- graphics::hist(data, breaks = breaks, plot = FALSE)
    ylim <- c(0, max(h$density, total, na.rm = TRUE))
    plot(h, freq = FALSE, ylim = ylim, main = main, xlab = "x", col = "grey90", border = "grey60", ...)
  } else {
    plot(grid, total, type = "n", main = main, xlab = "x", ylab = "Density", ...)
  }
  cols <- grDevices::hcl.colors(max(3, ncol(comp)), "Dark 3")
  for (m in seq_len(ncol(comp))) graphics::lines(grid, comp[, m], col = cols[m], lty = 2, lwd = 1.5)
  graphics::lines(grid, total, lwd = 2)
  invisible(x)
}

#' @rdname plot.bulkem_fit
#' @export
plot.bulkem <- function(x, main = NULL, ...) {
  tab <- as.data.frame.bulkem(x)
  status <- rep(vapply(x, `[[`, "", "status"), vapply(x, function(f) length(f$mu), 0L))
  kmax <- max(tab$component)
  ig <- identical(attr(x, "family"), "invgauss")
  ok <- is.finite(tab$mu) & is.finite(tab[[5]]) & tab[[5]] > 0 & (!ig | tab$mu > 0)
  if (!any(ok)) stop_arg("none of these datasets has a fit to plot")
  shape <- names(tab)[5]
  if (is.null(main)) {
    main <- sprintf("%d fits (%d without a fit)", sum(vapply(x, `[[`, NA, "fit_success")),
                    sum(!vapply(x, `[[`, NA, "fit_success")))
  }
  cols <- grDevices::hcl.colors(max(3, kmax), "Dark 3")
  plot(tab$mu[ok], tab[[5]][ok], log = if (ig) "xy" else "y", col = cols[tab$component[ok]],
       pch = ifelse(status[ok] == "converged", 19, 1), xlab = "mu", ylab = shape, main = main, ...)
  graphics::legend("topright", bty = "n", cex = 0.8,
                   legend = c(paste("component", seq_len(kmax)), "stopped at max.iters"),
                   col = c(cols[seq_len(kmax)], "black"),
                   pch = c(rep(19, kmax), 1))
  invisible(x)
}

# PP or QQ plot of a fit against its data; `...` overrides the defaults.
plot_fit_check <- function(x, data, which, main, ...) {
  if (is.null(data)) {
    stop_arg("`data` is missing and the fit holds no data: fit with ",
             "control = list(keep.data = TRUE), or pass `data`")
  }
  if (!is.numeric(data)) stop_arg("`data` must be a numeric vector")
  y <- sort(as.double(data[is.finite(data)]))
  if (length(y) == 0) stop_arg("`data` has no finite values")
  if (is.null(main)) {
    main <- sprintf("%s plot: %s mixture, K = %d, n = %d", toupper(which), x$family, length(x$mu), x$n)
  }
  if (which == "pp") {
    xy <- list(stats::ppoints(length(y)), mixture_cdf(x, y))
    args <- list(xlab = "Plotting position", ylab = "Fitted cdf at the sorted data",
                 xlim = c(0, 1), ylim = c(0, 1))
  } else {
    p <- stats::ppoints(min(length(y), 500))
    sample_q <- if (length(y) > 500) stats::quantile(y, p, type = 5, names = FALSE) else y
    xy <- list(quantile.bulkem_fit(x, p, names = FALSE), sample_q)
    args <- list(xlab = "Fitted mixture quantiles", ylab = "Sample quantiles")
  }
  dots <- list(...)
  args <- c(args, list(main = main, pch = 20))
  args <- c(xy, args[setdiff(names(args), names(dots))], dots)
  do.call(graphics::plot, args)
  graphics::abline(0, 1, col = "grey40", lty = 2)
  x
}
