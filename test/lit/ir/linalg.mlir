// Round trip of matmul, linear (with and without bias, [K, N] and transposed
// [N, K] weights), the reductions (with and
// without keepdims) and cumsum (exclusive / reverse).
// The second RUN line goes through the generic form, so the custom format must
// carry every operand and attribute.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @matmul(
//  CHECK-NEXT:   %0 = octet.matmul %arg0, %arg1 : tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>
//  CHECK-NEXT:   %1 = octet.matmul %arg0, %arg2 : tensor<?x12x?x64xf32>, tensor<64xf32>
//  CHECK-NEXT:   %2 = octet.matmul %arg2, %arg3 : tensor<64xf32>, tensor<64x32xf32>
//  CHECK-NEXT:   %3 = octet.matmul %arg4, %arg3 : tensor<5x?x64xf32>, tensor<64x32xf32>
//  CHECK-NEXT:   return %0, %1, %2, %3 : tensor<?x12x?x?xf32>, tensor<?x12x?xf32>, tensor<32xf32>, tensor<5x?x32xf32>
func.func @matmul(%arg0: tensor<?x12x?x64xf32>, %arg1: tensor<?x12x64x?xf32>, %arg2: tensor<64xf32>, %arg3: tensor<64x32xf32>, %arg4: tensor<5x?x64xf32>) -> (tensor<?x12x?x?xf32>, tensor<?x12x?xf32>, tensor<32xf32>, tensor<5x?x32xf32>) {
  %0 = octet.matmul %arg0, %arg1 : tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>
  %1 = octet.matmul %arg0, %arg2 : tensor<?x12x?x64xf32>, tensor<64xf32>
  %2 = octet.matmul %arg2, %arg3 : tensor<64xf32>, tensor<64x32xf32>
  %3 = octet.matmul %arg4, %arg3 : tensor<5x?x64xf32>, tensor<64x32xf32>
  return %0, %1, %2, %3 : tensor<?x12x?x?xf32>, tensor<?x12x?xf32>, tensor<32xf32>, tensor<5x?x32xf32>
}

// CHECK-LABEL: func.func @linear(
//  CHECK-NEXT:   %0 = octet.linear %arg0, %arg1, %arg2 : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>
//  CHECK-NEXT:   %1 = octet.linear %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768x3072xf32>
//  CHECK-NEXT:   %2 = octet.linear %arg0, %arg3, %arg2 transpose_weight : tensor<?x?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>
//  CHECK-NEXT:   %3 = octet.linear %arg0, %arg3 transpose_weight : tensor<?x?x768xf32>, tensor<3072x768xf32>
//  CHECK-NEXT:   return %0, %1, %2, %3 : tensor<?x?x3072xf32>, tensor<?x?x3072xf32>, tensor<?x?x3072xf32>, tensor<?x?x3072xf32>
func.func @linear(%arg0: tensor<?x?x768xf32>, %arg1: tensor<768x3072xf32>, %arg2: tensor<3072xf32>, %arg3: tensor<3072x768xf32>) -> (tensor<?x?x3072xf32>, tensor<?x?x3072xf32>, tensor<?x?x3072xf32>, tensor<?x?x3072xf32>) {
  %0 = octet.linear %arg0, %arg1, %arg2 : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>
  %1 = octet.linear %arg0, %arg1 : tensor<?x?x768xf32>, tensor<768x3072xf32>
  %2 = octet.linear %arg0, %arg3, %arg2 transpose_weight : tensor<?x?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>
  %3 = octet.linear %arg0, %arg3 transpose_weight : tensor<?x?x768xf32>, tensor<3072x768xf32>
  return %0, %1, %2, %3 : tensor<?x?x3072xf32>, tensor<?x?x3072xf32>, tensor<?x?x3072xf32>, tensor<?x?x3072xf32>
}

// CHECK-LABEL: func.func @reduce(
//  CHECK-NEXT:   %0 = octet.reduce_mean %arg0 axes = [2] keepdims : tensor<?x?x768xf32>
//  CHECK-NEXT:   %1 = octet.reduce_sum %arg0 axes = [2] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %2 = octet.reduce_max %arg0 axes = [1, 2] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %3 = octet.reduce_min %arg0 axes = [0, 1] keepdims : tensor<?x?x768xf32>
//  CHECK-NEXT:   return %0, %1, %2, %3 : tensor<?x?x1xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<1x1x768xf32>
func.func @reduce(%arg0: tensor<?x?x768xf32>) -> (tensor<?x?x1xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<1x1x768xf32>) {
  %0 = octet.reduce_mean %arg0 axes = [2] keepdims : tensor<?x?x768xf32>
  %1 = octet.reduce_sum %arg0 axes = [2] : tensor<?x?x768xf32>
  %2 = octet.reduce_max %arg0 axes = [1, 2] : tensor<?x?x768xf32>
  %3 = octet.reduce_min %arg0 axes = [0, 1] keepdims : tensor<?x?x768xf32>
  return %0, %1, %2, %3 : tensor<?x?x1xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<1x1x768xf32>
}

// CHECK-LABEL: func.func @cumsum(
//  CHECK-NEXT:   %0 = octet.cumsum %arg0 axis = 1 : tensor<?x?xi32>
//  CHECK-NEXT:   %1 = octet.cumsum %arg0 axis = 1 exclusive : tensor<?x?xi32>
//  CHECK-NEXT:   %2 = octet.cumsum %arg0 axis = 0 reverse : tensor<?x?xi32>
//  CHECK-NEXT:   %3 = octet.cumsum %arg0 axis = 1 exclusive reverse : tensor<?x?xi32>
//  CHECK-NEXT:   return %0, %1, %2, %3 : tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>
func.func @cumsum(%arg0: tensor<?x?xi32>) -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>) {
  %0 = octet.cumsum %arg0 axis = 1 : tensor<?x?xi32>
  %1 = octet.cumsum %arg0 axis = 1 exclusive : tensor<?x?xi32>
  %2 = octet.cumsum %arg0 axis = 0 reverse : tensor<?x?xi32>
  %3 = octet.cumsum %arg0 axis = 1 exclusive reverse : tensor<?x?xi32>
  return %0, %1, %2, %3 : tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>
}
