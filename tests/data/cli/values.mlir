// `mlxcel run` (without --check) prints the results of @main.
func.func @main() -> (tensor<2x2xi32>, tensor<3xf32>, tensor<i1>) {
  %0 = stablehlo.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi32>
  %1 = stablehlo.constant dense<[0.5, -1.0, 3.0e+10]> : tensor<3xf32>
  %2 = stablehlo.constant dense<true> : tensor<i1>
  func.return %0, %1, %2 : tensor<2x2xi32>, tensor<3xf32>, tensor<i1>
}
