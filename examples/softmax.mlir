// Softmax over the last axis, computed the way a model's attention does it: subtract each row's
// maximum (so exp never overflows), exponentiate, divide by the row sum.
//
//   mlxcel run examples/softmax.mlir          prints the probabilities
//   mlxcel run --check examples/softmax.mlir  checks them against precomputed values
func.func @main() -> tensor<3x4xf32> {
  %logits = stablehlo.constant dense<[[1.0, 2.0, 3.0, 4.0],
                                      [0.0, 0.0, 0.0, 0.0],
                                      [-1.0, 0.5, 2.0, -3.0]]> : tensor<3x4xf32>
  %neg_inf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %row_max = "stablehlo.reduce"(%logits, %neg_inf) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {
    dimensions = array<i64: 1>
  } : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
  %max_b = stablehlo.broadcast_in_dim %row_max, dims = [0] : (tensor<3xf32>) -> tensor<3x4xf32>
  %shifted = stablehlo.subtract %logits, %max_b : tensor<3x4xf32>
  %exp = stablehlo.exponential %shifted : tensor<3x4xf32>
  %row_sum = "stablehlo.reduce"(%exp, %zero) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {
    dimensions = array<i64: 1>
  } : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
  %sum_b = stablehlo.broadcast_in_dim %row_sum, dims = [0] : (tensor<3xf32>) -> tensor<3x4xf32>
  %probs = stablehlo.divide %exp, %sum_b : tensor<3x4xf32>
  check.expect_almost_eq_const %probs, dense<[[0.0320586, 0.0871443, 0.2368828, 0.6439143],
                                              [0.25, 0.25, 0.25, 0.25],
                                              [0.0389066, 0.1743674, 0.7814605, 0.0052654]]> : tensor<3x4xf32>
  func.return %probs : tensor<3x4xf32>
}
