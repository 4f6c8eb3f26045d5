# bulkem()'s `fixed`: weights, means and shapes held at given values
# (mixtools' mean.constr style), per call or per dataset, checked and
# flattened for the core (K weights, K means, K shapes per dataset, NA where
# free: fixed.rs), and what the
# `fixed` field of a fit with such values removes from its free parameters.

# `fixed` as bulkem() takes it, resolved for `n` datasets named `names`:
# NULL, or a "bulkem_fixed" list of n elements, each NULL (nothing fixed) or
# the K weights, K means and K shapes of the call's one K, NA where free.
# Forms: one list of `alpha`, `mu` and the family's shape (every dataset),
# or such lists (or NULL) by dataset name; a "bulkem_fixed" list is what
# future shards pass on.
check_fixed <- function(fixed, n, names, family, num.components, noise, equal.scale) {
  if (is.null(fixed)) return(NULL)
  if (inherits(fixed, "bulkem_fixed")) {
    if (length(fixed) != n) stop_arg("`fixed` holds values for ", length(fixed), " datasets, not ", n)
    return(fixed)
  }
  known <- c("alpha", "mu", shape_name(family))
  named <- is.list(fixed) && !is.object(fixed) && length(fixed) > 0 && !is.null(names(fixed)) &&
    all(nzchar(names(fixed)))
  if (named && !all(names(fixed) %in% known) && all(vapply(fixed, function(f) is.null(f) || is.list(f), NA))) {
    unknown <- setdiff(names(fixed), names)
    if (length(unknown) > 0) {
      stop_arg("`fixed` names ", length(unknown), " dataset", if (length(unknown) > 1) "s", " not fitted: ",
               paste0("\"", utils::head(unknown, 3), "\"", collapse = ", "),
               " (values by dataset must be named as the datasets are)")
    }
    per <- lapply(names, function(nm) {
      f <- fixed[[nm]]
      if (is.null(f)) NULL else fixed_values(f, family, num.components, noise, equal.scale, where = nm)
    })
  } else {
    per <- rep(list(fixed_values(fixed, family, num.components, noise, equal.scale, where = NULL)), n)
  }
  structure(per, class = "bulkem_fixed")
}

# One dataset's (or the call's) fixed values checked: K weights, K means, K
# shapes, NA where free.
fixed_values <- function(fixed, family, num.components, noise, equal.scale, where) {
  at <- if (!is.null(where)) paste0(" (dataset \"", where, "\")") else ""
  bad <- function(...) stop_arg("`fixed`", at, ": ", ...)
  shape <- shape_name(family)
  known <- c("alpha", "mu", shape)
  if (!is.list(fixed) || is.object(fixed) || length(fixed) == 0 || is.null(names(fixed)) ||
      !all(names(fixed) %in% known) || anyDuplicated(names(fixed))) {
    bad("must be a list with elements among ", paste0("`", known, "`", collapse = ", "),
        " (one value per component, NA where free), or such lists by dataset name, not ", describe_type(fixed))
  }
  if (length(num.components) != 1) {
    bad("holds values for one number of components: num.components must be one K, not ",
        paste(num.components, collapse = ", "))
  }
  k <- num.components
  part <- function(name) {
    v <- fixed[[name]]
    if (is.null(v)) return(rep(NA_real_, k))
    if (!(is.numeric(v) || all(is.na(v))) || is.object(v) || length(v) != k || any(is.nan(v) | is.infinite(v))) {
      bad("`", name, "` must be ", k, " numbers, one per component (NA where free), not ", describe_type(v))
    }
    as.double(v)
  }
  alpha <- part("alpha")
  mu <- part("mu")
  sh <- part(shape)
  if (all(is.na(c(alpha, mu, sh)))) bad("fixes nothing: give values, NA where free")
  a <- alpha[!is.na(alpha)]
  if (any(a <= 0 | a >= 1)) bad("`alpha` must lie in (0, 1)")
  if (length(a) == k && !noise) {
    if (abs(sum(a) - 1) > 1e-6) bad("`alpha` fixes every weight: they must sum to 1, not ", format(sum(a)))
  } else if (sum(a) >= 1) {
    bad("`alpha` must leave the free weights", if (noise) " and the noise's", " some weight: they sum to ",
        format(sum(a)))
  }
  if (family %in% c("invgauss", "gamma") && any(mu[!is.na(mu)] <= 0)) {
    bad("`mu` must be positive for the ", family_label(family))
  }
  if (any(sh[!is.na(sh)] <= 0)) bad("`", shape, "` must be positive")
  if (equal.scale && any(!is.na(sh))) {
    bad("`", shape, "` cannot be given with equal.scale = TRUE: one ", shape,
        " is shared by the components and estimated")
  }
  c(alpha, mu, sh)
}

# The core's records: every dataset's K weights, K means and K shapes one
# after the other, all NA for a dataset with nothing fixed; numeric(0)
# without `fixed`.
fixed_records <- function(fixed, k) {
  if (is.null(fixed)) return(numeric(0))
  unlist(lapply(fixed, function(f) if (is.null(f)) rep(NA_real_, 3 * k) else f), use.names = FALSE)
}

# The free parameters a fit's fixed values remove (fixed.rs's
# Fixed::removed): every fixed mean and shape, and of the K - 1 free
# weights (K with a noise component) those the fixed ones determine.
fixed_removed <- function(fit) {
  f <- fit$fixed
  if (is.null(f)) return(0)
  k <- length(f) %/% 3
  noise <- has_noise(fit)
  free_weights <- sum(is.na(f[seq_len(k)])) + noise
  sum(!is.na(f[-seq_len(k)])) + (k - 1 + noise) - max(free_weights - 1, 0)
}

# A fit's values held fixed as "mu2 = 3" (the parameter names of its
# standard errors, by the fit's component order); none without.
fixed_labels <- function(fit) {
  f <- fit$fixed
  if (is.null(f)) return(character())
  k <- length(f) %/% 3
  names <- paste0(rep(c("alpha", "mu", shape_name(fit$family)), each = k), rep(seq_len(k), 3))
  given <- !is.na(f)
  paste(names[given], "=", format(f[given], digits = 6))
}
