# The parametric bootstrap (issue 13): B replicates per dataset drawn from
# its fit and refitted, all datasets' replicates as one bulk job in the Rust
# core (bootstrap_(), src/rust/core/src/bootstrap.rs); standard errors and
# percentile intervals with components matched to the estimate's, or the
# likelihood-ratio test of K vs K + 1 components.

#' Parametric bootstrap: standard errors, intervals and the test for K
#'
#' For every dataset with a fit, simulates `B` replicate datasets of the same
#' size from the fitted mixture and refits each, all replicates of all
#' datasets as one bulk job on the engine [bulkem()] would choose (GPU or
#' CPU cores; or the workers of a `future` plan with `control$future`).
#'
#' * `test = "none"` (default): each replicate is refitted with the same
#'   family and number of components; the result holds, per dataset and
#'   parameter, the bootstrap standard error and percentile confidence
#'   interval, in the shape of [tidy()][bulkem-tidy].
#' * `test = "lrt"`: the bootstrap likelihood-ratio test of K against K + 1
#'   components (McLachlan 1987). The statistic is
#'   \eqn{2(\ell_{K+1} - \ell_K)}{2 (loglik(K + 1) - loglik(K))}; its null
#'   distribution comes from `B` replicates drawn from the K-component fit,
#'   each fitted with K and with K + 1 components. K is each dataset's
#'   fitted K, or, with `max.components`, the sequential procedure of
#'   mclust's `mclustBootstrapLRT()`: K = 1, 2, ... is tested against K + 1
#'   until a test does not reject at `level` (or K = `max.components`); the
#'   fits with K = 1, ..., `max.components` components are made here with
#'   [bulkem()].
#'
#' **Refits.** Every refit, of a replicate and, for the test, of the
#' dataset itself (so that the observed statistic is computed exactly as its
#' null replicates'), runs `random.inits` starts: start 1 is the fitted
#' K-component mixture (for K components) or that mixture with its heaviest
#' component split in two (for K + 1), the others are random, as the peers'
#' best practice (mclust starts from the fit, mixtools from random values).
#'
#' **Reproducibility.** Replicate b of a dataset is drawn in the compiled
#' core from a generator that is a pure function of `seed`, the dataset's
#' values, its null K and b; its refits' random starts depend only on `seed`
#' and the replicate's values. So results do not depend on the engine
#' (beyond the engines' agreement, about 1e-8), the threads, the other
#' datasets of the call, the order of the datasets, or sharding over future
#' workers, and replicate b is the same whatever `B`. R's random number
#' generator is used only to draw `seed` when it is `NULL`.
#'
#' **Replicates used.** For the standard errors, a replicate counts
#' (`B_used`) when its refit converged and is not marked spurious; for the
#' test, when both refits have a fit that is not spurious (a K + 1 fit that
#' stopped at `max.iters` still counts: overfitted components creep). The
#' others are counted per dataset as `failed` and `spurious`.
#'
#' **Label switching.** The components of a replicate fit are matched to the
#' point estimate's: for K <= 6, the permutation minimising
#' \eqn{\sum_m ((\mu^*_{\pi(m)} - \hat\mu_m) / \hat s_m)^2}{sum(((mu*[p[m]] - mu[m]) / s[m])^2)},
#' where \eqn{\hat s_m}{s[m]} is the standard deviation of the point
#' estimate's component m (`sigma`, or `sqrt(mu^3 / lambda)` for the inverse
#' Gaussian); for larger K, by ascending `mu` (the order fits come in).
#'
#' **p-values** are \eqn{(1 + \#\{T^*_b \ge T\}) / (1 + B_{used})}{(1 + #(T*[b] >= T)) / (1 + B_used)}
#' (Davison & Hinkley 1997), never 0; mclust reports the plain share
#' \eqn{\#\{T^*_b \ge T\} / B}{#(T*[b] >= T) / B}, which differs by less
#' than 1 / B.
#'
#' **Noise fits** (`bulkem(noise = TRUE)`): the replicates are drawn from
#' the fitted mixture with its noise component (a uniform over the fit's
#' `noise_support`), and every refit has a noise component too, as the fit
#' had: over the `noise.support` the fit was given, or, where the fit's
#' support is its data's range (the default), over each replicate's own
#' range, as a fit of that replicate would have it (a support given equal
#' to the data's range counts as the range). The noise weight gets its
#' standard error and interval as component 0's `alpha` (as in `tidy()`);
#' it needs no matching. Over each replicate's own range, a replicate whose
#' few noise draws fell near the bulk has a narrow range and may give the
#' noise a large weight: the noise weight's bootstrap standard error can
#' then be well above the observed information's (the percentile interval
#' less so); a given `noise.support` does not vary so. The test is of K vs
#' K + 1 components each with a noise component; with `max.components` the
#' K-component fits are made with `noise = TRUE` and the fits' given
#' supports. The refits run on any engine, as `bulkem(noise = TRUE)`;
#' the fits must all have a noise component or none (bootstrap the parts of
#' a [c()][c.bulkem] of both kinds separately).
#'
#' **Censored values** (a `Surv` response, fitted with
#' `control = list(keep.data = TRUE)`, which keeps their windows): each
#' replicate draws as many values as the data had, observed and censored,
#' and censors each draw falling in one of the data's censored windows to
#' it, as a fixed scheme (a deadline, a detection limit) would have.
#' Values censored at points of their own on one side (random censoring: a
#' deadline that varies from trial to trial, detection limits that vary
#' from sample to sample) are redrawn with the censoring distribution the
#' data show: each draw gets a censoring point drawn from the reverse
#' Kaplan-Meier estimate (the censored values as the events, the exact
#' ones as censored; \pkg{survival}'s `survfit()`), never censored with
#' the estimate's mass beyond the last point, and is censored at it when it
#' falls beyond it. Windows on both sides that overlap or hold observed
#' values are refused (an error says so). Weighted censored data are drawn
#' as the rows they stand for (see Weighted fits).
#' **Histograms** (binned data, fitted with `keep.data = TRUE`): each
#' replicate draws as many values as the histogram counted and bins them
#' by its breaks (a gap between bins that held values, bins of count 0,
#' one bin of its own), and draws below the first break or above the last
#' in an open bin there (the data's histogram held 0 in each, which its
#' likelihood counts as such). The refits run through
#' [bulkem()] on the replicates as censored data or histograms (on the
#' `cpu` or `cuda-streams` engine), with the replicates drawn as for
#' shifted fits below.
#'
#' **Shifted fits** (`bulkem(shift = TRUE)`): each replicate is drawn from
#' the shifted mixture (truncated to the fit's window where it was) and
#' refitted with its own shift, estimated as [bulkem()] estimates it (the
#' profile likelihood's search, without its interval and standard errors);
#' the shift gets its standard error and percentile interval in a last row
#' per dataset (`term` `"shift"`, `component` `NA`, as in `tidy()`), and the
#' test is of K vs K + 1 shifted components. The replicates are drawn with
#' R's random number generator (set from `seed` and the dataset's position,
#' and put back after), not the core's, and the refits run through
#' [bulkem()]'s search on all the replicates at once: about 40 bulk calls
#' per K fitted, so a shifted bootstrap takes far longer than an unshifted
#' one. The fits must all be shifted or none.
#'
#' **Weighted fits** (`bulkem(weights =)` of whole numbers, fitted with
#' `keep.data = TRUE`, which keeps the weights beside the data): each value
#' (or row) stands for as many as its weight says, so the replicates have
#' the sum of the weights values and are refitted without weights, as
#' fits of the expanded data are. Weights that are not whole numbers are
#' refused.
#'
#' **Multivariate fits** (a list of matrices, [bulkem-multivariate]): the
#' replicates are drawn as [simulate()][simulate.bulkem_mvfit] draws (R's
#' random number generator, set from `seed` and the dataset's position and
#' put back after; a noise component over the fit's box) and refitted by
#' [bulkem()] with the fits' family, covariance structure, noise and `df`,
#' on the engine it chooses (the CPU or `cuda-batched`), every replicate of
#' one K in one call (in chunks of about 2e7 values). Each refit runs the
#' fit (or, for K + 1, the fit with its heaviest component split in two
#' along its major axis, the pair's mean and covariance the component's)
#' and `random.inits - 1` random starts (at least one). A replicate's
#' components are matched to the estimate's by the permutation minimising
#' the sum of the Mahalanobis distances of the matched means under the
#' estimate's covariances (for K > 6, greedily in the estimate's order).
#' The rows are those of [tidy()][tidy.bulkem_mv] (`variable`, `variable2`
#' name a mean's or a covariance entry's variables; a noise weight is term
#' `"noise"`), with the bootstrap's columns; a t's fixed `df` get none.
#' Weighted multivariate fits are drawn as any weighted fit (above).
#'
#' Datasets without a fit (status `"failed"` or `"invalid"`) get rows with
#' `NA` values and `B_used = 0`; nothing is simulated for them.
#'
#' @param fits A `bulkem` result. A truncated fit's replicates are drawn
#'   from its truncated mixture and refitted truncated to its window (on the
#'   `cpu` or `cuda-streams` engine). Fits of censored values and shifted
#'   fits (`shift = TRUE`): see Censored and shifted fits.
#' @param B Number of bootstrap replicates per dataset (a whole number >= 2).
#' @param test `"none"` (standard errors and intervals) or `"lrt"` (the test
#'   of K vs K + 1 components).
#' @param max.components With `test = "lrt"`: `NULL` (default) tests each
#'   dataset's fitted K against K + 1; a whole number M runs the sequential
#'   procedure K = 1, ..., M (one row per dataset and K tested).
#' @param level The level at which the sequential procedure stops (and
#'   `selected` is chosen).
#' @param data The datasets the fits were made on, a list with one numeric
#'   vector (for multivariate fits, a matrix) per dataset in the order of
#'   `fits` (missing values, or rows with one, are dropped, as the fit's
#'   default `na.action` did); default: the data kept in the
#'   fits by `bulkem(..., control = list(keep.data = TRUE))` (an error if
#'   there is none).
#' @param seed A whole number from 0 to `.Machine$integer.max` fixing the
#'   replicates and their refits; `NULL` (default) draws one from R's random
#'   number generator, so [set.seed()] before the call makes it
#'   reproducible. Recorded in the attribute `seed`.
#' @param conf.level Confidence level of the percentile intervals.
#' @param random.inits Starts per refit (the first from the fit, see
#'   Refits), as [bulkem()]'s default; with `max.components`, also the
#'   starts of the K-component fits made here.
#' @param max.iters,use.gpu,verbose As in [bulkem()], for the refits.
#' @param epsilon As in [bulkem()], for the refits, with a default ten times
#'   looser than [bulkem()]'s 1e-6: a refit needs its log-likelihood far
#'   more closely than the test's Monte-Carlo error, not to the last digit.
#'   Measured on 1,000 datasets (`inst/bench/results-bootstrap.md`): with
#'   1e-5 the p-values differ from those with 1e-6 by a quarter of what a
#'   second seed changes (mean 0.013 against 0.044 at B = 199), size and
#'   power of the test are unchanged, and the bootstrap takes a third less
#'   time (the refits of K + 1 components to data of K creep).
#' @param control As in [bulkem()], for the refits (`keep.data` and
#'   `keep.starts` are ignored). `accelerate` (SQUAREM, the default) matters
#'   most here: the refits of K + 1 components to data simulated with K creep
#'   under plain EM (the extra component is barely identified), and SQUAREM
#'   reaches the same maxima with about a fifth of the E-step passes
#'   (`inst/bench/results-bootstrap.md`). The refits start from the fit
#'   (start 1) and draw their other starts as the calibration of that
#'   file did: `starts = "mixed"`, `short.runs = 0`, unless `control` names
#'   them (bulkem()'s own default search, with short runs, is wider and
#'   costs more passes). `control$future = TRUE` shards the
#'   datasets over the workers of the current `future::plan()`, with the same
#'   result.
#' @returns Without a test, a data frame of class
#'   `c("bulkem_bootstrap", "data.frame")` with one row per dataset,
#'   component and parameter, as `tidy()`: `dataset`, `component`, `term`
#'   (`"alpha"`, `"mu"`, and `"lambda"`, `"sigma"` or `"shape"`, and for
#'   Student's t `"df"` (the ex-Gaussian's `"tau"`), without a standard error where `df` was fixed; a
#'   noise component's weight is component 0's `"alpha"`), `estimate` (the original
#'   fit's), `std.error` (standard deviation of the matched bootstrap
#'   estimates), `conf.low` and `conf.high` (percentile interval), `B` and
#'   `B_used`; attributes `replicates` (one row per dataset: `dataset`, `B`,
#'   `used`, `failed`, `spurious`), `seed`, `conf.level`, `random.inits`,
#'   `engine`, `costs` (the compiled core's seconds by phase: simulate,
#'   prepare, engine, finish, result; `kernel` seconds on a GPU;
#'   `em_iterations`) and `elapsed` (seconds).
#'
#'   With `test = "lrt"`, a data frame of class `c("bulkem_lrt",
#'   "data.frame")` with one row per dataset and K tested: `dataset`, `k`,
#'   `loglik` and `loglik_alt` (the dataset's log-likelihoods with K and
#'   K + 1 components), `lrt` (the statistic), `p_value`, `B`, `B_used`,
#'   `failed`, `spurious`, and `null`, a list column with each row's B
#'   replicate statistics (replicate b at position b, `NA` where it was not
#'   used); attributes `selected` (with
#'   `max.components`: one row per dataset, `dataset` and `k`, the first K
#'   not rejected at `level`, or `max.components + 1` if every test
#'   rejected), `level`, `seed`, `random.inits`, `engine`, `costs`,
#'   `elapsed`.
#' @references McLachlan, G. J. (1987). On bootstrapping the likelihood
#'   ratio test statistic for the number of components in a normal mixture.
#'   Applied Statistics 36, 318-324.
#'
#'   Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their
#'   Application. Cambridge University Press.
#' @seealso [tidy()][bulkem-tidy] and [confint.bulkem_fit()] for the
#'   observed-information standard errors and Wald intervals;
#'   [plot.bulkem_lrt()].
#' @examples
#' set.seed(2)
#' d <- list(a = c(rnorm(150), rnorm(100, 5)), b = rnorm(80, 2))
#' fits <- bulkem(d, family = "normal", random.inits = 5, use.gpu = FALSE,
#'                control = list(keep.data = TRUE, threads = 1))
#' bs <- bulkem_bootstrap(fits, B = 50, seed = 1, random.inits = 5, use.gpu = FALSE,
#'                        control = list(threads = 1))
#' bs
#' # how many components? K = 1 vs 2, then 2 vs 3 where 1 was rejected
#' lrt <- bulkem_bootstrap(fits, B = 39, test = "lrt", max.components = 2,
#'                         seed = 1, random.inits = 5, max.iters = 1000,
#'                         use.gpu = FALSE, control = list(threads = 1))
#' lrt
#' attr(lrt, "selected")
#' @export
bulkem_bootstrap <- function(fits, B = 200, test = c("none", "lrt"), max.components = NULL,
                             level = 0.05, data = NULL, seed = NULL, conf.level = 0.95,
                             random.inits = 20, max.iters = 5000, epsilon = 1e-5,
                             use.gpu = NA, verbose = FALSE, control = list()) {
  started <- proc.time()[["elapsed"]]
  if (!inherits(fits, "bulkem")) stop_arg("`fits` must be a bulkem result")
  multivariate <- inherits(fits, "bulkem_mv")
  # a truncated fit's replicates are drawn from its mixture, those outside
  # its window dropped: a window holding little of the mixture would take
  # too many draws
  thin <- vapply(unclass(fits), function(f) is_truncated(f) && has_fit(f) && !(window_mass(f) >= 0.01), NA)
  if (any(thin)) {
    stop_arg("`fits` has truncated fits whose window holds under 1% of their mixture (first: dataset ",
             which(thin)[1], "): their replicates cannot be drawn by keeping the mixture's draws inside it")
  }
  shifted <- !multivariate && bootstrap_shift(unclass(fits))
  censored <- !multivariate && bootstrap_censoring(unclass(fits))
  B <- as.integer(check_whole(B, "B", 2, .Machine$integer.max))
  test <- check_choice(test, "test", c("none", "lrt"))
  check_unit(conf.level, "conf.level")
  check_unit(level, "level")
  if (test == "lrt" && 1 / (B + 1) > level) {
    stop_arg("with B = ", B, " the smallest p-value, 1 / (B + 1), is above `level` = ", level,
             ": no test could reject; use B >= ", ceiling(1 / level))
  }
  if (!is.null(max.components)) {
    if (test != "lrt") stop_arg("`max.components` goes with `test = \"lrt\"`")
    max.components <- as.integer(check_whole(max.components, "max.components", 1, max_components() - 1))
  }
  max.iters <- as.integer(check_whole(max.iters, "max.iters", 1, .Machine$integer.max))
  check_positive(epsilon, "epsilon")
  random.inits <- as.integer(check_whole(random.inits, "random.inits", 1, .Machine$integer.max))
  check_flag(use.gpu, "use.gpu", na_ok = TRUE)
  check_flag(verbose, "verbose")
  seed <- if (is.null(seed)) {
    sample.int(.Machine$integer.max, 1L)
  } else {
    check_whole(seed, "seed", 0, .Machine$integer.max)
  }
  # the refits keep no data and no starts, whatever `control` says
  control <- check_control(control)
  control$keep.data <- FALSE
  control$keep.starts <- FALSE
  items <- unclass(fits)
  if (multivariate) {
    # (R/bootstrap-multivariate.R)
    data <- bootstrap_data_mv(items, data, isTRUE(attr(fits, "weighted")), fits_variables(fits))
    settings <- bootstrap_settings_mv(fits, items, data, control, max.iters, epsilon, random.inits, seed,
                                      use.gpu)
  } else {
    # the refits start from the fit (start 1): their other starts are drawn
    # as before bulkem()'s default search had short runs (the calibration of
    # results-bootstrap.md), unless the call says otherwise
    if (!"short.runs" %in% attr(control, "given")) control$short.runs <- 0L
    if (!"starts" %in% attr(control, "given")) control$starts <- "mixed"
    given <- given_control(control, drop = c("keep.data", "keep.starts"))
    if (test == "lrt" && any(vapply(items, function(f) !is.null(f$fixed), NA))) {
      stop_arg("`fits` hold values fixed by bulkem(fixed =), which no fit of K + 1 components has: ",
               "test = \"lrt\" does not apply (test = \"none\" refits them with their values held)")
    }
    data <- bootstrap_data(items, data, isTRUE(attr(fits, "weighted")))
    family <- attr(fits, "family")
    if (is.null(family)) family <- items[[1]]$family
    noise <- bootstrap_noise(items)
    settings <- list(family = family, max.iters = max.iters, epsilon = epsilon,
                     random.inits = random.inits, seed = as.double(seed), use.gpu = use.gpu,
                     control = control, given_control = given, noise = noise,
                     noise.support = if (noise) Map(given_support, items, data),
                     df = bootstrap_df(items),
                     # each fit's window (NULL where not truncated)
                     truncation = lapply(items, function(f) if (is_truncated(f)) as.double(f$truncation)),
                     # fits of one shape shared (bulkem(equal.scale = TRUE)) are
                     # refitted so, under the null and the alternative alike
                     equal.scale = any(vapply(items, function(f) isTRUE(f$equal_scale), NA)),
                     # shifted fits are refitted shifted, and censored
                     # values drawn censored (R/bootstrap-in-r.R)
                     shift = shifted, censored = censored)
  }
  if (verbose) {
    message(sprintf("bulkem_bootstrap: %d %sdatasets, B = %d, %s, %d start(s) per refit",
                    length(items), if (multivariate) "multivariate " else "", B,
                    if (test == "lrt") "likelihood-ratio test" else "standard errors", random.inits))
  }
  out <- if (test == "none") {
    se <- if (multivariate) bootstrap_se_mv else bootstrap_se
    se(items, data, B, conf.level, settings, dataset_names(fits))
  } else {
    bootstrap_lrt(items, data, B, max.components, level, settings, dataset_names(fits))
  }
  attr(out, "seed") <- settings$seed
  attr(out, "random.inits") <- random.inits
  attr(out, "elapsed") <- proc.time()[["elapsed"]] - started
  if (verbose) message(sprintf("bulkem_bootstrap: done in %.3f s", attr(out, "elapsed")))
  out
}


