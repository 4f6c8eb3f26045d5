# How the defaults of random.inits and max.iters were chosen: on a corpus of
# simulated and real datasets, the smallest number of random starts whose
# best admissible fit reaches each dataset's reference optimum on >= 99% of
# the corpus, and a max.iters at which <= 1% of the returned fits stop there.
#   Rscript inst/bench/defaults.R   (3.5 minutes on this repository's 2-core
#                                     machine; 5.5 CPU minutes)
#   Rscript inst/bench/defaults.R accelerate=TRUE   the candidates with
#                                     control$accelerate (SQUAREM); the
#                                     reference stays plain EM
# Results: inst/bench/results-defaults.md.
#
# Reference optimum of a dataset: the best admissible log-likelihood from
# 200 starts with max.iters = 5000 and epsilon = 1e-8 (seed 1); a dataset
# with no admissible fit there is left out.
# Candidates use the default epsilon (1e-6) and seed 2, so their starts are
# not the reference's. A fit "reaches" the reference when it is admissible
# (not spurious) and its log-likelihood is within 1e-6 * (1 + |ref|) of it,
# the tolerance `starts_at_best` uses. bulkem() fits one K and one family per
# call, so a setting is one call per (family, K) group of the corpus; its time
# is the sum over the groups.
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))

args <- commandArgs(trailingOnly = TRUE)
accelerate <- any(args == "accelerate=TRUE")
starts_grid <- c(1, 2, 5, 10, 20, 50)
iters_grid <- c(100, 200, 500, 1000, 2000, 5000)
ref_starts <- 200
ref_iters <- 5000
ref_epsilon <- 1e-8

# ---- corpus ---------------------------------------------------------------
source(file.path(here, "corpus-defaults.R"))
names(corpus) <- vapply(corpus, `[[`, "", "name")
group <- vapply(corpus, function(e) paste(e$family, e$k), "")
groups <- split(seq_along(corpus), group)

# One setting over the whole corpus: per dataset the returned fit's
# log-likelihood, whether it is admissible, its status, starts_at_best, its
# smallest expected count (n * alpha) and sd ratio; the share of starts at
# max.iters; elapsed and CPU seconds (all threads).
sd_of <- function(f) if (f$family == "normal") f$sigma else sqrt(f$mu^3 / f$lambda)
run_setting <- function(starts, iters, epsilon, seed, accelerate = FALSE) {
  out <- list(ll = rep(NA_real_, length(corpus)), ok = rep(FALSE, length(corpus)),
              status = rep(NA_character_, length(corpus)), at_best = rep(0L, length(corpus)),
              min_count = rep(NA_real_, length(corpus)), sd_ratio = rep(NA_real_, length(corpus)),
              starts_max = 0, secs = 0, cpu = 0, passes = 0)
  starts_all <- 0
  for (g in groups) {
    e <- corpus[[g[1]]]
    t0 <- proc.time()
    fits <- suppressWarnings(bulkem(lapply(corpus[g], `[[`, "x"), num.components = e$k,
      max.iters = iters, random.inits = starts, epsilon = epsilon, family = e$family,
      seed = seed, use.gpu = FALSE, control = list(keep.starts = TRUE, accelerate = accelerate)),
      classes = "bulkem_warning_convergence")
    t <- proc.time() - t0
    out$secs <- out$secs + t[["elapsed"]]
    out$cpu <- out$cpu + t[["user.self"]] + t[["sys.self"]]
    out$passes <- out$passes + attr(fits, "em_iterations")
    out$ll[g] <- vapply(fits, function(f) f$loglik, 0)
    out$ok[g] <- vapply(fits, function(f) isTRUE(f$fit_success) && !isTRUE(f$spurious), NA)
    out$status[g] <- vapply(fits, `[[`, "", "status")
    out$at_best[g] <- vapply(fits, function(f) as.integer(f$starts_at_best), 0L)
    out$min_count[g] <- vapply(fits, function(f) min(f$n * f$alpha), 0)
    out$sd_ratio[g] <- vapply(fits, function(f) min(sd_of(f)) / max(sd_of(f)), 0)
    st <- unlist(lapply(fits, function(f) f$starts$status))
    out$starts_max <- out$starts_max + sum(st == "max_iters")
    starts_all <- starts_all + length(st)
  }
  out$starts_max <- out$starts_max / starts_all
  out
}

