// RUN: octet-opt %s -canonicalize -split-input-file | FileCheck %s
//
// Folders and canonicalization patterns of the octet dialect, positive and
// negative cases side by side.

// A static dim is a constant.
// CHECK-LABEL: func.func @dim_static(
//  CHECK-NEXT:   %c768 = arith.constant 768 : index
//  CHECK-NEXT:   return %c768 : index
//  CHECK-NEXT: }
func.func @dim_static(%x: tensor<?x768xf32>) -> index {
  %0 = octet.dim %x[1] : tensor<?x768xf32>
  return %0 : index
}

// -----

// A `?` of a reshape/expand result is its size operand.
// CHECK-LABEL: func.func @dim_of_reshape_and_expand(
//  CHECK-NEXT:   return %arg2, %arg1, %arg2 : index, index, index
//  CHECK-NEXT: }
func.func @dim_of_reshape_and_expand(%x: tensor<?x768xf32>, %b: index, %s: index, %p: tensor<1x?xi64>) -> (index, index, index) {
  %0 = octet.reshape %x(%b, %s) : tensor<?x768xf32> -> tensor<?x?x768xf32>
  %1 = octet.dim %0[1] : tensor<?x?x768xf32>
  %2 = octet.expand %p(%b, %s) : tensor<1x?xi64> -> tensor<?x?xi64>
  %3 = octet.dim %2[0] : tensor<?x?xi64>
  %4 = octet.dim %2[1] : tensor<?x?xi64>
  return %1, %3, %4 : index, index, index
}

// -----

// dim moves through transpose (permuted) and shape-preserving ops.
// CHECK-LABEL: func.func @dim_of_transpose_and_unary(
//  CHECK-NEXT:   %0 = octet.dim %arg0[1] : tensor<?x?x12x64xf32>
//  CHECK-NEXT:   return %0 : index
//  CHECK-NEXT: }
func.func @dim_of_transpose_and_unary(%x: tensor<?x?x12x64xf32>) -> index {
  %0 = octet.exp %x : tensor<?x?x12x64xf32>
  %1 = octet.transpose %0 permutation = [0, 2, 1, 3] : tensor<?x?x12x64xf32>
  %2 = octet.dim %1[2] : tensor<?x12x?x64xf32>
  return %2 : index
}

// -----

// A broadcast result dim is an operand dim only where the other operand has no
// such dim or a static 1 there; ?·? (dim 0 of the mul) stays.
// CHECK-LABEL: func.func @dim_of_broadcast(
//  CHECK-NEXT:   %0 = octet.dim %arg0[1] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %1 = octet.mul %arg2, %arg3 : tensor<?x1xf32>, tensor<?x?xf32>
//  CHECK-NEXT:   %2 = octet.dim %arg3[1] : tensor<?x?xf32>
//  CHECK-NEXT:   %3 = octet.dim %1[0] : tensor<?x?xf32>
//  CHECK-NEXT:   %4 = octet.dim %arg3[1] : tensor<?x?xf32>
//  CHECK-NEXT:   return %0, %2, %3, %4 : index, index, index, index
//  CHECK-NEXT: }
func.func @dim_of_broadcast(%a: tensor<?x?x768xf32>, %b: tensor<768xf32>, %c: tensor<?x1xf32>, %d: tensor<?x?xf32>) -> (index, index, index, index) {
  %0 = octet.add %a, %b : tensor<?x?x768xf32>, tensor<768xf32>
  %1 = octet.dim %0[1] : tensor<?x?x768xf32>
  %2 = octet.mul %c, %d : tensor<?x1xf32>, tensor<?x?xf32>
  %3 = octet.dim %2[1] : tensor<?x?xf32>
  %4 = octet.dim %2[0] : tensor<?x?xf32>
  %5 = octet.cast %2 : tensor<?x?xf32> to tensor<?x?xi64>
  %6 = octet.dim %5[1] : tensor<?x?xi64>
  return %1, %3, %4, %6 : index, index, index, index
}

// -----

