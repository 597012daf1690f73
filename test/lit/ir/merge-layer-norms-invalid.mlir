// RUN: octet-opt %s -split-input-file -verify-diagnostics

// octet.layer_norm_quantize's quant_affine (octet-merge-layer-norms) is per
// tensor only and shaped as gamma.

func.func @per_row_affine(%x: tensor<?x8xf32>) -> tensor<?x8xui8> {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  // expected-error @+1 {{quant_affine is per tensor only: it needs a scale operand}}
  %y, %q, %rs = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 quant_affine(%g, %g : tensor<8xf32>, tensor<8xf32>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>, tensor<?x1xf32>
  return %q : tensor<?x8xui8>
}

// -----

func.func @affine_type(%x: tensor<?x8xf32>) -> tensor<?x8xui8> {
  %g = octet.constant dense<2.0> : tensor<8xf32>
  %g4 = octet.constant dense<2.0> : tensor<4xf32>
  %s = octet.constant dense<0.5> : tensor<f32>
  %zp = octet.constant dense<128> : tensor<ui8>
  // expected-error @+1 {{quant_affine types must equal gamma's 'tensor<8xf32>'}}
  %y, %q = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<ui8>) quant_affine(%g4, %g4 : tensor<4xf32>, tensor<4xf32>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  return %q : tensor<?x8xui8>
}
