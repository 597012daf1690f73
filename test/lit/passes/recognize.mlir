// RUN: octet-opt %s -octet-recognize -split-input-file | FileCheck %s
// RUN: octet-opt %s -octet-cleanup -octet-recognize -split-input-file | FileCheck %s

// matmul by a constant weight + a constant bias, bias first.
// CHECK-LABEL: func.func @linear_with_bias
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>)
// CHECK-DAG: %[[W:.*]] = octet.constant dense<0.00999999977> : tensor<64x256xf32>
// CHECK-DAG: %[[B:.*]] = octet.constant dense<5.000000e-01> : tensor<256xf32>
// CHECK: %[[Y:.*]] = octet.linear %[[X]], %[[W]], %[[B]] : tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>
// CHECK-NOT: octet.matmul
// CHECK-NOT: octet.add
// CHECK: return %[[Y]]
func.func @linear_with_bias(%x: tensor<?x?x64xf32>) -> tensor<?x?x256xf32> {
  %w = octet.constant dense<0.01> : tensor<64x256xf32>
  %b = octet.constant dense<0.5> : tensor<256xf32>
  %m = octet.matmul %x, %w : tensor<?x?x64xf32>, tensor<64x256xf32>
  %y = octet.add %b, %m : tensor<256xf32>, tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// A weight in a resource blob, no bias, 2-D input.
// CHECK-LABEL: func.func @linear_resource_weight
// CHECK: %[[W:.*]] = octet.constant dense_resource<dense_w> : tensor<2x2xf32>
// CHECK: %[[Y:.*]] = octet.linear %arg0, %[[W]] : tensor<?x2xf32>, tensor<2x2xf32>
// CHECK: return %[[Y]]
func.func @linear_resource_weight(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = octet.constant dense_resource<dense_w> : tensor<2x2xf32>
  %y = octet.matmul %x, %w : tensor<?x2xf32>, tensor<2x2xf32>
  return %y : tensor<?x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      dense_w: "0x040000000000803F0000803F0000803F0000803F"
    }
  }
#-}

// -----

