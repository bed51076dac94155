// @main takes arguments: `mlxcel run` cannot supply them yet and says so.
func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
  %0 = stablehlo.add %a, %b : tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
