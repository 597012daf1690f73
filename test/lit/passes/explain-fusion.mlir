// RUN: octet-opt %s -octet-cleanup -octet-recognize -octet-explain-fusion -split-input-file 2>&1 >/dev/null | FileCheck %s

// An attention whose scores go through tanh before the softmax cannot fuse:
// the remark names the ONNX nodes and the matcher's reason; the summary counts.
// CHECK: remark: attention not fused at node '/layer.0/attention/Softmax', '/layer.0/attention/Tanh': no Q·Kᵀ under the softmax
// CHECK: remark: fusion: 0 of 1 attention blocks fused, 0 of 0 LayerNorm blocks fused, 0 of 0 GELU blocks fused
func.func @capped_scores(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %kt = octet.transpose %qr permutation = [0, 2, 3, 1] : tensor<2x8x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
  %capped = octet.tanh %scores : tensor<2x4x8x8xf32> loc("/layer.0/attention/Tanh")
  %probs = octet.softmax %capped axis = 3 : tensor<2x4x8x8xf32> loc("/layer.0/attention/Softmax")
  %ctx = octet.matmul %probs, %qh : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  %out = octet.reshape %ct : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}

// -----

// A LayerNorm without its γ product (mean-centered, normalized, never
// scaled) and an erf that is not GELU's: both candidates, each with a reason.
// CHECK: remark: LayerNorm not fused at node '/embeddings/ReduceMean': not a normalization times gamma
// CHECK: remark: GELU not fused at node '/intermediate/Erf': not a GELU product
// CHECK: remark: fusion: 0 of 0 attention blocks fused, 0 of 1 LayerNorm blocks fused, 0 of 1 GELU blocks fused
func.func @unscaled_norm_and_erf(%x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  %eps = octet.constant dense<1.0e-12> : tensor<f32>
  %three = octet.constant dense<3.0> : tensor<f32>
  %mean = octet.reduce_mean %x axes = [2] keepdims : tensor<2x8x64xf32> loc("/embeddings/ReduceMean")
  %centered = octet.sub %x, %mean : tensor<2x8x64xf32>, tensor<2x8x1xf32>
  %sq = octet.mul %centered, %centered : tensor<2x8x64xf32>, tensor<2x8x64xf32>
  %var = octet.reduce_mean %sq axes = [2] keepdims : tensor<2x8x64xf32>
  %vare = octet.add %var, %eps : tensor<2x8x1xf32>, tensor<f32>
  %std = octet.sqrt %vare : tensor<2x8x1xf32>
  %norm = octet.div %centered, %std : tensor<2x8x64xf32>, tensor<2x8x1xf32>
  %e = octet.erf %x : tensor<2x8x64xf32> loc("/intermediate/Erf")
  %y = octet.mul %e, %three : tensor<2x8x64xf32>, tensor<f32>
  return %norm, %y : tensor<2x8x64xf32>, tensor<2x8x64xf32>
}

// -----

// Nothing left unfused: only the summary.
// CHECK-NOT: not fused at
// CHECK: remark: fusion: 1 of 1 attention blocks fused
func.func @fused(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %qr = octet.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qh = octet.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %kt = octet.transpose %qr permutation = [0, 2, 3, 1] : tensor<2x8x4x16xf32>
  %scores = octet.matmul %qh, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>
  %probs = octet.softmax %scores axis = 3 : tensor<2x4x8x8xf32>
  %ctx = octet.matmul %probs, %qh : tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>
  %ct = octet.transpose %ctx permutation = [0, 2, 1, 3] : tensor<2x4x8x16xf32>
  %out = octet.reshape %ct : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  return %out : tensor<2x8x64xf32>
}
