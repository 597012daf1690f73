// RUN: octet-opt %s -octet-eliminate-qdq -split-input-file | FileCheck %s

// ONNX Runtime's QDQ MatMul: Q → DQ on the activation, DQ of a per-channel
// int8 constant weight (axis 1 of [K, N], zero points all 0), Q → DQ on the
// result. The GEMM and the result's quantize become one qlinear that
// requantizes; the weight's dequantize and its constants go.
// CHECK-LABEL: func.func @ort_qdq_matmul(
//  CHECK-NEXT:   %[[XS:.*]] = octet.constant dense<5.000000e-02> : tensor<f32>
//  CHECK-NEXT:   %[[XZP:.*]] = octet.constant dense<128> : tensor<ui8>
//  CHECK-NEXT:   %[[Q:.*]] = octet.quantize %arg0, %[[XS]], %[[XZP]]
//  CHECK-NEXT:   %[[WQ:.*]] = octet.constant dense<{{.*}}> : tensor<2x3xi8>
//  CHECK-NEXT:   %[[WS:.*]] = octet.constant dense<[1.000000e-01, 2.000000e-01, 4.000000e-01]> : tensor<3xf32>
//  CHECK-NEXT:   %[[YS:.*]] = octet.constant dense<2.500000e-01> : tensor<f32>
//  CHECK-NEXT:   %[[YZP:.*]] = octet.constant dense<3> : tensor<ui8>
//  CHECK-NEXT:   %[[Y:.*]] = octet.qlinear %[[Q]], %[[WQ]] scales(%[[XS]], %[[XZP]], %[[WS]] : tensor<f32>, tensor<ui8>, tensor<3xf32>) requantize(%[[YS]], %[[YZP]] : tensor<f32>, tensor<ui8>) {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32):
//  CHECK-NEXT:     octet.yield %[[ACC]] : f32
//  CHECK-NEXT:   } : tensor<?x?x2xui8>, tensor<2x3xi8> -> tensor<?x?x3xui8>
//  CHECK-NEXT:   %[[D:.*]] = octet.dequantize %[[Y]], %[[YS]], %[[YZP]]
//  CHECK-NEXT:   return %[[D]]
//   CHECK-NOT:   octet.matmul
func.func @ort_qdq_matmul(%x: tensor<?x?x2xf32>) -> tensor<?x?x3xf32> {
  %xs = octet.constant dense<0.05> : tensor<f32>
  %xzp = octet.constant dense<128> : tensor<ui8>
  %q = octet.quantize %x, %xs, %xzp : tensor<?x?x2xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x2xui8>
  %a = octet.dequantize %q, %xs, %xzp : tensor<?x?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x?x2xf32>
  %wq = octet.constant dense<[[1, -2, 3], [-4, 5, -127]]> : tensor<2x3xi8>
  %ws = octet.constant dense<[0.1, 0.2, 0.4]> : tensor<3xf32>
  %wzp = octet.constant dense<0> : tensor<3xi8>
  %w = octet.dequantize %wq, %ws, %wzp axis = 1 : tensor<2x3xi8>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xf32>
  %y = octet.matmul %a, %w : tensor<?x?x2xf32>, tensor<2x3xf32>
  %ys = octet.constant dense<0.25> : tensor<f32>
  %yzp = octet.constant dense<3> : tensor<ui8>
  %yq = octet.quantize %y, %ys, %yzp : tensor<?x?x3xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x3xui8>
  %yd = octet.dequantize %yq, %ys, %yzp : tensor<?x?x3xui8>, tensor<f32>, tensor<ui8> -> tensor<?x?x3xf32>
  return %yd : tensor<?x?x3xf32>
}

// -----

