# What a user fitting thousands of datasets must be told without looking at
# each fit: which fits are spurious (no start passed the screen), which are
# fragile (their best log-likelihood was reached by one start of several),
# and, with several Ks, which kept their K only because a K of lower (or
# no) BIC was spurious, failed, stopped at max.iters or was invalid; for a
# spurious fit, the observations its suspect component sits on. print(),
# summary(), glance(), bulkem_compare() and the convergence warning say it
# from here. Computed from the fits' own fields; no fit changes.

# TRUE where the best log-likelihood was reached by one start only, of
# more than one run (a K = 1 fit has one start: never fragile).
fits_fragile <- function(fits) {
  vapply(fits, function(f) {
    identical(as.integer(f$starts_at_best), 1L) && isTRUE(f$starts_run > 1L)
  }, NA, USE.NAMES = FALSE)
}

fit_sound <- function(f) identical(f$status, "converged") && !isTRUE(f$spurious)

# Each K's fit of a fit made with several Ks, in the order of `ks` (NULL
# where a K's fit is not kept: a result made before `all_k` was).
k_fits <- function(f, ks) {
  ak <- f$all_k
  if (is.null(ak)) return(vector("list", length(ks)))
  ak[match(ks, all_k_ks(ak))]
}

# The K of each fit in `all_k`.
all_k_ks <- function(ak) vapply(ak, function(a) NROW(a$mu), 0L, USE.NAMES = FALSE)

# The criterion that chose the K of a fit of several Ks (bulkem()'s
# `criterion`, a column of its `by_k`): "bic" for results made before
# fits named it.
fit_criterion <- function(f) if (is.null(f$criterion)) "bic" else f$criterion

# Its name in a message: "BIC".
criterion_label <- function(f) toupper(fit_criterion(f))

# TRUE where a fit of several Ks might have been chosen over another K
# (chosen_over() decides): another K has a lower criterion (BIC) than the
# chosen one, or none. Cheap, for results of 100,000s of fits: most are
# FALSE here.
k_maybe_over <- function(fits) {
  vapply(fits, function(f) {
    b <- f$by_k
    if (is.null(b) || !isTRUE(f$fit_success)) return(FALSE)
    crit <- fit_criterion(f)
    anyNA(b[[crit]]) || any(b[[crit]] < f[[crit]])
  }, NA, USE.NAMES = FALSE)
}

# Why each K in the fit's `by_k` was not chosen (NA for the K chosen):
# its status where it did not converge ("failed", "max_iters", "invalid"),
# "spurious" where it converged but no start passed the screen, otherwise
# "higher BIC" (or "equal BIC": the smaller K wins a tie; ICL or AIC where
# that chose). A fit of one K
# gives NA when it has a fit, else its status.
k_why_not <- function(f) {
  b <- f$by_k
  if (is.null(b)) return(if (has_fit(f)) NA_character_ else as.character(f$status))
  ks <- b$K
  why <- as.character(b$status)
  conv <- why == "converged"
  if (any(conv)) {
    ak <- f$all_k
    spurious <- if (is.null(ak)) {
      logical(length(ks))
    } else {
      vapply(ak, function(a) isTRUE(a$spurious), NA, USE.NAMES = FALSE)[match(ks, all_k_ks(ak))]
    }
    crit <- fit_criterion(f)
    v0 <- if (has_fit(f)) f[[crit]] else NA_real_
    label <- criterion_label(f)
    why[conv] <- ifelse(spurious[conv] %in% TRUE, "spurious",
                        ifelse(b[[crit]][conv] > v0, paste("higher", label), paste("equal", label)))
  }
  if (has_fit(f)) why[ks == NROW(f$mu)] <- NA_character_
  why
}

# Which of the fit's other Ks made the choice: those not sound whose BIC
# (criterion) was lower than the chosen K's, or that have none (failed,
# invalid).
# Logical, in the order of `by_k`; all FALSE for a fit of one K.
k_flagged <- function(f, why = k_why_not(f)) {
  b <- f$by_k
  if (is.null(b) || !has_fit(f)) return(rep(FALSE, length(why)))
  crit <- fit_criterion(f)
  !is.na(why) & why %in% c("spurious", "failed", "max_iters", "invalid") &
    (is.na(b[[crit]]) | b[[crit]] < f[[crit]])
}

# Why a fit of several Ks has the K it has, in a few words: "lowest BIC"
# (or the criterion that chose);
# "K = 2 spurious" (and the like, "; " between Ks) where a K of lower or no
# BIC was not sound; "no sound K" where no K was (the lowest BIC of all is
# returned); "no K fitted". NA for a fit of one K.
k_chosen_why <- function(f, maybe = TRUE) {
  if (is.null(f$by_k)) return(NA_character_)
  if (!has_fit(f)) return("no K fitted")
  if (!fit_sound(f)) return("no sound K")
  lowest <- paste("lowest", criterion_label(f))
  if (!maybe) return(lowest)
  why <- k_why_not(f)
  flagged <- k_flagged(f, why)
  if (!any(flagged)) return(lowest)
  paste0("K = ", f$by_k$K[flagged], " ", why[flagged], collapse = "; ")
}

