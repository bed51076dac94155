// RMS normalization as the model graphs write it: a `mx.rms_norm` composite (which a fast
// runtime may run as one fused kernel) whose decomposition, in plain StableHLO, is what the
// reference interpreter runs:  y = x / sqrt(mean(x^2) + eps) * w  over the last axis.
//
//   mlxcel run --check examples/rms_norm.mlir
func.func private @mx.rms_norm.impl(%x: tensor<1x2x4xf32>, %w: tensor<4xf32>) -> tensor<1x2x4xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<4.0> : tensor<1x2xf32>
  %eps = stablehlo.constant dense<1.0e-05> : tensor<1x2xf32>
  %sq = stablehlo.multiply %x, %x : tensor<1x2x4xf32>
  %sum = "stablehlo.reduce"(%sq, %zero) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {
    dimensions = array<i64: 2>
  } : (tensor<1x2x4xf32>, tensor<f32>) -> tensor<1x2xf32>
  %mean = stablehlo.divide %sum, %n : tensor<1x2xf32>
  %var = stablehlo.add %mean, %eps : tensor<1x2xf32>
  %inv = stablehlo.rsqrt %var : tensor<1x2xf32>
  %inv_b = stablehlo.broadcast_in_dim %inv, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<1x2x4xf32>
  %w_b = stablehlo.broadcast_in_dim %w, dims = [2] : (tensor<4xf32>) -> tensor<1x2x4xf32>
  %normed = stablehlo.multiply %x, %inv_b : tensor<1x2x4xf32>
  %y = stablehlo.multiply %normed, %w_b : tensor<1x2x4xf32>
  func.return %y : tensor<1x2x4xf32>
}

func.func @main() -> tensor<1x2x4xf32> {
  %x = stablehlo.constant dense<[[[1.0, 2.0, 3.0, 4.0], [-0.5, 0.25, 0.0, 2.0]]]> : tensor<1x2x4xf32>
  %w = stablehlo.constant dense<[1.0, 0.5, 2.0, 1.0]> : tensor<4xf32>
  %y = stablehlo.composite "mx.rms_norm" %x, %w {
    composite_attributes = {eps = 1.0e-05 : f32, weight_offset = 0.0 : f32},
    decomposition = @mx.rms_norm.impl,
    version = 1 : i32
  } : (tensor<1x2x4xf32>, tensor<4xf32>) -> tensor<1x2x4xf32>
  check.expect_almost_eq_const %y, dense<[[[0.365148, 0.365148, 2.190889, 1.460593],
                                          [-0.481541, 0.120385, 0.0, 1.926165]]]> : tensor<1x2x4xf32>
  func.return %y : tensor<1x2x4xf32>
}
