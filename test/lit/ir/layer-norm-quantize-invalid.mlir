// Invalid octet.layer_norm_quantize: the error says what is wrong.
// RUN: octet-opt %s -split-input-file -verify-diagnostics -o /dev/null

func.func @not_last_axis(%x: tensor<?x2x8xf32>, %g: tensor<2x8xf32>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op normalizes over the last dim only (axis 2), got axis 1}}
  %y, %q, %s = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x2x8xf32>, tensor<2x8xf32> -> tensor<?x2x8xui8>, tensor<?x2x1xf32>
  return
}

// -----

func.func @per_row_signed(%x: tensor<?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op per-row quantization produces ui8 (zero point 128), got 'i8'}}
  %y, %q, %s = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xi8>, tensor<?x1xf32>
  return
}

// -----

func.func @row_scale_shape(%x: tensor<?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op row_scale shape [?, 8] must be the input's leading dims and 1: [?, 1]}}
  %y, %q, %s = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>, tensor<?x8xf32>
  return
}

// -----

func.func @neither(%x: tensor<?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op needs a scale operand (per tensor) or a row_scale result (per row)}}
  %y, %q = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  return
}

// -----

func.func @per_axis_scale(%x: tensor<?x8xf32>, %g: tensor<8xf32>, %s: tensor<8xf32>, %zp: tensor<8xui8>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op scale must be per tensor (one element), got 'tensor<8xf32>'}}
  %y, %q = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<8xf32>, tensor<8xui8>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  return
}

// -----

func.func @zero_point_type(%x: tensor<?x8xf32>, %g: tensor<8xf32>, %s: tensor<f32>, %zp: tensor<i8>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op zero point must have element type 'ui8', got 'i8'}}
  %y, %q = octet.layer_norm_quantize %x, %g axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<i8>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  return
}

// -----

func.func @residual_type(%x: tensor<?x8xf32>, %r: tensor<2x8xf32>, %g: tensor<8xf32>, %s: tensor<f32>, %zp: tensor<ui8>) {
  // expected-error @+1 {{'octet.layer_norm_quantize' op residual type 'tensor<2x8xf32>' must equal the input type 'tensor<?x8xf32>'}}
  %y, %q = octet.layer_norm_quantize %x residual(%r : tensor<2x8xf32>), %g axis = 1 epsilon = 1.0e-5 scale(%s, %zp : tensor<f32>, tensor<ui8>) : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xui8>
  return
}
