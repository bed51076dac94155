// Randomized gather/scatter cases (operand/indices batching dims, implicit index vectors, clamped
// gather starts, out-of-bounds scatter windows skipped); expected values from an independent
// Python model of the StableHLO spec.

func.func @g0() {
  %op = stablehlo.constant dense<[[[[-43, -46], [-26, -20]], [[26, -47], [49, 9]], [[-9, 6], [25, -25]], [[16, -21], [31, -13]]], [[[13, -50], [34, -40]], [[8, 33], [-15, 2]], [[20, -40], [40, -18]], [[-10, 47], [-21, 15]]], [[[-14, -47], [-42, 22]], [[48, -37], [1, -37]], [[-13, -1], [-42, -48]], [[37, -50], [-23, -24]]], [[[-44, 10], [-2, 40]], [[0, 3], [-41, 22]], [[30, -25], [49, 36]], [[-16, -7], [-39, -11]]]]> : tensor<4x4x2x2xi64>
  %idx = stablehlo.constant dense<[[[3], [-2]], [[4], [-1]], [[0], [1]], [[-1], [-2]]]> : tensor<4x2x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0, 3], operand_batching_dims = [1], start_indices_batching_dims = [0], start_index_map = [2], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1, 1, 1>} : (tensor<4x4x2x2xi64>, tensor<4x2x1xi64>) -> tensor<1x4x2xi64>
  check.expect_eq_const %r, dense<[[[-26, -43], [49, 26], [-9, 25], [16, 16]]]> : tensor<1x4x2xi64>
  %u = stablehlo.constant dense<[[[1, 8], [8, 3], [9, 4], [8, 9]]]> : tensor<1x4x2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0, 3], input_batching_dims = [1], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [2], index_vector_dim = 2>} : (tensor<4x4x2x2xi64>, tensor<4x2x1xi64>, tensor<1x4x2xi64>) -> tensor<4x4x2x2xi64>
  check.expect_eq_const %s, dense<[[[[-43, -46], [-26, -20]], [[26, -47], [49, 9]], [[0, 6], [29, -25]], [[16, -21], [31, -13]]], [[[13, -50], [34, -40]], [[8, 33], [-15, 2]], [[20, -40], [40, -18]], [[-10, 47], [-21, 15]]], [[[-14, -47], [-42, 22]], [[48, -37], [1, -37]], [[-13, -1], [-42, -48]], [[37, -50], [-23, -24]]], [[[-44, 10], [-2, 40]], [[0, 3], [-41, 22]], [[30, -25], [49, 36]], [[-16, -7], [-39, -11]]]]> : tensor<4x4x2x2xi64>
  func.return
}

// -----

func.func @g1() {
  %op = stablehlo.constant dense<[[0, 27, 32, 23], [-38, -45, -32, -23]]> : tensor<2x4xi64>
  %idx = stablehlo.constant dense<[5, 2]> : tensor<2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>} : (tensor<2x4xi64>, tensor<2xi64>) -> tensor<1x2xi64>
  check.expect_eq_const %r, dense<[[23, -32]]> : tensor<1x2xi64>
  %u = stablehlo.constant dense<[[1, 6]]> : tensor<1x2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>} : (tensor<2x4xi64>, tensor<2xi64>, tensor<1x2xi64>) -> tensor<2x4xi64>
  check.expect_eq_const %s, dense<[[0, 27, 32, 23], [-38, -45, -26, -23]]> : tensor<2x4xi64>
  func.return
}

// -----

func.func @g2() {
  %op = stablehlo.constant dense<[[[-27]], [[30]], [[-31]], [[-11]]]> : tensor<4x1x1xi64>
  %idx = stablehlo.constant dense<[[1], [1]]> : tensor<2x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 3], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [2], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1, 1>} : (tensor<4x1x1xi64>, tensor<2x1xi64>) -> tensor<2x1x1x1xi64>
  check.expect_eq_const %r, dense<[[[[-27]]], [[[-27]]]]> : tensor<2x1x1x1xi64>
  %u = stablehlo.constant dense<[[[[4]]], [[[3]]]]> : tensor<2x1x1x1xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 3], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [2], index_vector_dim = 2>} : (tensor<4x1x1xi64>, tensor<2x1xi64>, tensor<2x1x1x1xi64>) -> tensor<4x1x1xi64>
  check.expect_eq_const %s, dense<[[[-27]], [[30]], [[-31]], [[-11]]]> : tensor<4x1x1xi64>
  func.return
}