// Both operands computed (attention's Q·Kᵀ shape): not a linear layer; a
// 1-D input (vector · matrix) is not one either.
// CHECK-LABEL: func.func @no_linear_runtime_weight
// CHECK: octet.matmul
// CHECK-NOT: octet.linear
func.func @no_linear_runtime_weight(%x: tensor<?x4x?x16xf32>, %y: tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32> {
  %s = octet.matmul %x, %y : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  return %s : tensor<?x4x?x?xf32>
}

// CHECK-LABEL: func.func @no_linear_vector_input
// CHECK: octet.matmul
// CHECK-NOT: octet.linear
func.func @no_linear_vector_input(%x: tensor<64xf32>) -> tensor<8xf32> {
  %w = octet.constant dense<0.01> : tensor<64x8xf32>
  %y = octet.matmul %x, %w : tensor<64xf32>, tensor<64x8xf32>
  return %y : tensor<8xf32>
}

// -----

// The bias is not folded when the product has another user, when it is a
// run-time value, or when it is not 1-D.
// CHECK-LABEL: func.func @no_bias_shared_linear
// CHECK: %[[L:.*]] = octet.linear %arg0, %{{.*}} : tensor<?x64xf32>, tensor<64x8xf32>
// CHECK: octet.add %[[L]]
func.func @no_bias_shared_linear(%x: tensor<?x64xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = octet.constant dense<0.01> : tensor<64x8xf32>
  %b = octet.constant dense<0.5> : tensor<8xf32>
  %m = octet.matmul %x, %w : tensor<?x64xf32>, tensor<64x8xf32>
  %y = octet.add %m, %b : tensor<?x8xf32>, tensor<8xf32>
  return %y, %m : tensor<?x8xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func.func @no_bias_runtime
// CHECK: %[[L:.*]] = octet.linear %arg0, %{{.*}} : tensor<?x64xf32>, tensor<64x8xf32>
// CHECK: octet.add %[[L]], %arg1
func.func @no_bias_runtime(%x: tensor<?x64xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %w = octet.constant dense<0.01> : tensor<64x8xf32>
  %m = octet.matmul %x, %w : tensor<?x64xf32>, tensor<64x8xf32>
  %y = octet.add %m, %b : tensor<?x8xf32>, tensor<8xf32>
  return %y : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @no_bias_2d
// CHECK: %[[L:.*]] = octet.linear %arg0, %{{.*}} : tensor<?x64xf32>, tensor<64x8xf32>
// CHECK: octet.add %[[L]]
func.func @no_bias_2d(%x: tensor<?x64xf32>) -> tensor<?x8xf32> {
  %w = octet.constant dense<0.01> : tensor<64x8xf32>
  %b = octet.constant dense<0.5> : tensor<1x8xf32>
  %m = octet.matmul %x, %w : tensor<?x64xf32>, tensor<64x8xf32>
  %y = octet.add %m, %b : tensor<?x8xf32>, tensor<1x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// ONNX Gemm with transB = 1 (torch's [N, K] weight): the transpose of the
// constant becomes transpose_weight on the weight as stored, bias included.
// CHECK-LABEL: func.func @linear_transposed_weight
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>)
// CHECK-DAG: %[[W:.*]] = octet.constant dense_resource<w_nk> : tensor<8x64xf32>
// CHECK-DAG: %[[B:.*]] = octet.constant dense<5.000000e-01> : tensor<8xf32>
// CHECK: %[[Y:.*]] = octet.linear %[[X]], %[[W]], %[[B]] transpose_weight : tensor<?x64xf32>, tensor<8x64xf32>, tensor<8xf32>
// CHECK-NOT: octet.transpose
// CHECK-NOT: octet.matmul
// CHECK: return %[[Y]]
func.func @linear_transposed_weight(%x: tensor<?x64xf32>) -> tensor<?x8xf32> {
  %w = octet.constant dense_resource<w_nk> : tensor<8x64xf32>
  %b = octet.constant dense<0.5> : tensor<8xf32>
  %wt = octet.transpose %w permutation = [1, 0] : tensor<8x64xf32>
  %m = octet.matmul %x, %wt : tensor<?x64xf32>, tensor<64x8xf32>
  %y = octet.add %m, %b : tensor<?x8xf32>, tensor<8xf32>
  return %y : tensor<?x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_nk: "0x04000000"
    }
  }
#-}

// -----

// The transpose of a run-time weight is not a linear layer.
// CHECK-LABEL: func.func @no_linear_transposed_runtime_weight
// CHECK: %[[T:.*]] = octet.transpose %arg1
// CHECK: octet.matmul %arg0, %[[T]]
// CHECK-NOT: octet.linear
func.func @no_linear_transposed_runtime_weight(%x: tensor<?x64xf32>, %w: tensor<8x64xf32>) -> tensor<?x8xf32> {
  %wt = octet.transpose %w permutation = [1, 0] : tensor<8x64xf32>
  %m = octet.matmul %x, %wt : tensor<?x64xf32>, tensor<64x8xf32>
  return %m : tensor<?x8xf32>
}

// -----

// The dynamo exporter's flattened linears: view [B·S, K] → Gemm / MatMul +
// bias → view [B, S, N], sized by the batch and sequence of another input
// that shares their names. Both become linears on [B, S, K]; the views
// cancel. The second one starts from heads [B, S, 4, 16] merged to [B·S, 64].
// CHECK-LABEL: func.func @flattened_linears
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x64xf32>
// CHECK-SAME: %[[H:[^:]*]]: tensor<?x?x4x16xf32>
// CHECK: %[[Y:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>
// CHECK: %[[M:.*]] = octet.reshape %[[H]](%{{.*}}, %{{.*}}) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
// CHECK: %[[Z:.*]] = octet.linear %[[M]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<8xf32>
// CHECK-NOT: octet.reshape
// CHECK: return %[[Y]], %[[Z]]
func.func @flattened_linears(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]},
                             %h: tensor<?x?x4x16xf32> {octet.dim_params = ["batch", "sequence", "", ""]},
                             %ids: tensor<?x?xi64> {octet.dim_params = ["batch", "sequence"]})
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %w = octet.constant dense<0.01> : tensor<8x64xf32>
  %w2 = octet.constant dense<0.02> : tensor<64x8xf32>
  %b = octet.constant dense<0.5> : tensor<8xf32>
  %batch = octet.dim %ids[0] : tensor<?x?xi64>
  %seq = octet.dim %ids[1] : tensor<?x?xi64>
  %n = arith.muli %batch, %seq : index
  %flat = octet.reshape %x(%n) : tensor<?x?x64xf32> -> tensor<?x64xf32>
  %wt = octet.transpose %w permutation = [1, 0] : tensor<8x64xf32>
  %m = octet.matmul %flat, %wt : tensor<?x64xf32>, tensor<64x8xf32>
  %a = octet.add %m, %b : tensor<?x8xf32>, tensor<8xf32>
  %y = octet.reshape %a(%batch, %seq) : tensor<?x8xf32> -> tensor<?x?x8xf32>
  %hflat = octet.reshape %h(%n) : tensor<?x?x4x16xf32> -> tensor<?x64xf32>
  %m2 = octet.matmul %hflat, %w2 : tensor<?x64xf32>, tensor<64x8xf32>
  %a2 = octet.add %b, %m2 : tensor<8xf32>, tensor<?x8xf32>
  %z = octet.reshape %a2(%batch, %seq) : tensor<?x8xf32> -> tensor<?x?x8xf32>
  return %y, %z : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Flattened the same way but viewed back as [S, B, N]: the linear moves onto