# The datasets as fitted: kept in the fits, or given (missing values
# dropped, as na.omit did), checked against the fits' sizes. Fits with
# frequency weights (`weighted`) are bootstrapped as the data they stand
# for, each kept value repeated as often as its weight says: replicates of
# the sum of the weights, refitted without weights.
bootstrap_data <- function(items, data, weighted = FALSE) {
  nd <- length(items)
  if (weighted) return(bootstrap_weighted_data(items, data))
  if (is.null(data)) {
    kept <- vapply(items, function(f) !is.null(f$data), NA, USE.NAMES = FALSE)
    if (!all(kept)) {
      stop_arg("the fits hold no data: fit with control = list(keep.data = TRUE), or pass `data` ",
               "(a list with one numeric vector per dataset)")
    }
    data <- lapply(items, `[[`, "data")
  }
  if (!is.list(data) || is.data.frame(data) || length(data) != nd ||
      !all(vapply(data, function(x) is.numeric(x) && !is.object(x), NA))) {
    stop_arg("`data` must be a list with one numeric vector per dataset (", nd, ")")
  }
  data <- lapply(data, function(x) as.double(x[!is.na(x)]))
  n <- lengths(data)
  bad <- which(vapply(items, has_fit, NA) & n != vapply(items, function(f) as.integer(f$n), 0L))
  if (length(bad) > 0) {
    stop_arg("`data` does not match the fits: dataset ", bad[1], " has ", n[bad[1]],
             " non-missing values, its fit ", items[[bad[1]]]$n)
  }
  unname(data)
}

