// Randomized triangular_solve cases (left/right, lower/upper, transposes, unit diagonal, batch,
// real and complex): b is built as op(a) x or x op(a) in Python and x is expected back.

func.func @t0() {
  %a = stablehlo.constant dense<[[(4.0, 0.0), (-2.0, 0.0)], [(-3.0, 0.0), (1.0, 0.0)]]> : tensor<2x2xcomplex<f64>>
  %b = stablehlo.constant dense<[[(-12.0, 8.0), (8.0, -6.0)]]> : tensor<1x2xcomplex<f64>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x2xcomplex<f64>>, tensor<1x2xcomplex<f64>>) -> tensor<1x2xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[(-3.0, 2.0), (-1.0, 0.0)]]> : tensor<1x2xcomplex<f64>>
  func.return
}

// -----

func.func @t1() {
  %a = stablehlo.constant dense<[[2.0, -1.0, 1.0, -1.0], [-1.0, 4.0, 0.0, -1.0], [3.0, 3.0, 1.0, 1.0], [-2.0, -1.0, 3.0, -2.0]]> : tensor<4x4xf64>
  %b = stablehlo.constant dense<[[6.0, -11.0, -1.0, 2.0]]> : tensor<1x4xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<4x4xf64>, tensor<1x4xf64>) -> tensor<1x4xf64>
  check.expect_almost_eq_const %r, dense<[[1.0, -3.0, 0.0, -1.0]]> : tensor<1x4xf64>
  func.return
}

// -----

func.func @t2() {
  %a = stablehlo.constant dense<[[[(1.0, 0.0), (-1.0, 2.0), (1.0, 2.0)], [(1.0, 2.0), (2.0, 0.0), (0.0, -2.0)], [(-3.0, 1.0), (-1.0, -2.0), (4.0, 1.0)]], [[(4.0, 0.0), (-3.0, -1.0), (0.0, -2.0)], [(3.0, -1.0), (-2.0, 0.0), (-3.0, -2.0)], [(0.0, 2.0), (-2.0, 2.0), (1.0, 0.0)]]]> : tensor<2x3x3xcomplex<f32>>
  %b = stablehlo.constant dense<[[[(5.0, 0.0), (-2.0, -6.0), (3.0, 5.0)], [(4.0, 0.0), (-4.0, -4.0), (9.0, -2.0)], [(-1.0, -15.0), (-8.0, 8.0), (-7.0, -6.0)]], [[(15.0, 13.0), (16.0, 2.0), (-2.0, 2.0)], [(1.0, 3.0), (12.0, 2.0), (-2.0, 2.0)], [(2.0, 14.0), (11.0, 13.0), (-3.0, -1.0)]]]> : tensor<2x3x3xcomplex<f32>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<2x3x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>) -> tensor<2x3x3xcomplex<f32>>
  check.expect_almost_eq_const %r, dense<[[[(0.0, -1.0), (-2.0, -2.0), (1.0, 1.0)], [(-1.0, -1.0), (-1.0, 0.0), (2.0, -1.0)], [(0.0, -2.0), (-3.0, 2.0), (-2.0, -1.0)]], [[(1.0, 0.0), (-3.0, -2.0), (-2.0, 2.0)], [(-1.0, -2.0), (-1.0, -2.0), (-2.0, 2.0)], [(0.0, 0.0), (-2.0, -2.0), (-3.0, -1.0)]]]> : tensor<2x3x3xcomplex<f32>>
  func.return
}

// -----

func.func @t3() {
  %a = stablehlo.constant dense<[[-2.0, -1.0, 3.0], [-3.0, 1.0, 0.0], [1.0, -2.0, 2.0]]> : tensor<3x3xf32>
  %b = stablehlo.constant dense<[[6.0, 1.0, -9.0], [-6.0, 0.0, 11.0], [6.0, 1.0, -13.0]]> : tensor<3x3xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  check.expect_almost_eq_const %r, dense<[[-3.0, -2.0, 0.0], [3.0, 3.0, 1.0], [-3.0, -2.0, -2.0]]> : tensor<3x3xf32>
  func.return
}

// -----

func.func @t4() {
  %a = stablehlo.constant dense<[[[4.0, -1.0, -3.0, 2.0], [1.0, 1.0, -2.0, 2.0], [-1.0, -3.0, -2.0, 0.0], [-2.0, 1.0, -1.0, 1.0]]]> : tensor<1x4x4xf32>
  %b = stablehlo.constant dense<[[[-8.0, 4.0, -4.0, 0.0], [12.0, -1.0, -9.0, 10.0], [4.0, -1.0, 1.0, 1.0]]]> : tensor<1x3x4xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<1x4x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  check.expect_almost_eq_const %r, dense<[[[-2.0, 2.0, 3.0, 0.0], [3.0, 2.0, -2.0, 0.0], [1.0, 0.0, -2.0, -1.0]]]> : tensor<1x3x4xf32>
  func.return
}

