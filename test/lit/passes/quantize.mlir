// RUN: octet-opt %s -octet-quantize -split-input-file | FileCheck %s
// RUN: octet-opt %s -octet-quantize=mode=dynamic -split-input-file | FileCheck %s --check-prefix=DYN

// Static mode, exact constants. X over [-1, 2]: scale 3/255, zero point
// round(1 / scale) = 85. W per output column: max 127 → scale 1 (2.5 → 2,
// -3.5 → -4: round half to even), a zero column → scale 1, max 254 → scale 2
// (5 / 2 = 2.5 → 2, 7 / 2 = 3.5 → 4).
// CHECK-LABEL: func.func @static_exact(
//  CHECK-NEXT:   %[[XS:.*]] = octet.constant dense<0.0117647061> : tensor<f32>
//  CHECK-NEXT:   %[[XZP:.*]] = octet.constant dense<85> : tensor<ui8>
//  CHECK-NEXT:   %[[Q:.*]] = octet.quantize %arg0, %[[XS]], %[[XZP]] : tensor<?x3xf32>, tensor<f32>, tensor<ui8> -> tensor<?x3xui8>
//  CHECK-NEXT:   %[[W:.*]] = octet.constant dense<{{\[}}[127, 0, -127], [2, 0, 2], [-4, 0, 4]]> : tensor<3x3xi8>
//  CHECK-NEXT:   %[[WS:.*]] = octet.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<3xf32>
//  CHECK-NEXT:   %[[B:.*]] = octet.constant dense<[5.000000e-01, -5.000000e-01, 1.000000e+00]> : tensor<3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = octet.qlinear %[[Q]], %[[W]], %[[B]] scales(%[[XS]], %[[XZP]], %[[WS]] : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32):
//  CHECK-NEXT:     octet.yield %[[ACC]] : f32
//  CHECK-NEXT:   } : tensor<?x3xui8>, tensor<3x3xi8>, tensor<3xf32> -> tensor<?x3xf32>
//  CHECK-NEXT:   return %[[Y]]
// Dynamic mode: the same weight, X per row with zero point 128.
// DYN-LABEL: func.func @static_exact(
//  DYN-NEXT:   %[[ZP:.*]] = octet.constant dense<128> : tensor<ui8>
//  DYN-NEXT:   %[[Q:.*]], %[[S:.*]] = octet.quantize_per_row %arg0 : tensor<?x3xf32> -> tensor<?x3xui8>, tensor<?x1xf32>
//  DYN-NEXT:   %[[W:.*]] = octet.constant dense<{{\[}}[127, 0, -127], [2, 0, 2], [-4, 0, 4]]> : tensor<3x3xi8>
//  DYN-NEXT:   %[[WS:.*]] = octet.constant dense<[1.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<3xf32>
//       DYN:   octet.qlinear %[[Q]], %[[W]], %{{.*}} scales(%[[S]], %[[ZP]], %[[WS]] : tensor<?x1xf32>, tensor<ui8>, tensor<3xf32>) {
//       DYN:   } : tensor<?x3xui8>, tensor<3x3xi8>, tensor<3xf32> -> tensor<?x3xf32>
func.func @static_exact(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %w = octet.constant dense<[[127.0, 0.0, -254.0], [2.5, 0.0, 5.0], [-3.5, 0.0, 7.0]]> : tensor<3x3xf32>
  %b = octet.constant dense<[0.5, -0.5, 1.0]> : tensor<3xf32>
  %y = octet.linear %x, %w, %b {octet.calib = {input_absmax = dense<[1.0, 2.0, 0.5]> : tensor<3xf32>, input_min = -1.0 : f32, input_max = 2.0 : f32}} : tensor<?x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A fused_linear keeps its epilogue, extra operand and transposed [N, K]
// weight (scales per row of it). X over [0.5, 3] is widened to hold 0:
// zero point 0.
// CHECK-LABEL: func.func @fused_transposed(
//       CHECK:   %[[XZP:.*]] = octet.constant dense<0> : tensor<ui8>
//       CHECK:   %[[W:.*]] = octet.constant dense<{{\[}}[64, -127], [0, 0], [64, 127]]> : tensor<3x2xi8>
//  CHECK-NEXT:   %[[WS:.*]] = octet.constant dense<[0.0157480314, 1.000000e+00, 0.00393700786]> : tensor<3xf32>
//  CHECK-NEXT:   octet.qlinear %{{.*}}, %[[W]] scales(%{{.*}}, %[[XZP]], %[[WS]] : tensor<f32>, tensor<ui8>, tensor<3xf32>) transpose_weight extra(%arg1 : tensor<?x?x3xf32>) {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32, %[[R:.*]]: f32):
//  CHECK-NEXT:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//  CHECK-NEXT:     %[[RELU:.*]] = arith.maximumf %[[ACC]], %[[ZERO]] : f32
//  CHECK-NEXT:     %[[SUM:.*]] = arith.addf %[[RELU]], %[[R]] : f32
//  CHECK-NEXT:     octet.yield %[[SUM]] : f32
//  CHECK-NEXT:   } : tensor<?x?x2xui8>, tensor<3x2xi8> -> tensor<?x?x3xf32>
//   CHECK-NOT:   octet.fused_linear
// DYN-LABEL: func.func @fused_transposed(
//       DYN:   octet.quantize_per_row
//       DYN:   octet.qlinear {{.*}} transpose_weight extra(%arg1
func.func @fused_transposed(%x: tensor<?x?x2xf32>, %r: tensor<?x?x3xf32>) -> tensor<?x?x3xf32> {
  %w = octet.constant dense<[[1.0, -2.0], [0.0, 0.0], [0.25, 0.5]]> : tensor<3x2xf32>
  %y = octet.fused_linear %x, %w transpose_weight extra(%r : tensor<?x?x3xf32>) {
  ^bb0(%acc: f32, %r0: f32):
    %zero = arith.constant 0.000000e+00 : f32
    %relu = arith.maximumf %acc, %zero : f32
    %sum = arith.addf %relu, %r0 : f32
    octet.yield %sum : f32
  } {octet.calib = {input_absmax = dense<[3.0, 1.0]> : tensor<2xf32>, input_min = 0.5 : f32, input_max = 3.0 : f32}} : tensor<?x?x2xf32>, tensor<3x2xf32> -> tensor<?x?x3xf32>
  return %y : tensor<?x?x3xf32>
}

// -----

// Two linears reading X share one quantize over the union of their ranges
// ([-3, 2]: scale 5/255, zero point 153).
// CHECK-LABEL: func.func @shared_input(
//  CHECK-NEXT:   %[[XS:.*]] = octet.constant dense<0.0196078438> : tensor<f32>
//  CHECK-NEXT:   %[[XZP:.*]] = octet.constant dense<153> : tensor<ui8>
//  CHECK-NEXT:   %[[Q:.*]] = octet.quantize %arg0, %[[XS]], %[[XZP]]
//   CHECK-NOT:   octet.quantize
//       CHECK:   octet.qlinear %[[Q]], %{{.*}} scales(%[[XS]], %[[XZP]],
//       CHECK:   octet.qlinear %[[Q]], %{{.*}} scales(%[[XS]], %[[XZP]],
// DYN-LABEL: func.func @shared_input(
//       DYN:   %[[Q:.*]], %[[S:.*]] = octet.quantize_per_row %arg0
//   DYN-NOT:   octet.quantize_per_row
//       DYN:   octet.qlinear %[[Q]], %{{.*}} scales(%[[S]],
//       DYN:   octet.qlinear %[[Q]], %{{.*}} scales(%[[S]],
func.func @shared_input(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %w1 = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %w2 = octet.constant dense<[[-1.0, 2.0], [3.0, -4.0]]> : tensor<2x2xf32>
  %y1 = octet.linear %x, %w1 {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 2.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  %y2 = octet.linear %x, %w2 {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -3.0 : f32, input_max = 1.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y1, %y2 : tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// Requantize: the first qlinear's result only feeds the second's quantize
// ([-2, 3]: scale 5/255, zero point 102), so it produces u8 directly.
// CHECK-LABEL: func.func @requantize(
//       CHECK:   %[[YS:.*]] = octet.constant dense<0.0196078438> : tensor<f32>
//  CHECK-NEXT:   %[[YZP:.*]] = octet.constant dense<102> : tensor<ui8>
//  CHECK-NEXT:   %[[H:.*]] = octet.qlinear {{.*}} requantize(%[[YS]], %[[YZP]] : tensor<f32>, tensor<ui8>) {
//       CHECK:   } : tensor<?x2xui8>, tensor<2x2xi8> -> tensor<?x2xui8>
//  CHECK-NEXT:   octet.qlinear %[[H]], %{{.*}} scales(%[[YS]], %[[YZP]],
//   CHECK-NOT:   octet.quantize
// Dynamic mode has no per-tensor quantize to fold.
// DYN-LABEL: func.func @requantize(
//       DYN:   %[[H:.*]] = octet.qlinear
//       DYN:   -> tensor<?x2xf32>
//       DYN:   octet.quantize_per_row %[[H]]
func.func @requantize(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w1 = octet.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %w2 = octet.constant dense<[[-1.0, 2.0], [3.0, -4.0]]> : tensor<2x2xf32>
  %h = octet.linear %x, %w1 {octet.calib = {input_absmax = dense<[1.0, 1.0]> : tensor<2xf32>, input_min = -1.0 : f32, input_max = 2.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  %y = octet.linear %h, %w2 {octet.calib = {input_absmax = dense<[3.0, 4.0]> : tensor<2xf32>, input_min = -2.0 : f32, input_max = 3.0 : f32}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}
