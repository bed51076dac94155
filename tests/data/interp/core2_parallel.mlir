// interpreter.run_parallel: a num_replicas x num_partitions grid of programs, one thread each,
// and the ops that communicate between them (generic forms).

// Process ids on a 2x2 grid; inputs and results are flattened in process order.
module @ids {
  func.func @ids(%x: tensor<i32>) -> (tensor<ui32>, tensor<ui32>, tensor<i32>) {
    %r = "stablehlo.replica_id"() : () -> tensor<ui32>
    %p = "stablehlo.partition_id"() : () -> tensor<ui32>
    return %r, %p, %x : tensor<ui32>, tensor<ui32>, tensor<i32>
  }
  func.func @main() {
    %a = stablehlo.constant dense<10> : tensor<i32>
    %b = stablehlo.constant dense<11> : tensor<i32>
    %c = stablehlo.constant dense<12> : tensor<i32>
    %d = stablehlo.constant dense<13> : tensor<i32>
    %res:12 = "interpreter.run_parallel"(%a, %b, %c, %d) {programs = [[@ids, @ids], [@ids, @ids]]}
      : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>)
      -> (tensor<ui32>, tensor<ui32>, tensor<i32>, tensor<ui32>, tensor<ui32>, tensor<i32>,
          tensor<ui32>, tensor<ui32>, tensor<i32>, tensor<ui32>, tensor<ui32>, tensor<i32>)
    check.expect_eq_const %res#3, dense<0> : tensor<ui32>
    check.expect_eq_const %res#4, dense<1> : tensor<ui32>
    check.expect_eq_const %res#5, dense<11> : tensor<i32>
    check.expect_eq_const %res#6, dense<1> : tensor<ui32>
    check.expect_eq_const %res#7, dense<0> : tensor<ui32>
    check.expect_eq_const %res#11, dense<13> : tensor<i32>
    func.return
  }
}

// -----

// all_reduce inside a while loop: the same (group, channel) rendezvous is reused every
// iteration. Each replica adds its id + 1; after 3 rounds of doubling-by-sum: x <- sum(x).
module @loop {
  func.func @prog(%x: tensor<i64>) -> tensor<i64> {
    %i0 = stablehlo.constant dense<0> : tensor<i64>
    %r:2 = stablehlo.while(%it = %i0, %v = %x) : tensor<i64>, tensor<i64>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i64>
      %c = stablehlo.compare LT, %it, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i64>
      %j = stablehlo.add %it, %one : tensor<i64>
      %s = "stablehlo.all_reduce"(%v) ({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %t = stablehlo.add %a, %b : tensor<i64>
        stablehlo.return %t : tensor<i64>
      }) {replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>} : (tensor<i64>) -> tensor<i64>
      stablehlo.return %j, %s : tensor<i64>, tensor<i64>
    }
    return %r#1 : tensor<i64>
  }
  func.func @main() {
    %a = stablehlo.constant dense<1> : tensor<i64>
    %b = stablehlo.constant dense<2> : tensor<i64>
    %c = stablehlo.constant dense<3> : tensor<i64>
    %res:3 = "interpreter.run_parallel"(%a, %b, %c) {programs = [[@prog], [@prog], [@prog]]}
      : (tensor<i64>, tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<i64>, tensor<i64>)
    // 6 -> 18 -> 54
    check.expect_eq_const %res#0, dense<54> : tensor<i64>
    check.expect_eq_const %res#2, dense<54> : tensor<i64>
    func.return
  }
}

// -----

// 2 replicas x 2 partitions: cross_replica (channel 0), cross_replica_and_partition
// (channel > 0) and flattened ids (use_global_device_ids) groups for all_gather.
module @groups {
  func.func @prog(%x: tensor<1xi64>) -> (tensor<2xi64>, tensor<4xi64>, tensor<2xi64>) {
    %a = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<1xi64>) -> tensor<2xi64>
    %b = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>} : (tensor<1xi64>) -> tensor<4xi64>
    %c = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
      replica_groups = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>,
      use_global_device_ids} : (tensor<1xi64>) -> tensor<2xi64>
    return %a, %b, %c : tensor<2xi64>, tensor<4xi64>, tensor<2xi64>
  }
  func.func @main() {
    %p00 = stablehlo.constant dense<[0]> : tensor<1xi64>
    %p01 = stablehlo.constant dense<[1]> : tensor<1xi64>
    %p10 = stablehlo.constant dense<[10]> : tensor<1xi64>
    %p11 = stablehlo.constant dense<[11]> : tensor<1xi64>
    %r:12 = "interpreter.run_parallel"(%p00, %p01, %p10, %p11) {programs = [[@prog, @prog], [@prog, @prog]]}
      : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>)
      -> (tensor<2xi64>, tensor<4xi64>, tensor<2xi64>, tensor<2xi64>, tensor<4xi64>, tensor<2xi64>,
          tensor<2xi64>, tensor<4xi64>, tensor<2xi64>, tensor<2xi64>, tensor<4xi64>, tensor<2xi64>)
    // process (0, 1): cross_replica gathers partition 1 of both replicas
    check.expect_eq_const %r#3, dense<[1, 11]> : tensor<2xi64>
    // cross_replica_and_partition: replicas {0, 1} x all partitions, partition-major
    check.expect_eq_const %r#4, dense<[0, 10, 1, 11]> : tensor<4xi64>
    // flattened ids: process (0, 1) has id 1, grouped with id 2 = (1, 0)
    check.expect_eq_const %r#5, dense<[1, 10]> : tensor<2xi64>
    // process (1, 1) = id 3, grouped with id 0
    check.expect_eq_const %r#11, dense<[0, 11]> : tensor<2xi64>
    func.return
  }
}

