// Compute kernels: reduce, reduce_window, select_and_scatter, map, sort.

func.func @reduce_argmax_two_operands() {
  %v = stablehlo.constant dense<[[3, 7, 7, 1], [5, 2, 5, 5]]> : tensor<2x4xi64>
  %i = stablehlo.constant dense<[[0, 1, 2, 3], [0, 1, 2, 3]]> : tensor<2x4xi32>
  %v0 = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
  %i0 = stablehlo.constant dense<-1> : tensor<i32>
  %rv, %ri = "stablehlo.reduce"(%v, %i, %v0, %i0) ({
    ^bb0(%av: tensor<i64>, %ai: tensor<i32>, %bv: tensor<i64>, %bi: tensor<i32>):
      %gt = stablehlo.compare GT, %av, %bv : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %av, %bv : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %lt = stablehlo.compare LT, %ai, %bi : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %take_a = stablehlo.or %gt, %tie : tensor<i1>
      %sv = stablehlo.select %take_a, %av, %bv : tensor<i1>, tensor<i64>
      %si = stablehlo.select %take_a, %ai, %bi : tensor<i1>, tensor<i32>
      stablehlo.return %sv, %si : tensor<i64>, tensor<i32>
  }) {dimensions = array<i64: 1>} : (tensor<2x4xi64>, tensor<2x4xi32>, tensor<i64>, tensor<i32>) -> (tensor<2xi64>, tensor<2xi32>)
  check.expect_eq_const %rv, dense<[7, 5]> : tensor<2xi64>
  check.expect_eq_const %ri, dense<[1, 0]> : tensor<2xi32>
  func.return
}

// -----