# The component of a spurious fit `f` to blame: the smallest (by expected
# count n * alpha) of those the default screen flags as small and narrow;
# failing that, where a component is far narrower than the widest
# (Hathaway's bound), the smaller of the narrowest and the widest (an
# outlier far from the rest makes a small, very wide component, and the
# others look narrow beside it); failing that (thresholds of the user's
# own), the smallest.
suspect_component <- function(f) {
  sd <- fitted_sd(f$family, f$mu, fit_shape(f))
  count <- f$n * f$alpha
  lim <- model_limits()$spurious
  widest <- max(sd)
  small <- which(count < lim[["count"]] & sd < lim[["count.ratio"]] * widest)
  cand <- if (length(small) > 0) {
    small
  } else if (min(sd) < lim[["ratio"]] * widest) {
    unique(c(which.min(sd), which.max(sd)))
  } else {
    seq_along(count)
  }
  cand[which.min(count[cand])]
}

# Values written briefly: 1e+06, 0.7623.
brief_values <- function(v) vapply(v, format, "", digits = 4, USE.NAMES = FALSE)

# "a and b", "a, b and c".
and_list <- function(x) {
  if (length(x) <= 1) return(paste(x))
  paste(paste(x[-length(x)], collapse = ", "), "and", x[length(x)])
}

# Observations `i` (at most 3) of a dataset of `n` by position, and by row
# of the caller's data where `rows` (one per observation) has them:
# "observations 50 and 100, rows 350 and 400 of the data".
observations_at <- function(i, rows, n) {
  at <- if (length(i) == 1) paste("observation", i) else paste("observations", and_list(i))
  if (!is.null(rows) && length(rows) == n && all(!is.na(rows[i]))) {
    at <- paste0(at, if (length(i) == 1) ", row " else ", rows ", and_list(rows[i]), " of the data")
  }
  at
}

# What the suspect component of spurious fit `f` sits on: with the data
# `x` (and their rows in the caller's data, `rows`), the observations it is
# the most likely component of, by value and position in the dataset;
# without, its weight and mean, and how to get the observations.
spurious_culprit <- function(f, x = f$data, rows = f$rows) {
  if (!has_fit(f)) return("no fit")
  m <- suspect_component(f)
  count <- f$n * f$alpha[m]
  if (is.null(x) || length(x) != f$n) {
    return(sprintf(paste0("a component of weight %s (%s expected observation%s) at mu = %s; ",
                          "fit with control = list(keep.data = TRUE) to see which observations"),
                   format(f$alpha[m], digits = 2), format(count, digits = 2),
                   if (isTRUE(all.equal(count, 1))) "" else "s", brief_values(f$mu[m])))
  }
  post <- mixture_posterior(f, x)
  on <- which(posterior_class(post) == m)
  where <- function(i) observations_at(i, rows, length(x))
  if (length(on) == 0) {
    near <- which.max(post[, m])
    if (length(near) == 0) return("a component that no observation belongs to")
    return(sprintf("a component of weight %s that no observation belongs to; the nearest is %s (%s)",
                   format(f$alpha[m], digits = 2), brief_values(x[near]), where(near)))
  }
  on <- on[order(x[on])]
  if (length(on) <= 3) {
    return(sprintf("a component of %d observation%s at %s (%s)", length(on), if (length(on) == 1) "" else "s",
                   and_list(brief_values(x[on])), where(on)))
  }
  # many: their range, and the one that belongs to it most surely (an
  # outlier that the component stretched to cover, typically)
  surest <- on[which.max(post[on, m])]
  sprintf("a component of %d observations from %s to %s, most surely %s (%s)", length(on),
          brief_values(x[on[1]]), brief_values(x[on[length(on)]]), brief_values(x[surest]), where(surest))
}

# What the Ks passed over in `fits` (those chosen_over()) did, in words
# after "another K": "was spurious or failed", from the reasons that occur.
over_reasons <- function(fits) {
  why <- unique(unlist(lapply(fits, function(f) {
    w <- k_why_not(f)
    w[k_flagged(f, w)]
  }), use.names = FALSE))
  words <- c(spurious = "was spurious", failed = "failed", max_iters = "stopped at max.iters",
             invalid = "was invalid")
  words <- words[names(words) %in% why]
  if (length(words) <= 1) return(unname(words))
  paste(paste(words[-length(words)], collapse = ", "), "or", words[length(words)])
}

# Values far from the rest of their dataset (the core's far.rs: beyond
# Tukey's fences drawn at 4 interquartile ranges from the quartiles where
# the family's tail is light and 10 where it may be heavy (the Normal's on
# both sides), on the logarithms for the families of positive values; at
# most 1% of a dataset; none for the t): each fit of `datasets` that has
# some gets `far`, the values named by their positions in the dataset. Not
# looked for in fits with a noise component (it takes such values), nor in
# weighted data (a weight counts observations, so a far value may be many).
attach_far <- function(fits, datasets, family, noise, weighted, threads) {
  if (isTRUE(noise) || weighted || length(fits) == 0) return(fits)
  far <- core_value(far_values_(datasets, family, as.integer(threads)))
  by <- split(far$position, far$dataset)
  for (d in names(by)) {
    at <- by[[d]]
    fits[[as.integer(d)]]$far <- stats::setNames(datasets[[as.integer(d)]][at], at)
  }
  fits
}

