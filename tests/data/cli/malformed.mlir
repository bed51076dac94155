// A syntax error on line 4: the parser must report file:line:col.
func.func @broken() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %1 = stablehlo.add %0, : tensor<2xi64>
  func.return
}
