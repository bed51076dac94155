// Semantics of the check ops themselves.

func.func @check_nan_and_inf_equal() {
  %x = stablehlo.constant dense<[0x7FF8000000000000, 0x7FF0000000000000, -0.0]> : tensor<3xf64>
  check.expect_eq_const %x, dense<[0x7FF8000000000000, 0x7FF0000000000000, -0.0]> : tensor<3xf64>
  check.expect_almost_eq_const %x, dense<[0x7FF8000000000000, 0x7FF0000000000000, 0.0]> : tensor<3xf64>
  check.expect_eq %x, %x : tensor<3xf64>
  func.return
}

// -----

func.func @check_almost_eq_complex_and_tolerance() {
  %x = stablehlo.constant dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  %y = stablehlo.constant dense<[(1.00001, 2.00001), (3.0, 4.00002)]> : tensor<2xcomplex<f32>>
  check.expect_almost_eq %x, %y : tensor<2xcomplex<f32>>
  check.expect_almost_eq_const %x, dense<[(1.05, 2.0), (3.0, 3.95)]> : tensor<2xcomplex<f32>> {tolerance = 0.1 : f64}
  func.return
}

// -----

func.func @check_close_ulps() {
  %x = stablehlo.constant dense<[1.0, -0.0, 0x7FC00000]> : tensor<3xf32>
  // 1.0 + 2 ulp, +0.0 (0 ulp from -0.0 by magnitude), another NaN payload
  %y = stablehlo.constant dense<[0x3F800002, 0.0, 0x7FC00001]> : tensor<3xf32>
  check.expect_close %x, %y, max_ulp_difference = 2 : tensor<3xf32>, tensor<3xf32>
  check.expect_close %x, %x, max_ulp_difference = 0 : tensor<3xf32>, tensor<3xf32>
  func.return
}

// -----

func.func @check_ints_and_bools() {
  %x = stablehlo.constant dense<[-8, 7]> : tensor<2xi4>
  check.expect_eq_const %x, dense<[-8, 7]> : tensor<2xi4>
  %u = stablehlo.constant dense<18446744073709551615> : tensor<ui64>
  check.expect_eq_const %u, dense<18446744073709551615> : tensor<ui64>
  %b = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  check.expect_eq %b, %b : tensor<2xi1>
  func.return
}
