// Arithmetic and conversions on the 4/6/8-bit float types: round-to-nearest-even ties,
// saturation (finite-only f4/f6), overflow to inf (IEEE-like) or NaN (FN/FNUZ), no negative
// zero in FNUZ types.

func.func @f4E2M1FN_arith() {
  %0 = stablehlo.constant dense<[1.5, 4.0, 2.0, 1.5, -6.0]> : tensor<5xf4E2M1FN>
  %1 = stablehlo.constant dense<[1.5, 4.0, 0.5, 1.5, -1.0]> : tensor<5xf4E2M1FN>
  %2 = stablehlo.add %0, %1 : tensor<5xf4E2M1FN>
  check.expect_eq_const %2, dense<[3.0, 6.0, 2.0, 3.0, -6.0]> : tensor<5xf4E2M1FN>
  %3 = stablehlo.multiply %0, %1 : tensor<5xf4E2M1FN>
  check.expect_eq_const %3, dense<[2.0, 6.0, 1.0, 2.0, 6.0]> : tensor<5xf4E2M1FN>
  func.return
}

// -----

func.func @f4E2M1FN_convert() {
  %0 = stablehlo.constant dense<[0.25, 0.75, 2.5, 100.0, -0.1]> : tensor<5xf32>
  %1 = stablehlo.convert %0 : (tensor<5xf32>) -> tensor<5xf4E2M1FN>
  check.expect_eq_const %1, dense<[0.0, 1.0, 2.0, 6.0, -0.0]> : tensor<5xf4E2M1FN>
  %2 = stablehlo.convert %1 : (tensor<5xf4E2M1FN>) -> tensor<5xi8>
  check.expect_eq_const %2, dense<[0, 1, 2, 6, 0]> : tensor<5xi8>
  func.return
}

// -----

func.func @f6_types() {
  %0 = stablehlo.constant dense<[7.5, 0.125, 3.0]> : tensor<3xf6E2M3FN>
  %1 = stablehlo.constant dense<[1.0, 0.0625, 0.25]> : tensor<3xf6E2M3FN>
  %2 = stablehlo.add %0, %1 : tensor<3xf6E2M3FN>
  check.expect_eq_const %2, dense<[7.5, 0.125, 3.25]> : tensor<3xf6E2M3FN>
  %3 = stablehlo.constant dense<[28.0, 0.0625, 3.0]> : tensor<3xf6E3M2FN>
  %4 = stablehlo.constant dense<[8.0, 0.0625, 0.5]> : tensor<3xf6E3M2FN>
  %5 = stablehlo.add %3, %4 : tensor<3xf6E3M2FN>
  check.expect_eq_const %5, dense<[28.0, 0.125, 3.5]> : tensor<3xf6E3M2FN>
  func.return
}

// -----

func.func @f8E3M4_and_f8E4M3_overflow_to_inf() {
  %0 = stablehlo.constant dense<[15.5, 1.0]> : tensor<2xf8E3M4>
  %1 = stablehlo.constant dense<[1.0, 0.03125]> : tensor<2xf8E3M4>
  %2 = stablehlo.add %0, %1 : tensor<2xf8E3M4>
  check.expect_eq_const %2, dense<[0x70, 1.0]> : tensor<2xf8E3M4>
  %3 = stablehlo.constant dense<[240.0, 1.0]> : tensor<2xf8E4M3>
  %4 = stablehlo.constant dense<[16.0, 0.0625]> : tensor<2xf8E4M3>
  %5 = stablehlo.add %3, %4 : tensor<2xf8E4M3>
  check.expect_eq_const %5, dense<[0x78, 1.0]> : tensor<2xf8E4M3>
  func.return
}

// -----

func.func @fnuz_types_no_negative_zero() {
  %0 = stablehlo.constant dense<[0.0, 2.0, 240.0]> : tensor<3xf8E4M3FNUZ>
  %1 = stablehlo.negate %0 : tensor<3xf8E4M3FNUZ>
  check.expect_eq_const %1, dense<[0.0, -2.0, -240.0]> : tensor<3xf8E4M3FNUZ>
  %2 = stablehlo.multiply %1, %0 : tensor<3xf8E4M3FNUZ>
  check.expect_eq_const %2, dense<[0.0, -4.0, 0x80]> : tensor<3xf8E4M3FNUZ>
  %3 = stablehlo.constant dense<[30.0, -1.0]> : tensor<2xf8E4M3B11FNUZ>
  %4 = stablehlo.constant dense<[2.0, 1.0]> : tensor<2xf8E4M3B11FNUZ>
  %5 = stablehlo.add %3, %4 : tensor<2xf8E4M3B11FNUZ>
  check.expect_eq_const %5, dense<[0x80, 0.0]> : tensor<2xf8E4M3B11FNUZ>
  %6 = stablehlo.constant dense<[57344.0, 0.5]> : tensor<2xf8E5M2FNUZ>
  %7 = stablehlo.add %6, %6 : tensor<2xf8E5M2FNUZ>
  check.expect_eq_const %7, dense<[0x80, 1.0]> : tensor<2xf8E5M2FNUZ>
  func.return
}

// -----

func.func @fnuz_compare_nan() {
  %0 = stablehlo.constant dense<[0x80, 1.0]> : tensor<2xf8E4M3FNUZ>
  %1 = stablehlo.constant dense<[0x80, 1.0]> : tensor<2xf8E4M3FNUZ>
  %2 = stablehlo.compare EQ, %0, %1, FLOAT : (tensor<2xf8E4M3FNUZ>, tensor<2xf8E4M3FNUZ>) -> tensor<2xi1>
  check.expect_eq_const %2, dense<[false, true]> : tensor<2xi1>
  %3 = stablehlo.is_finite %0 : (tensor<2xf8E4M3FNUZ>) -> tensor<2xi1>
  check.expect_eq_const %3, dense<[false, true]> : tensor<2xi1>
  func.return
}

// -----

func.func @f8E8M0FNU_powers_of_two() {
  %0 = stablehlo.constant dense<[2.0, 4.0, 2.0]> : tensor<3xf8E8M0FNU>
  %1 = stablehlo.constant dense<[4.0, 0.5, 2.0]> : tensor<3xf8E8M0FNU>
  %2 = stablehlo.multiply %0, %1 : tensor<3xf8E8M0FNU>
  check.expect_eq_const %2, dense<[8.0, 2.0, 4.0]> : tensor<3xf8E8M0FNU>
  %3 = stablehlo.add %0, %1 : tensor<3xf8E8M0FNU>
  check.expect_eq_const %3, dense<[8.0, 4.0, 4.0]> : tensor<3xf8E8M0FNU>
  func.return
}

// -----

func.func @f8_conversions_chain() {
  %0 = stablehlo.constant dense<[1.0625, 1.1875, -300.0, 0.0009765625]> : tensor<4xf32>
  %1 = stablehlo.convert %0 : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  check.expect_eq_const %1, dense<[1.0, 1.25, -288.0, 0.0]> : tensor<4xf8E4M3FN>
  %2 = stablehlo.convert %0 : (tensor<4xf32>) -> tensor<4xf8E5M2>
  check.expect_eq_const %2, dense<[1.0, 1.25, -320.0, 0.0009765625]> : tensor<4xf8E5M2>
  %3 = stablehlo.convert %2 : (tensor<4xf8E5M2>) -> tensor<4xf8E4M3FNUZ>
  check.expect_eq_const %3, dense<[1.0, 1.25, 0x80, 0.0009765625]> : tensor<4xf8E4M3FNUZ>
  func.return
}
