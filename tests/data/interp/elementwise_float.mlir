// Floating-point elementwise semantics: round-to-nearest-even ties in narrow types, overflow,
// NaN propagation in maximum/minimum, signed zeros, rounding ops, sign/abs/negate bit
// behaviour, f8 arithmetic.

func.func @bf16_add_ties_to_even() {
  // 1 + 2^-8 ties down to 1.0; 1 + 3*2^-8 ties up to 1 + 2^-6; overflow to inf.
  %0 = stablehlo.constant dense<[1.0, 1.0, 3.0e38]> : tensor<3xbf16>
  %1 = stablehlo.constant dense<[0.00390625, 0.01171875, 3.0e38]> : tensor<3xbf16>
  %2 = stablehlo.add %0, %1 : tensor<3xbf16>
  check.expect_eq_const %2, dense<[1.0, 1.015625, 0x7F80]> : tensor<3xbf16>
  func.return
}

// -----

func.func @f16_multiply_overflow_and_signed_zero() {
  %0 = stablehlo.constant dense<[65504.0, 300.0, -0.0, 0.5]> : tensor<4xf16>
  %1 = stablehlo.constant dense<[2.0, 300.0, 0.0, 0.5]> : tensor<4xf16>
  %2 = stablehlo.multiply %0, %1 : tensor<4xf16>
  check.expect_eq_const %2, dense<[0x7C00, 0x7C00, 0x8000, 0.25]> : tensor<4xf16>
  func.return
}

// -----

func.func @f32_add_rounds_in_single_precision() {
  %0 = stablehlo.constant dense<[16777216.0, 1.0e38]> : tensor<2xf32>
  %1 = stablehlo.constant dense<[1.0, 1.0e38]> : tensor<2xf32>
  %2 = stablehlo.add %0, %1 : tensor<2xf32>
  check.expect_eq_const %2, dense<[16777216.0, 2.0e38]> : tensor<2xf32>
  %3 = stablehlo.multiply %0, %1 : tensor<2xf32>
  check.expect_eq_const %3, dense<[16777216.0, 0x7F800000]> : tensor<2xf32>
  func.return
}

// -----

func.func @f8E5M2_add_ties() {
  %0 = stablehlo.constant dense<[1.0, 1.25, 57344.0]> : tensor<3xf8E5M2>
  %1 = stablehlo.constant dense<[0.125, 0.125, 57344.0]> : tensor<3xf8E5M2>
  %2 = stablehlo.add %0, %1 : tensor<3xf8E5M2>
  check.expect_eq_const %2, dense<[1.0, 1.5, 0x7C]> : tensor<3xf8E5M2>
  func.return
}

// -----

func.func @f8E4M3FN_overflow_is_nan() {
  %0 = stablehlo.constant dense<[448.0, 2.0, -3.0]> : tensor<3xf8E4M3FN>
  %1 = stablehlo.constant dense<[448.0, 3.0, 0.5]> : tensor<3xf8E4M3FN>
  %2 = stablehlo.add %0, %1 : tensor<3xf8E4M3FN>
  check.expect_eq_const %2, dense<[0x7F, 5.0, -2.5]> : tensor<3xf8E4M3FN>
  func.return
}

// -----

func.func @maximum_minimum_nan_and_zero() {
  // NaN, 1.0, -0.0, +0.0, -inf  vs  1.0, NaN, +0.0, -0.0, 5.0
  %0 = stablehlo.constant dense<[0x7FC00000, 1.0, 0x80000000, 0.0, 0xFF800000]> : tensor<5xf32>
  %1 = stablehlo.constant dense<[1.0, 0x7FC00000, 0.0, 0x80000000, 5.0]> : tensor<5xf32>
  %2 = stablehlo.maximum %0, %1 : tensor<5xf32>
  check.expect_eq_const %2, dense<[0x7FC00000, 0x7FC00000, 0.0, 0.0, 5.0]> : tensor<5xf32>
  %3 = stablehlo.minimum %0, %1 : tensor<5xf32>
  check.expect_eq_const %3, dense<[0x7FC00000, 0x7FC00000, 0x80000000, 0x80000000, 0xFF800000]> : tensor<5xf32>
  func.return
}

// -----

func.func @sign_negate_abs_special_values() {
  // NaN, -1.5, -0.0, +0.0, +inf
  %0 = stablehlo.constant dense<[0x7FF8000000000000, -1.5, 0x8000000000000000, 0.0, 0x7FF0000000000000]> : tensor<5xf64>
  %1 = stablehlo.sign %0 : tensor<5xf64>
  check.expect_eq_const %1, dense<[0x7FF8000000000000, -1.0, 0x8000000000000000, 0.0, 1.0]> : tensor<5xf64>
  %2 = stablehlo.negate %0 : tensor<5xf64>
  check.expect_eq_const %2, dense<[0xFFF8000000000000, 1.5, 0.0, 0x8000000000000000, 0xFFF0000000000000]> : tensor<5xf64>
  %3 = stablehlo.abs %0 : tensor<5xf64>
  check.expect_eq_const %3, dense<[0x7FF8000000000000, 1.5, 0.0, 0.0, 0x7FF0000000000000]> : tensor<5xf64>
  func.return
}