// concat: other axes come from the first input; the concat axis stays.
// CHECK-LABEL: func.func @dim_of_concat(
//  CHECK-NEXT:   %0 = octet.concat %arg0, %arg1 axis = 1 : tensor<?x?xf32>, tensor<?x?xf32>
//  CHECK-NEXT:   %1 = octet.dim %arg0[0] : tensor<?x?xf32>
//  CHECK-NEXT:   %2 = octet.dim %0[1] : tensor<?x?xf32>
//  CHECK-NEXT:   return %1, %2 : index, index
//  CHECK-NEXT: }
func.func @dim_of_concat(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> (index, index) {
  %0 = octet.concat %a, %b axis = 1 : tensor<?x?xf32>, tensor<?x?xf32>
  %1 = octet.dim %0[0] : tensor<?x?xf32>
  %2 = octet.dim %0[1] : tensor<?x?xf32>
  return %1, %2 : index, index
}

// -----

// matmul: rows from lhs, columns from rhs; batch dims ?·? stay.
// CHECK-LABEL: func.func @dim_of_matmul(
//  CHECK-NEXT:   %0 = octet.matmul %arg0, %arg1 : tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>
//  CHECK-NEXT:   %1 = octet.dim %0[0] : tensor<?x12x?x?xf32>
//  CHECK-NEXT:   %2 = octet.dim %arg0[2] : tensor<?x12x?x64xf32>
//  CHECK-NEXT:   %3 = octet.dim %arg1[3] : tensor<?x12x64x?xf32>
//  CHECK-NEXT:   %4 = octet.dim %arg2[0] : tensor<?x5x?xf32>
//  CHECK-NEXT:   return %1, %2, %3, %4 : index, index, index, index
//  CHECK-NEXT: }
func.func @dim_of_matmul(%a: tensor<?x12x?x64xf32>, %b: tensor<?x12x64x?xf32>, %v: tensor<?x5x?xf32>, %w: tensor<?xf32>) -> (index, index, index, index) {
  %0 = octet.matmul %a, %b : tensor<?x12x?x64xf32>, tensor<?x12x64x?xf32>
  %1 = octet.dim %0[0] : tensor<?x12x?x?xf32>
  %2 = octet.dim %0[2] : tensor<?x12x?x?xf32>
  %3 = octet.dim %0[3] : tensor<?x12x?x?xf32>
  %4 = octet.matmul %v, %w : tensor<?x5x?xf32>, tensor<?xf32>
  %5 = octet.dim %4[0] : tensor<?x5xf32>
  return %1, %2, %3, %5 : index, index, index, index
}

// -----

// matmul with a 2-D rhs: every leading dim is the lhs's.
// CHECK-LABEL: func.func @dim_of_matmul_leading_single_side(
//  CHECK-NEXT:   %0 = octet.dim %arg0[0] : tensor<?x?x64xf32>
//  CHECK-NEXT:   %1 = octet.dim %arg0[1] : tensor<?x?x64xf32>
//  CHECK-NEXT:   %2 = octet.dim %arg1[1] : tensor<64x?xf32>
//  CHECK-NEXT:   return %0, %1, %2 : index, index, index
//  CHECK-NEXT: }
func.func @dim_of_matmul_leading_single_side(%a: tensor<?x?x64xf32>, %b: tensor<64x?xf32>) -> (index, index, index) {
  %0 = octet.matmul %a, %b : tensor<?x?x64xf32>, tensor<64x?xf32>
  %1 = octet.dim %0[0] : tensor<?x?x?xf32>
  %2 = octet.dim %0[1] : tensor<?x?x?xf32>
  %3 = octet.dim %0[2] : tensor<?x?x?xf32>
  return %1, %2, %3 : index, index, index
}

// -----

// linear, gather, slice (unsliced axes only) and reductions.
// CHECK-LABEL: func.func @dim_of_linear_gather_slice_reduce(
//  CHECK-NEXT:   %0 = octet.dim %arg0[1] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %1 = octet.dim %arg1[1] : tensor<768x?xf32>
//  CHECK-NEXT:   %2 = octet.dim %arg3[1] : tensor<?x?xi64>
//  CHECK-NEXT:   %3 = octet.slice %arg0 axes = [1] starts = [0] ends = [%arg4] steps = [1] : tensor<?x?x768xf32> -> tensor<?x?x768xf32>
//  CHECK-NEXT:   %4 = octet.dim %arg0[0] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %5 = octet.dim %3[1] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %6 = octet.dim %arg0[1] : tensor<?x?x768xf32>
//  CHECK-NEXT:   %7 = octet.dim %arg0[0] : tensor<?x?x768xf32>
//  CHECK-NEXT:   return %0, %1, %2, %4, %5, %6, %7 : index, index, index, index, index, index, index
//  CHECK-NEXT: }
func.func @dim_of_linear_gather_slice_reduce(%x: tensor<?x?x768xf32>, %w: tensor<768x?xf32>, %t: tensor<?x768xf32>, %ids: tensor<?x?xi64>, %e: index) -> (index, index, index, index, index, index, index) {
  %0 = octet.linear %x, %w : tensor<?x?x768xf32>, tensor<768x?xf32>
  %1 = octet.dim %0[1] : tensor<?x?x?xf32>
  %2 = octet.dim %0[2] : tensor<?x?x?xf32>
  %3 = octet.gather %t, %ids axis = 0 : tensor<?x768xf32>, tensor<?x?xi64>
  %4 = octet.dim %3[1] : tensor<?x?x768xf32>
  %5 = octet.slice %x axes = [1] starts = [0] ends = [%e] steps = [1] : tensor<?x?x768xf32> -> tensor<?x?x768xf32>
  %6 = octet.dim %5[0] : tensor<?x?x768xf32>
  %7 = octet.dim %5[1] : tensor<?x?x768xf32>
  %8 = octet.reduce_sum %x axes = [0] : tensor<?x?x768xf32>
  %9 = octet.dim %8[0] : tensor<?x768xf32>
  %10 = octet.reduce_max %x axes = [1] keepdims : tensor<?x?x768xf32>
  %11 = octet.dim %10[0] : tensor<?x1x768xf32>
  return %1, %2, %4, %6, %7, %9, %11 : index, index, index, index, index, index, index
}

// -----

// A transposed linear's output features are the weight's rows ([N, K]).
// CHECK-LABEL: func.func @dim_of_transposed_linear(
//  CHECK-NEXT:   %0 = octet.dim %arg1[0] : tensor<?x768xf32>
//  CHECK-NEXT:   %1 = octet.dim %arg0[0] : tensor<?x?x768xf32>
//  CHECK-NEXT:   return %0, %1 : index, index
//  CHECK-NEXT: }
func.func @dim_of_transposed_linear(%x: tensor<?x?x768xf32>, %w: tensor<?x768xf32>) -> (index, index) {
  %0 = octet.linear %x, %w transpose_weight : tensor<?x?x768xf32>, tensor<?x768xf32>
  %1 = octet.dim %0[2] : tensor<?x?x?xf32>
  %2 = octet.dim %0[0] : tensor<?x?x?xf32>
  return %1, %2 : index, index
}

// -----

// Constant folding with numpy broadcasting; integer division truncates.
// CHECK-LABEL: func.func @fold_arith(
//  CHECK-NEXT:   %0 = octet.constant dense<[1.500000e+00, 2.250000e+00, 5.000000e+00]> : tensor<3xf32>
//  CHECK-NEXT:   %1 = octet.constant dense<[2.000000e+00, 8.000000e+00, 1.500000e+00]> : tensor<3xf32>
//  CHECK-NEXT:   %2 = octet.constant dense<[3, -3, 4]> : tensor<3xi64>
//  CHECK-NEXT:   %3 = octet.constant dense<{{\[\[}}-6, 8, -8], [-5, 9, -7{{\]\]}}> : tensor<2x3xi64>
//  CHECK-NEXT:   %4 = octet.constant dense<[14, -14, 18]> : tensor<3xi64>
//  CHECK-NEXT:   %5 = octet.constant dense<3.000000e+00> : tensor<4xf32>
//  CHECK-NEXT:   return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<2x3xi64>, tensor<3xi64>, tensor<4xf32>
//  CHECK-NEXT: }
func.func @fold_arith() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<2x3xi64>, tensor<3xi64>, tensor<4xf32>) {
  %a = octet.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = octet.constant dense<[0.5, 0.25, 2.0]> : tensor<3xf32>
  %two = octet.constant dense<2> : tensor<i64>
  %i = octet.constant dense<[7, -7, 9]> : tensor<3xi64>
  %col = octet.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %0 = octet.add %a, %b : tensor<3xf32>, tensor<3xf32>
  %1 = octet.div %a, %b : tensor<3xf32>, tensor<3xf32>
  %2 = octet.div %i, %two : tensor<3xi64>, tensor<i64>
  %3 = octet.sub %col, %i : tensor<2x1xi64>, tensor<3xi64>
  %4 = octet.mul %two, %i : tensor<i64>, tensor<3xi64>
  %s = octet.constant dense<1.5> : tensor<f32>
  %t = octet.constant dense<2.0> : tensor<4xf32>
  %5 = octet.mul %s, %t : tensor<f32>, tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<2x3xi64>, tensor<3xi64>, tensor<4xf32>
}