// -----

// One replica, two partitions (channel > 0 everywhere): all_to_all with split_dimension ==
// concat_dimension across partitions, reduce_scatter over replica 0 x all partitions,
// collective_permute across partitions where a process that is no target gets zeros.
module @mix {
  func.func @prog(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<2xi32>, tensor<4xi32>) {
    %a = "stablehlo.all_to_all"(%x) {split_dimension = 0 : i64, concat_dimension = 0 : i64,
      split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>} : (tensor<4xi32>) -> tensor<4xi32>
    %b = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%l: tensor<i32>, %r: tensor<i32>):
      %m = stablehlo.maximum %l, %r : tensor<i32>
      stablehlo.return %m : tensor<i32>
    }) {scatter_dimension = 0 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>} : (tensor<4xi32>) -> tensor<2xi32>
    %c = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 0>} : (tensor<4xi32>) -> tensor<4xi32>
    return %a, %b, %c : tensor<4xi32>, tensor<2xi32>, tensor<4xi32>
  }
  func.func @main() {
    %x0 = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
    %x1 = stablehlo.constant dense<[5, 0, 7, 1]> : tensor<4xi32>
    %r:6 = "interpreter.run_parallel"(%x0, %x1) {programs = [[@prog, @prog]]}
      : (tensor<4xi32>, tensor<4xi32>) -> (tensor<4xi32>, tensor<2xi32>, tensor<4xi32>, tensor<4xi32>, tensor<2xi32>, tensor<4xi32>)
    check.expect_eq_const %r#0, dense<[1, 2, 5, 0]> : tensor<4xi32>
    check.expect_eq_const %r#3, dense<[3, 4, 7, 1]> : tensor<4xi32>
    check.expect_eq_const %r#1, dense<[5, 2]> : tensor<2xi32>
    check.expect_eq_const %r#4, dense<[7, 4]> : tensor<2xi32>
    check.expect_eq_const %r#2, dense<0> : tensor<4xi32>
    check.expect_eq_const %r#5, dense<[1, 2, 3, 4]> : tensor<4xi32>
    func.return
  }
}

// -----

// send/recv across processes and infeed producers; tokens thread through.
module @io {
  func.func @producer(%x: tensor<2xi64>, %t: !stablehlo.token) -> !stablehlo.token {
    %t1 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    %t2 = "stablehlo.outfeed"(%x, %t1) : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    return %t2 : !stablehlo.token
  }
  func.func @consumer(%x: tensor<2xi64>, %t: !stablehlo.token) -> (tensor<2xi64>, tensor<2xi64>) {
    %v:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    %w:2 = "stablehlo.infeed"(%v#1) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    %s = stablehlo.add %v#0, %x : tensor<2xi64>
    return %s, %w#0 : tensor<2xi64>, tensor<2xi64>
  }
  func.func @feed() -> tensor<2xi64> {
    %c = stablehlo.constant dense<[7, 9]> : tensor<2xi64>
    return %c : tensor<2xi64>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %b = stablehlo.constant dense<[10, 20]> : tensor<2xi64>
    %t = "stablehlo.after_all"() : () -> !stablehlo.token
    %r:3 = "interpreter.run_parallel"(%a, %t, %b, %t) {infeed = [@feed], programs = [[@producer], [@consumer]]}
      : (tensor<2xi64>, !stablehlo.token, tensor<2xi64>, !stablehlo.token) -> (!stablehlo.token, tensor<2xi64>, tensor<2xi64>)
    check.expect_eq_const %r#1, dense<[11, 22]> : tensor<2xi64>
    check.expect_eq_const %r#2, dense<[7, 9]> : tensor<2xi64>
    func.return
  }
}

// -----

// Outside run_parallel the interpreter is one process: groups of one.
func.func @solo() {
  %x = stablehlo.constant dense<[1.5, 2.5]> : tensor<2xf32>
  %s = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %t = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %t : tensor<f32>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  %g = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  %r = "stablehlo.replica_id"() : () -> tensor<ui32>
  check.expect_eq_const %s, dense<[1.5, 2.5]> : tensor<2xf32>
  check.expect_eq_const %g, dense<[1.5, 2.5]> : tensor<2xf32>
  check.expect_eq_const %r, dense<0> : tensor<ui32>
  func.return
}
