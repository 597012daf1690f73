// Round trip of the elementwise ops: broadcasting binary ops, comparisons and logic,
// unary math, cast and where.
// The second RUN line goes through the generic form, so the custom format must
// carry every operand and attribute.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @binary_f32(
//  CHECK-NEXT:   %0 = octet.add %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %1 = octet.sub %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %2 = octet.mul %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %3 = octet.div %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %4 = octet.pow %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %5 = octet.max %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %6 = octet.min %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   return %0, %1, %2, %3, %4, %5, %6 : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>
func.func @binary_f32(%arg0: tensor<?x?x768xf32>, %arg1: tensor<768xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
  %0 = octet.add %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  %1 = octet.sub %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  %2 = octet.mul %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  %3 = octet.div %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  %4 = octet.pow %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  %5 = octet.max %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  %6 = octet.min %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>
}

// CHECK-LABEL: func.func @binary_broadcast_both_ways(
//  CHECK-NEXT:   %0 = octet.add %arg0, %arg1 : tensor<?x1x1x?xi64>, tensor<?x12x?x1xi64>
//  CHECK-NEXT:   %1 = octet.mul %arg2, %arg0 : tensor<i64>, tensor<?x1x1x?xi64>
//  CHECK-NEXT:   return %0, %1 : tensor<?x12x?x?xi64>, tensor<?x1x1x?xi64>
func.func @binary_broadcast_both_ways(%arg0: tensor<?x1x1x?xi64>, %arg1: tensor<?x12x?x1xi64>, %arg2: tensor<i64>) -> (tensor<?x12x?x?xi64>, tensor<?x1x1x?xi64>) {
  %0 = octet.add %arg0, %arg1 : tensor<?x1x1x?xi64>, tensor<?x12x?x1xi64>
  %1 = octet.mul %arg2, %arg0 : tensor<i64>, tensor<?x1x1x?xi64>
  return %0, %1 : tensor<?x12x?x?xi64>, tensor<?x1x1x?xi64>
}

// CHECK-LABEL: func.func @comparisons(
//  CHECK-NEXT:   %0 = octet.equal %arg0, %arg1 : tensor<?x?xi64>, tensor<i64>
//  CHECK-NEXT:   %1 = octet.less %arg0, %arg1 : tensor<?x?xi64>, tensor<i64>
//  CHECK-NEXT:   %2 = octet.greater %arg0, %arg1 : tensor<?x?xi64>, tensor<i64>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<?x?xi1>, tensor<?x?xi1>, tensor<?x?xi1>
func.func @comparisons(%arg0: tensor<?x?xi64>, %arg1: tensor<i64>) -> (tensor<?x?xi1>, tensor<?x?xi1>, tensor<?x?xi1>) {
  %0 = octet.equal %arg0, %arg1 : tensor<?x?xi64>, tensor<i64>
  %1 = octet.less %arg0, %arg1 : tensor<?x?xi64>, tensor<i64>
  %2 = octet.greater %arg0, %arg1 : tensor<?x?xi64>, tensor<i64>
  return %0, %1, %2 : tensor<?x?xi1>, tensor<?x?xi1>, tensor<?x?xi1>
}

// CHECK-LABEL: func.func @logic(
//  CHECK-NEXT:   %0 = octet.and %arg0, %arg1 : tensor<2x3xi1>, tensor<3xi1>
//  CHECK-NEXT:   %1 = octet.or %arg0, %arg1 : tensor<2x3xi1>, tensor<3xi1>
//  CHECK-NEXT:   %2 = octet.not %1 : tensor<2x3xi1>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>
func.func @logic(%arg0: tensor<2x3xi1>, %arg1: tensor<3xi1>) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>) {
  %0 = octet.and %arg0, %arg1 : tensor<2x3xi1>, tensor<3xi1>
  %1 = octet.or %arg0, %arg1 : tensor<2x3xi1>, tensor<3xi1>
  %2 = octet.not %1 : tensor<2x3xi1>
  return %0, %1, %2 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @unary(
//  CHECK-NEXT:   %0 = octet.neg %arg0 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %1 = octet.abs %0 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %2 = octet.exp %1 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %3 = octet.log %2 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %4 = octet.erf %3 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %5 = octet.tanh %4 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %6 = octet.sqrt %5 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %7 = octet.rsqrt %6 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %8 = octet.reciprocal %7 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %9 = octet.relu %8 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %10 = octet.sigmoid %9 : tensor<?x?x768xf32>
//  CHECK-NEXT:   %11 = octet.neg %arg1 : tensor<?xi64>
//  CHECK-NEXT:   %12 = octet.abs %11 : tensor<?xi64>
//  CHECK-NEXT:   return %10, %12 : tensor<?x?x768xf32>, tensor<?xi64>
func.func @unary(%arg0: tensor<?x?x768xf32>, %arg1: tensor<?xi64>) -> (tensor<?x?x768xf32>, tensor<?xi64>) {
  %0 = octet.neg %arg0 : tensor<?x?x768xf32>
  %1 = octet.abs %0 : tensor<?x?x768xf32>
  %2 = octet.exp %1 : tensor<?x?x768xf32>
  %3 = octet.log %2 : tensor<?x?x768xf32>
  %4 = octet.erf %3 : tensor<?x?x768xf32>
  %5 = octet.tanh %4 : tensor<?x?x768xf32>
  %6 = octet.sqrt %5 : tensor<?x?x768xf32>
  %7 = octet.rsqrt %6 : tensor<?x?x768xf32>
  %8 = octet.reciprocal %7 : tensor<?x?x768xf32>
  %9 = octet.relu %8 : tensor<?x?x768xf32>
  %10 = octet.sigmoid %9 : tensor<?x?x768xf32>
  %11 = octet.neg %arg1 : tensor<?xi64>
  %12 = octet.abs %11 : tensor<?xi64>
  return %10, %12 : tensor<?x?x768xf32>, tensor<?xi64>
}

// CHECK-LABEL: func.func @cast(
//  CHECK-NEXT:   %0 = octet.cast %arg0 : tensor<?x?xi64> to tensor<?x?xf32>
//  CHECK-NEXT:   %1 = octet.cast %0 : tensor<?x?xf32> to tensor<?x?xi1>
//  CHECK-NEXT:   return %0, %1 : tensor<?x?xf32>, tensor<?x?xi1>
func.func @cast(%arg0: tensor<?x?xi64>) -> (tensor<?x?xf32>, tensor<?x?xi1>) {
  %0 = octet.cast %arg0 : tensor<?x?xi64> to tensor<?x?xf32>
  %1 = octet.cast %0 : tensor<?x?xf32> to tensor<?x?xi1>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xi1>
}

// CHECK-LABEL: func.func @where(
//  CHECK-NEXT:   %0 = octet.where %arg0, %arg1, %arg2 : tensor<?x1x1x?xi1>, tensor<f32>, tensor<?x12x?x?xf32>
//  CHECK-NEXT:   return %0 : tensor<?x12x?x?xf32>
func.func @where(%arg0: tensor<?x1x1x?xi1>, %arg1: tensor<f32>, %arg2: tensor<?x12x?x?xf32>) -> tensor<?x12x?x?xf32> {
  %0 = octet.where %arg0, %arg1, %arg2 : tensor<?x1x1x?xi1>, tensor<f32>, tensor<?x12x?x?xf32>
  return %0 : tensor<?x12x?x?xf32>
}
