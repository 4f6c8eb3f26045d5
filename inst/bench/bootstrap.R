# The parametric bootstrap (bulkem_bootstrap(), issue 13): speed against the
# peers, calibration and power of the likelihood-ratio test, coverage of the
# percentile intervals, and the GPU headline. Sections are chosen on the
# command line; each prints the machine, the command and markdown tables.
#
#   Rscript inst/bench/bootstrap.R [section ...] [key=value ...]
#
# Sections (default: all four):
#   peers        one or two Normal datasets (n = 500, 0.5 N(0,1) + 0.5 N(2.5,1))
#                side by side in one run: mclust::mclustBootstrapLRT
#                (modelName "V", maxG = 2), mixtools::boot.comp (max.comp = 2,
#                B = mixB) and bulkem_bootstrap(test = "lrt", max.components = 2)
#                on the CPU for 1 dataset and for peersN datasets in one call:
#                p-values, Monte-Carlo sd, seconds, seconds per dataset and
#                the extrapolation to 1,000 datasets; then standard errors of
#                the 2-component fit: observed information (tidy()),
#                bulkem_bootstrap(B = peersB), mclust::MclustBootstrap
#                (type "bs", and "pb", the parametric one) and mixtools::boot.se.
#   calibration  per family (normal, invgauss): N datasets of n = 200 from a
#                K = 1 model (test 1 vs 2) and from a well-separated K = 2 model
#                (test 2 vs 3), one bulkem_bootstrap(test = "lrt", B = Bcal) call
#                each: KS test of the p-values against the uniform, share of
#                p <= 0.05 and <= 0.10; power: N datasets with K + 1
#                well-separated components fitted with K, share rejected at 0.05.
#   coverage     per family: N datasets (n = 500) of a well-separated
#                2-component mixture, bulkem_bootstrap(B = Bcov) in one call:
#                coverage of the 95% percentile intervals per parameter (and of
#                the Wald intervals of tidy() for comparison).
#   gpu          N = 1,000 Normal datasets (n = 500, two components): K = 1
#                fits, bulkem_bootstrap(B = 999, test = "lrt", max.components = 2);
#                K = 2 fits, bulkem_bootstrap(B = 999) (standard errors).
#
# Options (key=value):
#   scale=1       multiplies N and B of calibration, coverage and gpu (N = 1000,
#                 Bcal = 199, Bcov = 199, Bgpu = 999 at scale 1; at least 2)
#   N=, B=        override the scaled N and B of calibration, coverage and gpu
#   peersB=999    B of mclust, bulkem and MclustBootstrap in `peers`
#   mixB=100      B of mixtools' boot.comp and boot.se
#   peersN=10     datasets in bulkem's many-dataset call of `peers`
#   peersD=1      datasets the peers run on (each is timed; slow)
#   peersEps=0.01 epsilon of an extra bulkem row in `peers` (mclust stops at a
#                 relative change of 1e-5, about 0.01 here; bulkem's default
#                 is an absolute 1e-6)
#   peersInits=20 random.inits of another bulkem row in `peers` (the default for
#                 K = 1 fits is one start per refit)
#   families=normal,invgauss   families of calibration and coverage (also
#                 lognormal, gamma: calibration only)
#   noise=0       1: every fit and refit of calibration with a noise component
#                 (bulkem(noise = TRUE)); the data as without
#   ks=1,2        the null K of calibration (1: test 1 vs 2; 2: test 2 vs 3)
#   gpu=          use.gpu of the bulkem calls in `gpu`: TRUE, FALSE or NA
#                 (default TRUE when bulkem_gpu_info() finds a usable GPU, else NA)
#   inits=        random.inits of every bulkem_bootstrap() call (default: the
#                 package default, the smallest starts_run of the fits)
#   precision=    control$precision of every bulkem_bootstrap() call ("double" or
#                 "mixed"; default: the package default, double)
#   accelerate=   control$accelerate of every bulkem_bootstrap() call, TRUE or
#                 FALSE (default: the package default, TRUE)
#   epsilon=      epsilon of every bulkem_bootstrap() call's refits (default:
#                 the package default, 1e-5)
#   seed=20261124 data and bootstrap seed
#
# e.g. the full study (GPU machine):  Rscript inst/bench/bootstrap.R
#      quick CPU check:  Rscript inst/bench/bootstrap.R calibration coverage gpu scale=0.02
#                        Rscript inst/bench/bootstrap.R peers peersB=99 peersN=3
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R")) # rmixture(), rinvgauss_msh()

