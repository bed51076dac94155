// pad: negative edge padding crops, interior padding interleaves, all element kinds.

func.func @pad_negative_low_high() {
  %operand = stablehlo.constant dense<[1, 2, 3, 4, 5]> : tensor<5xi64>
  %pv = stablehlo.constant dense<0> : tensor<i64>
  %result = stablehlo.pad %operand, %pv, low = [-2], high = [-1], interior = [0]
    : (tensor<5xi64>, tensor<i64>) -> tensor<2xi64>
  check.expect_eq_const %result, dense<[3, 4]> : tensor<2xi64>
  func.return
}

// -----

func.func @pad_interior_then_crop() {
  %operand = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %pv = stablehlo.constant dense<9> : tensor<i32>
  // interior: [1 9 9 2 9 9 3] (7), low -1 -> [9 9 2 9 9 3], high 2 -> 8 elements
  %result = stablehlo.pad %operand, %pv, low = [-1], high = [2], interior = [2]
    : (tensor<3xi32>, tensor<i32>) -> tensor<8xi32>
  check.expect_eq_const %result, dense<[9, 9, 2, 9, 9, 3, 9, 9]> : tensor<8xi32>
  func.return
}

// -----

func.func @pad_2d_f32() {
  %operand = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %pv = stablehlo.constant dense<-0.5> : tensor<f32>
  %result = stablehlo.pad %operand, %pv, low = [1, 0], high = [0, 1], interior = [1, 0]
    : (tensor<2x2xf32>, tensor<f32>) -> tensor<4x3xf32>
  check.expect_eq_const %result, dense<[[-0.5, -0.5, -0.5], [1.0, 2.0, -0.5], [-0.5, -0.5, -0.5], [3.0, 4.0, -0.5]]> : tensor<4x3xf32>
  func.return
}

// -----

func.func @pad_to_empty_and_bool() {
  %operand = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %pv = stablehlo.constant dense<true> : tensor<i1>
  %result = stablehlo.pad %operand, %pv, low = [1], high = [1], interior = [1]
    : (tensor<2xi1>, tensor<i1>) -> tensor<5xi1>
  check.expect_eq_const %result, dense<[true, true, true, false, true]> : tensor<5xi1>
  %empty = stablehlo.pad %operand, %pv, low = [-1], high = [-1], interior = [0]
    : (tensor<2xi1>, tensor<i1>) -> tensor<0xi1>
  func.return
}

// -----

func.func @pad_generic_complex() {
  %operand = stablehlo.constant dense<[(1.0, 1.0)]> : tensor<1xcomplex<f32>>
  %pv = stablehlo.constant dense<(0.0, -1.0)> : tensor<complex<f32>>
  %result = "stablehlo.pad"(%operand, %pv) {
    edge_padding_low = array<i64: 1>,
    edge_padding_high = array<i64: 1>,
    interior_padding = array<i64: 0>
  } : (tensor<1xcomplex<f32>>, tensor<complex<f32>>) -> tensor<3xcomplex<f32>>
  check.expect_eq_const %result, dense<[(0.0, -1.0), (1.0, 1.0), (0.0, -1.0)]> : tensor<3xcomplex<f32>>
  func.return
}
