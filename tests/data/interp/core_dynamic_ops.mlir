// dynamic_* ops (generic form): shape operands must match the static result types; paddings
// and slice sizes come from operands.

func.func @dynamic_iota_generic() {
  %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %r = "stablehlo.dynamic_iota"(%shape) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> tensor<2x3xf32>
  check.expect_eq_const %r, dense<[[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]> : tensor<2x3xf32>
  func.return
}

// -----

func.func @dynamic_reshape_generic() {
  %x = stablehlo.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %shape = stablehlo.constant dense<[3, 2]> : tensor<2xi32>
  %r = "stablehlo.dynamic_reshape"(%x, %shape) : (tensor<6xi32>, tensor<2xi32>) -> tensor<3x2xi32>
  check.expect_eq_const %r, dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  func.return
}

// -----

func.func @dynamic_pad_generic() {
  %x = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi64>
  %pv = stablehlo.constant dense<0> : tensor<i64>
  %lo = stablehlo.constant dense<[-1]> : tensor<1xi64>
  %hi = stablehlo.constant dense<[2]> : tensor<1xi64>
  %in = stablehlo.constant dense<[1]> : tensor<1xi64>
  %r = "stablehlo.dynamic_pad"(%x, %pv, %lo, %hi, %in) : (tensor<3xi64>, tensor<i64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xi64>
  check.expect_eq_const %r, dense<[0, 2, 0, 3, 0, 0]> : tensor<6xi64>
  func.return
}

// -----

func.func @dynamic_broadcast_in_dim_generic() {
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xbf16>
  %shape = stablehlo.constant dense<[2, 2]> : tensor<2xi64>
  %r = "stablehlo.dynamic_broadcast_in_dim"(%x, %shape) {broadcast_dimensions = array<i64: 0>} : (tensor<2xbf16>, tensor<2xi64>) -> tensor<2x2xbf16>
  check.expect_eq_const %r, dense<[[1.0, 1.0], [2.0, 2.0]]> : tensor<2x2xbf16>
  func.return
}