// -----

// Unsigned integers divide, compare and take abs as unsigned.
// CHECK-LABEL: func.func @fold_unsigned_and_min_max(
//  CHECK-NEXT:   %0 = octet.constant dense<[2, 3]> : tensor<2xui8>
//  CHECK-NEXT:   %1 = octet.constant dense<[200, 7]> : tensor<2xui8>
//  CHECK-NEXT:   %2 = octet.constant dense<false> : tensor<2xi1>
//  CHECK-NEXT:   return %0, %1, %2, %1 : tensor<2xui8>, tensor<2xui8>, tensor<2xi1>, tensor<2xui8>
//  CHECK-NEXT: }
func.func @fold_unsigned_and_min_max() -> (tensor<2xui8>, tensor<2xui8>, tensor<2xi1>, tensor<2xui8>) {
  %a = octet.constant dense<[200, 7]> : tensor<2xui8>
  %b = octet.constant dense<[100, 2]> : tensor<2xui8>
  %0 = octet.div %a, %b : tensor<2xui8>, tensor<2xui8>
  %1 = octet.max %a, %b : tensor<2xui8>, tensor<2xui8>
  %2 = octet.less %a, %b : tensor<2xui8>, tensor<2xui8>
  %3 = octet.abs %a : tensor<2xui8>
  return %0, %1, %2, %3 : tensor<2xui8>, tensor<2xui8>, tensor<2xi1>, tensor<2xui8>
}

