// octet-pack-weights: exact packed bytes and column sums for a small weight
// with K and N tails (K = 5: one full and one partial group of 4; N = 3 of a
// 32-column panel), both layouts of the same weight, both isas; negative cases.
//   w = [[1, -2, 3], [4, 5, -6], [7, -8, 9], [-10, 11, 12], [13, 14, -127]]
//   colsum = [15, 20, -109]
// avx512_vnni: (k, n) at ((k / 4) * 32 + n) * 4 + k % 4 in 256 bytes;
// amx: (k, n) at (k / 4) * 64 + n * 4 + k % 4 in one 2 KiB chunk.
// RUN: octet-opt %s -split-input-file -octet-pack-weights=isa=avx512_vnni -mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s --check-prefixes=CHECK,VNNI
// RUN: octet-opt %s -split-input-file -octet-pack-weights=isa=amx -mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s --check-prefixes=CHECK,AMX
// The default isa is avx512_vnni.
// RUN: octet-opt %s -split-input-file -octet-pack-weights -mlir-print-elementsattrs-with-hex-if-larger=-1 | FileCheck %s --check-prefixes=CHECK,VNNI
// A bad isa fails the option parser (the option is the PackIsa enum), also as the
// INT8 pipeline's pack-isa.
// RUN: not octet-opt %s -split-input-file -octet-pack-weights=isa=avx2 2>&1 | FileCheck %s --check-prefix=ISA
// ISA: for the --isa option: Cannot find option named 'avx2'!
// RUN: not octet-opt %s -split-input-file -octet-int8-lowering="mode=dynamic pack-isa=sse" 2>&1 | FileCheck %s --check-prefix=PIPE
// PIPE: for the --pack-isa option: Cannot find option named 'sse'!

// CHECK-LABEL: func.func @kn
//  VNNI: %[[W:.*]] = octet.constant dense<[1, 4, 7, -10, -2, 5, -8, 11, 3, -6, 9, 12{{(, 0){116}[ ]?}}, 13, 0, 0, 0, 14, 0, 0, 0, -127, 0, 0, 0{{(, 0){116}[ ]?}}]> : tensor<256xi8>
//  AMX: %[[W:.*]] = octet.constant dense<[1, 4, 7, -10, -2, 5, -8, 11, 3, -6, 9, 12{{(, 0){52}[ ]?}}, 13, 0, 0, 0, 14, 0, 0, 0, -127, 0, 0, 0{{(, 0)+}}]> : tensor<2048xi8>
//  CHECK-NOT: tensor<5x3xi8>
//      CHECK: octet.qlinear %arg0, %[[W]] scales(
//  CHECK-NOT: transpose_weight
//  VNNI: } {octet.packed = {colsum = dense<[15, 20, -109]> : tensor<3xi32>, isa = "avx512_vnni", k = 5 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x5xui8>, tensor<256xi8> -> tensor<?x3xf32>
//  AMX: } {octet.packed = {colsum = dense<[15, 20, -109]> : tensor<3xi32>, isa = "amx", k = 5 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x5xui8>, tensor<2048xi8> -> tensor<?x3xf32>
func.func @kn(%x: tensor<?x5xui8>, %xs: tensor<f32>, %xzp: tensor<ui8>) -> tensor<?x3xf32> {
  %w = octet.constant dense<[[1, -2, 3], [4, 5, -6], [7, -8, 9], [-10, 11, 12], [13, 14, -127]]> : tensor<5x3xi8>
  %ws = octet.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x5xui8>, tensor<5x3xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// The [N, K] (transpose_weight) form of the same weight packs to the same
// bytes; two qlinears sharing it get one packed constant.
// CHECK-LABEL: func.func @nk_shared
//  VNNI: %[[W:.*]] = octet.constant dense<[1, 4, 7, -10, -2, 5, -8, 11, 3, -6, 9, 12{{(, 0){116}[ ]?}}, 13, 0, 0, 0, 14, 0, 0, 0, -127, 0, 0, 0{{(, 0){116}[ ]?}}]> : tensor<256xi8>
//  AMX: %[[W:.*]] = octet.constant dense<[1, 4, 7, -10, -2, 5, -8, 11, 3, -6, 9, 12{{(, 0){52}[ ]?}}, 13, 0, 0, 0, 14, 0, 0, 0, -127, 0, 0, 0{{(, 0)+}}]> : tensor<2048xi8>
//  CHECK-NOT: octet.constant {{.*}}xi8>
//      CHECK: octet.qlinear %arg0, %[[W]] scales(
//  CHECK-SAME: requantize(
//      CHECK: colsum = dense<[15, 20, -109]>
//      CHECK: octet.qlinear %arg1, %[[W]] scales(
//      CHECK: colsum = dense<[15, 20, -109]>
func.func @nk_shared(%x: tensor<?x5xui8>, %x2: tensor<?x5xui8>, %xs: tensor<f32>, %xzp: tensor<ui8>) -> (tensor<?x3xui8>, tensor<?x3xf32>) {
  %w = octet.constant dense<[[1, 4, 7, -10, 13], [-2, 5, -8, 11, 14], [3, -6, 9, 12, -127]]> : tensor<3x5xi8>
  %ws = octet.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %ys = octet.constant dense<0.5> : tensor<f32>
  %yzp = octet.constant dense<3> : tensor<ui8>
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) transpose_weight requantize(%ys, %yzp : tensor<f32>, tensor<ui8>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x5xui8>, tensor<3x5xi8> -> tensor<?x3xui8>
  %z = octet.qlinear %x2, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) transpose_weight {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x5xui8>, tensor<3x5xi8> -> tensor<?x3xf32>
  return %y, %z : tensor<?x3xui8>, tensor<?x3xf32>
}

// -----

// Not packed: a run-time weight (the runtime refuses it with its own error).
// CHECK-LABEL: func.func @runtime_weight
//  CHECK-NOT: octet.packed
//      CHECK: octet.qlinear %arg0, %arg1 scales(
//  CHECK-SAME: transpose_weight
//  CHECK-NOT: octet.packed
//      CHECK: return
func.func @runtime_weight(%x: tensor<?x5xui8>, %w: tensor<3x5xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<3xf32>) -> tensor<?x3xf32> {
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) transpose_weight {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } : tensor<?x5xui8>, tensor<3x5xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Not packed again: a weight that is packed already keeps its bytes and isa
// (here avx512_vnni, whatever the option), so the pass is idempotent.
// CHECK-LABEL: func.func @already_packed
//      CHECK: tensor<128xi8>
//      CHECK: isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 32 : i64}}
func.func @already_packed(%x: tensor<?x2xui8>, %xs: tensor<f32>, %xzp: tensor<ui8>) -> tensor<?x3xf32> {
  %w = octet.constant dense<[1, 4, 0, 0, -2, 5, 0, 0, 3, -6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]> : tensor<128xi8>
  %ws = octet.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
  ^bb0(%acc: f32):
    octet.yield %acc : f32
  } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx512_vnni", k = 2 : i64, n = 3 : i64, nr = 32 : i64}} : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}
