// Round trip of constants, shape ops and data movement: dim, from_elements, range,
// reshape/expand (with and without run-time dims), transpose, concat, slice
// (static and run-time bounds) and gather.
// The second RUN line goes through the generic form, so the custom format must
// carry every operand and attribute.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @constants(
//  CHECK-NEXT:   %0 = octet.constant dense<9.99999996E-13> : tensor<f32>
//  CHECK-NEXT:   %1 = octet.constant dense<{{\[\[}}1, 2], [3, 4{{\]\]}}> : tensor<2x2xi64>
//  CHECK-NEXT:   %2 = octet.constant dense<[true, false, true]> : tensor<3xi1>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<f32>, tensor<2x2xi64>, tensor<3xi1>
func.func @constants() -> (tensor<f32>, tensor<2x2xi64>, tensor<3xi1>) {
  %0 = octet.constant dense<9.99999996E-13> : tensor<f32>
  %1 = octet.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %2 = octet.constant dense<[true, false, true]> : tensor<3xi1>
  return %0, %1, %2 : tensor<f32>, tensor<2x2xi64>, tensor<3xi1>
}

// CHECK-LABEL: func.func @dim_from_elements_range(
//  CHECK-NEXT:   %c0 = arith.constant 0 : index
//  CHECK-NEXT:   %c1 = arith.constant 1 : index
//  CHECK-NEXT:   %0 = octet.dim %arg0[1] : tensor<?x?xi64>
//  CHECK-NEXT:   %1 = octet.from_elements %arg1, %0 : tensor<2xi64>
//  CHECK-NEXT:   %2 = octet.from_elements %0, %0 : tensor<2xi32>
//  CHECK-NEXT:   %3 = octet.range %c0, %0, %c1 : tensor<?xi64>
//  CHECK-NEXT:   %4 = octet.range %c0, %arg1, %c1 : tensor<?xf32>
//  CHECK-NEXT:   return %1, %2, %3, %4 : tensor<2xi64>, tensor<2xi32>, tensor<?xi64>, tensor<?xf32>
func.func @dim_from_elements_range(%arg0: tensor<?x?xi64>, %arg1: index) -> (tensor<2xi64>, tensor<2xi32>, tensor<?xi64>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %0 = octet.dim %arg0[1] : tensor<?x?xi64>
  %1 = octet.from_elements %arg1, %0 : tensor<2xi64>
  %2 = octet.from_elements %0, %0 : tensor<2xi32>
  %3 = octet.range %c0, %0, %c1 : tensor<?xi64>
  %4 = octet.range %c0, %arg1, %c1 : tensor<?xf32>
  return %1, %2, %3, %4 : tensor<2xi64>, tensor<2xi32>, tensor<?xi64>, tensor<?xf32>
}

// CHECK-LABEL: func.func @reshape(
//  CHECK-NEXT:   %0 = octet.reshape %arg0(%arg1, %arg2) : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
//  CHECK-NEXT:   %1 = octet.reshape %arg3 : tensor<2x3xf32> -> tensor<6xf32>
//  CHECK-NEXT:   %2 = octet.reshape %arg0(%arg1) : tensor<?x?x768xf32> -> tensor<?x768xf32>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<?x?x12x64xf32>, tensor<6xf32>, tensor<?x768xf32>
func.func @reshape(%arg0: tensor<?x?x768xf32>, %arg1: index, %arg2: index, %arg3: tensor<2x3xf32>) -> (tensor<?x?x12x64xf32>, tensor<6xf32>, tensor<?x768xf32>) {
  %0 = octet.reshape %arg0(%arg1, %arg2) : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  %1 = octet.reshape %arg3 : tensor<2x3xf32> -> tensor<6xf32>
  %2 = octet.reshape %arg0(%arg1) : tensor<?x?x768xf32> -> tensor<?x768xf32>
  return %0, %1, %2 : tensor<?x?x12x64xf32>, tensor<6xf32>, tensor<?x768xf32>
}

