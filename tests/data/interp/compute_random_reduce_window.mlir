// Randomized reduce_window cases (strides, base/window dilations, padding holding the init value);
// expected values from an independent Python model of the StableHLO reference semantics.

func.func @rw0() {
  %x = stablehlo.constant dense<[[-9, 4], [-5, -9], [-1, -5]]> : tensor<3x2xi64>
  %init = stablehlo.constant dense<3> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 3, 1>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[2, 0], [2, 1]]> : tensor<2x2xi64>} : (tensor<3x2xi64>, tensor<i64>) -> tensor<1x5xi64>
  check.expect_eq_const %r, dense<[[12, 12, 0, 13, 12]]> : tensor<1x5xi64>
  func.return
}

// -----

func.func @rw1() {
  %x = stablehlo.constant dense<[[2, -1, 5, 8], [-5, 5, 5, 8], [-4, 0, -3, -4], [7, 2, -1, 2]]> : tensor<4x4xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 2, 1>, base_dilations = array<i64: 2, 2>, window_dilations = array<i64: 2, 2>, padding = dense<[[2, 1], [2, 0]]> : tensor<2x2xi64>} : (tensor<4x4xi64>, tensor<i64>) -> tensor<5x7xi64>
  check.expect_eq_const %r, dense<[[-100, -100, -100, -100, -100, -100, -100], [2, -100, 2, -100, 5, -100, 8], [-5, -100, 5, -100, 5, -100, 8], [-4, -100, 0, -100, 0, -100, -3], [7, -100, 7, -100, 2, -100, 2]]> : tensor<5x7xi64>
  func.return
}

// -----

func.func @rw2() {
  %x = stablehlo.constant dense<[[5, 3, -9, 4], [-8, -2, -5, 6], [5, -1, -4, 4]]> : tensor<3x4xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1, 3>, window_strides = array<i64: 2, 3>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 2>, padding = dense<[[0, 0], [1, 2]]> : tensor<2x2xi64>} : (tensor<3x4xi64>, tensor<i64>) -> tensor<2x1xi64>
  check.expect_eq_const %r, dense<[[4], [4]]> : tensor<2x1xi64>
  func.return
}

// -----

func.func @rw3() {
  %x = stablehlo.constant dense<[[2, 9, 9], [1, -4, 0]]> : tensor<2x3xi64>
  %init = stablehlo.constant dense<-2> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 3, 1>, base_dilations = array<i64: 1, 2>, window_dilations = array<i64: 1, 1>, padding = dense<[[2, 2], [2, 0]]> : tensor<2x2xi64>} : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x5xi64>
  check.expect_eq_const %r, dense<[[-16, -16, -5, -9, 2], [-17, -17, -19, -22, -20]]> : tensor<2x5xi64>
  func.return
}

// -----

func.func @rw4() {
  %x = stablehlo.constant dense<[[[-7, 6], [7, 2]]]> : tensor<1x2x2xi64>
  %init = stablehlo.constant dense<-3> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1, 2, 3>, window_strides = array<i64: 3, 3, 3>, base_dilations = array<i64: 1, 2, 2>, window_dilations = array<i64: 1, 1, 1>, padding = dense<[[1, 0], [1, 1], [1, 2]]> : tensor<3x2xi64>} : (tensor<1x2x2xi64>, tensor<i64>) -> tensor<1x2x2xi64>
  check.expect_eq_const %r, dense<[[[-21, -21], [-21, -21]]]> : tensor<1x2x2xi64>
  func.return
}

// -----

func.func @rw5() {
  %x = stablehlo.constant dense<[[-4, -5], [-1, 4], [-3, -1]]> : tensor<3x2xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 3, 3>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 2>, padding = dense<[[0, 1], [2, 2]]> : tensor<2x2xi64>} : (tensor<3x2xi64>, tensor<i64>) -> tensor<2x1xi64>
  check.expect_eq_const %r, dense<[[-4], [-3]]> : tensor<2x1xi64>
  func.return
}

// -----

