// RUN: octet-opt %s -octet-smoothquant -split-input-file | FileCheck %s
// A second run leaves smoothed linears alone (the marker), so the output is the same.
// RUN: octet-opt %s -octet-smoothquant -octet-smoothquant -split-input-file | FileCheck %s

// LayerNorm → linear, α = 0.5, s_j = sqrt(max|X_j|) / sqrt(max|W_j|) with
// max|X| = [4, 1, 16, 0] and max|W| over rows = [1, 4, 1, 1]:
// s = [2, 0.5, 4, 1] (the last channel was never nonzero: 1).
// W rows × s, γ and β / s, input_absmax / s; the range [-3, 16] becomes the
// channel-wise bound [min_j max(-3, -|X_j|) / s_j, max_j min(16, |X_j|) / s_j] = [-2, 4].
// CHECK-LABEL: func.func @layer_norm_linear(
//   CHECK-DAG:   %[[G:.*]] = octet.constant dense<[5.000000e-01, 4.000000e+00, 1.000000e+00, 8.000000e+00]> : tensor<4xf32>
//   CHECK-DAG:   %[[B:.*]] = octet.constant dense<[2.500000e-01, 2.000000e+00, -5.000000e-01, 3.000000e+00]> : tensor<4xf32>
//   CHECK-DAG:   %[[W:.*]] = octet.constant dense<{{\[}}[2.000000e+00, -1.000000e+00], [2.000000e+00, -1.000000e+00], [-4.000000e+00, 2.000000e+00], [1.000000e+00, 1.000000e+00]]> : tensor<4x2xf32>
//   CHECK-DAG:   %[[BIAS:.*]] = octet.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
//       CHECK:   %[[LN:.*]] = octet.layer_norm %arg0, %[[G]], %[[B]] axis = 2
//       CHECK:   %[[Y:.*]] = octet.linear %[[LN]], %[[W]], %[[BIAS]]
//  CHECK-SAME:     octet.calib = {input_absmax = dense<[2.000000e+00, 2.000000e+00, 4.000000e+00, 0.000000e+00]> : tensor<4xf32>, input_max = 4.000000e+00 : f32, input_min = -2.000000e+00 : f32}
//  CHECK-SAME:     octet.smoothquant = {alpha = 5.000000e-01 : f32}
//   CHECK-NOT:   octet.constant
//       CHECK:   return %[[Y]]
func.func @layer_norm_linear(%x: tensor<?x?x4xf32>) -> tensor<?x?x2xf32> {
  %g = octet.constant dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32>
  %b = octet.constant dense<[0.5, 1.0, -2.0, 3.0]> : tensor<4xf32>
  %w = octet.constant dense<[[1.0, -0.5], [4.0, -2.0], [-1.0, 0.5], [1.0, 1.0]]> : tensor<4x2xf32>
  %bias = octet.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %ln = octet.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-12 : tensor<?x?x4xf32>, tensor<4xf32>, tensor<4xf32>
  %y = octet.linear %ln, %w, %bias {octet.calib = {input_absmax = dense<[4.0, 1.0, 16.0, 0.0]> : tensor<4xf32>, input_min = -3.0 : f32, input_max = 16.0 : f32}}
         : tensor<?x?x4xf32>, tensor<4x2xf32>, tensor<2xf32>
  return %y : tensor<?x?x2xf32>
}

// -----

// Two linears ([N, K] weights) share the LayerNorm's result, so they share
// one s, from the channel-wise max of their statistics: max|X| =
// max([4, 1], [16, 4]) = [16, 4], max|W_j| = max([1, 1], [4, 16]) = [4, 16]:
// s = [4/2, 2/4] = [2, 0.5]. Each keeps its own input_absmax, divided by s.
// The γ constant is shared with another LayerNorm: that one keeps it.
// CHECK-LABEL: func.func @shared_input(
//   CHECK-DAG:   %[[G0:.*]] = octet.constant dense<1.000000e+00> : tensor<2xf32>
//   CHECK-DAG:   %[[G:.*]] = octet.constant dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>
//   CHECK-DAG:   %[[WA:.*]] = octet.constant dense<{{\[}}[2.000000e+00, 5.000000e-01], [-2.000000e+00, 2.500000e-01]]> : tensor<2x2xf32>
//   CHECK-DAG:   %[[WB:.*]] = octet.constant dense<8.000000e+00> : tensor<1x2xf32>
//       CHECK:   %[[LN:.*]] = octet.layer_norm %arg0, %[[G]] axis = 1
//       CHECK:   octet.linear %[[LN]], %[[WA]] transpose_weight {octet.calib = {input_absmax = dense<2.000000e+00> : tensor<2xf32>}, octet.smoothquant
//       CHECK:   octet.linear %[[LN]], %[[WB]] transpose_weight {octet.calib = {input_absmax = dense<8.000000e+00> : tensor<2xf32>}, octet.smoothquant
//       CHECK:   octet.layer_norm %arg0, %[[G0]] axis = 1
func.func @shared_input(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x2xf32>) {
  %g = octet.constant dense<1.0> : tensor<2xf32>
  %wa = octet.constant dense<[[1.0, 1.0], [-1.0, 0.5]]> : tensor<2x2xf32>
  %wb = octet.constant dense<[[4.0, 16.0]]> : tensor<1x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %a = octet.linear %ln, %wa transpose_weight {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}}
         : tensor<?x2xf32>, tensor<2x2xf32>
  %b = octet.linear %ln, %wb transpose_weight {octet.calib = {input_absmax = dense<[16.0, 4.0]> : tensor<2xf32>}}
         : tensor<?x2xf32>, tensor<1x2xf32>
  %other = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  return %a, %b, %other : tensor<?x2xf32>, tensor<?x1xf32>, tensor<?x2xf32>
}

