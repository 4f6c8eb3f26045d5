# bulkem_control(): every control setting of bulkem() and
# bulkem_bootstrap(), checked once, as one classed object; and
# core_settings(), the one list the compiled core's entry points take
# (src/rust/src/settings.rs converts it, by these names, into the core's
# Settings, engine, threads and Tuning). A new option is an argument here
# with its docs, a field of the core's Settings (with its line in the glue's
# conversion, settings.rs), and the code that uses it.

#' Settings of a bulkem call
#'
#' Checks the further settings of [bulkem()] and [bulkem_bootstrap()] once
#' and returns them as one object, as [stats::glm.control()] does for
#' [glm()]. `bulkem(control = )` takes its value or a named list of its
#' arguments (`list(threads = 4)`, checked by it): the two are the same.
#' An error names the setting as `control$name`.
#'
#' @param threads Number of host threads (default:
#'   [parallelly::availableCores()], which honours `options(mc.cores)`,
#'   a container's CPU limit, a Slurm, PBS, SGE or LSF allocation and
#'   `_R_CHECK_LIMIT_CORES_`, and otherwise counts all cores): CPU
#'   workers for the `cpu` engine, stream workers for `cuda-streams`,
#'   threads preparing the work for `cuda-batched`.
#' @param engine `"auto"` (default: the GPU engine if `use.gpu` allows
#'   and a GPU is usable, else `"cpu"`), `"cpu"`, `"cuda-streams"` (the
#'   2015 bulkem CUDA design: one stream per host worker, two kernel
#'   launches per EM iteration of a dataset) or `"cuda-batched"` (whole
#'   fits on the GPU: one launch runs every start of a chunk of datasets
#'   to its end; the default when a GPU is used). `cuda-batched` packs
#'   chunks into page-locked host memory, which uploads several times
#'   faster, and keeps it for the R session (at most 768 MiB per GPU):
#'   a call whose chunks find none large enough packs into ordinary
#'   memory and has buffers of their size made after its GPU work, for
#'   the calls after it (on an H200, B2's engine 0.31 -> 0.27 s,
#'   `inst/bench/results-engines-gpu.md`).
#' @param precision `"double"` (default) or `"mixed"`: for
#'   `cuda-batched` only, each start's E-step passes in single precision
#'   (sums added up in double, M-step in double) until its EM steps gain
#'   less than `epsilon / 2` in the expected complete-data
#'   log-likelihood, then a double-precision launch takes every start on
#'   from there and decides how it ends, by the rules of `"double"`.
#'   The returned log-likelihoods agree with `"double"` to about 1e-9
#'   relative; a start may end at a slightly different point of the same
#'   maximum (parameters within about 1e-4 relative), and where starts
#'   tie another one may win. Faster for plain EM (`accelerate = FALSE`);
#'   with SQUAREM not yet faster than `"double"` (see
#'   `inst/bench/results-mixed-precision.md`). Not with a noise component
#'   or Student's t components (an argument error). Other engines always
#'   compute in double precision.
#' @param accelerate `TRUE` accelerates every start's EM by squared
#'   extrapolation (SQUAREM, Varadhan & Roland 2008, scheme SqS3): after
#'   two EM steps from \eqn{\theta_0}{theta0} it tries the point
#'   \eqn{\theta_0 + 2sr + s^2 v}{theta0 + 2 s r + s^2 v} along the
#'   steps (r the first step, v the change between the two; weights,
#'   means and log-shapes), keeping it only when its log-likelihood is
#'   at least that of the second-to-last iterate, else continuing from
#'   the plain EM step. Every iterate is still an EM step or a point at
#'   least as likely, the convergence rule is applied to plain EM steps
#'   only, and the fixed points are EM's, so a start ends at the same kind
#'   of maximum, in far fewer E-step passes where EM creeps (overlapping
#'   or barely identified components; 6 to 7 times fewer on such
#'   data in `inst/bench/results-bootstrap.md`). Which maximum a start
#'   reaches can differ from plain EM's. `max.iters` counts E-step
#'   passes either way. Same on every engine. Default `TRUE`: on the
#'   corpus that chose the defaults, 20 starts reach the best known
#'   optimum as often as with plain EM (91.6% against 90.8%) with 4.3
#'   times fewer E-step passes (`inst/bench/results-defaults.md`).
#'   `FALSE` runs plain EM, as bulkem did before; the benchmarks of
#'   `inst/bench` use it so that a start-fit is the peers' fixed number
#'   of EM iterations. Under SQUAREM a start's path can tip on the last
#'   bits, so engines may reach an optimum by different starts or stop at
#'   different points; every converged winner is then polished to the
#'   maximum itself (Newton steps on the observed information), so they
#'   return the same point. Measured on an H100 at the defaults
#'   (`Rscript inst/bench/agreement.R`: 748 datasets, IG K = 3, Normal
#'   K = 2 and 5, real data): `cuda-batched` and `cuda-streams` return the
#'   CPU's optimum (log-likelihood within 1e-8, parameters within 1e-6
#'   relative) on 746 (99.7%; 90.6-91.3% before the polish); the other two
#'   are another optimum that a SQUAREM start reached on one engine (one
#'   converged fit 1.8e-4 apart in log-likelihood). With the default
#'   search of 2026-11-28 (short runs, `short.runs`), on an H200: 748 of
#'   748 on both GPU engines, no converged fit apart
#'   (`inst/bench/results-starts.md`). With plain EM the engines take the
#'   same steps (`inst/bench/results-polish.md`).
#' @param keep.data `TRUE` keeps each dataset in its fit (field
#'   `data`), for [plot.bulkem_fit()]; default `FALSE`.
#' @param keep.starts `TRUE` adds to each fit a data frame `starts`
#'   with one row per random start: `start`, its final `loglik` (as the
#'   engine computed it), `iterations`, `status` (`"converged"`,
#'   `"max_iters"` or `"failed"`) and the failure's `reason`, and its
#'   initial values `init_alpha_1` .. `init_mu_K` (components in the order
#'   drawn); so one can see how many starts reached the best optimum.
#'   Default `FALSE`.
#' @param standard.errors `TRUE` (default) gives every fit its
#'   standard errors and covariance matrix (fields `se` and `vcov`; see
#'   [vcov.bulkem_fit()]): one pass over each dataset after the engine
#'   (with `cuda-batched`, while later chunks run on the GPU) and two R
#'   objects per fit. `FALSE` leaves `se` and `vcov` `NULL`, for calls
#'   with hundreds of thousands of datasets that need no standard errors:
#'   on 200,000 datasets of 100 observations (2 CPU cores) it saves about
#'   0.8 s of that pass and 0.7 s of building the result, mostly R's
#'   garbage collector moving the covariance matrices. Fits are the
#'   same, except that fits stuck at a saddle point are not seen there
#'   and not continued (see "Saddle points").
#' @param spurious.ratio,spurious.count,spurious.count.ratio,spurious.distinct The
#'   spurious-solution screen (see "Spurious solutions" in [bulkem()]): a
#'   finished start is rejected when a component's standard deviation is
#'   below `spurious.ratio` (default 0.001) times the largest component's,
#'   or when a component expects fewer than `spurious.count` (default 10)
#'   observations (`n * alpha`) and its standard deviation is below
#'   `spurious.count.ratio` (default 0.1) times the largest, or when fewer
#'   than `spurious.distinct` (default 3, a whole number up to 8) distinct
#'   values of the data lie within two standard deviations of a
#'   component's mean: a spike on heaped values (data recorded to a
#'   resolution, such as heights to the centimetre), however many
#'   observations sit on them, is not a component of a continuous
#'   distribution. 0 turns a rule off.
#' @param restarts Rounds of `random.inits` more starts for a dataset
#'   where no start finished admissibly (each collapsed onto a point or
#'   was rejected by the screen), as mixtools restarts a collapsed fit;
#'   default 4, so up to `5 * random.inits` starts; 0 turns it off. Other
#'   datasets are not affected, and start `i` is the same draw in any
#'   round, so results stay reproducible. See "Ties and collapse" below.
#' @param refine Refinement after the random starts: each dataset's best
#'   fit is restarted with one of its components moved to one of up to
#'   `refine` regions of the data it explains least (windows of the
#'   sorted data holding more observations than the fit expects, by more
#'   than chance allows), every component in turn: `refine * K` more
#'   starts for a dataset that has such a region, none for one that has
#'   not. The random starts rarely seed a minor mode of a few percent of
#'   the data; a fit that misses it leaves such a region, and a start
#'   from there reaches the better optimum. The starts depend only on the
#'   dataset and its best fit (no random draw). 0 (the default) turns it
#'   off. Its cost: E-step passes rise by 4-6% at 20 starts (B1's 10
#'   starts: 33%), and the round is a second pass of the engine over the
#'   datasets, which on a GPU costs more than its passes (B2, plain EM,
#'   100 starts, on an H100: 0.35-0.49 s without, 0.49 s with
#'   `refine = 2`; `inst/bench/results-starts.md`,
#'   `inst/bench/results-families.md`).
#' @param short.runs emEM: each dataset's starts are first run as
#'   `short.runs` short runs of `short.iters` EM iterations each (drawn by
#'   `starts`), and only the best `random.inits` of them (admissible ones
#'   first, then by log-likelihood) are run again from their draw to
#'   convergence. A minor mode's basin holds a percent or two of the drawn
#'   starts: `random.inits` starts miss it more often than not, many short
#'   runs do not, and a few iterations tell many of those heading to a
#'   better optimum from the others. Short runs collapsing onto a few
#'   observations climb fastest and may fill every place, so a restart
#'   round (`restarts`), for a dataset with no admissible fit yet, runs
#'   the next `random.inits` draws (in index order, those not continued
#'   already) to convergence, as without short runs. The default, `NULL`,
#'   runs as many as K needs: 30 short runs for two components, 100 for
#'   three, 200 for four or more, and none for one component or where
#'   `random.inits` is at least that many. 0 turns them off: every start
#'   runs to convergence (the search before 2026-11-28, with
#'   `starts = "mixed"`).
#'   Any other number applies to every K > 1 and must be at least
#'   `random.inits`. All short runs' E-step passes count in
#'   `attr(fits, "em_iterations")`, and each continued start's count again
#'   the short run's; only the continued starts count as starts
#'   (`starts_run`, `best_start` numbered by rank, `keep.starts`). Every
#'   engine runs them; the starts continued depend only on the seed, the
#'   data and the settings. [bulkem_bootstrap()]'s refits, which start from
#'   the fit, run none unless asked. Measured (`Rscript
#'   inst/bench/starts.R`, SQUAREM, seeds 2 to 5;
#'   `inst/bench/results-starts.md`): with the default partition starts
#'   and short runs by K, the best known optimum (of 2,400 starts) is
#'   reached on 97.5-98.3% of the defaults corpus and 89.9-93.9% of a
#'   held-out corpus with minor modes of 2-5% of the data, against
#'   91.7-96.7% and 79.8-83.8% for 20 mixed starts without short runs,
#'   with 1.3 and 1.0 times their E-step passes; on the benchmark
#'   workloads' data (`inst/bench/default-starts.R`) the same fits on B1-B3
#'   and higher ones on 8-16% of B4's and 0.5-0.9% of B5's datasets (lower
#'   on 2% and 0.1-0.25%), with 1.1 to 1.8 times the passes (1.8 on B1's
#'   and B2's easy two-component fits). On the GPU the short runs are one
#'   more round of the engine: on an H200 B2 takes 1.0-1.9 times the wall
#'   time, B4 1.2-1.3 times (`inst/bench/short-runs-cost.R`).
#'   Multivariate data run short runs only where `short.runs` is given
#'   (the default there is 0): the draws' D² seeding finds minor clusters
#'   about as often without them (`inst/bench/mv-starts.R`, see
#'   `inst/bench/results-mv-starts.md`); a continued start is numbered by
#'   its draw (`best_start`), a restart round runs the next draws in index
#'   order not continued already, and the user's starts (`init`) are
#'   numbered after every draw the rounds may take.
#' @param short.iters EM iterations of each short run (default 10: 5 rank
#'   the short runs poorly, 10-20 well; SQUAREM's extrapolated passes count
#'   as iterations, as in `max.iters`).
#' @param devices The GPUs to use, numbered from 0 as
#'   [bulkem_gpu_info()] lists them (CUDA's numbering); default `NULL`,
#'   every GPU. `cuda-batched` shares its chunks of work among them, one
#'   host thread pair and one stream pair per GPU, kernels compiled once
#'   per GPU; a fit is the same whichever GPUs run it. `cuda-streams` uses
#'   the first one.
#' @param future `TRUE` shards the call's datasets over the workers of
#'   the [future::plan()] you set (`multisession`, `cluster`, or
#'   `future.batchtools` on Slurm, SGE, PBS ...), through
#'   [future.apply::future_lapply()]; bulkem never sets the plan. Each
#'   worker fits its shard by calling `bulkem()` with the same arguments
#'   and seed (drawn once in your session when `seed = NULL`) on its own
#'   GPU or cores (`threads`, unless given, counted there by
#'   [parallelly::availableCores()]), and the fits come back in dataset
#'   order, identical to those of the same call without `future` (every
#'   start depends only on the seed, its index and its dataset's values).
#'   Progress crosses the workers through progressr; the convergence
#'   warning is raised once for the whole call. A shard that fails, or
#'   whose worker dies, stops the call with an error of class
#'   `bulkem_error_future` naming the shard and its datasets, never a
#'   partial result. Needs the future and future.apply packages. Default
#'   `FALSE`.
#' @param shards With `future = TRUE`, the number of shards (contiguous
#'   runs of datasets, sizes differing by at most one, one future each);
#'   default `NULL`: 4 per worker of the plan
#'   ([future::nbrOfWorkers()]; 32 workers assumed where the plan gives
#'   no limit), so that workers that finish early take more, and never
#'   more than the datasets.
#' @param tuning A named list of knobs that lay the GPU engines' work out,
#'   for benchmarks and tests; they never change a result: `workers` and
#'   `chunk_pieces` (`cuda-batched` host workers per GPU, and the fewest
#'   chunks a call is cut into), `chunk_bytes` and `chunk_ramp` (most bytes
#'   of a chunk; how many times smaller the first and last chunks are),
#'   `pinned` (`FALSE`: pack chunks into ordinary memory), `mapping`
#'   (`"lane"`, `"warp"`, `"group8"`, ...: how fits map onto GPU threads),
#'   `blocks_in_flight` (the bootstrap's blocks of replicates at once on a
#'   GPU) and `result_during` (`"0"`: build the R result after the engine
#'   ends; `"reserve"`, `"ahead"`). A knob not given here is read from the
#'   environment variable `BULKEM_` and its name in capitals, if set.
#'   Default: none.
#' @param starts How each random start's initial parameters are made:
#'   `"random"` (the 2015 "subset" scheme, each component the ML estimate
#'   of 3 distinct random observations, equal weights),
#'   `"partition"` (each component the ML estimate of a contiguous block of
#'   the sorted data, weights the blocks' shares: start 0 cuts at the
#'   quantiles, then in turn a start with a small block at one edge or
#'   both (0.5% of the data, at least 3 observations, up to half an equal
#'   share, of log-uniform size), one with a small block anywhere among
#'   uniformly cut ones, and one cut uniformly at random) or `"mixed"`
#'   (even start indices partition starts, odd ones random starts). The
#'   default, `NULL`, is `"partition"`, and `"mixed"` for the ex-Gaussian:
#'   an ex-Gaussian component's exponential tail runs far past any
#'   contiguous block, and on real response times partition starts missed
#'   the maximum that mixed ones reach. Partition starts seed small groups
#'   at the edges of the data, whose optima few random starts find; with
#'   the default short runs (`short.runs`), which rank many of them and
#'   continue the best, they also overcome what contiguous blocks do badly
#'   alone (components narrower than their data where components overlap:
#'   a narrow inverse Gaussian inside a wide one, where of 5 partition
#'   starts 0-1 reached the maximum, of 5 random ones 2-5). Every scheme's
#'   start depends only on the seed, its index, K and the dataset's
#'   values, so fits stay reproducible on any engine. Measured without
#'   short runs (`Rscript inst/bench/starts.R`, SQUAREM, two seeds;
#'   `inst/bench/results-starts.md`): against the best optimum of 1,200
#'   starts (defaults corpus) or 2,400 (a held-out corpus with minor modes
#'   of 2-5% of the data), 20 random starts reach it on 87-88% and 74-78%;
#'   20 partition starts on 93-97% and 84-85%, with a third fewer E-step
#'   passes; 20 mixed starts on 95% and 80-83%; with short runs, see
#'   `short.runs`.
#' @returns A list of class `bulkem_control` holding every setting (the
#'   defaults filled in, `threads` counted), with attribute `given`: the
#'   names of the settings the caller gave.
#' @seealso [bulkem()], [bulkem_bootstrap()].
#' @examples
#' ctl <- bulkem_control(threads = 1, keep.data = TRUE)
#' ctl$restarts
#' set.seed(1)
#' x <- c(rnorm(200), rnorm(100, 4))
#' fit <- bulkem(list(x), family = "normal", random.inits = 5, control = ctl)
#' length(fit[[1]]$data)
#' @export
bulkem_control <- function(threads = NULL, engine = "auto", precision = "double",
                           accelerate = TRUE, keep.data = FALSE, keep.starts = FALSE,
                           standard.errors = TRUE,
                           spurious.ratio = default_screen("ratio"),
                           spurious.count = default_screen("count"),
                           spurious.count.ratio = default_screen("count.ratio"),
                           spurious.distinct = default_screen("distinct"),
                           restarts = model_limits()$restarts, refine = model_limits()$refine,
                           short.runs = NULL, short.iters = model_limits()$short_iters,
                           devices = NULL,
                           future = FALSE, shards = NULL, tuning = list(),
                           starts = NULL) {
  given <- names(match.call())[-1]
  out <- list(
    threads = if (is.null(threads)) {
      default_threads()
    } else {
      as.integer(check_whole(threads, "control$threads", 1, 4096))
    },
    engine = check_choice(engine, "control$engine", engine_names),
    precision = check_choice(precision, "control$precision", c("double", "mixed")),
    accelerate = check_flag(accelerate, "control$accelerate"),
    keep.data = check_flag(keep.data, "control$keep.data"),
    keep.starts = check_flag(keep.starts, "control$keep.starts"),
    standard.errors = check_flag(standard.errors, "control$standard.errors"),
    spurious.ratio = check_threshold(spurious.ratio, "control$spurious.ratio", 1),
    spurious.count = check_threshold(spurious.count, "control$spurious.count", Inf),
    spurious.count.ratio = check_threshold(spurious.count.ratio, "control$spurious.count.ratio", 1),
    spurious.distinct = check_whole(spurious.distinct, "control$spurious.distinct", 0, 8),
    restarts = as.integer(check_whole(restarts, "control$restarts", 0, 1000)),
    refine = as.integer(check_whole(refine, "control$refine", 0, model_limits()$max_refine)),
    short.runs = if (!is.null(short.runs)) {
      as.integer(check_whole(short.runs, "control$short.runs", 0, model_limits()$max_short_runs))
    },
    short.iters = as.integer(check_whole(short.iters, "control$short.iters", 1, .Machine$integer.max)),
    devices = check_devices(devices),
    future = future, shards = shards,
    tuning = check_tuning(tuning),
    starts = if (!is.null(starts)) check_choice(starts, "control$starts", start_schemes))
  out <- check_future_control(out)
  structure(out, class = "bulkem_control", given = given)
}