// An activation DQ read by three GEMMs (Q, K, V) and a float op: each GEMM
// becomes a qlinear with an f32 result (no quantize follows), and the DQ
// stays for the add.
// CHECK-LABEL: func.func @shared_activation(
//       CHECK:   %[[Q:.*]] = octet.quantize %arg0
//       CHECK:   %[[A:.*]] = octet.dequantize %[[Q]]
//   CHECK-NOT:   octet.matmul
//       CHECK:   octet.qlinear %[[Q]],
//       CHECK:   } : tensor<?x2xui8>, tensor<2x2xi8> -> tensor<?x2xf32>
//       CHECK:   octet.qlinear %[[Q]],
//       CHECK:   octet.qlinear %[[Q]],
//       CHECK:   octet.add %[[A]], %[[A]]
func.func @shared_activation(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %xs = octet.constant dense<0.05> : tensor<f32>
  %xzp = octet.constant dense<128> : tensor<ui8>
  %q = octet.quantize %x, %xs, %xzp : tensor<?x2xf32>, tensor<f32>, tensor<ui8> -> tensor<?x2xui8>
  %a = octet.dequantize %q, %xs, %xzp : tensor<?x2xui8>, tensor<f32>, tensor<ui8> -> tensor<?x2xf32>
  %wq = octet.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi8>
  %ws = octet.constant dense<[0.1, 0.2]> : tensor<2xf32>
  %w = octet.dequantize %wq, %ws axis = 1 : tensor<2x2xi8>, tensor<2xf32> -> tensor<2x2xf32>
  %y0 = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x2xf32>
  %y1 = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x2xf32>
  %y2 = octet.matmul %a, %w : tensor<?x2xf32>, tensor<2x2xf32>
  %s = octet.add %a, %a : tensor<?x2xf32>, tensor<?x2xf32>
  return %y0, %y1, %y2, %s : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// A linear with a transposed [N, K] weight (per-channel axis 0), a bias and
// a per-tensor weight scale (splatted per channel); the activation is a ui8
// argument's DQ with a 1-element scale and no zero point (0), and the
// result is quantized to i8 without a zero point (0).
// CHECK-LABEL: func.func @linear_transposed(
//   CHECK-DAG:   %[[WS:.*]] = octet.constant dense<5.000000e-01> : tensor<3xf32>
//   CHECK-DAG:   %[[ZP:.*]] = octet.constant dense<0> : tensor<ui8>
//   CHECK-DAG:   %[[YZP:.*]] = octet.constant dense<0> : tensor<i8>
//   CHECK-DAG:   %[[XS:.*]] = octet.reshape %arg1 : tensor<1xf32> -> tensor<f32>
//       CHECK:   octet.qlinear %arg0, %{{.*}}, %{{.*}} scales(%[[XS]], %[[ZP]], %[[WS]] : tensor<f32>, tensor<ui8>, tensor<3xf32>) transpose_weight requantize(%arg2, %[[YZP]] : tensor<f32>, tensor<i8>) {
//       CHECK:   } : tensor<4x2xui8>, tensor<3x2xi8>, tensor<3xf32> -> tensor<4x3xi8>
func.func @linear_transposed(%xq: tensor<4x2xui8>, %xs: tensor<1xf32>, %ys: tensor<f32>) -> tensor<4x3xi8> {
  %a = octet.dequantize %xq, %xs : tensor<4x2xui8>, tensor<1xf32> -> tensor<4x2xf32>
  %wq = octet.constant dense<[[1, -2], [3, 4], [5, 6]]> : tensor<3x2xi8>
  %ws = octet.constant dense<0.5> : tensor<f32>
  %w = octet.dequantize %wq, %ws : tensor<3x2xi8>, tensor<f32> -> tensor<3x2xf32>
  %b = octet.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = octet.linear %a, %w, %b transpose_weight : tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xf32>
  %yq = octet.quantize %y, %ys : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xi8>
  return %yq : tensor<4x3xi8>
}

// -----

// Q∘DQ with equal parameters (the same values or equal constants) cancels;
// with a different scale it stays as two ops.
// CHECK-LABEL: func.func @requantize_pairs(
//  CHECK-NEXT:   %[[S1:.*]] = octet.constant dense<1.000000e-01> : tensor<f32>
//  CHECK-NEXT:   %[[S2:.*]] = octet.constant dense<2.000000e-01> : tensor<f32>
//  CHECK-NEXT:   %[[D:.*]] = octet.dequantize %arg0, %[[S1]]
//  CHECK-NEXT:   %[[Q:.*]] = octet.quantize %[[D]], %[[S2]]
//  CHECK-NEXT:   return %arg0, %arg0, %[[Q]]
func.func @requantize_pairs(%q: tensor<?x4xi8>) -> (tensor<?x4xi8>, tensor<?x4xi8>, tensor<?x4xi8>) {
  %s = octet.constant dense<0.1> : tensor<f32>
  %s_copy = octet.constant dense<0.1> : tensor<f32>
  %s2 = octet.constant dense<0.2> : tensor<f32>
  %d = octet.dequantize %q, %s : tensor<?x4xi8>, tensor<f32> -> tensor<?x4xf32>
  %same = octet.quantize %d, %s : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xi8>
  %equal = octet.quantize %d, %s_copy : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xi8>
  %other = octet.quantize %d, %s2 : tensor<?x4xf32>, tensor<f32> -> tensor<?x4xi8>
  return %same, %equal, %other : tensor<?x4xi8>, tensor<?x4xi8>, tensor<?x4xi8>
}

// -----

// DQ(Q(x)) between float ops is fake quantization: it changes values and stays.
// CHECK-LABEL: func.func @fake_quant_stays(
//       CHECK:   octet.quantize
//       CHECK:   octet.dequantize
//       CHECK:   octet.softmax
func.func @fake_quant_stays(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %s = octet.constant dense<0.1> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %q = octet.quantize %x, %s, %zp : tensor<?x4xf32>, tensor<f32>, tensor<ui8> -> tensor<?x4xui8>
  %d = octet.dequantize %q, %s, %zp : tensor<?x4xui8>, tensor<f32>, tensor<ui8> -> tensor<?x4xf32>
  %y = octet.softmax %d axis = 1 : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
