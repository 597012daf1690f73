// Round trip of octet.fused_linear: with and without bias and extra operands,
// with transpose_weight, and a body of arith and math ops.
// The second RUN line goes through the generic form, so the custom format must
// carry every operand, attribute and the region.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @gelu(
//  CHECK-NEXT:   %0 = octet.fused_linear %arg0, %arg1, %arg2 {
//  CHECK-NEXT:   ^bb0(%arg3: f32):
//  CHECK-NEXT:     %cst = arith.constant 0.707106769 : f32
//  CHECK-NEXT:     %1 = arith.mulf %arg3, %cst : f32
//  CHECK-NEXT:     %2 = math.erf %1 : f32
//  CHECK-NEXT:     octet.yield %2 : f32
//  CHECK-NEXT:   } : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
func.func @gelu(%x: tensor<?x?x768xf32>, %w: tensor<768x3072xf32>, %b: tensor<3072xf32>) -> tensor<?x?x3072xf32> {
  %y = octet.fused_linear %x, %w, %b {
  ^bb0(%acc: f32):
    %c = arith.constant 0.707106769 : f32
    %s = arith.mulf %acc, %c : f32
    %e = math.erf %s : f32
    octet.yield %e : f32
  } : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
  return %y : tensor<?x?x3072xf32>
}

// CHECK-LABEL: func.func @extras(
//  CHECK-NEXT:   %0 = octet.fused_linear %arg0, %arg1 transpose_weight extra(%arg2, %arg3 : tensor<?x?x64xf32>, tensor<64xf32>) {
//  CHECK-NEXT:   ^bb0(%arg4: f32, %arg5: f32, %arg6: f32):
//  CHECK-NEXT:     %1 = arith.addf %arg4, %arg5 : f32
//  CHECK-NEXT:     %2 = arith.mulf %1, %arg6 : f32
//  CHECK-NEXT:     octet.yield %2 : f32
//  CHECK-NEXT:   } : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
func.func @extras(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %r: tensor<?x?x64xf32>, %s: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = octet.fused_linear %x, %w transpose_weight extra(%r, %s : tensor<?x?x64xf32>, tensor<64xf32>) {
  ^bb0(%acc: f32, %r0: f32, %s0: f32):
    %a = arith.addf %acc, %r0 : f32
    %m = arith.mulf %a, %s0 : f32
    octet.yield %m : f32
  } : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
