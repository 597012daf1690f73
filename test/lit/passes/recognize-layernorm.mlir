// RUN: octet-opt %s -octet-recognize -split-input-file | FileCheck %s
// RUN: octet-opt %s -octet-cleanup -octet-recognize -split-input-file | FileCheck %s

// The TorchScript export of nn.LayerNorm: pow 2, sqrt, div, γ·n + β.
// CHECK-LABEL: func.func @layer_norm_pow_div
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>)
// CHECK-DAG: %[[G:.*]] = octet.constant dense<1.500000e+00> : tensor<64xf32>
// CHECK-DAG: %[[B:.*]] = octet.constant dense<2.500000e-01> : tensor<64xf32>
// CHECK: %[[Y:.*]] = octet.layer_norm %[[X]], %[[G]], %[[B]] axis = 2 epsilon = 9.99999996E-13 : tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>
// CHECK-NOT: octet.reduce_mean
// CHECK-NOT: octet.sqrt
// CHECK-NOT: octet.div
// CHECK: return %[[Y]]
func.func @layer_norm_pow_div(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-12> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<64xf32>
  %beta = octet.constant dense<0.25> : tensor<64xf32>
  %mean = octet.reduce_mean %x axes = [2] keepdims : tensor<?x?x64xf32>
  %d = octet.sub %x, %mean : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x?x64xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [2] keepdims : tensor<?x?x64xf32>
  %ve = octet.add %var, %eps : tensor<?x?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x?x1xf32>
  %n = octet.div %d, %std : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %g = octet.mul %n, %gamma : tensor<?x?x64xf32>, tensor<64xf32>
  %y = octet.add %g, %beta : tensor<?x?x64xf32>, tensor<64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// mul(d, d), rsqrt, operands of the commutative ops swapped, no β.
// CHECK-LABEL: func.func @layer_norm_rsqrt_no_beta
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK: %[[G:.*]] = octet.constant
// CHECK: %[[Y:.*]] = octet.layer_norm %[[X]], %[[G]] axis = 1 epsilon = 9.99999974E-6 : tensor<8x64xf32>, tensor<64xf32>
// CHECK-NOT: octet.rsqrt
// CHECK: return %[[Y]]
func.func @layer_norm_rsqrt_no_beta(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %eps = octet.constant dense<1.0e-5> : tensor<1xf32>
  %gamma = octet.constant dense<2.0> : tensor<64xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<8x64xf32>
  %d = octet.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = octet.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<8x64xf32>
  %ve = octet.add %eps, %var : tensor<1xf32>, tensor<8x1xf32>
  %r = octet.rsqrt %ve : tensor<8x1xf32>
  %n = octet.mul %r, %d : tensor<8x1xf32>, tensor<8x64xf32>
  %y = octet.mul %gamma, %n : tensor<64xf32>, tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// reciprocal(sqrt), β first in the add, γ and β as [1, 1, 64] constants
// (reshaped to [64]).
// CHECK-LABEL: func.func @layer_norm_reciprocal_broadcast_params
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>)
// CHECK-DAG: %[[G:.*]] = octet.constant dense<3.000000e+00> : tensor<64xf32>
// CHECK-DAG: %[[B:.*]] = octet.constant dense<1.000000e+00> : tensor<64xf32>
// CHECK: %[[Y:.*]] = octet.layer_norm %[[X]], %[[G]], %[[B]] axis = 2 epsilon = 9.99999974E-6
// CHECK-NOT: octet.reciprocal
// CHECK: return %[[Y]]
func.func @layer_norm_reciprocal_broadcast_params(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<3.0> : tensor<1x1x64xf32>
  %beta = octet.constant dense<1.0> : tensor<1x1x64xf32>
  %mean = octet.reduce_mean %x axes = [2] keepdims : tensor<?x?x64xf32>
  %d = octet.sub %x, %mean : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x?x64xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [2] keepdims : tensor<?x?x64xf32>
  %ve = octet.add %var, %eps : tensor<?x?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x?x1xf32>
  %inv = octet.reciprocal %std : tensor<?x?x1xf32>
  %n = octet.mul %d, %inv : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %g = octet.mul %n, %gamma : tensor<?x?x64xf32>, tensor<1x1x64xf32>
  %y = octet.add %beta, %g : tensor<1x1x64xf32>, tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// γ and β as weights in resource blobs.
// CHECK-LABEL: func.func @layer_norm_resource_params
// CHECK: %[[G:.*]] = octet.constant dense_resource<ln_gamma> : tensor<4xf32>
// CHECK: %[[B:.*]] = octet.constant dense_resource<ln_beta> : tensor<4xf32>
// CHECK: octet.layer_norm %{{.*}}, %[[G]], %[[B]] axis = 1
func.func @layer_norm_resource_params(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense_resource<ln_gamma> : tensor<4xf32>
  %beta = octet.constant dense_resource<ln_beta> : tensor<4xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<?x4xf32>
  %d = octet.sub %x, %mean : tensor<?x4xf32>, tensor<?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<?x4xf32>
  %ve = octet.add %var, %eps : tensor<?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1xf32>
  %n = octet.div %d, %std : tensor<?x4xf32>, tensor<?x1xf32>
  %g = octet.mul %n, %gamma : tensor<?x4xf32>, tensor<4xf32>
  %y = octet.add %g, %beta : tensor<?x4xf32>, tensor<4xf32>
  return %y : tensor<?x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      ln_gamma: "0x040000000000803F0000803F0000803F0000803F",
      ln_beta: "0x040000000000000000000000000000000000000000"
    }
  }
#-}

// -----

// Normalized over the two trailing dims: axis = 1, γ of shape [4, 16].
// CHECK-LABEL: func.func @layer_norm_two_trailing_axes
// CHECK: octet.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis = 1 epsilon = 9.99999974E-6 : tensor<?x4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-NOT: octet.reduce_mean
func.func @layer_norm_two_trailing_axes(%x: tensor<?x4x16xf32>) -> tensor<?x4x16xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<4x16xf32>
  %beta = octet.constant dense<0.5> : tensor<4x16xf32>
  %mean = octet.reduce_mean %x axes = [1, 2] keepdims : tensor<?x4x16xf32>
  %d = octet.sub %x, %mean : tensor<?x4x16xf32>, tensor<?x1x1xf32>
  %sq = octet.pow %d, %two : tensor<?x4x16xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1, 2] keepdims : tensor<?x4x16xf32>
  %ve = octet.add %var, %eps : tensor<?x1x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1x1xf32>
  %n = octet.div %d, %std : tensor<?x4x16xf32>, tensor<?x1x1xf32>
  %g = octet.mul %n, %gamma : tensor<?x4x16xf32>, tensor<4x16xf32>
  %y = octet.add %g, %beta : tensor<?x4x16xf32>, tensor<4x16xf32>
  return %y : tensor<?x4x16xf32>
}

