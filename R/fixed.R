# bulkem()'s `fixed`: weights, means and shapes held at given values
# (mixtools' mean.constr style), checked and flattened for the core (K
# weights, K means, K shapes, NA where free: fixed.rs), and what the
# `fixed` field of a fit with such values removes from its free parameters.

# `fixed` as bulkem() takes it: NULL (numeric(0)), or a list of `alpha`,
# `mu` and the family's shape, each K values with NA where free, for the
# call's one K.
check_fixed <- function(fixed, family, num.components, noise, equal.scale) {
  if (is.null(fixed)) return(numeric(0))
  shape <- shape_name(family)
  known <- c("alpha", "mu", shape)
  if (!is.list(fixed) || is.object(fixed) || length(fixed) == 0 || is.null(names(fixed)) ||
      !all(names(fixed) %in% known) || anyDuplicated(names(fixed))) {
    stop_arg("`fixed` must be a list with elements among ", paste0("`", known, "`", collapse = ", "),
             " (one value per component, NA where free), not ", describe_type(fixed))
  }
  if (length(num.components) != 1) {
    stop_arg("`fixed` holds values for one number of components: num.components must be one K, not ",
             paste(num.components, collapse = ", "))
  }
  k <- num.components
  part <- function(name) {
    v <- fixed[[name]]
    if (is.null(v)) return(rep(NA_real_, k))
    if (!(is.numeric(v) || all(is.na(v))) || is.object(v) || length(v) != k || any(is.nan(v) | is.infinite(v))) {
      stop_arg("`fixed$", name, "` must be ", k, " numbers, one per component (NA where free), not ",
               describe_type(v))
    }
    as.double(v)
  }
  alpha <- part("alpha")
  mu <- part("mu")
  sh <- part(shape)
  if (all(is.na(c(alpha, mu, sh)))) stop_arg("`fixed` fixes nothing: give values, NA where free")
  a <- alpha[!is.na(alpha)]
  if (any(a <= 0 | a >= 1)) stop_arg("`fixed$alpha` must lie in (0, 1)")
  if (length(a) == k && !noise) {
    if (abs(sum(a) - 1) > 1e-6) stop_arg("`fixed$alpha` fixes every weight: they must sum to 1, not ", format(sum(a)))
  } else if (sum(a) >= 1) {
    stop_arg("`fixed$alpha` must leave the free weights", if (noise) " and the noise's", " some weight: ",
             "they sum to ", format(sum(a)))
  }
  if (family %in% c("invgauss", "gamma") && any(mu[!is.na(mu)] <= 0)) {
    stop_arg("`fixed$mu` must be positive for the ", family_label(family))
  }
  if (any(sh[!is.na(sh)] <= 0)) stop_arg("`fixed$", shape, "` must be positive")
  if (equal.scale && any(!is.na(sh))) {
    stop_arg("`fixed$", shape, "` cannot be given with equal.scale = TRUE: one ", shape,
             " is shared by the components and estimated")
  }
  c(alpha, mu, sh)
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
