// RUN: octet-opt %s -octet-smoothquant -split-input-file -verify-diagnostics | FileCheck %s

// Post-LN BERT: a LayerNorm's result that is also read unscaled (the next
// residual, an extra operand, an uncalibrated linear) is smoothed through a
// copy of the LayerNorm that feeds only the calibrated linears. α = 0.5,
// max|X| = [4, 1], max|W| = [1, 1]: s = [2, 1]; the copy's γ = [2, 4] / s.

// CHECK-LABEL: func.func @residual_use(
//   CHECK-DAG:   %[[G:.*]] = octet.constant dense<[2.000000e+00, 4.000000e+00]> : tensor<2xf32>
//   CHECK-DAG:   %[[GS:.*]] = octet.constant dense<[1.000000e+00, 4.000000e+00]> : tensor<2xf32>
//   CHECK-DAG:   %[[W:.*]] = octet.constant dense<{{\[}}[2.000000e+00, 2.000000e+00], [1.000000e+00, 1.000000e+00]]> : tensor<2x2xf32>
//       CHECK:   %[[LN:.*]] = octet.layer_norm %{{.*}}, %[[G]] axis = 1
//       CHECK:   %[[COPY:.*]] = octet.layer_norm %{{.*}}, %[[GS]] axis = 1
//       CHECK:   %[[H:.*]] = octet.linear %[[COPY]], %[[W]] {octet.calib = {input_absmax = dense<[2.000000e+00, 1.000000e+00]> : tensor<2xf32>}, octet.smoothquant = {alpha = 5.000000e-01 : f32}}
//       CHECK:   octet.add_layer_norm %[[H]], %[[LN]], %[[G]]
func.func @residual_use(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %h = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  %y = octet.add_layer_norm %h, %ln, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// add_layer_norm (the residual LayerNorm of BERT) is copied the same way,
// β included; the uncalibrated sibling keeps reading the original.
// CHECK-LABEL: func.func @uncalibrated_sibling(
//   CHECK-DAG:   %[[GS:.*]] = octet.constant dense<[1.000000e+00, 4.000000e+00]> : tensor<2xf32>
//   CHECK-DAG:   %[[BS:.*]] = octet.constant dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>
//       CHECK:   %[[LN:.*]] = octet.add_layer_norm %arg0, %arg1, %{{.*}}, %{{.*}} axis = 1
//       CHECK:   %[[COPY:.*]] = octet.add_layer_norm %arg0, %arg1, %[[GS]], %[[BS]] axis = 1
//       CHECK:   octet.linear %[[COPY]], %{{.*}} {octet.calib
//       CHECK:   octet.linear %[[LN]], %{{.*}} :
func.func @uncalibrated_sibling(%x: tensor<?x2xf32>, %r: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %b = octet.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.add_layer_norm %x, %r, %g, %b axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>, tensor<2xf32>
  %a = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  %c = octet.linear %ln, %w : tensor<?x2xf32>, tensor<2x2xf32>
  return %a, %c : tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// Negative: another use of X that is not a LayerNorm's result still skips
// (only a LayerNorm is cheap to recompute).
// CHECK-LABEL: func.func @linear_producer_other_use(
//   CHECK-NOT:   octet.smoothquant
func.func @linear_producer_other_use(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %p = octet.linear %x, %w : tensor<?x2xf32>, tensor<2x2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: its input also feeds 'func.return', which needs it unscaled}}
  %h = octet.linear %p, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %h, %p : tensor<?x2xf32>, tensor<?x2xf32>
}
