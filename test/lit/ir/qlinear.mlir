// Round trip of octet.qlinear: f32 result with bias and an epilogue, the
// transposed [N, K] weight, requantize to ui8 and i8, extra operands.
// The second RUN line goes through the generic form, so the custom format must
// carry every operand, attribute and the region.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @f32_result(
//       CHECK:   %0 = octet.qlinear %arg0, %arg1, %arg2 scales(%arg3, %arg4, %arg5 : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
//  CHECK-NEXT:   ^bb0(%arg6: f32):
//  CHECK-NEXT:     octet.yield %arg6 : f32
//  CHECK-NEXT:   } : tensor<?x?x4xui8>, tensor<4x8xi8>, tensor<8xf32> -> tensor<?x?x8xf32>
func.func @f32_result(%x: tensor<?x?x4xui8>, %w: tensor<4x8xi8>, %b: tensor<8xf32>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = octet.qlinear %x, %w, %b scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x?x4xui8>, tensor<4x8xi8>, tensor<8xf32> -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @requantize(
//       CHECK:   octet.qlinear %arg0, %arg1 scales(%arg2, %arg3, %arg4 : tensor<f32>, tensor<ui8>, tensor<8xf32>) transpose_weight requantize(%arg5, %arg6 : tensor<f32>, tensor<i8>) extra(%arg7 : tensor<?x1xf32>) {
//  CHECK-NEXT:   ^bb0(%arg8: f32, %arg9: f32):
//  CHECK-NEXT:     %{{.*}} = arith.mulf %arg8, %arg9 : f32
//       CHECK:   } : tensor<?x4xui8>, tensor<8x4xi8> -> tensor<?x8xi8>
func.func @requantize(%x: tensor<?x4xui8>, %w: tensor<8x4xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>, %ys: tensor<f32>, %yzp: tensor<i8>, %r: tensor<?x1xf32>) -> tensor<?x8xi8> {
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) transpose_weight requantize(%ys, %yzp : tensor<f32>, tensor<i8>) extra(%r : tensor<?x1xf32>) {
  ^bb0(%acc: f32, %r0: f32):
    %p = arith.mulf %acc, %r0 : f32
    octet.yield %p : f32
  } : tensor<?x4xui8>, tensor<8x4xi8> -> tensor<?x8xi8>
  return %y : tensor<?x8xi8>
}