cmd_args <- commandArgs(trailingOnly = TRUE)
is_opt <- grepl("=", cmd_args, fixed = TRUE)
sections <- cmd_args[!is_opt]
if (length(sections) == 0) sections <- c("peers", "calibration", "coverage", "gpu")
known <- c("peers", "calibration", "coverage", "gpu")
if (any(!sections %in% known)) stop("unknown section(s): ", paste(setdiff(sections, known), collapse = ", "),
                                    "; choose from ", paste(known, collapse = ", "), call. = FALSE)
opts <- list()
for (a in cmd_args[is_opt]) opts[[sub("=.*", "", a)]] <- sub("^[^=]*=", "", a)
opt_num <- function(name, default) if (is.null(opts[[name]])) default else as.numeric(opts[[name]])
scale <- opt_num("scale", 1)
seed <- as.integer(opt_num("seed", 20261124))
peersB <- as.integer(opt_num("peersB", 999))
mixB <- as.integer(opt_num("mixB", 100))
peersN <- as.integer(opt_num("peersN", 10))
peersD <- as.integer(opt_num("peersD", 1))
peersEps <- opt_num("peersEps", 0.01)
peersInits <- as.integer(opt_num("peersInits", 20))
inits <- if (is.null(opts$inits)) NULL else as.integer(opts$inits)
accelerate <- if (is.null(opts$accelerate)) NULL else as.logical(opts$accelerate)
precision <- opts$precision
epsilon <- if (is.null(opts$epsilon)) NULL else as.numeric(opts$epsilon)
calib_ks <- if (is.null(opts$ks)) 1:2 else as.integer(strsplit(opts$ks, ",")[[1]])
families <- if (is.null(opts$families)) c("normal", "invgauss") else strsplit(opts$families, ",")[[1]]
noise <- isTRUE(as.logical(opt_num("noise", 0)))
scaled <- function(full, key) {
  if (!is.null(opts[[key]])) return(as.integer(opts[[key]]))
  max(2L, as.integer(round(full * scale)))
}
gpu_info <- bulkem_gpu_info()
use_gpu <- if (is.null(opts$gpu)) (if (gpu_info$usable) TRUE else NA) else as.logical(opts$gpu)

# ---------------------------------------------------------------- helpers

md_table <- function(df, digits = 4) {
  fmt <- function(v) {
    if (is.numeric(v)) {
      out <- ifelse(is.na(v), "NA", formatC(v, digits = digits, format = "fg"))
      out <- trimws(out)
      ifelse(!is.na(v) & v == round(v) & abs(v) < 1e9, format(round(v), scientific = FALSE, trim = TRUE), out)
    } else as.character(v)
  }
  cells <- vapply(df, fmt, character(nrow(df)))
  if (is.null(dim(cells))) cells <- matrix(cells, nrow = nrow(df))
  cat("|", paste(names(df), collapse = " | "), "|\n")
  cat("|", paste(rep("---", ncol(df)), collapse = " | "), "|\n")
  for (i in seq_len(nrow(df))) cat("|", paste(cells[i, ], collapse = " | "), "|\n")
  cat("\n")
}

# wall seconds (and CPU seconds of this R process) of one expression
timed <- function(expr) {
  t0 <- proc.time()
  value <- force(expr)
  t <- proc.time() - t0
  list(value = value, seconds = t[["elapsed"]], cpu = t[["user.self"]] + t[["sys.self"]] +
         sum(t[c("user.child", "sys.child")], na.rm = TRUE))
}

quiet <- function(expr) {
  value <- NULL
  utils::capture.output(value <- suppressWarnings(suppressMessages(force(expr))))
  value
}

with_seed <- function(s, expr) {
  set.seed(s)
  expr
}

# N datasets of n draws from a mixture (shape: sigma or lambda)
simulate_sets <- function(N, n, m, s) with_seed(s, lapply(seq_len(N), function(i)
  rmixture(n, m$alpha, m$mu, m$shape, m$family)))

fit_sets <- function(sets, k, family, use.gpu = FALSE, noise = FALSE) {
  quiet(bulkem(sets, num.components = k, family = family, seed = seed, use.gpu = use.gpu, noise = noise,
               control = list(keep.data = TRUE)))
}