// -----

func.func @g3() {
  %op = stablehlo.constant dense<[[26, 12, -13, 16], [-28, 42, -42, -34], [-21, 11, 21, 33], [28, 28, -41, -15]]> : tensor<4x4xi64>
  %idx = stablehlo.constant dense<[1, 1]> : tensor<2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0, 1], index_vector_dim = 0>, slice_sizes = array<i64: 1, 3>} : (tensor<4x4xi64>, tensor<2xi64>) -> tensor<1x3xi64>
  check.expect_eq_const %r, dense<[[42, -42, -34]]> : tensor<1x3xi64>
  %u = stablehlo.constant dense<[[1, 2, 5]]> : tensor<1x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 0>} : (tensor<4x4xi64>, tensor<2xi64>, tensor<1x3xi64>) -> tensor<4x4xi64>
  check.expect_eq_const %s, dense<[[26, 12, -13, 16], [-28, 43, -40, -29], [-21, 11, 21, 33], [28, 28, -41, -15]]> : tensor<4x4xi64>
  func.return
}

// -----

func.func @g4() {
  %op = stablehlo.constant dense<[[[[10]], [[-5]]], [[[39]], [[-11]]], [[[-46]], [[-48]]], [[[26]], [[31]]]]> : tensor<4x2x1x1xi64>
  %idx = stablehlo.constant dense<[[[-1, 5, -1], [2, 3, 0], [-1, -1, 5]], [[3, -2, 0], [3, 3, -1], [5, -1, 4]], [[-2, 5, -2], [4, 4, -2], [-1, -1, -1]]]> : tensor<3x3x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1, 3, 4], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [2, 3, 0], index_vector_dim = 2>, slice_sizes = array<i64: 3, 1, 1, 1>} : (tensor<4x2x1x1xi64>, tensor<3x3x3xi64>) -> tensor<3x1x3x1x1x3xi64>
  check.expect_eq_const %r, dense<[[[[[[10, 10, 39]]], [[[10, 10, 39]]], [[[10, 10, 10]]]]], [[[[[39, 39, -46]]], [[[39, 39, -46]]], [[[39, 39, 39]]]]], [[[[[-46, -46, 26]]], [[[-46, -46, 26]]], [[[-46, -46, -46]]]]]]> : tensor<3x1x3x1x1x3xi64>
  %u = stablehlo.constant dense<[[[[[[2, 5, 7]]], [[[6, 7, 8]]], [[[8, 8, 9]]]]], [[[[[2, 9, 9]]], [[[1, 5, 2]]], [[[8, 1, 4]]]]], [[[[[2, 8, 8]]], [[[5, 1, 6]]], [[[5, 3, 4]]]]]]> : tensor<3x1x3x1x1x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3, 4], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [2, 3, 0], index_vector_dim = 2>} : (tensor<4x2x1x1xi64>, tensor<3x3x3xi64>, tensor<3x1x3x1x1x3xi64>) -> tensor<4x2x1x1xi64>
  check.expect_eq_const %s, dense<[[[[10]], [[-5]]], [[[39]], [[-11]]], [[[-46]], [[-48]]], [[[26]], [[31]]]]> : tensor<4x2x1x1xi64>
  func.return
}

// -----

func.func @g5() {
  %op = stablehlo.constant dense<[[-24, -33, -33, 13], [-6, -45, 41, -42], [-15, -29, -36, 7]]> : tensor<3x4xi64>
  %idx = stablehlo.constant dense<[[[5]], [[2]], [[1]]]> : tensor<3x1x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>} : (tensor<3x4xi64>, tensor<3x1x1xi64>) -> tensor<3x1xi64>
  check.expect_eq_const %r, dense<[[13], [41], [-29]]> : tensor<3x1xi64>
  %u = stablehlo.constant dense<[[7], [7], [9]]> : tensor<3x1xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>} : (tensor<3x4xi64>, tensor<3x1x1xi64>, tensor<3x1xi64>) -> tensor<3x4xi64>
  check.expect_eq_const %s, dense<[[-24, -33, -33, 13], [-6, -45, 48, -42], [-15, -20, -36, 7]]> : tensor<3x4xi64>
  func.return
}

// -----