// -----

func.func @rounding_ops_ties() {
  %0 = stablehlo.constant dense<[2.5, -2.5, 0.5, -0.5, 1.5, 0x8000000000000000]> : tensor<6xf64>
  %1 = stablehlo.round_nearest_afz %0 : tensor<6xf64>
  check.expect_eq_const %1, dense<[3.0, -3.0, 1.0, -1.0, 2.0, 0x8000000000000000]> : tensor<6xf64>
  %2 = stablehlo.round_nearest_even %0 : tensor<6xf64>
  check.expect_eq_const %2, dense<[2.0, -2.0, 0.0, 0x8000000000000000, 2.0, 0x8000000000000000]> : tensor<6xf64>
  %3 = stablehlo.ceil %0 : tensor<6xf64>
  check.expect_eq_const %3, dense<[3.0, -2.0, 1.0, 0x8000000000000000, 2.0, 0x8000000000000000]> : tensor<6xf64>
  %4 = stablehlo.floor %0 : tensor<6xf64>
  check.expect_eq_const %4, dense<[2.0, -3.0, 0.0, -1.0, 1.0, 0x8000000000000000]> : tensor<6xf64>
  func.return
}

// -----

func.func @round_bf16() {
  %0 = stablehlo.constant dense<[2.5, -3.5, 0.25]> : tensor<3xbf16>
  %1 = stablehlo.round_nearest_even %0 : tensor<3xbf16>
  check.expect_eq_const %1, dense<[2.0, -4.0, 0.0]> : tensor<3xbf16>
  %2 = stablehlo.round_nearest_afz %0 : tensor<3xbf16>
  check.expect_eq_const %2, dense<[3.0, -4.0, 0.0]> : tensor<3xbf16>
  func.return
}

// -----

func.func @remainder_float_sign_of_dividend() {
  %0 = stablehlo.constant dense<[5.5, -5.5, 5.5, 1.0]> : tensor<4xf64>
  %1 = stablehlo.constant dense<[2.0, 2.0, -2.0, 0.0]> : tensor<4xf64>
  %2 = stablehlo.remainder %0, %1 : tensor<4xf64>
  check.expect_eq_const %2, dense<[1.5, -1.5, 1.5, 0x7FF8000000000000]> : tensor<4xf64>
  func.return
}

// -----

func.func @is_finite_f16() {
  %0 = stablehlo.constant dense<[0x7C00, 0xFC00, 0x7E00, 65504.0, 0.0]> : tensor<5xf16>
  %1 = stablehlo.is_finite %0 : (tensor<5xf16>) -> tensor<5xi1>
  check.expect_eq_const %1, dense<[false, false, false, true, true]> : tensor<5xi1>
  func.return
}

// -----

func.func @transcendental_f32() {
  %0 = stablehlo.constant dense<[0.0, 1.0, 4.0]> : tensor<3xf32>
  %1 = stablehlo.logistic %0 : tensor<3xf32>
  check.expect_almost_eq_const %1, dense<[0.5, 0.7310586, 0.98201376]> : tensor<3xf32>
  %2 = stablehlo.rsqrt %0 : tensor<3xf32>
  check.expect_eq_const %2, dense<[0x7F800000, 1.0, 0.5]> : tensor<3xf32>
  %3 = stablehlo.sqrt %0 : tensor<3xf32>
  check.expect_eq_const %3, dense<[0.0, 1.0, 2.0]> : tensor<3xf32>
  %4 = stablehlo.exponential_minus_one %0 : tensor<3xf32>
  check.expect_almost_eq_const %4, dense<[0.0, 1.7182818, 53.59815]> : tensor<3xf32>
  %5 = stablehlo.log_plus_one %0 : tensor<3xf32>
  check.expect_almost_eq_const %5, dense<[0.0, 0.6931472, 1.609438]> : tensor<3xf32>
  func.return
}

// -----

func.func @atan2_power_f64() {
  %0 = stablehlo.constant dense<[0.0, 1.0, -1.0, 0x8000000000000000]> : tensor<4xf64>
  %1 = stablehlo.constant dense<[1.0, 0.0, 0.0, -1.0]> : tensor<4xf64>
  %2 = stablehlo.atan2 %0, %1 : tensor<4xf64>
  check.expect_almost_eq_const %2, dense<[0.0, 1.5707963267948966, -1.5707963267948966, -3.141592653589793]> : tensor<4xf64>
  %3 = stablehlo.power %1, %0 : tensor<4xf64>
  check.expect_eq_const %3, dense<[1.0, 0.0, 0x7FF0000000000000, 1.0]> : tensor<4xf64>
  func.return
}
