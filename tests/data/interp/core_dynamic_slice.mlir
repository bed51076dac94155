// Index clamping of dynamic_slice / dynamic_update_slice: start indices are clamped into
// [0, dim - size] per dimension (negative -> 0, too large -> dim - size).

func.func @dynamic_slice_clamp_high() {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi64>
  %i = stablehlo.constant dense<5> : tensor<i64>
  %j = stablehlo.constant dense<2> : tensor<i64>
  %result = "stablehlo.dynamic_slice"(%operand, %i, %j) {
    slice_sizes = array<i64: 2, 2>
  } : (tensor<3x3xi64>, tensor<i64>, tensor<i64>) -> tensor<2x2xi64>
  check.expect_eq_const %result, dense<[[5, 6], [8, 9]]> : tensor<2x2xi64>
  func.return
}

// -----

func.func @dynamic_slice_clamp_negative() {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi64>
  %i = stablehlo.constant dense<-7> : tensor<i32>
  %j = stablehlo.constant dense<1> : tensor<i32>
  %result = stablehlo.dynamic_slice %operand, %i, %j, sizes = [2, 1]
    : (tensor<3x3xi64>, tensor<i32>, tensor<i32>) -> tensor<2x1xi64>
  check.expect_eq_const %result, dense<[[2], [5]]> : tensor<2x1xi64>
  func.return
}

// -----

func.func @dynamic_slice_unsigned_index_f32() {
  %operand = stablehlo.constant dense<[1.5, 2.5, 3.5, 4.5]> : tensor<4xf32>
  %i = stablehlo.constant dense<200> : tensor<ui8>
  %result = stablehlo.dynamic_slice %operand, %i, sizes = [3]
    : (tensor<4xf32>, tensor<ui8>) -> tensor<3xf32>
  check.expect_eq_const %result, dense<[2.5, 3.5, 4.5]> : tensor<3xf32>
  func.return
}

// -----

func.func @dynamic_slice_full_complex() {
  %operand = stablehlo.constant dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f64>>
  %i = stablehlo.constant dense<1> : tensor<i64>
  %result = stablehlo.dynamic_slice %operand, %i, sizes = [2]
    : (tensor<2xcomplex<f64>>, tensor<i64>) -> tensor<2xcomplex<f64>>
  check.expect_eq_const %result, dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f64>>
  func.return
}

// -----

func.func @dynamic_update_slice_clamp() {
  %operand = stablehlo.constant dense<[[0, 0, 0], [0, 0, 0], [0, 0, 0]]> : tensor<3x3xi64>
  %update = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %i = stablehlo.constant dense<-1> : tensor<i64>
  %j = stablehlo.constant dense<9> : tensor<i64>
  %result = stablehlo.dynamic_update_slice %operand, %update, %i, %j
    : (tensor<3x3xi64>, tensor<2x2xi64>, tensor<i64>, tensor<i64>) -> tensor<3x3xi64>
  check.expect_eq_const %result, dense<[[0, 1, 2], [0, 3, 4], [0, 0, 0]]> : tensor<3x3xi64>
  func.return
}

// -----

func.func @dynamic_update_slice_bf16_middle() {
  %operand = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xbf16>
  %update = stablehlo.constant dense<[-1.0, -2.0]> : tensor<2xbf16>
  %i = stablehlo.constant dense<2> : tensor<i32>
  %result = stablehlo.dynamic_update_slice %operand, %update, %i
    : (tensor<5xbf16>, tensor<2xbf16>, tensor<i32>) -> tensor<5xbf16>
  check.expect_eq_const %result, dense<[1.0, 2.0, -1.0, -2.0, 5.0]> : tensor<5xbf16>
  func.return
}
