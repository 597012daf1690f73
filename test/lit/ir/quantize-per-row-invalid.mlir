// Invalid octet.quantize_per_row and per-row qlinear scales: the error names
// the wrong shape.
// RUN: octet-opt %s -split-input-file -verify-diagnostics -o /dev/null

func.func @scale_shape(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'octet.quantize_per_row' op scale shape [?, ?, 8] must be the input's leading dims and 1: [?, ?, 1]}}
  %q, %s = octet.quantize_per_row %x : tensor<?x?x8xf32> -> tensor<?x?x8xui8>, tensor<?x?x8xf32>
  return
}

// -----

func.func @scale_rank(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'octet.quantize_per_row' op scale shape [?, 1] must be the input's leading dims and 1: [?, ?, 1]}}
  %q, %s = octet.quantize_per_row %x : tensor<?x?x8xf32> -> tensor<?x?x8xui8>, tensor<?x1xf32>
  return
}

// -----

func.func @result_shape(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'octet.quantize_per_row' op result shape [?, 4] must equal the input shape [?, 8]}}
  %q, %s = octet.quantize_per_row %x : tensor<?x8xf32> -> tensor<?x4xui8>, tensor<?x1xf32>
  return
}

// -----

func.func @scalar_input(%x: tensor<f32>) {
  // expected-error @+1 {{'octet.quantize_per_row' op needs an input of rank >= 1 (rows along the last axis), got 'tensor<f32>'}}
  %q, %s = octet.quantize_per_row %x : tensor<f32> -> tensor<ui8>, tensor<f32>
  return
}

// -----

func.func @signed_result(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{op result #0 must be ranked tensor of 8-bit unsigned integer values}}
  %q, %s = octet.quantize_per_row %x : tensor<?x8xf32> -> tensor<?x8xi8>, tensor<?x1xf32>
  return
}

// -----

func.func @qlinear_row_scale(%x: tensor<?x?x8xui8>, %w: tensor<8x4xi8>, %s: tensor<?x1xf32>, %zp: tensor<ui8>, %ws: tensor<4xf32>) {
  // expected-error @+1 {{'octet.qlinear' op input_scale must be a scalar (per tensor) or per row [?, ?, 1] (the input's leading dims and 1), got [?, 1]}}
  %y = octet.qlinear %x, %w scales(%s, %zp, %ws : tensor<?x1xf32>, tensor<ui8>, tensor<4xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x?x8xui8>, tensor<8x4xi8> -> tensor<?x?x4xf32>
  return
}

// -----

func.func @qlinear_row_scale_last(%x: tensor<?x8xui8>, %w: tensor<8x4xi8>, %s: tensor<?x8xf32>, %zp: tensor<ui8>, %ws: tensor<4xf32>) {
  // expected-error @+1 {{'octet.qlinear' op input_scale must be a scalar (per tensor) or per row [?, 1] (the input's leading dims and 1), got [?, 8]}}
  %y = octet.qlinear %x, %w scales(%s, %zp, %ws : tensor<?x8xf32>, tensor<ui8>, tensor<4xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x8xui8>, tensor<8x4xi8> -> tensor<?x4xf32>
  return
}
