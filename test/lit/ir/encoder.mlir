// Round trip of the recognized encoder blocks: softmax, layer_norm and
// add_layer_norm (with and without beta), gelu (default and tanh), attention
// (with and without mask).
// The second RUN line goes through the generic form, so the custom format must
// carry every operand and attribute.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @softmax(
//  CHECK-NEXT:   %0 = octet.softmax %arg0 axis = 3 : tensor<?x12x?x?xf32>
//  CHECK-NEXT:   return %0 : tensor<?x12x?x?xf32>
func.func @softmax(%arg0: tensor<?x12x?x?xf32>) -> tensor<?x12x?x?xf32> {
  %0 = octet.softmax %arg0 axis = 3 : tensor<?x12x?x?xf32>
  return %0 : tensor<?x12x?x?xf32>
}

// CHECK-LABEL: func.func @layer_norm(
//  CHECK-NEXT:   %0 = octet.layer_norm %arg0, %arg1, %arg2 axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %1 = octet.layer_norm %arg0, %arg1 axis = 2 epsilon = 9.99999974E-6 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %2 = octet.layer_norm %arg0, %arg3 axis = 1 epsilon = 9.99999974E-6 : tensor<?x?x768xf32>, tensor<?x768xf32>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>
func.func @layer_norm(%arg0: tensor<?x?x768xf32>, %arg1: tensor<768xf32>, %arg2: tensor<768xf32>, %arg3: tensor<?x768xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
  %0 = octet.layer_norm %arg0, %arg1, %arg2 axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
  %1 = octet.layer_norm %arg0, %arg1 axis = 2 epsilon = 9.99999974E-6 : tensor<?x?x768xf32>, tensor<768xf32>
  %2 = octet.layer_norm %arg0, %arg3 axis = 1 epsilon = 9.99999974E-6 : tensor<?x?x768xf32>, tensor<?x768xf32>
  return %0, %1, %2 : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>
}

// CHECK-LABEL: func.func @add_layer_norm(
//  CHECK-NEXT:   %0 = octet.add_layer_norm %arg0, %arg1, %arg2, %arg3 axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
//  CHECK-NEXT:   %1 = octet.add_layer_norm %arg0, %arg1, %arg2 axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x768xf32>, tensor<768xf32>
//  CHECK-NEXT:   return %0, %1 : tensor<?x?x768xf32>, tensor<?x?x768xf32>
func.func @add_layer_norm(%arg0: tensor<?x?x768xf32>, %arg1: tensor<?x?x768xf32>, %arg2: tensor<768xf32>, %arg3: tensor<768xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
  %0 = octet.add_layer_norm %arg0, %arg1, %arg2, %arg3 axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
  %1 = octet.add_layer_norm %arg0, %arg1, %arg2 axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x768xf32>, tensor<768xf32>
  return %0, %1 : tensor<?x?x768xf32>, tensor<?x?x768xf32>
}

// CHECK-LABEL: func.func @gelu(
//  CHECK-NEXT:   %0 = octet.gelu %arg0 : tensor<?x?x3072xf32>
//  CHECK-NEXT:   %1 = octet.gelu %arg0 approximate = "tanh" : tensor<?x?x3072xf32>
//  CHECK-NEXT:   return %0, %1 : tensor<?x?x3072xf32>, tensor<?x?x3072xf32>
func.func @gelu(%arg0: tensor<?x?x3072xf32>) -> (tensor<?x?x3072xf32>, tensor<?x?x3072xf32>) {
  %0 = octet.gelu %arg0 : tensor<?x?x3072xf32>
  %1 = octet.gelu %arg0 approximate = "tanh" : tensor<?x?x3072xf32>
  return %0, %1 : tensor<?x?x3072xf32>, tensor<?x?x3072xf32>
}

// CHECK-LABEL: func.func @attention(
//  CHECK-NEXT:   %0 = octet.attention %arg0, %arg1, %arg2, %arg3 num_heads = 12 scale = 1.250000e-01 : tensor<?x?x768xf32>, tensor<?x1x1x?xf32>
//  CHECK-NEXT:   %1 = octet.attention %arg0, %arg1, %arg2 num_heads = 12 scale = 1.250000e-01 : tensor<?x?x768xf32>
//  CHECK-NEXT:   return %0, %1 : tensor<?x?x768xf32>, tensor<?x?x768xf32>
func.func @attention(%arg0: tensor<?x?x768xf32>, %arg1: tensor<?x?x768xf32>, %arg2: tensor<?x?x768xf32>, %arg3: tensor<?x1x1x?xf32>) -> (tensor<?x?x768xf32>, tensor<?x?x768xf32>) {
  %0 = octet.attention %arg0, %arg1, %arg2, %arg3 num_heads = 12 scale = 1.250000e-01 : tensor<?x?x768xf32>, tensor<?x1x1x?xf32>
  %1 = octet.attention %arg0, %arg1, %arg2 num_heads = 12 scale = 1.250000e-01 : tensor<?x?x768xf32>
  return %0, %1 : tensor<?x?x768xf32>, tensor<?x?x768xf32>
}
