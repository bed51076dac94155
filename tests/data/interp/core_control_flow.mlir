// while / if / case: nested regions, values of enclosing blocks used inside regions, default
// branch of case for out-of-range indices.

func.func @while_zero_iterations() {
  %init = stablehlo.constant dense<7> : tensor<i64>
  %r = stablehlo.while(%arg0 = %init) : tensor<i64>
  cond {
    %f = stablehlo.constant dense<false> : tensor<i1>
    stablehlo.return %f : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %n = stablehlo.add %arg0, %one : tensor<i64>
    stablehlo.return %n : tensor<i64>
  }
  check.expect_eq_const %r, dense<7> : tensor<i64>
  func.return
}

// -----

func.func @nested_while_uses_outer_values() {
  // for i in 0..3: for j in 0..4: acc += step   (step defined outside both loops)
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %three = stablehlo.constant dense<3> : tensor<i64>
  %four = stablehlo.constant dense<4> : tensor<i64>
  %step = stablehlo.constant dense<[1, 10]> : tensor<2xi64>
  %acc0 = stablehlo.constant dense<0> : tensor<2xi64>
  %i_final, %acc = stablehlo.while(%i = %zero, %a = %acc0) : tensor<i64>, tensor<2xi64>
  cond {
    %c = stablehlo.compare LT, %i, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %j_final, %inner = stablehlo.while(%j = %zero, %b = %a) : tensor<i64>, tensor<2xi64>
    cond {
      %c2 = stablehlo.compare LT, %j, %four : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c2 : tensor<i1>
    } do {
      %nb = stablehlo.add %b, %step : tensor<2xi64>
      %nj = stablehlo.add %j, %one : tensor<i64>
      stablehlo.return %nj, %nb : tensor<i64>, tensor<2xi64>
    }
    %ni = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %ni, %inner : tensor<i64>, tensor<2xi64>
  }
  check.expect_eq_const %i_final, dense<3> : tensor<i64>
  check.expect_eq_const %acc, dense<[12, 120]> : tensor<2xi64>
  func.return
}

// -----

func.func @while_returns_same_value_twice() {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %five = stablehlo.constant dense<5> : tensor<i64>
  %a, %b = stablehlo.while(%x = %zero, %y = %zero) : tensor<i64>, tensor<i64>
  cond {
    %c = stablehlo.compare LT, %x, %five : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %n = stablehlo.add %x, %one : tensor<i64>
    stablehlo.return %n, %n : tensor<i64>, tensor<i64>
  }
  check.expect_eq_const %a, dense<5> : tensor<i64>
  check.expect_eq_const %b, dense<5> : tensor<i64>
  func.return
}

// -----

func.func @if_inside_while() {
  // Sum of even numbers below 10 using an if in the loop body.
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %two = stablehlo.constant dense<2> : tensor<i64>
  %ten = stablehlo.constant dense<10> : tensor<i64>
  %i_final, %sum = stablehlo.while(%i = %zero, %s = %zero) : tensor<i64>, tensor<i64>
  cond {
    %c = stablehlo.compare LT, %i, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %rem = stablehlo.remainder %i, %two : tensor<i64>
    %even = stablehlo.compare EQ, %rem, %zero : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %ns = "stablehlo.if"(%even) ({
      %t = stablehlo.add %s, %i : tensor<i64>
      stablehlo.return %t : tensor<i64>
    }, {
      stablehlo.return %s : tensor<i64>
    }) : (tensor<i1>) -> tensor<i64>
    %ni = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %ni, %ns : tensor<i64>, tensor<i64>
  }
  check.expect_eq_const %sum, dense<20> : tensor<i64>
  func.return
}

// -----

func.func @case_out_of_range_takes_last_branch() {
  %big = stablehlo.constant dense<100> : tensor<i32>
  %neg = stablehlo.constant dense<-5> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %outer = stablehlo.constant dense<[4.0, 5.0]> : tensor<2xf32>
  %r0 = "stablehlo.case"(%big) ({
    %a = stablehlo.constant dense<[0.0, 0.0]> : tensor<2xf32>
    stablehlo.return %a : tensor<2xf32>
  }, {
    %b = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
    stablehlo.return %b : tensor<2xf32>
  }, {
    stablehlo.return %outer : tensor<2xf32>
  }) : (tensor<i32>) -> tensor<2xf32>
  check.expect_eq_const %r0, dense<[4.0, 5.0]> : tensor<2xf32>
  %r1 = "stablehlo.case"(%neg) ({
    %a = stablehlo.constant dense<[0.0, 0.0]> : tensor<2xf32>
    stablehlo.return %a : tensor<2xf32>
  }, {
    stablehlo.return %outer : tensor<2xf32>
  }) : (tensor<i32>) -> tensor<2xf32>
  check.expect_eq_const %r1, dense<[4.0, 5.0]> : tensor<2xf32>
  %r2 = "stablehlo.case"(%one) ({
    %a = stablehlo.constant dense<[0.0, 0.0]> : tensor<2xf32>
    stablehlo.return %a : tensor<2xf32>
  }, {
    %b = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
    stablehlo.return %b : tensor<2xf32>
  }, {
    stablehlo.return %outer : tensor<2xf32>
  }) : (tensor<i32>) -> tensor<2xf32>
  check.expect_eq_const %r2, dense<[1.0, 1.0]> : tensor<2xf32>
  func.return
}

// -----

func.func @case_single_branch() {
  %idx = stablehlo.constant dense<3> : tensor<i32>
  %r = "stablehlo.case"(%idx) ({
    %a = stablehlo.constant dense<42> : tensor<ui8>
    stablehlo.return %a : tensor<ui8>
  }) : (tensor<i32>) -> tensor<ui8>
  check.expect_eq_const %r, dense<42> : tensor<ui8>
  func.return
}

// -----

func.func @if_nested_in_case() {
  %idx = stablehlo.constant dense<0> : tensor<i32>
  %p = stablehlo.constant dense<false> : tensor<i1>
  %x = stablehlo.constant dense<3> : tensor<i64>
  %r = "stablehlo.case"(%idx) ({
    %inner = "stablehlo.if"(%p) ({
      stablehlo.return %x : tensor<i64>
    }, {
      %n = stablehlo.negate %x : tensor<i64>
      stablehlo.return %n : tensor<i64>
    }) : (tensor<i1>) -> tensor<i64>
    stablehlo.return %inner : tensor<i64>
  }, {
    stablehlo.return %x : tensor<i64>
  }) : (tensor<i32>) -> tensor<i64>
  check.expect_eq_const %r, dense<-3> : tensor<i64>
  func.return
}
