// Compute kernels: fft (all four types, odd lengths, multi-dimensional) and triangular_solve.

func.func @fft_length3_c64() {
  %x = stablehlo.constant dense<[(1.0, 0.0), (0.0, 2.0), (-1.0, 1.0)]> : tensor<3xcomplex<f32>>
  %r = stablehlo.fft %x, type = FFT, length = [3] : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
  check.expect_almost_eq_const %r, dense<[(0.0, 3.0), (2.3660254037844397, -2.3660254037844384), (0.6339745962155616, -0.633974596215561)]> : tensor<3xcomplex<f32>>
  func.return
}

// -----

func.func @fft_2d_2x3_batched() {
  %x = stablehlo.constant dense<[[[(1.0, 0.0), (2.0, -1.0), (0.5, 0.0)], [(0.0, 3.0), (-1.0, 0.0), (2.0, 0.0)]], [[(1.0, 0.0), (0.0, 0.0), (0.0, 0.0)], [(0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]]]> : tensor<2x2x3xcomplex<f64>>
  %r = stablehlo.fft %x, type = FFT, length = [2, 3] : (tensor<2x2x3xcomplex<f64>>) -> tensor<2x2x3xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[[(4.5, 2.0), (-1.6160254037844397, 4.799038105676658), (0.11602540378443993, 2.200961894323341)], [(2.5000000000000004, -4.0), (-0.6160254037844368, -6.397114317029974), (1.116025403784436, 1.3971143170299742)]], [[(1.0, 0.0), (1.0, 0.0), (1.0, 0.0)], [(1.0, 0.0), (1.0, 0.0), (1.0, 0.0)]]]> : tensor<2x2x3xcomplex<f64>>
  func.return
}

// -----

func.func @ifft_roundtrip_length5() {
  %x = stablehlo.constant dense<[(1.0, 1.0), (2.0, 0.0), (-0.0, -3.0), (0.5, 0.0), (4.0, -2.0)]> : tensor<5xcomplex<f64>>
  %f = stablehlo.fft %x, type = FFT, length = [5] : (tensor<5xcomplex<f64>>) -> tensor<5xcomplex<f64>>
  %r = stablehlo.fft %f, type = IFFT, length = [5] : (tensor<5xcomplex<f64>>) -> tensor<5xcomplex<f64>>
  check.expect_almost_eq %r, %x : tensor<5xcomplex<f64>>
  func.return
}

// -----

func.func @rfft_odd_length_and_irfft_roundtrip() {
  %x = stablehlo.constant dense<[1.0, -2.0, 0.5, 3.0, 4.0]> : tensor<5xf32>
  %f = stablehlo.fft %x, type = RFFT, length = [5] : (tensor<5xf32>) -> tensor<3xcomplex<f32>>
  check.expect_almost_eq_const %f, dense<[(6.5, 0.0), (-1.2135254915624225, 7.175802228502104), (0.4635254915624212, 1.149070223016954)]> : tensor<3xcomplex<f32>>
  %r = stablehlo.fft %f, type = IRFFT, length = [5] : (tensor<3xcomplex<f32>>) -> tensor<5xf32>
  check.expect_almost_eq %r, %x : tensor<5xf32>
  func.return
}

// -----

func.func @rfft_irfft_2d() {
  %x = stablehlo.constant dense<[[1.0, 2.0, 0.0, -1.0], [0.5, -0.5, 3.0, 1.0], [2.0, 2.0, -2.0, 0.0]]> : tensor<3x4xf64>
  %f = stablehlo.fft %x, type = RFFT, length = [3, 4] : (tensor<3x4xf64>) -> tensor<3x3xcomplex<f64>>
  check.expect_almost_eq_const %f, dense<[[(8.0, 0.0), (2.5000000000000004, -3.5), (1.0, -1.8369701987210292e-16)], [(-1.0, -1.732050807568878), (3.281088913245532, 2.8791651245988517), (-0.49999999999999734, -4.330127018922193)], [(-1.0000000000000002, 1.7320508075688752), (-2.7810889132455303, -8.379165124598854), (-0.500000000000004, 4.330127018922194)]]> : tensor<3x3xcomplex<f64>>
  %r = stablehlo.fft %f, type = IRFFT, length = [3, 4] : (tensor<3x3xcomplex<f64>>) -> tensor<3x4xf64>
  check.expect_almost_eq %r, %x : tensor<3x4xf64>
  func.return
}

