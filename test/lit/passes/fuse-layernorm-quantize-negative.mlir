// RUN: octet-opt %s -octet-fuse-elementwise -split-input-file | FileCheck %s
// RUN: octet-opt %s -octet-fuse-elementwise="layer-norm-quantize=false" -split-input-file | FileCheck %s --check-prefix=OFF

// What octet-fuse-elementwise must not make one octet.layer_norm_quantize
// (positive cases: fuse-layernorm-quantize.mlir).

// A per-axis quantize (one scale per channel) is not the kernel's per-tensor form.
// CHECK-LABEL: func.func @per_axis(
//   CHECK-NOT:   octet.layer_norm_quantize
//       CHECK:   octet.layer_norm
//       CHECK:   octet.quantize %{{.*}} axis = 1
func.func @per_axis(%x: tensor<?x4xf32>) -> tensor<?x4xui8> {
  %g = octet.constant dense<2.0> : tensor<4xf32>
  %s = octet.constant dense<[0.5, 0.25, 1.0, 2.0]> : tensor<4xf32>
  %zp = octet.constant dense<[1, 2, 3, 4]> : tensor<4xui8>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>
  %q = octet.quantize %y, %s, %zp axis = 1 : tensor<?x4xf32>, tensor<4xf32>, tensor<4xui8> -> tensor<?x4xui8>
  return %q : tensor<?x4xui8>
}

// -----

// A scale that is a run-time value (not a constant): the kernel bakes it in.
// CHECK-LABEL: func.func @runtime_scale(
//   CHECK-NOT:   octet.layer_norm_quantize
//       CHECK:   octet.add_layer_norm
//       CHECK:   octet.quantize
func.func @runtime_scale(%x: tensor<?x4xf32>, %r: tensor<?x4xf32>, %s: tensor<f32>) -> tensor<?x4xui8> {
  %g = octet.constant dense<2.0> : tensor<4xf32>
  %zp = octet.constant dense<3> : tensor<ui8>
  %y = octet.add_layer_norm %x, %r, %g axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>
  %q = octet.quantize %y, %s, %zp : tensor<?x4xf32>, tensor<f32>, tensor<ui8> -> tensor<?x4xui8>
  return %q : tensor<?x4xui8>
}

// -----

// A LayerNorm over more than the last dim: rows are not what is normalized.
// CHECK-LABEL: func.func @not_last_axis(
//   CHECK-NOT:   octet.layer_norm_quantize
//       CHECK:   octet.layer_norm %{{.*}} axis = 1
//       CHECK:   octet.quantize_per_row
func.func @not_last_axis(%x: tensor<?x2x4xf32>) -> (tensor<?x2x4xui8>, tensor<?x2x1xf32>) {
  %g = octet.constant dense<2.0> : tensor<2x4xf32>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x2x4xf32>, tensor<2x4xf32>
  %q, %s = octet.quantize_per_row %y : tensor<?x2x4xf32> -> tensor<?x2x4xui8>, tensor<?x2x1xf32>
  return %q, %s : tensor<?x2x4xui8>, tensor<?x2x1xf32>
}

// -----

// The LayerNorm's result is also read elsewhere (the next residual): the
// pair still fuses, but the f32 result must survive for that reader and the
// quantized one must not replace it there.
// CHECK-LABEL: func.func @result_read_elsewhere(
//       CHECK:   %[[Y:.*]], %[[Q:.*]] = octet.layer_norm_quantize
//       CHECK:   octet.add_layer_norm %arg1, %[[Y]]
//       CHECK:   return %[[Q]]
// OFF-LABEL: func.func @result_read_elsewhere(
//   OFF-NOT:   octet.layer_norm_quantize
//       OFF:   octet.quantize
func.func @result_read_elsewhere(%x: tensor<?x4xf32>, %h: tensor<?x4xf32>) -> (tensor<?x4xui8>, tensor<?x4xf32>) {
  %g = octet.constant dense<2.0> : tensor<4xf32>
  %s = octet.constant dense<0.5> : tensor<f32>
  %zp = octet.constant dense<3> : tensor<ui8>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>
  %q = octet.quantize %y, %s, %zp : tensor<?x4xf32>, tensor<f32>, tensor<ui8> -> tensor<?x4xui8>
  %n = octet.add_layer_norm %h, %y, %g axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>
  return %q, %n : tensor<?x4xui8>, tensor<?x4xf32>
}