// -----

// add_layer_norm → the merged Q/K/V linear ([N, K] weight, torch layout)
// whose slices feed attention: max|X| = [1, 64], max|W_j| = [4, 4]:
// s = [1/2, 8/2] = [0.5, 4]; γ, β / s, the weight's columns (input
// channels) × s, the bias unchanged.
// CHECK-LABEL: func.func @add_layer_norm_qkv(
//   CHECK-DAG:   %[[G:.*]] = octet.constant dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
//   CHECK-DAG:   %[[B:.*]] = octet.constant dense<[-2.000000e+00, 1.250000e-01]> : tensor<2xf32>
//   CHECK-DAG:   %[[W:.*]] = octet.constant dense<{{\[}}[5.000000e-01, 4.000000e+00], [2.000000e+00, -1.600000e+01], [-1.000000e+00, 8.000000e+00], [5.000000e-01, 2.000000e+00], [2.500000e-01, 4.000000e+00], [1.000000e+00, 1.600000e+01]]> : tensor<6x2xf32>
//   CHECK-DAG:   %[[BIAS:.*]] = octet.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]> : tensor<6xf32>
//       CHECK:   %[[LN:.*]] = octet.add_layer_norm %arg0, %arg1, %[[G]], %[[B]]
//       CHECK:   %[[QKV:.*]] = octet.linear %[[LN]], %[[W]], %[[BIAS]] transpose_weight {octet.calib = {input_absmax = dense<[2.000000e+00, 1.600000e+01]> : tensor<2xf32>}, octet.smoothquant = {alpha = 5.000000e-01 : f32}}
//       CHECK:   octet.attention
func.func @add_layer_norm_qkv(%x: tensor<?x?x2xf32>, %r: tensor<?x?x2xf32>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x?x2xf32> {
  %g = octet.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = octet.constant dense<[-1.0, 0.5]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [4.0, -4.0], [-2.0, 2.0], [1.0, 0.5], [0.5, 1.0], [2.0, 4.0]]> : tensor<6x2xf32>
  %bias = octet.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %ln = octet.add_layer_norm %x, %r, %g, %b axis = 2 epsilon = 1.0e-12 : tensor<?x?x2xf32>, tensor<2xf32>, tensor<2xf32>
  %qkv = octet.linear %ln, %w, %bias transpose_weight {octet.calib = {input_absmax = dense<[1.0, 64.0]> : tensor<2xf32>}}
           : tensor<?x?x2xf32>, tensor<6x2xf32>, tensor<6xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [2] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %k = octet.slice %qkv axes = [2] starts = [2] ends = [4] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %v = octet.slice %qkv axes = [2] starts = [4] ends = [6] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %a = octet.attention %q, %k, %v, %mask num_heads = 1 scale = 0.5 : tensor<?x?x2xf32>, tensor<?x1x1x?xf32>
  return %a : tensor<?x?x2xf32>
}

// -----