# The data that frequency-weighted fits stand for, from the data and
# weights they kept (`data` given is refused: it has no weights): each
# value, or each row of a multivariate dataset, repeated as often as its
# weight says.
bootstrap_weighted_data <- function(items, data) {
  if (!is.null(data) || !all(vapply(items, function(f) !is.null(f$data), NA, USE.NAMES = FALSE))) {
    stop_arg("`fits` were fitted with `weights`: bulkem_bootstrap() takes them with the data and ",
             "weights the fits kept (fit with control = list(keep.data = TRUE)), not `data`")
  }
  unname(lapply(items, function(f) {
    w <- f$weights
    x <- if (is.matrix(f$data)) unname(f$data) else as.double(f$data)
    if (is.null(w)) return(x)
    if (any(w != round(w))) {
      stop_arg("`fits` were fitted with weights that are not whole numbers: bulkem_bootstrap() ",
               "draws replicates of frequency-weighted data only")
    }
    if (is.matrix(x)) x[rep(seq_len(nrow(x)), w), , drop = FALSE] else rep(x, w)
  }))
}

# Whether the fits are bootstrapped with a noise component: all fits or
# none (the core's call has one noise setting; c() can mix them).
bootstrap_noise <- function(items) {
  fitted <- vapply(items, has_fit, NA, USE.NAMES = FALSE)
  noisy <- vapply(items, has_noise, NA, USE.NAMES = FALSE)
  if (any(noisy) && any(fitted & !noisy)) {
    stop_arg("`fits` mix fits with a noise component (noise = TRUE) and fits without one: ",
             "bootstrap them separately")
  }
  any(noisy)
}

