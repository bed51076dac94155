// interpreter.probe records values (in memory) that check.expect_serialized_eq compares bit for
// bit, by probe id and iteration (generic forms).

func.func @probe_types() {
  %a = stablehlo.constant dense<[(1.0, 2.0), (3.0, 4.0)]> : tensor<2xcomplex<f32>>
  %b = stablehlo.constant dense<[0x7FC00000, -0.0]> : tensor<2xf32>
  %c = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %pa = "interpreter.probe"(%a) {probe_id = "c"} : (tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  %pb = "interpreter.probe"(%b) {probe_id = "f/0"} : (tensor<2xf32>) -> tensor<2xf32>
  %pc = "interpreter.probe"(%c) {probe_id = "b"} : (tensor<2xi1>) -> tensor<2xi1>
  "check.expect_serialized_eq"(%a) {probe_id = "c"} : (tensor<2xcomplex<f32>>) -> ()
  "check.expect_serialized_eq"(%pb) {probe_id = "f/0", iter = 0 : i64} : (tensor<2xf32>) -> ()
  "check.expect_serialized_eq"(%pc) {probe_id = "b"} : (tensor<2xi1>) -> ()
  check.expect_eq %pa, %a : tensor<2xcomplex<f32>>
  func.return
}

// -----

// One record per execution: iterations of a loop body are numbered from 0.
func.func @probe_iterations() {
  %i0 = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r:2 = stablehlo.while(%i = %i0, %s = %i0) : tensor<i64>, tensor<i64>
  cond {
    %n = stablehlo.constant dense<3> : tensor<i64>
    %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %s2 = stablehlo.add %s, %i : tensor<i64>
    %p = "interpreter.probe"(%s2) {probe_id = "sum"} : (tensor<i64>) -> tensor<i64>
    %i2 = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %i2, %p : tensor<i64>, tensor<i64>
  }
  %v0 = stablehlo.constant dense<0> : tensor<i64>
  %v1 = stablehlo.constant dense<1> : tensor<i64>
  %v2 = stablehlo.constant dense<3> : tensor<i64>
  "check.expect_serialized_eq"(%v0) {probe_id = "sum", iter = 0 : i64} : (tensor<i64>) -> ()
  "check.expect_serialized_eq"(%v1) {probe_id = "sum", iter = 1 : i64} : (tensor<i64>) -> ()
  "check.expect_serialized_eq"(%v2) {probe_id = "sum", iter = 2 : i64} : (tensor<i64>) -> ()
  check.expect_eq_const %r#1, dense<3> : tensor<i64>
  func.return
}