// -----

func.func @t5() {
  %a = stablehlo.constant dense<[[[[(-2.0, 0.0), (-1.0, -1.0), (-1.0, 0.0)], [(1.0, -1.0), (1.0, 1.0), (0.0, 1.0)], [(3.0, -1.0), (1.0, -1.0), (2.0, 0.0)]], [[(-2.0, 0.0), (-3.0, 2.0), (-1.0, -2.0)], [(-3.0, 2.0), (4.0, 0.0), (3.0, -2.0)], [(-3.0, 2.0), (-3.0, -1.0), (-2.0, 1.0)]]]]> : tensor<1x2x3x3xcomplex<f64>>
  %b = stablehlo.constant dense<[[[[(6.0, 4.0), (-1.0, -5.0), (-11.0, -13.0)], [(-2.0, -4.0), (1.0, -1.0), (1.0, 13.0)]], [[(-4.0, 4.0), (-18.0, 10.0), (-10.0, -8.0)], [(-4.0, 0.0), (-18.0, -8.0), (6.0, 2.0)]]]]> : tensor<1x2x2x3xcomplex<f64>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<1x2x3x3xcomplex<f64>>, tensor<1x2x2x3xcomplex<f64>>) -> tensor<1x2x2x3xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[[[(-3.0, -2.0), (0.0, 0.0), (-2.0, -2.0)], [(1.0, 2.0), (3.0, -1.0), (-2.0, 2.0)]], [[(2.0, -2.0), (-2.0, 2.0), (2.0, 0.0)], [(2.0, 0.0), (-3.0, -1.0), (-2.0, -2.0)]]]]> : tensor<1x2x2x3xcomplex<f64>>
  func.return
}

// -----

func.func @t6() {
  %a = stablehlo.constant dense<[[[4.0]]]> : tensor<1x1x1xf32>
  %b = stablehlo.constant dense<[[[-4.0], [0.0]]]> : tensor<1x2x1xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<1x1x1xf32>, tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  check.expect_almost_eq_const %r, dense<[[[-1.0], [0.0]]]> : tensor<1x2x1xf32>
  func.return
}

// -----

func.func @t7() {
  %a = stablehlo.constant dense<[[(2.0, 0.0), (-1.0, 2.0), (1.0, -1.0), (-3.0, -1.0)], [(3.0, -1.0), (4.0, 1.0), (1.0, -1.0), (0.0, -2.0)], [(-1.0, -1.0), (3.0, -1.0), (1.0, 1.0), (0.0, 0.0)], [(3.0, -1.0), (1.0, 1.0), (-3.0, 0.0), (4.0, 0.0)]]> : tensor<4x4xcomplex<f64>>
  %b = stablehlo.constant dense<[[(4.0, 2.0), (0.0, 2.0), (-8.0, -4.0), (-6.0, 3.0)], [(-4.0, 2.0), (3.0, -10.0), (12.0, -2.0), (0.0, -10.0)]]> : tensor<2x4xcomplex<f64>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<4x4xcomplex<f64>>, tensor<2x4xcomplex<f64>>) -> tensor<2x4xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[(2.0, 1.0), (-1.0, -1.0), (-1.0, -2.0), (-3.0, -2.0)], [(-2.0, 1.0), (3.0, -2.0), (-2.0, 2.0), (0.0, 0.0)]]> : tensor<2x4xcomplex<f64>>
  func.return
}

// -----