# Whether the fits are bootstrapped shifted (bulkem(shift = TRUE)): all
# fits or none, as for the noise.
bootstrap_shift <- function(items) {
  fitted <- vapply(items, has_fit, NA, USE.NAMES = FALSE)
  shifted <- vapply(items, function(f) !is.null(f$shift), NA, USE.NAMES = FALSE)
  if (any(shifted) && any(fitted & !shifted)) {
    stop_arg("`fits` mix shifted fits (shift = TRUE) and fits without a shift: bootstrap them separately")
  }
  any(shifted)
}

# Student's t fits: the degrees of freedom the refits fix, NULL where the
# fits estimated them. The refits of K + 1 components need one value for
# every component: fits whose df were fixed per component are refused.
bootstrap_df <- function(items) {
  fixed <- Filter(function(f) has_fit(f) && !is.null(f$df) && !estimates_nu(f), items)
  if (length(fixed) == 0) return(NULL)
  values <- unique(unlist(lapply(fixed, function(f) as.double(f$df))))
  if (length(values) != 1 || length(fixed) != sum(vapply(items, has_fit, NA))) {
    stop_arg("`fits` are t fits whose degrees of freedom were fixed to several values (or fixed in ",
             "some fits only): bulkem_bootstrap() refits them with one value for every component")
  }
  values
}

# A noise fit's support as the user gave it, or NULL where it is the range
# of the dataset's data (the default): the replicates' refits then take
# each replicate's own range, as a fit of that replicate would. A support
# given equal to the data's range is taken as the default.
given_support <- function(fit, data) {
  if (!has_noise(fit) || length(data) == 0) return(NULL)
  s <- as.double(fit$noise_support)
  if (identical(s, range(data))) NULL else s
}

