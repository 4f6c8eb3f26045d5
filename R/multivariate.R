# bulkem()'s path for multivariate data (issue 33): a list of matrices, a
# formula with a matrix response or several `value` columns, made into
# matrices by make_datasets() (R/input.R), fitted by the compiled core's
# multivariate layer (src/rust/core/src/mv/) on the CPU engine or on GPUs
# (cuda-batched), and built into a result by new_bulkem() like every other.

covariance_structures <- c("full", "tied", "diagonal", "spherical")

# What the multivariate fits do not take yet: control settings of the
# univariate engines, given explicitly.
univariate_only_control <- c("precision", "accelerate", "keep.starts", "refine", "starts",
                             "spurious.distinct", "future", "shards")

# Checks what bulkem() was given for multivariate data; returns the family.
check_multivariate_args <- function(family, family_given, noise, noise.support, df, control,
                                    use.gpu) {
  family <- if (family_given) check_choice(family, "family", families) else "normal"
  if (!family %in% c("normal", "t")) {
    stop_arg("`family = \"", family, "\"`: multivariate data are fitted with family = \"normal\" ",
             "(multivariate normal components) or \"t\" (multivariate Student's t)")
  }
  # a multivariate start's components have no order to give K values by
  if (family == "t" && length(df) > 1) {
    stop_arg("`df` for multivariate data is one number, every component's (", length(df), " given)")
  }
  given <- intersect(attr(control, "given"), univariate_only_control)
  if (length(given) > 0) {
    stop_arg("`control$", given[1], "` applies to univariate data only, so far: ",
             "multivariate fits run plain EM")
  }
  if (control$engine == "cuda-streams") {
    stop_arg("`control$engine = \"cuda-streams\"` does not fit multivariate data: ",
             "use \"cuda-batched\" (or \"auto\", or \"cpu\")")
  }
  family
}

# Fits the multivariate datasets of `input` (make_datasets()'s value) and
# returns the result. `args` holds bulkem()'s checked arguments.
fit_multivariate <- function(input, args, control, covariance, verbose, started) {
  datasets <- input$datasets
  variables <- input$variables
  # chosen as for univariate data: cuda-batched where a GPU is usable (it
  # agrees with the CPU engine and is about 30 times the GPU machine's 16
  # cores on M1's shape, inst/bench/results-mv-gpu.md), else the CPU
  weights <- args$weights
  engine <- choose_engine(args$use.gpu, control$engine)
  if (verbose) {
    message(sprintf("bulkem: %d multivariate datasets of %d variables, %s (%s covariance), ",
                    length(datasets), length(variables), args$family, covariance),
            sprintf("%s component(s), %d start(s) each, on the %s engine",
                    paste(args$num.components, collapse = ", "), args$random.inits, engine))
  }
  noise_box <- check_noise_box(args$noise.support, length(datasets), variables, args$noise)
  # emEM only where asked for (control$short.runs)
  if (!"short.runs" %in% attr(control, "given")) control$short.runs <- 0L
  run <- function(engine) {
    settings <- core_settings(args$family, args$num.components, args$max.iters, args$random.inits,
                              args$epsilon, args$seed, control, engine, noise = args$noise,
                              df = args$df, criterion = args$criterion,
                              init = mv_given_records(args$given))
    settings$covariance <- covariance
    settings$noise.box <- noise_box
    # the standard errors' names and messages (mu1.<variable>, ...)
    settings$variables <- variables
    fit_mv_(unname(datasets), if (is.null(weights)) list() else weights, settings, reporter$update)
  }
  checked <- proc.time()[["elapsed"]]
  reporter <- progress_reporter()
  res <- run_with_fallback(run, engine, args$use.gpu)
  engine <- res$engine
  returned <- proc.time()[["elapsed"]]
  reporter$finish()
  fits <- lapply(res$fits, label_mv_fit, variables = variables, df_fixed = !is.null(args$df))
  fits <- attach_inputs(fits, datasets, input, control$keep.data, weights)
  finished <- proc.time()[["elapsed"]]
  elapsed <- finished - started
  if (verbose) message(sprintf("bulkem: done in %.3f s (%s engine, %d thread(s))", elapsed, engine, res$threads))
  warn_mv_status(fits)
  new_bulkem(fits, engine = engine, threads = res$threads, elapsed = elapsed, seed = args$seed,
             family = args$family, num.components = as.integer(args$num.components),
             em_iterations = res$em_iterations, kernel_launches = res$kernel_launches,
             kernel_seconds = res$kernel_seconds,
             timings = c(check = checked - started, res$timings, after = finished - returned,
                         total = elapsed),
             na.action = input$na.action, groups = input$groups, response = input$response,
             covariance = covariance, variables = variables, weighted = if (!is.null(weights)) TRUE)
}

