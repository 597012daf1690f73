// GEMMs that octet-eliminate-qdq leaves alone, one reason each.
// RUN: octet-opt %s -octet-eliminate-qdq -split-input-file | FileCheck %s

// Activation × activation (attention's scores): the "weight" is not a constant.
// CHECK-LABEL: func.func @weight_not_constant(
//       CHECK:   octet.matmul
//   CHECK-NOT:   octet.qlinear
func.func @weight_not_constant(%aq: tensor<?x2xui8>, %bq: tensor<2x3xi8>) -> tensor<?x3xf32> {
  %s = octet.constant dense<0.05> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %a = octet.dequantize %aq, %s, %zp : tensor<?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x2xf32>
  %b = octet.dequantize %bq, %s : tensor<2x3xi8>, tensor<f32> -> tensor<2x3xf32>
  %y = octet.matmul %a, %b : tensor<?x2xf32>, tensor<2x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A ui8 weight: the kernel multiplies u8 activations by s8 weights.
// CHECK-LABEL: func.func @weight_not_int8(
//       CHECK:   octet.matmul
//   CHECK-NOT:   octet.qlinear
func.func @weight_not_int8(%aq: tensor<?x2xui8>) -> tensor<?x3xf32> {
  %s = octet.constant dense<0.05> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %a = octet.dequantize %aq, %s, %zp : tensor<?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x2xf32>
  %wq = octet.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xui8>
  %w = octet.dequantize %wq, %s, %zp : tensor<2x3xui8>, tensor<f32>, tensor<ui8> -> tensor<2x3xf32>
  %y = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A weight zero point that is not 0: the qlinear weight is symmetric.
// CHECK-LABEL: func.func @weight_zero_point(
//       CHECK:   octet.matmul
//   CHECK-NOT:   octet.qlinear
func.func @weight_zero_point(%aq: tensor<?x2xui8>) -> tensor<?x3xf32> {
  %s = octet.constant dense<0.05> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %a = octet.dequantize %aq, %s, %zp : tensor<?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x2xf32>
  %wq = octet.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %ws = octet.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %wzp = octet.constant dense<[0, 1, 0]> : tensor<3xi8>
  %w = octet.dequantize %wq, %ws, %wzp axis = 1 : tensor<2x3xi8>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xf32>
  %y = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Per input channel (axis 0 of a [K, N] weight): not a scale of the accumulator.
// CHECK-LABEL: func.func @weight_scale_per_input_channel(
//       CHECK:   octet.matmul
//   CHECK-NOT:   octet.qlinear
func.func @weight_scale_per_input_channel(%aq: tensor<?x2xui8>) -> tensor<?x3xf32> {
  %s = octet.constant dense<0.05> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %a = octet.dequantize %aq, %s, %zp : tensor<?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x2xf32>
  %wq = octet.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %ws = octet.constant dense<[0.1, 0.2]> : tensor<2xf32>
  %w = octet.dequantize %wq, %ws axis = 0 : tensor<2x3xi8>, tensor<2xf32> -> tensor<2x3xf32>
  %y = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// The activation has no Q/DQ (a float the model never quantized): there is no
// scale to quantize it with.
// CHECK-LABEL: func.func @activation_not_quantized(
//       CHECK:   octet.matmul
//   CHECK-NOT:   octet.qlinear
func.func @activation_not_quantized(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  %wq = octet.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %ws = octet.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %w = octet.dequantize %wq, %ws axis = 1 : tensor<2x3xi8>, tensor<3xf32> -> tensor<2x3xf32>
  %y = octet.matmul %x, %w : tensor<?x2xf32>, tensor<2x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A signed (i8) activation: the kernel takes u8 activations.
// CHECK-LABEL: func.func @activation_int8(
//       CHECK:   octet.matmul
//   CHECK-NOT:   octet.qlinear
func.func @activation_int8(%aq: tensor<?x2xi8>) -> tensor<?x3xf32> {
  %s = octet.constant dense<0.05> : tensor<f32>
  %a = octet.dequantize %aq, %s : tensor<?x2xi8>, tensor<f32> -> tensor<?x2xf32>
  %wq = octet.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %ws = octet.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %w = octet.dequantize %wq, %ws axis = 1 : tensor<2x3xi8>, tensor<3xf32> -> tensor<2x3xf32>
  %y = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A quantize of the result that is not its only use stays outside (f32 result).
// CHECK-LABEL: func.func @result_used_twice(
//       CHECK:   %[[Y:.*]] = octet.qlinear
//       CHECK:   } : tensor<?x2xui8>, tensor<2x3xi8> -> tensor<?x3xf32>
//       CHECK:   octet.quantize %[[Y]]
//       CHECK:   return
func.func @result_used_twice(%aq: tensor<?x2xui8>) -> (tensor<?x3xf32>, tensor<?x3xui8>) {
  %s = octet.constant dense<0.05> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %a = octet.dequantize %aq, %s, %zp : tensor<?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x2xf32>
  %wq = octet.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %ws = octet.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %w = octet.dequantize %wq, %ws axis = 1 : tensor<2x3xi8>, tensor<3xf32> -> tensor<2x3xf32>
  %y = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x3xf32>
  %yq = octet.quantize %y, %s, %zp : tensor<?x3xf32>, tensor<f32>, tensor<ui8> -> tensor<?x3xui8>
  return %y, %yq : tensor<?x3xf32>, tensor<?x3xui8>
}
