// RUN: octet-opt %s -octet-fuse-gemm-epilogue -split-input-file | FileCheck %s

// The FFN's erf GELU becomes the epilogue: (x·W + b) first, then
// 0.5·acc·(1 + erf(acc·√½)), the order of octet.gelu's definition (the
// greedy driver's folding puts constants on the right of commutative ops,
// which IEEE arithmetic does not see).
// CHECK-LABEL: func.func @gelu_erf(
//       CHECK:   %[[Y:.*]] = octet.fused_linear %arg0, %arg1, %arg2 {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32):
//   CHECK-DAG:     %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
//   CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
//   CHECK-DAG:     %[[RSQRT2:.*]] = arith.constant 0.707106769 : f32
//       CHECK:     %[[S:.*]] = arith.mulf %[[ACC]], %[[RSQRT2]] : f32
//  CHECK-NEXT:     %[[E:.*]] = math.erf %[[S]] : f32
//  CHECK-NEXT:     %[[P:.*]] = arith.addf %[[E]], %[[ONE]] : f32
//  CHECK-NEXT:     %[[H:.*]] = arith.mulf %[[ACC]], %[[HALF]] : f32
//  CHECK-NEXT:     %[[G:.*]] = arith.mulf %[[H]], %[[P]] : f32
//  CHECK-NEXT:     octet.yield %[[G]] : f32
//  CHECK-NEXT:   } : tensor<?x?x4xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<?x?x8xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @gelu_erf(%x: tensor<?x?x4xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = octet.linear %x, %w, %b : tensor<?x?x4xf32>, tensor<4x8xf32>, tensor<8xf32>
  %g = octet.gelu %h : tensor<?x?x8xf32>
  return %g : tensor<?x?x8xf32>
}

// -----

// The tanh form, on a linear with an [N, K] weight and no bias.
// CHECK-LABEL: func.func @gelu_tanh(
//       CHECK:   octet.fused_linear %arg0, %arg1 transpose_weight {
//   CHECK-DAG:     arith.constant 4.471500e-02 : f32
//   CHECK-DAG:     arith.constant 0.797884583 : f32
//       CHECK:     %[[X2:.*]] = arith.mulf %[[ACC:.*]], %[[ACC]] : f32
//  CHECK-NEXT:     %[[X3:.*]] = arith.mulf %[[X2]], %[[ACC]] : f32
//  CHECK-NEXT:     %[[C:.*]] = arith.mulf %[[X3]], %{{.*}} : f32
//  CHECK-NEXT:     %[[SUM:.*]] = arith.addf %[[ACC]], %[[C]] : f32
//  CHECK-NEXT:     %[[IN:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
//  CHECK-NEXT:     math.tanh %[[IN]] : f32
//       CHECK:   } : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
func.func @gelu_tanh(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>) -> tensor<?x8xf32> {
  %h = octet.linear %x, %w transpose_weight : tensor<?x4xf32>, tensor<8x4xf32>
  %g = octet.gelu %h approximate = "tanh" : tensor<?x8xf32>
  return %g : tensor<?x8xf32>
}

// -----

// A chain: splat constants become arith.constant (operand order kept: 2 - y),
// tensors become extra operands (one per distinct tensor), max is maximumf.
// CHECK-LABEL: func.func @chain(
//       CHECK:   %[[Y:.*]] = octet.fused_linear %arg0, %arg1, %arg2 extra(%arg3, %arg4 : tensor<8xf32>, tensor<1x8xf32>) {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32, %[[SCALE:.*]]: f32, %[[R:.*]]: f32):
//   CHECK-DAG:     %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
//   CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//       CHECK:     %[[A:.*]] = arith.mulf %[[ACC]], %[[SCALE]] : f32
//  CHECK-NEXT:     %[[B:.*]] = arith.subf %[[TWO]], %[[A]] : f32
//  CHECK-NEXT:     %[[C:.*]] = arith.addf %[[R]], %[[B]] : f32
//  CHECK-NEXT:     %[[D:.*]] = arith.maximumf %[[C]], %[[ZERO]] : f32
//  CHECK-NEXT:     %[[E:.*]] = arith.divf %[[D]], %[[R]] : f32
//  CHECK-NEXT:     octet.yield %[[E]] : f32
//   CHECK-NOT:   octet.
//       CHECK:   return %[[Y]]
func.func @chain(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>, %scale: tensor<8xf32>,
                 %r: tensor<1x8xf32>) -> tensor<?x8xf32> {
  %two = octet.constant dense<2.0> : tensor<1xf32>
  %h = octet.linear %x, %w, %b : tensor<?x4xf32>, tensor<4x8xf32>, tensor<8xf32>
  %s = octet.mul %h, %scale : tensor<?x8xf32>, tensor<8xf32>
  %t = octet.sub %two, %s : tensor<1xf32>, tensor<?x8xf32>
  %u = octet.add %r, %t : tensor<1x8xf32>, tensor<?x8xf32>
  %v = octet.relu %u : tensor<?x8xf32>
  %q = octet.div %v, %r : tensor<?x8xf32>, tensor<1x8xf32>
  return %q : tensor<?x8xf32>
}

