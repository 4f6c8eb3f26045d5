#' Fit finite mixtures to many datasets at once
#'
#' Fits a mixture of `num.components` inverse Gaussian or Gaussian components
#' to every dataset by EM, from `random.inits` random starts each, and keeps
#' each dataset's best start. All (dataset, start) pairs run concurrently on
#' the CPU cores this R session may use (`control$threads`). The first seven arguments are those of the 2015 bulkem, in
#' the same order and with the same meaning; the defaults of `max.iters` and
#' `random.inits` are larger than in 2015 (a call that gives them is
#' unaffected).
#'
#' @section Parameterisation:
#' A K-component mixture has density
#' \eqn{f(x) = \sum_{j=1}^K \alpha_j f_j(x)}{f(x) = sum_j alpha_j f_j(x)},
#' with weights `alpha` (summing to 1) and component densities \eqn{f_j}:
#' \describe{
#'   \item{`family = "invgauss"`}{the inverse Gaussian with mean `mu` and
#'     shape `lambda`, as in \pkg{statmod}'s [statmod::dinvgauss()]
#'     (`mean = mu, shape = lambda`):
#'     \eqn{f_j(x) = \sqrt{\lambda / (2\pi x^3)}
#'     \exp(-\lambda (x - \mu)^2 / (2 \mu^2 x))}{f_j(x) = sqrt(lambda / (2 pi x^3))
#'     exp(-lambda (x - mu)^2 / (2 mu^2 x))}, for \eqn{x > 0}. Its dispersion
#'     (statmod's `dispersion`) is `1 / lambda` and its variance
#'     `mu^3 / lambda`.}
#'   \item{`family = "normal"`}{the Normal with mean `mu` and standard
#'     deviation `sigma`, as in [stats::dnorm()] (`mean = mu, sd = sigma`).}
#'   \item{`family = "lognormal"`}{the lognormal whose logarithm has mean
#'     `mu` and standard deviation `sigma`, as in [stats::dlnorm()]
#'     (`meanlog = mu, sdlog = sigma`), for \eqn{x > 0}. It is fitted as the
#'     Normal on `log(x)` (the same starts, iterations and parameters); its
#'     log-likelihood, AIC and BIC are those of `x`, the Normal's on `log(x)`
#'     less `sum(log(x))`.}
#'   \item{`family = "gamma"`}{the gamma with mean `mu` and shape `shape`,
#'     as in [stats::dgamma()] (`shape = shape, rate = shape / mu`); its
#'     variance is `mu^2 / shape`. The M-step's shape is the root of
#'     \eqn{\log a - \psi(a) = \log \mu - \overline{\log x}}{log(a) -
#'     digamma(a) = log(mu) - weighted mean of log(x)} (Newton's method to
#'     1e-14 relative, the same steps on every engine), so EM stays exact.}
#'   \item{`family = "t"`}{Student's t with location `mu`, scale `sigma` and
#'     degrees of freedom `df`: \eqn{f_j(x) = \frac{1}{\sigma} t_\nu((x -
#'     \mu)/\sigma)}{f_j(x) = dt((x - mu) / sigma, df) / sigma}, as
#'     [stats::dt()]. Its heavier tails take outliers without a component
#'     of their own. EM treats each observation's precision weight as
#'     missing too (McLachlan & Peel 2000, section 7.5):
#'     [predict()][predict.bulkem_fit]'s `weight` is its expected value,
#'     \eqn{(\nu + 1)/(\nu + ((x - \mu)/\sigma)^2)}{(df + 1) / (df + ((x -
#'     mu) / sigma)^2)} averaged over the components by their posterior
#'     probabilities, small for an outlier. `df` is estimated per component
#'     (each pass solves its one-dimensional equation, the ECM step) within
#'     \[0.5, 200\], or fixed by the argument `df`; an estimated `df`
#'     counts as K more parameters in AIC and BIC and has standard errors.
#'     Every engine fits it, in double precision (`control$precision =
#'     "mixed"` refuses it).}
#'   \item{`family = "exgauss"`}{the ex-Gaussian, the reaction-time family:
#'     a Normal of mean `mu` and standard deviation `sigma` plus an
#'     independent exponential of mean `tau`,
#'     \eqn{f_j(x) = \frac{1}{\tau} \exp\left(\frac{\mu - x}{\tau} +
#'     \frac{\sigma^2}{2\tau^2}\right) \Phi\left(\frac{x - \mu}{\sigma} -
#'     \frac{\sigma}{\tau}\right)}{f_j(x) = exp((mu - x) / tau + sigma^2 /
#'     (2 tau^2)) pnorm((x - mu) / sigma - sigma / tau) / tau}, as
#'     `gamlss.dist::dexGAUS(x, mu, sigma, nu = tau)` and `retimes`' `dexgauss`;
#'     its mean is `mu + tau` and its variance `sigma^2 + tau^2`. EM treats
#'     each observation's exponential part as missing too, so the M-step is
#'     in closed form and every pass raises the likelihood; `tau` counts as K
#'     more parameters in AIC and BIC and has standard errors. Starts are
#'     the Normal's made ex-Gaussian with the same mean and variance (`tau`
#'     taking 64% of the variance), or a start of `init` with its own `tau`.
#'     Every engine fits it, in double precision (`control$precision =
#'     "mixed"` refuses it); it does not go with truncation or censoring
#'     yet, and takes no `shift` (`mu` already is its location).}
#' }
#' The components of a fit are ordered by ascending `mu`.
#'
#' @section The fit:
#' EM runs in the log domain (log-sum-exp), with one pass over a dataset per
#' iteration accumulating the sufficient statistics in double precision, and
#' the exact M-step (for the inverse Gaussian,
#' \eqn{\lambda = S_0 / (\sum r/x - S_0^2/S_1)}{lambda = S0 / (sum(r/x) - S0^2/S1)}
#' with the new \eqn{\mu}{mu}). Each dataset is fitted on rescaled data (divided by its
#' mean for the inverse Gaussian, standardised for the Normal) and the
#' parameters are mapped back, so data at any scale double precision holds
#' (about 1e-300 to 1e300, spread over a few orders of magnitude within a
#' dataset) is fitted alike. A start stops when the log-likelihood rises by
#' less than `epsilon` or after `max.iters` updates. A start fails, and cannot
#' win, when a component's weight falls below two observations, a component
#' collapses onto a point, a value becomes non-finite, or the log-likelihood
#' falls by more than rounding. The winning start, where it converged, is
#' then taken to the maximum itself by Newton steps on the observed
#' information (each kept only if the log-likelihood does not fall), so the
#' parameters returned do not depend on where `epsilon` stopped EM, nor on
#' the engine or `control$accelerate`.
#'
#' Start `s` of a dataset begins at the maximum-likelihood estimates of three
#' distinct observations drawn per component (equal weights), from a random
#' stream that depends only on `seed`, `s` and the dataset's values. So a
#' dataset's fit is the same whatever the number of threads, its position in
#' `datasets` and the other datasets in the call.
#'
#' @section Input:
#' The data can come in the forms R's model functions accept:
#' \describe{
#'   \item{A list}{of numeric vectors (or one vector): one dataset each, as in
#'     2015.}
#'   \item{A formula}{`value ~ group` with `data`, `subset` and `na.action`,
#'     built by [stats::model.frame()] as [lm()] builds its data: the
#'     left-hand side is evaluated, so `log(rt) ~ subject` fits `log(rt)`;
#'     every combination of the grouping variables on the right (`~ subject +
#'     condition`) that occurs (after `subset`) is one dataset, named
#'     `"s1:c1"` and in the order of [split()]; `value ~ 1` makes one
#'     dataset.}
#'   \item{A long data frame}{with `value` and `group` naming its columns, or
#'     `formula =`: the same as the formula form.}
#' }
#' Missing values are dropped by default (`na.action`, above), in every form
#' alike, and counted in the fit's `n_dropped`; so a list and the same data
#' as a formula give identical fits. A group whose values were all dropped
#' stays in the result as an `"invalid"` dataset of 0 observations.
#'
#' @section Progress:
#' bulkem reports its progress through the \pkg{progressr} package, from R's
#' main thread while the engine works, as the fraction of the work done
#' (never going back, ending at 1). Like every progressr user, it shows
#' nothing unless you ask: wrap a call in [progressr::with_progress()], or
#' once per session call `progressr::handlers(global = TRUE)`; choose how it
#' looks with [progressr::handlers()] (e.g. `handlers("cli")` or
#' `handlers("txtprogressbar")`). `verbose` is independent of it.
#'
#' @section Very large calls:
#' A call over hundreds of thousands of datasets returns as many R lists,
#' about 20 R objects each, and R's garbage collector may run several times
#' while they are made, each time over everything the session holds: in a
#' session's first such call that can cost more than the fitting. Where such
#' calls are the point of a session, start R with a larger heap, so that it
#' need not collect while the result is made: `R --min-nsize=10M
#' --min-vsize=1G` (or `Rscript` with the same options), or `R_NSIZE=10M`
#' and `R_VSIZE=1G` in the environment or in `~/.Renviron` (see [Memory];
#' a dataset's fit takes about 20 cons cells and 80 vector cells of 8
#' bytes). R then holds that
#' much memory before it collects. On an H200 and its 16-core host, a
#' process's first call over 200,000 datasets of 100 observations (10 starts
#' each, `cuda-batched`) took 0.94-0.96 s so, against 1.29-1.63 s with R's
#' defaults (`inst/bench/r-heap.R`). The collector's time shows in
#' `timings` (below), mostly in `result`.
#'
#' @section Spurious solutions:
#' A mixture likelihood is unbounded: a component squeezed onto a few nearly
#' tied observations, with a tiny spread, drives it up without meaning
#' anything (McLachlan & Peel 2000, section 3.10), and the more starts, the
#' likelier one of them ends there. So a start is admissible only when no
#' component is far narrower than the widest (Hathaway's constraint on the
#' ratio of component scales; the inverse Gaussian's standard deviation is
#' \eqn{\sqrt{\mu^3/\lambda}}{sqrt(mu^3/lambda)}), no component is both
#' small and narrow, and no component is a spike on heaped values: fewer
#' than three distinct values of the data within two standard deviations of
#' its mean (`control$spurious.*`, see [bulkem_control()]). The best admissible start wins; if
#' none is admissible, the best start is returned with `spurious = TRUE`. The
#' estimates are plain maximum-likelihood EM estimates: the screen chooses
#' among starts, it does not change any start's EM. Every engine applies the
#' same screen. With several `num.components`, BIC (or `criterion`) chooses
#' among the fits that converged and passed the screen. A call whose fits did not all converge,
#' pass the screen and fit valid data gives one warning of class
#' `bulkem_warning_convergence` with the counts (also in its field `counts`:
#' `max_iters`, `failed`, `spurious`, `invalid` and `saddle`, the fits that
#' converged to a saddle point rather than a maximum and could not be moved
#' off it; their message says so and more starts usually find the maximum).
#' The warning also comes, and says so, when with several `num.components`
#' a fit kept its K only because a K of lower (or no) BIC was spurious,
#' failed, stopped at `max.iters` or was invalid (its field `chosen_over`
#' counts them; see [bulkem_compare()]); it names, for the first spurious
#' fit or K, the observations its suspect component sits on (with
#' `control = list(keep.data = TRUE)`; without, it says to keep them). For
#' the inverse Gaussian it counts the datasets that are invalid because
#' they hold values <= 0 (field `not_positive`) and suggests the `subset`
#' that drops them. [print()][print.bulkem] and [summary()][summary.bulkem]
#' of the result count the same fits, and fragile ones (reached by one
#' start only).
#'
#' @section Saddle points:
#' EM can stop at a saddle point of the likelihood, typically two components
#' merged into one between two groups, where its steps shrink to nothing and
#' the convergence rule is met; about 1 in 20 starts on two well-separated
#' Normal groups. The observed information there is not positive definite.
#' Such a winning start is continued: EM from points a step away on either
#' side along the direction in which the log-likelihood rises fastest (the
#' eigenvector of the information's most negative eigenvalue; steps of
#' about 0.5 and 4 complete-data standard errors), the best converged,
#' admissible end that beats the saddle replacing it. The fit's message then
#' says "continued from a saddle point (log-likelihood ...)",
#' `num_iterations` counts both legs and `starts_at_best` is 1. A fit that
#' cannot be moved off stays, counted as `saddle` in the warning. The
#' information is what shows a saddle, so with `control$standard.errors =
#' FALSE` none is looked for.
#'
#' @section Ties and collapse:
#' On data with many ties (values rounded to a resolution, such as
#' `iris$Sepal.Length` in tenths of a centimetre) most random starts run
#' into a component collapsing onto one tied value, where the likelihood is
#' infinite; such a start fails (status "failed", reason "collapsed onto a
#' point"), and with 20 starts every start of a dataset sometimes does. A
#' dataset left without an admissible finished start then gets
#' `random.inits` fresh starts, up to `control$restarts` times (the remedy
#' mixtools' `normalmixEM` applies per start). The estimates stay plain
#' maximum-likelihood EM estimates: nothing constrains or penalises the EM,
#' so a fit's parameters never depend on a constraint that bound. A floor on
#' the components' standard deviations tied to the data's resolution was
#' measured as the alternative and rejected: it turns collapse into narrow
#' spikes that the screen rejects anyway, or, set high enough to stop them,
#' binds on true components (`inst/bench/results-restarts.md`).
#'
#' @param datasets The data, in one of these forms (see "Input" below):
#'   a list of numeric vectors, one per dataset (lengths may differ; names
#'   are kept), or a single numeric vector; a formula `value ~ group` with
#'   `data`, as for [lm()]; or a data frame in long form with `value` and
#'   `group`. Multivariate data (one matrix of observations in rows and
#'   variables in columns per dataset) come as a list of numeric matrices
#'   with the same columns, a formula with a matrix response
#'   (`cbind(CD4, CD8) ~ sample`), or a data frame with several `value`
#'   columns; see `covariance` and [bulkem-multivariate]. A single matrix
#'   is an error: give `list(m)` for one multivariate dataset, or
#'   `asplit(m, 2)` for one dataset per column.
#'
#'   Censored values (a response deadline: a reaction time known only to
#'   exceed it; a detection limit) come as a [survival::Surv()] response,
#'   `Surv(rt, observed) ~ subject` (right-censored: `observed` `FALSE`
#'   where the value is only known to exceed `rt`), `Surv(rt, observed,
#'   type = "left")` (known only to lie below), or `type = "interval2"`
#'   (`Surv(lower, upper, type = "interval2")`, `NA` for an open end); or
#'   as a list of such `Surv` objects, one per dataset. Each censored value
#'   adds log(F(upper) - F(lower)) of its window to the likelihood
#'   (within `truncation`'s window, and renormalised with the rest, when
#'   both are given); its E-step takes each component's share of the
#'   window, its M-step (a Newton step per component from where it was)
#'   the windows' masses, and the standard errors their information. A
#'   fit's `n` counts the observed values, `censored` the censored ones,
#'   `nobs` (BIC's n) both; `predict()`, `augment()`, ICL's classification
#'   term and `control$keep.data` see the observed values. For every family
#'   but the t and the ex-Gaussian, on the `cpu` and `cuda-streams` engines
#'   (`cuda-batched` refuses it; a GPU call left to choose runs on
#'   `cuda-streams`); with `equal.scale`, values held `fixed` (weights too,
#'   where there is no truncation), `weights` (in the formula interface;
#'   a censored row's weight is its count) and a `noise` component, which
#'   takes its uniform's share of each censored window (none of a window
#'   outside its support: the default support, the observed values' range,
#'   holds no value censored above it, so give `noise.support` to let the
#'   noise reach past a deadline).
#'   `bulkem_bootstrap()` refits censored fits kept with their data
#'   (`control = list(keep.data = TRUE)`), censoring each replicate as the
#'   data were. `control$future`'s shards carry each dataset's
#'   censored values.
#'
#'   Binned data (mixdist's): a list of histograms, each `hist(x, plot =
#'   FALSE)` or a list with `breaks` (increasing; finite but for the first,
#'   which may be `-Inf`, and the last, which may be `Inf`: open outer bins
#'   such as "over 10 s") and `counts` (one per bin), one per dataset. Each
#'   bin's count is interval-censored in its bin, count * log(F(upper) -
#'   F(lower)); the bins' midpoints (an open bin's finite edge) serve the
#'   rescaling, the random starts and the spurious screen only (a
#'   fit's `n` counts the bins that hold any, `censored` and `nobs` the
#'   observations). As censored values otherwise; not yet with `shift` or
#'   `control$future`.
#' @param num.components Number of mixture components, a whole number from 1
#'   to 8; or several (e.g. `1:4`): every dataset is then fitted with each of
#'   them in the same call and its fit with the lowest `criterion` (BIC by
#'   default) is returned, with
#'   `num_components` (the K chosen), `by_k` (a data frame of `K`,
#'   `loglik`, `aic`, `bic`, `icl` and `status` for every K), `all_k` (every
#'   K's fit, a list of `bulkem_fit`s: the chosen one first, then the others
#'   by ascending K; each the fit a call with that K alone makes) and
#'   `criterion` (the criterion's name) added.
#'   `K = 1` has a closed form, reached from one start.
#' @param max.iters Maximum number of EM updates per start (E-step passes
#'   that move the parameters; with `control$accelerate`, extrapolated
#'   passes count too). The default, 5000 (100 in the 2015 bulkem), was
#'   chosen by measurement: on a corpus of 120 simulated and real datasets,
#'   with 20 starts, no returned fit stopped here (with plain EM 1.7% did at
#'   2000; with the 2015 defaults, 48%; with SQUAREM none from 500 on); only
#'   starts that have not converged run longer. See
#'   `inst/bench/results-defaults.md`.
#' @param random.inits Number of random starts per dataset. The default, 20
#'   (1 in the 2015 bulkem), was chosen by measurement on the same corpus:
#'   it is the fewest starts that reached the best admissible optimum known
#'   (from 200 starts) on every dataset whose optimum has no component of
#'   fewer than 20 observations (10 starts: 98.7%, 1 start: 77%); on the whole
#'   corpus 20 starts reached it on 91% (1 start: 64%, 50 starts: 94%, at 2.5
#'   times the cost). Optima with a smaller component are found by few starts
#'   (0.4 to 3% of them there): when they matter, give more starts, and read
#'   `starts_at_best`. See `inst/bench/results-defaults.md`. Against
#'   stronger references (the best of 1,000 random and 200 partition starts;
#'   on a held-out corpus of 100 simulated datasets with minor modes, 2,000
#'   and 400), 20 random starts reach them on 87.5-88.3% and 73.7-77.8%
#'   (seeds 2 and 3), `control$starts = "partition"` on 92.5-96.7% and
#'   83.8-85.9% with fewer E-step passes, and `control$refine = 2` adds up
#'   to 6 points (`Rscript inst/bench/starts.R corpus=defaults ref=1000`,
#'   `corpus=heldout ref=2000`; `inst/bench/results-starts.md`). Since
#'   2026-11-28 the starts are by default the best `random.inits` of many
#'   short runs of partition starts (`control$short.runs`, by K): they
#'   reach the best optimum of 2,400 starts on 97.5-98.3% of the defaults
#'   corpus and 89.9-93.9% of the held-out one (seeds 2-5), where 20 mixed
#'   starts reached 91.7-96.7% and 79.8-83.8%.
#' @param use.gpu `NA` (default) uses a usable CUDA GPU and otherwise the
#'   CPU; `TRUE` requires a GPU (an error if there is none); `FALSE` uses the
#'   CPU. With `NA`, a GPU that is present but fails (driver, compiler, memory)
#'   is reported in one message and the call runs on the CPU. See
#'   [bulkem_gpu_info()] for what bulkem sees.
#' @param epsilon Convergence threshold: a start stops when an update raises
#'   the log-likelihood by less than this. The winner is then
#'   polished to the maximum (see Details).
#' @param verbose If `TRUE`, reports the engine, threads and timing with
#'   [message()] (one line before the fit and one after). It does not turn
#'   on a progress bar: progress goes through progressr (see "Progress").
#' @param family Component family: `"invgauss"` (inverse Gaussian, positive
#'   data; parameters mean `mu` and shape `lambda`, statmod's
#'   parameterisation, dispersion `1 / lambda`), `"normal"` (mean `mu`,
#'   standard deviation `sigma`), `"lognormal"` (positive data; `mu` and
#'   `sigma` are the mean and standard deviation of `log(x)`, `meanlog` and
#'   `sdlog` of [stats::dlnorm()]; fitted exactly as the Normal on `log(x)`,
#'   its log-likelihood that of `x`), `"gamma"` (positive data; mean `mu`
#'   and `shape`, [stats::dgamma()] with `shape = shape, rate = shape / mu`),
#'   `"t"` (location `mu`, scale `sigma`, degrees of freedom `df`) or
#'   `"exgauss"` (the ex-Gaussian: Normal `mu` and `sigma` plus an
#'   exponential of mean `tau`). See "Parameterisation".
#' @param seed A whole number from 0 to 2^53 that fixes the random starts.
#'   `NULL` (default) draws one from R's random number generator, so
#'   [set.seed()] before the call makes it reproducible.
#' @param control Further settings: the value of [bulkem_control()], or a
#'   named list of its arguments (e.g. `list(threads = 4)`), which it checks.
#'   See [bulkem_control()] for every setting.
#' @param ... Nothing: the arguments after it are matched by their full
#'   names only, and anything else given is an error (it catches misspelt
#'   argument names).
#' @param noise If `TRUE`, every mixture gets a noise component besides its
#'   `num.components` components: a uniform density over `noise.support`,
#'   whose weight is estimated with the others (mclust's noise component).
#'   A few gross outliers then go to the noise instead of taking a
#'   component or stretching one. Each fit reports the weight as `noise`
#'   and the support as `noise_support`; [predict()][predict.bulkem_fit]
#'   and [augment()][augment.bulkem] give each observation's probability of
#'   being noise (column `noise`, `.noise`); AIC and BIC count the weight as
#'   one more parameter. Every engine fits it (`cuda-batched` in double
#'   precision only: `control$precision = "mixed"` is an error with it).
#' @param noise.support Where the noise component's density lives, in the
#'   data's units: `NULL` (default) for each dataset's range, `c(lower,
#'   upper)` for every dataset, or one pair per dataset (a list of such
#'   pairs, `NULL` for a dataset's range, or a two-column matrix).
#'   Observations outside it cannot be noise. Only with `noise = TRUE`.
#'   For multivariate data a box: `NULL` for each dataset's bounding box,
#'   a d x 2 matrix of lower and upper bounds (a row per variable, by name
#'   when the rows are named) for every dataset, or a list of one such
#'   matrix (or `NULL`) per dataset; a box must hold its dataset's
#'   observations (else that dataset is `"invalid"`, its message says why).
#' @param df With `family = "t"`: `NULL` (default) estimates each
#'   component's degrees of freedom; one number fixes every component's
#'   (e.g. `df = 4`), and with one `num.components`, K numbers fix each
#'   component's, by ascending starting `mu` (the order fits are reported
#'   in, unless two components cross while fitted). Degrees of freedom lie in \[0.5, 200\]: at 200 the t is
#'   the Normal to within what data can tell.
#' @param covariance For multivariate data: the structure of the
#'   components' covariance matrices, `"full"` (the default: each
#'   component its own, mclust's VVV), `"tied"` (one matrix shared by all,
#'   EEE), `"diagonal"` (each its own diagonal matrix, VVI) or
#'   `"spherical"` (each its own multiple of the identity, VII). Multivariate
#'   data are fitted with multivariate normal components (`family`
#'   defaults to `"normal"` for them) or, with `family = "t"`, multivariate
#'   Student's t components (location `mu`, scale matrix `sigma` of the
#'   structure, degrees of freedom `df` per component, estimated by ECM or
#'   all fixed by one number `df`) by exact EM, on the CPU engine or on
#'   GPUs (`cuda-batched`, chosen as for univariate data; `cuda-streams`
#'   does not take them; at most 10 variables on a GPU), with
#'   `random.inits` starts each seeded by D² weighting (k-means++) and the
#'   spurious-solution screen applied to the covariances' eigenvalues (a
#'   component flattened or squeezed far below the widest is spurious);
#'   each fit has `mu` (K x d), `sigma` (d x d x K), `alpha`, `covariance`
#'   and the univariate fits' summary fields; `noise = TRUE` adds a uniform
#'   component over each dataset's bounding box. Univariate
#'   data take no `covariance`.
#' @param criterion What chooses K among several `num.components` (the lowest
#'   value wins, among the fits that converged and passed the screen):
#'   `"bic"` (the default), `"icl"` or `"aic"`. ICL, the integrated
#'   completed likelihood (Biernacki, Celeux and Govaert 2000), is BIC
#'   minus twice the sum over the observations of the log of their largest
#'   posterior probability (a noise component's included), as
#'   [mclust::icl()] computes it (with the sign of bulkem's BIC: lower is
#'   better); it penalises components that overlap, so it tends to choose
#'   fewer, well-separated components where BIC fits a skewed or
#'   heavy-tailed group with two. Every fit has `aic`, `bic` and `icl`
#'   whatever the criterion.
#' @param init Starting values of your own, run as extra starts beside the
#'   `random.inits` random ones: `NULL` (the default, none);
#'   one start, a list with `mu` and the family's shape (`lambda`, `sigma`
#'   or `shape`, one per component), optionally `alpha` (equal weights when
#'   missing), for Student's t `df` (else the usual starting value; not with
#'   bulkem()'s `df`), and with `noise = TRUE` the noise's weight `noise`
#'   (`alpha` and `noise` then sum to 1), used for every dataset; a list of
#'   such starts; a list of starts (or one, or `NULL`) by dataset name; or
#'   a `bulkem` result of the same datasets, whose fits (every K's, with
#'   several; those of Ks not in `num.components` left out) start the
#'   refit. A start of K components is run with that K only, and K must be
#'   among `num.components`. The j-th start of a K is
#'   numbered after every start the random, restart and refinement rounds
#'   may take, `random.inits * (control$restarts + 1) + control$refine * K +
#'   j`, so `best_start` says whether one of yours won (a tie goes to the
#'   random start) and the random starts are the draws they are without
#'   `init`; `starts_run` counts yours. For multivariate data a start is a
#'   list with `mu`, a K x d matrix (a row per component; for K = 1 a
#'   vector of d), `sigma`, a d x d x K array of covariance matrices (for
#'   K = 1 a d x d matrix), optionally `alpha`, `noise` and for Student's t
#'   `df` (one value or K), rows, columns and slices matched to the
#'   variables by name where named; each covariance is made into the
#'   `covariance` structure's before the fit starts (a full matrix given to
#'   a `"diagonal"` fit keeps its diagonal; `"spherical"`, its mean
#'   variance; `"tied"`, the weights' average of the components'), and the
#'   j-th start of a K is numbered `random.inits * (control$restarts + 1) +
#'   j` (plus `control$short.runs` where given). A multivariate `bulkem`
#'   result starts the refit as a univariate one does.
#' @param equal.scale If `TRUE`, one shape shared by the components: equal
#'   variances for the Normal (mclust's "E" model), equal `sigma` for
#'   the lognormal (on the logarithms) and Student's t (its scale; `df`
#'   still per component), equal `lambda` for the inverse Gaussian, equal
#'   `shape` for the gamma; K - 1 fewer free parameters in AIC, BIC and ICL
#'   (`2K` instead of `3K - 1`). Its M-step pools the components' shape
#'   statistics weighted by their expected counts (the exact maximisation
#'   under the constraint); the standard errors come from the constrained
#'   information (every component's shape has the common one's). The
#'   Newton polish takes the fit to the maximum in the constrained
#'   parameters (for the t, each component's `df` its own free parameter,
#'   held at its bound where its maximum lies beyond), and a fit at a
#'   saddle point is not continued from it. Univariate data only (multivariate data have
#'   `covariance = "tied"`); `bulkem_bootstrap()` refits its replicates with
#'   one shared shape too.
#' @param weights A weight for each observation: frequency weights (a fit
#'   with integer weights is the fit of the data with each value repeated
#'   that many times) or case weights, finite and >= 0. For a list of
#'   datasets, a list as long as it of numeric vectors as long as each
#'   dataset (a multivariate dataset: one weight per row; `NULL` for a
#'   dataset without weights; for a list of `Surv`
#'   objects one weight per row, a censored row's weight its window's
#'   count, as in the formula interface); for a formula or a data
#'   frame, as [lm()] takes them: an expression evaluated in the data, e.g.
#'   `weights = count`, a row's weight dropped with it by `subset` and
#'   `na.action`. Every sum of the E-step, the log-likelihood, the standard
#'   errors, AIC, BIC (whose n is the sum of the weights, each fit's
#'   `nobs`) and ICL are weighted; the starts, the spurious screen's count
#'   of distinct values, the refinement's regions and a noise component's
#'   range look at the values alone (a multivariate start draws its seeds
#'   with probability proportional to weight times D², so a row of weight
#'   0 never seeds). Every engine fits them (not with
#'   `control$precision = "mixed"`).
#'   `bulkem_bootstrap()` takes fits of whole-number (frequency) weights
#'   kept with their data (`control = list(keep.data = TRUE)`, which keeps
#'   each fit's `weights` beside its `data`) as the data they stand for.
#' @param fixed Parameters held at given values (as mixtools'
#'   `mean.constr`, `sd.constr`): a list of `alpha`, `mu` and the family's
#'   shape (`lambda`, `sigma` or `shape`), each one value per component with
#'   `NA` where free, e.g. `list(mu = c(NA, 0), sigma = c(NA, 1))` for a
#'   second component fixed at the standard Normal, for every dataset; or
#'   such lists (or `NULL`) by dataset name, each dataset its own values
#'   (a dataset not named fixes nothing). In the data's units (the
#'   lognormal's `mu` and `sigma` on the log scale), with one K
#'   (`num.components`). Every start takes the fixed
#'   values (the free weights, and the noise's, sharing what fixed weights
#'   leave), and every M-step keeps them while it maximises over the others
#'   (a fixed mean's component gets the shape that is best given it); AIC,
#'   BIC and ICL count only the free parameters (each fixed mean and shape,
#'   and the weights the fixed ones determine, are not counted); the
#'   standard errors come from the information of the free parameters, a
#'   fixed value's being `NA`. Fits are still reported in ascending `mu`, a
#'   fixed value staying with its component: the fit's `fixed` says which.
#'   Fixed shapes do not go with `equal.scale = TRUE`; a fit at a saddle
#'   point is not continued from it; the Newton polish runs in the free
#'   parameters. Univariate data only. `bulkem_bootstrap()` refits the
#'   replicates of such fits with their values held (standard errors);
#'   its likelihood-ratio test for K does not apply to them.
#' @param truncation The window the data were observed in, for data cut
#'   off outside it (response times kept between cut-offs): `c(lower,
#'   upper)` for every dataset (`-Inf` or `Inf` for an open side), or one
#'   such pair per dataset (a list with `NULL` where a dataset is not
#'   truncated, or a two-column matrix). The likelihood is renormalised
#'   over the window, \eqn{\sum_i \log f(x_i) - n \log(F(upper) -
#'   F(lower))} with \eqn{f} and \eqn{F} the mixture's density and cdf;
#'   `alpha` are the mixture's weights before truncation, and each
#'   component's mean and shape are those of the untruncated component.
#'   A dataset with values outside its window is `invalid`. Fitted exactly
#'   by EM (the E-step is the untruncated mixture's; each M-step maximises
#'   every component's renormalised expected log-likelihood by Newton's
#'   method), with observed-information standard errors;
#'   [predict()][predict.bulkem_fit]'s densities and cdf, `quantile()`,
#'   `simulate()` and `plot()` are the truncated mixture's, and
#'   `bulkem_bootstrap()` refits them truncated. Every family but the t
#'   and the ex-Gaussian; with `equal.scale` and with values held `fixed`
#'   (the components' Newton steps then taken together, in the free
#'   parameters; with a weight held, the window's renormalisation couples
#'   them, and the free weights are then the best given the components),
#'   and with a `noise` component (its uniform's
#'   share of the window renormalises with the components' masses: give
#'   `noise.support = truncation` for contaminants spread over the window);
#'   not yet multivariate data; on the `cpu`
#'   and `cuda-streams` engines
#'   (`cuda-batched` refuses it, and a GPU call left to choose runs on
#'   `cuda-streams`).
#' @param shift `TRUE` fits components of x - shift: with
#'   `family = "invgauss"` the shifted Wald, and likewise shifted lognormal
#'   and gamma components (`family = "lognormal"`, `"gamma"`); one shift per
#'   dataset shared by its components (a response time's non-decision
#'   time), estimated with them. The shift
#'   maximises the profile log-likelihood (the mixture's maximum given the
#'   shift), found for every dataset at once by a grid below the smallest
#'   value and golden-section search, each step one bulkem() call on all
#'   the datasets shifted, so every engine, `truncation`, censored values
#'   and `weights` work as without it. Each fit gets `shift` and
#'   `shift_ci` (its 95% profile-likelihood interval, also `tidy()`'s row
#'   `shift` at `conf.level = 0.95`, which covers the
#'   shift far more often than shift ± 1.96 SE where the data pin it down
#'   loosely: `inst/bench/results-shift.md`), `mu` and the shape
#'   (`lambda`, `sigma` or `shape`) of the components of x - shift, AIC/BIC/ICL counting the shift, and standard
#'   errors and `vcov` from a numerical Hessian of the log-likelihood in
#'   every free parameter and the shift. `predict()`, `quantile()`,
#'   `simulate()` and `plot()` are of the shifted mixture. Where the
#'   likelihood still rises as the shift nears the smallest value (a spike
#'   at the leading edge; for a gamma component of shape < 1 without
#'   bound, where the shifted gamma's maximum does not exist), the shift
#'   found is the search's edge, and the fit's `message` says so. Costs about 80
#'   plain fits. One K only; with a `noise` component (its
#'   `noise.support`, given in the data's units, stays there while the
#'   components move with the shift; the default, the data's range, too)
#'   and `equal.scale`; values held `fixed` and `init`'s starts are of the
#'   components of x - shift (the starts join the grid's fits); not yet one
#'   shift per component.
#' @param data A data frame holding the variables of a formula `datasets`
#'   (or `formula`), as for [lm()]; variables not in it are looked up where
#'   the formula was written.
#' @param subset An expression evaluated in the data (a formula's `data`, or
#'   a data frame `datasets`) selecting the rows to use, as for [lm()], e.g.
#'   `subset = rt > 0.1`.
#' @param na.action What to do with missing values (`NA` and `NaN`), in every
#'   form of input: a function such as [na.omit()] (drop them),
#'   [na.exclude()] (the same here), [na.fail()] (an error if there are any)
#'   or [na.pass()] (keep them; a dataset holding one is then `"invalid"`),
#'   or its name. The default is `getOption("na.action")`, [na.omit()] in a
#'   standard R session, as for [lm()]. The fit of a dataset that lost values
#'   records in `n_dropped` how many; a data frame's
#'   rows whose group is missing belong to no dataset, and the result's
#'   attribute `na.action` lists every row dropped.
#' @param value,group For a data frame `datasets`: the name of the column of
#'   values and the name(s) of the grouping column(s), the same as the
#'   formula `value ~ group1 + group2` (any column names work here).
#' @param formula For a data frame `datasets`: `formula = value ~ group`, the
#'   same as `bulkem(value ~ group, data = datasets)` (kept for scripts that
#'   use it). Also `bulkem(formula = value ~ group, data = df)` works, as
#'   for [lm()].
#'
#' @returns A list of class `bulkem` with one element of class `bulkem_fit`
#'   per dataset, named as `datasets` was. Each fit is a list with
#'   \describe{
#'     \item{`lambda` (inverse Gaussian), `sigma` (Normal, lognormal) or
#'       `shape` (gamma), `mu`, `alpha`}{the fitted shape parameter, mean
#'       (the lognormal's meanlog) and weight of each component, in
#'       ascending `mu` (see "Parameterisation").}
#'     \item{`init_lambda`, `init_sigma` or `init_shape`, `init_mu`, `init_alpha`}{where the
#'       winning start began, component by component in the same order.}
#'     \item{`loglik`}{log-likelihood of the fitted parameters on the data.}
#'     \item{`num_iterations`}{EM updates made by the winning start.}
#'     \item{`fit_success`}{`TRUE` if some start produced a fit.}
#'     \item{`family`, `n`, `k`}{the family, the number of observations and
#'       the number of components.}
#'     \item{`converged`}{`TRUE` if the winning start met the convergence rule.}
#'     \item{`status`}{`"converged"`, `"max_iters"` (stopped at `max.iters`),
#'       `"failed"` (every start degenerated) or `"invalid"` (the data cannot
#'       be fitted: too few observations, `Inf`, `NA`/`NaN` kept by
#'       `na.action = na.pass`, values <= 0 for the inverse Gaussian, all
#'       values equal, values too many orders of magnitude apart, or values
#'       so small that their scale is below the smallest normal double,
#'       2.2e-308).}
#'     \item{`message`}{why, for anything but `"converged"`. A converged fit
#'       has `""` unless something about it needs saying, then it says so
#'       (several such parts are separated by "; "): `"spurious: ..."` (no
#'       start passed the spurious-solution screen; `spurious` is `TRUE`),
#'       `"continued from a saddle point (log-likelihood ...) to a
#'       maximum"` or `"... to a point ... higher (log-likelihood ...) that
#'       is not a local maximum either"` (see "Saddle points"), `"no
#'       standard errors: ..."` (the
#'       observed information is singular or not positive definite; see
#'       [vcov.bulkem_fit()]), or, with several `num.components`, `"no K gave
#'       a converged fit that passes the spurious-solution screen; ..."`. So
#'       test `status`, not `message`, for convergence.}
#'     \item{`best_start`}{index (from 1) of the winning start.}
#'     \item{`starts_ok`}{how many starts ended without degenerating.}
#'     \item{`starts_run`}{how many starts were run: `random.inits`, times
#'       the rounds `control$restarts` added.}
#'     \item{`nobs`}{the n of BIC: the sum of the weights with `weights`,
#'       else `n`.}
#'     \item{`aic`, `bic`}{information criteria with `3 * K - 1` parameters
#'       (more with a noise component or estimated `df`).}
#'     \item{`icl`}{the integrated completed likelihood: `bic` minus twice
#'       the sum of the log of each observation's largest posterior
#'       probability (see `criterion`).}
#'     \item{`starts_at_best`}{how many starts reached the winning
#'       log-likelihood (within 1e-6 of it, relative): a confidence measure
#'       for the optimum; 1 means it was found once, and more starts may find
#'       better.}
#'     \item{`spurious`}{`TRUE` when no start passed the spurious-solution
#'       screen and the fit returned is the best of the rejected ones.}
#'     \item{`spurious_starts`}{how many finished starts the screen rejected.}
#'     \item{`loglik_spurious`}{the highest log-likelihood of a rejected start
#'       where it beat the returned fit's, else `NA`.}
#'     \item{`se`, `vcov`}{standard errors of all `3 * K` parameters (named
#'       `alpha1`, .., `mu1`, .., `lambda1` or `sigma1`, ..) and the
#'       covariance matrix of the `3 * K - 1` free ones (all but `alphaK`),
#'       from the observed information; `NA` when it is singular, and
#'       `message` says why. With `noise = TRUE`, `se` ends with the noise
#'       weight's (`noise`) and `vcov` covers `alpha1` .. `alphaK` (the
#'       noise weight is then the one the others determine). With
#'       `family = "t"` and `df` estimated (`"exgauss"`), `df1` .. `dfK` (`tau1` .. `tauK`) follow the
#'       scales in both. See [vcov.bulkem_fit()] and
#'       [confint.bulkem_fit()]. A multivariate fit's are named and ordered
#'       as [bulkem-multivariate] says ("Standard errors"), and are `NULL`
#'       when the information is singular.}
#'     \item{`noise`, `noise_support`}{with `noise = TRUE`: the noise
#'       component's weight and its support (lower, upper); otherwise
#'       `NA`.}
#'     \item{`fixed`}{with `fixed`: the K weights, K means and K shapes
#'       held fixed, `NA` where free, in the fit's component order; else
#'       `NULL`.}
#'     \item{`truncation`}{with `truncation`: the dataset's window
#'       `c(lower, upper)`; else `NULL`.}
#'     \item{`censored`}{the number of censored values (a `Surv`
#'       response) beside the `n` observed ones; 0 without.}
#'     \item{`shift`, `shift_ci`}{with `shift = TRUE`: the estimated shift
#'       and its 95% profile-likelihood interval.}
#'     \item{`df`}{with `family = "t"`: each component's degrees of
#'       freedom, with the attribute `fixed` (`TRUE`) where the argument
#'       `df` fixed them; `NULL` for the other families.}
#'     \item{`tau`}{with `family = "exgauss"`: each component's exponential
#'       mean; `NULL` for the other families.}
#'     \item{`data`, `rows`}{with `control$keep.data`: the dataset's values
#'       and, for a formula or a data frame, the row of the caller's data
#'       each came from (so `augment(fits, data = df)` can put results back
#'       in place).}
#'     \item{`far`}{only in the fit of a dataset with values far from the
#'       rest of its data: those values, named by their positions in the
#'       dataset. Far means beyond Tukey's fences drawn wide: more than 4
#'       interquartile ranges beyond the quartiles where the family's tail
#'       is light, 10 where it may be heavy, judged on the logarithms for
#'       the families of positive values (`"invgauss"`, `"lognormal"`,
#'       `"gamma"`: 4 above, 10 below), on the values for `"normal"` (10 on
#'       both sides: Normal components often cover skewed data) and
#'       `"exgauss"` (4 below, 10 above, its exponential tail); and at most
#'       1% of the dataset's values (at least one), in a
#'       dataset of 10 or more. Such values, a response time of 1e3 s
#'       among values of 0.3-2 s, bend a fit toward them (or leave K = 2
#'       spurious). A very skewed component's own sample holds such a
#'       value now and then (2 of the 10,000 simulated inverse Gaussian
#'       datasets of benchmark B2, whose second component has shape 0.2 at
#'       mean 3): the mark says where to look, not that a value is wrong.
#'       Not looked for with `family = "t"` or `noise = TRUE`
#'       (such fits take these values) or `weights`. The call's warning,
#'       `print()`, `summary()` and `glance()` (column `far`) name them.}
#'     \item{`censored_windows`}{with `control$keep.data` and censored values
#'       (or a histogram): their windows, flat (lower, upper, count)
#'       triples, which [bulkem_bootstrap()] draws its replicates with.}
#'     \item{`n_dropped`}{only in the fit of a dataset from which `na.action`
#'       dropped missing values (as [lm()] has `na.action` only when it
#'       dropped rows): how many (`n` counts those that remained).}
#'   }
#'   Without a fit, parameters are `NA` vectors and `loglik`, `aic`, `bic`,
#'   `icl` are `NA`. Methods: [print.bulkem()], [summary.bulkem()] (one row per
#'   dataset) and [summary.bulkem_fit()] (one fit, with standard errors),
#'   [as.data.frame.bulkem()], [coef.bulkem()], `logLik()`, `AIC()`, `BIC()`,
#'   `nobs()`, `deviance()` ([bulkem-ic], one value per dataset),
#'   [vcov.bulkem_fit()], [confint.bulkem_fit()], `tidy()`, `glance()`,
#'   `augment()` ([bulkem-tidy]), [predict.bulkem_fit()] (posteriors,
#'   classes, uncertainty, density, cdf), [quantile.bulkem_fit()],
#'   [simulate.bulkem_fit()], [plot.bulkem_fit()], [bulkem_compare()] (the
#'   datasets x K table) and [c.bulkem()]. The result's attributes `engine`, `threads`, `elapsed`
#'   (seconds), `seed`, `family`, `num.components`, `em_iterations` (E-step
#'   passes over a dataset, summed over all starts), `kernel_launches` (CUDA
#'   launches; 0 on the CPU), `kernel_seconds` (time spent waiting on
#'   `cuda-batched` kernels, summed over its host workers) and `timings`
#'   (seconds by phase: checking the
#'   arguments in R, `setup` (reading the datasets into the compiled core,
#'   allocating the result's list), rescaling the datasets (once, whatever the number of
#'   Ks), the engine (and, for `cuda-batched`, its own phases, summed over
#'   its four host workers per GPU, which overlap: they add up to more than
#'   the engine's time), finishing the
#'   fits, choosing K, building the R result, R's work `after` the compiled
#'   core returned (names and kept data attached to the fits; a garbage
#'   collection of R's, where one falls there), and the total: everything
#'   the call waited for, as `elapsed`) record the call. R's main thread
#'   builds each fit's R list as soon as the fit is final, while the engine
#'   works on the others (on a GPU engine it also makes the lists of the
#'   fits still to come), so `result` is what was left to build once the
#'   engine and the finishing were done. With `control$future`
#'   they are combined over the shards: `elapsed` is the wall time of the
#'   whole call, `em_iterations`, `kernel_launches` and `kernel_seconds` are
#'   summed, `engine` lists the engines the shards used, `threads` sums the
#'   threads of the distinct worker processes, `timings` has `check`,
#'   `shards` (waiting for the workers), `result` and `total`, and the
#'   attribute `shards` is a data frame with one row per shard (`shard`,
#'   `first` and `last` dataset, `engine`, `threads`, `worker` (host and
#'   process id) and the shard's own `elapsed`). `na.action`, when rows
#'   of a data frame were dropped, lists them (as [na.omit()] records them).
#'   For a formula or a data frame, `groups` holds the datasets' group keys
#'   (a data frame, one row per dataset in the result's order and one column
#'   per grouping variable, e.g. `subject` and `cond` for `rt ~ subject +
#'   cond`; absent for `value ~ 1`) and `response` the values' expression
#'   (`"rt"`): [tidy()][bulkem-tidy], `glance()` and `augment()` add the
#'   group columns, and `augment(fits, data = df)` puts results back in the
#'   caller's rows. Every result is made by one constructor, so these
#'   attributes are the same whichever way it was made (sharded, `c()`,
#'   `[`).
#'
#' @examples
#' set.seed(1)
#' x <- c(rnorm(300, 0, 1), rnorm(200, 4, 0.5))
#' fits <- bulkem(list(a = x, b = x * 2), num.components = 2,
#'                random.inits = 5, family = "normal", control = list(threads = 1))
#' fits$a$mu
#' fits$b$sigma
#'
#' # one dataset per subject, from a long data frame
#' df <- data.frame(subject = rep(c("s1", "s2"), each = 200),
#'                  rt = c(rnorm(200, 0.5, 0.1), rnorm(200, 0.7, 0.15)))
#' by_subject <- bulkem(df, value = "rt", group = "subject", num.components = 1,
#'                      family = "normal", control = list(threads = 1))
#' names(by_subject)
#'
#' # the same with a formula, as for lm(); the left-hand side is evaluated
#' by_formula <- bulkem(rt ~ subject, data = df, num.components = 1,
#'                      family = "normal", control = list(threads = 1))
#' identical(by_formula$s1$mu, by_subject$s1$mu)
#' log_rt <- bulkem(log(rt) ~ subject, data = df, subset = rt > 0.3,
#'                  num.components = 1, family = "normal",
#'                  control = list(threads = 1))
#' log_rt$s2$mu
#'
#' # missing values are dropped (na.action = na.omit) and counted per dataset
#' oz <- bulkem(Ozone ~ Month, data = airquality, num.components = 1,
#'              random.inits = 1, control = list(threads = 1))
#' vapply(oz, function(f) f$n_dropped, 0L)
#' # a list as well
#' one <- bulkem(list(a = c(x, NA)), num.components = 2, random.inits = 5,
#'               family = "normal", control = list(threads = 1))
#' one$a$n_dropped
#'
#' # progress through progressr, shown only when asked for
#' progressr::with_progress(
#'   fits <- bulkem(list(a = x, b = x * 2), random.inits = 5,
#'                  family = "normal", control = list(threads = 1))
#' )
#' @export
bulkem <- function(datasets, num.components = 2, max.iters = 5000,
                   random.inits = 20, use.gpu = NA, epsilon = 1e-6,
                   verbose = FALSE, family = c("invgauss", "normal", "lognormal", "gamma", "t", "exgauss"),
                   seed = NULL, control = list(), ...,
                   noise = FALSE, noise.support = NULL, df = NULL,
                   covariance = c("full", "tied", "diagonal", "spherical"),
                   criterion = c("bic", "icl", "aic"), init = NULL, weights = NULL, equal.scale = FALSE,
                   fixed = NULL, truncation = NULL, shift = FALSE, data = NULL, subset, na.action,
                   value = NULL, group = NULL, formula = NULL) {
  started <- proc.time()[["elapsed"]]
  check_dots(list(...))
  if (!missing(datasets) && inherits(datasets, "formula") && is.data.frame(num.components)) {
    # bulkem(y ~ g, df), as lm(y ~ g, df): the second argument is num.components
    stop_arg("the data frame of a formula goes by name, bulkem(", format(datasets),
             ", data = df): the second argument of bulkem() is `num.components`")
  }
  # control is checked once, here, so that its threads scan the datasets'
  # values; an error in it is raised below, after the datasets' errors
  checked_control <- tryCatch(check_control(control), error = identity)
  input <- make_datasets(
    datasets = if (!missing(datasets)) datasets, data = data,
    subset = if (!missing(subset)) substitute(subset),
    na.action = if (!missing(na.action)) na.action,
    value = value, group = group, formula = formula,
    given = c(datasets = !missing(datasets), data = !missing(data), na.action = !missing(na.action)),
    env = parent.frame(),
    threads = if (inherits(checked_control, "error")) 1L else checked_control$threads,
    weights = if (missing(weights)) {
      NULL
    } else if (weights_in_data(if (!missing(datasets)) datasets, formula)) {
      substitute(weights)
    } else {
      weights
    })
  datasets <- input$datasets
  multivariate <- isTRUE(input$multivariate)
  # (binned data's midpoints have weight 0: not the user's weights, unchecked)
  weights <- if (is.null(input$binned_weights)) check_weights(input$weights, datasets) else input$binned_weights
  if (!multivariate && !missing(covariance)) {
    stop_arg("`covariance` applies to multivariate data (a list of matrices, or a formula ",
             "with a matrix response); univariate data have one variance per component")
  }
  covariance <- check_choice(covariance, "covariance", covariance_structures)
  criterion <- check_choice(criterion, "criterion", criteria)
  check_flag(equal.scale, "equal.scale")
  if (multivariate && equal.scale) {
    stop_arg("`equal.scale` is for univariate data; multivariate data share one covariance ",
             "matrix with covariance = \"tied\"")
  }
  num.components <- check_components(num.components)
  if (multivariate && !is.null(fixed)) {
    stop_arg("`fixed` holds values of univariate mixtures; multivariate fits do not take them yet")
  }
  max.iters <- check_whole(max.iters, "max.iters", 1, .Machine$integer.max)
  random.inits <- check_whole(random.inits, "random.inits", 1, .Machine$integer.max)
  check_flag(use.gpu, "use.gpu", na_ok = TRUE)
  check_positive(epsilon, "epsilon")
  check_flag(verbose, "verbose")
  if (multivariate) {
    if (inherits(checked_control, "error")) stop(checked_control)
    family <- check_multivariate_args(family, !missing(family), noise, noise.support, df,
                                      checked_control, use.gpu)
  }
  family <- check_choice(family, "family", families)
  check_flag(noise, "noise")
  # (multivariate data's boxes are checked by fit_multivariate())
  if (!multivariate) noise.support <- check_noise_support(noise.support, length(datasets), noise)
  truncation <- check_truncation(truncation, length(datasets), multivariate)
  censored <- input$censored
  if (!is.null(input$binned_weights) && (isTRUE(shift) || isTRUE(checked_control$future))) {
    stop_arg("histograms (binned data) cannot be fitted with ", if (isTRUE(shift)) "`shift = TRUE`" else "control$future",
             " yet")
  }
  df <- check_df(df, family, num.components)
  fixed <- check_fixed(fixed, length(datasets), dataset_names(datasets), family, num.components, noise,
                       equal.scale)
  given <- if (multivariate) {
    check_mv_init(init, length(datasets), dataset_names(datasets), family, num.components, noise, df,
                  input$variables)
  } else {
    check_init(init, length(datasets), dataset_names(datasets), family, num.components, noise, df)
  }
  shift <- check_shift(shift, family, num.components, noise, equal.scale, fixed, init, multivariate)
  seed <- if (is.null(seed)) {
    sample.int(.Machine$integer.max, 1L)
  } else {
    check_whole(seed, "seed", 0, 2^53)
  }
  if (inherits(checked_control, "error")) stop(checked_control)
  control <- checked_control
  if (multivariate) {
    return(fit_multivariate(input, list(num.components = num.components, max.iters = max.iters,
                                        random.inits = random.inits, epsilon = epsilon,
                                        seed = seed, use.gpu = use.gpu, noise = noise,
                                        family = family, df = df, noise.support = noise.support,
                                        criterion = criterion, given = given, weights = weights),
                            control, covariance, verbose, started))
  }
  if (shift) {
    # shifted components: bulkem() on shifted data, shift by shift (R/shift.R)
    inner <- list(num.components = num.components, max.iters = max.iters, random.inits = random.inits,
                  use.gpu = use.gpu,
                  epsilon = epsilon, family = family, seed = seed, criterion = criterion,
                  noise = noise, equal.scale = equal.scale, fixed = fixed,
                  control = given_control(control, drop = c("keep.data", "keep.starts")))
    sh <- fit_shifted(datasets, weights, truncation, censored, inner, supports = noise.support, init = init)
    fits <- attach_inputs(sh$fits, datasets, input, control$keep.data, weights)
    r <- sh$result
    # far values judged on the data as given (the inner fits saw them shifted)
    fits <- attach_far(lapply(fits, function(f) `[[<-`(f, "far", NULL)), datasets, family, noise,
                       !is.null(weights), attr(r, "threads"))
    warn_convergence(attr(r, "counts"), length(fits), fits, datasets, input$response, length(num.components) > 1)
    return(new_bulkem(fits, engine = attr(r, "engine"), threads = attr(r, "threads"),
                      elapsed = proc.time()[["elapsed"]] - started, seed = seed, family = family,
                      num.components = as.integer(num.components), na.action = input$na.action,
                      groups = input$groups, response = input$response,
                      weighted = if (!is.null(weights)) TRUE))
  }
  if (control$future) {
    # sharded over the workers of the user's future::plan() (R/future.R)
    return(fit_future(input, list(num.components = num.components, max.iters = max.iters,
                                  random.inits = random.inits, use.gpu = use.gpu,
                                  epsilon = epsilon, family = family, seed = seed,
                                  noise = noise, df = df, criterion = criterion, equal.scale = equal.scale),
                      control, verbose, started, noise.support, given, weights, fixed, truncation))
  }
  engine <- choose_engine(use.gpu, control$engine,
                          streams_only = length(truncation) > 0 || !is.null(censored))
  run <- function(engine) {
    fit_(datasets, if (is.null(weights)) list() else weights, core_settings(family, num.components, max.iters, random.inits, epsilon, seed,
                                 control, engine, noise, noise.support, df, criterion,
                                 given_records(given), equal.scale, fixed_records(fixed, num.components),
                                 truncation, censored),
         reporter$update)
  }

  if (verbose) {
    message(sprintf(
      "bulkem: %d datasets, %s, %s component(s), %d start(s) each, on the %s engine",
      length(datasets), family, paste(num.components, collapse = ", "), random.inits, engine))
  }
  checked <- proc.time()[["elapsed"]]
  # progressr finishes it when this call exits, however it exits
  reporter <- progress_reporter()
  res <- run_with_fallback(run, engine, use.gpu)
  returned <- proc.time()[["elapsed"]]
  reporter$finish()
  engine <- res$engine
  fits <- res$fits
  if (control$keep.starts) fits <- attach_starts(fits, res$starts, family)
  fits <- attach_inputs(fits, datasets, input, control$keep.data, weights)
  # everything the caller waits for, R's share included
  finished <- proc.time()[["elapsed"]]
  elapsed <- finished - started
  if (verbose) {
    message(sprintf("bulkem: done in %.3f s (%s engine, %d thread(s))", elapsed, engine, res$threads))
  }
  timings <- c(check = checked - started, res$timings, after = finished - returned, total = elapsed)
  fits <- attach_far(fits, datasets, family, noise, !is.null(weights), res$threads)
  warn_convergence(res$outcomes, length(fits), fits, datasets, input$response, length(num.components) > 1)
  new_bulkem(fits, engine = engine, threads = res$threads,
             elapsed = elapsed, seed = seed, family = family,
             num.components = as.integer(num.components),
             em_iterations = res$em_iterations,
             kernel_launches = res$kernel_launches,
             kernel_seconds = res$kernel_seconds,
             timings = timings, na.action = input$na.action, groups = input$groups,
             response = input$response, weighted = if (!is.null(weights)) TRUE)
}