# One bulk job: the replicates of every dataset whose `nulls` entry is a fit
# (NULL: none), refitted with K0 + e components for each e of `extra`; on
# the engine bulkem() would choose (GPU failure under use.gpu = NA: the
# CPU), or sharded over future workers. `report` is a progress reporter.
# Returns the refits, one list per e (bootstrap_() in src/rust/src).
bootstrap_run <- function(data, nulls, B, extra, s, report) {
  if (isTRUE(s$multivariate)) return(bootstrap_run_mv(data, nulls, B, extra, s, report))
  if (isTRUE(s$shift) || isTRUE(s$censored)) return(bootstrap_run_r(data, nulls, B, extra, s, report))
  if (isTRUE(s$control$future)) return(bootstrap_future(data, nulls, B, extra, s))
  noise <- isTRUE(s$noise)
  truncated <- any(vapply(nulls, function(p) length(p$truncation) == 2, NA))
  engine <- choose_engine(s$use.gpu, s$control$engine, streams_only = truncated)
  k <- vapply(nulls, function(p) if (is.null(p)) 0L else NROW(p$mu), 0L)
  flat <- function(name) as.double(unlist(lapply(nulls, `[[`, name)))
  plan <- list(null_k = k, null_alpha = flat("alpha"), null_mu = flat("mu"),
               null_shape = flat("shape"), null_df = flat("df"),
               null_noise = vapply(nulls, function(p) if (is.null(p)) 0 else p$noise, 0),
               replicates = as.integer(B), extra = as.integer(extra))
  # the nulls carry their supports, so that shards of them carry theirs
  supports <- if (noise) {
    unlist(lapply(nulls, function(p) if (is.null(p$support)) c(NA_real_, NA_real_) else p$support))
  }
  # and their values held fixed (bulkem(fixed =)), a row of 3K per null
  # (NA where free), none at all when no null has any
  fixed <- if (any(vapply(nulls, function(p) !is.null(p$fixed), NA))) {
    unlist(lapply(nulls, function(p) if (is.null(p$fixed)) rep(NA_real_, 3 * NROW(p$mu)) else p$fixed))
  }
  # and their windows, a pair per null (NA, NA where not truncated)
  windows <- if (truncated) {
    unlist(lapply(nulls, function(p) if (length(p$truncation) == 2) p$truncation else c(NA_real_, NA_real_)))
  }
  run <- function(engine) {
    bootstrap_(data, plan, core_settings(s$family, 1L, s$max.iters, s$random.inits, s$epsilon,
                                         s$seed, s$control, engine, noise, as.double(supports), s$df,
                                         equal.scale = isTRUE(s$equal.scale), fixed = as.double(fixed),
                                         truncation = as.double(windows)),
               report)
  }
  res <- run_with_fallback(run, engine, s$use.gpu)
  costs <- c(res$timings, kernel = res$kernel_seconds, em_iterations = res$em_iterations)
  lapply(res$refits, function(r) c(r, list(engine = res$engine, costs = costs)))
}

# bootstrap_run() over the workers of the user's future plan: contiguous
# shards of datasets, each run by bootstrap_run() on a worker; the refits
# are laid out dataset by dataset, so the shards' results concatenate.
bootstrap_future <- function(data, nulls, B, extra, s) {
  ranges <- shard_ranges(length(data), shard_count(s$control$shards, length(data)))
  shard_s <- s
  shard_s$control$future <- FALSE
  shard_s$control$shards <- NULL
  if (is.null(s$given_control$threads)) shard_s$control$threads <- 0L
  shards <- lapply(seq_len(nrow(ranges)), function(i) ranges$first[i]:ranges$last[i])
  out <- future.apply::future_lapply(shards, function(idx, data, nulls, B, extra, s) {
    if (s$control$threads == 0L) s$control$threads <- parallelly::availableCores()
    tryCatch(bootstrap_run(data[idx], nulls[idx], B, extra, s, NULL), error = function(e) e)
  }, data = data, nulls = nulls, B = B, extra = extra, s = shard_s,
  future.seed = NULL, future.chunk.size = 1, future.packages = "bulkem")
  failed <- which(vapply(out, inherits, NA, "condition"))
  if (length(failed) > 0) raise(shard_error(ranges[failed[1], ], nrow(ranges), out[[failed[1]]], length(failed)))
  lapply(seq_along(extra), function(j) {
    parts <- lapply(out, `[[`, j)
    r <- parts[[1]]
    for (f in c("loglik", "status", "spurious", "observed_loglik", "observed_status",
                "observed_spurious", "alpha", "mu", "shape", "df", "noise")) {
      r[[f]] <- unlist(lapply(parts, `[[`, f))
    }
    r$engine <- paste(unique(vapply(parts, `[[`, "", "engine")), collapse = ", ")
    r$costs <- add_costs(lapply(parts, `[[`, "costs"))
    r
  })
}

# Seconds by phase (and EM iterations) of several core calls, summed by name.
add_costs <- function(costs) {
  costs <- Filter(Negate(is.null), costs)
  if (length(costs) == 0) return(NULL)
  all <- unlist(unname(costs))
  tapply(all, factor(names(all), levels = unique(names(all))), sum)
}

# The null of each dataset: its fit's parameters, or NULL without a fit;
# `noise` its noise weight (0 without one) and `support` the noise support
# its replicates are drawn and refitted with (`supports`, given_support()'s
# per dataset; NULL: the data's range, each replicate's own).
bootstrap_nulls <- function(items, supports = NULL) {
  lapply(seq_along(items), function(d) {
    f <- items[[d]]
    if (!has_fit(f)) return(NULL)
    # a multivariate null is its fit, with the box its refits take
    if (inherits(f, "bulkem_mvfit")) return(c(unclass(f), list(support = supports[[d]])))
    list(alpha = f$alpha, mu = f$mu, shape = fit_shape(f), noise = if (has_noise(f)) f$noise else 0,
         support = if (has_noise(f)) supports[[d]], df = if (length(fit_third(f)) > 0) fit_third(f),
         noise_support = if (has_noise(f)) f$noise_support,
         fixed = f$fixed, truncation = if (is_truncated(f)) as.double(f$truncation), shift = f$shift,
         windows = if (!is.null(f$censored_windows)) merge_windows(f$censored_windows),
         binned = is_binned_fit(f))
  })
}

