// func.call (multiple results, recursion through if) and composite (runs its decomposition).

func.func private @swap(%a: tensor<2xi64>, %b: tensor<f32>) -> (tensor<f32>, tensor<2xi64>) {
  func.return %b, %a : tensor<f32>, tensor<2xi64>
}

func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %b = stablehlo.constant dense<2.5> : tensor<f32>
  %0:2 = func.call @swap(%a, %b) : (tensor<2xi64>, tensor<f32>) -> (tensor<f32>, tensor<2xi64>)
  check.expect_eq_const %0#0, dense<2.5> : tensor<f32>
  check.expect_eq_const %0#1, dense<[1, 2]> : tensor<2xi64>
  func.return
}

// -----

// factorial(n) by recursion: if n <= 1 then 1 else n * factorial(n - 1)
func.func private @fact(%n: tensor<i64>) -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %done = stablehlo.compare LE, %n, %one : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %r = "stablehlo.if"(%done) ({
    stablehlo.return %one : tensor<i64>
  }, {
    %m = stablehlo.subtract %n, %one : tensor<i64>
    %f = func.call @fact(%m) : (tensor<i64>) -> tensor<i64>
    %p = stablehlo.multiply %n, %f : tensor<i64>
    stablehlo.return %p : tensor<i64>
  }) : (tensor<i1>) -> tensor<i64>
  func.return %r : tensor<i64>
}

func.func @main() {
  %n = stablehlo.constant dense<10> : tensor<i64>
  %r = func.call @fact(%n) : (tensor<i64>) -> tensor<i64>
  check.expect_eq_const %r, dense<3628800> : tensor<i64>
  func.return
}

// -----

func.func private @scale.impl(%x: tensor<3xf32>, %s: tensor<f32>) -> tensor<3xf32> {
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %r = stablehlo.multiply %x, %b : tensor<3xf32>
  func.return %r : tensor<3xf32>
}

func.func @main() {
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = stablehlo.constant dense<0.5> : tensor<f32>
  %r = stablehlo.composite "mx.scale" %x, %s {
    composite_attributes = { axis = 0 : i64 },
    decomposition = @scale.impl,
    version = 1 : i32
  } : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  check.expect_almost_eq_const %r, dense<[0.5, 1.0, 1.5]> : tensor<3xf32>
  func.return
}

// -----

func.func private @inner.impl(%x: tensor<i64>) -> tensor<i64> {
  %two = stablehlo.constant dense<2> : tensor<i64>
  %r = stablehlo.multiply %x, %two : tensor<i64>
  func.return %r : tensor<i64>
}

func.func private @outer.impl(%x: tensor<i64>) -> tensor<i64> {
  %a = stablehlo.composite "mx.double" %x {decomposition = @inner.impl} : (tensor<i64>) -> tensor<i64>
  %b = func.call @inner.impl(%a) : (tensor<i64>) -> tensor<i64>
  func.return %b : tensor<i64>
}

func.func @main() {
  %x = stablehlo.constant dense<5> : tensor<i64>
  %r = stablehlo.composite "mx.quadruple" %x {decomposition = @outer.impl} : (tensor<i64>) -> tensor<i64>
  check.expect_eq_const %r, dense<20> : tensor<i64>
  func.return
}