# control$starts: the start schemes of the compiled core (starts.rs)
start_schemes <- c("random", "partition", "mixed")

# bulkem()'s and bulkem_bootstrap()'s `control`: a bulkem_control() value
# as it is, or a named list of its arguments, checked by it.
check_control <- function(control) {
  if (inherits(control, "bulkem_control")) return(control)
  if (!is.list(control) || (length(control) > 0 && is.null(names(control)))) {
    stop_arg("`control` must be bulkem_control(...) or a named list, such as list(threads = 4)")
  }
  nms <- names(control)
  known <- names(formals(bulkem_control))
  unknown <- setdiff(nms, known)
  if (length(unknown) > 0 || any(!nzchar(nms)) || anyDuplicated(nms)) {
    what <- if (length(unknown) > 0) {
      paste0("unknown `control` setting(s): ", paste(unknown, collapse = ", "))
    } else {
      "every `control` setting must be named once"
    }
    stop_arg(what, "; the settings are: ", paste(known, collapse = ", "))
  }
  # a NULL element is a setting left at its default, as list(threads = NULL)
  do.call(bulkem_control, control[!vapply(control, is.null, NA)])
}

# The settings the caller gave, as a plain list (for the calls bulkem()
# makes on future workers, which count their own threads), less `drop`.
given_control <- function(control, drop = character(0)) {
  keep <- setdiff(attr(control, "given"), drop)
  unclass(control)[keep]
}

