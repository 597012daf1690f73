// octet-lower-gelu: a lone f32 octet.gelu becomes the octet.fused of one
// octet.scalar_gelu (the elementwise program's GeluErf / GeluTanh), keeping its
// location (the step's name); a gelu of another element type stays.
// RUN: octet-opt %s -split-input-file -octet-lower-gelu -mlir-print-debuginfo | FileCheck %s
// The FP32 pipeline runs it before plan-memory, so the fused op gets a slot.
// RUN: octet-opt %s -split-input-file -octet-fp32-pipeline | FileCheck %s --check-prefix=PIPE
// octet-interp gives the same values before and after: semantics/lower-gelu.test.

//       CHECK: [[ACT:#loc[0-9]*]] = loc("act")
// CHECK-LABEL: func.func @erf(
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %arg0 {
//  CHECK-NEXT:   ^bb0(%[[E:.*]]: f32 loc("act")):
//  CHECK-NEXT:     %[[G:.*]] = octet.scalar_gelu %[[E]] : f32 loc([[ACT]])
//  CHECK-NEXT:     octet.yield %[[G]] : f32 loc([[ACT]])
//  CHECK-NEXT:   } : tensor<2x3x8xf32> -> tensor<2x3x8xf32> loc([[ACT]])
//   CHECK-NOT:   octet.gelu
//       CHECK:   octet.softmax %[[Y]]
// PIPE-LABEL: func.func @erf(
//       PIPE:   octet.fused
//       PIPE:     octet.scalar_gelu
//       PIPE:   } {octet.slot = {{[0-9]+}} : i64}
//   PIPE-NOT:   octet.gelu
func.func @erf(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %y = octet.gelu %x : tensor<2x3x8xf32> loc("act")
  %p = octet.softmax %y axis = 2 : tensor<2x3x8xf32>
  return %p : tensor<2x3x8xf32>
}

// -----

// The tanh form, on dynamic dims.
// CHECK-LABEL: func.func @tanh(
//  PIPE-LABEL: func.func @tanh(
//       CHECK:   octet.fused %arg0 {
//       CHECK:     octet.scalar_gelu %{{.*}} approximate = "tanh" : f32
//       CHECK:   } : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
//   CHECK-NOT:   octet.gelu
func.func @tanh(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %y = octet.gelu %x approximate = "tanh" : tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Not f32: the runtime's elementwise program is f32, so the gelu stays (and the
// Plan builder refuses it by name).
// CHECK-LABEL: func.func @bf16(
//       CHECK:   octet.gelu %arg0 : tensor<4xbf16>
//   CHECK-NOT:   octet.fused
func.func @bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %y = octet.gelu %x : tensor<4xbf16>
  return %y : tensor<4xbf16>
}
