# How often each start scheme (bulkem_control(starts = )) reaches each
# dataset's best known optimum, and at what cost in E-step passes (issue
# 31, goal 1), on two corpora:
#   defaults  the corpus that chose the defaults (corpus-defaults.R; 120
#             datasets, one with no admissible reference left out)
#   heldout   an independent simulated corpus made here (seed 31): 1-5
#             components, both families, n = 30..5000 log-uniform, half the
#             datasets with a minor mode of 2-5% of the data
#   Rscript inst/bench/starts.R [corpus=defaults|heldout] [ref=1000]
#           [schemes=random,partition,partition+r2] [starts=10,20,40] [seeds=2,3]
#           [ratio=0.001] (control$spurious.ratio of every call, references included)
# ("partition+r2": control$starts = "partition", control$refine = 2;
# "random+s200x5": control$short.runs = 200, control$short.iters = 5, emEM;
# "partition+sK": short runs by K, 10 iterations each, bulkem()'s default)
# Results: inst/bench/results-starts.md.
#
# Reference of a dataset: the best admissible log-likelihood of two
# reference runs, `ref` random starts and `ref / 5` partition starts, each
# with SQUAREM, max.iters 5000, epsilon 1e-8 (seed 1). Candidates: each
# scheme with 10, 20 and 40 starts, bulkem()'s defaults otherwise
# (accelerate = TRUE, epsilon 1e-6, max.iters 5000), seeds 2 and 3. A fit
# reaches the reference when it is admissible and its log-likelihood is at
# least the reference's less 1e-6 (1 + |reference|) (as in defaults.R; one
# ending above it counts, and how many do is printed). One bulkem() call per
# (family, K) group; E-step passes per dataset: attr(fits, "em_iterations").
suppressPackageStartupMessages(library(bulkem))
here <- if (file.exists("inst/bench/workloads.R")) "inst/bench" else system.file("bench", package = "bulkem")
source(file.path(here, "workloads.R"))

args <- commandArgs(trailingOnly = TRUE)
arg <- function(name, default) {
  a <- grep(paste0("^", name, "="), args, value = TRUE)
  if (length(a)) sub(paste0("^", name, "="), "", a[1]) else default
}
which_corpus <- arg("corpus", "defaults")
ref_starts <- as.integer(arg("ref", "1000"))
schemes <- strsplit(arg("schemes", "random,partition,mixed"), ",")[[1]]
starts_grid <- as.integer(strsplit(arg("starts", "10,20,40"), ",")[[1]])
seeds <- as.integer(strsplit(arg("seeds", "2,3"), ",")[[1]])
ratio <- as.numeric(arg("ratio", "0.001"))
threads <- 2

if (which_corpus == "defaults") {
  source(file.path(here, "corpus-defaults.R"))
} else {
  # the held-out corpus: 100 datasets
  corpus <- list()
  set.seed(31)
  for (d in 1:100) {
    family <- if (d %% 2 == 0) "normal" else "invgauss"
    k <- sample(1:5, 1, prob = c(0.05, 0.35, 0.3, 0.18, 0.12))
    n <- round(exp(runif(1, log(30), log(5000))))
    minor <- k >= 2 && runif(1) < 0.5
    w <- stats::rgamma(k, 4)
    w <- w / sum(w)
    if (minor) {
      # one component holds 2-5% of the data: at the lower or the upper
      # edge, or in between
      w_minor <- runif(1, 0.02, 0.05)
      at <- sample(c(1, k, sample.int(k, 1)), 1)
      w[-at] <- (1 - w_minor) * w[-at] / sum(w[-at])
      w[at] <- w_minor
    }
    if (family == "normal") {
      sds <- exp(runif(k, log(0.3), log(2)))
      gaps <- runif(max(k - 1, 0), 1.5, 5) * pmax(sds[-1], sds[-k])
      mu <- cumsum(c(0, gaps))
      x <- rmixture(n, w, mu, sds, "normal")
      shape <- sds
    } else {
      # means spread on the log scale, each component's coefficient of
      # variation 0.1-0.6 (sd = sqrt(mu^3 / lambda))
      mu <- cumprod(c(1, exp(runif(max(k - 1, 0), log(1.5), log(4)))))
      cv <- runif(k, 0.1, 0.6)
      shape <- mu / cv^2
      x <- rmixture(n, w, mu, shape, "invgauss")
    }
    corpus[[d]] <- list(name = sprintf("H%03d %s K=%d n=%d%s", d, if (family == "normal") "N" else "IG", k, n,
                                       if (minor) sprintf(" minor %.1f%% at %d", 100 * w[at], at) else ""),
                        source = if (minor) "minor mode" else "no minor mode", x = x, family = family, k = k)
  }
}
names(corpus) <- vapply(corpus, `[[`, "", "name")
group <- vapply(corpus, function(e) paste(e$family, e$k), "")
groups <- split(seq_along(corpus), group)
src <- vapply(corpus, `[[`, "", "source")

