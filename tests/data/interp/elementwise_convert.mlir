// convert between element classes (saturation, NaN, sub-byte types, complex, f8),
// bitcast_convert across widths, reduce_precision.

func.func @convert_float_to_int_saturates() {
  %0 = stablehlo.constant dense<[300.0, -300.0, 0x7FC00000, -1.5, 2.9, -2.9, 0x7F800000]> : tensor<7xf32>
  %1 = stablehlo.convert %0 : (tensor<7xf32>) -> tensor<7xi8>
  check.expect_eq_const %1, dense<[127, -128, 0, -1, 2, -2, 127]> : tensor<7xi8>
  %2 = stablehlo.convert %0 : (tensor<7xf32>) -> tensor<7xui8>
  check.expect_eq_const %2, dense<[255, 0, 0, 0, 2, 0, 255]> : tensor<7xui8>
  %3 = stablehlo.convert %0 : (tensor<7xf32>) -> tensor<7xi4>
  check.expect_eq_const %3, dense<[7, -8, 0, -1, 2, -2, 7]> : tensor<7xi4>
  %4 = stablehlo.convert %0 : (tensor<7xf32>) -> tensor<7xi1>
  check.expect_eq_const %4, dense<[true, true, true, true, true, true, true]> : tensor<7xi1>
  func.return
}

// -----

func.func @convert_f64_to_i64_limits() {
  %0 = stablehlo.constant dense<[1.0e300, -1.0e300, 9.3e18, -0.0]> : tensor<4xf64>
  %1 = stablehlo.convert %0 : (tensor<4xf64>) -> tensor<4xi64>
  check.expect_eq_const %1, dense<[9223372036854775807, -9223372036854775808, 9223372036854775807, 0]> : tensor<4xi64>
  %2 = stablehlo.convert %0 : (tensor<4xf64>) -> tensor<4xui64>
  check.expect_eq_const %2, dense<[18446744073709551615, 0, 9300000000000000000, 0]> : tensor<4xui64>
  func.return
}

// -----

func.func @convert_int_to_float_round_once() {
  // 2^53 + 2^29 + 1 and 2^60 + 2^52 + 1: rounding through f64 first would round wrongly.
  %0 = stablehlo.constant dense<[9007199791611905, 1157425104234217473, 65520, -7]> : tensor<4xi64>
  %1 = stablehlo.convert %0 : (tensor<4xi64>) -> tensor<4xf32>
  check.expect_eq_const %1, dense<[9007200328482816.0, 1157425104234217472.0, 65520.0, -7.0]> : tensor<4xf32>
  %2 = stablehlo.convert %0 : (tensor<4xi64>) -> tensor<4xbf16>
  check.expect_eq_const %2, dense<[9007199254740992.0, 1161928703861587968.0, 65536.0, -7.0]> : tensor<4xbf16>
  %3 = stablehlo.convert %0 : (tensor<4xi64>) -> tensor<4xf16>
  check.expect_eq_const %3, dense<[0x7C00, 0x7C00, 0x7C00, -7.0]> : tensor<4xf16>
  func.return
}

// -----

func.func @convert_int_to_int_wraps() {
  %0 = stablehlo.constant dense<[18446744073709551615, 3, 255]> : tensor<3xui64>
  %1 = stablehlo.convert %0 : (tensor<3xui64>) -> tensor<3xi4>
  check.expect_eq_const %1, dense<[-1, 3, -1]> : tensor<3xi4>
  %2 = stablehlo.convert %0 : (tensor<3xui64>) -> tensor<3xf64>
  check.expect_eq_const %2, dense<[18446744073709551616.0, 3.0, 255.0]> : tensor<3xf64>
  %3 = stablehlo.constant dense<[-8, 7, -1]> : tensor<3xi4>
  %4 = stablehlo.convert %3 : (tensor<3xi4>) -> tensor<3xui2>
  check.expect_eq_const %4, dense<[0, 3, 3]> : tensor<3xui2>
  %5 = stablehlo.convert %3 : (tensor<3xi4>) -> tensor<3xui16>
  check.expect_eq_const %5, dense<[65528, 7, 65535]> : tensor<3xui16>
  func.return
}

// -----

