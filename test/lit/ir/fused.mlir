// Round trip of octet.fused_linear (with and without bias and extra operands,
// with transpose_weight, and a body of arith and math ops) and octet.fused.
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

// octet.fused: several inputs broadcast into the result, a constant and
// every op its body allows.
// CHECK-LABEL: func.func @fused(
//  CHECK-NEXT:   %0 = octet.fused %arg0, %arg1, %arg2 {
//  CHECK-NEXT:   ^bb0(%arg3: f32, %arg4: f32, %arg5: f32):
//  CHECK-NEXT:     %cst = arith.constant -1.000000e+04 : f32
//  CHECK-NEXT:     %1 = arith.addf %arg3, %arg4 : f32
//  CHECK-NEXT:     %2 = arith.subf %1, %arg5 : f32
//  CHECK-NEXT:     %3 = arith.mulf %2, %cst : f32
//  CHECK-NEXT:     %4 = arith.divf %3, %arg4 : f32
//  CHECK-NEXT:     %5 = arith.maximumf %4, %arg3 : f32
//  CHECK-NEXT:     %6 = arith.minimumf %5, %arg3 : f32
//  CHECK-NEXT:     %7 = arith.negf %6 : f32
//  CHECK-NEXT:     %8 = math.erf %7 : f32
//  CHECK-NEXT:     %9 = math.tanh %8 : f32
//  CHECK-NEXT:     %10 = math.exp %9 : f32
//  CHECK-NEXT:     %11 = math.log %10 : f32
//  CHECK-NEXT:     %12 = math.sqrt %11 : f32
//  CHECK-NEXT:     %13 = math.rsqrt %12 : f32
//  CHECK-NEXT:     %14 = math.powf %13, %arg5 : f32
//  CHECK-NEXT:     %15 = math.absf %14 : f32
//  CHECK-NEXT:     octet.yield %15 : f32
//  CHECK-NEXT:   } : tensor<?x?x64xf32>, tensor<1x?x64xf32>, tensor<f32> -> tensor<?x?x64xf32>
func.func @fused(%a: tensor<?x?x64xf32>, %b: tensor<1x?x64xf32>, %c: tensor<f32>) -> tensor<?x?x64xf32> {
  %y = octet.fused %a, %b, %c {
  ^bb0(%a0: f32, %b0: f32, %c0: f32):
    %big = arith.constant -1.000000e+04 : f32
    %0 = arith.addf %a0, %b0 : f32
    %1 = arith.subf %0, %c0 : f32
    %2 = arith.mulf %1, %big : f32
    %3 = arith.divf %2, %b0 : f32
    %4 = arith.maximumf %3, %a0 : f32
    %5 = arith.minimumf %4, %a0 : f32
    %6 = arith.negf %5 : f32
    %7 = math.erf %6 : f32
    %8 = math.tanh %7 : f32
    %9 = math.exp %8 : f32
    %10 = math.log %9 : f32
    %11 = math.sqrt %10 : f32
    %12 = math.rsqrt %11 : f32
    %13 = math.powf %12, %c0 : f32
    %14 = math.absf %13 : f32
    octet.yield %14 : f32
  } : tensor<?x?x64xf32>, tensor<1x?x64xf32>, tensor<f32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// One input, static shape, an attribute after the region.
// CHECK-LABEL: func.func @fused_one(
//  CHECK-NEXT:   %0 = octet.fused %arg0 {
//  CHECK-NEXT:   ^bb0(%arg1: f32):
//  CHECK-NEXT:     octet.yield %arg1 : f32
//  CHECK-NEXT:   } {octet.slot = 0 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
func.func @fused_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = octet.fused %x {
  ^bb0(%x0: f32):
    octet.yield %x0 : f32
  } {octet.slot = 0 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// octet.scalar_gelu in octet.fused's body (what octet-lower-gelu builds).
// CHECK-LABEL: func.func @scalar_gelu(
//  CHECK-NEXT:   %0 = octet.fused %arg0 {
//  CHECK-NEXT:   ^bb0(%arg1: f32):
//  CHECK-NEXT:     %1 = octet.scalar_gelu %arg1 approximate = "tanh" : f32
//  CHECK-NEXT:     octet.yield %1 : f32
//  CHECK-NEXT:   } : tensor<?x16xf32> -> tensor<?x16xf32>
func.func @scalar_gelu(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %y = octet.fused %x {
  ^bb0(%e: f32):
    %g = octet.scalar_gelu %e approximate = "tanh" : f32
    octet.yield %g : f32
  } : tensor<?x16xf32> -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
