// RUN: octet-opt %s -octet-plan-memory -split-input-file | FileCheck %s

// A chain ping-pongs between two slots: each result needs a slot other than
// its operand's, and the operand before that is dead. The last value is the
// output and has no slot.
// CHECK-LABEL: func.func @ping_pong(
//  CHECK-SAME:     attributes {octet.arena = ["256*batch*sequence", "256*batch*sequence"]}
//       CHECK:   octet.relu %arg0 {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.relu %{{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   octet.relu %{{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.relu %{{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[OUT:.*]] = octet.relu %{{[0-9]+}} :
//  CHECK-NEXT:   return %[[OUT]]
func.func @ping_pong(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> tensor<?x?x64xf32> {
  %a = octet.relu %x : tensor<?x?x64xf32>
  %b = octet.relu %a : tensor<?x?x64xf32>
  %c = octet.relu %b : tensor<?x?x64xf32>
  %d = octet.relu %c : tensor<?x?x64xf32>
  %e = octet.relu %d : tensor<?x?x64xf32>
  return %e : tensor<?x?x64xf32>
}

// -----

// %a is read again by %d, so it keeps slot 0 while %b and %c need two more;
// %d then takes %b's slot, dead since %c. A result never shares a slot with
// its operands, even ones read for the last time: %d gets neither 0 nor 2.
// CHECK-LABEL: func.func @late_use(
//  CHECK-SAME:     octet.arena = ["256*batch*sequence", "256*batch*sequence", "256*batch*sequence"]
//       CHECK:   %[[A:.*]] = octet.relu %arg0 {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[B:.*]] = octet.relu %[[A]] {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[C:.*]] = octet.relu %[[B]] {octet.slot = 2 : i64}
//  CHECK-NEXT:   %[[D:.*]] = octet.add %[[A]], %[[C]] {octet.slot = 1 : i64}
//  CHECK-NEXT:   octet.relu %[[D]] :
func.func @late_use(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> tensor<?x?x64xf32> {
  %a = octet.relu %x : tensor<?x?x64xf32>
  %b = octet.relu %a : tensor<?x?x64xf32>
  %c = octet.relu %b : tensor<?x?x64xf32>
  %d = octet.add %a, %c : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %e = octet.relu %d : tensor<?x?x64xf32>
  return %e : tensor<?x?x64xf32>
}

// -----

// A reshape is a view of %a (no slot): reading it late keeps slot 0 busy, so
// %c opens slot 2 although %a itself was last read by %b. The reshaped dims
// trace back to the argument's, so %e has %a's size expression.
// CHECK-LABEL: func.func @reshape_alias(
//  CHECK-SAME:     octet.arena = ["256*batch*sequence", "256*batch*sequence", "256*batch*sequence"]
//       CHECK:   %[[A:.*]] = octet.relu %arg0 {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[R:.*]] = octet.reshape %[[A]](%{{.*}}, %{{.*}}) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
//  CHECK-NEXT:   %[[B:.*]] = octet.relu %[[A]] {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[C:.*]] = octet.relu %[[B]] {octet.slot = 2 : i64}
//  CHECK-NEXT:   %[[E:.*]] = octet.reshape %[[C]](%{{.*}}, %{{.*}}) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
//  CHECK-NEXT:   octet.add %[[R]], %[[E]] {octet.slot = 1 : i64}
func.func @reshape_alias(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> tensor<?x?x4x16xf32> {
  %b0 = octet.dim %x[0] : tensor<?x?x64xf32>
  %s0 = octet.dim %x[1] : tensor<?x?x64xf32>
  %a = octet.relu %x : tensor<?x?x64xf32>
  %r = octet.reshape %a(%b0, %s0) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %b = octet.relu %a : tensor<?x?x64xf32>
  %c = octet.relu %b : tensor<?x?x64xf32>
  %e = octet.reshape %c(%b0, %s0) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %f = octet.add %r, %e : tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>
  %g = octet.relu %f : tensor<?x?x4x16xf32>
  return %g : tensor<?x?x4x16xf32>
}

// -----

// Sizes: a free slot is reused by the same expression, or by a provably
// smaller one (same names, smaller constant: %m, 4 bytes a token, in slot 0
// of 256), never by a larger one (%w, 1024 bytes a token, opens slot 2 rather
// than take slot 1) nor one of other dims (%t, per batch only, opens slot 3).
// CHECK-LABEL: func.func @sizes(
//  CHECK-SAME:     octet.arena = ["256*batch*sequence", "4*batch*sequence", "1024*batch*sequence", "1024*batch"]
//       CHECK:   %[[A:.*]] = octet.relu %arg0 {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[N:.*]] = octet.reduce_sum %[[A]] axes = [2] keepdims {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[M:.*]] = octet.relu %[[N]] {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[W:.*]] = octet.concat %arg0, %arg0, %arg0, %arg0 axis = 2 {octet.slot = 2 : i64}
//  CHECK-NEXT:   %[[T:.*]] = octet.reduce_sum %[[W]] axes = [1] {octet.slot = 3 : i64}
func.func @sizes(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> (tensor<?x?x2xf32>, tensor<?x256xf32>) {
  %a = octet.relu %x : tensor<?x?x64xf32>
  %n = octet.reduce_sum %a axes = [2] keepdims : tensor<?x?x64xf32>
  %m = octet.relu %n : tensor<?x?x1xf32>
  %w = octet.concat %x, %x, %x, %x axis = 2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %t = octet.reduce_sum %w axes = [1] : tensor<?x?x256xf32>
  %o = octet.concat %m, %m axis = 2 : tensor<?x?x1xf32>, tensor<?x?x1xf32>
  %u = octet.relu %t : tensor<?x256xf32>
  return %o, %u : tensor<?x?x2xf32>, tensor<?x256xf32>
}

// -----

// Two operands read for the last time by one op: its result takes neither
// of their slots.
// CHECK-LABEL: func.func @not_in_place(
//  CHECK-SAME:     octet.arena = ["64", "64", "64"]
//       CHECK:   octet.relu %arg0 {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.neg %arg0 {octet.slot = 1 : i64}
//  CHECK-NEXT:   octet.add %{{.*}}, %{{.*}} {octet.slot = 2 : i64}
func.func @not_in_place(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = octet.relu %x : tensor<16xf32>
  %b = octet.neg %x : tensor<16xf32>
  %c = octet.add %a, %b : tensor<16xf32>, tensor<16xf32>
  %d = octet.relu %c : tensor<16xf32>
  return %d : tensor<16xf32>
}

// -----

// Inputs, constants (and views of them), outputs and index values have no
// slot; a returned reshape makes its input an output too. Of dynamic_quantize's
// results only the returned one lacks a slot (-1); a ui8 takes 1 byte.
// CHECK-LABEL: func.func @no_buffers(
//  CHECK-SAME:     octet.arena = ["4", "1"]
//       CHECK:   octet.constant dense<1.000000e+00> : tensor<4x8xf32>
//  CHECK-NEXT:   octet.dim %arg0[0] : tensor<?x4xf32>
//  CHECK-NEXT:   %[[L:.*]] = octet.linear %arg0, %{{.*}} : tensor<?x4xf32>, tensor<4x8xf32>
//  CHECK-NEXT:   octet.reshape %[[L]]
//  CHECK-NEXT:   octet.dynamic_quantize %arg0 {octet.slots = array<i64: -1, 0, 1>}
//  CHECK-NEXT:   octet.reshape %{{.*}} : tensor<4x8xf32> -> tensor<32xf32>
//  CHECK-NOT:    octet.slot
func.func @no_buffers(%x: tensor<?x4xf32>)
    -> (tensor<?x2x4xf32>, tensor<?x4xui8>, tensor<32xf32>) {
  %w = octet.constant dense<1.0> : tensor<4x8xf32>
  %n = octet.dim %x[0] : tensor<?x4xf32>
  %y = octet.linear %x, %w : tensor<?x4xf32>, tensor<4x8xf32>
  %r = octet.reshape %y(%n) : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %q, %s, %zp = octet.dynamic_quantize %x : tensor<?x4xf32>
  %flat = octet.reshape %w : tensor<4x8xf32> -> tensor<32xf32>
  %z = octet.neg %flat : tensor<32xf32>
  return %r, %q, %z : tensor<?x2x4xf32>, tensor<?x4xui8>, tensor<32xf32>
}

// -----

// The prefix slice has min(%end, 512) columns, which no input dim names: its
// size is unknown ("?", computed by the runtime from the op's shape) and the
// slot is its own for the whole function, so %c, also unknown, opens another.
// CHECK-LABEL: func.func @unknown_size(
//  CHECK-SAME:     octet.arena = ["?", "8*batch", "?"]
//       CHECK:   octet.slice {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.neg %arg0 {octet.slot = 1 : i64}
//  CHECK-NEXT:   octet.add {{.*}} {octet.slot = 2 : i64}
func.func @unknown_size(%x: tensor<?x1xi64> {octet.dim_params = ["batch", ""]},
                        %end: index) -> tensor<?x?xi64> {
  %ids = octet.constant dense<7> : tensor<1x512xi64>
  %p = octet.slice %ids axes = [1] starts = [0] ends = [%end] steps = [1] : tensor<1x512xi64> -> tensor<1x?xi64>
  %a = octet.neg %x : tensor<?x1xi64>
  %c = octet.add %a, %p : tensor<?x1xi64>, tensor<1x?xi64>
  %d = octet.neg %c : tensor<?x?xi64>
  return %d : tensor<?x?xi64>
}

// -----

// Slices of one last-axis window (static bounds, step 1) are views of the
// fused QKV buffer (offset = start, row stride 24): it lives until the last
// one is read. A strided slice (step 2) is a copy with its own buffer.
// CHECK-LABEL: func.func @slices(
//  CHECK-SAME:     octet.arena = ["96*batch", "32*batch", "32*batch"]
//       CHECK:   %[[QKV:.*]] = octet.linear {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[Q:.*]] = octet.slice %[[QKV]] axes = [1] starts = [0] ends = [8] steps = [1] :
//  CHECK-NEXT:   %[[K:.*]] = octet.slice %[[QKV]] axes = [1] starts = [8] ends = [16] steps = [1] :
//  CHECK-NEXT:   %[[E:.*]] = octet.slice %[[QKV]] axes = [1] starts = [8] ends = [24] steps = [2] {octet.slot = 1 : i64}
//  CHECK-NEXT:   octet.add %[[Q]], %[[K]] {octet.slot = 2 : i64}
//  CHECK-NEXT:   octet.relu %{{.*}} {octet.slot = 0 : i64}
func.func @slices(%x: tensor<?x8xf32> {octet.dim_params = ["batch", ""]}, %w: tensor<8x24xf32>)
    -> tensor<?x8xf32> {
  %qkv = octet.linear %x, %w : tensor<?x8xf32>, tensor<8x24xf32>
  %q = octet.slice %qkv axes = [1] starts = [0] ends = [8] steps = [1] : tensor<?x24xf32> -> tensor<?x8xf32>
  %k = octet.slice %qkv axes = [1] starts = [8] ends = [16] steps = [1] : tensor<?x24xf32> -> tensor<?x8xf32>
  %e = octet.slice %qkv axes = [1] starts = [8] ends = [24] steps = [2] : tensor<?x24xf32> -> tensor<?x8xf32>
  %s = octet.add %q, %k : tensor<?x8xf32>, tensor<?x8xf32>
  %t = octet.relu %s : tensor<?x8xf32>
  %u = octet.add %t, %e : tensor<?x8xf32>, tensor<?x8xf32>
  return %u : tensor<?x8xf32>
}

// -----

// A BERT-base layer as octet-recognize and octet-fuse-gemm-epilogue leave it.
// q, k and v are views of the QKV buffer (slot 0, 9216 bytes a token), which
// the attention output projection reuses once attention has read it; the
// add_layer_norm writes %h in place of %o (its x, read for the last time),
// %h is read again by the last add_layer_norm, so the FFN's 3072-wide GELU
// output needs a slot of its own, the FFN output takes the attention's, and
// the layer output is the caller's.
// CHECK-LABEL: func.func @bert_layer(
//  CHECK-SAME:     octet.arena = ["9216*batch*sequence", "3072*batch*sequence", "12288*batch*sequence"]
//       CHECK:   %[[QKV:.*]] = octet.linear %arg0, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.slice %[[QKV]] {{.*}} : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
//  CHECK-NEXT:   octet.slice %[[QKV]] {{.*}} : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
//  CHECK-NEXT:   octet.slice %[[QKV]] {{.*}} : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
//  CHECK-NEXT:   %[[A:.*]] = octet.attention {{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[O:.*]] = octet.linear %[[A]], {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[H:.*]] = octet.add_layer_norm %[[O]], %arg0, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[F:.*]] = octet.fused_linear %[[H]], {{.*}} {
//       CHECK:   } {octet.slot = 2 : i64} : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
//  CHECK-NEXT:   %[[G:.*]] = octet.linear %[[F]], {{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[Y:.*]] = octet.add_layer_norm %[[G]], %[[H]], {{.*}} : tensor<?x?x768xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @bert_layer(%x: tensor<?x?x768xf32> {octet.dim_params = ["batch", "sequence", ""]},
                      %mask: tensor<?x1x1x?xf32> {octet.dim_params = ["batch", "", "", "sequence"]})
    -> tensor<?x?x768xf32> {
  %wqkv = octet.constant dense<0.01> : tensor<768x2304xf32>
  %bqkv = octet.constant dense<0.0> : tensor<2304xf32>
  %wo = octet.constant dense<0.01> : tensor<768x768xf32>
  %b768 = octet.constant dense<0.0> : tensor<768xf32>
  %gamma = octet.constant dense<1.0> : tensor<768xf32>
  %w1 = octet.constant dense<0.01> : tensor<768x3072xf32>
  %b1 = octet.constant dense<0.0> : tensor<3072xf32>
  %w2 = octet.constant dense<0.01> : tensor<3072x768xf32>
  %qkv = octet.linear %x, %wqkv, %bqkv : tensor<?x?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [768] steps = [1] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
  %k = octet.slice %qkv axes = [2] starts = [768] ends = [1536] steps = [1] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
  %v = octet.slice %qkv axes = [2] starts = [1536] ends = [2304] steps = [1] : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
  %a = octet.attention %q, %k, %v, %mask num_heads = 12 scale = 0.125 : tensor<?x?x768xf32>, tensor<?x1x1x?xf32>
  %o = octet.linear %a, %wo, %b768 : tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>
  %h = octet.add_layer_norm %o, %x, %gamma, %b768 axis = 2 epsilon = 1.0e-12 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
  %f = octet.fused_linear %h, %w1, %b1 {
  ^bb0(%acc: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.707106769 : f32
    %s = arith.mulf %acc, %rsqrt2 : f32
    %e = math.erf %s : f32
    %p = arith.addf %e, %one : f32
    %hx = arith.mulf %acc, %half : f32
    %g = arith.mulf %hx, %p : f32
    octet.yield %g : f32
  } : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
  %g = octet.linear %f, %w2, %b768 : tensor<?x?x3072xf32>, tensor<3072x768xf32>, tensor<768xf32>
  %y = octet.add_layer_norm %g, %h, %gamma, %b768 axis = 2 epsilon = 1.0e-12 : tensor<?x?x768xf32>, tensor<768xf32>, tensor<768xf32>
  return %y : tensor<?x?x768xf32>
}

// -----

// An attention whose only user is a quantize may be one step with it (the
// plan builder folds the quantize into the attention's copy-out), so Q, K
// and V stay live until the quantize: its result must not take %qkv's slot
// 0, free by the attention's own position and the smallest that fits.
// CHECK-LABEL: func.func @attention_then_quantize(
//  CHECK-SAME:     octet.arena = ["768*batch*sequence", "256*batch*sequence", "64*batch*sequence"]
//       CHECK:   %[[QKV:.*]] = octet.relu %arg0 {octet.slot = 0 : i64}
//       CHECK:   %[[A:.*]] = octet.attention %{{.*}}, %{{.*}}, %{{.*}} num_heads = 2 scale = {{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   octet.quantize %[[A]], %{{.*}}, %{{.*}} {octet.slot = 2 : i64}
func.func @attention_then_quantize(%x: tensor<?x?x192xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> tensor<?x?x64xf32> {
  %s = octet.constant dense<0.5> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  %qkv = octet.relu %x : tensor<?x?x192xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [64] steps = [1] : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
  %k = octet.slice %qkv axes = [2] starts = [64] ends = [128] steps = [1] : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
  %v = octet.slice %qkv axes = [2] starts = [128] ends = [192] steps = [1] : tensor<?x?x192xf32> -> tensor<?x?x64xf32>
  %a = octet.attention %q, %k, %v num_heads = 2 scale = 0.125 : tensor<?x?x64xf32>
  %aq = octet.quantize %a, %s, %zp : tensor<?x?x64xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x64xui8>
  %d = octet.dequantize %aq, %s, %zp : tensor<?x?x64xui8>, tensor<f32>, tensor<ui8> -> tensor<?x?x64xf32>
  return %d : tensor<?x?x64xf32>
}

// -----

// The LayerNorm ops write y in place of an operand they read for the last
// time (x first, else the residual): %n over %a; %m over %n, since its x %a is
// read again by the last add; never over a row window of another buffer (%l
// reads %w, a view of %c), nor over the caller's bytes (%b is an output).
// CHECK-LABEL: func.func @layer_norm_in_place(
//  CHECK-SAME:     octet.arena = ["256*batch*sequence", "256*batch*sequence", "512*batch*sequence", "256*batch*sequence"]
//       CHECK:   %[[A:.*]] = octet.relu %arg0 {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[K:.*]] = octet.relu %arg0 {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[B:.*]] = octet.relu %arg0 :
//  CHECK-NEXT:   %[[N:.*]] = octet.add_layer_norm %[[K]], %[[B]], {{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[M:.*]] = octet.add_layer_norm %[[A]], %[[N]], {{.*}} {octet.slot = 1 : i64}
//  CHECK-NEXT:   %[[C:.*]] = octet.linear %arg0, {{.*}} {octet.slot = 2 : i64}
//  CHECK-NEXT:   %[[W:.*]] = octet.slice %[[C]]
//  CHECK-NEXT:   octet.layer_norm %[[W]], {{.*}} {octet.slot = 3 : i64}
func.func @layer_norm_in_place(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %g = octet.constant dense<1.0> : tensor<64xf32>
  %z = octet.constant dense<0.0> : tensor<64xf32>
  %w128 = octet.constant dense<0.5> : tensor<64x128xf32>
  %a = octet.relu %x : tensor<?x?x64xf32>
  %k = octet.relu %x : tensor<?x?x64xf32>
  %b = octet.relu %x : tensor<?x?x64xf32>
  %n = octet.add_layer_norm %k, %b, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %m = octet.add_layer_norm %a, %n, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %c = octet.linear %x, %w128 : tensor<?x?x64xf32>, tensor<64x128xf32>
  %w = octet.slice %c axes = [2] starts = [0] ends = [64] steps = [1] : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
  %l = octet.layer_norm %w, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %r = octet.add %m, %l : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %s = octet.add %r, %a : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  return %s, %b : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// A long chain of LayerNorms, each in place of the one before: every result
// after the first takes its operand's slot (takeOver), so the value-to-slot map
// grows during those inserts (DenseMap rehashes at 48 and 96 entries). A
// regression test for a use after free that ASAN found (session 23): the slot
// was read through a map iterator after the insert; `scripts/sanitize asan`
// (whole or --subset) runs this file under ASAN.
// CHECK-LABEL: func.func @long_in_place_chain(
//  CHECK-SAME:     attributes {octet.arena = ["256*batch*sequence"]}
//       CHECK:   octet.layer_norm %arg0, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   octet.layer_norm %{{.*}}, {{.*}} {octet.slot = 0 : i64}
//  CHECK-NEXT:   %[[OUT:.*]] = octet.layer_norm %{{.*}}, {{.*}} : tensor<?x?x64xf32>
//  CHECK-NEXT:   return %[[OUT]]
func.func @long_in_place_chain(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]})
    -> tensor<?x?x64xf32> {
  %g = octet.constant dense<1.0> : tensor<64xf32>
  %z = octet.constant dense<0.0> : tensor<64xf32>
  %l0 = octet.layer_norm %x, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l1 = octet.layer_norm %l0, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l2 = octet.layer_norm %l1, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l3 = octet.layer_norm %l2, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l4 = octet.layer_norm %l3, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l5 = octet.layer_norm %l4, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l6 = octet.layer_norm %l5, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l7 = octet.layer_norm %l6, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l8 = octet.layer_norm %l7, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l9 = octet.layer_norm %l8, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l10 = octet.layer_norm %l9, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l11 = octet.layer_norm %l10, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l12 = octet.layer_norm %l11, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l13 = octet.layer_norm %l12, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l14 = octet.layer_norm %l13, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l15 = octet.layer_norm %l14, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l16 = octet.layer_norm %l15, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l17 = octet.layer_norm %l16, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l18 = octet.layer_norm %l17, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l19 = octet.layer_norm %l18, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l20 = octet.layer_norm %l19, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l21 = octet.layer_norm %l20, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l22 = octet.layer_norm %l21, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l23 = octet.layer_norm %l22, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l24 = octet.layer_norm %l23, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l25 = octet.layer_norm %l24, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l26 = octet.layer_norm %l25, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l27 = octet.layer_norm %l26, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l28 = octet.layer_norm %l27, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l29 = octet.layer_norm %l28, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l30 = octet.layer_norm %l29, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l31 = octet.layer_norm %l30, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l32 = octet.layer_norm %l31, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l33 = octet.layer_norm %l32, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l34 = octet.layer_norm %l33, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l35 = octet.layer_norm %l34, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l36 = octet.layer_norm %l35, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l37 = octet.layer_norm %l36, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l38 = octet.layer_norm %l37, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l39 = octet.layer_norm %l38, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l40 = octet.layer_norm %l39, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l41 = octet.layer_norm %l40, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l42 = octet.layer_norm %l41, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l43 = octet.layer_norm %l42, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l44 = octet.layer_norm %l43, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l45 = octet.layer_norm %l44, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l46 = octet.layer_norm %l45, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l47 = octet.layer_norm %l46, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l48 = octet.layer_norm %l47, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l49 = octet.layer_norm %l48, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l50 = octet.layer_norm %l49, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l51 = octet.layer_norm %l50, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l52 = octet.layer_norm %l51, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l53 = octet.layer_norm %l52, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l54 = octet.layer_norm %l53, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l55 = octet.layer_norm %l54, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l56 = octet.layer_norm %l55, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l57 = octet.layer_norm %l56, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l58 = octet.layer_norm %l57, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l59 = octet.layer_norm %l58, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l60 = octet.layer_norm %l59, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l61 = octet.layer_norm %l60, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l62 = octet.layer_norm %l61, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l63 = octet.layer_norm %l62, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l64 = octet.layer_norm %l63, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l65 = octet.layer_norm %l64, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l66 = octet.layer_norm %l65, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l67 = octet.layer_norm %l66, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l68 = octet.layer_norm %l67, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %l69 = octet.layer_norm %l68, %g, %z axis = 2 epsilon = 1.0e-12 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
  return %l69 : tensor<?x?x64xf32>
}