# a scheme "partition+r2" is control$starts = "partition" with control$refine
# = 2; "+s200x5": control$short.runs = 200, control$short.iters = 5 (emEM)
run_setting <- function(scheme, starts, seed, epsilon = 1e-6) {
  part <- function(re, default) {
    m <- regmatches(scheme, regexec(re, scheme))[[1]]
    if (length(m)) as.integer(m[-1]) else default
  }
  refine <- part("\\+r([0-9]+)", 0L)
  short <- part("\\+s([0-9]+)x([0-9]+)", c(0L, 10L))
  # "+sK": short runs by K, bulkem()'s default (control$short.runs = NULL)
  by_k <- grepl("\\+sK", scheme)
  scheme <- sub("\\+.*", "", scheme)
  out <- list(ll = rep(NA_real_, length(corpus)), ok = rep(FALSE, length(corpus)),
              min_count = rep(NA_real_, length(corpus)), passes = 0, secs = 0)
  for (g in groups) {
    e <- corpus[[g[1]]]
    t0 <- proc.time()[["elapsed"]]
    fits <- suppressWarnings(bulkem(lapply(corpus[g], `[[`, "x"), num.components = e$k,
      random.inits = starts, epsilon = epsilon, family = e$family, seed = seed, use.gpu = FALSE,
      control = list(threads = threads, starts = scheme, refine = refine, short.runs = if (!by_k) short[1],
                     short.iters = short[2], spurious.ratio = ratio, standard.errors = FALSE)),
      classes = "bulkem_warning_convergence")
    out$secs <- out$secs + proc.time()[["elapsed"]] - t0
    out$passes <- out$passes + attr(fits, "em_iterations")
    out$ll[g] <- vapply(fits, function(f) f$loglik, 0)
    out$ok[g] <- vapply(fits, function(f) isTRUE(f$fit_success) && !isTRUE(f$spurious), NA)
    out$min_count[g] <- vapply(fits, function(f) suppressWarnings(min(f$n * f$alpha)), 0)
  }
  out
}

cat(sprintf("corpus %s: %d datasets, n %d..%d (mean %.0f), K %s\n", which_corpus, length(corpus),
            min(lengths(lapply(corpus, `[[`, "x"))), max(lengths(lapply(corpus, `[[`, "x"))),
            mean(lengths(lapply(corpus, `[[`, "x"))),
            paste(names(table(vapply(corpus, `[[`, 0, "k"))), table(vapply(corpus, `[[`, 0, "k")),
                  sep = ":", collapse = " ")))
# the references take most of the run: BULKEM_STARTS_REF=FILE keeps them
# between runs of the same corpus and `ref`
ref_file <- Sys.getenv("BULKEM_STARTS_REF")
if (nzchar(ref_file) && file.exists(ref_file)) {
  refs <- readRDS(ref_file)
  stopifnot(identical(refs$key, c(which_corpus, ref_starts, if (ratio != 0.001) ratio)))
  ref_r <- refs$ref_r
  ref_p <- refs$ref_p
} else {
  ref_r <- run_setting("random", ref_starts, 1, epsilon = 1e-8)
  ref_p <- run_setting("partition", ref_starts %/% 5, 1, epsilon = 1e-8)
  if (nzchar(ref_file)) saveRDS(list(key = c(which_corpus, ref_starts, if (ratio != 0.001) ratio), ref_r = ref_r, ref_p = ref_p), ref_file)
}
cat(sprintf("references: %d random starts %.0f s, %d partition starts %.0f s\n", ref_starts, ref_r$secs,
            ref_starts %/% 5, ref_p$secs))