// [B, S, K] (it maps each row alone); the two views compose into a real
// reshape that stays. A view that splits rows ([B·S·2, 32]) keeps the linear on it.
// CHECK-LABEL: func.func @flattened_linear_not_restored
// CHECK: %[[Y:.*]] = octet.linear %arg0, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>
// CHECK: octet.reshape %[[Y]](%{{.*}}, %{{.*}}) : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
// CHECK: %[[F:.*]] = octet.reshape %arg0(%{{.*}}) : tensor<?x?x64xf32> -> tensor<?x32xf32>
// CHECK: octet.linear %[[F]], %{{.*}} : tensor<?x32xf32>, tensor<32x8xf32>
func.func @flattened_linear_not_restored(%x: tensor<?x?x64xf32>) -> (tensor<?x?x8xf32>, tensor<?x8xf32>) {
  %w = octet.constant dense<0.01> : tensor<8x64xf32>
  %w2 = octet.constant dense<0.02> : tensor<32x8xf32>
  %b = octet.constant dense<0.5> : tensor<8xf32>
  %c2 = arith.constant 2 : index
  %batch = octet.dim %x[0] : tensor<?x?x64xf32>
  %seq = octet.dim %x[1] : tensor<?x?x64xf32>
  %n = arith.muli %batch, %seq : index
  %flat = octet.reshape %x(%n) : tensor<?x?x64xf32> -> tensor<?x64xf32>
  %wt = octet.transpose %w permutation = [1, 0] : tensor<8x64xf32>
  %m = octet.matmul %flat, %wt : tensor<?x64xf32>, tensor<64x8xf32>
  %a = octet.add %m, %b : tensor<?x8xf32>, tensor<8xf32>
  %y = octet.reshape %a(%seq, %batch) : tensor<?x8xf32> -> tensor<?x?x8xf32>
  %n2 = arith.muli %n, %c2 : index
  %half = octet.reshape %x(%n2) : tensor<?x?x64xf32> -> tensor<?x32xf32>
  %z = octet.matmul %half, %w2 : tensor<?x32xf32>, tensor<32x8xf32>
  return %y, %z : tensor<?x?x8xf32>, tensor<?x8xf32>
}

// -----

// A bias added after a view that keeps rows folds into the linear under it
// (b is added to every row either way); after a view that splits rows
// ([?, 4] from rows of 8) it does not.
// CHECK-LABEL: func.func @bias_through_row_view
// CHECK: %[[L:.*]] = octet.linear %arg0, %{{.*}}, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<8x64xf32>, tensor<8xf32>
// CHECK: %[[R:.*]] = octet.reshape %[[L]](%{{.*}}) : tensor<?x?x8xf32> -> tensor<?x8xf32>
// CHECK: %[[L2:.*]] = octet.linear %arg0, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<8x64xf32>
// CHECK: %[[R2:.*]] = octet.reshape %[[L2]]
// CHECK: %[[A:.*]] = octet.add %[[R2]]
// CHECK: return %[[R]], %[[A]]
func.func @bias_through_row_view(%x: tensor<?x?x64xf32>, %n: index) -> (tensor<?x8xf32>, tensor<?x4xf32>) {
  %w = octet.constant dense<0.01> : tensor<8x64xf32>
  %b = octet.constant dense<0.5> : tensor<8xf32>
  %b4 = octet.constant dense<0.5> : tensor<4xf32>
  %l = octet.linear %x, %w transpose_weight : tensor<?x?x64xf32>, tensor<8x64xf32>
  %r = octet.reshape %l(%n) : tensor<?x?x8xf32> -> tensor<?x8xf32>
  %a = octet.add %r, %b : tensor<?x8xf32>, tensor<8xf32>
  %w2 = octet.constant dense<0.02> : tensor<8x64xf32>
  %l2 = octet.linear %x, %w2 transpose_weight : tensor<?x?x64xf32>, tensor<8x64xf32>
  %r2 = octet.reshape %l2(%n) : tensor<?x?x8xf32> -> tensor<?x4xf32>
  %a2 = octet.add %r2, %b4 : tensor<?x4xf32>, tensor<4xf32>
  return %a, %a2 : tensor<?x8xf32>, tensor<?x4xf32>
}

