// octet.quantize_per_row and octet.qlinear with a per-row input scale
// round-trip (custom and generic form); quantize-per-row-invalid.mlir has
// the invalid forms.
// RUN: octet-opt %s -split-input-file | octet-opt -split-input-file | FileCheck %s
// RUN: octet-opt %s -split-input-file -mlir-print-op-generic | octet-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @per_row(
//       CHECK:   %[[Q:.*]], %[[S:.*]] = octet.quantize_per_row %arg0 : tensor<?x?x8xf32> -> tensor<?x?x8xui8>, tensor<?x?x1xf32>
//       CHECK:   octet.qlinear %[[Q]], %arg1 scales(%[[S]], %arg2, %arg3 : tensor<?x?x1xf32>, tensor<ui8>, tensor<4xf32>) {
//       CHECK:   } : tensor<?x?x8xui8>, tensor<8x4xi8> -> tensor<?x?x4xf32>
func.func @per_row(%x: tensor<?x?x8xf32>, %w: tensor<8x4xi8>, %zp: tensor<ui8>, %ws: tensor<4xf32>) -> tensor<?x?x4xf32> {
  %q, %s = octet.quantize_per_row %x : tensor<?x?x8xf32> -> tensor<?x?x8xui8>, tensor<?x?x1xf32>
  %y = octet.qlinear %q, %w scales(%s, %zp, %ws : tensor<?x?x1xf32>, tensor<ui8>, tensor<4xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x?x8xui8>, tensor<8x4xi8> -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// Static shapes and a dynamic K.
// CHECK-LABEL: func.func @static_rows(
//       CHECK:   octet.quantize_per_row %arg0 : tensor<3x?xf32> -> tensor<3x?xui8>, tensor<3x1xf32>
//       CHECK:   octet.quantize_per_row %arg1 : tensor<5xf32> -> tensor<5xui8>, tensor<1xf32>
func.func @static_rows(%x: tensor<3x?xf32>, %v: tensor<5xf32>) {
  %q, %s = octet.quantize_per_row %x : tensor<3x?xf32> -> tensor<3x?xui8>, tensor<3x1xf32>
  %qv, %sv = octet.quantize_per_row %v : tensor<5xf32> -> tensor<5xui8>, tensor<1xf32>
  return
}