func.func @g6() {
  %op = stablehlo.constant dense<[[[[-47], [48], [-16]], [[-20], [49], [-32]], [[-44], [30], [-36]], [[7], [-37], [30]]], [[[18], [33], [31]], [[-3], [-41], [37]], [[-25], [-25], [10]], [[-18], [-28], [41]]], [[[-49], [46], [10]], [[18], [41], [-46]], [[-28], [-22], [-16]], [[49], [-6], [19]]]]> : tensor<3x4x3x1xi64>
  %idx = stablehlo.constant dense<[[0, 4], [1, -1], [4, 4]]> : tensor<3x2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [0, 1, 2, 3], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0, 2, 1], index_vector_dim = 0>, slice_sizes = array<i64: 1, 1, 1, 1>} : (tensor<3x4x3x1xi64>, tensor<3x2xi64>) -> tensor<2xi64>
  check.expect_eq_const %r, dense<[-37, 49]> : tensor<2xi64>
  %u = stablehlo.constant dense<[3, 8]> : tensor<2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0, 1, 2, 3], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0, 2, 1], index_vector_dim = 0>} : (tensor<3x4x3x1xi64>, tensor<3x2xi64>, tensor<2xi64>) -> tensor<3x4x3x1xi64>
  check.expect_eq_const %s, dense<[[[[-47], [48], [-16]], [[-20], [49], [-32]], [[-44], [30], [-36]], [[7], [-37], [30]]], [[[18], [33], [31]], [[-3], [-41], [37]], [[-25], [-25], [10]], [[-18], [-28], [41]]], [[[-49], [46], [10]], [[18], [41], [-46]], [[-28], [-22], [-16]], [[49], [-6], [19]]]]> : tensor<3x4x3x1xi64>
  func.return
}

// -----

func.func @g7() {
  %op = stablehlo.constant dense<[[[[-6, 14, -40], [-46, 6, -7], [20, 3, 48], [-15, 12, -47]]], [[[-23, -42, 4], [-46, -28, 18], [-8, 37, 50], [-33, 10, -31]]]]> : tensor<2x1x4x3xi64>
  %idx = stablehlo.constant dense<[[5, 5, -1], [1, 5, 2], [0, 2, 2], [4, 1, 2]]> : tensor<4x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], collapsed_slice_dims = [0], operand_batching_dims = [2], start_indices_batching_dims = [0], start_index_map = [0, 3, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 1, 1>} : (tensor<2x1x4x3xi64>, tensor<4x3xi64>) -> tensor<1x4x1xi64>
  check.expect_eq_const %r, dense<[[[4], [18], [48], [10]]]> : tensor<1x4x1xi64>
  %u = stablehlo.constant dense<[[[3], [9], [9], [5]]]> : tensor<1x4x1xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 2], inserted_window_dims = [0], input_batching_dims = [2], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [0, 3, 1], index_vector_dim = 1>} : (tensor<2x1x4x3xi64>, tensor<4x3xi64>, tensor<1x4x1xi64>) -> tensor<2x1x4x3xi64>
  check.expect_eq_const %s, dense<[[[[-6, 14, -40], [-46, 6, -7], [20, 3, 48], [-15, 12, -47]]], [[[-23, -42, 4], [-46, -28, 18], [-8, 37, 50], [-33, 10, -31]]]]> : tensor<2x1x4x3xi64>
  func.return
}

// -----

func.func @g8() {
  %op = stablehlo.constant dense<[[[[-19]], [[10]], [[13]], [[-34]]], [[[-7]], [[5]], [[10]], [[17]]]]> : tensor<2x4x1x1xi64>
  %idx = stablehlo.constant dense<[[[3, -1], [1, 4], [-2, 2]], [[0, -2], [-2, 1], [0, 1]]]> : tensor<2x3x2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1, 2, 3], operand_batching_dims = [0], start_indices_batching_dims = [2], start_index_map = [1, 2, 3], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 1, 1>} : (tensor<2x4x1x1xi64>, tensor<2x3x2xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %r, dense<[[-34, -7], [-19, -7]]> : tensor<2x2xi64>
  %u = stablehlo.constant dense<[[1, 5], [6, 6]]> : tensor<2x2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [1, 2, 3], input_batching_dims = [0], scatter_indices_batching_dims = [2], scatter_dims_to_operand_dims = [1, 2, 3], index_vector_dim = 1>} : (tensor<2x4x1x1xi64>, tensor<2x3x2xi64>, tensor<2x2xi64>) -> tensor<2x4x1x1xi64>
  check.expect_eq_const %s, dense<[[[[-19]], [[10]], [[13]], [[-34]]], [[[-7]], [[5]], [[10]], [[17]]]]> : tensor<2x4x1x1xi64>
  func.return
}

