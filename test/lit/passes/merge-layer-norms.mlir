// RUN: octet-opt %s -octet-merge-layer-norms -split-input-file | FileCheck %s

// octet-merge-layer-norms: SmoothQuant's smoothed copy of a LayerNorm (fused
// with its quantize, y dead) and the original become one layer_norm_quantize
// with quant_affine (docs/int8.md). Negative cases further down.

// A residual LayerNorm: y (original affine) feeds the residual, q the GEMM.
// CHECK-LABEL: func.func @residual(
//   CHECK-DAG:   %[[G:.*]] = octet.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
//   CHECK-DAG:   %[[B:.*]] = octet.constant dense<[5.000000e-01, 0.000000e+00, -5.000000e-01, 1.000000e+00]>
//   CHECK-DAG:   %[[G2:.*]] = octet.constant dense<[5.000000e-01, 1.000000e+00, 1.500000e+00, 2.000000e+00]>
//   CHECK-DAG:   %[[B2:.*]] = octet.constant dense<[2.500000e-01, 0.000000e+00, -2.500000e-01, 5.000000e-01]>
//       CHECK:   %[[Y:.*]], %[[Q:.*]] = octet.layer_norm_quantize %arg0 residual(%arg1 : tensor<?x?x4xf32>), %[[G]], %[[B]] axis = 2 epsilon = 9.99999996E-13 scale(%{{.*}}, %{{.*}} : tensor<f32>, tensor<ui8>) quant_affine(%[[G2]], %[[B2]] : tensor<4xf32>, tensor<4xf32>) : tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x?x4xui8>
//   CHECK-NOT:   octet.add_layer_norm
//   CHECK-NOT:   octet.layer_norm_quantize
//       CHECK:   return %[[Y]], %[[Q]]
func.func @residual(%x: tensor<?x?x4xf32>, %r: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xui8>) {
  %g = octet.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = octet.constant dense<[0.5, 0.0, -0.5, 1.0]> : tensor<4xf32>
  %g2 = octet.constant dense<[0.5, 1.0, 1.5, 2.0]> : tensor<4xf32>
  %b2 = octet.constant dense<[0.25, 0.0, -0.25, 0.5]> : tensor<4xf32>
  %s = octet.constant dense<0.25> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %y = octet.add_layer_norm %x, %r, %g, %b axis = 2 epsilon = 1.0e-12 : tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>
  %dead, %q = octet.layer_norm_quantize %x residual(%r : tensor<?x?x4xf32>), %g2, %b2 axis = 2 epsilon = 1.0e-12 scale(%s, %zp : tensor<f32>, tensor<ui8>) : tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<?x?x4xui8>
  return %y, %q : tensor<?x?x4xf32>, tensor<?x?x4xui8>
}

// -----

// A plain LayerNorm (the embeddings' in BERT) whose copy comes first.
// CHECK-LABEL: func.func @plain_copy_first(
//       CHECK:   %[[Y:.*]], %[[Q:.*]] = octet.layer_norm_quantize %arg0, %{{.*}}, %{{.*}} axis = 1 epsilon = 9.99999974E-6 scale({{.*}}) quant_affine({{.*}})
//   CHECK-NOT:   octet.layer_norm
//       CHECK:   return %[[Q]], %[[Y]]
func.func @plain_copy_first(%x: tensor<?x8xf32>) -> (tensor<?x8xi8>, tensor<?x8xf32>) {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  %b = octet.constant dense<1.0> : tensor<8xf32>
  %g2 = octet.constant dense<4.0> : tensor<8xf32>
  %b2 = octet.constant dense<0.5> : tensor<8xf32>
  %s = octet.constant dense<0.5> : tensor<f32>
  %zp = octet.constant dense<0> : tensor<i8>
  %dead, %q = octet.layer_norm_quantize %x, %g2, %b2 axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<i8>) : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xi8>
  %y = octet.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %q, %y : tensor<?x8xi8>, tensor<?x8xf32>
}

// -----

// Negative: another epsilon, another residual, the copy's y in use, per-row
// quantization, no beta: all left alone.
// CHECK-LABEL: func.func @negative(
//   CHECK-NOT:   quant_affine
//   CHECK-COUNT-5: octet.layer_norm_quantize
//   CHECK-NOT:   quant_affine
func.func @negative(%x: tensor<?x8xf32>, %r: tensor<?x8xf32>, %r2: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x8xui8>, tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x8xui8>, tensor<?x1xf32>, tensor<?x8xf32>, tensor<?x8xui8>) {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  %b = octet.constant dense<1.0> : tensor<8xf32>
  %s = octet.constant dense<0.5> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %y = octet.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
  %d1, %q1 = octet.layer_norm_quantize %x, %g, %b axis = 1 epsilon = 1.0e-6 scale(%s, %zp : tensor<f32>, tensor<ui8>) : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  %ya = octet.add_layer_norm %x, %r, %g, %b axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>
  %d2, %q2 = octet.layer_norm_quantize %x residual(%r2 : tensor<?x8xf32>), %g, %b axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<ui8>) : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  %live, %q3 = octet.layer_norm_quantize %x residual(%r : tensor<?x8xf32>), %g, %b axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<ui8>) : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  %d4, %q4, %rs = octet.layer_norm_quantize %x, %g, %b axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x8xui8>, tensor<?x1xf32>
  %yn = octet.layer_norm %r2, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32>
  %d5, %q5 = octet.layer_norm_quantize %r2, %g axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<ui8>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  return %y, %ya, %q1, %q2, %live, %q3, %q4, %rs, %yn, %q5 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x8xui8>, tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x8xui8>, tensor<?x1xf32>, tensor<?x8xf32>, tensor<?x8xui8>
}