# TRUE where a fit has values far from the rest of its data.
fits_far <- function(fits) vapply(fits, function(f) length(f$far) > 0, NA, USE.NAMES = FALSE)

# The note of a fit with values far from the rest: how many, which (their
# values and positions, at most three), and what takes them.
far_note <- function(f) {
  far <- f$far
  shown <- utils::head(seq_along(far), 3)
  more <- length(far) - length(shown)
  where <- observations_at(as.integer(names(far))[shown], f$rows, f$n)
  sprintf(paste0("%d value%s far from the rest of the data: %s%s (%s); a noise component (noise = TRUE) ",
                 "takes such values instead of bending the components to them"),
          length(far), if (length(far) == 1) "" else "s", and_list(brief_values(far[shown])),
          if (more > 0) sprintf(" and %d more", more) else "", where)
}

# Sentences on what to mistrust about one fit: spurious (and where), fragile,
# the Ks whose failure made the choice (and why each failed), and values far
# from the rest of the data.
fit_notes <- function(f) {
  notes <- character()
  if (isTRUE(f$spurious) && has_fit(f)) notes <- c(notes, paste0("spurious: ", spurious_culprit(f)))
  if (fits_fragile(list(f))) {
    notes <- c(notes, sprintf(paste0("fragile: the best log-likelihood was reached by 1 of %d starts; ",
                                     "more starts may find a better one"), as.integer(f$starts_run)))
  }
  if (!is.null(f$by_k) && has_fit(f) && fit_sound(f)) {
    why <- k_why_not(f)
    flagged <- k_flagged(f, why)
    if (any(flagged)) {
      ks <- f$by_k$K[flagged]
      parts <- mapply(function(k, w, a) k_failure(f, k, w, a), ks, why[flagged],
                      k_fits(f, ks), USE.NAMES = FALSE)
      notes <- c(notes, paste0("K = ", NROW(f$mu), " chosen because ", paste(parts, collapse = "; ")))
    }
  }
  if (length(f$far) > 0) notes <- c(notes, far_note(f))
  notes
}

# Why K = `k` of fit `f` (its own fit `a`, NULL when not kept) was passed
# over, in words.
k_failure <- function(f, k, why, a) {
  detail <- switch(why,
    spurious = if (!is.null(a)) spurious_culprit(a, f$data, f$rows),
    max_iters = sprintf("its %s %s is lower, but it did not converge", criterion_label(f),
                        format(f$by_k[[fit_criterion(f)]][f$by_k$K == k], digits = 7)),
    if (!is.null(a) && nzchar(a$message)) a$message)
  verb <- switch(why, spurious = "was spurious", failed = "failed", max_iters = "stopped at max.iters",
                 invalid = "was invalid", why)
  paste0("K = ", k, " ", verb, if (!is.null(detail)) paste0(": ", detail))
}

# TRUE where a fit of several Ks kept its K because a K of lower or no BIC
# was not sound.
chosen_over <- function(fits, maybe = k_maybe_over(fits)) {
  out <- logical(length(fits))
  out[maybe] <- vapply(fits[maybe], function(f) fit_sound(f) && any(k_flagged(f)), NA, USE.NAMES = FALSE)
  out
}

# One line of those counts, e.g. "attention: 1 spurious, 4 fragile (best
# log-likelihood reached by one start only), 0 stopped at max.iters, 0
# failed, 0 invalid; 1 chose its K because another K was not sound (...)".
attention_line <- function(counts) {
  line <- sprintf(paste0("attention: %d spurious, %d fragile (best log-likelihood reached by one start ",
                         "only), %d stopped at max.iters, %d failed, %d invalid"),
                  counts[["spurious"]], counts[["fragile"]], counts[["max_iters"]], counts[["failed"]],
                  counts[["invalid"]])
  if (!is.na(counts[["chosen_over"]])) {
    line <- paste0(line, sprintf(paste0("; %d chose its K because another K was not sound (spurious, ",
                                        "failed, max_iters or invalid)"), counts[["chosen_over"]]))
  }
  if (isTRUE(counts["far"] > 0)) {
    line <- paste0(line, sprintf("; %d with values far from the rest of their data", counts[["far"]]))
  }
  line
}

# The notes of the fits that need them most (spurious, their K chosen
# because another failed, or values far from the rest), named by dataset; at
# most `most` (Inf: all).
result_notes <- function(fits, names, most = Inf, over = chosen_over(fits)) {
  want <- which(vapply(fits, function(f) isTRUE(f$spurious) && has_fit(f), NA, USE.NAMES = FALSE) | over |
                  fits_far(fits))
  want <- utils::head(want, most)
  notes <- vapply(want, function(i) {
    n <- fit_notes(fits[[i]])
    paste(n[!startsWith(n, "fragile")], collapse = "; ")
  }, "")
  names(notes) <- names[want]
  notes
}