src <- vapply(corpus, `[[`, "", "source")
cat(sprintf("corpus: %d datasets (%d simulated, %d real fits of %d real datasets), n %d..%d\n",
            length(corpus), sum(src == "simulated"), sum(src == "real"), length(real),
            min(lengths(lapply(corpus, `[[`, "x"))), max(lengths(lapply(corpus, `[[`, "x")))))
ref <- run_setting(ref_starts, ref_iters, ref_epsilon, seed = 1)
cat(sprintf("reference: %d starts, max.iters %d, epsilon %g: %.0f s (%.0f CPU s); %d at max.iters, %d without an admissible fit\n",
            ref_starts, ref_iters, ref_epsilon, ref$secs, ref$cpu, sum(ref$status == "max_iters"), sum(!ref$ok)))
ref_ll <- ifelse(ref$ok, ref$ll, NA)

runs <- list()
for (it in iters_grid) for (s in starts_grid) {
  runs[[sprintf("%d/%d", s, it)]] <- c(list(starts = s, iters = it), run_setting(s, it, 1e-6, seed = 2, accelerate = accelerate))
}
# A candidate can end above the reference: a start that, at the default
# epsilon or max.iters, stopped on its way to a component collapsing (at the
# reference's tight epsilon the same path goes on and fails). Such a fit
# counts as reaching; how many there are is printed.
tol <- function(ll) 1e-6 * (1 + abs(ll))
above <- Reduce(`|`, lapply(runs, function(r) r$ok & !is.na(r$ll) & !is.na(ref_ll) & r$ll > ref_ll + tol(ref_ll)))
cat(sprintf("datasets where some candidate ends above the reference: %d (%s)\n", sum(above),
            paste(names(corpus)[above], collapse = "; ")))
keep <- !is.na(ref_ll)
cat(sprintf("datasets scored: %d (left out, no admissible reference: %s)\n", sum(keep),
            if (all(keep)) "none" else paste(names(corpus)[!keep], collapse = "; ")))

reach <- function(r) r$ok & !is.na(r$ll) & r$ll >= ref_ll - tol(ref_ll)
# references whose every component is expected to hold >= 20 observations
supported <- keep & ref$min_count >= 20
cat(sprintf("references with every component >= 20 expected observations: %d\n", sum(supported)))
rows <- do.call(rbind, lapply(runs, function(r) {
  hit <- reach(r)[keep]
  data.frame(random.inits = r$starts, max.iters = r$iters,
             reach = mean(hit), reach_sim = mean(hit[src[keep] == "simulated"]),
             reach_real = mean(hit[src[keep] == "real"]),
             reach_supported = mean(reach(r)[supported]),
             fits_at_max = mean(r$status[keep] == "max_iters"),
             starts_at_max = r$starts_max,
             passes = r$passes / length(corpus),
             ms = 1000 * r$secs / length(corpus), cpu_ms = 1000 * r$cpu / length(corpus))
}))
pct <- function(x) sprintf("%.1f%%", 100 * x)
cat(sprintf("\ncandidates: control$accelerate = %s\n", accelerate))
cat(sprintf("\nR %s, %s, %s, %d cores, cpu engine, %d threads\n\n", getRversion(),
            format(Sys.time(), "%Y-%m-%d"), Sys.info()[["machine"]], parallel::detectCores(),
            attr(bulkem(list(1:10 + 0.5), 1, use.gpu = FALSE, seed = 1), "threads")))
