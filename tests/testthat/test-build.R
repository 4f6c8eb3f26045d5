test_that("the Rust library is linked and callable", {
  v <- bulkem:::bulkem_core_version_()
  expect_type(v, "character")
  expect_length(v, 1L)
})