// -----

// A whole BERT encoder layer as the TorchScript exporter writes it (hidden
// 64, 4 heads, FFN 256): embeddings output → self-attention → dense +
// residual + LayerNorm → dense + GELU → dense + residual + LayerNorm.
// CHECK-LABEL: func.func @bert_encoder_layer
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[MASK:.*]]: tensor<?x1x1x?xf32>)
// CHECK: %[[Q:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK: %[[K:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK: %[[V:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK: %[[CTX:.*]] = octet.attention %[[Q]], %[[K]], %[[V]], %[[MASK]] num_heads = 4 scale = 2.500000e-01
// CHECK: %[[O:.*]] = octet.linear %[[CTX]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK: %[[H:.*]] = octet.add_layer_norm %[[O]], %[[X]], %{{.*}}, %{{.*}} axis = 2 epsilon = 9.99999996E-13
// CHECK: %[[F1:.*]] = octet.linear %[[H]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<256xf32>
// CHECK: %[[G:.*]] = octet.gelu %[[F1]] : tensor<?x?x256xf32>
// CHECK: %[[F2:.*]] = octet.linear %[[G]], %{{.*}}, %{{.*}} : tensor<?x?x256xf32>, tensor<256x64xf32>, tensor<64xf32>
// CHECK: %[[Y:.*]] = octet.add_layer_norm %[[F2]], %[[H]], %{{.*}}, %{{.*}} axis = 2 epsilon = 9.99999996E-13
// CHECK: return %[[Y]]
// CHECK-NOT: octet.matmul
// CHECK-NOT: octet.softmax
// CHECK-NOT: octet.reduce_mean
// CHECK-NOT: octet.erf
func.func @bert_encoder_layer(%x: tensor<?x?x64xf32>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x?x64xf32> {
  %wq = octet.constant dense<0.01> : tensor<64x64xf32>
  %wk = octet.constant dense<0.02> : tensor<64x64xf32>
  %wv = octet.constant dense<0.03> : tensor<64x64xf32>
  %wo = octet.constant dense<0.04> : tensor<64x64xf32>
  %w1 = octet.constant dense<0.05> : tensor<64x256xf32>
  %w2 = octet.constant dense<0.06> : tensor<256x64xf32>
  %bq = octet.constant dense<0.1> : tensor<64xf32>
  %bk = octet.constant dense<0.2> : tensor<64xf32>
  %bv = octet.constant dense<0.3> : tensor<64xf32>
  %bo = octet.constant dense<0.4> : tensor<64xf32>
  %b1 = octet.constant dense<0.5> : tensor<256xf32>
  %b2 = octet.constant dense<0.6> : tensor<64xf32>
  %g1 = octet.constant dense<1.1> : tensor<64xf32>
  %be1 = octet.constant dense<0.1> : tensor<64xf32>
  %g2 = octet.constant dense<1.2> : tensor<64xf32>
  %be2 = octet.constant dense<0.2> : tensor<64xf32>
  %sqrt_d = octet.constant dense<4.0> : tensor<f32>
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-12> : tensor<f32>
  %sqrt2 = octet.constant dense<1.41421354> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>

  // Self-attention.
  %q0 = octet.matmul %x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32>
  %q = octet.add %q0, %bq : tensor<?x?x64xf32>, tensor<64xf32>
  %k0 = octet.matmul %x, %wk : tensor<?x?x64xf32>, tensor<64x64xf32>
  %k = octet.add %k0, %bk : tensor<?x?x64xf32>, tensor<64xf32>
  %v0 = octet.matmul %x, %wv : tensor<?x?x64xf32>, tensor<64x64xf32>
  %v = octet.add %v0, %bv : tensor<?x?x64xf32>, tensor<64xf32>
  %qb = octet.dim %q[0] : tensor<?x?x64xf32>
  %qs = octet.dim %q[1] : tensor<?x?x64xf32>
  %qr = octet.reshape %q(%qb, %qs) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kb = octet.dim %k[0] : tensor<?x?x64xf32>
  %ks = octet.dim %k[1] : tensor<?x?x64xf32>
  %kr = octet.reshape %k(%kb, %ks) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %kh = octet.transpose %kr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kt = octet.transpose %kh permutation = [0, 1, 3, 2] : tensor<?x4x?x16xf32>
  %vb = octet.dim %v[0] : tensor<?x?x64xf32>
  %vs = octet.dim %v[1] : tensor<?x?x64xf32>
  %vr = octet.reshape %v(%vb, %vs) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  %scaled = octet.div %scores, %sqrt_d : tensor<?x4x?x?xf32>, tensor<f32>
  %masked = octet.add %scaled, %mask : tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<?x4x?x?xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %ob = octet.dim %ct[0] : tensor<?x?x4x16xf32>
  %os = octet.dim %ct[1] : tensor<?x?x4x16xf32>
  %merged = octet.reshape %ct(%ob, %os) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>

  // Output dense + residual + LayerNorm.
  %o0 = octet.matmul %merged, %wo : tensor<?x?x64xf32>, tensor<64x64xf32>
  %o = octet.add %o0, %bo : tensor<?x?x64xf32>, tensor<64xf32>
  %r1 = octet.add %o, %x : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %m1 = octet.reduce_mean %r1 axes = [2] keepdims : tensor<?x?x64xf32>
  %d1 = octet.sub %r1, %m1 : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %sq1 = octet.pow %d1, %two : tensor<?x?x64xf32>, tensor<f32>
  %var1 = octet.reduce_mean %sq1 axes = [2] keepdims : tensor<?x?x64xf32>
  %ve1 = octet.add %var1, %eps : tensor<?x?x1xf32>, tensor<f32>
  %std1 = octet.sqrt %ve1 : tensor<?x?x1xf32>
  %n1 = octet.div %d1, %std1 : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %s1 = octet.mul %n1, %g1 : tensor<?x?x64xf32>, tensor<64xf32>
  %h = octet.add %s1, %be1 : tensor<?x?x64xf32>, tensor<64xf32>

  // FFN with GELU.
  %f0 = octet.matmul %h, %w1 : tensor<?x?x64xf32>, tensor<64x256xf32>
  %f = octet.add %f0, %b1 : tensor<?x?x256xf32>, tensor<256xf32>
  %t = octet.div %f, %sqrt2 : tensor<?x?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x?x256xf32>
  %a = octet.add %e, %one : tensor<?x?x256xf32>, tensor<f32>
  %fh = octet.mul %f, %half : tensor<?x?x256xf32>, tensor<f32>
  %gelu = octet.mul %fh, %a : tensor<?x?x256xf32>, tensor<?x?x256xf32>
  %f20 = octet.matmul %gelu, %w2 : tensor<?x?x256xf32>, tensor<256x64xf32>
  %f2 = octet.add %f20, %b2 : tensor<?x?x64xf32>, tensor<64xf32>

  // Residual + LayerNorm.
  %r2 = octet.add %f2, %h : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %m2 = octet.reduce_mean %r2 axes = [2] keepdims : tensor<?x?x64xf32>
  %d2 = octet.sub %r2, %m2 : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %sq2 = octet.pow %d2, %two : tensor<?x?x64xf32>, tensor<f32>
  %var2 = octet.reduce_mean %sq2 axes = [2] keepdims : tensor<?x?x64xf32>
  %ve2 = octet.add %var2, %eps : tensor<?x?x1xf32>, tensor<f32>
  %std2 = octet.sqrt %ve2 : tensor<?x?x1xf32>
  %n2 = octet.div %d2, %std2 : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %s2 = octet.mul %n2, %g2 : tensor<?x?x64xf32>, tensor<64xf32>
  %y = octet.add %s2, %be2 : tensor<?x?x64xf32>, tensor<64xf32>
  return %y : tensor<?x?x64xf32>
}