cat("| random.inits | max.iters | reach ref. (all) | simulated | real | ref. comps >= 20 obs | fits at max.iters | starts at max.iters | E-step passes per dataset | ms per dataset | CPU ms per dataset |\n")
cat("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
for (i in seq_len(nrow(rows))) with(rows[i, ], cat(sprintf("| %d | %d | %s | %s | %s | %s | %s | %s | %.0f | %.1f | %.1f |\n",
  random.inits, max.iters, pct(reach), pct(reach_sim), pct(reach_real), pct(reach_supported), pct(fits_at_max),
  pct(starts_at_max), passes, ms, cpu_ms)))

# Each dataset's basin share p: of the 200 reference starts and the 50
# candidate starts (max.iters 5000), the share that reached the reference
# optimum (starts_at_best of a run whose best is the reference). With r independent
# starts a dataset reaches it with probability 1 - (1 - p)^r: the expected
# share of the corpus for any r, with no convergence shortfall.
cand <- runs[[sprintf("%d/%d", max(starts_grid), max(iters_grid))]]
same <- function(r) r$ok & !is.na(r$ll) & abs(r$ll - ref_ll) <= tol(ref_ll)
hits <- ifelse(same(ref), ref$at_best, 0) + ifelse(same(cand), cand$at_best, 0)
p <- (hits / (ref_starts + max(starts_grid)))[keep]
r_grid <- c(1, 2, 5, 10, 20, 50, 100, 200, 500)
cat(sprintf("\nbasin shares: %d datasets below 5%%, %d below 2%%; expected share reaching the reference with r starts:\n",
            sum(p < 0.05), sum(p < 0.02)))
cat("| r |", paste(r_grid, collapse = " | "), "|\n|", paste(rep("---:", length(r_grid) + 1), collapse = " | "), "|\n")
cat("| all |", paste(vapply(r_grid, function(r) pct(mean(1 - (1 - p)^r)), ""), collapse = " | "), "|\n")
for (so in c("simulated", "real")) cat("|", so, "|", paste(vapply(r_grid, function(r)
  pct(mean((1 - (1 - p)^r)[src[keep] == so])), ""), collapse = " | "), "|\n")

if (nzchar(Sys.getenv("BULKEM_DEFAULTS_RDS")))
  saveRDS(list(corpus = corpus, ref = ref, runs = runs, ref_ll = ref_ll, above = above, rows = rows),
          Sys.getenv("BULKEM_DEFAULTS_RDS"))

# which datasets the chosen defaults miss, and which end at max.iters
chosen <- Sys.getenv("BULKEM_DEFAULTS", "20/5000")
if (!is.null(runs[[chosen]])) {
  r <- runs[[chosen]]
  miss <- which(keep & !reach(r))
  cat(sprintf("\nrandom.inits/max.iters = %s misses %d:\n", chosen, length(miss)))
  for (i in miss) cat(sprintf("- %s: %s (%s) vs %.2f; reference basin share %.3f, its smallest n*alpha %.1f, sd ratio %.3f\n",
    names(corpus)[i], format(round(r$ll[i], 2), nsmall = 2), r$status[i], ref_ll[i],
    hits[i] / (ref_starts + max(starts_grid)), ref$min_count[i], ref$sd_ratio[i]))
  at_max <- keep & r$status == "max_iters"
  cat(sprintf("at max.iters: %s\n", if (any(at_max)) paste(names(corpus)[at_max], collapse = "; ") else "none"))
  # how the share reaching the reference depends on where "well supported" is drawn
  it <- strsplit(chosen, "/")[[1]][2]
  cat(sprintf("\nreach at max.iters %s, among references whose every component holds >= c expected observations:\n", it))
  cat("| c | datasets |", paste(starts_grid, collapse = " | "), "|\n|",
      paste(rep("---:", length(starts_grid) + 2), collapse = " | "), "|\n")
  for (cc in c(0, 10, 15, 20, 30)) {
    sub <- keep & ref$min_count >= cc
    cat(sprintf("| %g | %d | %s |\n", cc, sum(sub), paste(vapply(starts_grid, function(s)
      pct(mean(reach(runs[[sprintf("%d/%s", s, it)]])[sub])), ""), collapse = " | ")))
  }
}
