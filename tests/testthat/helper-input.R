# make_datasets() (R/input.R) called as bulkem() calls it, for tests of the
# input forms that bulkem() cannot fit yet or whose list is checked directly:
# the same arguments, with `subset` unevaluated and the caller's frame as the
# environment of the formula's variables.
make_input <- function(datasets, data = NULL, subset, na.action, value = NULL, group = NULL,
                       formula = NULL) {
  bulkem:::make_datasets(
    datasets = if (!missing(datasets)) datasets, data = data,
    subset = if (!missing(subset)) substitute(subset),
    na.action = if (!missing(na.action)) na.action,
    value = value, group = group, formula = formula,
    given = c(datasets = !missing(datasets), data = !missing(data), na.action = !missing(na.action)),
    env = parent.frame())
}
