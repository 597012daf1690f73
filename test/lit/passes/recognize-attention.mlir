// RUN: octet-opt %s -octet-recognize -split-input-file | FileCheck %s
// RUN: octet-opt %s -octet-cleanup -octet-recognize -split-input-file | FileCheck %s

// TorchScript export of BERT self-attention before octet-cleanup: sizes from
// octet.dim of q/k/v and of the merged context, Kᵀ as two transposes, scores
// divided by √D, additive [B, 1, 1, S] mask. Hidden 64, 4 heads of 16.
// CHECK-LABEL: func.func @attention_bert_torchscript
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[MASK:.*]]: tensor<?x1x1x?xf32>)
// CHECK-DAG: %[[Q:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK-DAG: %[[K:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK-DAG: %[[V:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK: %[[A:.*]] = octet.attention %[[Q]], %[[K]], %[[V]], %[[MASK]] num_heads = 4 scale = 2.500000e-01 : tensor<?x?x64xf32>, tensor<?x1x1x?xf32>
// CHECK-NOT: octet.softmax
// CHECK-NOT: octet.transpose
// CHECK-NOT: octet.reshape
// CHECK-NOT: octet.matmul
// CHECK: return %[[A]]
func.func @attention_bert_torchscript(%x: tensor<?x?x64xf32>, %mask: tensor<?x1x1x?xf32>) -> tensor<?x?x64xf32> {
  %wq = octet.constant dense<0.01> : tensor<64x64xf32>
  %wk = octet.constant dense<0.02> : tensor<64x64xf32>
  %wv = octet.constant dense<0.03> : tensor<64x64xf32>
  %bq = octet.constant dense<0.1> : tensor<64xf32>
  %bk = octet.constant dense<0.2> : tensor<64xf32>
  %bv = octet.constant dense<0.3> : tensor<64xf32>
  %sqrt_d = octet.constant dense<4.0> : tensor<f32>
  %q0 = octet.matmul %x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32>
  %q = octet.add %q0, %bq : tensor<?x?x64xf32>, tensor<64xf32>
  %k0 = octet.matmul %x, %wk : tensor<?x?x64xf32>, tensor<64x64xf32>
  %k = octet.add %bk, %k0 : tensor<64xf32>, tensor<?x?x64xf32>
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
  %out = octet.reshape %ct(%ob, %os) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}

// -----

