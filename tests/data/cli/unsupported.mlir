// An op this engine does not know, in generic form: reported as UNSUPPORTED, never PASS.
func.func @frobnicate() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %1 = "stablehlo.frobnicate"(%0) : (tensor<2xi64>) -> tensor<2xi64>
  check.expect_eq_const %1, dense<[1, 2]> : tensor<2xi64>
  func.return
}