// -----

// Integer division by zero and INT_MIN / -1 are left to the runtime.
// CHECK-LABEL: func.func @no_fold_integer_division_by_zero(
//  CHECK-NEXT:   %0 = octet.constant dense<-1> : tensor<i32>
//  CHECK-NEXT:   %1 = octet.constant dense<-2147483648> : tensor<i32>
//  CHECK-NEXT:   %2 = octet.constant dense<[4, 6]> : tensor<2xi64>
//  CHECK-NEXT:   %3 = octet.constant dense<[2, 0]> : tensor<2xi64>
//  CHECK-NEXT:   %4 = octet.div %2, %3 : tensor<2xi64>, tensor<2xi64>
//  CHECK-NEXT:   %5 = octet.div %1, %0 : tensor<i32>, tensor<i32>
//  CHECK-NEXT:   return %4, %5 : tensor<2xi64>, tensor<i32>
//  CHECK-NEXT: }
func.func @no_fold_integer_division_by_zero() -> (tensor<2xi64>, tensor<i32>) {
  %a = octet.constant dense<[4, 6]> : tensor<2xi64>
  %z = octet.constant dense<[2, 0]> : tensor<2xi64>
  %0 = octet.div %a, %z : tensor<2xi64>, tensor<2xi64>
  %min = octet.constant dense<-2147483648> : tensor<i32>
  %m1 = octet.constant dense<-1> : tensor<i32>
  %1 = octet.div %min, %m1 : tensor<i32>, tensor<i32>
  return %0, %1 : tensor<2xi64>, tensor<i32>
}

