// compare with every compare_type, NaN semantics, signed zeros and totalOrder; select and
// clamp with scalar and full operands.

func.func @compare_float_nan_and_zero() {
  // -0.0, NaN, -NaN, 1.0, -inf, NaN  vs  +0.0, NaN, -inf, 2.0, -inf, 1.0
  %0 = stablehlo.constant dense<[0x8000000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 1.0, 0xFFF0000000000000, 0x7FF8000000000000]> : tensor<6xf64>
  %1 = stablehlo.constant dense<[0.0, 0x7FF8000000000000, 0xFFF0000000000000, 2.0, 0xFFF0000000000000, 1.0]> : tensor<6xf64>
  %2 = stablehlo.compare EQ, %0, %1, FLOAT : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xi1>
  check.expect_eq_const %2, dense<[true, false, false, false, true, false]> : tensor<6xi1>
  %3 = stablehlo.compare NE, %0, %1, FLOAT : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xi1>
  check.expect_eq_const %3, dense<[false, true, true, true, false, true]> : tensor<6xi1>
  %4 = stablehlo.compare LE, %0, %1, FLOAT : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xi1>
  check.expect_eq_const %4, dense<[true, false, false, true, true, false]> : tensor<6xi1>
  func.return
}

// -----

func.func @compare_totalorder() {
  // -0.0, NaN, -NaN, 1.0, -inf, NaN  vs  +0.0, NaN, -inf, 2.0, -inf, 1.0
  %0 = stablehlo.constant dense<[0x8000000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 1.0, 0xFFF0000000000000, 0x7FF8000000000000]> : tensor<6xf64>
  %1 = stablehlo.constant dense<[0.0, 0x7FF8000000000000, 0xFFF0000000000000, 2.0, 0xFFF0000000000000, 1.0]> : tensor<6xf64>
  %2 = stablehlo.compare EQ, %0, %1, TOTALORDER : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xi1>
  check.expect_eq_const %2, dense<[false, true, false, false, true, false]> : tensor<6xi1>
  %3 = stablehlo.compare LT, %0, %1, TOTALORDER : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xi1>
  check.expect_eq_const %3, dense<[true, false, true, true, false, false]> : tensor<6xi1>
  %4 = stablehlo.compare GE, %0, %1, TOTALORDER : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xi1>
  check.expect_eq_const %4, dense<[false, true, false, false, true, true]> : tensor<6xi1>
  func.return
}

// -----

func.func @compare_totalorder_bf16() {
  %0 = stablehlo.constant dense<[0x8000, 0xFFC0, 1.0]> : tensor<3xbf16>
  %1 = stablehlo.constant dense<[0x0000, 0xFF80, 0x7FC0]> : tensor<3xbf16>
  %2 = stablehlo.compare GT, %0, %1, TOTALORDER : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xi1>
  check.expect_eq_const %2, dense<[false, false, false]> : tensor<3xi1>
  %3 = stablehlo.compare LT, %0, %1, TOTALORDER : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xi1>
  check.expect_eq_const %3, dense<[true, true, true]> : tensor<3xi1>
  func.return
}

// -----

func.func @compare_sub_byte_ints() {
  %0 = stablehlo.constant dense<[-8, 7, -1]> : tensor<3xi4>
  %1 = stablehlo.constant dense<[7, -8, 1]> : tensor<3xi4>
  %2 = stablehlo.compare LT, %0, %1, SIGNED : (tensor<3xi4>, tensor<3xi4>) -> tensor<3xi1>
  check.expect_eq_const %2, dense<[true, false, true]> : tensor<3xi1>
  %3 = stablehlo.constant dense<[15, 0, 3]> : tensor<3xui4>
  %4 = stablehlo.constant dense<[1, 0, 3]> : tensor<3xui4>
  %5 = stablehlo.compare GE, %3, %4, UNSIGNED : (tensor<3xui4>, tensor<3xui4>) -> tensor<3xi1>
  check.expect_eq_const %5, dense<[true, true, true]> : tensor<3xi1>
  %6 = stablehlo.compare GT, %3, %4, UNSIGNED : (tensor<3xui4>, tensor<3xui4>) -> tensor<3xi1>
  check.expect_eq_const %6, dense<[true, false, false]> : tensor<3xi1>
  func.return
}

// -----

func.func @compare_complex() {
  %0 = stablehlo.constant dense<[(1.0, 2.0), (1.0, 2.0), (1.0, 0x7FF8000000000000)]> : tensor<3xcomplex<f64>>
  %1 = stablehlo.constant dense<[(1.0, 3.0), (1.0, 2.0), (0.0, 0.0)]> : tensor<3xcomplex<f64>>
  %2 = stablehlo.compare EQ, %0, %1 : (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) -> tensor<3xi1>
  check.expect_eq_const %2, dense<[false, true, false]> : tensor<3xi1>
  %3 = stablehlo.compare NE, %0, %1, FLOAT : (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) -> tensor<3xi1>
  check.expect_eq_const %3, dense<[true, false, true]> : tensor<3xi1>
  func.return
}

// -----

func.func @select_scalar_and_full_predicate() {
  %pred = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
  %spred = stablehlo.constant dense<false> : tensor<i1>
  %t = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xbf16>
  %f = stablehlo.constant dense<[-1.0, -2.0, -3.0]> : tensor<3xbf16>
  %0 = stablehlo.select %pred, %t, %f : (tensor<3xi1>, tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  check.expect_eq_const %0, dense<[1.0, -2.0, 3.0]> : tensor<3xbf16>
  %1 = stablehlo.select %spred, %t, %f : (tensor<i1>, tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  check.expect_eq_const %1, dense<[-1.0, -2.0, -3.0]> : tensor<3xbf16>
  func.return
}

// -----

func.func @select_complex_sub_byte() {
  %pred = stablehlo.constant dense<[false, true]> : tensor<2xi1>
  %t = stablehlo.constant dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  %f = stablehlo.constant dense<[(5.0, 6.0), (7.0, 8.0)]> : tensor<2xcomplex<f32>>
  %0 = stablehlo.select %pred, %t, %f : (tensor<2xi1>, tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  check.expect_eq_const %0, dense<[(5.0, 6.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  %ti = stablehlo.constant dense<[-8, 7]> : tensor<2xi4>
  %fi = stablehlo.constant dense<[1, 2]> : tensor<2xi4>
  %1 = stablehlo.select %pred, %ti, %fi : (tensor<2xi1>, tensor<2xi4>, tensor<2xi4>) -> tensor<2xi4>
  check.expect_eq_const %1, dense<[1, 7]> : tensor<2xi4>
  func.return
}

// -----

func.func @clamp_float_scalar_bounds_nan() {
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<1.0> : tensor<f32>
  %x = stablehlo.constant dense<[-3.0, 0.5, 7.0, 0x7FC00000, 0x80000000]> : tensor<5xf32>
  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
  check.expect_eq_const %0, dense<[0.0, 0.5, 1.0, 0x7FC00000, 0.0]> : tensor<5xf32>
  func.return
}

// -----

func.func @clamp_unsigned_full_bounds() {
  %lo = stablehlo.constant dense<[1, 200, 0]> : tensor<3xui8>
  %hi = stablehlo.constant dense<[5, 250, 255]> : tensor<3xui8>
  %x = stablehlo.constant dense<[0, 255, 128]> : tensor<3xui8>
  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<3xui8>, tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  check.expect_eq_const %0, dense<[1, 250, 128]> : tensor<3xui8>
  func.return
}