# The refits of `r` as matrices by dataset: for dataset d, B rows of
# K0 + e columns for each parameter, and the B noise weights in `noise`
# (NULL without a null).
refit_parameters <- function(r, k0, B) {
  k <- ifelse(k0 > 0, k0 + r$extra, 0L)
  ends <- cumsum(B * k)
  # one noise weight per refit of a dataset with a null
  ends_noise <- cumsum(B * (k0 > 0))
  lapply(seq_along(k0), function(d) {
    if (k0[d] == 0) return(NULL)
    idx <- (ends[d] - B * k[d]) + seq_len(B * k[d])
    m <- function(v) matrix(v[idx], nrow = B, ncol = k[d], byrow = TRUE)
    list(alpha = m(r$alpha), mu = m(r$mu), shape = m(r$shape),
         df = if (length(r$df) > 0) m(r$df),
         noise = r$noise[ends_noise[d] - B + seq_len(B)],
         shift = if (length(r$shift) > 0) r$shift[(d - 1) * B + seq_len(B)])
  })
}

# test = "none": standard errors and percentile intervals.
bootstrap_se <- function(items, data, B, conf.level, s, names_d) {
  nulls <- bootstrap_nulls(items, s$noise.support)
  reporter <- progress_reporter()
  r <- bootstrap_run(data, nulls, B, 0L, s, reporter$update)[[1]]
  reporter$finish()
  k0 <- vapply(nulls, function(p) if (is.null(p)) 0L else NROW(p$mu), 0L)
  params <- refit_parameters(r, k0, B)
  status <- r$status_levels[r$status]
  parts <- lapply(seq_along(items), function(d) {
    i <- (d - 1) * B + seq_len(B)
    bootstrap_summary(items[[d]], params[[d]], status[i], r$spurious[i], B, conf.level)
  })
  rows <- do.call(rbind, lapply(seq_along(parts), function(d) {
    p <- parts[[d]]$rows
    if (nrow(p) > 0) p$dataset <- d
    p
  }))
  rows <- rows[c("dataset", "component", "term", "estimate", "std.error", "conf.low",
                 "conf.high", "B", "B_used")]
  rows$dataset <- names_d[rows$dataset]
  rownames(rows) <- NULL
  counts <- do.call(rbind, lapply(parts, `[[`, "counts"))
  fitted <- k0 > 0
  replicates <- data.frame(dataset = names_d, B = ifelse(fitted, B, 0L), used = counts[, "used"],
                           failed = counts[, "failed"], spurious = counts[, "spurious"],
                           stringsAsFactors = FALSE)
  structure(rows, class = c("bulkem_bootstrap", "data.frame"), replicates = replicates,
            conf.level = conf.level, engine = r$engine, costs = c(r$costs))
}

# test = "lrt": the bootstrap likelihood-ratio test of K vs K + 1, for each
# dataset's own K or sequentially for K = 1, ..., max.components.
bootstrap_lrt <- function(items, data, B, max.components, level, s, names_d) {
  nd <- length(items)
  ks <- if (is.null(max.components)) NA_integer_ else seq_len(max.components)
  # one progress bar over every bulk job: job i of m reports its share
  base <- progress_reporter()
  phases <- length(ks) * (if (is.null(max.components)) 1 else 2)
  phase <- 0
  scaled <- function(done, total) base$update(phase + if (total > 0) done / total else 0, phases)
  rows <- list()
  nulls_lrt <- list()
  engine <- character()
  alive <- rep(TRUE, nd)
  selected <- rep(NA_integer_, nd)
  costs <- NULL
  for (k in ks) {
    if (is.na(k)) {
      fits_k <- items
    } else {
      # the K-component fits of the datasets still being tested
      fits_k <- vector("list", nd)
      idx <- which(alive)
      if (length(idx) == 0) break
      # (censored values as the Surv objects they came as, histograms as
      # histograms)
      given_k <- if (isTRUE(s$censored) && is_binned_fit(items[[idx[1]]])) {
        lapply(items[idx], function(f) windows_histogram(as.double(f$censored_windows)))
      } else if (isTRUE(s$censored)) {
        Map(as_surv, data[idx], lapply(items[idx], function(f) as.double(f$censored_windows)))
      } else {
        data[idx]
      }
      args <- list(given_k, num.components = k, max.iters = s$max.iters, random.inits = s$random.inits,
                   use.gpu = s$use.gpu, epsilon = s$epsilon, family = s$family, seed = s$seed,
                   control = s$given_control, noise = s$noise,
                   noise.support = if (s$noise) s$noise.support[idx], df = s$df,
                   truncation = if (any(lengths(s$truncation[idx]) == 2)) s$truncation[idx],
                   shift = isTRUE(s$shift))
      # (multivariate fits: their covariance structure)
      if (isTRUE(s$multivariate)) args$covariance <- s$covariance
      fk <- withCallingHandlers(do.call(bulkem, args),
                                bulkem_warning_convergence = function(w) invokeRestart("muffleWarning"))
      fits_k[idx] <- unclass(fk)
      phase <- phase + 1
      base$update(phase, phases)
    }
    nulls <- bootstrap_nulls(lapply(fits_k, function(f) if (is.null(f)) list() else f), s$noise.support)
    # the data's censored windows, which the K fits made here do not keep
    if (isTRUE(s$censored)) {
      nulls <- Map(function(p, f) {
        if (!is.null(p)) {
          p$windows <- merge_windows(f$censored_windows)
          p$binned <- is_binned_fit(f)
        }
        p
      }, nulls, items)
    }
    r <- bootstrap_run(data, nulls, B, c(0L, 1L), s, scaled)
    phase <- phase + 1
    engine <- c(engine, r[[1]]$engine)
    costs <- add_costs(list(costs, r[[1]]$costs))
    k0 <- vapply(nulls, function(p) if (is.null(p)) 0L else NROW(p$mu), 0L)
    tested <- if (is.na(k)) seq_len(nd) else which(alive)
    for (d in tested) {
      i <- (d - 1) * B + seq_len(B)
      has <- function(x, j) !is.na(x$loglik[j]) & !x$spurious[j]
      used <- has(r[[1]], i) & has(r[[2]], i)
      spur <- r[[1]]$spurious[i] | r[[2]]$spurious[i]
      t_all <- ifelse(used, 2 * (r[[2]]$loglik[i] - r[[1]]$loglik[i]), NA_real_)
      t_null <- t_all[used]
      l0 <- r[[1]]$observed_loglik[d]
      l1 <- r[[2]]$observed_loglik[d]
      obs_ok <- k0[d] > 0 && !is.na(l0) && !is.na(l1) &&
        !r[[1]]$observed_spurious[d] && !r[[2]]$observed_spurious[d]
      t_obs <- if (obs_ok) 2 * (l1 - l0) else NA_real_
      p <- if (obs_ok && length(t_null) > 0) (1 + sum(t_null >= t_obs)) / (1 + length(t_null)) else NA_real_
      rows[[length(rows) + 1]] <- data.frame(
        dataset = names_d[d], k = if (k0[d] > 0) k0[d] else if (is.na(k)) NROW(items[[d]]$mu) else k,
        loglik = if (k0[d] > 0) l0 else NA_real_, loglik_alt = if (k0[d] > 0) l1 else NA_real_,
        lrt = t_obs, p_value = p, B = if (k0[d] > 0) B else 0L, B_used = length(t_null),
        failed = if (k0[d] > 0) sum(!used & !spur) else 0L, spurious = if (k0[d] > 0) sum(spur) else 0L,
        stringsAsFactors = FALSE)
      nulls_lrt[[length(rows)]] <- t_all
      if (!is.na(k)) {
        if (is.na(p) || p > level) {
          alive[d] <- FALSE
          selected[d] <- if (is.na(p)) NA_integer_ else k
        }
      }
    }
  }
  base$finish()
  out <- do.call(rbind, rows)
  ord <- order(match(out$dataset, names_d), out$k)
  out <- out[ord, , drop = FALSE]
  rownames(out) <- NULL
  # a list column, so that it stays with its rows when they are subset
  out$null <- nulls_lrt[ord]
  if (!is.null(max.components)) selected[alive] <- max.components + 1L
  structure(out, class = c("bulkem_lrt", "data.frame"),
            selected = if (!is.null(max.components)) {
              data.frame(dataset = names_d, k = selected, stringsAsFactors = FALSE)
            },
            level = level, engine = paste(unique(engine), collapse = ", "), costs = c(costs))
}