ll_r <- ifelse(ref_r$ok, ref_r$ll, -Inf)
ll_p <- ifelse(ref_p$ok, ref_p$ll, -Inf)
ref_ll <- pmax(ll_r, ll_p)
ref_min_count <- ifelse(ll_r >= ll_p, ref_r$min_count, ref_p$min_count)
tol <- function(ll) 1e-6 * (1 + abs(ll))
keep <- is.finite(ref_ll)
ref_ll[!keep] <- NA
cat(sprintf("scored: %d (left out, no admissible reference: %s)\n", sum(keep),
            if (all(keep)) "none" else paste(names(corpus)[!keep], collapse = "; ")))
cat(sprintf("reference from partition starts above the random starts' (by more than the tolerance): %d (%s); below: %d\n",
            sum(keep & ll_p > ll_r + tol(ref_ll)), paste(names(corpus)[keep & ll_p > ll_r + tol(ref_ll)], collapse = "; "),
            sum(keep & ll_p < ll_r - tol(ref_ll))))
small <- keep & ref_min_count < 20
cat(sprintf("references with a component of < 20 expected observations: %d\n", sum(small)))

reach <- function(r) r$ok & !is.na(r$ll) & !is.na(ref_ll) & r$ll >= ref_ll - tol(ref_ll)
runs <- list()
for (sc in schemes) for (s in starts_grid) for (seed in seeds) {
  runs[[sprintf("%s/%d/%d", sc, s, seed)]] <- c(list(scheme = sc, starts = s, seed = seed), run_setting(sc, s, seed))
}
above <- Reduce(`|`, lapply(runs, function(r) keep & r$ok & !is.na(r$ll) & r$ll > ref_ll + tol(ref_ll)))
cat(sprintf("datasets where some candidate ends above the reference: %d (%s)\n", sum(above),
            paste(names(corpus)[above], collapse = "; ")))
kinds <- unique(src)
pct <- function(x) sprintf("%.1f%%", 100 * x)
cat(sprintf("\nR %s, %s, %s, %d cores, cpu engine, %d threads\n\n", getRversion(),
            format(Sys.time(), "%Y-%m-%d"), Sys.info()[["machine"]], parallel::detectCores(), threads))
cat(sprintf("| starts | random.inits | seed | reach (all, %d) | %s | ref. comp. < 20 obs (%d) | E-step passes per dataset | s |\n",
            sum(keep), paste(sprintf("%s (%d)", kinds, vapply(kinds, function(k) sum(keep & src == k), 0L)), collapse = " | "),
            sum(small)))
cat("| --- | ---: | ---: | ---: |", paste(rep("---: |", length(kinds)), collapse = " "), "---: | ---: | ---: |\n")
for (r in runs) {
  hit <- reach(r)
  cat(sprintf("| %s | %d | %d | %s | %s | %s | %.0f | %.1f |\n", r$scheme, r$starts, r$seed, pct(mean(hit[keep])),
              paste(vapply(kinds, function(k) pct(mean(hit[keep & src == k])), ""), collapse = " | "),
              pct(mean(hit[small])), r$passes / length(corpus), r$secs))
}
cat("\nmissed by 20 starts (seed 2 / seed 3), per scheme:\n")
for (sc in if (20 %in% starts_grid) schemes) {
  m2 <- keep & !reach(runs[[sprintf("%s/20/%d", sc, seeds[1])]])
  m3 <- if (length(seeds) > 1) keep & !reach(runs[[sprintf("%s/20/%d", sc, seeds[2])]]) else m2
  i <- which(m2 | m3)
  cat(sprintf("- %s (%d): %s\n", sc, length(i), paste(sprintf("%s [ref %.2f, min n*alpha %.1f]%s", names(corpus)[i],
      ref_ll[i], ref_min_count[i], ifelse(m2[i] & m3[i], "", ifelse(m2[i], " (seed 2 only)", " (seed 3 only)"))),
      collapse = "; ")))
}
if (nzchar(Sys.getenv("BULKEM_STARTS_RDS")))
  saveRDS(list(corpus = corpus, ref_r = ref_r, ref_p = ref_p, ref_ll = ref_ll, runs = runs),
          Sys.getenv("BULKEM_STARTS_RDS"))