func.func @rw7() {
  %x = stablehlo.constant dense<[7, 4, -5, -5]> : tensor<4xi64>
  %init = stablehlo.constant dense<-3> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 2>, window_strides = array<i64: 3>, base_dilations = array<i64: 2>, window_dilations = array<i64: 2>, padding = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xi64>, tensor<i64>) -> tensor<2xi64>
  check.expect_eq_const %r, dense<[8, -9]> : tensor<2xi64>
  func.return
}

// -----

func.func @rw8() {
  %x = stablehlo.constant dense<[[9, 9], [4, -8]]> : tensor<2x2xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 3, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 2, 1>, padding = dense<[[0, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<2x2xi64>, tensor<i64>) -> tensor<1x2xi64>
  check.expect_eq_const %r, dense<[[9, 9]]> : tensor<1x2xi64>
  func.return
}

// -----

func.func @rw9() {
  %x = stablehlo.constant dense<[[[-2], [7]], [[5], [-3]], [[9], [3]]]> : tensor<3x2x1xi64>
  %init = stablehlo.constant dense<3> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 2, 1, 3>, window_strides = array<i64: 3, 1, 1>, base_dilations = array<i64: 1, 1, 1>, window_dilations = array<i64: 2, 2, 1>, padding = dense<[[1, 1], [0, 0], [2, 0]]> : tensor<3x2xi64>} : (tensor<3x2x1xi64>, tensor<i64>) -> tensor<1x2x1xi64>
  check.expect_eq_const %r, dense<[[[23], [15]]]> : tensor<1x2x1xi64>
  func.return
}

// -----

func.func @rw11() {
  %x = stablehlo.constant dense<[[3, -1, -5]]> : tensor<1x3xi64>
  %init = stablehlo.constant dense<0> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 1, 3>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>} : (tensor<1x3xi64>, tensor<i64>) -> tensor<1x2xi64>
  check.expect_eq_const %r, dense<[[3, -5]]> : tensor<1x2xi64>
  func.return
}

// -----

func.func @rw13() {
  %x = stablehlo.constant dense<[6, -3, -9, 9]> : tensor<4xi64>
  %init = stablehlo.constant dense<0> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3>, window_strides = array<i64: 3>, base_dilations = array<i64: 2>, window_dilations = array<i64: 1>, padding = dense<[[1, 2]]> : tensor<1x2xi64>} : (tensor<4xi64>, tensor<i64>) -> tensor<3xi64>
  check.expect_eq_const %r, dense<[6, -12, 9]> : tensor<3xi64>
  func.return
}

// -----

func.func @rw14() {
  %x = stablehlo.constant dense<[[[7], [4]], [[-1], [-2]]]> : tensor<2x2x1xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1, 3, 1>, window_strides = array<i64: 2, 1, 2>, base_dilations = array<i64: 1, 1, 2>, window_dilations = array<i64: 1, 1, 1>, padding = dense<[[1, 2], [0, 2], [0, 2]]> : tensor<3x2xi64>} : (tensor<2x2x1xi64>, tensor<i64>) -> tensor<3x2x2xi64>
  check.expect_eq_const %r, dense<[[[-100, -100], [-100, -100]], [[-1, -100], [-2, -100]], [[-100, -100], [-100, -100]]]> : tensor<3x2x2xi64>
  func.return
}

// -----

func.func @rw15() {
  %x = stablehlo.constant dense<[-2]> : tensor<1xi64>
  %init = stablehlo.constant dense<1> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1>, window_strides = array<i64: 2>, base_dilations = array<i64: 1>, window_dilations = array<i64: 2>, padding = dense<[[1, 2]]> : tensor<1x2xi64>} : (tensor<1xi64>, tensor<i64>) -> tensor<2xi64>
  check.expect_eq_const %r, dense<[2, 2]> : tensor<2xi64>
  func.return
}

// -----

