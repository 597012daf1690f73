// RUN: octet-opt %s -octet-recognize -split-input-file | FileCheck %s
// RUN: octet-opt %s -octet-cleanup -octet-recognize -split-input-file | FileCheck %s

// Hugging Face / TorchScript: x * 0.5 * (1 + erf(x / 1.4142135)).
// CHECK-LABEL: func.func @gelu_erf_div
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x256xf32>)
// CHECK-NEXT: %[[Y:.*]] = octet.gelu %[[X]] : tensor<?x?x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_div(%x: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %sqrt2 = octet.constant dense<1.41421354> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %t = octet.div %x, %sqrt2 : tensor<?x?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x?x256xf32>
  %a = octet.add %e, %one : tensor<?x?x256xf32>, tensor<f32>
  %h = octet.mul %x, %half : tensor<?x?x256xf32>, tensor<f32>
  %y = octet.mul %h, %a : tensor<?x?x256xf32>, tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// 0.5 * (x * (1 + erf(x * 0.70710678))) with constants first and [1]-shaped.
// CHECK-LABEL: func.func @gelu_erf_mul_other_order
// CHECK-NEXT: %[[Y:.*]] = octet.gelu %arg0 : tensor<8x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_mul_other_order(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %rsqrt2 = octet.constant dense<0.70710678> : tensor<1xf32>
  %one = octet.constant dense<1.0> : tensor<1xf32>
  %half = octet.constant dense<0.5> : tensor<1xf32>
  %t = octet.mul %rsqrt2, %x : tensor<1xf32>, tensor<8x256xf32>
  %e = octet.erf %t : tensor<8x256xf32>
  %a = octet.add %one, %e : tensor<1xf32>, tensor<8x256xf32>
  %p = octet.mul %x, %a : tensor<8x256xf32>, tensor<8x256xf32>
  %y = octet.mul %half, %p : tensor<1xf32>, tensor<8x256xf32>
  return %y : tensor<8x256xf32>
}

// -----

// x * (1 + erf(x / √2)) / 2: the ½ as a division, at the root.
// CHECK-LABEL: func.func @gelu_erf_divided_by_two
// CHECK-NEXT: %[[Y:.*]] = octet.gelu %arg0 : tensor<?x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf_divided_by_two(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %sqrt2 = octet.constant dense<1.4142135> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %two = octet.constant dense<2.0> : tensor<f32>
  %t = octet.div %x, %sqrt2 : tensor<?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x256xf32>
  %a = octet.add %e, %one : tensor<?x256xf32>, tensor<f32>
  %p = octet.mul %x, %a : tensor<?x256xf32>, tensor<?x256xf32>
  %y = octet.div %p, %two : tensor<?x256xf32>, tensor<f32>
  return %y : tensor<?x256xf32>
}

// -----

// HF NewGELUActivation: 0.5 * x * (1 + tanh(√(2/π) * (x + 0.044715 * x^3))).
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK-NEXT: %[[Y:.*]] = octet.gelu %arg0 approximate = "tanh" : tensor<?x?x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_pow(%x: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %three = octet.constant dense<3.0> : tensor<f32>
  %c = octet.constant dense<0.044715> : tensor<f32>
  %k = octet.constant dense<0.797884583> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %x3 = octet.pow %x, %three : tensor<?x?x256xf32>, tensor<f32>
  %cx3 = octet.mul %c, %x3 : tensor<f32>, tensor<?x?x256xf32>
  %s = octet.add %x, %cx3 : tensor<?x?x256xf32>, tensor<?x?x256xf32>
  %ks = octet.mul %k, %s : tensor<f32>, tensor<?x?x256xf32>
  %t = octet.tanh %ks : tensor<?x?x256xf32>
  %a = octet.add %one, %t : tensor<f32>, tensor<?x?x256xf32>
  %hx = octet.mul %half, %x : tensor<f32>, tensor<?x?x256xf32>
  %y = octet.mul %hx, %a : tensor<?x?x256xf32>, tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// -----

// FastGELU: 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x))).
// CHECK-LABEL: func.func @gelu_tanh_factored
// CHECK-NEXT: %[[Y:.*]] = octet.gelu %arg0 approximate = "tanh" : tensor<?x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_factored(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %c = octet.constant dense<0.044715> : tensor<f32>
  %k = octet.constant dense<0.7978845608> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %xk = octet.mul %x, %k : tensor<?x256xf32>, tensor<f32>
  %cx = octet.mul %c, %x : tensor<f32>, tensor<?x256xf32>
  %cxx = octet.mul %cx, %x : tensor<?x256xf32>, tensor<?x256xf32>
  %inner = octet.add %one, %cxx : tensor<f32>, tensor<?x256xf32>
  %arg = octet.mul %xk, %inner : tensor<?x256xf32>, tensor<?x256xf32>
  %t = octet.tanh %arg : tensor<?x256xf32>
  %a = octet.add %t, %one : tensor<?x256xf32>, tensor<f32>
  %p = octet.mul %x, %a : tensor<?x256xf32>, tensor<?x256xf32>
  %y = octet.mul %p, %half : tensor<?x256xf32>, tensor<f32>
  return %y : tensor<?x256xf32>
}

// -----

