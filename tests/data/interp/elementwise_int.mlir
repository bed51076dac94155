// Integer and boolean elementwise semantics: wrap-around at every width, division and
// remainder by zero, INT_MIN / -1, out-of-range shifts, power with negative exponents,
// popcnt / count_leading_zeros per width.

func.func @add_i4_wraps() {
  %0 = stablehlo.constant dense<[7, -8, 5, -1]> : tensor<4xi4>
  %1 = stablehlo.constant dense<[1, -1, 5, 1]> : tensor<4xi4>
  %2 = stablehlo.add %0, %1 : tensor<4xi4>
  check.expect_eq_const %2, dense<[-8, 7, -6, 0]> : tensor<4xi4>
  func.return
}

// -----

func.func @mul_i2_ui2_wrap() {
  %0 = stablehlo.constant dense<[1, -2, -2, -1]> : tensor<4xi2>
  %1 = stablehlo.constant dense<[1, -1, -2, -1]> : tensor<4xi2>
  %2 = stablehlo.multiply %0, %1 : tensor<4xi2>
  check.expect_eq_const %2, dense<[1, -2, 0, 1]> : tensor<4xi2>
  %3 = stablehlo.constant dense<[3, 2]> : tensor<2xui2>
  %4 = stablehlo.constant dense<[3, 2]> : tensor<2xui2>
  %5 = stablehlo.multiply %3, %4 : tensor<2xui2>
  check.expect_eq_const %5, dense<[1, 0]> : tensor<2xui2>
  func.return
}

// -----

func.func @sub_negate_ui4() {
  %0 = stablehlo.constant dense<[0, 9, 15]> : tensor<3xui4>
  %1 = stablehlo.constant dense<[1, 9, 1]> : tensor<3xui4>
  %2 = stablehlo.subtract %0, %1 : tensor<3xui4>
  check.expect_eq_const %2, dense<[15, 0, 14]> : tensor<3xui4>
  %3 = stablehlo.negate %0 : tensor<3xui4>
  check.expect_eq_const %3, dense<[0, 7, 1]> : tensor<3xui4>
  func.return
}

// -----

func.func @abs_negate_int_min() {
  %0 = stablehlo.constant dense<[-128, -5, 0, 127]> : tensor<4xi8>
  %1 = stablehlo.abs %0 : tensor<4xi8>
  check.expect_eq_const %1, dense<[-128, 5, 0, 127]> : tensor<4xi8>
  %2 = stablehlo.negate %0 : tensor<4xi8>
  check.expect_eq_const %2, dense<[-128, 5, 0, -127]> : tensor<4xi8>
  %3 = stablehlo.sign %0 : tensor<4xi8>
  check.expect_eq_const %3, dense<[-1, -1, 0, 1]> : tensor<4xi8>
  func.return
}

// -----

func.func @divide_by_zero_and_overflow_i32() {
  %0 = stablehlo.constant dense<[17, -17, 5, -2147483648, -2147483648, 7]> : tensor<6xi32>
  %1 = stablehlo.constant dense<[3, 3, 0, -1, 0, -2]> : tensor<6xi32>
  %2 = stablehlo.divide %0, %1 : tensor<6xi32>
  check.expect_eq_const %2, dense<[5, -5, -1, -2147483648, -1, -3]> : tensor<6xi32>
  %3 = stablehlo.remainder %0, %1 : tensor<6xi32>
  check.expect_eq_const %3, dense<[2, -2, 5, 0, -2147483648, 1]> : tensor<6xi32>
  func.return
}

// -----

func.func @divide_by_zero_unsigned() {
  %0 = stablehlo.constant dense<[7, 200, 200]> : tensor<3xui8>
  %1 = stablehlo.constant dense<[0, 7, 0]> : tensor<3xui8>
  %2 = stablehlo.divide %0, %1 : tensor<3xui8>
  check.expect_eq_const %2, dense<[255, 28, 255]> : tensor<3xui8>
  %3 = stablehlo.remainder %0, %1 : tensor<3xui8>
  check.expect_eq_const %3, dense<[7, 4, 200]> : tensor<3xui8>
  func.return
}

// -----

func.func @divide_i64_min() {
  %0 = stablehlo.constant dense<[-9223372036854775808, 9]> : tensor<2xi64>
  %1 = stablehlo.constant dense<[-1, 0]> : tensor<2xi64>
  %2 = stablehlo.divide %0, %1 : tensor<2xi64>
  check.expect_eq_const %2, dense<[-9223372036854775808, -1]> : tensor<2xi64>
  %3 = stablehlo.remainder %0, %1 : tensor<2xi64>
  check.expect_eq_const %3, dense<[0, 9]> : tensor<2xi64>
  func.return
}

// -----

func.func @shifts_out_of_range_i8() {
  %0 = stablehlo.constant dense<[1, 1, -1, -128, -128, 64, -1]> : tensor<7xi8>
  %1 = stablehlo.constant dense<[7, 8, 1, 9, -1, 1, 0]> : tensor<7xi8>
  %2 = stablehlo.shift_left %0, %1 : tensor<7xi8>
  check.expect_eq_const %2, dense<[-128, 0, -2, 0, 0, -128, -1]> : tensor<7xi8>
  %3 = stablehlo.shift_right_arithmetic %0, %1 : tensor<7xi8>
  check.expect_eq_const %3, dense<[0, 0, -1, -1, -1, 32, -1]> : tensor<7xi8>
  %4 = stablehlo.shift_right_logical %0, %1 : tensor<7xi8>
  check.expect_eq_const %4, dense<[0, 0, 127, 0, 0, 32, -1]> : tensor<7xi8>
  func.return
}