// -----

func.func @g9() {
  %op = stablehlo.constant dense<[[18], [-24], [30], [18]]> : tensor<4x1xi64>
  %idx = stablehlo.constant dense<[[1], [1], [0], [1]]> : tensor<4x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>} : (tensor<4x1xi64>, tensor<4x1xi64>) -> tensor<4xi64>
  check.expect_eq_const %r, dense<[18, -24, 30, 18]> : tensor<4xi64>
  %u = stablehlo.constant dense<[6, 3, 6, 6]> : tensor<4xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>} : (tensor<4x1xi64>, tensor<4x1xi64>, tensor<4xi64>) -> tensor<4x1xi64>
  check.expect_eq_const %s, dense<[[18], [-24], [36], [18]]> : tensor<4x1xi64>
  func.return
}

// -----

func.func @g10() {
  %op = stablehlo.constant dense<[[-25, 1], [30, 37]]> : tensor<2x2xi64>
  %idx = stablehlo.constant dense<[[-2]]> : tensor<1x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 2>} : (tensor<2x2xi64>, tensor<1x1xi64>) -> tensor<1x1x2xi64>
  check.expect_eq_const %r, dense<[[[-25, 1]]]> : tensor<1x1x2xi64>
  %u = stablehlo.constant dense<[[[2, 4]]]> : tensor<1x1x2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 2], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<2x2xi64>, tensor<1x1xi64>, tensor<1x1x2xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %s, dense<[[-25, 1], [30, 37]]> : tensor<2x2xi64>
  func.return
}

// -----

func.func @g11() {
  %op = stablehlo.constant dense<[[[-28, -30, -14]], [[36, -38, 24]], [[-43, -33, 37]]]> : tensor<3x1x3xi64>
  %idx = stablehlo.constant dense<[[[5, -1, -1], [3, 4, 5], [4, 3, 4]]]> : tensor<1x3x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1, 3], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [1], index_vector_dim = 0>, slice_sizes = array<i64: 1, 1, 3>} : (tensor<3x1x3xi64>, tensor<1x3x3xi64>) -> tensor<1x1x3x3x3xi64>
  check.expect_eq_const %r, dense<[[[[[-28, -28, -28], [-30, -30, -30], [-14, -14, -14]], [[-28, -28, -28], [-30, -30, -30], [-14, -14, -14]], [[-28, -28, -28], [-30, -30, -30], [-14, -14, -14]]]]]> : tensor<1x1x3x3x3xi64>
  %u = stablehlo.constant dense<[[[[[4, 6, 1], [1, 4, 3], [7, 8, 6]], [[6, 7, 4], [3, 2, 9], [1, 6, 2]], [[7, 4, 9], [6, 5, 5], [2, 3, 7]]]]]> : tensor<1x1x3x3x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 3], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [1], index_vector_dim = 0>} : (tensor<3x1x3xi64>, tensor<1x3x3xi64>, tensor<1x1x3x3x3xi64>) -> tensor<3x1x3xi64>
  check.expect_eq_const %s, dense<[[[-28, -30, -14]], [[36, -38, 24]], [[-43, -33, 37]]]> : tensor<3x1x3xi64>
  func.return
}

// -----

func.func @g12() {
  %op = stablehlo.constant dense<[[-21, -16, 35], [-12, -7, -23], [34, 1, 22]]> : tensor<3x3xi64>
  %idx = stablehlo.constant dense<[[0], [-1], [4]]> : tensor<3x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>} : (tensor<3x3xi64>, tensor<3x1xi64>) -> tensor<1x3xi64>
  check.expect_eq_const %r, dense<[[-21, -12, 22]]> : tensor<1x3xi64>
  %u = stablehlo.constant dense<[[9, 8, 4]]> : tensor<1x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>} : (tensor<3x3xi64>, tensor<3x1xi64>, tensor<1x3xi64>) -> tensor<3x3xi64>
  check.expect_eq_const %s, dense<[[-12, -16, 35], [-12, -7, -23], [34, 1, 22]]> : tensor<3x3xi64>
  func.return
}

// -----