// -----

// A residual whose `?` dim provably has the result's size (both are x's rows)
// fuses; sigmoid is 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @residual(
//       CHECK:   octet.fused_linear %arg0, %arg1 extra(%arg0 : tensor<?x4xf32>) {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32, %[[X:.*]]: f32):
//       CHECK:     %[[S:.*]] = arith.addf %[[ACC]], %[[X]] : f32
//  CHECK-NEXT:     %[[N:.*]] = arith.negf %[[S]] : f32
//  CHECK-NEXT:     %[[E:.*]] = math.exp %[[N]] : f32
//  CHECK-NEXT:     %[[D:.*]] = arith.addf %[[E]], %[[ONE:.*]] : f32
//  CHECK-NEXT:     %[[R:.*]] = arith.divf %[[ONE]], %[[D]] : f32
//  CHECK-NEXT:     octet.yield %[[R]] : f32
func.func @residual(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> tensor<?x4xf32> {
  %h = octet.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32>
  %s = octet.add %h, %x : tensor<?x4xf32>, tensor<?x4xf32>
  %y = octet.sigmoid %s : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Not fused: a tensor whose `?` dim may differ from the result's (it could
// widen a result of one row), and a value used twice.
// CHECK-LABEL: func.func @unproven_dims(
//  CHECK-NEXT:   octet.linear
//  CHECK-NEXT:   octet.add
// CHECK-LABEL: func.func @multi_use(
//  CHECK-NEXT:   %[[H:.*]] = octet.linear
//  CHECK-NEXT:   %[[G:.*]] = octet.gelu %[[H]]
//  CHECK-NEXT:   return %[[G]], %[[H]]
func.func @unproven_dims(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>, %r: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %h = octet.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32>
  %s = octet.add %h, %r : tensor<?x4xf32>, tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}
func.func @multi_use(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %h = octet.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32>
  %g = octet.gelu %h : tensor<?x4xf32>
  return %g, %h : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A multi-use value inside the chain stops it there; a non-elementwise
// consumer (softmax) and a widening broadcast are never fused.
// CHECK-LABEL: func.func @stops(
//  CHECK-NEXT:   %[[F:.*]] = octet.fused_linear
//       CHECK:     math.erf
//       CHECK:   %[[A:.*]] = octet.add %[[F]], %[[F]]
//  CHECK-NEXT:   %[[H:.*]] = octet.linear
//  CHECK-NEXT:   octet.softmax %[[H]]
//  CHECK-NEXT:   %[[L:.*]] = octet.linear
//  CHECK-NEXT:   octet.add %[[L]], %arg2 : tensor<?x4xf32>, tensor<3x1x4xf32>
func.func @stops(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>, %big: tensor<3x1x4xf32>)
    -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<3x?x4xf32>) {
  %h = octet.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32>
  %g = octet.gelu %h : tensor<?x4xf32>
  %a = octet.add %g, %g : tensor<?x4xf32>, tensor<?x4xf32>
  %h2 = octet.linear %x, %w : tensor<?x4xf32>, tensor<4x4xf32>
  %s = octet.softmax %h2 axis = 1 : tensor<?x4xf32>
  %h3 = octet.linear %a, %w : tensor<?x4xf32>, tensor<4x4xf32>
  %b = octet.add %h3, %big : tensor<?x4xf32>, tensor<3x1x4xf32>
  return %a, %s, %b : tensor<?x4xf32>, tensor<?x4xf32>, tensor<3x?x4xf32>
}

// -----

// Q/K/V: three linears of one input with constant [K, N] weights become one
// linear of the weights concatenated along N (rows interleaved) and the
// biases concatenated, then three slices along the last axis.
// CHECK-LABEL: func.func @qkv(
//   CHECK-DAG:   %[[W:.*]] = octet.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 5.000000e+00, 6.000000e+00, 9.000000e+00, 1.000000e+01], [3.000000e+00, 4.000000e+00, 7.000000e+00, 8.000000e+00, 1.100000e+01, 1.200000e+01]]> : tensor<2x6xf32>
//   CHECK-DAG:   %[[B:.*]] = octet.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 3.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<6xf32>
//       CHECK:   %[[QKV:.*]] = octet.linear %arg0, %[[W]], %[[B]] : tensor<?x?x2xf32>, tensor<2x6xf32>, tensor<6xf32>
//  CHECK-NEXT:   %[[Q:.*]] = octet.slice %[[QKV]] axes = [2] starts = [0] ends = [2] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
//  CHECK-NEXT:   %[[K:.*]] = octet.slice %[[QKV]] axes = [2] starts = [2] ends = [4] steps = [1]
//  CHECK-NEXT:   %[[V:.*]] = octet.slice %[[QKV]] axes = [2] starts = [4] ends = [6] steps = [1]
//  CHECK-NEXT:   octet.attention %[[Q]], %[[K]], %[[V]] num_heads = 1
//   CHECK-NOT:   octet.constant
func.func @qkv(%x: tensor<?x?x2xf32>) -> tensor<?x?x2xf32> {
  %wq = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = octet.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %wv = octet.constant dense<[[9.0, 10.0], [11.0, 12.0]]> : tensor<2x2xf32>
  %bq = octet.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bk = octet.constant dense<3.0> : tensor<2xf32>
  %bv = octet.constant dense<[5.0, 6.0]> : tensor<2xf32>
  %q = octet.linear %x, %wq, %bq : tensor<?x?x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %k = octet.linear %x, %wk, %bk : tensor<?x?x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %v = octet.linear %x, %wv, %bv : tensor<?x?x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %a = octet.attention %q, %k, %v num_heads = 1 scale = 1.0 : tensor<?x?x2xf32>
  return %a : tensor<?x?x2xf32>
}

// -----

// [N, K] weights (transpose_weight) concatenate along N = their rows.
// CHECK-LABEL: func.func @qkv_transposed(
//       CHECK:   %[[W:.*]] = octet.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
//       CHECK:   %[[L:.*]] = octet.linear %arg0, %[[W]] transpose_weight : tensor<?x2xf32>, tensor<3x2xf32>
//  CHECK-NEXT:   octet.slice %[[L]] axes = [1] starts = [0] ends = [2] steps = [1] : tensor<?x3xf32> -> tensor<?x2xf32>
//  CHECK-NEXT:   octet.slice %[[L]] axes = [1] starts = [2] ends = [3] steps = [1] : tensor<?x3xf32> -> tensor<?x1xf32>
func.func @qkv_transposed(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x1xf32>) {
  %w1 = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %w2 = octet.constant dense<[[5.0, 6.0]]> : tensor<1x2xf32>
  %a = octet.linear %x, %w1 transpose_weight : tensor<?x2xf32>, tensor<2x2xf32>
  %b = octet.linear %x, %w2 transpose_weight : tensor<?x2xf32>, tensor<1x2xf32>
  return %a, %b : tensor<?x2xf32>, tensor<?x1xf32>
}

// -----

// Not merged: different inputs, different weight layouts, a bias on only
// one, a weight that is not a constant.
// CHECK-LABEL: func.func @no_merge(
//   CHECK-NOT:   octet.slice
//   CHECK-NOT:   tensor<2x4xf32>
func.func @no_merge(%x: tensor<?x2xf32>, %y: tensor<?x2xf32>, %wa: tensor<2x2xf32>)
    -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = octet.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = octet.linear %x, %w : tensor<?x2xf32>, tensor<2x2xf32>
  %1 = octet.linear %y, %w : tensor<?x2xf32>, tensor<2x2xf32>
  %2 = octet.linear %x, %w transpose_weight : tensor<?x2xf32>, tensor<2x2xf32>
  %3 = octet.linear %x, %w, %b : tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %4 = octet.linear %x, %wa : tensor<?x2xf32>, tensor<2x2xf32>
  return %0, %1, %2, %3, %4 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}