func.func @reduce_two_dims_order() {
  %x = stablehlo.constant dense<[[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]]> : tensor<2x3x2xi64>
  %z = stablehlo.constant dense<0> : tensor<i64>
  %r = "stablehlo.reduce"(%x, %z) ({
    ^bb0(%acc: tensor<i64>, %e: tensor<i64>):
      %two = stablehlo.constant dense<2> : tensor<i64>
      %m = stablehlo.multiply %acc, %two : tensor<i64>
      %s = stablehlo.add %m, %e : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {dimensions = array<i64: 0, 2>} : (tensor<2x3x2xi64>, tensor<i64>) -> tensor<3xi64>
  check.expect_eq_const %r, dense<[38, 68, 98]> : tensor<3xi64>
  func.return
}

// -----

func.func @reduce_window_dilations_padding() {
  %x = stablehlo.constant dense<[[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]> : tensor<2x3xf32>
  %init = stablehlo.constant dense<-1.0e30> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 2>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 2>, padding = dense<[[1, 0], [0, 1]]> : tensor<2x2xi64>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x1xf32>
  check.expect_almost_eq_const %r, dense<[[3.0], [3.0], [4.0]]> : tensor<3x1xf32>
  func.return
}

// -----

func.func @reduce_window_sum_init_in_padding() {
  %x = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %init = stablehlo.constant dense<10> : tensor<i32>
  %r = "stablehlo.reduce_window"(%x, %init) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.add %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {window_dimensions = array<i64: 3>, window_strides = array<i64: 2>, padding = dense<[[1, 1]]> : tensor<1x2xi64>} : (tensor<4xi32>, tensor<i32>) -> tensor<2xi32>
  check.expect_eq_const %r, dense<[23, 19]> : tensor<2xi32>
  func.return
}

// -----

func.func @reduce_window_argmax_two_operands() {
  %v = stablehlo.constant dense<[3, 9, 9, 2, 8]> : tensor<5xi64>
  %i = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi32>
  %v0 = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
  %i0 = stablehlo.constant dense<-1> : tensor<i32>
  %rv, %ri = "stablehlo.reduce_window"(%v, %i, %v0, %i0) ({
    ^bb0(%av: tensor<i64>, %ai: tensor<i32>, %bv: tensor<i64>, %bi: tensor<i32>):
      %gt = stablehlo.compare GT, %av, %bv : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %av, %bv : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %lt = stablehlo.compare LT, %ai, %bi : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %take_a = stablehlo.or %gt, %tie : tensor<i1>
      %sv = stablehlo.select %take_a, %av, %bv : tensor<i1>, tensor<i64>
      %si = stablehlo.select %take_a, %ai, %bi : tensor<i1>, tensor<i32>
      stablehlo.return %sv, %si : tensor<i64>, tensor<i32>
  }) {window_dimensions = array<i64: 3>, window_strides = array<i64: 1>} : (tensor<5xi64>, tensor<5xi32>, tensor<i64>, tensor<i32>) -> (tensor<3xi64>, tensor<3xi32>)
  check.expect_eq_const %rv, dense<[9, 9, 9]> : tensor<3xi64>
  check.expect_eq_const %ri, dense<[1, 1, 2]> : tensor<3xi32>
  func.return
}

// -----

func.func @select_and_scatter_overlap() {
  %x = stablehlo.constant dense<[1, 5, 5, 2, 7, 7]> : tensor<6xi64>
  %s = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi64>
  %init = stablehlo.constant dense<1> : tensor<i64>
  %r = "stablehlo.select_and_scatter"(%x, %s, %init) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %c = stablehlo.compare GE, %a, %b : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
  }, {
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %c = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %c : tensor<i64>
  }) {window_dimensions = array<i64: 3>, window_strides = array<i64: 2>, padding = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<6xi64>, tensor<3xi64>, tensor<i64>) -> tensor<6xi64>
  check.expect_eq_const %r, dense<[1, 12, 1, 1, 53, 1]> : tensor<6xi64>
  func.return
}

// -----

func.func @map_two_operands() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %b = stablehlo.constant dense<[[0.5, 1.5], [2.5, -1.0]]> : tensor<2x2xf32>
  %r = "stablehlo.map"(%a, %b) ({
    ^bb0(%x: tensor<i32>, %y: tensor<f32>):
      %xf = stablehlo.convert %x : (tensor<i32>) -> tensor<f32>
      %m = stablehlo.multiply %xf, %y : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x2xi32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  check.expect_almost_eq_const %r, dense<[[0.5, 3.0], [7.5, -4.0]]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @sort_stable_ties_dim1() {
  %k = stablehlo.constant dense<[[3, 1, 3, 2, 1, 3], [0, 0, 0, 0, 0, 0]]> : tensor<2x6xi64>
  %p = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]> : tensor<2x6xi32>
  %rk, %rp = "stablehlo.sort"(%k, %p) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>, %c: tensor<i32>, %d: tensor<i32>):
      %lt = stablehlo.compare LT, %a, %b : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }) {dimension = 1 : i64, is_stable = true} : (tensor<2x6xi64>, tensor<2x6xi32>) -> (tensor<2x6xi64>, tensor<2x6xi32>)
  check.expect_eq_const %rk, dense<[[1, 1, 2, 3, 3, 3], [0, 0, 0, 0, 0, 0]]> : tensor<2x6xi64>
  check.expect_eq_const %rp, dense<[[1, 4, 3, 0, 2, 5], [5, 4, 3, 2, 1, 0]]> : tensor<2x6xi32>
  func.return
}

// -----

func.func @sort_negative_dimension_descending() {
  %x = stablehlo.constant dense<[[[-1.0, -0.5, 0.0], [0.5, 1.0, 1.5]], [[1.5, -1.0, -0.5], [0.0, 0.5, 1.0]]]> : tensor<2x2x3xf32>
  %r = "stablehlo.sort"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %gt : tensor<i1>
  }) {dimension = -1 : i64} : (tensor<2x2x3xf32>) -> tensor<2x2x3xf32>
  check.expect_almost_eq_const %r, dense<[[[0.0, -0.5, -1.0], [1.5, 1.0, 0.5]], [[1.5, -0.5, -1.0], [1.0, 0.5, 0.0]]]> : tensor<2x2x3xf32>
  func.return
}
