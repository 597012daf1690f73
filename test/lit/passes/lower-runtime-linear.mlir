// octet-lower-runtime-linear: a linear whose weight or bias is a run-time value
// becomes transpose (under transpose_weight) + matmul (+ add); linears of
// constants and fused_linear stay as they are.
// RUN: octet-opt %s -split-input-file -octet-lower-runtime-linear | FileCheck %s
// The FP32 pipeline runs it before plan-memory, so the new values get slots.
// RUN: octet-opt %s -split-input-file -octet-fp32-pipeline | FileCheck %s --check-prefix=PIPE

// CHECK-LABEL: func.func @runtime_weight_bias(
//  CHECK-SAME:     %[[X:.*]]: tensor<?x4xf32>, %[[W:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<8xf32>)
//       CHECK:   %[[T:.*]] = octet.transpose %[[W]] permutation = [1, 0] : tensor<8x4xf32>
//       CHECK:   %[[P:.*]] = octet.matmul %[[X]], %[[T]] : tensor<?x4xf32>, tensor<4x8xf32>
//       CHECK:   %[[Y:.*]] = octet.add %[[P]], %[[B]] : tensor<?x8xf32>, tensor<8xf32>
//   CHECK-NOT:   octet.linear
//       CHECK:   return %[[Y]]
// PIPE-LABEL: func.func @runtime_weight_bias(
//       PIPE:   octet.matmul {{.*}} {octet.slot = {{[0-9]+}} : i64}
//   PIPE-NOT:   octet.linear
//       PIPE:   return
func.func @runtime_weight_bias(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %y = octet.linear %x, %w, %b transpose_weight : tensor<?x4xf32>, tensor<8x4xf32>, tensor<8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// A run-time weight without bias or transpose: one matmul with the linear's type.
// CHECK-LABEL: func.func @runtime_weight(
//       CHECK:   %[[P:.*]] = octet.matmul %arg0, %arg1 : tensor<2x?x4xf32>, tensor<4x8xf32>
//   CHECK-NOT:   octet.transpose
//   CHECK-NOT:   octet.add
//       CHECK:   return %[[P]]
func.func @runtime_weight(%x: tensor<2x?x4xf32>, %w: tensor<4x8xf32>) -> tensor<2x?x8xf32> {
  %y = octet.linear %x, %w : tensor<2x?x4xf32>, tensor<4x8xf32>
  return %y : tensor<2x?x8xf32>
}

// -----

// A constant weight with a run-time bias: the linear step needs both as constants.
// CHECK-LABEL: func.func @runtime_bias(
//       CHECK:   octet.matmul
//       CHECK:   octet.add
//   CHECK-NOT:   octet.linear
func.func @runtime_bias(%x: tensor<?x4xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %w = octet.constant dense<1.0> : tensor<4x8xf32>
  %y = octet.linear %x, %w, %b : tensor<?x4xf32>, tensor<4x8xf32>, tensor<8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Negative: constants stay a linear (the runtime's packed GEMM step).
// CHECK-LABEL: func.func @constant_weight_bias(
//       CHECK:   octet.linear
//   CHECK-NOT:   octet.matmul
func.func @constant_weight_bias(%x: tensor<?x4xf32>) -> tensor<?x8xf32> {
  %w = octet.constant dense<1.0> : tensor<8x4xf32>
  %b = octet.constant dense<0.5> : tensor<8xf32>
  %y = octet.linear %x, %w, %b transpose_weight : tensor<?x4xf32>, tensor<8x4xf32>, tensor<8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Negative: a fused_linear keeps its run-time weight (its epilogue has no
// generic form here; the Plan builder reports it).
// CHECK-LABEL: func.func @fused_runtime_weight(
//       CHECK:   octet.fused_linear
//   CHECK-NOT:   octet.matmul
func.func @fused_runtime_weight(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) -> tensor<?x8xf32> {
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    %t = math.tanh %acc : f32
    octet.yield %t : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
