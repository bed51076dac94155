// One failing check: `mlxcel run --check` prints FAIL and exits with status 1.
func.func @wrong_sum() {
  %lhs = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %sum = stablehlo.add %lhs, %lhs : tensor<2xi64>
  check.expect_eq_const %sum, dense<[2, 5]> : tensor<2xi64>
  func.return
}
