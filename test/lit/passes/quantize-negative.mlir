// What octet-quantize leaves FP32, with a remark saying why
// (quantize-errors.mlir: what is an error).
// RUN: octet-opt %s -octet-quantize -split-input-file -verify-diagnostics | FileCheck %s

// Static mode without octet.calib: no range for X.
// CHECK-LABEL: func.func @no_calibration(
//   CHECK-NOT:   octet.quantize
//       CHECK:   octet.linear
//   CHECK-NOT:   octet.qlinear
func.func @no_calibration(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // expected-remark @below {{octet-quantize: stays FP32: octet.calib is missing: static mode needs its input's calibrated range}}
  %y = octet.linear %x, %w : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Calibration without a per-tensor range.
// CHECK-LABEL: func.func @no_range(
//   CHECK-NOT:   octet.qlinear
func.func @no_range(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // expected-remark @below {{octet-quantize: stays FP32: octet.calib has no input_min / input_max: static mode needs its input's range}}
  %y = octet.linear %x, %w {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// The weight is an activation (a function argument), not a constant.
// CHECK-LABEL: func.func @weight_not_constant(
//       CHECK:   octet.linear %arg0, %arg1
//   CHECK-NOT:   octet.qlinear
func.func @weight_not_constant(%x: tensor<?x2xf32>, %w: tensor<2x2xf32>) -> tensor<?x2xf32> {
  // expected-remark @below {{octet-quantize: stays FP32: its weight is not a constant f32 2-D tensor}}
  %y = octet.linear %x, %w {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// A non-finite weight has no per-channel scale.
// CHECK-LABEL: func.func @weight_not_finite(
//   CHECK-NOT:   octet.qlinear
func.func @weight_not_finite(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 0x7F800000], [3.0, 4.0]]> : tensor<2x2xf32>
  // expected-remark @below {{octet-quantize: stays FP32: its weight holds a non-finite value}}
  %y = octet.linear %x, %w {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Of two linears reading X, the calibrated one is quantized, the other
// stays FP32 and reads X itself.
// CHECK-LABEL: func.func @one_of_two(
//       CHECK:   %[[Q:.*]] = octet.quantize %arg0
//       CHECK:   octet.qlinear %[[Q]]
//       CHECK:   octet.linear %arg0
func.func @one_of_two(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %y1 = octet.linear %x, %w {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  // expected-remark @below {{octet-quantize: stays FP32: octet.calib is missing}}
  %y2 = octet.linear %x, %w : tensor<?x2xf32>, tensor<2x2xf32>
  return %y1, %y2 : tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// No requantize when the result has another use (here: returned).
// CHECK-LABEL: func.func @no_requantize_two_uses(
//       CHECK:   %[[H:.*]] = octet.qlinear
//       CHECK:   -> tensor<?x2xf32>
//       CHECK:   octet.quantize %[[H]]
//       CHECK:   return %[[H]]
func.func @no_requantize_two_uses(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %h = octet.linear %x, %w {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  %y = octet.linear %h, %w {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %h, %y : tensor<?x2xf32>, tensor<?x2xf32>
}
