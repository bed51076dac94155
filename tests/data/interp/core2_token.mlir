// Tokens (!stablehlo.token) carry no data: after_all joins them; they flow through calls,
// tuples, optimization barriers and control flow like any other value.

func.func @after_all_generic() {
  %t0 = "stablehlo.after_all"() : () -> !stablehlo.token
  %t1 = "stablehlo.after_all"() : () -> !stablehlo.token
  %t2 = "stablehlo.after_all"(%t0, %t1) : (!stablehlo.token, !stablehlo.token) -> !stablehlo.token
  func.return
}

// -----

func.func private @pass_token(%t: !stablehlo.token, %x: tensor<i32>) -> (!stablehlo.token, tensor<i32>) {
  %t2 = "stablehlo.after_all"(%t) : (!stablehlo.token) -> !stablehlo.token
  func.return %t2, %x : !stablehlo.token, tensor<i32>
}

func.func @main() {
  %t = "stablehlo.after_all"() : () -> !stablehlo.token
  %x = stablehlo.constant dense<5> : tensor<i32>
  %0:2 = func.call @pass_token(%t, %x) : (!stablehlo.token, tensor<i32>) -> (!stablehlo.token, tensor<i32>)
  %1:2 = stablehlo.optimization_barrier %0#0, %0#1 : !stablehlo.token, tensor<i32>
  %tup = "stablehlo.tuple"(%1#0, %1#1) : (!stablehlo.token, tensor<i32>) -> tuple<!stablehlo.token, tensor<i32>>
  %y = "stablehlo.get_tuple_element"(%tup) <{index = 1 : i32}> : (tuple<!stablehlo.token, tensor<i32>>) -> tensor<i32>
  check.expect_eq_const %y, dense<5> : tensor<i32>
  func.return
}

// -----

// A token as a while-loop carry.
func.func @token_while() {
  %t = "stablehlo.after_all"() : () -> !stablehlo.token
  %i = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%it = %t, %ii = %i) : !stablehlo.token, tensor<i32>
  cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %c = stablehlo.compare LT, %ii, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %ii, %one : tensor<i32>
    %t2 = "stablehlo.after_all"(%it) : (!stablehlo.token) -> !stablehlo.token
    stablehlo.return %t2, %j : !stablehlo.token, tensor<i32>
  }
  check.expect_eq_const %0#1, dense<3> : tensor<i32>
  func.return
}

// -----

// The interpreter is a single process: replica 0 of partition 0.
func.func @process_ids() {
  %r = "stablehlo.replica_id"() : () -> tensor<ui32>
  %p = "stablehlo.partition_id"() : () -> tensor<ui32>
  check.expect_eq_const %r, dense<0> : tensor<ui32>
  check.expect_eq_const %p, dense<0> : tensor<ui32>
  func.return
}