func.func @rw16() {
  %x = stablehlo.constant dense<[[[8], [-5]], [[7], [-9]], [[5], [2]], [[3], [9]]]> : tensor<4x2x1xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1, 2, 1>, window_strides = array<i64: 2, 2, 1>, base_dilations = array<i64: 2, 1, 2>, window_dilations = array<i64: 1, 2, 1>, padding = dense<[[0, 2], [0, 2], [0, 0]]> : tensor<3x2xi64>} : (tensor<4x2x1xi64>, tensor<i64>) -> tensor<5x1x1xi64>
  check.expect_eq_const %r, dense<[[[8]], [[7]], [[5]], [[3]], [[-100]]]> : tensor<5x1x1xi64>
  func.return
}

// -----

func.func @rw17() {
  %x = stablehlo.constant dense<[[[6, 9, -8, -7]], [[-1, -3, -9, -5]], [[8, 1, 0, 7]], [[-3, 4, 8, 0]]]> : tensor<4x1x4xi64>
  %init = stablehlo.constant dense<-2> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3, 2, 2>, window_strides = array<i64: 2, 3, 1>, base_dilations = array<i64: 1, 2, 2>, window_dilations = array<i64: 1, 2, 2>, padding = dense<[[1, 0], [2, 1], [1, 1]]> : tensor<3x2xi64>} : (tensor<4x1x4xi64>, tensor<i64>) -> tensor<2x1x7xi64>
  check.expect_eq_const %r, dense<[[[-26, -7, -26, -29, -26, -47, -26]], [[-26, -8, -26, -13, -26, -13, -26]]]> : tensor<2x1x7xi64>
  func.return
}

// -----

func.func @rw18() {
  %x = stablehlo.constant dense<[[[4, -7]]]> : tensor<1x1x2xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1, 3, 2>, window_strides = array<i64: 3, 1, 2>, base_dilations = array<i64: 1, 1, 1>, window_dilations = array<i64: 1, 1, 1>, padding = dense<[[0, 1], [2, 0], [2, 2]]> : tensor<3x2xi64>} : (tensor<1x1x2xi64>, tensor<i64>) -> tensor<1x1x3xi64>
  check.expect_eq_const %r, dense<[[[-100, 4, -100]]]> : tensor<1x1x3xi64>
  func.return
}

// -----

func.func @rw20() {
  %x = stablehlo.constant dense<[[0, -6, -6], [6, 5, -6], [-8, 9, 8]]> : tensor<3x3xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 1, 1>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 1, 1>, padding = dense<[[1, 0], [0, 2]]> : tensor<2x2xi64>} : (tensor<3x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  check.expect_eq_const %r, dense<[[6, 5, -6], [9, 9, 8]]> : tensor<2x3xi64>
  func.return
}

// -----

func.func @rw21() {
  %x = stablehlo.constant dense<[6, -7, -6, -1]> : tensor<4xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1>, window_strides = array<i64: 2>, base_dilations = array<i64: 2>, window_dilations = array<i64: 2>, padding = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  check.expect_eq_const %r, dense<[6, -7, -6, -1]> : tensor<4xi64>
  func.return
}

// -----

func.func @rw22() {
  %x = stablehlo.constant dense<[-5, 4, 4, -9]> : tensor<4xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 1>, window_strides = array<i64: 3>, base_dilations = array<i64: 1>, window_dilations = array<i64: 1>, padding = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xi64>, tensor<i64>) -> tensor<2xi64>
  check.expect_eq_const %r, dense<[-5, -9]> : tensor<2xi64>
  func.return
}

// -----

func.func @rw23() {
  %x = stablehlo.constant dense<[[4, 8, -3], [-5, 3, -9], [3, 3, 1]]> : tensor<3x3xi64>
  %init = stablehlo.constant dense<-100> : tensor<i64>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.maximum %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 1, 1>, base_dilations = array<i64: 1, 1>, window_dilations = array<i64: 2, 1>, padding = dense<[[2, 1], [0, 1]]> : tensor<2x2xi64>} : (tensor<3x3xi64>, tensor<i64>) -> tensor<2x4xi64>
  check.expect_eq_const %r, dense<[[4, 8, 1, -100], [-5, 3, -9, -100]]> : tensor<2x4xi64>
  func.return
}