# bulkem()'s `...` takes nothing: it is there so that the arguments after it
# are matched only by their full names; anything in it is misspelt or
# misplaced.
check_dots <- function(extra) {
  if (length(extra) == 0) return(invisible(NULL))
  nms <- names(extra)
  if (is.null(nms)) nms <- rep("", length(extra))
  stop_arg("unknown argument(s) to bulkem(): ",
           paste(ifelse(nzchar(nms), nms, "<unnamed>"), collapse = ", "))
}

# What the fits carry of their input (`input`, make_datasets()'s value), in
# this order: the data and, for a formula or a data frame, each value's row
# in the caller's data (keep.data); and how many missing values na.action
# dropped, only in the fits of the datasets that lost any (as lm() has
# `na.action` only when it dropped rows): a fit depends on its own dataset
# alone, and clean data costs nothing here. Then the datasets' names.
attach_inputs <- function(fits, datasets, input, keep.data, weights = NULL) {
  n_dropped <- input$n_dropped
  if (keep.data) {
    fits <- Map(function(f, d) {
      f$data <- d
      f
    }, fits, datasets)
    # the weights beside the data (what bulkem_bootstrap() needs of them)
    if (!is.null(weights)) {
      fits <- Map(function(f, w) {
        f$weights <- w
        f
      }, fits, weights)
    }
    if (!is.null(input$rows)) {
      fits <- Map(function(f, r) {
        f$rows <- r
        f
      }, fits, input$rows)
    }
    # and the censored values' windows (flat lower, upper, count triples;
    # a histogram's bins marked `binned`), which the bootstrap draws with
    if (!is.null(input$censored)) {
      fits <- Map(function(f, w) {
        f$censored_windows <- structure(as.double(w), binned = if (!is.null(input$binned_weights)) TRUE)
        f
      }, fits, input$censored)
    }
  }
  lost <- which(n_dropped > 0)
  if (length(lost) > 0) {
    fits[lost] <- Map(function(f, k) {
      f$n_dropped <- k
      f
    }, fits[lost], n_dropped[lost])
  }
  names(fits) <- names(datasets)
  fits
}

# What chooses K among several (bulkem()'s `criterion`): the lowest wins.
criteria <- c("bic", "icl", "aic")
