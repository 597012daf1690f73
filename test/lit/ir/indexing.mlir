// RUN: octet-opt %s -canonicalize -split-input-file | FileCheck %s
//
// Folds and dim tracing of the mask and index ops: small constants fold with
// ONNX's rules (Mod's two sign rules, Sign of NaN, IsInf's flags), and the
// dims of gather_nd / gather_elements / xor / mod results trace to their
// operands.

// Mod takes the divisor's sign, fmod the dividend's; 0 divisors stay for the runtime.
// CHECK-LABEL: func.func @mod_fold(
//   CHECK-DAG:   %[[M:.*]] = octet.constant dense<[2, -2, 0, -1, 1]> : tensor<5xi64>
//   CHECK-DAG:   %[[F:.*]] = octet.constant dense<[-1, 1, 0, -1, -1]> : tensor<5xi64>
//   CHECK-DAG:   %[[Z:.*]] = octet.mod
//   CHECK-DAG:   %[[FF:.*]] = octet.constant dense<[-1.000000e+00, 1.500000e+00]> : tensor<2xf32>
//       CHECK:   return %[[M]], %[[F]], %[[Z]], %[[FF]]
func.func @mod_fold() -> (tensor<5xi64>, tensor<5xi64>, tensor<i64>, tensor<2xf32>) {
  %a = octet.constant dense<[-7, 7, 6, -1, -9223372036854775807]> : tensor<5xi64>
  %b = octet.constant dense<[3, -3, 3, -2, 2]> : tensor<5xi64>
  %m = octet.mod %a, %b : tensor<5xi64>, tensor<5xi64>
  %f = octet.mod %a, %b fmod : tensor<5xi64>, tensor<5xi64>
  %one = octet.constant dense<1> : tensor<i64>
  %zero = octet.constant dense<0> : tensor<i64>
  %z = octet.mod %one, %zero : tensor<i64>, tensor<i64>
  %x = octet.constant dense<[-7.0, 4.5]> : tensor<2xf32>
  %y = octet.constant dense<[3.0, -3.0]> : tensor<2xf32>
  %ff = octet.mod %x, %y fmod : tensor<2xf32>, tensor<2xf32>
  return %m, %f, %z, %ff : tensor<5xi64>, tensor<5xi64>, tensor<i64>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @unary_fold(
//       CHECK:   octet.constant dense<[-2.000000e+00, 2.000000e+00, -0.000000e+00]> : tensor<3xf32>
//       CHECK:   octet.constant dense<[-3.000000e+00, 1.000000e+00, -0.000000e+00]> : tensor<3xf32>
//       CHECK:   octet.constant dense<[-1.000000e+00, 1.000000e+00, 0.000000e+00]> : tensor<3xf32>
//       CHECK:   octet.constant dense<[-1, 0, 1]> : tensor<3xi32>
func.func @unary_fold() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>) {
  %x = octet.constant dense<[-2.5, 1.5, -0.0]> : tensor<3xf32>
  %c = octet.ceil %x : tensor<3xf32>
  %f = octet.floor %x : tensor<3xf32>
  %s = octet.sign %x : tensor<3xf32>
  %i = octet.constant dense<[-5, 0, 9]> : tensor<3xi32>
  %si = octet.sign %i : tensor<3xi32>
  return %c, %f, %s, %si : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @tests_fold(
//       CHECK:   octet.constant dense<[false, false, true, false]> : tensor<4xi1>
//       CHECK:   octet.constant dense<[true, true, false, false]> : tensor<4xi1>
//       CHECK:   octet.constant dense<[false, true, false, false]> : tensor<4xi1>
//       CHECK:   octet.constant dense<[true, false]> : tensor<2xi1>
func.func @tests_fold() -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<2xi1>) {
  %x = octet.constant dense<[0xFF800000, 0x7F800000, 0x7FC00000, 1.0]> : tensor<4xf32>
  %nan = octet.is_nan %x : tensor<4xf32>
  %inf = octet.is_inf %x : tensor<4xf32>
  %pos = octet.is_inf %x detect_negative = false : tensor<4xf32>
  %a = octet.constant dense<[true, false]> : tensor<2xi1>
  %b = octet.constant dense<[false, false]> : tensor<2xi1>
  %xor = octet.xor %a, %b : tensor<2xi1>, tensor<2xi1>
  return %nan, %inf, %pos, %xor : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<2xi1>
}

// -----

// The dims of a gather_nd result are the indices' leading dims, then the data's
// dims after the batch dims and the tuple; gather_elements has the indices' dims.
// CHECK-LABEL: func.func @gather_dims(
//  CHECK-SAME:   %[[D:.*]]: tensor<?x?xi1>, %[[I:.*]]: tensor<?x1x?x?x2xi64>, %[[X:.*]]: tensor<?x?x?xf32>, %[[J:.*]]: tensor<?x1xi64>, %[[Y:.*]]: tensor<?x?xf32>, %[[E:.*]]: tensor<?x?xi64>
//   CHECK-DAG:   %[[B:.*]] = octet.dim %[[I]][0]
//   CHECK-DAG:   %[[S:.*]] = octet.dim %[[I]][3]
//   CHECK-DAG:   %[[R:.*]] = octet.dim %[[X]][2]
//   CHECK-DAG:   %[[T:.*]] = octet.dim %[[E]][1]
//       CHECK:   return %[[B]], %[[S]], %[[R]], %[[T]]
func.func @gather_dims(%d: tensor<?x?xi1>, %i: tensor<?x1x?x?x2xi64>, %x: tensor<?x?x?xf32>,
                       %j: tensor<?x1xi64>, %y: tensor<?x?xf32>, %e: tensor<?x?xi64>) -> (index, index, index, index) {
  %m = octet.gather_nd %d, %i : tensor<?x?xi1>, tensor<?x1x?x?x2xi64>
  %b = octet.dim %m[0] : tensor<?x1x?x?xi1>
  %s = octet.dim %m[3] : tensor<?x1x?x?xi1>
  %g = octet.gather_nd %x, %j batch_dims = 1 : tensor<?x?x?xf32>, tensor<?x1xi64>
  %r = octet.dim %g[1] : tensor<?x?xf32>
  %t = octet.gather_elements %y, %e axis = 1 : tensor<?x?xf32>, tensor<?x?xi64>
  %c = octet.dim %t[1] : tensor<?x?xf32>
  return %b, %s, %r, %c : index, index, index, index
}

// -----

// element_index folds on constants (a ui8 element is zero-extended).
// CHECK-LABEL: func.func @element_index_fold(
//   CHECK-DAG:   %[[A:.*]] = arith.constant -3 : index
//   CHECK-DAG:   %[[B:.*]] = arith.constant 200 : index
//       CHECK:   return %[[A]], %[[B]]
func.func @element_index_fold() -> (index, index) {
  %c = octet.constant dense<[5, -3]> : tensor<2xi64>
  %a = octet.element_index %c[1] : tensor<2xi64>
  %u = octet.constant dense<200> : tensor<ui8>
  %b = octet.element_index %u[0] : tensor<ui8>
  return %a, %b : index, index
}