// -----

// Comparisons and logic on small constants.
// CHECK-LABEL: func.func @fold_predicates(
//  CHECK-NEXT:   %0 = octet.constant dense<[false, true, false]> : tensor<3xi1>
//  CHECK-NEXT:   %1 = octet.constant dense<[true, false, false]> : tensor<3xi1>
//  CHECK-NEXT:   %2 = octet.constant dense<[false, false, true]> : tensor<3xi1>
//  CHECK-NEXT:   %3 = octet.constant dense<false> : tensor<3xi1>
//  CHECK-NEXT:   %4 = octet.constant dense<[false, true, true]> : tensor<3xi1>
//  CHECK-NEXT:   return %0, %1, %2, %3, %4, %1 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
//  CHECK-NEXT: }
func.func @fold_predicates() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
  %a = octet.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = octet.constant dense<2> : tensor<i64>
  %0 = octet.equal %a, %b : tensor<3xi64>, tensor<i64>
  %1 = octet.less %a, %b : tensor<3xi64>, tensor<i64>
  %2 = octet.greater %a, %b : tensor<3xi64>, tensor<i64>
  %3 = octet.and %0, %1 : tensor<3xi1>, tensor<3xi1>
  %4 = octet.or %0, %2 : tensor<3xi1>, tensor<3xi1>
  %5 = octet.not %4 : tensor<3xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
}

// -----

// NaN compares unordered.
// CHECK-LABEL: func.func @fold_float_compare_nan(
//  CHECK-NEXT:   %0 = octet.constant dense<[false, true]> : tensor<2xi1>
//  CHECK-NEXT:   return %0 : tensor<2xi1>
//  CHECK-NEXT: }
func.func @fold_float_compare_nan() -> tensor<2xi1> {
  %a = octet.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %b = octet.constant dense<1.0> : tensor<f32>
  %0 = octet.equal %a, %b : tensor<2xf32>, tensor<f32>
  return %0 : tensor<2xi1>
}

// -----

// ONNX Cast: float to int truncates, int to narrower int wraps, bool is 0/1.
// CHECK-LABEL: func.func @fold_cast(
//  CHECK-NEXT:   %0 = octet.constant dense<[-1, 2, 0, 3]> : tensor<4xi32>
//  CHECK-NEXT:   %1 = octet.constant dense<[-1.000000e+00, 0.000000e+00, 3.000000e+02]> : tensor<3xf32>
//  CHECK-NEXT:   %2 = octet.constant dense<[true, false, true]> : tensor<3xi1>
//  CHECK-NEXT:   %3 = octet.constant dense<[255, 0, 44]> : tensor<3xui8>
//  CHECK-NEXT:   %4 = octet.constant dense<[1, 0]> : tensor<2xi64>
//  CHECK-NEXT:   return %0, %1, %2, %3, %4 : tensor<4xi32>, tensor<3xf32>, tensor<3xi1>, tensor<3xui8>, tensor<2xi64>
//  CHECK-NEXT: }
func.func @fold_cast() -> (tensor<4xi32>, tensor<3xf32>, tensor<3xi1>, tensor<3xui8>, tensor<2xi64>) {
  %f = octet.constant dense<[-1.5, 2.7, 0.0, 3.0]> : tensor<4xf32>
  %0 = octet.cast %f : tensor<4xf32> to tensor<4xi32>
  %i = octet.constant dense<[-1, 0, 300]> : tensor<3xi64>
  %1 = octet.cast %i : tensor<3xi64> to tensor<3xf32>
  %2 = octet.cast %i : tensor<3xi64> to tensor<3xi1>
  %3 = octet.cast %i : tensor<3xi64> to tensor<3xui8>
  %b = octet.constant dense<[true, false]> : tensor<2xi1>
  %4 = octet.cast %b : tensor<2xi1> to tensor<2xi64>
  return %0, %1, %2, %3, %4 : tensor<4xi32>, tensor<3xf32>, tensor<3xi1>, tensor<3xui8>, tensor<2xi64>
}

