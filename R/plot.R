# Base-graphics plots of bulkem fits. Every plot merges the caller's `...`
# over its own defaults (plot_args()), so any graphical parameter the caller
# names (xlab, main, col, xlim, log, ..) replaces the default rather than
# colliding with it.

#' Plot bulkem fits
#'
#' For one fit: a histogram of its data (density scale) with the fitted
#' mixture density (solid) and each weighted component (dashed) drawn over
#' it, and a noise component's level over its support (dotted, grey;
#' `noise = TRUE`); the title gives the family, the number of components K (with
#' "+ noise" for a noise component and "chosen by BIC" when several Ks
#' were fitted) and n. For many fits: the
#' fitted components of every dataset, mean against shape (`lambda`,
#' `sigma` or the gamma's `shape`, on a log scale; the mean too for the
#' inverse Gaussian and the gamma), one
#' colour per component, one symbol per K when the chosen K differs between
#' datasets, open symbols for fits that stopped at `max.iters`; the legend
#' sits in the right margin, outside the data.
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
#' Arguments in `...` replace the plot's defaults: `xlab`, `ylab`, `main`,
#' `sub`, `xlim`, `ylim`, `log`, `las`, `cex.main` and the other arguments of
#' [graphics::plot.default()] and [graphics::par()]. In the density plot,
#' `col` and `border` are the histogram bars' fill and border (as in
#' [graphics::hist()]; without data, `col` is the colour of the mixture's
#' density), and `log = "x"` draws the density on a log axis with
#' log-spaced histogram bins (the data must be positive; a numeric `breaks`
#' is taken on the data's own scale). In the many-fits plot, `col` or `pch`
#' given replace the colour or symbol coding, and the legend then leaves out
#' what they replaced. The graphical parameters the plots change
#' (the right margin for the legend) are restored on exit.
#'
#' @param x A `bulkem_fit` or a `bulkem` result.
#' @param data The fit's data: kept by `bulkem(..., control = list(keep.data
#'   = TRUE))`, or given here. Without it only the fitted density is drawn.
#' @param which For one fit: `"density"` (default), `"pp"` or `"qq"`. For a
#'   `bulkem` result: `NULL` (default) draws the many-fits plot; a result of
#'   one dataset also takes `"density"`, `"pp"` or `"qq"` and draws its fit
#'   (of several datasets, pick one: `plot(fits[[1]], which = "pp")`).
#' @param breaks Passed to [graphics::hist()].
#' @param main Plot title; by default it names the family, K and n (one
#'   fit) or counts the fits (many).
#' @param legend For many fits: `FALSE` leaves the legend out.
#' @param ... Graphical parameters, replacing the defaults (see Details).
#' @returns `x`, invisibly.
#' @examples
#' set.seed(4)
#' d <- replicate(20, c(rnorm(150, 0, 1), rnorm(100, 4, 0.7)), simplify = FALSE)
#' fits <- bulkem(d, random.inits = 5, family = "normal", use.gpu = FALSE,
#'                control = list(keep.data = TRUE))
#' plot(fits[[1]])
#' plot(fits[[1]], xlab = "score", col = "lightblue", main = "Dataset 1")
#' plot(fits[[1]], which = "pp")
#' plot(fits[[1]], which = "qq")
#' plot(fits)
#' # positive data on a log axis
#' rt <- c(rgamma(300, 4, 10), rgamma(200, 9, 6))
#' fit <- bulkem(list(rt = rt), num.components = 1:3, random.inits = 5,
#'               use.gpu = FALSE)$rt
#' plot(fit, data = rt, log = "x", xlab = "RT (s)")
#' @export
plot.bulkem_fit <- function(x, data = x$data, breaks = "FD", main = NULL,
                            which = c("density", "pp", "qq"), ...) {
  if (!isTRUE(x$fit_success)) stop_arg("this dataset has no fit (status \"", x$status, "\")")
  which <- match_choice(which, c("density", "pp", "qq"), "which")
  if (is.null(main)) main <- plot_title_fit(x, which)
  if (which != "density") return(invisible(plot_fit_check(x, data, which, main, ...)))
  xlab <- if (missing(data)) "value" else plot_data_label(substitute(data))
  if (!is.null(data)) {
    if (!is.numeric(data)) stop_arg("`data` must be a numeric vector")
    data <- as.double(data[is.finite(data)])
    if (length(data) == 0) data <- NULL
  }
  dots <- list(...)
  log <- if (is.null(dots$log)) "" else dots$log
  if (!is.character(log) || length(log) != 1 || !grepl("^[xy]*$", log)) {
    stop_arg("`log` must be \"\", \"x\", \"y\" or \"xy\"")
  }
  logx <- grepl("x", log)
  logy <- grepl("y", log)
  if (logx && !is.null(data) && any(data <= 0)) {
    stop_arg("`log = \"", log, "\"` needs positive data; these data have ",
             sum(data <= 0), " value(s) <= 0")
  }
  if (!is.null(dots$xlim) && (!is.numeric(dots$xlim) || length(dots$xlim) != 2 ||
                              any(!is.finite(dots$xlim)) || (logx && any(dots$xlim <= 0)))) {
    stop_arg("`xlim` must be two finite numbers", if (logx) ", positive with `log = \"x\"`")
  }
  shape <- x[[shape_name(x$family)]]
  # the grid: the user's xlim, else the data and 4 sd either side of each mean
  if (!is.null(dots$xlim)) {
    lo <- min(dots$xlim)
    hi <- max(dots$xlim)
  } else {
    r <- component_range(x$family, x$mu, shape, fit_third(x)) + fit_shift(x)
    lo <- r[1]
    hi <- r[2]
    if (!is.null(data)) {
      lo <- min(lo, data)
      hi <- max(hi, data)
    }
    if (positive_family(x$family)) lo <- max(lo, fit_shift(x) + 1e-9 * hi)
    if (logx) {
      lo <- if (!is.null(data)) max(lo, min(data) / 2) else if (lo <= 0) 1e-3 * hi else lo
    }
  }
  grid <- if (logx) exp(seq(log(lo), log(hi), length.out = 512)) else seq(lo, hi, length.out = 512)
  # (a shifted fit's components are of the values less its shift)
  comp <- matrix(core_value(weighted_densities_(grid - fit_shift(x), x$family, x$alpha, x$mu, shape, fit_third(x))),
                 nrow = length(grid))
  # a noise component: its level over its support, drawn like a component
  noise <- if (has_noise(x)) noise_density(x, grid - fit_shift(x))
  # truncated: every curve renormalised over the window, 0 outside it
  if (is_truncated(x)) {
    comp <- truncated_density(x, grid - fit_shift(x), comp)
    if (!is.null(noise)) noise <- truncated_density(x, grid - fit_shift(x), noise)
  }
  total <- rowSums(comp) + if (is.null(noise)) 0 else noise
  bars <- if (!is.null(data)) plot_histogram(data, breaks, logx)
  # censored values have no bar of their own: the observed values' bars
  # hold their share of the mixture, n of nobs
  if (!is.null(bars) && censored_count(x) > 0) bars$density <- bars$density * x$n / x$nobs
  top <- max(total, bars$density[bars$right > lo & bars$left < hi], na.rm = TRUE)
  defaults <- list(x = range(grid), type = "n", main = main, xlab = xlab,
                   ylab = if (logx) "Density (per unit of value)" else "Density",
                   xlim = range(grid), ylim = c(if (logy) top * 1e-4 else 0, top))
  bar_args <- c("col", "border", "density", "angle", "lty")
  args <- plot_args(defaults, dots[setdiff(names(dots), bar_args)])
  if (logy && (!is.numeric(args$ylim) || any(args$ylim <= 0))) {
    stop_arg("`ylim` must be positive with `log = \"", log, "\"`")
  }
  args <- c(args[1], list(y = args$ylim), args[-1])
  do.call(graphics::plot, args)
  floor_y <- if (logy) 10^graphics::par("usr")[3] else 0
  if (!is.null(bars)) {
    bar <- plot_args(list(col = "grey90", border = "grey60"), dots[intersect(names(dots), bar_args)])
    do.call(graphics::rect, c(list(bars$left, floor_y, bars$right, pmax(bars$density, floor_y)), bar))
  }
  if (logy) {
    # below the axis: left out (a clamped line would run along the axis)
    comp[comp < floor_y] <- NA
    total[total < floor_y] <- NA
    if (!is.null(noise)) noise[noise < floor_y] <- NA
  }
  cols <- grDevices::hcl.colors(max(3, ncol(comp)), "Dark 3")
  for (m in seq_len(ncol(comp))) graphics::lines(grid, comp[, m], col = cols[m], lty = 2, lwd = 1.5)
  if (!is.null(noise)) graphics::lines(grid, noise, col = "grey40", lty = 3, lwd = 1.5)
  graphics::lines(grid, total, lwd = 2, col = if (is.null(bars) && !is.null(dots$col)) dots$col[1] else "black")
  invisible(x)
}