# `noise.support` for multivariate data: NULL (each dataset's bounding
# box), one d x 2 matrix of lower and upper bounds (rows the variables, by
# name when named) for every dataset, or a list with one such matrix (or
# NULL) per dataset. As the core takes it: per box its d lower bounds then
# its d upper ones, NA for a dataset's own box. Whether a box holds its
# dataset is checked with the data (that dataset's status and message).
check_noise_box <- function(support, n_datasets, variables, noise) {
  if (is.null(support)) return(numeric(0))
  if (!noise) stop_arg("`noise.support` is given but `noise = FALSE`: set `noise = TRUE` to fit a noise component")
  d <- length(variables)
  one <- function(b, where = "") {
    if (is.null(b)) return(rep(NA_real_, 2 * d))
    if (is.data.frame(b)) b <- as.matrix(b)
    if (!is.numeric(b) || !identical(dim(b), c(as.integer(d), 2L)) || any(!is.finite(b)) || any(b[, 1] >= b[, 2])) {
      stop_arg("`noise.support` for multivariate data must be a ", d, " x 2 matrix of finite lower < upper ",
               "bounds, a row per variable (", paste(variables, collapse = ", "), "), or a list of one such ",
               "matrix (or NULL) per dataset", where)
    }
    if (!is.null(rownames(b)) && all(variables %in% rownames(b))) b <- b[variables, , drop = FALSE]
    as.double(b)
  }
  if (is.list(support) && !is.data.frame(support)) {
    if (length(support) != n_datasets) {
      stop_arg("`noise.support` has ", length(support), " boxes for ", n_datasets, " datasets")
    }
    return(unlist(Map(function(b, i) one(b, paste0("; element ", i, " is not")), support, seq_along(support))))
  }
  one(support)
}

# The variables' names on a fit's mu and sigma (and on every K's fit); a
# t's `df` fixed by bulkem(df =) marked so (attribute "fixed"), as the
# univariate fits' are.
label_mv_fit <- function(fit, variables, df_fixed = FALSE) {
  dimnames(fit$mu) <- list(NULL, variables)
  dimnames(fit$sigma) <- list(variables, variables, NULL)
  if (!is.null(fit$noise_support)) dimnames(fit$noise_support) <- list(variables, c("lower", "upper"))
  if (df_fixed && !is.null(fit$df)) attr(fit$df, "fixed") <- TRUE
  if (!is.null(fit$all_k)) fit$all_k <- lapply(fit$all_k, label_mv_fit, variables = variables, df_fixed = df_fixed)
  fit
}

# One warning for the datasets whose fit did not converge or failed, as
# the univariate fits warn (warn_convergence()).
warn_mv_status <- function(fits) {
  status <- vapply(fits, function(f) f$status, "", USE.NAMES = FALSE)
  bad <- which(status != "converged")
  if (length(bad) == 0) return(invisible(NULL))
  counts <- table(status[bad])
  warning(bulkem_condition("warning_convergence", paste0(
    length(bad), " of ", length(fits), " multivariate fits did not converge or could not be fitted (",
    paste(names(counts), counts, sep = ": ", collapse = ", "), "); see each fit's `status` and `message`",
    ", e.g. dataset ", bad[1], ": ", fits[[bad[1]]]$message)))
}
