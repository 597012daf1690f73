// The qlinear verifier on packed weights (octet.packed, docs/pack-weights.md).
// RUN: octet-opt %s -split-input-file -verify-diagnostics

func.func @no_attr(%x: tensor<?x2xui8>, %w: tensor<128xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{a 1-D weight must be packed: it needs an 'octet.packed' attribute}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @wrong_size(%x: tensor<?x2xui8>, %w: tensor<64xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{packed weight must be tensor<128xi8> (avx512_vnni panels of 32 columns for K = 2, N = 3), got 'tensor<64xi8>'}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x2xui8>, tensor<64xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @bad_isa(%x: tensor<?x2xui8>, %w: tensor<128xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'octet.packed' needs isa = "avx512_vnni" or "amx"}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx2", k = 2 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @bad_nr(%x: tensor<?x2xui8>, %w: tensor<128xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'octet.packed': avx512_vnni panels are 32 or 48 columns wide, got nr = 16}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 16 : i64}} : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @colsum_shape(%x: tensor<?x2xui8>, %w: tensor<128xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'octet.packed' needs colsum : tensor<3xi32>}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3]> : tensor<2xi32>, isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @k_mismatch(%x: tensor<?x4xui8>, %w: tensor<128xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{input's last dim 4 does not match the weight's packed K 2}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x4xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @transposed(%x: tensor<?x2xui8>, %w: tensor<128xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{a packed weight takes no transpose_weight}}
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) transpose_weight {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}
