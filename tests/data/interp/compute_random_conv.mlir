// Randomized convolutions (layouts, groups, strides, padding, dilations, reversal); expected
// values from an independent Python model of the StableHLO spec.

func.func @c0() {
  %lhs = stablehlo.constant dense<[[[[4, -1]], [[-3, 2]], [[3, -3]], [[2, -2]]], [[[4, 1]], [[4, -2]], [[-4, 4]], [[-2, 4]]], [[[-3, 2]], [[2, 3]], [[3, 2]], [[4, -4]]]]> : tensor<3x4x1x2xi64>
  %rhs = stablehlo.constant dense<[[[[2, 2], [-3, -2]], [[3, 2], [-1, -1]]], [[[-1, 3], [2, 0]], [[2, -1], [-3, -1]]]]> : tensor<2x2x2x2xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [1, b, 0, f]x[1, o, 0, i]->[0, b, f, 1], window = {stride = [3, 2], pad = [[1, 0], [1, 0]], lhs_dilate = [3, 3], rhs_dilate = [1, 1], reverse = [false, true]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<3x4x1x2xi64>, tensor<2x2x2x2xi64>) -> tensor<1x2x2x4xi64>
  check.expect_eq_const %r, dense<[[[[-10, 0, 8, 5], [0, 0, 8, -5]], [[5, 0, 8, -12], [0, 0, 2, 0]]]]> : tensor<1x2x2x4xi64>
  func.return
}

// -----

func.func @c1() {
  %lhs = stablehlo.constant dense<[[[-3], [0], [-4], [2]], [[0], [3], [1], [-4]]]> : tensor<2x4x1xi64>
  %rhs = stablehlo.constant dense<[[[1, 0], [-1, -2]]]> : tensor<1x2x2xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [f, 0, b]x[o, i, 0]->[f, b, 0], window = {stride = [1], pad = [[2, -1]], lhs_dilate = [3], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x1xi64>, tensor<1x2x2xi64>) -> tensor<1x1x10xi64>
  check.expect_eq_const %r, dense<[[[0, 0, -3, 0, -6, -3, 0, -2, -5, 0]]]> : tensor<1x1x10xi64>
  func.return
}

// -----

func.func @c2() {
  %lhs = stablehlo.constant dense<[[[[1, 0]], [[3, -2]]], [[[3, 0]], [[-4, 0]]], [[[1, 4]], [[3, -1]]], [[[0, 4]], [[0, -4]]]]> : tensor<4x2x1x2xi32>
  %rhs = stablehlo.constant dense<[[[[2, -3], [2, -3]], [[-2, 1], [-1, 0]], [[-2, -2], [-2, 0]]], [[[0, -3], [1, 1]], [[1, 2], [-1, 3]], [[-3, 0], [0, 1]]]]> : tensor<2x3x2x2xi32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [1, 0, b, f]x[1, 0, o, i]->[1, f, b, 0], window = {stride = [1, 1], pad = [[0, -1], [-1, 0]], lhs_dilate = [3, 1], rhs_dilate = [1, 2], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x2x1x2xi32>, tensor<2x3x2x2xi32>) -> tensor<1x2x1x1xi32>
  check.expect_eq_const %r, dense<[[[[-6]], [[-2]]]]> : tensor<1x2x1x1xi32>
  func.return
}

// -----

func.func @c3() {
  %lhs = stablehlo.constant dense<[[[0, 0], [4, 3], [-3, -1], [4, 2], [-1, -3]], [[2, 1], [1, -3], [1, -2], [-3, 0], [0, -2]]]> : tensor<2x5x2xi64>
  %rhs = stablehlo.constant dense<[[[3, 2]], [[2, 2]]]> : tensor<2x1x2xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [f, 0, b]x[o, 0, i]->[b, f, 0], window = {stride = [1], pad = [[-1, -1]], lhs_dilate = [3], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x5x2xi64>, tensor<2x1x2xi64>) -> tensor<2x2x11xi64>
  check.expect_eq_const %r, dense<[[[0, 0, 14, 0, 0, -7, 0, 0, 6, 0, 0], [0, 0, 10, 0, 0, -4, 0, 0, 2, 0, 0]], [[0, 0, 3, 0, 0, -7, 0, 0, 6, 0, 0], [0, 0, 0, 0, 0, -6, 0, 0, 4, 0, 0]]]> : tensor<2x2x11xi64>
  func.return
}