// x³ as x * (x * x).
// CHECK-LABEL: func.func @gelu_tanh_cube_as_products
// CHECK-NEXT: %[[Y:.*]] = octet.gelu %arg0 approximate = "tanh"
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh_cube_as_products(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %c = octet.constant dense<0.044715> : tensor<f32>
  %k = octet.constant dense<0.797884583> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %xx = octet.mul %x, %x : tensor<?x256xf32>, tensor<?x256xf32>
  %x3 = octet.mul %x, %xx : tensor<?x256xf32>, tensor<?x256xf32>
  %cx3 = octet.mul %x3, %c : tensor<?x256xf32>, tensor<f32>
  %s = octet.add %cx3, %x : tensor<?x256xf32>, tensor<?x256xf32>
  %ks = octet.mul %s, %k : tensor<?x256xf32>, tensor<f32>
  %t = octet.tanh %ks : tensor<?x256xf32>
  %a = octet.add %t, %one : tensor<?x256xf32>, tensor<f32>
  %hx = octet.mul %x, %half : tensor<?x256xf32>, tensor<f32>
  %y = octet.mul %a, %hx : tensor<?x256xf32>, tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// x * sigmoid(1.702 * x) (QuickGELU) is a different function. Must stay.
// CHECK-LABEL: func.func @no_gelu_sigmoid
// CHECK-NOT: octet.gelu
// CHECK: octet.sigmoid
func.func @no_gelu_sigmoid(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %k = octet.constant dense<1.702> : tensor<f32>
  %kx = octet.mul %x, %k : tensor<?x256xf32>, tensor<f32>
  %s = octet.sigmoid %kx : tensor<?x256xf32>
  %y = octet.mul %x, %s : tensor<?x256xf32>, tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// Wrong constants: 0.6 instead of 0.5; erf(x / 2) instead of erf(x / √2).
// CHECK-LABEL: func.func @no_gelu_wrong_half
// CHECK-NOT: octet.gelu
// CHECK: octet.erf
func.func @no_gelu_wrong_half(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %sqrt2 = octet.constant dense<1.4142135> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.6> : tensor<f32>
  %t = octet.div %x, %sqrt2 : tensor<?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x256xf32>
  %a = octet.add %e, %one : tensor<?x256xf32>, tensor<f32>
  %h = octet.mul %x, %half : tensor<?x256xf32>, tensor<f32>
  %y = octet.mul %h, %a : tensor<?x256xf32>, tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// CHECK-LABEL: func.func @no_gelu_wrong_erf_scale
// CHECK-NOT: octet.gelu
// CHECK: octet.erf
func.func @no_gelu_wrong_erf_scale(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %two = octet.constant dense<2.0> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %t = octet.div %x, %two : tensor<?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x256xf32>
  %a = octet.add %e, %one : tensor<?x256xf32>, tensor<f32>
  %h = octet.mul %x, %half : tensor<?x256xf32>, tensor<f32>
  %y = octet.mul %h, %a : tensor<?x256xf32>, tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// erf of another value than the one multiplied: not GELU.
// CHECK-LABEL: func.func @no_gelu_two_inputs
// CHECK-NOT: octet.gelu
func.func @no_gelu_two_inputs(%x: tensor<?x256xf32>, %z: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %sqrt2 = octet.constant dense<1.4142135> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %t = octet.div %z, %sqrt2 : tensor<?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x256xf32>
  %a = octet.add %e, %one : tensor<?x256xf32>, tensor<f32>
  %h = octet.mul %x, %half : tensor<?x256xf32>, tensor<f32>
  %y = octet.mul %h, %a : tensor<?x256xf32>, tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// erf(x / √2) is also used elsewhere: rewriting would keep it. Must stay.
// CHECK-LABEL: func.func @no_gelu_shared_erf
// CHECK-NOT: octet.gelu
func.func @no_gelu_shared_erf(%x: tensor<?x256xf32>) -> (tensor<?x256xf32>, tensor<?x256xf32>) {
  %sqrt2 = octet.constant dense<1.4142135> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %t = octet.div %x, %sqrt2 : tensor<?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x256xf32>
  %a = octet.add %e, %one : tensor<?x256xf32>, tensor<f32>
  %h = octet.mul %x, %half : tensor<?x256xf32>, tensor<f32>
  %y = octet.mul %h, %a : tensor<?x256xf32>, tensor<?x256xf32>
  return %y, %e : tensor<?x256xf32>, tensor<?x256xf32>
}

// -----

// A GELU times something else: the GELU inside is rebuilt, the outer
// product stays.
// CHECK-LABEL: func.func @gelu_inside_larger_product
// CHECK-SAME: (%[[X:.*]]: tensor<?x256xf32>, %[[Z:.*]]: tensor<?x256xf32>)
// CHECK: %[[G:.*]] = octet.gelu %[[X]]
// CHECK: %[[Y:.*]] = octet.mul %[[G]], %[[Z]]
// CHECK: return %[[Y]]
func.func @gelu_inside_larger_product(%x: tensor<?x256xf32>, %z: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %sqrt2 = octet.constant dense<1.4142135> : tensor<f32>
  %one = octet.constant dense<1.0> : tensor<f32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %t = octet.div %x, %sqrt2 : tensor<?x256xf32>, tensor<f32>
  %e = octet.erf %t : tensor<?x256xf32>
  %a = octet.add %e, %one : tensor<?x256xf32>, tensor<f32>
  %h = octet.mul %x, %half : tensor<?x256xf32>, tensor<f32>
  %g = octet.mul %h, %a : tensor<?x256xf32>, tensor<?x256xf32>
  %y = octet.mul %g, %z : tensor<?x256xf32>, tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}
