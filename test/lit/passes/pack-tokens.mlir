// RUN: octet-opt %s -octet-pack-tokens -split-input-file -verify-diagnostics | FileCheck %s

// octet-pack-tokens (docs/padding-free.md): the token-wise layers around the
// attention run on packed rows; the mask's ops move before them, values
// entering are packed, values leaving (outputs, the CLS gather) unpacked.

// CHECK-LABEL: func.func @layer(
//       CHECK:   %[[CAST:.*]] = octet.cast %arg1
//       CHECK:   %[[MASK:.*]] = octet.mul
//       CHECK:   %[[B:.*]] = octet.dim %arg0[0]
//       CHECK:   %[[S:.*]] = octet.dim %arg0[1]
//       CHECK:   %[[L:.*]] = octet.token_layout %[[MASK]](%[[B]], %[[S]]) : tensor<?x1x1x?xf32> -> tensor<?xi64>
//       CHECK:   %[[X:.*]] = octet.pack_tokens %arg0, %[[L]] : tensor<?x?x8xf32>, tensor<?xi64>
//       CHECK:   %[[H:.*]] = octet.layer_norm %[[X]],
//       CHECK:   octet.linear %[[H]],
//       CHECK:   octet.attention {{.*}}, %[[MASK]] tokens(%[[L]] : tensor<?xi64>) num_heads = 2
//       CHECK:   %[[Y:.*]] = octet.add_layer_norm {{.*}}, %[[H]],
//       CHECK:   %[[OUT:.*]] = octet.unpack_tokens %[[Y]], %[[L]](%[[B]], %[[S]]) : tensor<?x?x8xf32>, tensor<?xi64>
//       CHECK:   %[[CLS:.*]] = octet.gather %[[OUT]],
//       CHECK:   return %[[OUT]], %[[CLS]]
func.func @layer(%x: tensor<?x?x8xf32> {octet.dim_params = ["batch", "sequence", ""]}, %am: tensor<?x?xi64> {octet.dim_params = ["batch", "sequence"]}) -> (tensor<?x?x8xf32>, tensor<?x8xf32>) {
  %g = octet.constant dense<1.0> : tensor<8xf32>
  %bt = octet.constant dense<0.0> : tensor<8xf32>
  %w = octet.constant dense<0.5> : tensor<8x24xf32>
  %wo = octet.constant dense<0.25> : tensor<8x8xf32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %big = octet.constant dense<-10000.0> : tensor<f32>
  %c0 = octet.constant dense<0> : tensor<i64>
  %h = octet.layer_norm %x, %g, %bt axis = 2 epsilon = 1.0e-12 : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
  %b = octet.dim %am[0] : tensor<?x?xi64>
  %s = octet.dim %am[1] : tensor<?x?xi64>
  %mf = octet.cast %am : tensor<?x?xi64> to tensor<?x?xf32>
  %m4 = octet.reshape %mf(%b, %s) : tensor<?x?xf32> -> tensor<?x1x1x?xf32>
  %inv = octet.sub %one, %m4 : tensor<f32>, tensor<?x1x1x?xf32>
  %mask = octet.mul %inv, %big : tensor<?x1x1x?xf32>, tensor<f32>
  %qkv = octet.linear %h, %w : tensor<?x?x8xf32>, tensor<8x24xf32>
  %q = octet.slice %qkv axes = [2] starts = [0] ends = [8] steps = [1] : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %k = octet.slice %qkv axes = [2] starts = [8] ends = [16] steps = [1] : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %v = octet.slice %qkv axes = [2] starts = [16] ends = [24] steps = [1] : tensor<?x?x24xf32> -> tensor<?x?x8xf32>
  %a = octet.attention %q, %k, %v, %mask num_heads = 2 scale = 0.5 : tensor<?x?x8xf32>, tensor<?x1x1x?xf32>
  %o = octet.linear %a, %wo : tensor<?x?x8xf32>, tensor<8x8xf32>
  %y = octet.add_layer_norm %o, %h, %g, %bt axis = 2 epsilon = 1.0e-12 : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
  %cls = octet.gather %y, %c0 axis = 1 : tensor<?x?x8xf32>, tensor<i64>
  return %y, %cls : tensor<?x?x8xf32>, tensor<?x8xf32>
}

// -----

// Negative: an attention without a mask (no key is padding) leaves the function
// unchanged and says why.
// CHECK-LABEL: func.func @no_mask(
//   CHECK-NOT:   octet.token_layout
//   CHECK-NOT:   octet.pack_tokens
func.func @no_mask(%x: tensor<?x?x8xf32> {octet.dim_params = ["batch", "sequence", ""]}) -> tensor<?x?x8xf32> {
  // expected-warning @+1 {{padding is not dropped at run time (octet-pack-tokens): this attention: it has no mask}}
  %a = octet.attention %x, %x, %x num_heads = 2 scale = 0.5 : tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// Negative: static batch and sequence.
// CHECK-LABEL: func.func @static_shapes(
//   CHECK-NOT:   octet.token_layout
// expected-warning @+1 {{padding is not dropped at run time (octet-pack-tokens): batch and sequence are static}}
func.func @static_shapes(%x: tensor<2x4x8xf32>, %m: tensor<2x1x1x4xf32>) -> tensor<2x4x8xf32> {
  %a = octet.attention %x, %x, %x, %m num_heads = 2 scale = 0.5 : tensor<2x4x8xf32>, tensor<2x1x1x4xf32>
  return %a : tensor<2x4x8xf32>
}

// -----

// Negative: a mask computed from the layers' rows (not from the inputs alone).
// CHECK-LABEL: func.func @mask_from_layers(
//   CHECK-NOT:   octet.token_layout
func.func @mask_from_layers(%x: tensor<?x?x8xf32> {octet.dim_params = ["batch", "sequence", ""]}) -> tensor<?x?x8xf32> {
  %g = octet.constant dense<1.0> : tensor<8xf32>
  %bt = octet.constant dense<0.0> : tensor<8xf32>
  // expected-warning @+1 {{an attention mask is computed from this op of the layers}}
  %h = octet.layer_norm %x, %g, %bt axis = 2 epsilon = 1.0e-12 : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
  %r = octet.reduce_mean %h axes = [2] : tensor<?x?x8xf32>
  %b = octet.dim %x[0] : tensor<?x?x8xf32>
  %s = octet.dim %x[1] : tensor<?x?x8xf32>
  %m = octet.reshape %r(%b, %s) : tensor<?x?xf32> -> tensor<?x1x1x?xf32>
  %a = octet.attention %h, %h, %h, %m num_heads = 2 scale = 0.5 : tensor<?x?x8xf32>, tensor<?x1x1x?xf32>
  return %a : tensor<?x?x8xf32>
}
