// Compute kernels: gather (clamping, index layouts) and scatter (window skipping, multiple operands, update order).

func.func @gather_clamps_start_indices() {
  %op = stablehlo.constant dense<[[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32], [40, 41, 42]]> : tensor<5x3xi32>
  %idx = stablehlo.constant dense<[[4], [-2], [1]]> : tensor<3x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 2, 3>, indices_are_sorted = false} : (tensor<5x3xi32>, tensor<3x1xi64>) -> tensor<3x2x3xi32>
  check.expect_eq_const %r, dense<[[[30, 31, 32], [40, 41, 42]], [[0, 1, 2], [10, 11, 12]], [[10, 11, 12], [20, 21, 22]]]> : tensor<3x2x3xi32>
  func.return
}

// -----

func.func @gather_implicit_index_vector_dim() {
  %op = stablehlo.constant dense<[5.0, 6.0, 7.0, 8.0]> : tensor<4xf32>
  %idx = stablehlo.constant dense<[[3, 0], [9, 1]]> : tensor<2x2xi32>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1>} : (tensor<4xf32>, tensor<2x2xi32>) -> tensor<2x2xf32>
  check.expect_almost_eq_const %r, dense<[[8.0, 5.0], [8.0, 6.0]]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @gather_permuted_start_index_map() {
  %op = stablehlo.constant dense<[[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]> : tensor<3x4xi64>
  %idx = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0], start_index_map = [1, 0], index_vector_dim = 0>, slice_sizes = array<i64: 1, 3>} : (tensor<3x4xi64>, tensor<2xi64>) -> tensor<3xi64>
  check.expect_eq_const %r, dense<[21, 22, 23]> : tensor<3xi64>
  func.return
}

// -----

func.func @gather_offset_dim_in_middle() {
  %op = stablehlo.constant dense<[[0, 1, 2, 3, 4], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24], [30, 31, 32, 33, 34]]> : tensor<4x5xi64>
  %idx = stablehlo.constant dense<[[[0, 1], [3, 3]], [[2, 0], [1, 4]]]> : tensor<2x2x2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 2>} : (tensor<4x5xi64>, tensor<2x2x2xi64>) -> tensor<2x2x2xi64>
  check.expect_eq_const %r, dense<[[[1, 33], [2, 34]], [[20, 13], [21, 14]]]> : tensor<2x2x2xi64>
  func.return
}

// -----

func.func @scatter_skips_out_of_bounds_windows() {
  %op = stablehlo.constant dense<0> : tensor<4x3xi32>
  %idx = stablehlo.constant dense<[[1], [3], [-1]]> : tensor<3x1xi64>
  %u = stablehlo.constant dense<1> : tensor<3x2x3xi32>
  %r = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.add %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<4x3xi32>, tensor<3x1xi64>, tensor<3x2x3xi32>) -> tensor<4x3xi32>
  check.expect_eq_const %r, dense<[[0, 0, 0], [1, 1, 1], [1, 1, 1], [0, 0, 0]]> : tensor<4x3xi32>
  func.return
}

// -----

func.func @scatter_two_operands_repeated_indices() {
  %v = stablehlo.constant dense<[100, 200, 300]> : tensor<3xi64>
  %c = stablehlo.constant dense<0> : tensor<3xi32>
  %idx = stablehlo.constant dense<[[0], [2], [0]]> : tensor<3x1xi32>
  %uv = stablehlo.constant dense<[5, 6, 7]> : tensor<3xi64>
  %uc = stablehlo.constant dense<1> : tensor<3xi32>
  %rv, %rc = "stablehlo.scatter"(%v, %c, %idx, %uv, %uc) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i32>, %x: tensor<i64>, %y: tensor<i32>):
      %s = stablehlo.add %a, %x : tensor<i64>
      %t = stablehlo.add %b, %y : tensor<i32>
      stablehlo.return %s, %t : tensor<i64>, tensor<i32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<3xi64>, tensor<3xi32>, tensor<3x1xi32>, tensor<3xi64>, tensor<3xi32>) -> (tensor<3xi64>, tensor<3xi32>)
  check.expect_eq_const %rv, dense<[112, 200, 306]> : tensor<3xi64>
  check.expect_eq_const %rc, dense<[2, 0, 1]> : tensor<3xi32>
  func.return
}

// -----

func.func @scatter_replace_last_update_wins() {
  %op = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %idx = stablehlo.constant dense<[1, 1, 2]> : tensor<3xi64>
  %u = stablehlo.constant dense<[7.0, 9.0, -1.0]> : tensor<3xf32>
  %r = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3xf32>
  check.expect_almost_eq_const %r, dense<[1.0, 9.0, -1.0]> : tensor<3xf32>
  func.return
}
