// RUN: octet-opt %s -octet-fuse-elementwise -split-input-file | FileCheck %s

// The elementwise ops of masks and index arithmetic (ceil, floor, sign, mod,
// is_nan, is_inf, xor) have no instruction in the elementwise program: they
// stay outside fused regions and split the f32 chain around them.
// CHECK-LABEL: func.func @mask_ops_stay_outside(
//       CHECK:   %[[A:.*]] = octet.fused %arg0, %arg1
//       CHECK:   %[[C:.*]] = octet.ceil %[[A]] : tensor<?x8xf32>
//       CHECK:   %[[F:.*]] = octet.floor %[[C]] : tensor<?x8xf32>
//       CHECK:   %[[S:.*]] = octet.sign %[[F]] : tensor<?x8xf32>
//       CHECK:   %[[M:.*]] = octet.mod %[[S]], %arg1 fmod : tensor<?x8xf32>, tensor<8xf32>
//       CHECK:   %[[B:.*]] = octet.fused %[[M]], %arg1
//       CHECK:   %[[N:.*]] = octet.is_nan %[[B]] : tensor<?x8xf32>
//       CHECK:   %[[I:.*]] = octet.is_inf %[[B]] : tensor<?x8xf32>
//       CHECK:   %[[X:.*]] = octet.xor %[[N]], %[[I]] : tensor<?x8xi1>, tensor<?x8xi1>
//       CHECK:   return %[[B]], %[[X]]
func.func @mask_ops_stay_outside(%x: tensor<?x8xf32>, %y: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xi1>) {
  %0 = octet.add %x, %y : tensor<?x8xf32>, tensor<8xf32>
  %1 = octet.mul %0, %y : tensor<?x8xf32>, tensor<8xf32>
  %2 = octet.ceil %1 : tensor<?x8xf32>
  %3 = octet.floor %2 : tensor<?x8xf32>
  %4 = octet.sign %3 : tensor<?x8xf32>
  %5 = octet.mod %4, %y fmod : tensor<?x8xf32>, tensor<8xf32>
  %6 = octet.add %5, %y : tensor<?x8xf32>, tensor<8xf32>
  %7 = octet.mul %6, %6 : tensor<?x8xf32>, tensor<?x8xf32>
  %8 = octet.is_nan %7 : tensor<?x8xf32>
  %9 = octet.is_inf %7 : tensor<?x8xf32>
  %10 = octet.xor %8, %9 : tensor<?x8xi1>, tensor<?x8xi1>
  return %7, %10 : tensor<?x8xf32>, tensor<?x8xi1>
}
