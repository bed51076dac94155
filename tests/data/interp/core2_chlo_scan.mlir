// chlo.scan in generic form: body(input slices..., carries...) -> (output slices..., carries...).
// operandSegmentSizes = [#inputs, #inits], resultSegmentSizes = [#outputs, #carries].

func.func @scan_cumsum_1d() {
  %input = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %init = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "chlo.scan"(%input, %init) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<i32>, %c: tensor<i32>):
    %1 = stablehlo.add %x, %c : tensor<i32>
    stablehlo.return %1, %1 : tensor<i32>, tensor<i32>
  }) : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  check.expect_eq_const %0#0, dense<[1, 3, 6, 10]> : tensor<4xi32>
  check.expect_eq_const %0#1, dense<10> : tensor<i32>
  func.return
}

// -----

// Scan along dimension 1; the carry drops that dimension.
func.func @scan_dim1() {
  %input = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %init = stablehlo.constant dense<0> : tensor<2xi32>
  %0:2 = "chlo.scan"(%input, %init) <{dimension = 1 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<2xi32>, %c: tensor<2xi32>):
    %1 = stablehlo.add %x, %c : tensor<2xi32>
    stablehlo.return %1, %1 : tensor<2xi32>, tensor<2xi32>
  }) : (tensor<2x3xi32>, tensor<2xi32>) -> (tensor<2x3xi32>, tensor<2xi32>)
  check.expect_eq_const %0#0, dense<[[1, 3, 6], [4, 9, 15]]> : tensor<2x3xi32>
  check.expect_eq_const %0#1, dense<[6, 15]> : tensor<2xi32>
  func.return
}

// -----

// Middle dimension of a rank-3 input, in reverse, float running product.
func.func @scan_rank3_reverse() {
  %input = stablehlo.constant dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]> : tensor<1x3x2xf32>
  %init = stablehlo.constant dense<1.0> : tensor<1x2xf32>
  %0:2 = "chlo.scan"(%input, %init) <{dimension = 1 : i64, is_reverse = true, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<1x2xf32>, %c: tensor<1x2xf32>):
    %1 = stablehlo.multiply %x, %c : tensor<1x2xf32>
    stablehlo.return %1, %1 : tensor<1x2xf32>, tensor<1x2xf32>
  }) : (tensor<1x3x2xf32>, tensor<1x2xf32>) -> (tensor<1x3x2xf32>, tensor<1x2xf32>)
  check.expect_eq_const %0#0, dense<[[[15.0, 48.0], [15.0, 24.0], [5.0, 6.0]]]> : tensor<1x3x2xf32>
  check.expect_eq_const %0#1, dense<[[15.0, 48.0]]> : tensor<1x2xf32>
  func.return
}

// -----

// Two inputs, two carries (cummax with argmax, ties keep the highest index).
func.func @scan_cummax() {
  %input = stablehlo.constant dense<[3, 1, 4, 1, 5]> : tensor<5xi32>
  %iota = stablehlo.iota dim = 0 : tensor<5xi32>
  %val_init = stablehlo.constant dense<-2147483648> : tensor<i32>
  %idx_init = stablehlo.constant dense<0> : tensor<i32>
  %0:4 = "chlo.scan"(%input, %iota, %val_init, %idx_init) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 2, 2>, resultSegmentSizes = array<i32: 2, 2>}> ({
  ^bb0(%cur_val: tensor<i32>, %cur_idx: tensor<i32>, %run_val: tensor<i32>, %run_idx: tensor<i32>):
    %new_val = stablehlo.maximum %run_val, %cur_val : tensor<i32>
    %gt = stablehlo.compare GT, %run_val, %cur_val : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %run_val, %cur_val : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %max_idx = stablehlo.maximum %run_idx, %cur_idx : tensor<i32>
    %tie_or_less = stablehlo.select %eq, %max_idx, %cur_idx : tensor<i1>, tensor<i32>
    %new_idx = stablehlo.select %gt, %run_idx, %tie_or_less : tensor<i1>, tensor<i32>
    stablehlo.return %new_val, %new_idx, %new_val, %new_idx : tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>
  }) : (tensor<5xi32>, tensor<5xi32>, tensor<i32>, tensor<i32>) -> (tensor<5xi32>, tensor<5xi32>, tensor<i32>, tensor<i32>)
  check.expect_eq_const %0#0, dense<[3, 3, 4, 4, 5]> : tensor<5xi32>
  check.expect_eq_const %0#1, dense<[0, 0, 2, 2, 4]> : tensor<5xi32>
  check.expect_eq_const %0#2, dense<5> : tensor<i32>
  check.expect_eq_const %0#3, dense<4> : tensor<i32>
  func.return
}

// -----

// No carries: a pure map along the dimension; outputs may differ in type from the inputs.
func.func @scan_no_carry() {
  %input = stablehlo.constant dense<[1, -2, 3]> : tensor<3xi32>
  %0 = "chlo.scan"(%input) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 0>, resultSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%x: tensor<i32>):
    %z = stablehlo.constant dense<0> : tensor<i32>
    %p = stablehlo.compare GT, %x, %z : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<3xi32>) -> tensor<3xi1>
  check.expect_eq_const %0, dense<[true, false, true]> : tensor<3xi1>
  func.return
}