#' @rdname plot.bulkem_fit
#' @export
plot.bulkem <- function(x, main = NULL, legend = TRUE, which = NULL, ...) {
  if (length(x) == 0) stop_arg("`x` holds no datasets (a result of length 0): nothing to plot")
  if (!is.null(which)) {
    # a one-fit plot: of the one dataset there is, else the caller picks one
    which <- match_choice(which, c("density", "pp", "qq"), "which")
    if (length(x) == 1) {
      plot.bulkem_fit(unclass(x)[[1]], main = main, which = which, ...)
      return(invisible(x))
    }
    name <- deparse1(substitute(x))
    if (nchar(name) > 30 || !grepl("^[A-Za-z.][A-Za-z0-9._$]*$", name)) name <- "x"
    stop_arg("`which = \"", which, "\"` draws one fit, and `", name, "` holds ", length(x),
             " datasets: plot one of them, e.g. plot(", name, "[[1]], which = \"", which,
             "\"), or leave `which` out for the plot of all fits")
  }
  if (!is.logical(legend) || length(legend) != 1 || is.na(legend)) stop_arg("`legend` must be TRUE or FALSE")
  tab <- as.data.frame.bulkem(x)
  nk <- vapply(x, function(f) NROW(f$mu), 0L)
  status <- rep(vapply(x, `[[`, "", "status"), nk)
  kfit <- rep(nk, nk)
  kmax <- max(tab$component)
  # a positive mean (inverse Gaussian, gamma): both axes on the log scale
  ig <- attr(x, "family") %in% c("invgauss", "gamma")
  shape <- names(tab)[5]
  dots <- list(...)
  log <- if (is.null(dots$log)) (if (ig) "xy" else "y") else dots$log
  if (!is.character(log) || length(log) != 1 || !grepl("^[xy]*$", log)) {
    stop_arg("`log` must be \"\", \"x\", \"y\" or \"xy\"")
  }
  ok <- is.finite(tab$mu) & is.finite(tab[[5]]) & tab[[5]] > 0 & (!ig | tab$mu > 0)
  if (!any(ok)) stop_arg("none of these datasets has a fit to plot")
  if (grepl("x", log) && any(tab$mu[ok] <= 0)) {
    stop_arg("`log = \"", log, "\"` needs positive means; ", sum(tab$mu[ok] <= 0),
             " fitted component(s) have mu <= 0")
  }
  if (is.null(main)) main <- plot_title_many(x)
  ks <- sort(unique(kfit[ok]))
  by_k <- length(ks) > 1
  # one symbol per K (filled: converged; open: stopped at max.iters)
  filled <- c(16, 17, 15, 18, 8, 3, 4, 6)
  open <- c(1, 2, 0, 5, 8, 3, 4, 6)
  kpch <- if (by_k) pmin(kfit, length(filled)) else rep(1L, length(kfit))
  pch <- ifelse(status == "max_iters", open[kpch], filled[kpch])
  cols <- grDevices::hcl.colors(max(3, kmax), "Dark 3")
  defaults <- list(x = tab$mu[ok], y = tab[[5]][ok], log = log, col = cols[tab$component[ok]],
                   pch = pch[ok], xlab = if (identical(attr(x, "family"), "lognormal")) "mu (meanlog)" else "mu (mean)",
                   ylab = switch(attr(x, "family"), invgauss = "lambda (shape)", gamma = "shape",
                                 lognormal = "sigma (sdlog)", "sigma (standard deviation)"), main = main)
  args <- plot_args(defaults, dots)
  if (legend) {
    entries <- list(label = character(), col = character(), pch = numeric(), lty = numeric())
    add <- function(label, col, pch, lty = NA) {
      entries$label <<- c(entries$label, label)
      entries$col <<- c(entries$col, rep(col, length.out = length(label)))
      entries$pch <<- c(entries$pch, rep(pch, length.out = length(label)))
      entries$lty <<- c(entries$lty, rep(lty, length.out = length(label)))
    }
    # component colours as a bar of colour when the symbols stand for K
    if (is.null(dots$col)) {
      add(paste("component", seq_len(kmax)), cols[seq_len(kmax)],
          if (by_k && is.null(dots$pch)) NA else 15, if (by_k && is.null(dots$pch)) 1 else NA)
    }
    if (is.null(dots$pch)) {
      if (by_k) add(paste("K =", ks), "black", filled[pmin(ks, length(filled))])
      if (any(status[ok] == "max_iters")) add(if (by_k) "open: stopped at max.iters" else "stopped at max.iters", "black", 1)
    }
    if (length(entries$label) > 0) {
      # widen the right margin to hold the legend, and restore it on exit
      op <- graphics::par(no.readonly = TRUE)["mar"]
      on.exit(graphics::par(op), add = TRUE)
      cex <- 0.8
      # text, and room for the symbol (a longer one for a bar of colour)
      width <- max(graphics::strwidth(entries$label, units = "inches", cex = cex)) +
        if (any(!is.na(entries$lty))) 0.95 else 0.6
      mar <- graphics::par("mar")
      mar[4] <- max(mar[4], width / graphics::par("csi") + 0.5)
      graphics::par(mar = mar)
    }
  }
  do.call(graphics::plot, args)
  if (legend && length(entries$label) > 0) {
    graphics::legend("topleft", inset = c(1.02, 0), xpd = NA, bty = "n", cex = 0.8,
                     legend = entries$label, col = entries$col, pch = entries$pch,
                     lty = entries$lty, lwd = ifelse(is.na(entries$lty), 1, 4))
  }
  invisible(x)
}