// -----

func.func @c4() {
  %lhs = stablehlo.constant dense<[[[[4, -1], [3, 3], [-4, -1], [2, 4]]], [[[2, 4], [3, -4], [-3, 4], [0, 1]]], [[[-4, 1], [3, 1], [0, -2], [-2, 3]]], [[[-1, 4], [-2, 0], [3, -4], [2, 1]]], [[[0, 2], [0, 2], [1, -2], [-2, 0]]]]> : tensor<5x1x4x2xi32>
  %rhs = stablehlo.constant dense<[[[[2]]], [[[-3]]]]> : tensor<2x1x1x1xi32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [0, f, 1, b]x[0, i, 1, o]->[0, f, 1, b], window = {stride = [1, 3], pad = [[0, -1], [1, 1]], lhs_dilate = [3, 2], rhs_dilate = [2, 1], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<5x1x4x2xi32>, tensor<2x1x1x1xi32>) -> tensor<10x1x3x2xi32>
  check.expect_eq_const %r, dense<[[[[0, 0], [-9, -9], [0, 0]]], [[[0, 0], [6, -8], [0, 0]]], [[[0, 0], [0, 0], [0, 0]]], [[[0, 0], [-9, 12], [0, 0]]], [[[0, 0], [6, 2], [0, 0]]], [[[0, 0], [0, 0], [0, 0]]], [[[0, 0], [-9, -3], [0, 0]]], [[[0, 0], [-4, 0], [0, 0]]], [[[0, 0], [0, 0], [0, 0]]], [[[0, 0], [6, 0], [0, 0]]]]> : tensor<10x1x3x2xi32>
  func.return
}

// -----

func.func @c5() {
  %lhs = stablehlo.constant dense<[[[[0.0, -1.0], [-2.0, 0.0], [4.0, -4.0], [-3.0, 1.0]], [[3.0, 4.0], [-1.0, 3.0], [-3.0, 4.0], [-4.0, -2.0]]], [[[2.0, 4.0], [3.0, 0.0], [3.0, 1.0], [2.0, 2.0]], [[4.0, -4.0], [0.0, -4.0], [-2.0, 3.0], [1.0, -3.0]]], [[[2.0, 4.0], [2.0, 1.0], [-3.0, -2.0], [1.0, -4.0]], [[-1.0, -3.0], [2.0, -3.0], [-4.0, -4.0], [-1.0, -4.0]]], [[[-3.0, -4.0], [-1.0, 3.0], [-1.0, 3.0], [1.0, 2.0]], [[4.0, 1.0], [-1.0, 2.0], [-3.0, 1.0], [-4.0, 1.0]]]]> : tensor<4x2x4x2xf32>
  %rhs = stablehlo.constant dense<[[[[-2.0, -1.0], [-3.0, 0.0]], [[1.0, -2.0], [2.0, -1.0]]], [[[-3.0, -2.0], [-2.0, -3.0]], [[0.0, 0.0], [2.0, -1.0]]]]> : tensor<2x2x2x2xf32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [1, f, 0, b]x[1, i, o, 0]->[0, 1, f, b], window = {stride = [1, 1], pad = [[1, 0], [1, 0]], lhs_dilate = [1, 2], rhs_dilate = [1, 2], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x2x4x2xf32>, tensor<2x2x2x2xf32>) -> tensor<4x6x2x2xf32>
  check.expect_eq_const %r, dense<[[[[0.0, 0.0], [0.0, 0.0]], [[-10.0, 6.0], [-7.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]], [[-4.0, -6.0], [-9.0, -5.0]], [[0.0, 0.0], [0.0, 0.0]], [[-9.0, -6.0], [-9.0, -10.0]]], [[[0.0, 0.0], [0.0, 0.0]], [[1.0, -1.0], [15.0, -9.0]], [[0.0, 0.0], [0.0, 0.0]], [[-23.0, -18.0], [-15.0, -27.0]], [[0.0, 0.0], [0.0, 0.0]], [[3.0, -12.0], [4.0, -2.0]]], [[[0.0, 0.0], [0.0, 0.0]], [[-7.0, -3.0], [-14.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]], [[-6.0, 3.0], [-11.0, -19.0]], [[0.0, 0.0], [0.0, 0.0]], [[8.0, -8.0], [17.0, -4.0]]], [[[0.0, 0.0], [0.0, 0.0]], [[-18.0, 15.0], [-15.0, 21.0]], [[0.0, 0.0], [0.0, 0.0]], [[-10.0, 5.0], [-15.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]], [[13.0, 5.0], [-3.0, 4.0]]]]> : tensor<4x6x2x2xf32>
  func.return
}