// attention → output projection: 1/s goes into V's columns [4, 6) of the
// merged Q/K/V weight ([K, N] here) and bias; Q and K are untouched.
// max|X| = [4, 0.25], max|W_j| of the projection = [1, 4]: s = [2, 0.25].
// CHECK-LABEL: func.func @attention_output(
//   CHECK-DAG:   %[[WQKV:.*]] = octet.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 2.500000e+00, 2.400000e+01], [-1.000000e+00, -2.000000e+00, -3.000000e+00, -4.000000e+00, -2.500000e+00, -2.400000e+01]]> : tensor<2x6xf32>
//   CHECK-DAG:   %[[BQKV:.*]] = octet.constant dense<[1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 5.000000e-01, 4.000000e+00]> : tensor<6xf32>
//   CHECK-DAG:   %[[WO:.*]] = octet.constant dense<{{\[}}[2.000000e+00, -1.000000e+00], [1.000000e+00, 2.500000e-01]]> : tensor<2x2xf32>
//       CHECK:   %[[QKV:.*]] = octet.linear %arg0, %[[WQKV]], %[[BQKV]] :
//   CHECK-NOT:   octet.smoothquant
//       CHECK:   %[[A:.*]] = octet.attention
//       CHECK:   octet.linear %[[A]], %[[WO]] {octet.calib = {input_absmax = dense<[2.000000e+00, 1.000000e+00]> : tensor<2xf32>}, octet.smoothquant
func.func @attention_output(%x: tensor<?x?x2xf32>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x?x2xf32> {
  %wqkv = octet.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]]> : tensor<2x6xf32>
  %bqkv = octet.constant dense<1.0> : tensor<6xf32>
  %wo = octet.constant dense<[[1.0, -0.5], [4.0, 1.0]]> : tensor<2x2xf32>
  %qkv = octet.linear %x, %wqkv, %bqkv : tensor<?x?x2xf32>, tensor<2x6xf32>, tensor<6xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [2] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %k = octet.slice %qkv axes = [2] starts = [2] ends = [4] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %v = octet.slice %qkv axes = [2] starts = [4] ends = [6] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %a = octet.attention %q, %k, %v, %mask num_heads = 2 scale = 1.0 : tensor<?x?x2xf32>, tensor<?x1x1x?xf32>
  %y = octet.linear %a, %wo {octet.calib = {input_absmax = dense<[4.0, 0.25]> : tensor<2xf32>}} : tensor<?x?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x?x2xf32>
}

// -----

// An unmerged V projection (its own linear) is scaled the same way.
// max|X| = [16, 1], max|W_j| = [1, 1]: s = [4, 1].
// CHECK-LABEL: func.func @attention_unmerged_v(
//   CHECK-DAG:   %[[WV:.*]] = octet.constant dense<{{\[}}[2.500000e-01, 1.000000e+00], [5.000000e-01, 2.000000e+00]]> : tensor<2x2xf32>
//   CHECK-DAG:   %[[BV:.*]] = octet.constant dense<[2.500000e-01, 1.000000e+00]> : tensor<2xf32>
//       CHECK:   %[[V:.*]] = octet.linear %arg0, %[[WV]], %[[BV]] :
//       CHECK:   octet.attention %arg0, %arg0, %[[V]]
func.func @attention_unmerged_v(%x: tensor<?x?x2xf32>) -> tensor<?x?x2xf32> {
  %wv = octet.constant dense<[[1.0, 1.0], [2.0, 2.0]]> : tensor<2x2xf32>
  %bv = octet.constant dense<1.0> : tensor<2xf32>
  %wo = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %v = octet.linear %x, %wv, %bv : tensor<?x?x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %a = octet.attention %x, %x, %v num_heads = 1 scale = 1.0 : tensor<?x?x2xf32>
  %y = octet.linear %a, %wo {octet.calib = {input_absmax = dense<[16.0, 1.0]> : tensor<2xf32>}} : tensor<?x?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x?x2xf32>
}

// -----