# `defaults` with the caller's arguments put over them: a name the caller
# gives replaces the default, so nothing is matched twice.
plot_args <- function(defaults, dots) {
  named <- if (length(dots)) nzchar(names2(dots)) else logical()
  if (any(!named)) stop_arg("arguments in `...` must be named (e.g. xlab = \"RT (s)\")")
  defaults[names(dots)] <- NULL
  c(defaults, dots)
}

names2 <- function(x) {
  nm <- names(x)
  if (is.null(nm)) rep("", length(x)) else nm
}

# The default x axis label for data given in the call: its expression, as
# hist() does, if short, else "value".
plot_data_label <- function(expr) {
  label <- deparse1(expr)
  if (is.null(expr) || nchar(label) > 40) "value" else label
}

# Histogram bars on the density scale; with a log x axis, bins equal in
# log(value) (or the caller's numeric breaks) and densities per unit of
# value, so the bars stay comparable with the fitted density.
plot_histogram <- function(data, breaks, logx) {
  # R's "FD" rule fails on a single value (stats::nclass.FD)
  if (length(data) < 2 && is.character(breaks)) breaks <- "Sturges"
  bin <- function(v) {
    tryCatch(graphics::hist(v, breaks = breaks, plot = FALSE), error = function(e) {
      stop_arg("`breaks` cannot bin the data (", conditionMessage(e), "): give a number of bins, ",
               "a rule (\"FD\", \"Sturges\", \"Scott\") or break points spanning the data")
    })
  }
  if (logx && !(is.numeric(breaks) && length(breaks) > 1)) {
    h <- bin(log(data))
    b <- exp(h$breaks)
  } else {
    h <- bin(data)
    b <- h$breaks
  }
  list(left = b[-length(b)], right = b[-1], density = h$counts / (sum(h$counts) * diff(b)))
}