// -----

// β that is not a constant: LayerNorm without β, the add stays.
// CHECK-LABEL: func.func @layer_norm_runtime_beta
// CHECK: %[[LN:.*]] = octet.layer_norm %{{.*}}, %{{.*}} axis = 1
// CHECK: octet.add %[[LN]], %arg1
func.func @layer_norm_runtime_beta(%x: tensor<?x4xf32>, %beta: tensor<4xf32>) -> tensor<?x4xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<4xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<?x4xf32>
  %d = octet.sub %x, %mean : tensor<?x4xf32>, tensor<?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<?x4xf32>
  %ve = octet.add %var, %eps : tensor<?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1xf32>
  %n = octet.div %d, %std : tensor<?x4xf32>, tensor<?x1xf32>
  %g = octet.mul %n, %gamma : tensor<?x4xf32>, tensor<4xf32>
  %y = octet.add %g, %beta : tensor<?x4xf32>, tensor<4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Not the trailing axis: normalizes over dim 1 of [?, 8, 4]. Must stay.
// CHECK-LABEL: func.func @no_layer_norm_non_trailing_axis
// CHECK-NOT: octet.layer_norm
// CHECK: octet.reduce_mean
func.func @no_layer_norm_non_trailing_axis(%x: tensor<?x8x4xf32>) -> tensor<?x8x4xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<8x4xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<?x8x4xf32>
  %d = octet.sub %x, %mean : tensor<?x8x4xf32>, tensor<?x1x4xf32>
  %sq = octet.pow %d, %two : tensor<?x8x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<?x8x4xf32>
  %ve = octet.add %var, %eps : tensor<?x1x4xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1x4xf32>
  %n = octet.div %d, %std : tensor<?x8x4xf32>, tensor<?x1x4xf32>
  %y = octet.mul %n, %gamma : tensor<?x8x4xf32>, tensor<8x4xf32>
  return %y : tensor<?x8x4xf32>
}

// -----

