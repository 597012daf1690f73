// octet.layer_norm_quantize round-trips (custom and generic form), per
// tensor with a residual and per row without; layer-norm-quantize-invalid.mlir
// has the invalid forms.
// RUN: octet-opt %s -split-input-file | octet-opt -split-input-file | FileCheck %s
// RUN: octet-opt %s -split-input-file -mlir-print-op-generic | octet-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @per_tensor(
//       CHECK:   %{{.*}}, %{{.*}} = octet.layer_norm_quantize %arg0 residual(%arg1 : tensor<?x?x8xf32>), %arg2, %arg3 axis = 2 epsilon = 9.99999996E-13 scale(%arg4, %arg5 : tensor<f32>, tensor<i8>) : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x?x8xi8>
func.func @per_tensor(%x: tensor<?x?x8xf32>, %r: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %zp: tensor<i8>) -> tensor<?x?x8xi8> {
  %y, %q = octet.layer_norm_quantize %x residual(%r : tensor<?x?x8xf32>), %g, %b axis = 2 epsilon = 1.0e-12 scale(%s, %zp : tensor<f32>, tensor<i8>) : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<?x?x8xi8>
  return %q : tensor<?x?x8xi8>
}

// -----

// CHECK-LABEL: func.func @per_row(
//       CHECK:   %{{.*}}, %{{.*}}, %{{.*}} = octet.layer_norm_quantize %arg0, %arg1 axis = 1 epsilon = 9.99999974E-6 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>, tensor<?x1xf32>
func.func @per_row(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x1xf32>) {
  %y, %q, %s = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>, tensor<?x1xf32>
  return %y, %q, %s : tensor<?x8xf32>, tensor<?x8xui8>, tensor<?x1xf32>
}