// fused_linear (GELU) → FFN-out: GELU is not positively homogeneous, so 1/s
// cannot go into the FFN-in weight; it becomes a [K] extra operand and one
// multiply after the epilogue. max|X| = [1, 4, 9], max|W_j| = [4, 1, 1]:
// s = [0.5, 2, 3] (1/3 rounds in f32: the general case).
// CHECK-LABEL: func.func @gelu_ffn_out(
//   CHECK-DAG:   %[[INV:.*]] = octet.constant dense<[2.000000e+00, 5.000000e-01, 0.333333343]> : tensor<3xf32>
//   CHECK-DAG:   %[[W2:.*]] = octet.constant dense<{{\[}}[2.000000e+00, -1.000000e+00], [2.000000e+00, 1.000000e+00], [3.000000e+00, 1.500000e+00]]> : tensor<3x2xf32>
//       CHECK:   %[[H:.*]] = octet.fused_linear %arg0, %arg1, %arg2 extra(%[[INV]] : tensor<3xf32>) {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32, %[[F:.*]]: f32):
//       CHECK:     %[[P:.*]] = arith.addf
//  CHECK-NEXT:     %[[M:.*]] = arith.mulf %[[ACC]], %{{.*}} : f32
//  CHECK-NEXT:     %[[G:.*]] = arith.mulf %[[M]], %[[P]] : f32
//  CHECK-NEXT:     %[[S:.*]] = arith.mulf %[[G]], %[[F]] : f32
//  CHECK-NEXT:     octet.yield %[[S]] : f32
//  CHECK-NEXT:   } : tensor<?x2xf32>, tensor<2x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
//       CHECK:   octet.linear %[[H]], %[[W2]] {octet.calib = {input_absmax = dense<[2.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>}, octet.smoothquant
func.func @gelu_ffn_out(%x: tensor<?x2xf32>, %w1: tensor<2x3xf32>, %b1: tensor<3xf32>) -> tensor<?x2xf32> {
  %w2 = octet.constant dense<[[4.0, -2.0], [1.0, 0.5], [1.0, 0.5]]> : tensor<3x2xf32>
  %h = octet.fused_linear %x, %w1, %b1 {
  ^bb0(%acc: f32):
    %half = arith.constant 5.000000e-01 : f32
    %one = arith.constant 1.000000e+00 : f32
    %rsqrt2 = arith.constant 0.707106769 : f32
    %s = arith.mulf %acc, %rsqrt2 : f32
    %e = math.erf %s : f32
    %p = arith.addf %e, %one : f32
    %m = arith.mulf %acc, %half : f32
    %g = arith.mulf %m, %p : f32
    octet.yield %g : f32
  } : tensor<?x2xf32>, tensor<2x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %y = octet.linear %h, %w2 {octet.calib = {input_absmax = dense<[1.0, 4.0, 9.0]> : tensor<3xf32>}} : tensor<?x3xf32>, tensor<3x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// A plain linear producer absorbs 1/s in its output columns and bias.
// max|X| = [4, 1], max|W_j| = [1, 16]: s = [2, 0.25].
// CHECK-LABEL: func.func @linear_linear(
//   CHECK-DAG:   %[[W1:.*]] = octet.constant dense<{{\[}}[5.000000e-01, 4.000000e+00], [-5.000000e-01, 8.000000e+00]]> : tensor<2x2xf32>
//   CHECK-DAG:   %[[B1:.*]] = octet.constant dense<[1.500000e+00, -4.000000e+00]> : tensor<2xf32>
//   CHECK-DAG:   %[[W2:.*]] = octet.constant dense<{{\[}}[2.000000e+00], [4.000000e+00]]> : tensor<2x1xf32>
//       CHECK:   %[[H:.*]] = octet.linear %arg0, %[[W1]], %[[B1]] :
//       CHECK:   octet.linear %[[H]], %[[W2]] {octet.calib
func.func @linear_linear(%x: tensor<?x2xf32>) -> tensor<?x1xf32> {
  %w1 = octet.constant dense<[[1.0, 1.0], [-1.0, 2.0]]> : tensor<2x2xf32>
  %b1 = octet.constant dense<[3.0, -1.0]> : tensor<2xf32>
  %w2 = octet.constant dense<[[1.0], [16.0]]> : tensor<2x1xf32>
  %h = octet.linear %x, %w1, %b1 : tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>
  %y = octet.linear %h, %w2 {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x1xf32>
  return %y : tensor<?x1xf32>
}

// -----

// With per-channel signed extremes (the calibration step writes them) the
// range of X/s is exact: s = [2, 1] (max|X| = [4, 1], max|W| = [1, 1]);
// channels [-4, 1] and [-1, 0.5] become [-2, 0.5] and [-1, 0.5], so the
// range is [-2, 0.5] (from input_absmax alone the bound would be [-2, 1]).
// CHECK-LABEL: func.func @channel_extremes(
//       CHECK:   octet.linear
//  CHECK-SAME:     octet.calib = {input_absmax = dense<[2.000000e+00, 1.000000e+00]> : tensor<2xf32>, input_channel_max = dense<5.000000e-01> : tensor<2xf32>, input_channel_min = dense<[-2.000000e+00, -1.000000e+00]> : tensor<2xf32>, input_max = 5.000000e-01 : f32, input_min = -2.000000e+00 : f32}
func.func @channel_extremes(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>, input_min = -4.0 : f32, input_max = 1.0 : f32,
                               input_channel_min = dense<[-4.0, -1.0]> : tensor<2xf32>, input_channel_max = dense<[1.0, 0.5]> : tensor<2xf32>}}
         : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}
