// Round trip of the quantization ops: quantize/dequantize per-tensor and per-axis,
// with and without zero point; dynamic_quantize's three results; matmul_integer
// with and without zero points.
// The second RUN line goes through the generic form, so the custom format must
// carry every operand and attribute.
// RUN: octet-opt %s | octet-opt | FileCheck %s
// RUN: octet-opt %s -mlir-print-op-generic | octet-opt | FileCheck %s

// CHECK-LABEL: func.func @quantize(
//  CHECK-NEXT:   %0 = octet.quantize %arg0, %arg1, %arg2 : tensor<?x?x768xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x768xui8>
//  CHECK-NEXT:   %1 = octet.quantize %arg0, %arg1 : tensor<?x?x768xf32>, tensor<f32> -> tensor<?x?x768xi8>
//  CHECK-NEXT:   %2 = octet.quantize %arg3, %arg4 axis = 1 : tensor<768x768xf32>, tensor<768xf32> -> tensor<768x768xi8>
//  CHECK-NEXT:   %3 = octet.quantize %arg3, %arg4, %arg5 axis = 0 : tensor<768x768xf32>, tensor<768xf32>, tensor<768xi8> -> tensor<768x768xi8>
//  CHECK-NEXT:   return %0, %1, %2, %3 : tensor<?x?x768xui8>, tensor<?x?x768xi8>, tensor<768x768xi8>, tensor<768x768xi8>
func.func @quantize(%arg0: tensor<?x?x768xf32>, %arg1: tensor<f32>, %arg2: tensor<ui8>, %arg3: tensor<768x768xf32>, %arg4: tensor<768xf32>, %arg5: tensor<768xi8>) -> (tensor<?x?x768xui8>, tensor<?x?x768xi8>, tensor<768x768xi8>, tensor<768x768xi8>) {
  %0 = octet.quantize %arg0, %arg1, %arg2 : tensor<?x?x768xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x768xui8>
  %1 = octet.quantize %arg0, %arg1 : tensor<?x?x768xf32>, tensor<f32> -> tensor<?x?x768xi8>
  %2 = octet.quantize %arg3, %arg4 axis = 1 : tensor<768x768xf32>, tensor<768xf32> -> tensor<768x768xi8>
  %3 = octet.quantize %arg3, %arg4, %arg5 axis = 0 : tensor<768x768xf32>, tensor<768xf32>, tensor<768xi8> -> tensor<768x768xi8>
  return %0, %1, %2, %3 : tensor<?x?x768xui8>, tensor<?x?x768xi8>, tensor<768x768xi8>, tensor<768x768xi8>
}

// CHECK-LABEL: func.func @dequantize(
//  CHECK-NEXT:   %0 = octet.dequantize %arg0, %arg1, %arg2 : tensor<?x768xui8>, tensor<f32>, tensor<ui8> -> tensor<?x768xf32>
//  CHECK-NEXT:   %1 = octet.dequantize %arg3, %arg4 axis = 1 : tensor<?x768xi32>, tensor<768xf32> -> tensor<?x768xf32>
//  CHECK-NEXT:   %2 = octet.dequantize %arg5, %arg4 axis = 0 : tensor<768x768xi8>, tensor<768xf32> -> tensor<768x768xf32>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<?x768xf32>, tensor<?x768xf32>, tensor<768x768xf32>
func.func @dequantize(%arg0: tensor<?x768xui8>, %arg1: tensor<f32>, %arg2: tensor<ui8>, %arg3: tensor<?x768xi32>, %arg4: tensor<768xf32>, %arg5: tensor<768x768xi8>) -> (tensor<?x768xf32>, tensor<?x768xf32>, tensor<768x768xf32>) {
  %0 = octet.dequantize %arg0, %arg1, %arg2 : tensor<?x768xui8>, tensor<f32>, tensor<ui8> -> tensor<?x768xf32>
  %1 = octet.dequantize %arg3, %arg4 axis = 1 : tensor<?x768xi32>, tensor<768xf32> -> tensor<?x768xf32>
  %2 = octet.dequantize %arg5, %arg4 axis = 0 : tensor<768x768xi8>, tensor<768xf32> -> tensor<768x768xf32>
  return %0, %1, %2 : tensor<?x768xf32>, tensor<?x768xf32>, tensor<768x768xf32>
}

// CHECK-LABEL: func.func @dynamic_quantize(
//  CHECK-NEXT:   %result, %scale, %zero_point = octet.dynamic_quantize %arg0 : tensor<?x768xf32>
//  CHECK-NEXT:   return %result, %scale, %zero_point : tensor<?x768xui8>, tensor<f32>, tensor<ui8>
func.func @dynamic_quantize(%arg0: tensor<?x768xf32>) -> (tensor<?x768xui8>, tensor<f32>, tensor<ui8>) {
  %result, %scale, %zero_point = octet.dynamic_quantize %arg0 : tensor<?x768xf32>
  return %result, %scale, %zero_point : tensor<?x768xui8>, tensor<f32>, tensor<ui8>
}

// CHECK-LABEL: func.func @matmul_integer(
//  CHECK-NEXT:   %0 = octet.matmul_integer %arg0, %arg1 zero_points(%arg2, %arg3) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<i8>) -> tensor<?x768xi32>
//  CHECK-NEXT:   %1 = octet.matmul_integer %arg0, %arg1 : (tensor<?x768xui8>, tensor<768x768xi8>) -> tensor<?x768xi32>
//  CHECK-NEXT:   %2 = octet.matmul_integer %arg0, %arg1 zero_points(%arg2, %arg4) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<768xi8>) -> tensor<?x768xi32>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<?x768xi32>, tensor<?x768xi32>, tensor<?x768xi32>
func.func @matmul_integer(%arg0: tensor<?x768xui8>, %arg1: tensor<768x768xi8>, %arg2: tensor<ui8>, %arg3: tensor<i8>, %arg4: tensor<768xi8>) -> (tensor<?x768xi32>, tensor<?x768xi32>, tensor<?x768xi32>) {
  %0 = octet.matmul_integer %arg0, %arg1 zero_points(%arg2, %arg3) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<i8>) -> tensor<?x768xi32>
  %1 = octet.matmul_integer %arg0, %arg1 : (tensor<?x768xui8>, tensor<768x768xi8>) -> tensor<?x768xi32>
  %2 = octet.matmul_integer %arg0, %arg1 zero_points(%arg2, %arg4) : (tensor<?x768xui8>, tensor<768x768xi8>, tensor<ui8>, tensor<768xi8>) -> tensor<?x768xi32>
  return %0, %1, %2 : tensor<?x768xi32>, tensor<?x768xi32>, tensor<?x768xi32>
}