boot <- function(...) {
  a <- list(...)
  if (!is.null(inits)) a$random.inits <- inits
  if (!is.null(accelerate)) a$control <- c(a$control, list(accelerate = accelerate))
  if (!is.null(precision)) a$control <- c(a$control, list(precision = precision))
  if (!is.null(epsilon)) a$epsilon <- epsilon
  do.call(bulkem_bootstrap, a)
}

machine <- function() {
  cpu <- tryCatch(sub(".*: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
                  error = function(e) NA)
  gpu <- if (nrow(gpu_info$devices) > 0) {
    paste(sprintf("%s (%.0f GiB)", gpu_info$devices$name, gpu_info$devices$memory_gib), collapse = ", ")
  } else "none"
  cat(sprintf("- date: %s; machine: %s, %d cores; GPU: %s (usable: %s)\n", format(Sys.time(), "%Y-%m-%d %H:%M"),
              cpu, parallel::detectCores(), gpu, gpu_info$usable))
  cat(sprintf("- %s; bulkem %s; mclust %s; mixtools %s\n", R.version.string, utils::packageVersion("bulkem"),
              tryCatch(format(utils::packageVersion("mclust")), error = function(e) "-"),
              tryCatch(format(utils::packageVersion("mixtools")), error = function(e) "-")))
  cat(sprintf("- command: `Rscript inst/bench/bootstrap.R %s`\n", paste(cmd_args, collapse = " ")))
  cat(sprintf("- seed %d; random.inits of the bootstrap calls: %s; control$accelerate: %s; control$precision: %s\n\n", seed,
              if (is.null(inits)) "package default" else inits,
              if (is.null(accelerate)) "package default" else accelerate,
              if (is.null(precision)) "package default" else precision))
}

engine_of <- function(res) paste0(attr(res, "engine"), " (", attr(res, "random.inits"), " start(s))")

# the models
models <- list(
  peers = list(family = "normal", alpha = c(0.5, 0.5), mu = c(0, 2.5), shape = c(1, 1)),
  normal = list(
    list(family = "normal", alpha = 1, mu = 0, shape = 1),
    list(family = "normal", alpha = c(0.4, 0.6), mu = c(0, 5), shape = c(1, 1)),
    list(family = "normal", alpha = c(0.3, 0.4, 0.3), mu = c(0, 5, 10), shape = c(1, 1, 1))),
  invgauss = list(
    list(family = "invgauss", alpha = 1, mu = 1, shape = 5),
    list(family = "invgauss", alpha = c(0.4, 0.6), mu = c(1, 4), shape = c(20, 80)),
    list(family = "invgauss", alpha = c(0.3, 0.4, 0.3), mu = c(1, 4, 12), shape = c(20, 80, 400))),
  lognormal = list(
    list(family = "lognormal", alpha = 1, mu = 0, shape = 0.4),
    list(family = "lognormal", alpha = c(0.4, 0.6), mu = c(0, 1.5), shape = c(0.25, 0.3)),
    list(family = "lognormal", alpha = c(0.3, 0.4, 0.3), mu = c(0, 1.5, 3), shape = c(0.25, 0.3, 0.25))),
  gamma = list(
    list(family = "gamma", alpha = 1, mu = 1, shape = 5),
    list(family = "gamma", alpha = c(0.4, 0.6), mu = c(1, 4), shape = c(20, 30)),
    list(family = "gamma", alpha = c(0.3, 0.4, 0.3), mu = c(1, 4, 12), shape = c(20, 30, 60))),
  coverage = list(
    normal = list(family = "normal", alpha = c(0.4, 0.6), mu = c(0, 4), shape = c(1, 1.5)),
    invgauss = list(family = "invgauss", alpha = c(0.4, 0.6), mu = c(1, 4), shape = c(20, 80)))
)
describe <- function(m) {
  nm <- switch(m$family, normal = "N", lognormal = "LN", gamma = "Ga", "IG")
  paste(sprintf("%s %s(%s, %s)", format(m$alpha), nm, format(m$mu), format(m$shape)), collapse = " + ")
}

cat("# bulkem_bootstrap() benchmarks\n\n")
machine()
# loading and (on a GPU) kernel compilation stay out of the timings
invisible(quiet(bulkem_bootstrap(fit_sets(list(rnorm(100)), 1, "normal"), B = 2, test = "lrt", level = 0.5, seed = 1,
                                 use.gpu = FALSE)))

# ---------------------------------------------------------------- peers

section_peers <- function() {
  cat("## peers: the bootstrap LRT and standard errors against mclust and mixtools (CPU)\n\n")
  # MclustBootstrap() calls mclustBIC() unqualified: mclust must be attached
  suppressPackageStartupMessages(library(mclust))
  m <- models$peers
  nsets <- max(peersN, peersD)
  sets <- simulate_sets(nsets, 500, m, seed)
  cat(sprintf("Data: %d datasets of n = 500 from %s (seed %d); peers on the first %d.\n", nsets, describe(m),
              seed, peersD))
  cat(sprintf("B: mclust %d, bulkem %d, mixtools %d. bulkem: use.gpu = FALSE, all %d cores.\n\n", peersB,
              peersB, mixB, parallel::detectCores()))
  fits1 <- fit_sets(sets, 1, "normal")
  rows <- list()
  add <- function(method, d, B, test, lrt, p, p_rule, seconds, per_set, null) {
    q <- stats::quantile(null, c(0.5, 0.95), na.rm = TRUE, names = FALSE)
    rows[[length(rows) + 1]] <<- data.frame(method = method, dataset = d, B = B, test = test, lrt = lrt,
                                            null_median = q[1], null_q95 = q[2],
                                            p_value = p, mc_sd = sqrt(p_rule * (1 - p_rule) / B),
                                            seconds = seconds, s_per_dataset = per_set,
                                            h_per_1000 = per_set * 1000 / 3600, stringsAsFactors = FALSE)
  }
  tests <- c("1 vs 2", "2 vs 3")
  for (d in seq_len(peersD)) {
    x <- sets[[d]]
    r <- timed(quiet(with_seed(seed + d, mclust::mclustBootstrapLRT(x, modelName = "V", nboot = peersB, maxG = 2))))
    for (g in seq_along(r$value$p.value)) {
      add("mclust mclustBootstrapLRT (V, maxG = 2)", d, peersB, tests[g], r$value$obs[g], r$value$p.value[g],
          r$value$p.value[g], if (g == 1) r$seconds else NA, if (g == 1) r$seconds else NA, r$value$boot[, g])
    }
    r <- timed(quiet(with_seed(seed + d, mixtools::boot.comp(x, max.comp = 2, B = mixB, mix.type = "normalmix",
                                                            hist = FALSE))))
    for (g in seq_along(r$value$p.values)) {
      add("mixtools boot.comp (normalmix, max.comp = 2)", d, mixB, tests[g], r$value$obs.log.lik[g],
          r$value$p.values[g], r$value$p.values[g], if (g == 1) r$seconds else NA, if (g == 1) r$seconds else NA, r$value$log.lik[[g]])
    }
    r <- timed(boot(fits1[d], B = peersB, test = "lrt", max.components = 2, use.gpu = FALSE, seed = seed))
    for (g in seq_len(nrow(r$value))) {
      add(paste("bulkem_bootstrap, 1 dataset,", engine_of(r$value)), d, r$value$B_used[g],
          tests[r$value$k[g]], r$value$lrt[g], r$value$p_value[g], r$value$p_value[g],
          if (g == 1) r$seconds else NA, if (g == 1) r$seconds else NA, r$value$null[[g]])
    }
    # the same with a tolerance near mclust's (relative 1e-5 of |loglik| ~ 950: 0.01)
    r <- timed(boot(fits1[d], B = peersB, test = "lrt", max.components = 2, use.gpu = FALSE, seed = seed,
                    epsilon = peersEps))
    for (g in seq_len(nrow(r$value))) {
      add(sprintf("bulkem_bootstrap, 1 dataset, epsilon = %g, %s", peersEps, engine_of(r$value)), d,
          r$value$B_used[g], tests[r$value$k[g]], r$value$lrt[g], r$value$p_value[g], r$value$p_value[g],
          if (g == 1) r$seconds else NA, if (g == 1) r$seconds else NA, r$value$null[[g]])
    }
    # the same with random.inits starts per refit (the K = 1 fits' default is one: the split start)
    r <- timed(bulkem_bootstrap(fits1[d], B = peersB, test = "lrt", max.components = 2, use.gpu = FALSE,
                                seed = seed, random.inits = peersInits))
    for (g in seq_len(nrow(r$value))) {
      add(sprintf("bulkem_bootstrap, 1 dataset, random.inits = %d, %s", peersInits, engine_of(r$value)), d,
          r$value$B_used[g], tests[r$value$k[g]], r$value$lrt[g], r$value$p_value[g], r$value$p_value[g],
          if (g == 1) r$seconds else NA, if (g == 1) r$seconds else NA, r$value$null[[g]])
    }
  }
  many <- timed(boot(fits1[seq_len(peersN)], B = peersB, test = "lrt", max.components = 2, use.gpu = FALSE,
                     seed = seed))
  lm <- many$value
  ids <- unique(lm$dataset)
  for (d in seq_len(peersD)) {
    for (g in which(lm$dataset == ids[d])) {
      first <- d == 1 && g == 1
      add(sprintf("bulkem_bootstrap, %d datasets in one call, %s", peersN, engine_of(lm)), d, lm$B_used[g],
          tests[lm$k[g]], lm$lrt[g], lm$p_value[g], lm$p_value[g], if (first) many$seconds else NA,
          if (first) many$seconds / peersN else NA, lm$null[[g]])
    }
  }
  tab <- do.call(rbind, rows)
  cat("### Bootstrap LRT, sequential K = 1 vs 2, 2 vs 3 (seconds: whole procedure per dataset)\n\n")
  md_table(tab)
  sel <- attr(lm, "selected")
  cat(sprintf("bulkem, %d datasets: K selected %s; replicates used per test %d-%d of %d; failed %d, spurious %d; tests run: %d.\n",
              peersN, paste(sprintf("%s: %d", names(table(sel$k)), table(sel$k)), collapse = ", "),
              min(lm$B_used), max(lm$B_used), peersB, sum(lm$failed), sum(lm$spurious), nrow(lm)))
  cat("mc_sd: Monte-Carlo sd of a p-value near p estimated from B replicates, sqrt(p (1 - p) / B); two independent",
      "estimates differ with sd about sqrt(2) times that (mixtools' B in its own row). mclust with maxG runs",
      "both tests whatever the first gives; mixtools and bulkem the second only where the first rejects.\n\n")

  # standard errors of the K = 2 fit
  fits2 <- fit_sets(sets[seq_len(peersD)], 2, "normal")
  # the estimator's sampling sd, for reference: 200 datasets from the true model
  ref <- tidy(fit_sets(simulate_sets(200, 500, m, seed + 7), 2, "normal"))
  ref_sd <- tapply(ref$estimate, list(ref$term, ref$component), stats::sd)
  se_rows <- list()
  for (d in seq_len(peersD)) {
    x <- sets[[d]]
    obs <- tidy(fits2[d])
    # a plain parametric bootstrap in R, for reference: 200 datasets simulated from this fit,
    # refitted by bulkem() from 20 random starts (not from the fit)
    f <- fits2[[d]]
    at_fit <- tidy(fit_sets(simulate_sets(200, 500, list(family = "normal", alpha = f$alpha, mu = f$mu,
                                                          shape = f$sigma), seed + 8), 2, "normal"))
    at_fit_sd <- tapply(at_fit$estimate, list(at_fit$term, at_fit$component), stats::sd)
    bs <- timed(boot(fits2[d], B = peersB, use.gpu = FALSE, seed = seed))
    mod <- quiet(mclust::Mclust(x, G = 2, modelNames = "V"))
    ord_mc <- order(mod$parameters$mean)
    mc_se <- function(type) {
      r <- timed(quiet(with_seed(seed + d, mclust::MclustBootstrap(mod, nboot = peersB, type = type, verbose = FALSE))))
      b <- r$value
      pro <- b$pro[, ord_mc, drop = FALSE]
      mean <- matrix(b$mean, nrow = dim(b$mean)[1])[, ord_mc, drop = FALSE]
      sd <- sqrt(matrix(b$variance, nrow = dim(b$variance)[1])[, ord_mc, drop = FALSE])
      list(se = as.vector(rbind(apply(pro, 2, sd, na.rm = TRUE), apply(mean, 2, sd, na.rm = TRUE),
                                apply(sd, 2, sd, na.rm = TRUE))), seconds = r$seconds)
    }
    mc_bs <- mc_se("bs")
    mc_pb <- mc_se("pb")
    em <- quiet(with_seed(seed + d, mixtools::normalmixEM(x, k = 2)))
    ord_mx <- order(em$mu)
    mx <- timed(quiet(with_seed(seed + d, mixtools::boot.se(em, B = mixB))))
    mx_se <- as.vector(rbind(mx$value$lambda.se[ord_mx], mx$value$mu.se[ord_mx], mx$value$sigma.se[ord_mx]))
    se_rows[[d]] <- data.frame(dataset = d, component = obs$component, term = obs$term, estimate = obs$estimate,
                               sampling_sd = ref_sd[cbind(obs$term, as.character(obs$component))],
                               sd_at_fit = at_fit_sd[cbind(obs$term, as.character(obs$component))],
                               observed_info = obs$std.error, bulkem_boot = bs$value$std.error,
                               mclust_bs = mc_bs$se, mclust_pb = mc_pb$se, mixtools_boot.se = mx_se)
    se_rows[[d]] <- rbind(se_rows[[d]], data.frame(dataset = d, component = NA, term = "seconds", estimate = NA,
                                                   sampling_sd = NA, sd_at_fit = NA, observed_info = NA, bulkem_boot = bs$seconds,
                                                   mclust_bs = mc_bs$seconds, mclust_pb = mc_pb$seconds,
                                                   mixtools_boot.se = mx$seconds))
    cat(sprintf("Dataset %d: bulkem %s, B_used %d of %d; mclust loglik %.4f, mixtools %.4f, bulkem %.4f\n", d,
                engine_of(bs$value), bs$value$B_used[1], peersB, mod$loglik, em$loglik, fits2[[d]]$loglik))
  }
  cat("\n### Standard errors of the 2-component fit (B: bulkem and mclust ", peersB, ", mixtools ", mixB, ")\n\n",
      sep = "")
  md_table(do.call(rbind, se_rows))
  cat("Bootstrap SEs carry a relative Monte-Carlo sd of about 1 / sqrt(2 (B - 1)): ",
      sprintf("%.1f%% at B = %d, %.1f%% at B = %d", 100 / sqrt(2 * (peersB - 1)), peersB,
              100 / sqrt(2 * (mixB - 1)), mixB),
      ". mclust \"bs\" resamples the data (nonparametric); \"pb\", mixtools and bulkem simulate from the fit. ",
      "sampling_sd: sd of bulkem's estimates over 200 datasets simulated from the true model; sd_at_fit: the same ",
      "from this dataset's fit (the quantity a parametric bootstrap estimates), refitted by bulkem() from 20 ",
      "random starts.\n\n",
      sep = "")
}

# ---------------------------------------------------------------- calibration

section_calibration <- function() {
  N <- scaled(1000, "N")
  B <- scaled(199, "B")
  n <- 200
  cat(sprintf("## calibration: size and power of the bootstrap LRT (N = %d datasets of n = %d per row, B = %d)\n\n",
              N, n, B))
  rows <- list()
  for (fam in families) {
    ms <- models[[fam]]
    for (k in calib_ks) {
      for (kind in c("null", "power")) {
        m <- ms[[if (kind == "null") k else k + 1]]
        sets <- simulate_sets(N, n, m, seed + 10 * k + (kind == "power"))
        fits <- fit_sets(sets, k, fam, noise = noise)
        r <- timed(boot(fits, B = B, test = "lrt", seed = seed, use.gpu = use_gpu))
        l <- r$value
        p <- l$p_value
        ok <- !is.na(p)
        # p = (1 + #)/(1 + B_used): under H0, p - U/(1 + B_used) is exactly uniform
        pr <- with_seed(seed, p - stats::runif(length(p)) / (1 + l$B_used))
        ks <- suppressWarnings(stats::ks.test(p[ok], "punif"))
        ksr <- suppressWarnings(stats::ks.test(pr[ok], "punif"))
        rows[[length(rows) + 1]] <- data.frame(
          family = paste0(fam, if (noise) " + noise"), test = sprintf("%d vs %d", k, k + 1),
          data = sprintf("%s: K = %d", kind, length(m$mu)),
          N = sum(ok), B = B, KS_D = if (kind == "null") ks$statistic[[1]] else NA,
          KS_p = if (kind == "null") ks$p.value else NA,
          KS_p_rand = if (kind == "null") ksr$p.value else NA,
          p_le_0.05 = mean(p[ok] <= 0.05), p_le_0.10 = mean(p[ok] <= 0.10),
          B_used_mean = mean(l$B_used), failed = sum(l$failed), spurious = sum(l$spurious),
          seconds = r$seconds, engine = engine_of(l), stringsAsFactors = FALSE)
      }
    }
  }
  cat("Models: ", paste(vapply(families, function(f) paste(vapply(models[[f]], describe, ""), collapse = "; "), ""),
                        collapse = "; "), ".\n\n", sep = "")
  md_table(do.call(rbind, rows))
  nominal <- function(a) floor(a * (B + 1)) / (B + 1)
  cat(sprintf(paste0("Rejection is p <= level (bulkem's rule); with p on the grid j/(B + 1) the exact null rate is ",
                     "%.4f at 0.05 and %.4f at 0.10; Monte-Carlo sd of a share near 0.05 over N = %d: %.4f. ",
                     "KS_p tests the p-values as they are (discrete: with step 1/(B + 1) = %.4f the KS distance has a ",
                     "floor of about that, which rejects for small B); KS_p_rand after p - U/(1 + B_used), exactly ",
                     "uniform under H0. Power rows: data with K + 1 components fitted with K.\n\n"),
              nominal(0.05), nominal(0.10), N, sqrt(0.05 * 0.95 / N), 1 / (B + 1)))
}

# ---------------------------------------------------------------- coverage

section_coverage <- function() {
  N <- scaled(1000, "N")
  B <- scaled(199, "B")
  n <- 500
  cat(sprintf("## coverage: 95%% percentile intervals of bulkem_bootstrap() (N = %d datasets of n = %d, B = %d)\n\n",
              N, n, B))
  out <- list()
  for (fam in families) {
    m <- models$coverage[[fam]]
    sets <- simulate_sets(N, n, m, seed + 100)
    fits <- fit_sets(sets, 2, fam)
    r <- timed(boot(fits, B = B, seed = seed, use.gpu = use_gpu))
    bs <- as.data.frame(unclass(r$value))
    wald <- tidy(fits)
    shape_nm <- if (fam == "normal") "sigma" else "lambda"
    o <- order(m$mu)
    truth <- data.frame(component = rep(1:2, each = 3), term = rep(c("alpha", "mu", shape_nm), 2),
                        truth = as.vector(rbind(m$alpha[o], m$mu[o], m$shape[o])))
    bs <- merge(bs, truth, by = c("component", "term"))
    wald$key <- paste(wald$dataset, wald$component, wald$term)
    bs$key <- paste(bs$dataset, bs$component, bs$term)
    bs$wald_low <- wald$conf.low[match(bs$key, wald$key)]
    bs$wald_high <- wald$conf.high[match(bs$key, wald$key)]
    bs$wald_se <- wald$std.error[match(bs$key, wald$key)]
    ok <- !is.na(bs$conf.low) & bs$B_used >= 2
    cells <- split(bs[ok, ], list(bs$component[ok], bs$term[ok]), drop = TRUE)
    tab <- do.call(rbind, lapply(cells, function(c) data.frame(
      family = fam, component = c$component[1], term = c$term[1], truth = c$truth[1], N = nrow(c),
      mean_estimate = mean(c$estimate), sd_estimate = stats::sd(c$estimate),
      mean_boot_se = mean(c$std.error), mean_obs_info_se = mean(c$wald_se, na.rm = TRUE),
      coverage_percentile = mean(c$conf.low <= c$truth & c$truth <= c$conf.high),
      coverage_wald = mean(c$wald_low <= c$truth & c$truth <= c$wald_high, na.rm = TRUE),
      stringsAsFactors = FALSE)))
    tab <- tab[order(tab$component, match(tab$term, c("alpha", "mu", shape_nm))), ]
    reps <- attr(r$value, "replicates")
    cat(sprintf("- %s: %s; %s; %.2f s wall (%.4f s per dataset); replicates used %d of %d (failed %d, spurious %d)\n",
                fam, describe(m), engine_of(r$value), r$seconds, r$seconds / N, sum(reps$used), sum(reps$B),
                sum(reps$failed), sum(reps$spurious)))
    out[[fam]] <- tab
  }
  cat("\n")
  md_table(do.call(rbind, out))
  cat(sprintf(paste0("Goal: coverage 0.92-0.98. Monte-Carlo sd of a coverage near 0.95 over N = %d datasets: %.4f ",
                     "(and the interval ends carry the Monte-Carlo error of B = %d). coverage_wald: the ",
                     "observed-information Wald intervals of tidy() on the same fits.\n\n"), N,
              sqrt(0.95 * 0.05 / N), B))
}

# ---------------------------------------------------------------- gpu

section_gpu <- function() {
  N <- scaled(1000, "N")
  B <- scaled(999, "B")
  n <- 500
  m <- models$peers
  cat(sprintf("## gpu: the headline, %d Normal datasets of n = %d (%s), B = %d, use.gpu = %s\n\n", N, n,
              describe(m), B, use_gpu))
  sets <- simulate_sets(N, n, m, seed + 1000)
  t1 <- timed(fit_sets(sets, 1, "normal", use.gpu = use_gpu))
  fits1 <- t1$value
  # warm-up (GPU set-up and kernel compilation) on 2 datasets, not timed
  invisible(quiet(boot(fits1[1:2], B = 2, test = "lrt", level = 0.5, max.components = 2, use.gpu = use_gpu, seed = 1)))
  invisible(quiet(boot(fit_sets(sets[1:2], 2, "normal", use.gpu = use_gpu), B = 2, use.gpu = use_gpu, seed = 1)))
  r <- timed(boot(fits1, B = B, test = "lrt", max.components = 2, use.gpu = use_gpu, seed = seed))
  l <- r$value
  t2 <- timed(fit_sets(sets, 2, "normal", use.gpu = use_gpu))
  fits2 <- t2$value
  s <- timed(boot(fits2, B = B, use.gpu = use_gpu, seed = seed))
  reps <- attr(s$value, "replicates")
  sel <- attr(l, "selected")
  tab <- data.frame(
    call = c(sprintf("bulkem(K = 1), %d datasets (keep.data)", N),
             sprintf("bulkem_bootstrap(fits1, B = %d, test = \"lrt\", max.components = 2)", B),
             sprintf("bulkem(K = 2), %d datasets (keep.data)", N),
             sprintf("bulkem_bootstrap(fits2, B = %d) (standard errors)", B)),
    engine = c(attr(fits1, "engine") %||% NA, engine_of(l), attr(fits2, "engine") %||% NA, engine_of(s$value)),
    wall_s = c(t1$seconds, r$seconds, t2$seconds, s$seconds),
    attr_elapsed_s = c(NA, attr(l, "elapsed"), NA, attr(s$value, "elapsed")),
    cpu_s = c(t1$cpu, r$cpu, t2$cpu, s$cpu),
    ms_per_dataset = 1000 * c(t1$seconds, r$seconds, t2$seconds, s$seconds) / N,
    refits = c(N, NA, N, N * B),
    stringsAsFactors = FALSE)
  tab$refits[2] <- sum(l$B) * 2
  md_table(tab)
  cat(sprintf(paste0("LRT: %d tests (1 vs 2 on %d datasets, 2 vs 3 on %d); replicates used %d of %d (failed %d, ",
                     "spurious %d); p <= 0.05 in 1 vs 2: %d/%d, in 2 vs 3: %d/%d; K selected: %s; seed %s.\n"),
              nrow(l), sum(l$k == 1), sum(l$k == 2), sum(l$B_used), sum(l$B), sum(l$failed), sum(l$spurious),
              sum(l$p_value[l$k == 1] <= 0.05, na.rm = TRUE), sum(l$k == 1),
              sum(l$p_value[l$k == 2] <= 0.05, na.rm = TRUE), sum(l$k == 2),
              paste(sprintf("%s: %d", names(table(sel$k, useNA = "ifany")), table(sel$k, useNA = "ifany")),
                    collapse = ", "), format(attr(l, "seed"))))
  cat(sprintf("Standard errors: replicates used %d of %d (failed %d, spurious %d); seed %s.\n",
              sum(reps$used), sum(reps$B), sum(reps$failed), sum(reps$spurious), format(attr(s$value, "seed"))))
  cat("Compiled core's costs (s by phase, kernel s, EM iterations): LRT",
      paste(sprintf("%s %.4g", names(attr(l, "costs")), attr(l, "costs")), collapse = ", "),
      "; standard errors", paste(sprintf("%s %.4g", names(attr(s$value, "costs")), attr(s$value, "costs")), collapse = ", "),
      "\n\n")
  cat("refits: replicate datasets refitted (the LRT refits each twice, with K and K + 1 components, and the",
      "observed data too), each with random.inits starts (K = 1 fits: one).\n\n")
}

`%||%` <- function(a, b) if (is.null(a)) b else a

for (s in sections) {
  t <- timed(get(paste0("section_", s))())
  cat(sprintf("(section %s: %.1f s wall)\n\n", s, t$seconds))
}
