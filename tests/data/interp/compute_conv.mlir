// Compute kernels: convolution (groups, dilations, padding, reversal, layouts).

func.func @conv_feature_groups() {
  %lhs = stablehlo.constant dense<[[[-3, 1, -2, 2, -1], [0, -3, 1, -2, 2], [3, 0, -3, 1, -2], [-1, 3, 0, -3, 1]], [[-1, 3, 0, -3, 1], [2, -1, 3, 0, -3], [-2, 2, -1, 3, 0], [1, -2, 2, -1, 3]]]> : tensor<2x4x5xi64>
  %rhs = stablehlo.constant dense<[[[-2, 1, 0, 0], [0, -2, 2, 2]], [[-1, 2, 1, 1], [1, -1, -2, -2]], [[2, 0, -1, -1], [-1, 2, 1, 1]]]> : tensor<3x2x4xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[0, i, o]->[b, f, 0], window = {stride = [2], pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x4x5xi64>, tensor<3x2x4xi64>) -> tensor<2x4x3xi64>
  check.expect_eq_const %r, dense<[[[8, 7, -1], [-12, -2, 2], [8, -1, -10], [8, -1, -10]], [[10, -9, 2], [-6, 2, 2], [-8, -13, -8], [-8, -13, -8]]]> : tensor<2x4x3xi64>
  func.return
}

// -----

func.func @conv_batch_groups() {
  %lhs = stablehlo.constant dense<[[[-3, 1, -2, 2], [0, -3, 1, -2]], [[-1, 3, 0, -3], [2, -1, 3, 0]], [[1, -2, 2, -1], [-3, 1, -2, 2]], [[3, 0, -3, 1], [-1, 3, 0, -3]]]> : tensor<4x2x4xi64>
  %rhs = stablehlo.constant dense<[[[-2, 1, 0, 0], [0, -2, 2, 2], [1, -1, -2, -2], [1, -1, -2, -2]], [[-1, 2, 1, 1], [1, -1, -2, -2], [2, 0, -1, -1], [2, 0, -1, -1]]]> : tensor<2x4x4xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x2x4xi64>, tensor<2x4x4xi64>) -> tensor<2x1x4xi64>
  check.expect_eq_const %r, dense<[[[1, -2, -11, -11]], [[2, 1, 0, 0]]]> : tensor<2x1x4xi64>
  func.return
}

// -----

func.func @conv_rhs_dilation_negpad_reversal() {
  %lhs = stablehlo.constant dense<[[[[-3, 2, 0, -2, 3, 1], [1, -1, -3, 2, 0, -2], [-2, 3, 1, -1, -3, 2], [2, 0, -2, 3, 1, -1], [-1, -3, 2, 0, -2, 3]], [[0, -2, 3, 1, -1, -3], [-3, 2, 0, -2, 3, 1], [1, -1, -3, 2, 0, -2], [-2, 3, 1, -1, -3, 2], [2, 0, -2, 3, 1, -1]]]]> : tensor<1x2x5x6xi64>
  %rhs = stablehlo.constant dense<[[[[-2, 2], [1, 0]], [[0, -1], [-2, 2]]], [[[-1, -2], [2, 1]], [[1, 0], [-1, -2]]], [[[2, 1], [0, -1]], [[-1, -2], [2, 1]]]]> : tensor<3x2x2x2xi64>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[0, 0], [-1, 0]], rhs_dilate = [2, 2], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x5x6xi64>, tensor<3x2x2x2xi64>) -> tensor<1x3x3x3xi64>
  check.expect_eq_const %r, dense<[[[[-2, -16, -2], [-2, 12, -2], [12, -2, -2]], [[0, 4, 1], [-1, -11, 0], [5, 2, -1]], [[1, 4, 0], [2, 5, 1], [-11, -1, 2]]]]> : tensor<1x3x3x3xi64>
  func.return
}

// -----

func.func @conv_lhs_dilation_odd_layout_i8() {
  %lhs = stablehlo.constant dense<[[[[100, 63], [63, 26]]], [[[63, 26], [26, 100]]], [[[26, 100], [100, 63]]]]> : tensor<3x1x2x2xi8>
  %rhs = stablehlo.constant dense<[[[[85, 86], [85, 86]], [[90, 91], [90, 91]]], [[[88, 89], [88, 89]], [[93, 94], [93, 94]]]]> : tensor<2x2x2x2xi8>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [0, b, 1, f]x[1, 0, i, o]->[1, 0, b, f], window = {stride = [2, 1], pad = [[1, 1], [0, 1]], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<3x1x2x2xi8>, tensor<2x2x2x2xi8>) -> tensor<3x3x1x2xi32>
  check.expect_eq_const %r, dense<[[[[14670, 14833]], [[8010, 8099]], [[11340, 11466]]], [[[8277, 8366]], [[11718, 11844]], [[15159, 15322]]], [[[8010, 8099]], [[11340, 11466]], [[14670, 14833]]]]> : tensor<3x3x1x2xi32>
  func.return
}

// -----

func.func @conv_depthwise_f32() {
  %lhs = stablehlo.constant dense<[[[0.0, -0.25, -0.5], [0.5, 0.25, 0.0], [1.0, 0.75, 0.5]]]> : tensor<1x3x3xf32>
  %rhs = stablehlo.constant dense<[[[1.5, 2.0, 2.5]], [[0.5, 1.0, 1.5]]]> : tensor<2x1x3xf32>
  %r = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[1, 2]]} {batch_group_count = 1 : i64, feature_group_count = 3 : i64} : (tensor<1x3x3xf32>, tensor<2x1x3xf32>) -> tensor<1x5x3xf32>
  check.expect_eq_const %r, dense<[[[0.0, -0.25, -0.75], [0.25, -0.25, -1.25], [1.25, 1.25, 0.75], [1.5, 1.5, 1.25], [0.0, 0.0, 0.0]]]> : tensor<1x5x3xf32>
  func.return
}