func.func @convert_complex() {
  %0 = stablehlo.constant dense<[(-2.5, 7.0), (0.0, 1.0)]> : tensor<2xcomplex<f64>>
  %1 = stablehlo.convert %0 : (tensor<2xcomplex<f64>>) -> tensor<2xf32>
  check.expect_eq_const %1, dense<[-2.5, 0.0]> : tensor<2xf32>
  %2 = stablehlo.convert %0 : (tensor<2xcomplex<f64>>) -> tensor<2xi1>
  check.expect_eq_const %2, dense<[true, false]> : tensor<2xi1>
  %3 = stablehlo.convert %0 : (tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f32>>
  check.expect_eq_const %3, dense<[(-2.5, 7.0), (0.0, 1.0)]> : tensor<2xcomplex<f32>>
  %4 = stablehlo.constant dense<[-8, 7]> : tensor<2xi4>
  %5 = stablehlo.convert %4 : (tensor<2xi4>) -> tensor<2xcomplex<f32>>
  check.expect_eq_const %5, dense<[(-8.0, 0.0), (7.0, 0.0)]> : tensor<2xcomplex<f32>>
  func.return
}

// -----

func.func @convert_small_floats() {
  %0 = stablehlo.constant dense<[448.0, -0.5, 0.00390625]> : tensor<3xf32>
  %1 = stablehlo.convert %0 : (tensor<3xf32>) -> tensor<3xf8E4M3FN>
  check.expect_eq_const %1, dense<[448.0, -0.5, 0.00390625]> : tensor<3xf8E4M3FN>
  %2 = stablehlo.convert %1 : (tensor<3xf8E4M3FN>) -> tensor<3xf8E5M2>
  check.expect_eq_const %2, dense<[448.0, -0.5, 0.00390625]> : tensor<3xf8E5M2>
  %3 = stablehlo.convert %1 : (tensor<3xf8E4M3FN>) -> tensor<3xbf16>
  check.expect_eq_const %3, dense<[448.0, -0.5, 0.00390625]> : tensor<3xbf16>
  %4 = stablehlo.convert %1 : (tensor<3xf8E4M3FN>) -> tensor<3xi8>
  check.expect_eq_const %4, dense<[127, 0, 0]> : tensor<3xi8>
  func.return
}

// -----

func.func @convert_f16_to_bf16_rne() {
  // 1 + 2^-8 and 1 + 3*2^-8 are ties in bf16.
  %0 = stablehlo.constant dense<[1.00390625, 1.01171875, 65504.0]> : tensor<3xf16>
  %1 = stablehlo.convert %0 : (tensor<3xf16>) -> tensor<3xbf16>
  check.expect_eq_const %1, dense<[1.0, 1.015625, 65536.0]> : tensor<3xbf16>
  func.return
}

// -----

func.func @bitcast_f32_to_bytes() {
  %0 = stablehlo.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %1 = stablehlo.bitcast_convert %0 : (tensor<2xf32>) -> tensor<2x4xui8>
  check.expect_eq_const %1, dense<[[0, 0, 128, 63], [0, 0, 0, 192]]> : tensor<2x4xui8>
  %2 = stablehlo.bitcast_convert %1 : (tensor<2x4xui8>) -> tensor<2xf32>
  check.expect_eq_const %2, dense<[1.0, -2.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @bitcast_sub_byte() {
  %0 = stablehlo.constant dense<[247, 33]> : tensor<2xui8>
  %1 = stablehlo.bitcast_convert %0 : (tensor<2xui8>) -> tensor<2x2xi4>
  check.expect_eq_const %1, dense<[[7, -1], [1, 2]]> : tensor<2x2xi4>
  %2 = stablehlo.bitcast_convert %1 : (tensor<2x2xi4>) -> tensor<2xui8>
  check.expect_eq_const %2, dense<[247, 33]> : tensor<2xui8>
  %3 = stablehlo.bitcast_convert %0 : (tensor<2xui8>) -> tensor<2x8xi1>
  check.expect_eq_const %3, dense<[[true, true, true, false, true, true, true, true], [true, false, false, false, false, true, false, false]]> : tensor<2x8xi1>
  func.return
}

// -----

func.func @bitcast_f64_to_f16() {
  %2 = stablehlo.constant dense<0x0123456789ABCDEF> : tensor<f64>
  %3 = stablehlo.bitcast_convert %2 : (tensor<f64>) -> tensor<4xf16>
  check.expect_eq_const %3, dense<[0xCDEF, 0x89AB, 0x4567, 0x0123]> : tensor<4xf16>
  func.return
}

// -----

func.func @reduce_precision_e5m10() {
  %0 = stablehlo.constant dense<[0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0x0000000000000001, 65519.0, 65520.0, 1.00048828125, 1.00146484375]> : tensor<7xf64>
  %1 = stablehlo.reduce_precision %0, format = e5m10 : tensor<7xf64>
  check.expect_eq_const %1, dense<[0x7FF0000000000000, 0x7FFFFFFFFFFFFFFF, 0.0, 65504.0, 0x7FF0000000000000, 1.0, 1.001953125]> : tensor<7xf64>
  func.return
}

// -----

func.func @reduce_precision_bf16_like_on_f32() {
  // e8m7 on f32 is a round trip through bf16; NaN stays NaN.
  %0 = stablehlo.constant dense<[1.00390625, 1.01171875, 0x7FC00001, -3.0e38]> : tensor<4xf32>
  %1 = stablehlo.reduce_precision %0, format = e8m7 : tensor<4xf32>
  check.expect_eq_const %1, dense<[1.0, 1.015625, 0x7FC00001, 0xFF620000]> : tensor<4xf32>
  func.return
}

// -----

func.func @reduce_precision_zero_mantissa() {
  %0 = stablehlo.constant dense<[0x7FF8000000000000, 1.4, 1.6, 65519.0]> : tensor<4xf64>
  %1 = stablehlo.reduce_precision %0, format = e5m0 : tensor<4xf64>
  check.expect_eq_const %1, dense<[0x7FF0000000000000, 1.0, 2.0, 0x7FF0000000000000]> : tensor<4xf64>
  func.return
}