// -----

// NaN to integer is undefined: not folded.
// CHECK-LABEL: func.func @no_fold_cast_nan_to_int(
//  CHECK-NEXT:   %0 = octet.constant dense<0x7FC00000> : tensor<1xf32>
//  CHECK-NEXT:   %1 = octet.cast %0 : tensor<1xf32> to tensor<1xi32>
//  CHECK-NEXT:   return %1 : tensor<1xi32>
//  CHECK-NEXT: }
func.func @no_fold_cast_nan_to_int() -> tensor<1xi32> {
  %f = octet.constant dense<0x7FC00000> : tensor<1xf32>
  %0 = octet.cast %f : tensor<1xf32> to tensor<1xi32>
  return %0 : tensor<1xi32>
}

// -----

// Unary math on small constants.
// CHECK-LABEL: func.func @fold_unary(
//  CHECK-NEXT:   %0 = octet.constant dense<[1.000000e+00, 0.0183156393]> : tensor<2xf32>
//  CHECK-NEXT:   %1 = octet.constant dense<0.000000e+00> : tensor<2xf32>
//  CHECK-NEXT:   %2 = octet.constant dense<[-3, 4]> : tensor<2xi64>
//  CHECK-NEXT:   return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xi64>
//  CHECK-NEXT: }
func.func @fold_unary() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xi64>) {
  %a = octet.constant dense<[0.0, -4.0]> : tensor<2xf32>
  %0 = octet.exp %a : tensor<2xf32>
  %1 = octet.relu %a : tensor<2xf32>
  %i = octet.constant dense<[3, -4]> : tensor<2xi64>
  %2 = octet.neg %i : tensor<2xi64>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xi64>
}

// -----

// concat (1-D and 2-D), from_elements, reshape and expand of constants.
// CHECK-LABEL: func.func @fold_shape_data(
//  CHECK-NEXT:   %0 = octet.constant dense<[1, 12, 64]> : tensor<3xi64>
//  CHECK-NEXT:   %1 = octet.constant dense<{{\[\[}}1, 3], [2, 4{{\]\]}}> : tensor<2x2xi64>
//  CHECK-NEXT:   %2 = octet.constant dense<[2, 7, 2]> : tensor<3xi64>
//  CHECK-NEXT:   %3 = octet.constant dense<{{\[\[}}1, 2, 3], [4, 5, 6{{\]\]}}> : tensor<2x3xi32>
//  CHECK-NEXT:   %4 = octet.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00{{\]\]}}> : tensor<2x3xf32>
//  CHECK-NEXT:   %5 = octet.constant dense<{{\[\[}}5.000000e+00, 5.000000e+00], [6.000000e+00, 6.000000e+00{{\]\]}}> : tensor<2x2xf32>
//  CHECK-NEXT:   return %0, %1, %2, %3, %4, %5 : tensor<3xi64>, tensor<2x2xi64>, tensor<3xi64>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x2xf32>
//  CHECK-NEXT: }
func.func @fold_shape_data(%b: index) -> (tensor<3xi64>, tensor<2x2xi64>, tensor<3xi64>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %a = octet.constant dense<[1]> : tensor<1xi64>
  %c = octet.constant dense<[12, 64]> : tensor<2xi64>
  %0 = octet.concat %a, %c axis = 0 : tensor<1xi64>, tensor<2xi64>
  %m = octet.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %n = octet.constant dense<[[3], [4]]> : tensor<2x1xi64>
  %1 = octet.concat %m, %n axis = 1 : tensor<2x1xi64>, tensor<2x1xi64>
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %2 = octet.from_elements %c2, %c7, %c2 : tensor<3xi64>
  %v = octet.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %3 = octet.reshape %v : tensor<6xi32> -> tensor<2x3xi32>
  %r = octet.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %4 = octet.expand %r : tensor<3xf32> -> tensor<2x3xf32>
  %k = octet.constant dense<[[5.0], [6.0]]> : tensor<2x1xf32>
  %5 = octet.expand %k : tensor<2x1xf32> -> tensor<2x2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xi64>, tensor<2x2xi64>, tensor<3xi64>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x2xf32>
}