// -----

// No inputs: the length comes from the outputs; the carry counts up.
func.func @scan_no_input() {
  %init = stablehlo.constant dense<10> : tensor<i64>
  %0:2 = "chlo.scan"(%init) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 0, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%c: tensor<i64>):
    %one = stablehlo.constant dense<1> : tensor<i64>
    %n = stablehlo.add %c, %one : tensor<i64>
    stablehlo.return %c, %n : tensor<i64>, tensor<i64>
  }) : (tensor<i64>) -> (tensor<4xi64>, tensor<i64>)
  check.expect_eq_const %0#0, dense<[10, 11, 12, 13]> : tensor<4xi64>
  check.expect_eq_const %0#1, dense<14> : tensor<i64>
  func.return
}

// -----

// Zero-length scan: outputs are empty and the carries are the inits.
func.func @scan_empty() {
  %input = stablehlo.constant dense<> : tensor<0x2xf32>
  %init = stablehlo.constant dense<[7.0, 8.0]> : tensor<2xf32>
  %0:2 = "chlo.scan"(%input, %init) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: tensor<2xf32>, %c: tensor<2xf32>):
    %1 = stablehlo.add %x, %c : tensor<2xf32>
    stablehlo.return %1, %1 : tensor<2xf32>, tensor<2xf32>
  }) : (tensor<0x2xf32>, tensor<2xf32>) -> (tensor<0x2xf32>, tensor<2xf32>)
  check.expect_eq_const %0#1, dense<[7.0, 8.0]> : tensor<2xf32>
  func.return
}

// -----

// Scan inside a while body and nested scans (the body reads an outer value).
func.func @scan_nested() {
  %input = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %init = stablehlo.constant dense<0> : tensor<i32>
  %k = stablehlo.constant dense<100> : tensor<i32>
  %0:2 = "chlo.scan"(%input, %init) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%row: tensor<2xi32>, %c: tensor<i32>):
    %1:2 = "chlo.scan"(%row, %c) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%x: tensor<i32>, %d: tensor<i32>):
      %s = stablehlo.add %x, %d : tensor<i32>
      %t = stablehlo.add %s, %k : tensor<i32>
      stablehlo.return %t, %s : tensor<i32>, tensor<i32>
    }) : (tensor<2xi32>, tensor<i32>) -> (tensor<2xi32>, tensor<i32>)
    stablehlo.return %1#0, %1#1 : tensor<2xi32>, tensor<i32>
  }) : (tensor<2x2xi32>, tensor<i32>) -> (tensor<2x2xi32>, tensor<i32>)
  check.expect_eq_const %0#0, dense<[[101, 103], [106, 110]]> : tensor<2x2xi32>
  check.expect_eq_const %0#1, dense<10> : tensor<i32>
  func.return
}

// -----

// Without segment sizes the split follows from the body: input arguments are slices (one rank
// lower), carry arguments have the init types.
func.func @scan_no_segment_sizes() {
  %input = stablehlo.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  %init = stablehlo.constant dense<[0, 100]> : tensor<2xi32>
  %0:2 = "chlo.scan"(%input, %init) <{dimension = 0 : i64}> ({
  ^bb0(%x: tensor<2xi32>, %c: tensor<2xi32>):
    %1 = stablehlo.add %x, %c : tensor<2xi32>
    stablehlo.return %1, %1 : tensor<2xi32>, tensor<2xi32>
  }) : (tensor<3x2xi32>, tensor<2xi32>) -> (tensor<3x2xi32>, tensor<2xi32>)
  check.expect_eq_const %0#0, dense<[[1, 102], [4, 106], [9, 112]]> : tensor<3x2xi32>
  check.expect_eq_const %0#1, dense<[9, 112]> : tensor<2xi32>
  %2:2 = "chlo.scan"(%init) <{dimension = 0 : i64}> ({
  ^bb0(%c: tensor<2xi32>):
    stablehlo.return %c, %c : tensor<2xi32>, tensor<2xi32>
  }) : (tensor<2xi32>) -> (tensor<2x2xi32>, tensor<2xi32>)
  check.expect_eq_const %2#0, dense<[[0, 100], [0, 100]]> : tensor<2x2xi32>
  func.return
}

// -----

// Carries only (no per-position outputs): a fold.
func.func @scan_fold_only() {
  %input = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %init = stablehlo.constant dense<1> : tensor<i32>
  %0 = "chlo.scan"(%input, %init) <{dimension = 0 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 0, 1>}> ({
  ^bb0(%x: tensor<i32>, %c: tensor<i32>):
    %1 = stablehlo.multiply %x, %c : tensor<i32>
    stablehlo.return %1 : tensor<i32>
  }) : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
  check.expect_eq_const %0, dense<24> : tensor<i32>
  func.return
}