# Permutations of 1..k, one per row.
permutations <- function(k) {
  if (k == 1) return(matrix(1L, 1, 1))
  sub <- permutations(k - 1)
  do.call(rbind, lapply(seq_len(k), function(i) cbind(i, matrix(setdiff(seq_len(k), i)[sub], nrow(sub)))))
}

# The rows of one dataset (tidy()'s order: by component, then alpha, mu,
# shape; a noise component's weight first, as component 0's alpha) and its
# counts of used, failed and spurious replicates, from its refits'
# parameters (`params`, matrices of B rows and the B noise weights; NULL
# without a null) and statuses.
bootstrap_summary <- function(fit, params, status, spurious, B, conf.level) {
  k <- NROW(fit$mu)
  noise <- has_noise(fit)
  shape_nm <- shape_name(fit$family)
  # the t's degrees of freedom or the ex-Gaussian's tau: a fourth row per
  # component
  nu <- length(fit_third(fit)) > 0
  per <- 3L + nu
  est <- c(fit$alpha, fit$mu, fit_shape(fit), fit_third(fit))
  rows <- data.frame(component = c(if (noise) 0L, rep(seq_len(k), each = per)),
                     term = c(if (noise) "alpha", rep(c("alpha", "mu", shape_nm, if (nu) third_name(fit$family)), k)),
                     estimate = c(if (noise) fit$noise, est[rep(seq_len(per) - 1L, k) * k + rep(seq_len(k), each = per)]),
                     std.error = NA_real_, conf.low = NA_real_, conf.high = NA_real_,
                     B = 0L, B_used = 0L, stringsAsFactors = FALSE)
  # a shifted fit's shift: a last row, of no component (as in tidy())
  shifted <- !is.null(fit$shift)
  if (shifted) {
    rows <- rbind(rows, data.frame(component = NA_integer_, term = "shift", estimate = fit$shift,
                                   std.error = NA_real_, conf.low = NA_real_, conf.high = NA_real_,
                                   B = 0L, B_used = 0L, stringsAsFactors = FALSE))
  }
  if (is.null(params)) {
    return(list(rows = rows, counts = c(used = 0L, failed = 0L, spurious = 0L)))
  }
  ok <- status == "converged"
  use <- ok & !spurious
  counts <- c(used = sum(use), failed = sum(!ok & !spurious), spurious = sum(spurious))
  rows$B <- B
  rows$B_used <- counts[["used"]]
  if (sum(use) < 2) return(list(rows = rows, counts = counts))
  alpha <- params$alpha[use, , drop = FALSE]
  mu <- params$mu[use, , drop = FALSE]
  shape <- params$shape[use, , drop = FALSE]
  df <- if (nu) params$df[use, , drop = FALSE]
  # match components to the point estimate's
  if (k > 1) {
    if (k <= 6) {
      s <- fitted_sd(fit$family, fit$mu, fit_shape(fit))
      perms <- permutations(k)
      target <- matrix(fit$mu, nrow(mu), k, byrow = TRUE)
      scale <- matrix(s, nrow(mu), k, byrow = TRUE)
      cost <- vapply(seq_len(nrow(perms)), function(j) {
        rowSums(((mu[, perms[j, ], drop = FALSE] - target) / scale)^2)
      }, numeric(nrow(mu)))
      cost <- matrix(cost, nrow = nrow(mu))
      best <- perms[max.col(-cost, ties.method = "first"), , drop = FALSE]
    } else {
      best <- t(apply(mu, 1, order))
    }
    pick <- function(m) matrix(m[cbind(rep(seq_len(nrow(m)), k), as.vector(best))], nrow(m))
    alpha <- pick(alpha)
    mu <- pick(mu)
    shape <- pick(shape)
    if (nu) df <- pick(df)
  }
  probs <- c((1 - conf.level) / 2, (1 + conf.level) / 2)
  summarise <- function(r, v) {
    rows$std.error[r] <<- stats::sd(v)
    q <- stats::quantile(v, probs, names = FALSE, type = 7)
    rows$conf.low[r] <<- q[1]
    rows$conf.high[r] <<- q[2]
  }
  # the noise and the shift need no matching: there is one
  if (noise) summarise(1L, params$noise[use])
  if (shifted) summarise(nrow(rows), params$shift[use])
  fixed_df <- nu && !estimates_nu(fit)
  for (m in seq_len(k)) {
    for (t in seq_len(per)) {
      if (t == 4L && fixed_df) next
      summarise(noise + (m - 1) * per + t, list(alpha, mu, shape, df)[[t]][, m])
    }
  }
  list(rows = rows, counts = counts)
}