// -----

func.func @shifts_ui4() {
  %0 = stablehlo.constant dense<[8, 15, 1]> : tensor<3xui4>
  %1 = stablehlo.constant dense<[1, 4, 3]> : tensor<3xui4>
  %2 = stablehlo.shift_right_arithmetic %0, %1 : tensor<3xui4>
  check.expect_eq_const %2, dense<[12, 15, 0]> : tensor<3xui4>
  %3 = stablehlo.shift_left %0, %1 : tensor<3xui4>
  check.expect_eq_const %3, dense<[0, 0, 8]> : tensor<3xui4>
  func.return
}

// -----

func.func @power_int() {
  %0 = stablehlo.constant dense<[2, 2, -1, -1, 1, 3, 0, 3]> : tensor<8xi32>
  %1 = stablehlo.constant dense<[10, -1, -3, -4, -7, 0, 0, 21]> : tensor<8xi32>
  %2 = stablehlo.power %0, %1 : tensor<8xi32>
  check.expect_eq_const %2, dense<[1024, 0, -1, 1, 1, 1, 1, 1870418611]> : tensor<8xi32>
  func.return
}

// -----

func.func @popcnt_clz_widths() {
  %0 = stablehlo.constant dense<[1, 0, -1, 5]> : tensor<4xi4>
  %1 = stablehlo.count_leading_zeros %0 : tensor<4xi4>
  check.expect_eq_const %1, dense<[3, 4, 0, 1]> : tensor<4xi4>
  %2 = stablehlo.popcnt %0 : tensor<4xi4>
  check.expect_eq_const %2, dense<[1, 0, 4, 2]> : tensor<4xi4>
  %3 = stablehlo.constant dense<[0, 1, 65535]> : tensor<3xui16>
  %4 = stablehlo.count_leading_zeros %3 : tensor<3xui16>
  check.expect_eq_const %4, dense<[16, 15, 0]> : tensor<3xui16>
  %5 = stablehlo.popcnt %3 : tensor<3xui16>
  check.expect_eq_const %5, dense<[0, 1, 16]> : tensor<3xui16>
  func.return
}

// -----

func.func @max_min_signedness() {
  %0 = stablehlo.constant dense<[-3, 4]> : tensor<2xi16>
  %1 = stablehlo.constant dense<[2, -4]> : tensor<2xi16>
  %2 = stablehlo.maximum %0, %1 : tensor<2xi16>
  check.expect_eq_const %2, dense<[2, 4]> : tensor<2xi16>
  %3 = stablehlo.minimum %0, %1 : tensor<2xi16>
  check.expect_eq_const %3, dense<[-3, -4]> : tensor<2xi16>
  %4 = stablehlo.constant dense<[65535, 4]> : tensor<2xui16>
  %5 = stablehlo.constant dense<[2, 40000]> : tensor<2xui16>
  %6 = stablehlo.maximum %4, %5 : tensor<2xui16>
  check.expect_eq_const %6, dense<[65535, 40000]> : tensor<2xui16>
  func.return
}

// -----

func.func @bool_ops() {
  %0 = stablehlo.constant dense<[false, false, true, true]> : tensor<4xi1>
  %1 = stablehlo.constant dense<[false, true, false, true]> : tensor<4xi1>
  %2 = stablehlo.add %0, %1 : tensor<4xi1>
  check.expect_eq_const %2, dense<[false, true, true, true]> : tensor<4xi1>
  %3 = stablehlo.multiply %0, %1 : tensor<4xi1>
  check.expect_eq_const %3, dense<[false, false, false, true]> : tensor<4xi1>
  %4 = stablehlo.xor %0, %1 : tensor<4xi1>
  check.expect_eq_const %4, dense<[false, true, true, false]> : tensor<4xi1>
  %5 = stablehlo.not %0 : tensor<4xi1>
  check.expect_eq_const %5, dense<[true, true, false, false]> : tensor<4xi1>
  %6 = stablehlo.minimum %0, %1 : tensor<4xi1>
  check.expect_eq_const %6, dense<[false, false, false, true]> : tensor<4xi1>
  func.return
}

// -----

func.func @bitwise_i64() {
  %0 = stablehlo.constant dense<[12, -1, 0]> : tensor<3xi64>
  %1 = stablehlo.constant dense<[10, 5, -1]> : tensor<3xi64>
  %2 = stablehlo.and %0, %1 : tensor<3xi64>
  check.expect_eq_const %2, dense<[8, 5, 0]> : tensor<3xi64>
  %3 = stablehlo.or %0, %1 : tensor<3xi64>
  check.expect_eq_const %3, dense<[14, -1, -1]> : tensor<3xi64>
  %4 = stablehlo.xor %0, %1 : tensor<3xi64>
  check.expect_eq_const %4, dense<[6, -6, -1]> : tensor<3xi64>
  %5 = stablehlo.not %0 : tensor<3xi64>
  check.expect_eq_const %5, dense<[-13, 0, -1]> : tensor<3xi64>
  func.return
}