// The same after octet-cleanup: one [0, 2, 3, 1] transpose for Kᵀ, head
// sizes from the block input, merge sizes from dims of the context matmul
// (folded through the transpose), the scale as a product, mask first.
// CHECK-LABEL: func.func @attention_after_cleanup
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[MASK:.*]]: tensor<?x1x?x?xf32>)
// CHECK: %[[A:.*]] = octet.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]] num_heads = 4 scale = 2.500000e-01
// CHECK-NOT: octet.softmax
// CHECK: return %[[A]]
func.func @attention_after_cleanup(%x: tensor<?x?x64xf32>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x?x64xf32> {
  %wq = octet.constant dense<0.01> : tensor<64x64xf32>
  %wk = octet.constant dense<0.02> : tensor<64x64xf32>
  %wv = octet.constant dense<0.03> : tensor<64x64xf32>
  %quarter = octet.constant dense<0.25> : tensor<f32>
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %q = octet.linear %x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32>
  %k = octet.linear %x, %wk : tensor<?x?x64xf32>, tensor<64x64xf32>
  %v = octet.linear %x, %wv : tensor<?x?x64xf32>, tensor<64x64xf32>
  %qr = octet.reshape %q(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kr = octet.reshape %k(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<?x?x4x16xf32>
  %vr = octet.reshape %v(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  %scaled = octet.mul %quarter, %scores : tensor<f32>, tensor<?x4x?x?xf32>
  %masked = octet.add %mask, %scaled : tensor<?x1x?x?xf32>, tensor<?x4x?x?xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<?x4x?x?xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %ob = octet.dim %ctx[0] : tensor<?x4x?x16xf32>
  %os = octet.dim %ctx[2] : tensor<?x4x?x16xf32>
  %out = octet.reshape %ct(%ob, %os) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}

// -----

// Dynamo / SDPA decomposition: √scale on Q and on Kᵀ (0.5 · 0.5), Kᵀ as
// two transposes with the factor in between, a boolean mask applied with
// where(mask, finfo.min, scores): rebuilt as an additive where(mask, min, 0).
// CHECK-LABEL: func.func @attention_sdpa_where_mask
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x64xf32>, %[[COND:[^:]*]]: tensor<2x1x1x8xi1>)
// CHECK-DAG: %[[FILL:.*]] = octet.constant dense<-3.40282347E+38> : tensor<f32>
// CHECK-DAG: %[[ZERO:.*]] = octet.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[M:.*]] = octet.where %[[COND]], %[[FILL]], %[[ZERO]] : tensor<2x1x1x8xi1>, tensor<f32>, tensor<f32>
// CHECK: %[[A:.*]] = octet.attention %[[Q]], %[[Q]], %[[Q]], %[[M]] num_heads = 4 scale = 2.500000e-01 : tensor<2x8x64xf32>, tensor<2x1x1x8xf32>
// CHECK-NOT: octet.softmax
// CHECK: return %[[A]]
func.func @attention_sdpa_where_mask(%x: tensor<2x8x64xf32>, %cond: tensor<2x1x1x8xi1>) -> tensor<2x8x64xf32> {
  %half = octet.constant dense<0.5> : tensor<f32>
  %fill = octet.constant dense<-3.40282347E+38> : tensor<f32>
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %kh = octet.transpose %kr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %qs = octet.mul %qh, %half : tensor<2x4x8x16xf32>, tensor<f32>
  %kt = octet.transpose %kh permutation = [0, 1, 3, 2] : tensor<2x4x8x16xf32>
  %kts = octet.mul %kt, %half : tensor<2x4x16x8xf32>, tensor<f32>
  %scores = octet.matmul %qs, %kts : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
  %masked = octet.where %cond, %fill, %scores : tensor<2x1x1x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  %out = octet.reshape %ct : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// The dynamo exporter end to end: flattened q/k/v linears on [B·S, 64]
// (Gemm with the [N, K] weight) split straight into [B, S, 4, 16], torchlib's
// Kᵀ as reshape [B·4, S, 16] → transpose → reshape [B, 4, 16, S], √scale on
// Q and Kᵀ, and the merged context flattened again for the output linear.
// CHECK-LABEL: func.func @attention_dynamo_flattened
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x64xf32>, %[[MASK:[^:]*]]: tensor<?x1x?x?xf32>)
// CHECK-DAG: %[[Q:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK-DAG: %[[K:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK-DAG: %[[V:.*]] = octet.linear %[[X]], %{{.*}}, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK: %[[A:.*]] = octet.attention %[[Q]], %[[K]], %[[V]], %[[MASK]] num_heads = 4 scale = 2.500000e-01 : tensor<?x?x64xf32>, tensor<?x1x?x?xf32>
// CHECK: %[[O:.*]] = octet.linear %[[A]], %{{.*}}, %{{.*}} transpose_weight : tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>
// CHECK-NOT: octet.softmax
// CHECK-NOT: octet.transpose
// CHECK-NOT: octet.reshape
// CHECK-NOT: octet.matmul
// CHECK: return %[[O]]
func.func @attention_dynamo_flattened(%x: tensor<?x?x64xf32>, %mask: tensor<?x1x?x?xf32>) -> tensor<?x?x64xf32> {
  %wq = octet.constant dense<0.01> : tensor<64x64xf32>
  %wk = octet.constant dense<0.02> : tensor<64x64xf32>
  %wv = octet.constant dense<0.03> : tensor<64x64xf32>
  %wo = octet.constant dense<0.04> : tensor<64x64xf32>
  %bq = octet.constant dense<0.1> : tensor<64xf32>
  %bk = octet.constant dense<0.2> : tensor<64xf32>
  %bv = octet.constant dense<0.3> : tensor<64xf32>
  %bo = octet.constant dense<0.4> : tensor<64xf32>
  %sqrt_scale = octet.constant dense<0.5> : tensor<f32>
  %c4 = arith.constant 4 : index
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %bs = arith.muli %b, %s : index
  %flat = octet.reshape %x(%bs) : tensor<?x?x64xf32> -> tensor<?x64xf32>
  %wqt = octet.transpose %wq permutation = [1, 0] : tensor<64x64xf32>
  %q0 = octet.matmul %flat, %wqt : tensor<?x64xf32>, tensor<64x64xf32>
  %q = octet.add %q0, %bq : tensor<?x64xf32>, tensor<64xf32>
  %wkt = octet.transpose %wk permutation = [1, 0] : tensor<64x64xf32>
  %k0 = octet.matmul %flat, %wkt : tensor<?x64xf32>, tensor<64x64xf32>
  %k = octet.add %k0, %bk : tensor<?x64xf32>, tensor<64xf32>
  %wvt = octet.transpose %wv permutation = [1, 0] : tensor<64x64xf32>
  %v0 = octet.matmul %flat, %wvt : tensor<?x64xf32>, tensor<64x64xf32>
  %v = octet.add %v0, %bv : tensor<?x64xf32>, tensor<64xf32>
  %qr = octet.reshape %q(%b, %s) : tensor<?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kr = octet.reshape %k(%b, %s) : tensor<?x64xf32> -> tensor<?x?x4x16xf32>
  %kh = octet.transpose %kr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %vr = octet.reshape %v(%b, %s) : tensor<?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %bh = arith.muli %b, %c4 : index
  %ks = octet.reshape %kh(%bh, %s) : tensor<?x4x?x16xf32> -> tensor<?x?x16xf32>
  %kst = octet.transpose %ks permutation = [0, 2, 1] : tensor<?x?x16xf32>
  %kt = octet.reshape %kst(%b, %s) : tensor<?x16x?xf32> -> tensor<?x4x16x?xf32>
  %qs = octet.mul %qh, %sqrt_scale : tensor<?x4x?x16xf32>, tensor<f32>
  %kts = octet.mul %kt, %sqrt_scale : tensor<?x4x16x?xf32>, tensor<f32>
  %scores = octet.matmul %qs, %kts : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  %masked = octet.add %scores, %mask : tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<?x4x?x?xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %cflat = octet.reshape %ct(%bs) : tensor<?x?x4x16xf32> -> tensor<?x64xf32>
  %wot = octet.transpose %wo permutation = [1, 0] : tensor<64x64xf32>
  %o0 = octet.matmul %cflat, %wot : tensor<?x64xf32>, tensor<64x64xf32>
  %o = octet.add %o0, %bo : tensor<?x64xf32>, tensor<64xf32>
  %y = octet.reshape %o(%b, %s) : tensor<?x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// DistilBERT: q / √D before the head split, and masked_fill as
// where(visible, scores, -inf): the fill is taken where the condition is
// false.
// CHECK-LABEL: func.func @attention_distilbert
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x64xf32>, %[[VISIBLE:[^:]*]]: tensor<?x1x1x?xi1>)
// CHECK-DAG: %[[FILL:.*]] = octet.constant dense<0xFF800000> : tensor<f32>
// CHECK-DAG: %[[ZERO:.*]] = octet.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[Q:.*]] = octet.linear %[[X]], %{{.*}} : tensor<?x?x64xf32>, tensor<64x64xf32>
// CHECK: %[[M:.*]] = octet.where %[[VISIBLE]], %[[ZERO]], %[[FILL]]
// CHECK: %[[A:.*]] = octet.attention %[[Q]], %{{.*}}, %{{.*}}, %[[M]] num_heads = 4 scale = 2.500000e-01
// CHECK-NOT: octet.div
// CHECK: return %[[A]]
func.func @attention_distilbert(%x: tensor<?x?x64xf32>, %visible: tensor<?x1x1x?xi1>) -> tensor<?x?x64xf32> {
  %wq = octet.constant dense<0.01> : tensor<64x64xf32>
  %wk = octet.constant dense<0.02> : tensor<64x64xf32>
  %wv = octet.constant dense<0.03> : tensor<64x64xf32>
  %sqrt_d = octet.constant dense<4.0> : tensor<f32>
  %fill = octet.constant dense<0xFF800000> : tensor<f32>
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %q0 = octet.matmul %x, %wq : tensor<?x?x64xf32>, tensor<64x64xf32>
  %q = octet.div %q0, %sqrt_d : tensor<?x?x64xf32>, tensor<f32>
  %k = octet.matmul %x, %wk : tensor<?x?x64xf32>, tensor<64x64xf32>
  %v = octet.matmul %x, %wv : tensor<?x?x64xf32>, tensor<64x64xf32>
  %qr = octet.reshape %q(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kr = octet.reshape %k(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<?x?x4x16xf32>
  %vr = octet.reshape %v(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  %masked = octet.where %visible, %scores, %fill : tensor<?x1x1x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>
  %probs = octet.softmax %masked axis = 3 : tensor<?x4x?x?xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %out = octet.reshape %ct(%b, %s) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}

// -----

// No mask, no scale (scale 1).
// CHECK-LABEL: func.func @attention_no_mask
// CHECK: %[[A:.*]] = octet.attention %arg0, %arg0, %arg0 num_heads = 2 scale = 1.000000e+00 : tensor<2x8x64xf32>
// CHECK-NEXT: return %[[A]]
func.func @attention_no_mask(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<2x8x2x32xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x2x8x32xf32>, tensor<2x2x32x8xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<2x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x2x8x32xf32>
  %out = octet.reshape %ct : tensor<2x8x2x32xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// Softmax over the query axis (2), not the keys. Must stay.
// CHECK-LABEL: func.func @no_attention_softmax_axis
// CHECK-NOT: octet.attention
// CHECK: octet.softmax %{{.*}} axis = 2
func.func @no_attention_softmax_axis(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<2x8x2x32xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x2x8x32xf32>, tensor<2x2x32x8xf32>
  %probs = octet.softmax %scores axis = 2 : tensor<2x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x2x8x32xf32>
  %out = octet.reshape %ct : tensor<2x8x2x32xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// A per-head scale is not a scalar. Must stay.
// CHECK-LABEL: func.func @no_attention_per_head_scale
// CHECK-NOT: octet.attention
// CHECK: octet.softmax
func.func @no_attention_per_head_scale(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %scale = octet.constant dense<[[[0.25]], [[0.5]]]> : tensor<2x1x1xf32>
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<2x8x2x32xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x2x8x32xf32>, tensor<2x2x32x8xf32>
  %scaled = octet.mul %scores, %scale : tensor<2x2x8x8xf32>, tensor<2x1x1xf32>
  %probs = octet.softmax %scaled axis = 3 : tensor<2x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x2x8x32xf32>
  %out = octet.reshape %ct : tensor<2x8x2x32xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// A [3, 1, 1, 8] mask on batch-1 scores enlarges them to batch 3: not a mask
// of this attention. Must stay.
// CHECK-LABEL: func.func @no_attention_mask_enlarges_scores
// CHECK-NOT: octet.attention
// CHECK: octet.softmax
func.func @no_attention_mask_enlarges_scores(%x: tensor<1x8x64xf32>, %mask: tensor<3x1x1x8xf32>) -> tensor<3x8x64xf32> {
  %qr = octet.reshape %x : tensor<1x8x64xf32> -> tensor<1x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<1x8x2x32xf32>
  %kr = octet.reshape %x : tensor<1x8x64xf32> -> tensor<1x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<1x8x2x32xf32>
  %vr = octet.reshape %x : tensor<1x8x64xf32> -> tensor<1x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<1x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<1x2x8x32xf32>, tensor<1x2x32x8xf32>
  %masked = octet.add %scores, %mask : tensor<1x2x8x8xf32>, tensor<3x1x1x8xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<3x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<3x2x8x8xf32>, tensor<1x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<3x2x8x32xf32>
  %out = octet.reshape %ct : tensor<3x8x2x32xf32> -> tensor<3x8x64xf32>
  return %out : tensor<3x8x64xf32>
}

// -----

// The probabilities are also returned (attention weights output): rewriting
// would keep the whole chain alive. Must stay.
// CHECK-LABEL: func.func @no_attention_probs_second_user
// CHECK-NOT: octet.attention
// CHECK: octet.softmax
func.func @no_attention_probs_second_user(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x2x8x8xf32>) {
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<2x8x2x32xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x2x8x32xf32>, tensor<2x2x32x8xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<2x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x2x8x32xf32>
  %out = octet.reshape %ct : tensor<2x8x2x32xf32> -> tensor<2x8x64xf32>
  return %out, %probs : tensor<2x8x64xf32>, tensor<2x2x8x8xf32>
}

// -----

// The head split of q is also used elsewhere. Must stay.
// CHECK-LABEL: func.func @no_attention_shared_head_split
// CHECK-NOT: octet.attention
func.func @no_attention_shared_head_split(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x2x8x32xf32>) {
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<2x8x2x32xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x2x8x32xf32>, tensor<2x2x32x8xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<2x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x2x8x32xf32>
  %out = octet.reshape %ct : tensor<2x8x2x32xf32> -> tensor<2x8x64xf32>
  return %out, %qh : tensor<2x8x64xf32>, tensor<2x2x8x32xf32>
}

// -----

// A where fill of -10000 is not absorbed by large scores (and changes fully
// masked rows) if made additive. Must stay.
// CHECK-LABEL: func.func @no_attention_mild_where_fill
// CHECK-NOT: octet.attention
// CHECK: octet.where
func.func @no_attention_mild_where_fill(%x: tensor<2x8x64xf32>, %cond: tensor<2x1x1x8xi1>) -> tensor<2x8x64xf32> {
  %fill = octet.constant dense<-10000.0> : tensor<f32>
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %kr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<2x8x2x32xf32>
  %vr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x2x32xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x8x2x32xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x2x8x32xf32>, tensor<2x2x32x8xf32>
  %masked = octet.where %cond, %fill, %scores : tensor<2x1x1x8xi1>, tensor<f32>, tensor<2x2x8x8xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<2x2x8x8xf32>
  %ctx = octet.matmul %probs, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x32xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x2x8x32xf32>
  %out = octet.reshape %ct : tensor<2x8x2x32xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// K split with [0, 2, 1, 3] (not transposed): Q·K is not Q·Kᵀ. Must stay.
// (Valid only because the sequence length is dynamic.)
// CHECK-LABEL: func.func @no_attention_key_not_transposed
// CHECK-NOT: octet.attention
func.func @no_attention_key_not_transposed(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %r = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %r permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %r2 = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %kh = octet.transpose %r2 permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %r3 = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %r3 permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %scores = octet.matmul %qh, %kh : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<?x4x?x16xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %out = octet.reshape %ct(%b, %s) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}

// -----

// q and k come from different inputs whose batch and sequence sizes may
// differ (cross-attention): octet.attention is self-attention only. Must stay.
// CHECK-LABEL: func.func @no_attention_cross
// CHECK-NOT: octet.attention
func.func @no_attention_cross(%x: tensor<?x?x64xf32>, %y: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %yb = octet.dim %y[0] : tensor<?x?x64xf32>
  %ys = octet.dim %y[1] : tensor<?x?x64xf32>
  %qr = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kr = octet.reshape %y(%yb, %ys) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<?x?x4x16xf32>
  %vr = octet.reshape %y(%yb, %ys) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<?x4x?x?xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %out = octet.reshape %ct(%b, %s) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}

// -----

// The head split reshapes [B, S, 64] to [S, B, 4, 16] (sizes swapped):
// attention over the wrong axis. Must stay.
// CHECK-LABEL: func.func @no_attention_swapped_split
// CHECK-NOT: octet.attention
func.func @no_attention_swapped_split(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %qr = octet.reshape %x(%s, %b) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kr = octet.reshape %x(%s, %b) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %kt = octet.transpose %kr permutation = [0, 2, 3, 1] : tensor<?x?x4x16xf32>
  %vr = octet.reshape %x(%s, %b) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %vh = octet.transpose %vr permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<?x4x?x?xf32>
  %ctx = octet.matmul %probs, %vh : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %out = octet.reshape %ct(%b, %s) : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  return %out : tensor<?x?x64xf32>
}

// -----

// PyTorch sdpa (TorchScript, transformers 5): where(isnan(p), 0, p) between
// the softmax and P·V zeroes fully masked (all -inf) rows: absorbed as
// zero_masked_rows.
// CHECK-LABEL: func.func @attention_nan_guard
// CHECK: %[[A:.*]] = octet.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} num_heads = 4 scale = 2.500000e-01 zero_masked_rows : tensor<2x8x64xf32>, tensor<2x1x1x8xf32>
// CHECK-NOT: octet.is_nan
// CHECK-NOT: octet.softmax
// CHECK: return %[[A]]
func.func @attention_nan_guard(%x: tensor<2x8x64xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x8x64xf32> {
  %quarter = octet.constant dense<0.25> : tensor<f32>
  %zero = octet.constant dense<0.0> : tensor<f32>
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %kt = octet.transpose %qr permutation = [0, 2, 3, 1] : tensor<2x8x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
  %scaled = octet.mul %scores, %quarter : tensor<2x4x8x8xf32>, tensor<f32>
  %masked = octet.add %scaled, %mask : tensor<2x4x8x8xf32>, tensor<2x1x1x8xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %nan = octet.is_nan %probs : tensor<2x4x8x8xf32>
  %guarded = octet.where %nan, %zero, %probs : tensor<2x4x8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>
  %ctx = octet.matmul %guarded, %qh : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  %out = octet.reshape %ct : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// A guard that fills NaN with anything but 0 is not a fully-masked-row rule.
// CHECK-LABEL: func.func @no_attention_nan_guard_fill_one
// CHECK-NOT: octet.attention
// CHECK: octet.softmax
func.func @no_attention_nan_guard_fill_one(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %one = octet.constant dense<1.0> : tensor<f32>
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %kt = octet.transpose %qr permutation = [0, 2, 3, 1] : tensor<2x8x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<2x4x8x8xf32>
  %nan = octet.is_nan %probs : tensor<2x4x8x8xf32>
  %guarded = octet.where %nan, %one, %probs : tensor<2x4x8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32>
  %ctx = octet.matmul %guarded, %qh : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  %out = octet.reshape %ct : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// MPNet: a per-head relative position bias and then the padding mask added
// to the scores (in any association): one additive mask, bias + mask.
// CHECK-LABEL: func.func @attention_position_bias
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8x64xf32>, %[[BIAS:[^:]*]]: tensor<1x4x8x8xf32>, %[[MASK:[^:]*]]: tensor<2x1x1x8xf32>)
// CHECK: %[[M:.*]] = octet.add %[[MASK]], %[[BIAS]] : tensor<2x1x1x8xf32>, tensor<1x4x8x8xf32>
// CHECK: %[[A:.*]] = octet.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[M]] num_heads = 4 scale = 2.500000e-01 : tensor<2x8x64xf32>, tensor<2x4x8x8xf32>
// CHECK-NOT: octet.softmax
// CHECK: return %[[A]]
func.func @attention_position_bias(%x: tensor<2x8x64xf32>, %bias: tensor<1x4x8x8xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x8x64xf32> {
  %quarter = octet.constant dense<0.25> : tensor<f32>
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %kt = octet.transpose %qr permutation = [0, 2, 3, 1] : tensor<2x8x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
  %scaled = octet.mul %scores, %quarter : tensor<2x4x8x8xf32>, tensor<f32>
  %biased = octet.add %scaled, %bias : tensor<2x4x8x8xf32>, tensor<1x4x8x8xf32>
  %masked = octet.add %mask, %biased : tensor<2x1x1x8xf32>, tensor<2x4x8x8xf32>
  %probs = octet.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %ctx = octet.matmul %probs, %qh : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  %out = octet.reshape %ct : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}
