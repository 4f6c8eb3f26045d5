# DESIGN §5: a dataset's fit is a pure function of the seed and its values.

test_that("set.seed() makes a call reproducible; the seed is recorded", {
  d <- lapply(1:4, function(i) { set.seed(i); b1_dataset(300) })
  set.seed(42)
  a <- bulkem(d, random.inits = 5)
  set.seed(42)
  b <- bulkem(d, random.inits = 5)
  expect_identical(unclass(a)[1:4], unclass(b)[1:4])
  expect_identical(attr(a, "seed"), attr(b, "seed"))
  c2 <- bulkem(d, random.inits = 5, seed = attr(a, "seed"))
  expect_identical(unclass(a)[1:4], unclass(c2)[1:4])
  set.seed(43)
  e <- bulkem(d, random.inits = 5)
  expect_false(identical(lapply(a, `[[`, "init_mu"), lapply(e, `[[`, "init_mu")))
})

test_that("fits are bitwise identical whatever the number of threads", {
  d <- lapply(1:6, function(i) { set.seed(i); b1_dataset(200 + 50 * i) })
  one <- bulkem(d, random.inits = 6, seed = 9, control = list(threads = 1))
  two <- bulkem(d, random.inits = 6, seed = 9, control = list(threads = 2))
  many <- bulkem(d, random.inits = 6, seed = 9, control = list(threads = 5))
  expect_identical(attr(one, "threads"), 1L)
  expect_identical(attr(many, "threads"), 5L)
  expect_identical(unclass(one)[1:6], unclass(two)[1:6])
  expect_identical(unclass(one)[1:6], unclass(many)[1:6])
})

test_that("a dataset's fit does not depend on its position or its company", {
  d <- lapply(1:5, function(i) { set.seed(i); b1_dataset(400) })
  all5 <- bulkem(d, random.inits = 4, seed = 3)
  alone <- bulkem(d[3], random.inits = 4, seed = 3)
  shuffled <- quiet_bulkem(c(list(c(1, -1, NA)), rev(d)), random.inits = 4, seed = 3)
  expect_identical(unclass(all5[[3]]), unclass(alone[[1]]))
  expect_identical(unclass(all5[[3]]), unclass(shuffled[[4]]))
  expect_identical(unclass(all5[[1]]), unclass(shuffled[[6]]))
})