// -----

func.func @c6() {
  %lhs = stablehlo.constant dense<[[[[1, 0, 1, 1, 1], [4, 3, -3, -2, 2]], [[-1, 1, 1, 1, -2], [0, 1, 1, 2, -4]]], [[[4, 1, 4, -3, 4], [-3, 0, -2, 3, -3]], [[0, -2, 3, -1, 0], [-3, -1, -1, -1, 0]]]]> : tensor<2x2x2x5xi32>
  %rhs = stablehlo.constant dense<[[[[2, -3, 2], [-2, 1, -2]], [[0, 2, -1], [0, -2, 0]]], [[[0, 0, 0], [0, -1, -1]], [[2, 3, -2], [-2, 1, 1]]], [[[3, 2, 0], [1, 2, 2]], [[2, 1, 3], [2, -1, -1]]]]> : tensor<3x2x2x3xi32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [0, b, f, 1]x[0, o, i, 1]->[b, 1, 0, f], window = {stride = [3, 2], pad = [[2, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x2x2x5xi32>, tensor<3x2x2x3xi32>) -> tensor<2x2x1x2xi32>
  check.expect_eq_const %r, dense<[[[[-1, -1]], [[2, -5]]], [[[-3, 4]], [[-2, 5]]]]> : tensor<2x2x1x2xi32>
  func.return
}

// -----

func.func @c7() {
  %lhs = stablehlo.constant dense<[[[[3.0, 0.0, -3.0], [-1.0, -2.0, -1.0]]], [[[2.0, 4.0, 0.0], [4.0, 1.0, -1.0]]], [[[-2.0, -1.0, 4.0], [-3.0, -1.0, 0.0]]], [[[-4.0, 4.0, 4.0], [3.0, -3.0, 3.0]]]]> : tensor<4x1x2x3xf32>
  %rhs = stablehlo.constant dense<[[[[1.0]]], [[[1.0]]]]> : tensor<2x1x1x1xf32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [0, f, b, 1]x[0, 1, o, i]->[1, f, 0, b], window = {stride = [3, 3], pad = [[2, -1], [0, -1]], lhs_dilate = [2, 3], rhs_dilate = [2, 1], reverse = [true, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x1x2x3xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x2x2xf32>
  check.expect_eq_const %r, dense<[[[[3.0, -1.0], [0.0, 0.0]]], [[[0.0, -2.0], [0.0, 0.0]]]]> : tensor<2x1x2x2xf32>
  func.return
}

// -----

func.func @c11() {
  %lhs = stablehlo.constant dense<[[[[4, -1]], [[-3, -3]]], [[[-3, -2]], [[2, 1]]], [[[0, -4]], [[2, -1]]]]> : tensor<3x2x1x2xi64>
  %rhs = stablehlo.constant dense<[[[[-1, -1], [-1, -3], [2, -1], [2, 2]], [[0, -2], [3, -2], [1, -3], [3, -3]]], [[[2, 0], [0, 3], [-2, 1], [-2, 2]], [[0, 1], [3, 0], [2, -1], [-2, 3]]]]> : tensor<2x2x4x2xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [0, f, 1, b]x[1, 0, o, i]->[0, 1, b, f], window = {stride = [2, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [true, false]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<3x2x1x2xi64>, tensor<2x2x4x2xi64>) -> tensor<2x2x1x4xi64>
  check.expect_eq_const %r, dense<[[[[8, -9, -1, -4]], [[0, 0, 0, 0]]], [[[-3, 18, 8, -1]], [[0, 0, 0, 0]]]]> : tensor<2x2x1x4xi64>
  func.return
}

// -----

func.func @c12() {
  %lhs = stablehlo.constant dense<[[[-3.0, 2.0], [2.0, -1.0]], [[-2.0, -2.0], [-2.0, -3.0]]]> : tensor<2x2x2xf32>
  %rhs = stablehlo.constant dense<[[[1.0, 2.0, -2.0, 2.0]]]> : tensor<1x1x4xf32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [f, b, 0]x[i, 0, o]->[b, f, 0], window = {stride = [1], pad = [[0, 1]], lhs_dilate = [3], rhs_dilate = [2], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x2x2xf32>, tensor<1x1x4xf32>) -> tensor<2x4x5xf32>
  check.expect_eq_const %r, dense<[[[-3.0, 0.0, 0.0, 2.0, 0.0], [-6.0, 0.0, 0.0, 4.0, 0.0], [4.0, 0.0, 0.0, 4.0, 0.0], [-4.0, 0.0, 0.0, -4.0, 0.0]], [[2.0, 0.0, 0.0, -1.0, 0.0], [4.0, 0.0, 0.0, -2.0, 0.0], [4.0, 0.0, 0.0, 6.0, 0.0], [-4.0, 0.0, 0.0, -6.0, 0.0]]]> : tensor<2x4x5xf32>
  func.return
}

// -----

func.func @c13() {
  %lhs = stablehlo.constant dense<[[[[4, -2]], [[-1, 2]], [[4, -2]], [[-4, -4]]], [[[-4, -3]], [[4, -2]], [[2, 0]], [[4, -1]]], [[[-3, 3]], [[4, -3]], [[4, -2]], [[0, -3]]], [[[-2, 2]], [[-4, 1]], [[-4, -2]], [[-3, -3]]]]> : tensor<4x4x1x2xi32>
  %rhs = stablehlo.constant dense<[[[[-3, -1, 3]]], [[[-1, -1, -1]]]]> : tensor<2x1x1x3xi32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [1, 0, b, f]x[o, i, 1, 0]->[f, b, 0, 1], window = {stride = [1, 1], pad = [[1, 0], [1, 1]], lhs_dilate = [2, 3], rhs_dilate = [1, 1], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<4x4x1x2xi32>, tensor<2x1x1x3xi32>) -> tensor<2x1x6x12xi32>
  check.expect_eq_const %r, dense<[[[[0, -4, 0, 0, 4, 0, 0, 3, 0, 0, 2, 0], [0, 15, 0, 0, -24, 0, 0, -21, 0, 0, 6, 0], [0, 1, 0, 0, -4, 0, 0, -4, 0, 0, 4, 0], [0, -15, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0], [0, -4, 0, 0, -2, 0, 0, -4, 0, 0, 4, 0], [0, 24, 0, 0, -6, 0, 0, 12, 0, 0, -3, 0]]], [[[0, 2, 0, 0, 3, 0, 0, -3, 0, 0, -2, 0], [0, 0, 0, 0, 5, 0, 0, 0, 0, 0, -3, 0], [0, -2, 0, 0, 2, 0, 0, 3, 0, 0, -1, 0], [0, 0, 0, 0, 2, 0, 0, 5, 0, 0, 1, 0], [0, 2, 0, 0, 0, 0, 0, 2, 0, 0, 2, 0], [0, 6, 0, 0, 1, 0, 0, 5, 0, 0, 5, 0]]]]> : tensor<2x1x6x12xi32>
  func.return
}

// -----

func.func @c14() {
  %lhs = stablehlo.constant dense<[[[[2.0, -3.0, -3.0, -2.0], [3.0, -2.0, 3.0, 0.0]]], [[[4.0, 0.0, -1.0, -4.0], [-4.0, -1.0, 1.0, 3.0]]], [[[2.0, 4.0, 1.0, -2.0], [-2.0, -3.0, 2.0, -2.0]]], [[[-3.0, 1.0, 2.0, -4.0], [1.0, 3.0, 0.0, 1.0]]]]> : tensor<4x1x2x4xf32>
  %rhs = stablehlo.constant dense<[[[[-3.0, -1.0], [-1.0, -1.0], [-3.0, -3.0], [-1.0, 0.0]]], [[[-2.0, -1.0], [-2.0, -3.0], [0.0, -2.0], [-2.0, 3.0]]]]> : tensor<2x1x4x2xf32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [1, f, b, 0]x[1, i, o, 0]->[b, 0, f, 1], window = {stride = [2, 1], pad = [[2, 2], [1, -1]], lhs_dilate = [1, 2], rhs_dilate = [2, 1], reverse = [true, true]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x1x2x4xf32>, tensor<2x1x4x2xf32>) -> tensor<1x3x4x6xf32>
  check.expect_eq_const %r, dense<[[[[-6.0, -4.0, -12.0, -8.0, -6.0, -4.0], [-2.0, -4.0, -4.0, -8.0, -2.0, -4.0], [-9.0, 0.0, 12.0, 0.0, 6.0, 0.0], [-3.0, -6.0, 4.0, 8.0, 2.0, 4.0]], [[7.0, 4.0, -1.0, -2.0, -5.0, -4.0], [1.0, 0.0, -3.0, -10.0, -3.0, -8.0], [-18.0, -6.0, 9.0, 8.0, 0.0, 4.0], [-3.0, 3.0, -1.0, -14.0, -2.0, -10.0]], [[3.0, 3.0, 1.0, 1.0, -1.0, -1.0], [3.0, 9.0, 1.0, 3.0, -1.0, -3.0], [-9.0, -6.0, -3.0, -2.0, -6.0, -4.0], [0.0, 9.0, 0.0, 3.0, 0.0, 6.0]]]]> : tensor<1x3x4x6xf32>
  func.return
}

// -----

func.func @c17() {
  %lhs = stablehlo.constant dense<[[[-3, -4, 3, 2, 0], [4, 3, 3, 2, -1]]]> : tensor<1x2x5xi32>
  %rhs = stablehlo.constant dense<[[[1, 0]], [[0, -2]], [[2, -2]]]> : tensor<3x1x2xi32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[0, o, i]->[0, b, f], window = {stride = [1], pad = [[0, 2]], lhs_dilate = [2], rhs_dilate = [1], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x5xi32>, tensor<3x1x2xi32>) -> tensor<9x1x1xi32>
  check.expect_eq_const %r, dense<[[[-18]], [[-6]], [[-11]], [[-6]], [[2]], [[-4]], [[0]], [[2]], [[2]]]> : tensor<9x1x1xi32>
  func.return
}

// -----

func.func @c18() {
  %lhs = stablehlo.constant dense<[[[2, 2, -2], [-2, 1, 4]]]> : tensor<1x2x3xi64>
  %rhs = stablehlo.constant dense<[[[0]], [[-1]], [[2]]]> : tensor<3x1x1xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [f, b, 0]x[0, o, i]->[b, f, 0], window = {stride = [3], pad = [[0, 0]], lhs_dilate = [3], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x3xi64>, tensor<3x1x1xi64>) -> tensor<2x1x2xi64>
  check.expect_eq_const %r, dense<[[[0, 0]], [[0, 0]]]> : tensor<2x1x2xi64>
  func.return
}

// -----

func.func @c19() {
  %lhs = stablehlo.constant dense<[[[4.0], [4.0], [-4.0], [-2.0], [-1.0]]]> : tensor<1x5x1xf32>
  %rhs = stablehlo.constant dense<[[[1.0, -3.0]]]> : tensor<1x1x2xf32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [f, 0, b]x[o, i, 0]->[0, b, f], window = {stride = [3], pad = [[1, 2]], lhs_dilate = [2], rhs_dilate = [2], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x1xf32>, tensor<1x1x2xf32>) -> tensor<4x1x1xf32>
  check.expect_eq_const %r, dense<[[[0.0]], [[-16.0]], [[0.0]], [[3.0]]]> : tensor<4x1x1xf32>
  func.return
}