func.func @g13() {
  %op = stablehlo.constant dense<[-49, -38, -17, -18]> : tensor<4xi64>
  %idx = stablehlo.constant dense<[[2], [3]]> : tensor<2x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 3>} : (tensor<4xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  check.expect_eq_const %r, dense<[[-38, -17, -18], [-38, -17, -18]]> : tensor<2x3xi64>
  %u = stablehlo.constant dense<[[9, 9, 9], [7, 9, 2]]> : tensor<2x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<4xi64>, tensor<2x1xi64>, tensor<2x3xi64>) -> tensor<4xi64>
  check.expect_eq_const %s, dense<[-49, -38, -17, -18]> : tensor<4xi64>
  func.return
}

// -----

func.func @g14() {
  %op = stablehlo.constant dense<[[[[21, -14], [34, 41], [45, -13], [-47, -49]]]]> : tensor<1x1x4x2xi64>
  %idx = stablehlo.constant dense<[1, -2]> : tensor<2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2, 3], collapsed_slice_dims = [], operand_batching_dims = [3], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 4, 1>} : (tensor<1x1x4x2xi64>, tensor<2xi64>) -> tensor<2x1x1x4xi64>
  check.expect_eq_const %r, dense<[[[[21, 34, 45, -47]]], [[[-14, 41, -13, -49]]]]> : tensor<2x1x1x4xi64>
  %u = stablehlo.constant dense<[[[[3, 7, 7, 1]]], [[[6, 7, 1, 6]]]]> : tensor<2x1x1x4xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2, 3], inserted_window_dims = [], input_batching_dims = [3], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>} : (tensor<1x1x4x2xi64>, tensor<2xi64>, tensor<2x1x1x4xi64>) -> tensor<1x1x4x2xi64>
  check.expect_eq_const %s, dense<[[[[21, -14], [34, 41], [45, -13], [-47, -49]]]]> : tensor<1x1x4x2xi64>
  func.return
}

// -----

func.func @g15() {
  %op = stablehlo.constant dense<[27, 40]> : tensor<2xi64>
  %idx = stablehlo.constant dense<[[-1, -2, 4]]> : tensor<1x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1>} : (tensor<2xi64>, tensor<1x3xi64>) -> tensor<1x1x3xi64>
  check.expect_eq_const %r, dense<[[[27, 27, 40]]]> : tensor<1x1x3xi64>
  %u = stablehlo.constant dense<[[[8, 2, 4]]]> : tensor<1x1x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 2>} : (tensor<2xi64>, tensor<1x3xi64>, tensor<1x1x3xi64>) -> tensor<2xi64>
  check.expect_eq_const %s, dense<[27, 40]> : tensor<2xi64>
  func.return
}

// -----

func.func @g16() {
  %op = stablehlo.constant dense<[37, 3, -4]> : tensor<3xi64>
  %idx = stablehlo.constant dense<[[[0], [2]], [[0], [1]]]> : tensor<2x2x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1>} : (tensor<3xi64>, tensor<2x2x1xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %r, dense<[[37, -4], [37, 3]]> : tensor<2x2xi64>
  %u = stablehlo.constant dense<[[8, 2], [9, 5]]> : tensor<2x2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 2>} : (tensor<3xi64>, tensor<2x2x1xi64>, tensor<2x2xi64>) -> tensor<3xi64>
  check.expect_eq_const %s, dense<[54, 8, -2]> : tensor<3xi64>
  func.return
}

// -----

func.func @g17() {
  %op = stablehlo.constant dense<[[[29, -46], [-37, -22], [19, -15]], [[-41, 46], [-39, 36], [-30, 20]], [[-20, 30], [-3, 11], [11, -5]]]> : tensor<3x3x2xi64>
  %idx = stablehlo.constant dense<[[[1, 3, 3]]]> : tensor<1x1x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [1, 2], operand_batching_dims = [0], start_indices_batching_dims = [2], start_index_map = [1], index_vector_dim = 0>, slice_sizes = array<i64: 1, 1, 1>} : (tensor<3x3x2xi64>, tensor<1x1x3xi64>) -> tensor<1x3xi64>
  check.expect_eq_const %r, dense<[[-37, -30, 11]]> : tensor<1x3xi64>
  %u = stablehlo.constant dense<[[8, 3, 2]]> : tensor<1x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [1, 2], input_batching_dims = [0], scatter_indices_batching_dims = [2], scatter_dims_to_operand_dims = [1], index_vector_dim = 0>} : (tensor<3x3x2xi64>, tensor<1x1x3xi64>, tensor<1x3xi64>) -> tensor<3x3x2xi64>
  check.expect_eq_const %s, dense<[[[29, -46], [-29, -22], [19, -15]], [[-41, 46], [-39, 36], [-30, 20]], [[-20, 30], [-3, 11], [11, -5]]]> : tensor<3x3x2xi64>
  func.return
}