// CHECK-LABEL: func.func @expand(
//  CHECK-NEXT:   %0 = octet.expand %arg0(%arg1, %arg2) : tensor<1x?xi64> -> tensor<?x?xi64>
//  CHECK-NEXT:   %1 = octet.expand %arg3 : tensor<1xf32> -> tensor<2x3xf32>
//  CHECK-NEXT:   return %0, %1 : tensor<?x?xi64>, tensor<2x3xf32>
func.func @expand(%arg0: tensor<1x?xi64>, %arg1: index, %arg2: index, %arg3: tensor<1xf32>) -> (tensor<?x?xi64>, tensor<2x3xf32>) {
  %0 = octet.expand %arg0(%arg1, %arg2) : tensor<1x?xi64> -> tensor<?x?xi64>
  %1 = octet.expand %arg3 : tensor<1xf32> -> tensor<2x3xf32>
  return %0, %1 : tensor<?x?xi64>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @transpose(
//  CHECK-NEXT:   %0 = octet.transpose %arg0 permutation = [0, 2, 1, 3] : tensor<?x?x12x64xf32>
//  CHECK-NEXT:   return %0 : tensor<?x12x?x64xf32>
func.func @transpose(%arg0: tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32> {
  %0 = octet.transpose %arg0 permutation = [0, 2, 1, 3] : tensor<?x?x12x64xf32>
  return %0 : tensor<?x12x?x64xf32>
}

// CHECK-LABEL: func.func @concat(
//  CHECK-NEXT:   %0 = octet.concat %arg0, %arg1 axis = 1 : tensor<?x4xf32>, tensor<?x2xf32>
//  CHECK-NEXT:   %1 = octet.concat %arg2, %arg0 axis = 1 : tensor<3x?xf32>, tensor<?x4xf32>
//  CHECK-NEXT:   %2 = octet.concat %arg0 axis = 0 : tensor<?x4xf32>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<?x6xf32>, tensor<3x?xf32>, tensor<?x4xf32>
func.func @concat(%arg0: tensor<?x4xf32>, %arg1: tensor<?x2xf32>, %arg2: tensor<3x?xf32>) -> (tensor<?x6xf32>, tensor<3x?xf32>, tensor<?x4xf32>) {
  %0 = octet.concat %arg0, %arg1 axis = 1 : tensor<?x4xf32>, tensor<?x2xf32>
  %1 = octet.concat %arg2, %arg0 axis = 1 : tensor<3x?xf32>, tensor<?x4xf32>
  %2 = octet.concat %arg0 axis = 0 : tensor<?x4xf32>
  return %0, %1, %2 : tensor<?x6xf32>, tensor<3x?xf32>, tensor<?x4xf32>
}

// CHECK-LABEL: func.func @slice(
//  CHECK-NEXT:   %0 = octet.slice %arg0 axes = [1] starts = [0] ends = [%arg1] steps = [1] : tensor<1x512xi64> -> tensor<1x?xi64>
//  CHECK-NEXT:   %1 = octet.slice %arg0 axes = [1] starts = [0] ends = [128] steps = [1] : tensor<1x512xi64> -> tensor<1x128xi64>
//  CHECK-NEXT:   %2 = octet.slice %arg3 axes = [1, 2] starts = [%arg1, 384] ends = [%arg2, 9223372036854775807] steps = [1, 1] : tensor<?x?x768xf32> -> tensor<?x?x384xf32>
//  CHECK-NEXT:   %3 = octet.slice %arg0 axes = [1] starts = [-1] ends = [-9223372036854775807] steps = [-2] : tensor<1x512xi64> -> tensor<1x256xi64>
//  CHECK-NEXT:   return %0, %1, %2, %3 : tensor<1x?xi64>, tensor<1x128xi64>, tensor<?x?x384xf32>, tensor<1x256xi64>
func.func @slice(%arg0: tensor<1x512xi64>, %arg1: index, %arg2: index, %arg3: tensor<?x?x768xf32>) -> (tensor<1x?xi64>, tensor<1x128xi64>, tensor<?x?x384xf32>, tensor<1x256xi64>) {
  %0 = octet.slice %arg0 axes = [1] starts = [0] ends = [%arg1] steps = [1] : tensor<1x512xi64> -> tensor<1x?xi64>
  %1 = octet.slice %arg0 axes = [1] starts = [0] ends = [128] steps = [1] : tensor<1x512xi64> -> tensor<1x128xi64>
  %2 = octet.slice %arg3 axes = [1, 2] starts = [%arg1, 384] ends = [%arg2, 9223372036854775807] steps = [1, 1] : tensor<?x?x768xf32> -> tensor<?x?x384xf32>
  %3 = octet.slice %arg0 axes = [1] starts = [-1] ends = [-9223372036854775807] steps = [-2] : tensor<1x512xi64> -> tensor<1x256xi64>
  return %0, %1, %2, %3 : tensor<1x?xi64>, tensor<1x128xi64>, tensor<?x?x384xf32>, tensor<1x256xi64>
}

// CHECK-LABEL: func.func @gather(
//  CHECK-NEXT:   %0 = octet.gather %arg0, %arg1 axis = 0 : tensor<30522x768xf32>, tensor<?x?xi64>
//  CHECK-NEXT:   %1 = octet.gather %arg2, %arg3 axis = 1 : tensor<?x?x768xf32>, tensor<i32>
//  CHECK-NEXT:   return %0, %1 : tensor<?x?x768xf32>, tensor<?x768xf32>
func.func @gather(%arg0: tensor<30522x768xf32>, %arg1: tensor<?x?xi64>, %arg2: tensor<?x?x768xf32>, %arg3: tensor<i32>) -> (tensor<?x?x768xf32>, tensor<?x768xf32>) {
  %0 = octet.gather %arg0, %arg1 axis = 0 : tensor<30522x768xf32>, tensor<?x?xi64>
  %1 = octet.gather %arg2, %arg3 axis = 1 : tensor<?x?x768xf32>, tensor<i32>
  return %0, %1 : tensor<?x?x768xf32>, tensor<?x768xf32>
}