// -----

// x + 0, 0-broadcast scalars, x · 1, x - 0, x / 1, max(x, x).
// CHECK-LABEL: func.func @identities(
//  CHECK-NEXT:   return %arg0, %arg0, %arg0, %arg0, %arg0 : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>
//  CHECK-NEXT: }
func.func @identities(%x: tensor<?x768xf32>) -> (tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>) {
  %zero = octet.constant dense<0.0> : tensor<768xf32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %0 = octet.add %x, %zero : tensor<?x768xf32>, tensor<768xf32>
  %1 = octet.mul %one, %0 : tensor<f32>, tensor<?x768xf32>
  %2 = octet.sub %1, %zero : tensor<?x768xf32>, tensor<768xf32>
  %3 = octet.div %2, %one : tensor<?x768xf32>, tensor<f32>
  %4 = octet.max %3, %3 : tensor<?x768xf32>, tensor<?x768xf32>
  return %0, %1, %2, %3, %4 : tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>, tensor<?x768xf32>
}

// -----

// x + 0 is not x when broadcasting changes the type.
// CHECK-LABEL: func.func @no_fold_identity_that_broadcasts(
//  CHECK-NEXT:   %0 = octet.constant dense<1> : tensor<3xi64>
//  CHECK-NEXT:   %1 = octet.constant dense<0.000000e+00> : tensor<4xf32>
//  CHECK-NEXT:   %2 = octet.add %arg0, %1 : tensor<1xf32>, tensor<4xf32>
//  CHECK-NEXT:   %3 = octet.mul %arg1, %0 : tensor<?x1xi64>, tensor<3xi64>
//  CHECK-NEXT:   return %2, %3 : tensor<4xf32>, tensor<?x3xi64>
//  CHECK-NEXT: }
func.func @no_fold_identity_that_broadcasts(%x: tensor<1xf32>, %y: tensor<?x1xi64>) -> (tensor<4xf32>, tensor<?x3xi64>) {
  %zero = octet.constant dense<0.0> : tensor<4xf32>
  %0 = octet.add %x, %zero : tensor<1xf32>, tensor<4xf32>
  %one = octet.constant dense<1> : tensor<3xi64>
  %1 = octet.mul %y, %one : tensor<?x1xi64>, tensor<3xi64>
  return %0, %1 : tensor<4xf32>, tensor<?x3xi64>
}

// -----

// reshape∘reshape is one reshape; a reshape to the same dims is its input.
// CHECK-LABEL: func.func @reshapes(
//  CHECK-NEXT:   %0 = arith.muli %arg1, %arg2 : index
//  CHECK-NEXT:   %1 = octet.reshape %arg0(%0) : tensor<?x?x768xf32> -> tensor<?x768xf32>
//  CHECK-NEXT:   return %1, %arg0, %arg3 : tensor<?x768xf32>, tensor<?x?x768xf32>, tensor<2x3xf32>
//  CHECK-NEXT: }
func.func @reshapes(%x: tensor<?x?x768xf32>, %b: index, %s: index, %t: tensor<2x3xf32>) -> (tensor<?x768xf32>, tensor<?x?x768xf32>, tensor<2x3xf32>) {
  %0 = octet.reshape %x(%b, %s) : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  %n = arith.muli %b, %s : index
  %1 = octet.reshape %0(%n) : tensor<?x?x12x64xf32> -> tensor<?x768xf32>
  %d0 = octet.dim %x[0] : tensor<?x?x768xf32>
  %d1 = octet.dim %x[1] : tensor<?x?x768xf32>
  %2 = octet.reshape %x(%d0, %d1) : tensor<?x?x768xf32> -> tensor<?x?x768xf32>
  %3 = octet.reshape %t : tensor<2x3xf32> -> tensor<2x3xf32>
  return %1, %2, %3 : tensor<?x768xf32>, tensor<?x?x768xf32>, tensor<2x3xf32>
}