// -----

func.func @g18() {
  %op = stablehlo.constant dense<[47, 45, -27, 4]> : tensor<4xi64>
  %idx = stablehlo.constant dense<3> : tensor<i64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [0], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 0>, slice_sizes = array<i64: 1>} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  check.expect_eq_const %r, dense<4> : tensor<i64>
  func.return
}

// -----

func.func @g19() {
  %op = stablehlo.constant dense<[[[[-22, -5, 34, 42]]], [[[-9, -4, -35, -9]]], [[[40, 6, 22, 26]]]]> : tensor<3x1x1x4xi64>
  %idx = stablehlo.constant dense<[[2, 5], [2, 5], [3, 1], [4, 1]]> : tensor<4x2xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0, 2], operand_batching_dims = [3], start_indices_batching_dims = [0], start_index_map = [0, 2], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 1, 1>} : (tensor<3x1x1x4xi64>, tensor<4x2xi64>) -> tensor<1x4xi64>
  check.expect_eq_const %r, dense<[[40, 6, 22, 26]]> : tensor<1x4xi64>
  %u = stablehlo.constant dense<[[2, 6, 6, 1]]> : tensor<1x4xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0, 2], input_batching_dims = [3], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [0, 2], index_vector_dim = 1>} : (tensor<3x1x1x4xi64>, tensor<4x2xi64>, tensor<1x4xi64>) -> tensor<3x1x1x4xi64>
  check.expect_eq_const %s, dense<[[[[-22, -5, 34, 42]]], [[[-9, -4, -35, -9]]], [[[40, 6, 22, 26]]]]> : tensor<3x1x1x4xi64>
  func.return
}

// -----

func.func @g20() {
  %op = stablehlo.constant dense<[[[-48, 33], [4, -42], [24, 19], [-11, 50]], [[19, -40], [-8, -40], [-15, 44], [-37, -10]], [[-40, -47], [31, 33], [-32, -38], [45, 33]], [[4, -19], [41, -22], [12, 47], [16, -7]]]> : tensor<4x4x2xi64>
  %idx = stablehlo.constant dense<[[5], [4], [3], [3]]> : tensor<4x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], collapsed_slice_dims = [], operand_batching_dims = [1], start_indices_batching_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 2>} : (tensor<4x4x2xi64>, tensor<4x1xi64>) -> tensor<4x1x2xi64>
  check.expect_eq_const %r, dense<[[[4, -19]], [[41, -22]], [[12, 47]], [[16, -7]]]> : tensor<4x1x2xi64>
  %u = stablehlo.constant dense<[[[6, 3]], [[8, 8]], [[9, 2]], [[1, 7]]]> : tensor<4x1x2xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], inserted_window_dims = [], input_batching_dims = [1], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<4x4x2xi64>, tensor<4x1xi64>, tensor<4x1x2xi64>) -> tensor<4x4x2xi64>
  check.expect_eq_const %s, dense<[[[-48, 33], [4, -42], [24, 19], [-11, 50]], [[19, -40], [-8, -40], [-15, 44], [-37, -10]], [[-40, -47], [31, 33], [-32, -38], [45, 33]], [[4, -19], [41, -22], [21, 49], [17, 0]]]> : tensor<4x4x2xi64>
  func.return
}

// -----

func.func @g21() {
  %op = stablehlo.constant dense<[[[31], [-2], [37], [-29]]]> : tensor<1x4x1xi64>
  %idx = stablehlo.constant dense<[[3]]> : tensor<1x1xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [], collapsed_slice_dims = [0, 1], operand_batching_dims = [2], start_indices_batching_dims = [1], start_index_map = [1], index_vector_dim = 0>, slice_sizes = array<i64: 1, 1, 1>} : (tensor<1x4x1xi64>, tensor<1x1xi64>) -> tensor<1xi64>
  check.expect_eq_const %r, dense<[-29]> : tensor<1xi64>
  %u = stablehlo.constant dense<[4]> : tensor<1xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], inserted_window_dims = [0, 1], input_batching_dims = [2], scatter_indices_batching_dims = [1], scatter_dims_to_operand_dims = [1], index_vector_dim = 0>} : (tensor<1x4x1xi64>, tensor<1x1xi64>, tensor<1xi64>) -> tensor<1x4x1xi64>
  check.expect_eq_const %s, dense<[[[31], [-2], [37], [-25]]]> : tensor<1x4x1xi64>
  func.return
}