func.func @t8() {
  %a = stablehlo.constant dense<[[4.0, -1.0], [2.0, 2.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[3.0, 6.0]]> : tensor<1x2xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = true, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  check.expect_almost_eq_const %r, dense<[[3.0, 0.0]]> : tensor<1x2xf32>
  func.return
}

// -----

func.func @t9() {
  %a = stablehlo.constant dense<[[[(4.0, 1.0), (1.0, -2.0), (1.0, -1.0), (1.0, 2.0)], [(-2.0, 0.0), (-2.0, 0.0), (-3.0, 2.0), (2.0, -1.0)], [(-1.0, 1.0), (-1.0, -1.0), (-2.0, 1.0), (-3.0, 2.0)], [(1.0, 2.0), (-1.0, -2.0), (-2.0, 2.0), (2.0, 1.0)]], [[(-2.0, 0.0), (-1.0, 2.0), (-1.0, -1.0), (3.0, -1.0)], [(2.0, -2.0), (1.0, 0.0), (-1.0, -2.0), (-3.0, 2.0)], [(1.0, 1.0), (2.0, 0.0), (-2.0, 0.0), (-2.0, 1.0)], [(-1.0, -2.0), (1.0, 0.0), (1.0, 2.0), (2.0, 1.0)]]]> : tensor<2x4x4xcomplex<f64>>
  %b = stablehlo.constant dense<[[[(3.0, 0.0), (-8.0, 1.0), (-4.0, -4.0), (12.0, -12.0)], [(2.0, -2.0), (-5.0, 4.0), (-6.0, 0.0), (5.0, -5.0)], [(2.0, -2.0), (-2.0, 6.0), (-6.0, 0.0), (-10.0, -7.0)]], [[(3.0, -2.0), (10.0, 3.0), (1.0, -5.0), (-4.0, 9.0)], [(-3.0, 1.0), (-8.0, -5.0), (-3.0, 0.0), (-3.0, -6.0)], [(3.0, -1.0), (7.0, 2.0), (-3.0, -7.0), (0.0, 11.0)]]]> : tensor<2x3x4xcomplex<f64>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = true, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x4x4xcomplex<f64>>, tensor<2x3x4xcomplex<f64>>) -> tensor<2x3x4xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[[(3.0, 0.0), (-2.0, 1.0), (-2.0, 2.0), (1.0, -1.0)], [(2.0, -2.0), (-1.0, 0.0), (-3.0, 1.0), (-2.0, -1.0)], [(2.0, -2.0), (2.0, 2.0), (2.0, 0.0), (2.0, 1.0)]], [[(3.0, -2.0), (0.0, 1.0), (0.0, -2.0), (-1.0, 2.0)], [(-3.0, 1.0), (0.0, -1.0), (-1.0, -2.0), (1.0, 2.0)], [(3.0, -1.0), (-1.0, -2.0), (-3.0, 1.0), (3.0, -1.0)]]]> : tensor<2x3x4xcomplex<f64>>
  func.return
}

// -----

func.func @t10() {
  %a = stablehlo.constant dense<[[-2.0, 0.0, 3.0], [2.0, -2.0, 0.0], [2.0, -1.0, -2.0]]> : tensor<3x3xf32>
  %b = stablehlo.constant dense<[[-1.0, -3.0], [-1.0, -6.0], [-5.0, -8.0]]> : tensor<3x2xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  check.expect_almost_eq_const %r, dense<[[-1.0, -3.0], [1.0, 0.0], [-2.0, -2.0]]> : tensor<3x2xf32>
  func.return
}

// -----

func.func @t11() {
  %a = stablehlo.constant dense<[[[4.0, 3.0], [0.0, 2.0]]]> : tensor<1x2x2xf64>
  %b = stablehlo.constant dense<[[[-3.0, -2.0], [-11.0, -4.0]]]> : tensor<1x2x2xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = false, unit_diagonal = true, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<1x2x2xf64>, tensor<1x2x2xf64>) -> tensor<1x2x2xf64>
  check.expect_almost_eq_const %r, dense<[[[-3.0, -2.0], [-2.0, 2.0]]]> : tensor<1x2x2xf64>
  func.return
}

// -----

func.func @t12() {
  %a = stablehlo.constant dense<[[4.0, 0.0, -2.0], [-2.0, 4.0, 2.0], [-2.0, 3.0, 1.0]]> : tensor<3x3xf32>
  %b = stablehlo.constant dense<[[8.0, 9.0, -1.0]]> : tensor<1x3xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  check.expect_almost_eq_const %r, dense<[[3.0, 3.0, -1.0]]> : tensor<1x3xf32>
  func.return
}

// -----

func.func @t13() {
  %a = stablehlo.constant dense<[[(2.0, 1.0), (1.0, -2.0)], [(2.0, 0.0), (2.0, 1.0)]]> : tensor<2x2xcomplex<f64>>
  %b = stablehlo.constant dense<[[(3.0, -2.0), (-8.0, 2.0)], [(2.0, -1.0), (-3.0, 2.0)]]> : tensor<2x2xcomplex<f64>>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = true, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>) -> tensor<2x2xcomplex<f64>>
  check.expect_almost_eq_const %r, dense<[[(-1.0, 0.0), (-2.0, -2.0)], [(2.0, -1.0), (-3.0, 2.0)]]> : tensor<2x2xcomplex<f64>>
  func.return
}