// -----

// Same type, but the sizes come from elsewhere: not an identity.
// CHECK-LABEL: func.func @no_fold_reshape_with_other_dims(
//  CHECK-NEXT:   %0 = octet.reshape %arg0(%arg2, %arg1) : tensor<?x?x768xf32> -> tensor<?x?x768xf32>
//  CHECK-NEXT:   return %0 : tensor<?x?x768xf32>
//  CHECK-NEXT: }
func.func @no_fold_reshape_with_other_dims(%x: tensor<?x?x768xf32>, %b: index, %s: index) -> tensor<?x?x768xf32> {
  %0 = octet.reshape %x(%s, %b) : tensor<?x?x768xf32> -> tensor<?x?x768xf32>
  return %0 : tensor<?x?x768xf32>
}

// -----

// transpose∘transpose composes; identity permutations vanish.
// CHECK-LABEL: func.func @transposes(
//  CHECK-NEXT:   %0 = octet.transpose %arg0 permutation = [0, 2, 3, 1] : tensor<?x?x12x64xf32>
//  CHECK-NEXT:   return %0, %arg0, %arg0 : tensor<?x12x64x?xf32>, tensor<?x?x12x64xf32>, tensor<?x?x12x64xf32>
//  CHECK-NEXT: }
func.func @transposes(%x: tensor<?x?x12x64xf32>) -> (tensor<?x12x64x?xf32>, tensor<?x?x12x64xf32>, tensor<?x?x12x64xf32>) {
  %0 = octet.transpose %x permutation = [0, 2, 1, 3] : tensor<?x?x12x64xf32>
  %1 = octet.transpose %0 permutation = [0, 1, 3, 2] : tensor<?x12x?x64xf32>
  %2 = octet.transpose %0 permutation = [0, 2, 1, 3] : tensor<?x12x?x64xf32>
  %3 = octet.transpose %x permutation = [0, 1, 2, 3] : tensor<?x?x12x64xf32>
  return %1, %2, %3 : tensor<?x12x64x?xf32>, tensor<?x?x12x64xf32>, tensor<?x?x12x64xf32>
}

// -----

// Imported weights (resource blobs) are never folded or copied.
// CHECK-LABEL: func.func @no_fold_resource_constants(
//  CHECK-NEXT:   %0 = octet.constant dense_resource<weight> : tensor<2xf32>
//  CHECK-NEXT:   %1 = octet.constant dense<1.000000e+00> : tensor<2xf32>
//  CHECK-NEXT:   %2 = octet.add %0, %1 : tensor<2xf32>, tensor<2xf32>
//  CHECK-NEXT:   %3 = octet.neg %0 : tensor<2xf32>
//  CHECK-NEXT:   %4 = octet.reshape %0 : tensor<2xf32> -> tensor<1x2xf32>
//  CHECK-NEXT:   return %2, %3, %4 : tensor<2xf32>, tensor<2xf32>, tensor<1x2xf32>
//  CHECK-NEXT: }
func.func @no_fold_resource_constants() -> (tensor<2xf32>, tensor<2xf32>, tensor<1x2xf32>) {
  %w = octet.constant dense_resource<weight> : tensor<2xf32>
  %one = octet.constant dense<1.0> : tensor<2xf32>
  %0 = octet.add %w, %one : tensor<2xf32>, tensor<2xf32>
  %1 = octet.neg %w : tensor<2xf32>
  %2 = octet.reshape %w : tensor<2xf32> -> tensor<1x2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<1x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803F00000040"
    }
  }
#-}
