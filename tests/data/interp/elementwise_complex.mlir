// complex<f32> / complex<f64> arithmetic, abs/real/imag to real types, complex(), sign,
// transcendental functions, comparisons of complex maxima.

func.func @complex_arith_c128() {
  %0 = stablehlo.constant dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f64>>
  %1 = stablehlo.constant dense<[(3.0, 4.0), (1.0, -1.0)]> : tensor<2xcomplex<f64>>
  %2 = stablehlo.multiply %0, %1 : tensor<2xcomplex<f64>>
  check.expect_eq_const %2, dense<[(-5.0, 10.0), (7.0, 1.0)]> : tensor<2xcomplex<f64>>
  %3 = stablehlo.divide %0, %1 : tensor<2xcomplex<f64>>
  check.expect_almost_eq_const %3, dense<[(0.44, 0.08), (-0.5, 3.5)]> : tensor<2xcomplex<f64>>
  %4 = stablehlo.add %0, %1 : tensor<2xcomplex<f64>>
  check.expect_eq_const %4, dense<[(4.0, 6.0), (4.0, 3.0)]> : tensor<2xcomplex<f64>>
  %5 = stablehlo.subtract %0, %1 : tensor<2xcomplex<f64>>
  check.expect_eq_const %5, dense<[(-2.0, -2.0), (2.0, 5.0)]> : tensor<2xcomplex<f64>>
  %6 = stablehlo.negate %0 : tensor<2xcomplex<f64>>
  check.expect_eq_const %6, dense<[(-1.0, -2.0), (-3.0, -4.0)]> : tensor<2xcomplex<f64>>
  func.return
}

// -----

func.func @complex_parts_c64() {
  %0 = stablehlo.constant dense<[(3.0, 4.0), (-1.5, 0.25)]> : tensor<2xcomplex<f32>>
  %1 = stablehlo.abs %0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  check.expect_almost_eq_const %1, dense<[5.0, 1.5206906]> : tensor<2xf32>
  %2 = stablehlo.real %0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  check.expect_eq_const %2, dense<[3.0, -1.5]> : tensor<2xf32>
  %3 = stablehlo.imag %0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  check.expect_eq_const %3, dense<[4.0, 0.25]> : tensor<2xf32>
  %4 = stablehlo.complex %2, %3 : tensor<2xcomplex<f32>>
  check.expect_eq_const %4, dense<[(3.0, 4.0), (-1.5, 0.25)]> : tensor<2xcomplex<f32>>
  func.return
}

// -----

func.func @complex_sign() {
  %0 = stablehlo.constant dense<[(3.0, 4.0), (0.0, 0.0), (0x7FF8000000000000, 1.0), (0.0, -2.0)]> : tensor<4xcomplex<f64>>
  %1 = stablehlo.sign %0 : tensor<4xcomplex<f64>>
  check.expect_almost_eq_const %1, dense<[(0.6, 0.8), (0.0, 0.0), (0x7FF8000000000000, 0x7FF8000000000000), (0.0, -1.0)]> : tensor<4xcomplex<f64>>
  func.return
}

// -----

func.func @complex_transcendentals() {
  %0 = stablehlo.constant dense<[(1.0, 2.0), (-4.0, 0.0)]> : tensor<2xcomplex<f64>>
  %1 = stablehlo.exponential %0 : tensor<2xcomplex<f64>>
  check.expect_almost_eq_const %1, dense<[(-1.1312043837568135, 2.4717266720048188), (0.018315638888734179, 0.0)]> : tensor<2xcomplex<f64>>
  %2 = stablehlo.sqrt %0 : tensor<2xcomplex<f64>>
  check.expect_almost_eq_const %2, dense<[(1.272019649514069, 0.7861513777574233), (0.0, 2.0)]> : tensor<2xcomplex<f64>>
  %3 = stablehlo.log %0 : tensor<2xcomplex<f64>>
  check.expect_almost_eq_const %3, dense<[(0.8047189562170503, 1.1071487177940904), (1.3862943611198906, 3.141592653589793)]> : tensor<2xcomplex<f64>>
  %4 = stablehlo.rsqrt %0 : tensor<2xcomplex<f64>>
  check.expect_almost_eq_const %4, dense<[(0.5688644810057831, -0.35157758425414287), (0.0, -0.5)]> : tensor<2xcomplex<f64>>
  func.return
}

// -----

func.func @complex_max_min_lexicographic() {
  %0 = stablehlo.constant dense<[(1.0, 5.0), (2.0, 1.0)]> : tensor<2xcomplex<f32>>
  %1 = stablehlo.constant dense<[(1.0, 6.0), (1.0, 9.0)]> : tensor<2xcomplex<f32>>
  %2 = stablehlo.maximum %0, %1 : tensor<2xcomplex<f32>>
  check.expect_eq_const %2, dense<[(1.0, 6.0), (2.0, 1.0)]> : tensor<2xcomplex<f32>>
  %3 = stablehlo.minimum %0, %1 : tensor<2xcomplex<f32>>
  check.expect_eq_const %3, dense<[(1.0, 5.0), (1.0, 9.0)]> : tensor<2xcomplex<f32>>
  func.return
}

// -----

func.func @complex_power_c64() {
  %0 = stablehlo.constant dense<[(0.0, 1.0), (2.0, 0.0)]> : tensor<2xcomplex<f32>>
  %1 = stablehlo.constant dense<[(2.0, 0.0), (3.0, 0.0)]> : tensor<2xcomplex<f32>>
  %2 = stablehlo.power %0, %1 : tensor<2xcomplex<f32>>
  check.expect_almost_eq_const %2, dense<[(-1.0, 0.0), (8.0, 0.0)]> : tensor<2xcomplex<f32>>
  func.return
}
