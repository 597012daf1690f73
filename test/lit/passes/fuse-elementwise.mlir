// RUN: octet-opt %s -octet-fuse-elementwise -split-input-file | FileCheck %s

// BERT's attention mask, (1 - float(mask)) · -big: the cast stays out (not
// f32 pointwise), the sub and the mul become one op, their splat constants
// move into the region, and the dead constants go away.
// CHECK-LABEL: func.func @bert_mask(
//       CHECK:   %[[M:.*]] = octet.cast %arg0
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %[[M]] {
//  CHECK-NEXT:   ^bb0(%[[M0:.*]]: f32):
//  CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
//  CHECK-NEXT:     %[[S:.*]] = arith.subf %[[ONE]], %[[M0]] : f32
//  CHECK-NEXT:     %[[BIG:.*]] = arith.constant -3.40282347E+38 : f32
//  CHECK-NEXT:     %[[P:.*]] = arith.mulf %[[S]], %[[BIG]] : f32
//  CHECK-NEXT:     octet.yield %[[P]] : f32
//  CHECK-NEXT:   } : tensor<?x1x1x?xf32> -> tensor<?x1x1x?xf32>
//  CHECK-NEXT:   return %[[Y]]
//   CHECK-NOT:   octet.constant
func.func @bert_mask(%mask: tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xf32> {
  %one = octet.constant dense<1.0> : tensor<f32>
  %big = octet.constant dense<-3.40282347E+38> : tensor<f32>
  %m = octet.cast %mask : tensor<?x1x1x?xi64> to tensor<?x1x1x?xf32>
  %s = octet.sub %one, %m : tensor<f32>, tensor<?x1x1x?xf32>
  %y = octet.mul %s, %big : tensor<?x1x1x?xf32>, tensor<f32>
  return %y : tensor<?x1x1x?xf32>
}

// -----

// The embedding sum word + type + position, the last broadcast over the
// batch: the inputs keep their shapes, the result has the root's type.
// CHECK-LABEL: func.func @embeddings(
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %arg0, %arg1, %arg2 {
//  CHECK-NEXT:   ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
//  CHECK-NEXT:     %[[AB:.*]] = arith.addf %[[A]], %[[B]] : f32
//  CHECK-NEXT:     %[[ABC:.*]] = arith.addf %[[AB]], %[[C]] : f32
//  CHECK-NEXT:     octet.yield %[[ABC]] : f32
//  CHECK-NEXT:   } : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<1x?x64xf32> -> tensor<?x?x64xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @embeddings(%word: tensor<?x?x64xf32>, %type: tensor<?x?x64xf32>, %pos: tensor<1x?x64xf32>) -> tensor<?x?x64xf32> {
  %a = octet.add %word, %type : tensor<?x?x64xf32>, tensor<?x?x64xf32>
  %b = octet.add %a, %pos : tensor<?x?x64xf32>, tensor<1x?x64xf32>
  return %b : tensor<?x?x64xf32>
}

// -----

// A chain with splat constants of rank 0 and 1, a tensor read twice (one
// input), a diamond (%e read by two ops of the group) and a broadcast bias.
// CHECK-LABEL: func.func @chain(
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %arg0, %arg1 {
//  CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[BIAS:.*]]: f32):
//  CHECK-NEXT:     %[[T:.*]] = arith.constant 2.000000e+00 : f32
//  CHECK-NEXT:     %[[S:.*]] = arith.mulf %[[X]], %[[T]] : f32
//  CHECK-NEXT:     %[[E:.*]] = math.exp %[[S]] : f32
//  CHECK-NEXT:     %[[Q:.*]] = arith.mulf %[[E]], %[[E]] : f32
//  CHECK-NEXT:     %[[H:.*]] = arith.constant 5.000000e-01 : f32
//  CHECK-NEXT:     %[[P:.*]] = math.powf %[[Q]], %[[H]] : f32
//  CHECK-NEXT:     %[[D:.*]] = arith.divf %[[P]], %[[BIAS]] : f32
//  CHECK-NEXT:     %[[R:.*]] = arith.subf %[[D]], %[[X]] : f32
//  CHECK-NEXT:     octet.yield %[[R]] : f32
//  CHECK-NEXT:   } : tensor<2x?x8xf32>, tensor<8xf32> -> tensor<2x?x8xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @chain(%x: tensor<2x?x8xf32>, %bias: tensor<8xf32>) -> tensor<2x?x8xf32> {
  %two = octet.constant dense<2.0> : tensor<1xf32>
  %half = octet.constant dense<0.5> : tensor<f32>
  %s = octet.mul %x, %two : tensor<2x?x8xf32>, tensor<1xf32>
  %e = octet.exp %s : tensor<2x?x8xf32>
  %q = octet.mul %e, %e : tensor<2x?x8xf32>, tensor<2x?x8xf32>
  %p = octet.pow %q, %half : tensor<2x?x8xf32>, tensor<f32>
  %d = octet.div %p, %bias : tensor<2x?x8xf32>, tensor<8xf32>
  %r = octet.sub %d, %x : tensor<2x?x8xf32>, tensor<2x?x8xf32>
  return %r : tensor<2x?x8xf32>
}

// -----

// What octet-recognize leaves of an activation it does not rebuild
// (x·sigmoid(1.702·x) is not GELU), and a gelu inside a group (its erf
// definition), with relu, neg, abs, tanh, sqrt, rsqrt, reciprocal, log,
// erf, max and min.
// CHECK-LABEL: func.func @activations(
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %arg0 {
//  CHECK-NEXT:   ^bb0(%[[X:.*]]: f32):
//  CHECK-NEXT:     %[[K:.*]] = arith.constant 1.702000e+00 : f32
//  CHECK-NEXT:     %[[KX:.*]] = arith.mulf %[[K]], %[[X]] : f32
//  CHECK-NEXT:     %[[N:.*]] = arith.negf %[[KX]] : f32
//  CHECK-NEXT:     %[[E:.*]] = math.exp %[[N]] : f32
//  CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
//  CHECK-NEXT:     %[[DEN:.*]] = arith.addf %[[ONE]], %[[E]] : f32
//  CHECK-NEXT:     %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
//  CHECK-NEXT:     %[[SIG:.*]] = arith.divf %[[ONE2]], %[[DEN]] : f32
//  CHECK-NEXT:     %[[A:.*]] = arith.mulf %[[X]], %[[SIG]] : f32
//  CHECK-NEXT:     %[[C:.*]] = arith.constant 0.707106769 : f32
//  CHECK-NEXT:     %[[G1:.*]] = arith.mulf %[[A]], %[[C]] : f32
//  CHECK-NEXT:     %[[G2:.*]] = math.erf %[[G1]] : f32
//  CHECK-NEXT:     %[[ONE3:.*]] = arith.constant 1.000000e+00 : f32
//  CHECK-NEXT:     %[[G3:.*]] = arith.addf %[[ONE3]], %[[G2]] : f32
//  CHECK-NEXT:     %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
//  CHECK-NEXT:     %[[G4:.*]] = arith.mulf %[[A]], %[[HALF]] : f32
//  CHECK-NEXT:     %[[G:.*]] = arith.mulf %[[G4]], %[[G3]] : f32
//  CHECK-NEXT:     math.tanh %[[G]]
//  CHECK-NEXT:     math.sqrt
//  CHECK-NEXT:     math.rsqrt
//  CHECK-NEXT:     arith.constant 1.000000e+00 : f32
//  CHECK-NEXT:     arith.divf
//  CHECK-NEXT:     math.log
//  CHECK-NEXT:     math.erf
//  CHECK-NEXT:     arith.constant 0.000000e+00 : f32
//  CHECK-NEXT:     arith.maximumf
//  CHECK-NEXT:     arith.negf
//  CHECK-NEXT:     math.absf
//  CHECK-NEXT:     arith.maximumf
//  CHECK-NEXT:     arith.minimumf
//  CHECK-NEXT:     octet.yield
//  CHECK-NEXT:   } : tensor<3x5xf32> -> tensor<3x5xf32>
//  CHECK-NEXT:   return %[[Y]]
func.func @activations(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %k = octet.constant dense<1.702> : tensor<f32>
  %kx = octet.mul %k, %x : tensor<f32>, tensor<3x5xf32>
  %sig = octet.sigmoid %kx : tensor<3x5xf32>
  %a = octet.mul %x, %sig : tensor<3x5xf32>, tensor<3x5xf32>
  %g = octet.gelu %a : tensor<3x5xf32>
  %t = octet.tanh %g : tensor<3x5xf32>
  %s = octet.sqrt %t : tensor<3x5xf32>
  %r = octet.rsqrt %s : tensor<3x5xf32>
  %c = octet.reciprocal %r : tensor<3x5xf32>
  %l = octet.log %c : tensor<3x5xf32>
  %e = octet.erf %l : tensor<3x5xf32>
  %u = octet.relu %e : tensor<3x5xf32>
  %n = octet.neg %u : tensor<3x5xf32>
  %b = octet.abs %n : tensor<3x5xf32>
  %mx = octet.max %b, %x : tensor<3x5xf32>, tensor<3x5xf32>
  %mn = octet.min %mx, %x : tensor<3x5xf32>, tensor<3x5xf32>
  return %mn : tensor<3x5xf32>
}

// -----

// An intermediate used outside the group ends it there: %a is returned, so
// it stays a tensor and is the input of the rest of the chain; a constant the
// group does not consume alone stays for its other user.
// CHECK-LABEL: func.func @multi_use(
//  CHECK-NEXT:   %[[C:.*]] = octet.constant dense<3.000000e+00> : tensor<f32>
//  CHECK-NEXT:   %[[A:.*]] = octet.add %arg0, %arg1
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %[[A]] {
//  CHECK-NEXT:   ^bb0(%[[A0:.*]]: f32):
//  CHECK-NEXT:     math.exp %[[A0]]
//  CHECK-NEXT:     arith.constant 3.000000e+00 : f32
//  CHECK-NEXT:     arith.mulf
//  CHECK-NEXT:     octet.yield
//  CHECK-NEXT:   } : tensor<4x?xf32> -> tensor<4x?xf32>
//  CHECK-NEXT:   %[[Z:.*]] = octet.sub %[[A]], %[[C]]
//  CHECK-NEXT:   return %[[A]], %[[Y]], %[[Z]]
func.func @multi_use(%x: tensor<4x?xf32>, %y: tensor<4x?xf32>) -> (tensor<4x?xf32>, tensor<4x?xf32>, tensor<4x?xf32>) {
  %c = octet.constant dense<3.0> : tensor<f32>
  %a = octet.add %x, %y : tensor<4x?xf32>, tensor<4x?xf32>
  %e = octet.exp %a : tensor<4x?xf32>
  %m = octet.mul %e, %c : tensor<4x?xf32>, tensor<f32>
  %z = octet.sub %a, %c : tensor<4x?xf32>, tensor<f32>
  return %a, %m, %z : tensor<4x?xf32>, tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// Integer ops and casts stay out; so do comparisons and where. Nothing to fuse.
// CHECK-LABEL: func.func @integers(
//   CHECK-NOT:   octet.fused
//       CHECK:   octet.add {{.*}} : tensor<4xi64>, tensor<4xi64>
//  CHECK-NEXT:   octet.mul {{.*}} : tensor<4xi64>, tensor<4xi64>
//  CHECK-NEXT:   octet.cast
//  CHECK-NEXT:   octet.exp
//  CHECK-NEXT:   octet.less
//  CHECK-NEXT:   octet.where
//  CHECK-NEXT:   return
func.func @integers(%x: tensor<4xi64>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = octet.add %x, %x : tensor<4xi64>, tensor<4xi64>
  %b = octet.mul %a, %x : tensor<4xi64>, tensor<4xi64>
  %c = octet.cast %b : tensor<4xi64> to tensor<4xf32>
  %e = octet.exp %c : tensor<4xf32>
  %l = octet.less %e, %y : tensor<4xf32>, tensor<4xf32>
  %w = octet.where %l, %e, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// An op with a region is never joined: the relu after a fused_linear is
// left to octet-fuse-gemm-epilogue (here %h has a second use), and a lone
// gelu keeps its own kernel.
// CHECK-LABEL: func.func @regions(
//       CHECK:   %[[H:.*]] = octet.fused_linear
//       CHECK:   %[[R:.*]] = octet.relu %[[H]]
//  CHECK-NEXT:   %[[G:.*]] = octet.gelu %[[H]]
//  CHECK-NEXT:   return %[[R]], %[[G]]
func.func @regions(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %h = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    %e = math.exp %acc : f32
    octet.yield %e : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  %r = octet.relu %h : tensor<?x8xf32>
  %g = octet.gelu %h : tensor<?x8xf32>
  return %r, %g : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// A producer of a smaller shape would be recomputed for every element it
// broadcasts to: it stays a tensor (here alone, so unchanged) and the group
// reads it. A lone op with only a constant is a group of one.
// CHECK-LABEL: func.func @broadcast_producer(
//       CHECK:   %[[N:.*]] = octet.neg %arg1 : tensor<8xf32>
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %arg0, %[[N]] {
//  CHECK-NEXT:   ^bb0(%{{.*}}: f32, %{{.*}}: f32):
//  CHECK-NEXT:     arith.addf
//  CHECK-NEXT:     math.tanh
//  CHECK-NEXT:     octet.yield
//  CHECK-NEXT:   } : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
//  CHECK-NEXT:   %[[S:.*]] = octet.mul %arg1, %{{.*}} : tensor<8xf32>, tensor<f32>
//  CHECK-NEXT:   return %[[Y]], %[[S]]
func.func @broadcast_producer(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<8xf32>) {
  %c = octet.constant dense<2.0> : tensor<f32>
  %n = octet.neg %b : tensor<8xf32>
  %a = octet.add %x, %n : tensor<?x8xf32>, tensor<8xf32>
  %t = octet.tanh %a : tensor<?x8xf32>
  %s = octet.mul %b, %c : tensor<8xf32>, tensor<f32>
  return %t, %s : tensor<?x8xf32>, tensor<8xf32>
}

// -----

// A splat whose rank makes the result's is an input (the result shape is
// the broadcast of the inputs); one that does not is inside.
// CHECK-LABEL: func.func @constant_rank(
//       CHECK:   %[[C:.*]] = octet.constant dense<2.000000e+00> : tensor<1x1xf32>
//  CHECK-NEXT:   %[[Y:.*]] = octet.fused %arg0, %[[C]] {
//  CHECK-NEXT:   ^bb0(%[[X:.*]]: f32, %[[C0:.*]]: f32):
//  CHECK-NEXT:     %[[M:.*]] = arith.mulf %[[X]], %[[C0]] : f32
//  CHECK-NEXT:     %[[E:.*]] = math.exp %[[M]] : f32
//  CHECK-NEXT:     octet.yield %[[E]] : f32
//  CHECK-NEXT:   } : tensor<4xf32>, tensor<1x1xf32> -> tensor<1x4xf32>
func.func @constant_rank(%x: tensor<4xf32>) -> tensor<1x4xf32> {
  %c = octet.constant dense<2.0> : tensor<1x1xf32>
  %m = octet.mul %x, %c : tensor<4xf32>, tensor<1x1xf32>
  %e = octet.exp %m : tensor<1x4xf32>
  return %e : tensor<1x4xf32>
}