# "1 fit", "2 fits".
plural <- function(n, word) sprintf("%d %s%s", n, word, if (n == 1) "" else "s")

# The title of a one-fit plot: the family, K (and how it was chosen), n.
plot_title_fit <- function(x, which = "density") {
  k <- NROW(x$mu)
  chosen <- if (!is.null(x$by_k) && NROW(x$by_k) > 1) " chosen by BIC" else ""
  title <- sprintf("%s mixture, K = %d%s%s, n = %d", x$family, k, if (has_noise(x)) " + noise" else "",
                   chosen, x$n)
  if (which == "density") title else sprintf("%s plot: %s", toupper(which), title)
}

# The title of a many-fits plot: how many fits, how many datasets have
# none, and K (a range when it was chosen per dataset).
plot_title_many <- function(x) {
  ok <- vapply(x, function(f) isTRUE(f$fit_success), NA)
  k <- vapply(x[ok], function(f) NROW(f$mu), 0L)
  chosen <- any(vapply(x[ok], function(f) !is.null(f$by_k) && NROW(f$by_k) > 1, NA))
  ktext <- if (length(k) == 0) {
    ""
  } else if (min(k) == max(k)) {
    sprintf(", K = %d%s", k[1], if (chosen) " chosen by BIC" else "")
  } else {
    sprintf(", K = %d to %d%s", min(k), max(k), if (chosen) " chosen by BIC" else "")
  }
  family <- attr(x, "family")
  fits <- if (is.null(family)) plural(sum(ok), "fit") else plural(sum(ok), paste(family, "fit"))
  sprintf("%s%s%s", fits, ktext,
          if (any(!ok)) sprintf(" (%s without a fit)", plural(sum(!ok), "dataset")) else "")
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
  args <- plot_args(c(list(x = xy[[1]], y = xy[[2]]), args, list(main = main, pch = 20)), list(...))
  log <- if (is.null(args$log)) "" else args$log
  if (!is.character(log) || length(log) != 1 || !grepl("^[xy]*$", log)) {
    stop_arg("`log` must be \"\", \"x\", \"y\" or \"xy\"")
  }
  for (axis in 1:2) {
    if (grepl(c("x", "y")[axis], log) && any(xy[[axis]] <= 0, na.rm = TRUE)) {
      stop_arg("`log = \"", log, "\"` needs positive values on the ", c("x", "y")[axis],
               " axis; the ", c(args$xlab, args$ylab)[axis], " has ", sum(xy[[axis]] <= 0, na.rm = TRUE),
               " value(s) <= 0")
    }
  }
  do.call(graphics::plot, args)
  graphics::abline(0, 1, col = "grey40", lty = 2)
  x
}
