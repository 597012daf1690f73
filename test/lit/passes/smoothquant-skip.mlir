// RUN: octet-opt %s -octet-smoothquant="duplicate-norm=false" -split-input-file -verify-diagnostics | FileCheck %s

// Cases left unsmoothed (with duplicate-norm off; smoothquant-duplicate-norm.mlir has
// the default): nothing changes, and a remark says why (except for
// linears without calibration, which are simply not candidates).

// No octet.calib: not a candidate.
// CHECK-LABEL: func.func @no_calibration(
//   CHECK-NOT:   octet.smoothquant
//       CHECK:   octet.constant dense<[2.000000e+00, 4.000000e+00]>
//   CHECK-NOT:   octet.smoothquant
func.func @no_calibration(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  %y = octet.linear %ln, %w : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// The weight is not a constant (a function argument).
// CHECK-LABEL: func.func @weight_not_constant(
//       CHECK:   octet.constant dense<[2.000000e+00, 4.000000e+00]>
//   CHECK-NOT:   octet.smoothquant
func.func @weight_not_constant(%x: tensor<?x2xf32>, %w: tensor<2x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: a weight reading its input is not an f32 constant}}
  %y = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Post-LN BERT: the LayerNorm's result is also the next residual, which
// needs it unscaled, so γ and β cannot absorb 1/s.
// CHECK-LABEL: func.func @residual_use(
//       CHECK:   octet.constant dense<[2.000000e+00, 4.000000e+00]>
//       CHECK:   octet.constant dense<1.000000e+00> : tensor<2x2xf32>
//   CHECK-NOT:   octet.smoothquant
func.func @residual_use(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: its input also feeds 'octet.add_layer_norm', which needs it unscaled}}
  %h = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  %y = octet.add_layer_norm %h, %ln, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// X is also an extra operand of a fused_linear reading it: not a GEMM input use.
// CHECK-LABEL: func.func @extra_use(
//   CHECK-NOT:   octet.smoothquant
func.func @extra_use(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: its input also feeds 'octet.fused_linear', which needs it unscaled}}
  %y = octet.fused_linear %ln, %w extra(%ln : tensor<?x2xf32>) {
  ^bb0(%acc: f32, %r: f32):
    %s = arith.addf %acc, %r : f32
    octet.yield %s : f32
  } {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32> -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// One of two linears sharing X has no calibration: X/s would change it.
// CHECK-LABEL: func.func @uncalibrated_sibling(
//   CHECK-NOT:   octet.smoothquant
func.func @uncalibrated_sibling(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %g = octet.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %ln = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-12 : tensor<?x2xf32>, tensor<2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: its input also feeds a linear without octet.calib}}
  %a = octet.linear %ln, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  %b = octet.linear %ln, %w : tensor<?x2xf32>, tensor<2x2xf32>
  return %a, %b : tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// X is a function argument (or any op that cannot absorb 1/s).
// CHECK-LABEL: func.func @argument_input(
//   CHECK-NOT:   octet.smoothquant
func.func @argument_input(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: its input comes from a function argument, which cannot absorb 1/s}}
  %y = octet.linear %x, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// A GELU between the linears that fuse-gemm-epilogue did not take (here the
// linear has a second use): a lone gelu cannot absorb 1/s.
// CHECK-LABEL: func.func @lone_gelu(
//   CHECK-NOT:   octet.smoothquant
func.func @lone_gelu(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %g = octet.gelu %x : tensor<?x2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: its input comes from 'octet.gelu', which cannot absorb 1/s}}
  %y = octet.linear %g, %w {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Attention whose V slice overlaps another reader's columns: scaling V's
// columns would change that reader too.
// CHECK-LABEL: func.func @attention_v_shared(
//   CHECK-NOT:   octet.smoothquant
func.func @attention_v_shared(%x: tensor<?x?x2xf32>) -> (tensor<?x?x2xf32>, tensor<?x?x4xf32>) {
  %wqkv = octet.constant dense<1.0> : tensor<2x6xf32>
  %wo = octet.constant dense<1.0> : tensor<2x2xf32>
  %qkv = octet.linear %x, %wqkv : tensor<?x?x2xf32>, tensor<2x6xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [2] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %v = octet.slice %qkv axes = [2] starts = [4] ends = [6] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x2xf32>
  %kv = octet.slice %qkv axes = [2] starts = [2] ends = [6] steps = [1] : tensor<?x?x6xf32> -> tensor<?x?x4xf32>
  %a = octet.attention %q, %q, %v num_heads = 1 scale = 1.0 : tensor<?x?x2xf32>
  // expected-remark @below {{octet-smoothquant: not smoothed: the linear producing V has other readers of V's columns}}
  %y = octet.linear %a, %wo {octet.calib = {input_absmax = dense<[4.0, 1.0]> : tensor<2xf32>}} : tensor<?x?x2xf32>, tensor<2x2xf32>
  return %y, %kv : tensor<?x?x2xf32>, tensor<?x?x4xf32>
}