// -----

func.func @g22() {
  %op = stablehlo.constant dense<[[[[-5], [-23], [25]], [[-20], [26], [41]], [[10], [26], [15]]], [[[-22], [6], [-27]], [[-15], [1], [-28]], [[46], [-11], [30]]], [[[20], [20], [11]], [[-17], [12], [1]], [[-7], [34], [20]]], [[[48], [-39], [11]], [[-22], [1], [-44]], [[-23], [-33], [-1]]]]> : tensor<4x3x3x1xi64>
  %idx = stablehlo.constant dense<[[[2, -2, 1], [-2, 5, 3]], [[5, 1, 4], [0, 4, 0]], [[3, 0, 2], [0, 2, -2]]]> : tensor<3x2x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1], collapsed_slice_dims = [0], operand_batching_dims = [2], start_indices_batching_dims = [2], start_index_map = [0, 1, 3], index_vector_dim = 0>, slice_sizes = array<i64: 1, 2, 1, 1>} : (tensor<4x3x3x1xi64>, tensor<3x2x3xi64>) -> tensor<2x1x2x3xi64>
  check.expect_eq_const %r, dense<[[[[-17, 26, -28], [-5, 1, 11]]], [[[-7, 26, 30], [-20, -33, -44]]]]> : tensor<2x1x2x3xi64>
  %u = stablehlo.constant dense<[[[[3, 3, 1], [4, 3, 3]]], [[[2, 6, 5], [9, 2, 8]]]]> : tensor<2x1x2x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], inserted_window_dims = [0], input_batching_dims = [2], scatter_indices_batching_dims = [2], scatter_dims_to_operand_dims = [0, 1, 3], index_vector_dim = 0>} : (tensor<4x3x3x1xi64>, tensor<3x2x3xi64>, tensor<2x1x2x3xi64>) -> tensor<4x3x3x1xi64>
  check.expect_eq_const %s, dense<[[[[-5], [-23], [25]], [[-20], [26], [41]], [[10], [26], [15]]], [[[-22], [6], [-27]], [[-15], [1], [-28]], [[46], [-11], [30]]], [[[20], [20], [11]], [[-17], [12], [1]], [[-7], [34], [20]]], [[[48], [-39], [11]], [[-22], [1], [-44]], [[-23], [-33], [-1]]]]> : tensor<4x3x3x1xi64>
  func.return
}

// -----

func.func @g23() {
  %op = stablehlo.constant dense<[[[[9, 35]], [[41, -42]], [[-4, -41]]]]> : tensor<1x3x1x2xi64>
  %idx = stablehlo.constant dense<[[0, -1, 4], [5, -1, 5], [-2, 4, 5]]> : tensor<3x3xi64>
  %r = "stablehlo.gather"(%op, %idx) {dimension_numbers = #stablehlo.gather<offset_dims = [0, 1, 2], collapsed_slice_dims = [], operand_batching_dims = [1], start_indices_batching_dims = [0], start_index_map = [0, 2, 3], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 1, 1>} : (tensor<1x3x1x2xi64>, tensor<3x3xi64>) -> tensor<1x1x1x3xi64>
  check.expect_eq_const %r, dense<[[[[35, -42, -41]]]]> : tensor<1x1x1x3xi64>
  %u = stablehlo.constant dense<[[[[4, 5, 2]]]]> : tensor<1x1x1x3xi64>
  %s = "stablehlo.scatter"(%op, %idx, %u) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %t = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %t : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1, 2], inserted_window_dims = [], input_batching_dims = [1], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [0, 2, 3], index_vector_dim = 1>} : (tensor<1x3x1x2xi64>, tensor<3x3xi64>, tensor<1x1x1x3xi64>) -> tensor<1x3x1x2xi64>
  check.expect_eq_const %s, dense<[[[[9, 35]], [[41, -42]], [[-4, -41]]]]> : tensor<1x3x1x2xi64>
  func.return
}
