// chlo.mulhi: the high half of the double-width product (generic form; the interpreter runs
// chlo ops from other producers' modules, mlxcel never emits them).

func.func @mulhi_i64_edges() {
  // INT64_MIN, INT64_MAX, -1, 1 combinations: the signed high half needs the full 128 bits.
  %a = stablehlo.constant dense<[-9223372036854775808, -9223372036854775808, -9223372036854775808, 9223372036854775807, -9223372036854775808, -1, -1, 0, 1152921504606846976]> : tensor<9xi64>
  %b = stablehlo.constant dense<[-9223372036854775808, -1, 1, 9223372036854775807, 9223372036854775807, -1, 1, -5, -16]> : tensor<9xi64>
  %r = "chlo.mulhi"(%a, %b) : (tensor<9xi64>, tensor<9xi64>) -> tensor<9xi64>
  check.expect_eq_const %r, dense<[4611686018427387904, 0, -1, 4611686018427387903, -4611686018427387904, 0, -1, 0, -1]> : tensor<9xi64>
  func.return
}

// -----

func.func @mulhi_ui64_edges() {
  %a = stablehlo.constant dense<[18446744073709551615, 18446744073709551615, 4294967296, 4294967295, 0]> : tensor<5xui64>
  %b = stablehlo.constant dense<[18446744073709551615, 1, 4294967296, 4294967297, 18446744073709551615]> : tensor<5xui64>
  %r = "chlo.mulhi"(%a, %b) : (tensor<5xui64>, tensor<5xui64>) -> tensor<5xui64>
  check.expect_eq_const %r, dense<[18446744073709551614, 0, 1, 0, 0]> : tensor<5xui64>
  func.return
}

// -----

func.func @mulhi_i32_edges() {
  %a = stablehlo.constant dense<[-2147483648, -2147483648, 2147483647, -1, 65536]> : tensor<5xi32>
  %b = stablehlo.constant dense<[-2147483648, 2147483647, 2147483647, 1, 65536]> : tensor<5xi32>
  %r = "chlo.mulhi"(%a, %b) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  check.expect_eq_const %r, dense<[1073741824, -1073741824, 1073741823, -1, 1]> : tensor<5xi32>
  func.return
}

// -----

func.func @mulhi_ui32_max() {
  %a = stablehlo.constant dense<[4294967295, 65536]> : tensor<2xui32>
  %r = "chlo.mulhi"(%a, %a) : (tensor<2xui32>, tensor<2xui32>) -> tensor<2xui32>
  check.expect_eq_const %r, dense<[4294967294, 1]> : tensor<2xui32>
  func.return
}

// -----

func.func @mulhi_i8_i16() {
  %a = stablehlo.constant dense<[-128, -128, 127, -1, 3]> : tensor<5xi8>
  %b = stablehlo.constant dense<[-128, 127, 127, 1, 5]> : tensor<5xi8>
  %r = "chlo.mulhi"(%a, %b) : (tensor<5xi8>, tensor<5xi8>) -> tensor<5xi8>
  check.expect_eq_const %r, dense<[64, -64, 63, -1, 0]> : tensor<5xi8>
  %c = stablehlo.constant dense<[-32768, -32768, 256]> : tensor<3xi16>
  %d = stablehlo.constant dense<[-32768, 32767, 256]> : tensor<3xi16>
  %s = "chlo.mulhi"(%c, %d) : (tensor<3xi16>, tensor<3xi16>) -> tensor<3xi16>
  check.expect_eq_const %s, dense<[16384, -16384, 1]> : tensor<3xi16>
  func.return
}

// -----

func.func @mulhi_ui8_ui16_2d() {
  %a = stablehlo.constant dense<[[255, 16], [128, 1]]> : tensor<2x2xui8>
  %b = stablehlo.constant dense<[[255, 16], [2, 255]]> : tensor<2x2xui8>
  %r = "chlo.mulhi"(%a, %b) : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<2x2xui8>
  check.expect_eq_const %r, dense<[[254, 1], [1, 0]]> : tensor<2x2xui8>
  %c = stablehlo.constant dense<65535> : tensor<ui16>
  %s = "chlo.mulhi"(%c, %c) : (tensor<ui16>, tensor<ui16>) -> tensor<ui16>
  check.expect_eq_const %s, dense<65534> : tensor<ui16>
  func.return
}

// -----

// Sub-byte types: i4 is sign-extended storage, the high half is still 4 bits wide.
func.func @mulhi_i4_ui4() {
  %a = stablehlo.constant dense<[-8, -8, 7, -1]> : tensor<4xi4>
  %b = stablehlo.constant dense<[-8, 7, 7, 1]> : tensor<4xi4>
  %r = "chlo.mulhi"(%a, %b) : (tensor<4xi4>, tensor<4xi4>) -> tensor<4xi4>
  check.expect_eq_const %r, dense<[4, -4, 3, -1]> : tensor<4xi4>
  %c = stablehlo.constant dense<[15, 8]> : tensor<2xui4>
  %d = stablehlo.constant dense<[15, 2]> : tensor<2xui4>
  %s = "chlo.mulhi"(%c, %d) : (tensor<2xui4>, tensor<2xui4>) -> tensor<2xui4>
  check.expect_eq_const %s, dense<[14, 1]> : tensor<2xui4>
  func.return
}

// -----

func.func @mulhi_empty() {
  %a = stablehlo.constant dense<> : tensor<0xi64>
  %r = "chlo.mulhi"(%a, %a) : (tensor<0xi64>, tensor<0xi64>) -> tensor<0xi64>
  check.expect_eq_const %r, dense<> : tensor<0xi64>
  func.return
}