// -----

func.func @t14() {
  %a = stablehlo.constant dense<[[[-2.0, 2.0, 3.0, 1.0], [0.0, -2.0, 0.0, 0.0], [1.0, 2.0, 1.0, 3.0], [1.0, 3.0, -2.0, -2.0]]]> : tensor<1x4x4xf64>
  %b = stablehlo.constant dense<[[[3.0, 10.0, 6.0], [-7.0, 7.0, -1.0], [-4.0, 1.0, 3.0], [-2.0, -2.0, 2.0]]]> : tensor<1x4x3xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<1x4x4xf64>, tensor<1x4x3xf64>) -> tensor<1x4x3xf64>
  check.expect_almost_eq_const %r, dense<[[[-2.0, -3.0, -3.0], [3.0, 1.0, 0.0], [-2.0, 3.0, 1.0], [1.0, 1.0, -1.0]]]> : tensor<1x4x3xf64>
  func.return
}

// -----

func.func @t15() {
  %a = stablehlo.constant dense<[[[4.0, -1.0], [3.0, 4.0]], [[1.0, 1.0], [3.0, -2.0]]]> : tensor<2x2x2xf64>
  %b = stablehlo.constant dense<[[[-11.0, -4.0]], [[-3.0, 0.0]]]> : tensor<2x1x2xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x2x2xf64>, tensor<2x1x2xf64>) -> tensor<2x1x2xf64>
  check.expect_almost_eq_const %r, dense<[[[-3.0, -1.0]], [[-3.0, 0.0]]]> : tensor<2x1x2xf64>
  func.return
}

// -----

func.func @t16() {
  %a = stablehlo.constant dense<[[-2.0, 2.0, 3.0], [3.0, 1.0, 0.0], [-1.0, 3.0, -2.0]]> : tensor<3x3xf64>
  %b = stablehlo.constant dense<[[-1.0, 3.0], [-3.0, 5.0], [0.0, 6.0]]> : tensor<3x2xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = false, unit_diagonal = true, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  check.expect_almost_eq_const %r, dense<[[-1.0, 3.0], [-1.0, -1.0], [3.0, -3.0]]> : tensor<3x2xf64>
  func.return
}

// -----

func.func @t17() {
  %a = stablehlo.constant dense<[[[1.0, -2.0, -2.0], [3.0, -2.0, -2.0], [2.0, 0.0, 4.0]], [[4.0, 0.0, -3.0], [0.0, -2.0, 2.0], [-1.0, -2.0, 4.0]]]> : tensor<2x3x3xf64>
  %b = stablehlo.constant dense<[[[3.0, 5.0, 6.0], [0.0, -2.0, 12.0], [0.0, 6.0, 12.0]], [[4.0, -6.0, -3.0], [0.0, 0.0, 0.0], [-8.0, -6.0, -4.0]]]> : tensor<2x3x3xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x3x3xf64>, tensor<2x3x3xf64>) -> tensor<2x3x3xf64>
  check.expect_almost_eq_const %r, dense<[[[3.0, 2.0, 0.0], [0.0, 1.0, 3.0], [0.0, -3.0, 3.0]], [[1.0, 3.0, 1.0], [0.0, 0.0, 0.0], [-2.0, 3.0, 0.0]]]> : tensor<2x3x3xf64>
  func.return
}

// -----

func.func @t18() {
  %a = stablehlo.constant dense<[[1.0, -3.0, 2.0], [2.0, 4.0, 3.0], [3.0, 2.0, -2.0]]> : tensor<3x3xf64>
  %b = stablehlo.constant dense<[[-3.0, -9.0, 6.0], [9.0, -8.0, 0.0]]> : tensor<2x3xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<3x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  check.expect_almost_eq_const %r, dense<[[3.0, 0.0, -3.0], [3.0, -2.0, 0.0]]> : tensor<2x3xf64>
  func.return
}

// -----

func.func @t19() {
  %a = stablehlo.constant dense<[[4.0, -1.0, -3.0], [-1.0, 2.0, -3.0], [-3.0, 3.0, 2.0]]> : tensor<3x3xf64>
  %b = stablehlo.constant dense<[[1.0, -3.0], [0.0, 4.0], [-3.0, 15.0]]> : tensor<3x2xf64>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  check.expect_almost_eq_const %r, dense<[[1.0, -3.0], [1.0, 1.0], [-3.0, 3.0]]> : tensor<3x2xf64>
  func.return
}
