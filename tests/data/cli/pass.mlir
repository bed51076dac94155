// Two passing cases: `mlxcel run --check` prints two PASS lines.
func.func @add_i64() {
  %lhs = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi64>
  %rhs = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi64>
  %sum = stablehlo.add %lhs, %rhs : tensor<3xi64>
  check.expect_eq_const %sum, dense<[11, 22, 33]> : tensor<3xi64>
  func.return
}

// -----

func.func @no_checks() {
  %0 = stablehlo.constant dense<1.5> : tensor<f32>
  func.return
}
