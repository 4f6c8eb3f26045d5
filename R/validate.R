# Argument checks for bulkem(). Each stops with stop_arg() (R/conditions.R),
# with a message that names the argument as the user wrote it; problems with
# one dataset's values are not checked here but reported per dataset by the
# engine (status "invalid").

# A list of datasets or one numeric vector (data frames, formulas and
# matrices were dealt with by make_datasets(), R/input.R); returns the list
# of double vectors and which of them hold NA or NaN (for drop_missing()).
# `threads` scan the values (control$threads).
check_datasets <- function(datasets, threads = 1L) {
  if (is.numeric(datasets) && !is.object(datasets)) {
    datasets <- list(datasets)
  }
  if (!is.list(datasets)) {
    stop_arg("`datasets` must be a list of numeric vectors or one numeric ",
             "vector, not ", describe_type(datasets))
  }
  if (length(datasets) == 0) {
    stop_arg("`datasets` is empty: give at least one dataset")
  }
  # one compiled pass over the list (a call may hold hundreds of thousands
  # of datasets): the engine reads double vectors in place
  kinds <- dataset_kinds_(datasets, as.integer(threads))
  wide <- which(kinds == 6L)
  if (length(wide)) {
    d <- dim(datasets[[wide[1]]])
    stop_arg("`datasets[[", wide[1], "]]` is a ", if (length(d) == 2) "matrix" else "array", " of ",
             paste(d, collapse = " x "), " values",
             if (length(wide) > 1) sprintf(" (%d datasets are matrices or arrays)", length(wide)),
             ": bulkem fits univariate mixtures, one numeric vector of observations per dataset, ",
             "and does not fit multivariate data yet. For a dataset per column give asplit(m, 2); ",
             "for one dataset of every value, c(m)")
  }
  double <- kinds <= 1L
  if (!all(double)) {
    ok <- kinds[!double] <= 4L
    if (!all(ok)) {
      bad <- which(!double)[which(!ok)[1]]
      stop_arg("`datasets[[", bad, "]]` must be a numeric vector, not ",
               describe_type(datasets[[bad]]),
               if (sum(!ok) > 1) sprintf(" (%d datasets are not numeric)", sum(!ok)))
    }
    datasets[!double] <- lapply(datasets[!double], as.double)
  }
  list(datasets = datasets, has_na = kinds == 1L | kinds == 3L)
}

describe_type <- function(x) {
  if (is.factor(x)) return("a factor")
  if (is.data.frame(x)) return("a data frame")
  paste0("of type ", typeof(x), if (is.object(x)) paste0(" (class ", class(x)[1], ")"))
}

check_whole <- function(x, arg, lower, upper) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || !is.finite(x) ||
      x != round(x) || x < lower || x > upper) {
    stop_arg("`", arg, "` must be a single whole number from ",
             format(lower, scientific = FALSE), " to ",
             format(upper, big.mark = ",", scientific = FALSE), ", not ",
             format_value(x))
  }
  x
}

check_components <- function(x) {
  ok <- is.numeric(x) && length(x) >= 1 && !anyNA(x) && all(is.finite(x)) &&
    all(x == round(x)) && all(x >= 1 & x <= max_components()) && !anyDuplicated(x)
  if (!ok) {
    stop_arg("`num.components` must be a whole number from 1 to ", max_components(), ", or several distinct ",
             "ones (e.g. 1:4), not ", format_value(x))
  }
  sort(as.integer(x))
}

check_positive <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || !is.finite(x) || x <= 0) {
    stop_arg("`", arg, "` must be a single positive finite number, not ",
             format_value(x))
  }
  invisible(x)
}

check_flag <- function(x, arg, na_ok = FALSE) {
  if (!is.logical(x) || length(x) != 1 || (!na_ok && is.na(x))) {
    stop_arg("`", arg, "` must be ", if (na_ok) "TRUE, FALSE or NA" else "TRUE or FALSE",
             ", not ", format_value(x))
  }
  invisible(x)
}

# A single number strictly between 0 and 1 (a level or a confidence level).
check_unit <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1 || is.na(x) || x <= 0 || x >= 1) {
    stop_arg("`", arg, "` must be a single number between 0 and 1")
  }
  invisible(x)
}

check_choice <- function(x, arg, choices) {
  # the default is the whole vector of choices: take the first, like match.arg
  if (identical(x, choices)) return(choices[1])
  if (!is.character(x) || length(x) != 1 || is.na(x) || !(x %in% choices)) {
    stop_arg("`", arg, "` must be one of ",
             paste0('"', choices, '"', collapse = ", "), ", not ", format_value(x))
  }
  x
}

format_value <- function(x) {
  if (is.null(x)) return("NULL")
  if (length(x) != 1) return(paste0("a ", typeof(x), " vector of length ", length(x)))
  if (is.character(x)) return(paste0('"', x, '"'))
  if (is.numeric(x) || is.logical(x)) return(format(x))
  describe_type(x)
}



# The cores this R session may use, as parallelly counts them: the fewest of
# the machine's cores, the cgroup (container) limit, options(mc.cores), a
# Slurm/PBS/SGE/LSF allocation and _R_CHECK_LIMIT_CORES_ (R CMD check).
default_threads <- function() {
  max(1L, as.integer(parallelly::availableCores()))
}

# A screen threshold: a number from 0 (the rule off) to `most`.
check_threshold <- function(x, arg, most) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x < 0 || x > most) {
    stop_arg("`", arg, "` must be a single number from 0 (the rule off) to ",
             if (is.finite(most)) most else "any finite value", ", not ", format_value(x))
  }
  invisible(x)
}

# control$devices: CUDA ordinals (0, 1, ...), distinct; NULL: every GPU.
check_devices <- function(x) {
  if (is.null(x)) return(integer(0))
  if (!is.numeric(x) || length(x) == 0 || anyNA(x) || any(x != round(x)) || any(x < 0) ||
      any(x > 1023) || anyDuplicated(x)) {
    stop_arg("`control$devices` must be distinct GPU numbers as bulkem_gpu_info() lists them ",
             "(0, 1, ...), or NULL for every GPU, not ", format_value(x))
  }
  as.integer(x)
}