// x - mean has a third user: rewriting would keep it alive. Must stay.
// CHECK-LABEL: func.func @no_layer_norm_extra_user
// CHECK-NOT: octet.layer_norm
// CHECK: octet.reduce_mean
func.func @no_layer_norm_extra_user(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<4xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<?x4xf32>
  %d = octet.sub %x, %mean : tensor<?x4xf32>, tensor<?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<?x4xf32>
  %ve = octet.add %var, %eps : tensor<?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1xf32>
  %n = octet.div %d, %std : tensor<?x4xf32>, tensor<?x1xf32>
  %y = octet.mul %n, %gamma : tensor<?x4xf32>, tensor<4xf32>
  return %y, %d : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// ε is a run-time value; the mean of cubed deviations is not a variance.
// Neither is a LayerNorm.
// CHECK-LABEL: func.func @no_layer_norm_runtime_epsilon
// CHECK-NOT: octet.layer_norm
// CHECK: octet.sqrt
func.func @no_layer_norm_runtime_epsilon(%x: tensor<?x4xf32>, %eps: tensor<f32>) -> tensor<?x4xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<4xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<?x4xf32>
  %d = octet.sub %x, %mean : tensor<?x4xf32>, tensor<?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<?x4xf32>
  %ve = octet.add %var, %eps : tensor<?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1xf32>
  %n = octet.div %d, %std : tensor<?x4xf32>, tensor<?x1xf32>
  %y = octet.mul %n, %gamma : tensor<?x4xf32>, tensor<4xf32>
  return %y : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @no_layer_norm_cube
// CHECK-NOT: octet.layer_norm
// CHECK: octet.pow
func.func @no_layer_norm_cube(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %three = octet.constant dense<3.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<4xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<?x4xf32>
  %d = octet.sub %x, %mean : tensor<?x4xf32>, tensor<?x1xf32>
  %sq = octet.pow %d, %three : tensor<?x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<?x4xf32>
  %ve = octet.add %var, %eps : tensor<?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x1xf32>
  %n = octet.div %d, %std : tensor<?x4xf32>, tensor<?x1xf32>
  %y = octet.mul %n, %gamma : tensor<?x4xf32>, tensor<4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// γ with the wrong shape for the normalized dims ([4, 1] broadcasts over
// rows, not features). Must stay.
// CHECK-LABEL: func.func @no_layer_norm_gamma_shape
// CHECK-NOT: octet.layer_norm
func.func @no_layer_norm_gamma_shape(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-5> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<4x1xf32>
  %mean = octet.reduce_mean %x axes = [1] keepdims : tensor<4x4xf32>
  %d = octet.sub %x, %mean : tensor<4x4xf32>, tensor<4x1xf32>
  %sq = octet.pow %d, %two : tensor<4x4xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [1] keepdims : tensor<4x4xf32>
  %ve = octet.add %var, %eps : tensor<4x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<4x1xf32>
  %n = octet.div %d, %std : tensor<4x4xf32>, tensor<4x1xf32>
  %y = octet.mul %n, %gamma : tensor<4x4xf32>, tensor<4x1xf32>
  return %y : tensor<4x4xf32>
}

// -----

// An imported LayerNormalization op: nothing to do.
// CHECK-LABEL: func.func @layer_norm_op_kept
// CHECK: octet.layer_norm %arg0, %arg1, %arg2 axis = 1 epsilon = 9.99999974E-6
func.func @layer_norm_op_kept(%x: tensor<?x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %y = octet.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Residual + LayerNorm, from the decomposed form.
// CHECK-LABEL: func.func @add_layer_norm
// CHECK-SAME: (%[[A:.*]]: tensor<?x?x64xf32>, %[[R:.*]]: tensor<?x?x64xf32>)
// CHECK: %[[Y:.*]] = octet.add_layer_norm %[[A]], %[[R]], %{{.*}}, %{{.*}} axis = 2 epsilon = 9.99999996E-13
// CHECK-NOT: octet.add
// CHECK: return %[[Y]]
func.func @add_layer_norm(%a: tensor<?x?x64xf32>, %r: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %eps = octet.constant dense<1.0e-12> : tensor<f32>
  %gamma = octet.constant dense<1.5> : tensor<64xf32>
  %beta = octet.constant dense<0.25> : tensor<64xf32>
  %x = octet.add %a, %r : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %mean = octet.reduce_mean %x axes = [2] keepdims : tensor<?x?x64xf32>
  %d = octet.sub %x, %mean : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %sq = octet.pow %d, %two : tensor<?x?x64xf32>, tensor<f32>
  %var = octet.reduce_mean %sq axes = [2] keepdims : tensor<?x?x64xf32>
  %ve = octet.add %var, %eps : tensor<?x?x1xf32>, tensor<f32>
  %std = octet.sqrt %ve : tensor<?x?x1xf32>
  %n = octet.div %d, %std : tensor<?x?x64xf32>, tensor<?x?x1xf32>
  %g = octet.mul %n, %gamma : tensor<?x?x64xf32>, tensor<64xf32>
  %y = octet.add %g, %beta : tensor<?x?x64xf32>, tensor<64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// The sum has a second user (or is a bias add): plain layer_norm stays.
// CHECK-LABEL: func.func @no_add_layer_norm_shared_sum
// CHECK: %[[S:.*]] = octet.add %arg0, %arg1
// CHECK: octet.layer_norm %[[S]]
// CHECK-NOT: octet.add_layer_norm
func.func @no_add_layer_norm_shared_sum(%a: tensor<?x4xf32>, %r: tensor<?x4xf32>, %g: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %x = octet.add %a, %r : tensor<?x4xf32>, tensor<?x4xf32>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>
  return %y, %x : tensor<?x4xf32>, tensor<?x4xf32>
}

// CHECK-LABEL: func.func @no_add_layer_norm_broadcast_sum
// CHECK: %[[S:.*]] = octet.add %arg0, %arg1
// CHECK: octet.layer_norm %[[S]]
func.func @no_add_layer_norm_broadcast_sum(%a: tensor<?x4xf32>, %b: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<?x4xf32> {
  %x = octet.add %a, %b : tensor<?x4xf32>, tensor<4xf32>
  %y = octet.layer_norm %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x4xf32>, tensor<4xf32>
  return %y : tensor<?x4xf32>
}