#' @rdname bulkem_bootstrap
#' @param x A `bulkem_bootstrap` or `bulkem_lrt` result.
#' @param digits Significant digits to print.
#' @param ... Passed to [print.data.frame()].
#' @export
print.bulkem_bootstrap <- function(x, digits = 4, ...) {
  # Any subset of the rows prints, its header counting the datasets printed
  # (`[` keeps the attributes of a row subset and drops them for columns).
  reps <- attr(x, "replicates")
  if (is.data.frame(reps) && !is.null(x$dataset)) reps <- reps[reps$dataset %in% x$dataset, , drop = FALSE]
  if (is.data.frame(reps) && !is.null(attr(x, "conf.level")) && !is.null(attr(x, "seed"))) {
    cat(sprintf("Parametric bootstrap of %d dataset(s): %s%s%% percentile intervals, seed %s\n",
                nrow(reps), bootstrap_b_text(reps$B), format(100 * attr(x, "conf.level")),
                format(attr(x, "seed"))))
    if (sum(reps$failed, reps$spurious) > 0) {
      cat(sprintf("Replicates not used: %d failed or not converged, %d spurious (see attr(, \"replicates\"))\n",
                  sum(reps$failed), sum(reps$spurious)))
    }
  }
  print(as.data.frame(unclass(x), stringsAsFactors = FALSE), digits = digits, ...)
  invisible(x)
}

# "B = 200, " for the replicate counts of the datasets with a fit; "" for none.
bootstrap_b_text <- function(B) {
  B <- unique(B[!is.na(B) & B > 0])
  if (length(B) == 0) "" else paste0("B = ", paste(B, collapse = ", "), ", ")
}

#' @rdname bulkem_bootstrap
#' @export
print.bulkem_lrt <- function(x, digits = 4, ...) {
  # Any subset prints: the header when the rows kept the call's attributes
  # and the columns it counts, `selected` cut to the datasets printed.
  cols <- unclass(x)
  cols$null <- NULL
  tab <- as.data.frame(cols, stringsAsFactors = FALSE)
  if (!is.null(attr(x, "seed")) && all(c("dataset", "B") %in% names(x))) {
    cat(sprintf("Bootstrap likelihood-ratio tests of K vs K + 1 components: %d dataset(s), %d test(s), %sseed %s\n",
                length(unique(x$dataset)), nrow(x), bootstrap_b_text(x$B), format(attr(x, "seed"))))
    failed <- sum(x$failed)
    spurious <- sum(x$spurious)
    if (failed + spurious > 0) {
      cat(sprintf("Replicates not used: %d without a fit, %d spurious\n", failed, spurious))
    }
  }
  print(tab, digits = digits, ...)
  sel <- attr(x, "selected")
  if (is.data.frame(sel) && !is.null(x$dataset)) {
    sel <- sel[sel$dataset %in% x$dataset, , drop = FALSE]
    if (nrow(sel) > 0) {
      cat(sprintf("\nComponents selected (first K not rejected at level %s):\n", format(attr(x, "level"))))
      print(table(k = sel$k, useNA = "ifany"))
    }
  }
  invisible(x)
}

#' Plot bootstrap likelihood-ratio tests
#'
#' For a few tests, the bootstrap null distribution of each statistic (a
#' histogram) with the observed statistic marked and the p-value in the
#' title; for many, the histogram of the p-values by K tested (uniform
#' under the null hypotheses, piled up near 0 where K + 1 components are
#' needed).
#'
#' @param x A `bulkem_lrt` result of [bulkem_bootstrap()].
#' @param which `"auto"` (null distributions for up to 6 tests, p-values
#'   otherwise), `"null"` or `"pvalues"`.
#' @param rows With `which = "null"`, the rows (tests) to draw; default the
#'   first 6.
#' @param ... Passed to [graphics::hist()].
#' @returns `x`, invisibly.
#' @export
plot.bulkem_lrt <- function(x, which = c("auto", "null", "pvalues"), rows = NULL, ...) {
  which <- check_choice(which, "which", c("auto", "null", "pvalues"))
  null <- x$null
  if (!is.list(null)) stop_arg("`x` has lost its null distributions (column `null`)")
  if (nrow(x) == 0) stop_arg("`x` has no rows (tests) to plot")
  if (which == "auto") which <- if (nrow(x) <= 6) "null" else "pvalues"
  if (which == "null") {
    rows <- if (is.null(rows)) seq_len(min(6, nrow(x))) else rows
    if (!is.numeric(rows) || anyNA(rows) || any(rows < 1 | rows > nrow(x))) {
      stop_arg("`rows` must be row numbers of `x` (1 to ", nrow(x), ")")
    }
    old <- graphics::par(mfrow = grDevices::n2mfrow(length(rows)))
    on.exit(graphics::par(old))
    for (i in rows) {
      t <- null[[i]][!is.na(null[[i]])]
      if (length(t) == 0) {
        graphics::plot.new()
        graphics::title(main = sprintf("%s: K = %d vs %d\nno replicates", x$dataset[i], x$k[i], x$k[i] + 1))
        next
      }
      xlim <- range(c(t, x$lrt[i]), na.rm = TRUE)
      args <- plot_args(list(x = t, breaks = 30, xlim = xlim, col = "grey85", border = "grey60",
                             xlab = "2 (loglik K+1 - loglik K)",
                             main = sprintf("%s: K = %d vs %d\np = %s (B = %d)", x$dataset[i], x$k[i],
                                            x$k[i] + 1, format(x$p_value[i], digits = 3), x$B_used[i])),
                        list(...))
      do.call(graphics::hist, args)
      graphics::abline(v = x$lrt[i], col = "firebrick", lwd = 2)
    }
  } else {
    ks <- sort(unique(x$k[!is.na(x$p_value)]))
    if (length(ks) == 0) stop_arg("`x` has no p-values to plot")
    old <- graphics::par(mfrow = grDevices::n2mfrow(length(ks)))
    on.exit(graphics::par(old))
    for (k in ks) {
      p <- x$p_value[x$k == k & !is.na(x$p_value)]
      args <- plot_args(list(x = p, breaks = seq(0, 1, 0.05), col = "grey85", border = "grey60",
                             xlab = "p-value", freq = FALSE,
                             main = sprintf("K = %d vs %d: %d dataset(s)", k, k + 1, length(p))),
                        list(...))
      do.call(graphics::hist, args)
      graphics::abline(h = 1, lty = 2)
    }
  }
  invisible(x)
}
