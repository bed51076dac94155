// Data movement ops over several element types.

func.func @iota_types() {
  %a = stablehlo.iota dim = 0 : tensor<4xui8>
  check.expect_eq_const %a, dense<[0, 1, 2, 3]> : tensor<4xui8>
  %b = stablehlo.iota dim = 1 : tensor<2x3xf32>
  check.expect_eq_const %b, dense<[[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]> : tensor<2x3xf32>
  %c = stablehlo.iota dim = 0 : tensor<3xbf16>
  check.expect_eq_const %c, dense<[0.0, 1.0, 2.0]> : tensor<3xbf16>
  %d = stablehlo.iota dim = 0 : tensor<2xcomplex<f32>>
  check.expect_eq_const %d, dense<[(0.0, 0.0), (1.0, 0.0)]> : tensor<2xcomplex<f32>>
  %e = stablehlo.iota dim = 0 : tensor<3xf8E4M3FN>
  check.expect_eq_const %e, dense<[0.0, 1.0, 2.0]> : tensor<3xf8E4M3FN>
  func.return
}

// -----

func.func @broadcast_scalar_and_degenerate() {
  %s = stablehlo.constant dense<7> : tensor<i16>
  %a = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<i16>) -> tensor<2x2xi16>
  check.expect_eq_const %a, dense<[[7, 7], [7, 7]]> : tensor<2x2xi16>
  %v = stablehlo.constant dense<[[1.0], [2.0]]> : tensor<2x1xf64>
  %b = stablehlo.broadcast_in_dim %v, dims = [1, 2] : (tensor<2x1xf64>) -> tensor<2x2x3xf64>
  check.expect_eq_const %b, dense<[[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]]> : tensor<2x2x3xf64>
  func.return
}

// -----

func.func @transpose_3d_f16() {
  %x = stablehlo.constant dense<[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]> : tensor<1x2x3xf16>
  %t = stablehlo.transpose %x, dims = [2, 0, 1] : (tensor<1x2x3xf16>) -> tensor<3x1x2xf16>
  check.expect_eq_const %t, dense<[[[1.0, 4.0]], [[2.0, 5.0]], [[3.0, 6.0]]]> : tensor<3x1x2xf16>
  func.return
}

// -----

func.func @slice_and_reverse() {
  %x = stablehlo.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi32>
  %s = stablehlo.slice %x [1:3, 0:4:3] : (tensor<3x4xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %s, dense<[[4, 7], [8, 11]]> : tensor<2x2xi32>
  %r = stablehlo.reverse %x, dims = [0] : tensor<3x4xi32>
  check.expect_eq_const %r, dense<[[8, 9, 10, 11], [4, 5, 6, 7], [0, 1, 2, 3]]> : tensor<3x4xi32>
  %e = stablehlo.slice %x [1:1, 0:4] : (tensor<3x4xi32>) -> tensor<0x4xi32>
  func.return
}

// -----

func.func @concatenate_three_dim1() {
  %a = stablehlo.constant dense<[[1], [2]]> : tensor<2x1xi8>
  %b = stablehlo.constant dense<[[3, 4], [5, 6]]> : tensor<2x2xi8>
  %c = stablehlo.constant dense<[[7], [8]]> : tensor<2x1xi8>
  %r = stablehlo.concatenate %a, %b, %c, dim = 1 : (tensor<2x1xi8>, tensor<2x2xi8>, tensor<2x1xi8>) -> tensor<2x4xi8>
  check.expect_eq_const %r, dense<[[1, 3, 4, 7], [2, 5, 6, 8]]> : tensor<2x4xi8>
  func.return
}

// -----

func.func @reshape_complex_and_dimension_size() {
  %x = stablehlo.constant dense<[(1.0, -1.0), (2.0, -2.0), (3.0, -3.0), (4.0, -4.0)]> : tensor<4xcomplex<f64>>
  %r = stablehlo.reshape %x : (tensor<4xcomplex<f64>>) -> tensor<2x2xcomplex<f64>>
  check.expect_eq_const %r, dense<[[(1.0, -1.0), (2.0, -2.0)], [(3.0, -3.0), (4.0, -4.0)]]> : tensor<2x2xcomplex<f64>>
  %d = stablehlo.get_dimension_size %r, dim = 0 : (tensor<2x2xcomplex<f64>>) -> tensor<i32>
  check.expect_eq_const %d, dense<2> : tensor<i32>
  func.return
}

// -----

func.func @tuple_roundtrip() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %b = stablehlo.constant dense<true> : tensor<i1>
  %t = stablehlo.tuple %a, %b : tuple<tensor<2xi64>, tensor<i1>>
  %u = stablehlo.tuple %t, %a : tuple<tuple<tensor<2xi64>, tensor<i1>>, tensor<2xi64>>
  %t2 = stablehlo.get_tuple_element %u[0] : (tuple<tuple<tensor<2xi64>, tensor<i1>>, tensor<2xi64>>) -> tuple<tensor<2xi64>, tensor<i1>>
  %b2 = stablehlo.get_tuple_element %t2[1] : (tuple<tensor<2xi64>, tensor<i1>>) -> tensor<i1>
  check.expect_eq_const %b2, dense<true> : tensor<i1>
  %a2 = stablehlo.get_tuple_element %u[1] : (tuple<tuple<tensor<2xi64>, tensor<i1>>, tensor<2xi64>>) -> tensor<2xi64>
  check.expect_eq_const %a2, dense<[1, 2]> : tensor<2xi64>
  func.return
}

// -----

func.func @optimization_barrier_mixed() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xui32>
  %b = stablehlo.constant dense<(1.0, 2.0)> : tensor<complex<f32>>
  %r0, %r1 = stablehlo.optimization_barrier %a, %b : tensor<2xui32>, tensor<complex<f32>>
  check.expect_eq_const %r0, dense<[1, 2]> : tensor<2xui32>
  check.expect_eq_const %r1, dense<(1.0, 2.0)> : tensor<complex<f32>>
  func.return
}
