// Compute kernels: dot_general and dot.

func.func @dot_general_batch_middle_i64() {
  %lhs = stablehlo.constant dense<[[[-3, -2, -1, 0], [1, 2, 3, -3]], [[-2, -1, 0, 1], [2, 3, -3, -2]], [[-1, 0, 1, 2], [3, -3, -2, -1]]]> : tensor<3x2x4xi64>
  %rhs = stablehlo.constant dense<[[[-2, 0, 2, -1, 1], [0, 2, -1, 1, -2]], [[1, -2, 0, 2, -1], [-2, 0, 2, -1, 1]], [[-1, 1, -2, 0, 2], [1, -2, 0, 2, -1]], [[2, -1, 1, -2, 0], [-1, 1, -2, 0, 2]]]> : tensor<4x2x5xi64>
  %r = stablehlo.dot_general %lhs, %rhs, batching_dims = [1] x [1], contracting_dims = [2] x [0] : (tensor<3x2x4xi64>, tensor<4x2x5xi64>) -> tensor<2x3x5xi64>
  check.expect_eq_const %r, dense<[[[5, 3, -4, -1, -3], [5, 1, -3, -2, -1], [5, -1, -2, -3, 1]], [[2, -7, 9, 5, -9], [-7, 8, 8, -7, -2], [5, 9, -7, 2, -9]]]> : tensor<2x3x5xi64>
  func.return
}

// -----

func.func @dot_general_two_contracting_f32() {
  %lhs = stablehlo.constant dense<[[[0.5, 0.25], [1.5, 1.25], [2.5, 2.25]], [[1.0, 0.75], [2.0, 1.75], [3.0, 2.75]]]> : tensor<2x3x2xf32>
  %rhs = stablehlo.constant dense<[[[0.0, 0.5], [-1.0, -0.5]], [[0.75, 1.25], [-0.25, 0.25]], [[1.5, 2.0], [0.5, 1.0]]]> : tensor<3x2x2xf32>
  %r = "stablehlo.dot_general"(%lhs, %rhs) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2, 1], rhs_contracting_dimensions = [1, 0]>} : (tensor<2x3x2xf32>, tensor<3x2x2xf32>) -> tensor<2x2xf32>
  check.expect_almost_eq_const %r, dense<[[5.4375, 9.5625], [6.1875, 11.8125]]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @dot_general_i8_to_i32() {
  %a = stablehlo.constant dense<[127, 127, -128]> : tensor<3xi8>
  %b = stablehlo.constant dense<[127, 127, -128]> : tensor<3xi8>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<3xi8>, tensor<3xi8>) -> tensor<i32>
  check.expect_eq_const %r, dense<48642> : tensor<i32>
  func.return
}

// -----

func.func @dot_general_ui8_wraps() {
  %a = stablehlo.constant dense<[200, 3]> : tensor<2xui8>
  %b = stablehlo.constant dense<[2, 5]> : tensor<2xui8>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xui8>, tensor<2xui8>) -> tensor<ui8>
  check.expect_eq_const %r, dense<159> : tensor<ui8>
  func.return
}

// -----

func.func @dot_general_i64_exact() {
  %a = stablehlo.constant dense<[4611686018427387905, 3]> : tensor<2xi64>
  %b = stablehlo.constant dense<[3, 1]> : tensor<2xi64>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xi64>, tensor<2xi64>) -> tensor<i64>
  check.expect_eq_const %r, dense<-4611686018427387898> : tensor<i64>
  func.return
}

// -----

func.func @dot_general_complex() {
  %a = stablehlo.constant dense<[[(1.0, 2.0), (3.0, -1.0)], [(0.0, 0.5), (-2.0, 0.0)]]> : tensor<2x2xcomplex<f64>>
  %b = stablehlo.constant dense<[[(2.0, -1.0)], [(1.0, 1.0)]]> : tensor<2x1xcomplex<f64>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2xcomplex<f64>>, tensor<2x1xcomplex<f64>>) -> tensor<2x1xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[(8.0, 5.0)], [(-1.5, -1.0)]]> : tensor<2x1xcomplex<f64>>
  func.return
}

// -----

func.func @dot_general_empty_contraction() {
  %a = stablehlo.constant dense<> : tensor<2x0xf32>
  %b = stablehlo.constant dense<> : tensor<0x3xf32>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x0xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
  check.expect_almost_eq_const %r, dense<0.0> : tensor<2x3xf32>
  func.return
}

// -----

func.func @dot_general_bf16_to_f32() {
  %a = stablehlo.constant dense<[256.0, 1.0, 1.0]> : tensor<3xbf16>
  %b = stablehlo.constant dense<[1.0, 1.0, 1.0]> : tensor<3xbf16>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<f32>
  check.expect_almost_eq_const %r, dense<258.0> : tensor<f32>
  func.return
}

// -----

func.func @dot_legacy() {
  %m = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %v = stablehlo.constant dense<[7, 8, 9]> : tensor<3xi32>
  %mv = stablehlo.dot %m, %v : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2xi32>
  %vv = stablehlo.dot %v, %v : (tensor<3xi32>, tensor<3xi32>) -> tensor<i32>
  %mt = stablehlo.constant dense<[[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
  %vm = "stablehlo.dot"(%v, %mt) : (tensor<3xi32>, tensor<3x2xi32>) -> tensor<2xi32>
  check.expect_eq_const %mv, dense<[50, 122]> : tensor<2xi32>
  check.expect_eq_const %vv, dense<194> : tensor<i32>
  check.expect_eq_const %vm, dense<[50, 122]> : tensor<2xi32>
  func.return
}