// -----

func.func @triangular_solve_left_lower() {
  %a = stablehlo.constant dense<[[2.0, 99.0, 99.0], [1.0, 4.0, 99.0], [-1.0, 0.5, 0.5]]> : tensor<3x3xf64>
  %b = stablehlo.constant dense<[[2.0, 4.0], [-3.0, 4.0], [0.0, -2.75]]> : tensor<3x2xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  check.expect_almost_eq_const %r, dense<[[1.0, 2.0], [-1.0, 0.5], [3.0, -2.0]]> : tensor<3x2xf64>
  func.return
}

// -----

func.func @triangular_solve_left_lower_transpose() {
  %a = stablehlo.constant dense<[[2.0, 99.0, 99.0], [1.0, 4.0, 99.0], [-1.0, 0.5, 0.5]]> : tensor<3x3xf64>
  %b = stablehlo.constant dense<[[-2.0, 6.5], [-2.5, 1.0], [1.5, -1.0]]> : tensor<3x2xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  check.expect_almost_eq_const %r, dense<[[1.0, 2.0], [-1.0, 0.5], [3.0, -2.0]]> : tensor<3x2xf64>
  func.return
}

// -----

func.func @triangular_solve_right_upper() {
  %a = stablehlo.constant dense<[[2.0, 1.0, -1.0], [77.0, 4.0, 0.5], [77.0, 77.0, 0.5]]> : tensor<3x3xf64>
  %b = stablehlo.constant dense<[[2.0, 9.0, 0.25], [-2.0, 1.0, 3.25]]> : tensor<2x3xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  check.expect_almost_eq_const %r, dense<[[1.0, 2.0, 0.5], [-1.0, 0.5, 4.0]]> : tensor<2x3xf64>
  func.return
}

// -----

func.func @triangular_solve_right_upper_transpose_unit() {
  %a = stablehlo.constant dense<[[2.0, 1.0, -1.0], [77.0, 4.0, 0.5], [77.0, 77.0, 0.5]]> : tensor<3x3xf32>
  %b = stablehlo.constant dense<[[2.5, 2.25, 0.5], [-4.5, 2.5, 4.0]]> : tensor<2x3xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = true, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  check.expect_almost_eq_const %r, dense<[[1.0, 2.0, 0.5], [-1.0, 0.5, 4.0]]> : tensor<2x3xf32>
  func.return
}

// -----

func.func @triangular_solve_left_lower_adjoint_complex() {
  %a = stablehlo.constant dense<[[(2.0, 1.0), (0.0, 55.0), (55.0, 0.0)], [(1.0, -1.0), (3.0, 0.0), (55.0, 0.0)], [(0.0, 0.5), (2.0, 2.0), (1.0, -1.0)]]> : tensor<3x3xcomplex<f64>>
  %b = stablehlo.constant dense<[[(4.5, 3.0)], [(4.0, -2.0)], [(1.0, -1.0)]]> : tensor<3x1xcomplex<f64>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<3x3xcomplex<f64>>, tensor<3x1xcomplex<f64>>) -> tensor<3x1xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[(1.0, 1.0)], [(2.0, 0.0)], [(-0.0, -1.0)]]> : tensor<3x1xcomplex<f64>>
  func.return
}

// -----

func.func @triangular_solve_right_lower_adjoint_complex() {
  %a = stablehlo.constant dense<[[(2.0, 1.0), (0.0, 55.0), (55.0, 0.0)], [(1.0, -1.0), (3.0, 0.0), (55.0, 0.0)], [(0.0, 0.5), (2.0, 2.0), (1.0, -1.0)]]> : tensor<3x3xcomplex<f32>>
  %b = stablehlo.constant dense<[[(3.0, 1.0), (6.0, 2.0), (5.5, -5.5)]]> : tensor<1x3xcomplex<f32>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<3x3xcomplex<f32>>, tensor<1x3xcomplex<f32>>) -> tensor<1x3xcomplex<f32>>
  check.expect_almost_eq_const %r, dense<[[(1.0, 1.0), (2.0, 0.0), (-0.0, -1.0)]]> : tensor<1x3xcomplex<f32>>
  func.return
}