#' @export
#' @noRd
print.bulkem_control <- function(x, ...) {
  cat("bulkem control settings\n")
  utils::str(unclass(x), no.list = TRUE, give.attr = FALSE)
  invisible(x)
}

# The screen's default thresholds, from the compiled core.
default_screen <- function(which) model_limits()$spurious[[which]]

# control$tuning: a named list of single values; the compiled core checks
# each knob's name and value (an error of class bulkem_error_argument).
check_tuning <- function(tuning) {
  if (is.null(tuning)) return(list())
  ok <- is.list(tuning) && (length(tuning) == 0 ||
    (!is.null(names(tuning)) && all(nzchar(names(tuning))) &&
       all(vapply(tuning, function(v) (is.character(v) || is.numeric(v) || is.logical(v)) &&
                    length(v) == 1 && !is.na(v), NA))))
  if (!ok) {
    stop_arg("`control$tuning` must be a named list of single values, such as list(chunk_bytes = 1e6)")
  }
  tuning
}

# The one list the compiled core's fit_() and bootstrap_() take: bulkem()'s
# arguments and every setting of the checked control, by name, with the
# engine chosen in place of control$engine. The glue reads what it needs by
# these names (src/rust/src/settings.rs), so a new control setting reaches
# it without a change here.
core_settings <- function(family, num.components, max.iters, random.inits, epsilon, seed,
                          control, engine, noise = FALSE, noise.support = numeric(0), df = NULL,
                          criterion = "bic", init = numeric(0), equal.scale = FALSE, fixed = numeric(0),
                          truncation = numeric(0), censored = NULL) {
  settings <- c(list(family = family, num.components = as.integer(num.components),
                     max.iters = as.integer(max.iters), random.inits = as.integer(random.inits),
                     epsilon = epsilon, seed = as.double(seed), noise = noise,
                     noise.support = as.double(noise.support), df = as.double(df),
                     criterion = criterion, init = as.double(init), equal.scale = equal.scale,
                     fixed = as.double(fixed), truncation = as.double(truncation),
                     censored = if (is.null(censored)) list() else lapply(censored, as.double)),
                unclass(control))
  settings$engine <- engine
  attr(settings, "given") <- NULL
  settings
}
