// RUN: octet-opt %s -octet-fuse-elementwise -split-input-file | FileCheck %s

// octet-fuse-elementwise makes a LayerNorm and the quantize of its result one
// octet.layer_norm_quantize (docs/int8-quantization.md). Negative cases:
// fuse-layernorm-quantize-negative.mlir.

// Static INT8, SmoothQuant's copy of a residual LayerNorm: the quantize is the
// copy's only reader, so the fused op's f32 result is dead (never written).
// CHECK-LABEL: func.func @static_copy(
//   CHECK-DAG:   %[[S:.*]] = octet.constant dense<2.500000e-01> : tensor<f32>
//   CHECK-DAG:   %[[Z:.*]] = octet.constant dense<128> : tensor<ui8>
//       CHECK:   %{{.*}}, %[[Q:.*]] = octet.layer_norm_quantize %arg0 residual(%arg1 : tensor<?x?x4xf32>), %{{.*}}, %{{.*}} axis = 2 epsilon = 9.99999996E-13 scale(%[[S]], %[[Z]] : tensor<f32>, tensor<ui8>) : tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x?x4xui8>
//   CHECK-NOT:   octet.quantize
//   CHECK-NOT:   octet.add_layer_norm
//       CHECK:   return %[[Q]]
func.func @static_copy(%x: tensor<?x?x4xf32>, %r: tensor<?x?x4xf32>) -> tensor<?x?x4xui8> {
  %g = octet.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = octet.constant dense<[0.5, 0.0, -0.5, 1.0]> : tensor<4xf32>
  %y = octet.add_layer_norm %x, %r, %g, %b axis = 2 epsilon = 1.0e-12 : tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>
  %s = octet.constant dense<0.25> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %q = octet.quantize %y, %s, %zp : tensor<?x?x4xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x4xui8>
  return %q : tensor<?x?x4xui8>
}

// -----

// Dynamic INT8: the LayerNorm's result is also the next residual, so the
// fused op keeps it (its first result) for that reader; the per-row scale is
// the third result. The constants defined after the LayerNorm are not needed.
// CHECK-LABEL: func.func @dynamic_with_residual(
//       CHECK:   %[[Y:.*]], %[[Q:.*]], %[[RS:.*]] = octet.layer_norm_quantize %arg0, %{{.*}} axis = 1 epsilon = 9.99999974E-6 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>, tensor<?x1xf32>
//   CHECK-NOT:   octet.quantize_per_row
//       CHECK:   return %[[Y]], %[[Q]], %[[RS]]
func.func @dynamic_with_residual(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x1xf32>) {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>
  %q, %s = octet.quantize_per_row %y : tensor<?x8xf32> -> tensor<?x8xui8>, tensor<?x1xf32>
  return %y, %q, %s : tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x1xf32>
}

// -----

// An s8 quantize without a zero point gets ONNX's default, 0, and a scale
// constant defined after the LayerNorm moves above it (the fused op takes
// the LayerNorm's place, before the LayerNorm's other reader).
// CHECK-LABEL: func.func @s8_no_zero_point(
//       CHECK:   %[[S:.*]] = octet.constant dense<5.000000e-01> : tensor<f32>
//       CHECK:   %[[Z:.*]] = octet.constant dense<0> : tensor<i8>
//       CHECK:   %[[Y:.*]], %[[Q:.*]] = octet.layer_norm_quantize %arg0, %{{.*}} axis = 1 epsilon = 9.99999974E-6 scale(%[[S]], %[[Z]] : tensor<f32>, tensor<i8>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xi8>
//       CHECK:   %[[E:.*]] = octet.exp %[[Y]]
//       CHECK:   return %[[E]], %[[Q]]
func.func @s8_no_zero_point(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xi8>) {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>
  %e = octet.exp %y : tensor<?x8xf32>
  %s = octet.constant dense<0.5> : tensor<f32>
  %q = octet.quantize %y, %s : tensor<?x8xf32>, tensor<f32> -> tensor<?x8xi8>
  return %e, %q : tensor<?x8xf32>, tensor<?x8xi8>
}

// -----

// Two quantizes of one LayerNorm (different grids): the first joins it, the
// second reads the fused op's f32 result.
// CHECK-LABEL: func.func @two_quantizes(
//       CHECK:   %[[Y:.*]], %[[Q:.*]] = octet.layer_norm_quantize
//       CHECK:   %[[Q2:.*]] = octet.quantize %[[Y]]
//       CHECK:   return %[[Q]], %[[Q2]]
func.func @two_quantizes(%x: tensor<?x8xf32>) -> (tensor<?x8xui8>, tensor<?x8xui8>) {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  %s = octet.constant dense<0.5> : tensor<f32>
  %s2 = octet.constant dense<0.25> : tensor<f32>
  %zp = octet.constant dense<10> : tensor<ui8>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>
  %q = octet.quantize %y, %s, %zp : tensor<?x8xf32>, tensor<f32>, tensor<ui8> -> tensor<?x8xui8>
  %q2 = octet.quantize %y, %s2, %zp : tensor<?x8xf32>, tensor<f32>, tensor<ui8> -> tensor<?x8xui8>
  return %q, %q2 : tensor<?x8xui8>, tensor<?x8xui8>
}
