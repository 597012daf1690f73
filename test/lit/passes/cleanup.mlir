// RUN: octet-opt %s -octet-cleanup -split-input-file | FileCheck %s

// octet.dim folds to the size operand of a reshape, through transposes
// (permuting the index), unary ops and casts, and to a constant when static.
// CHECK-LABEL: func.func @dim_folding
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>)
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[B:.*]] = octet.dim %[[X]][0] : tensor<?x?x64xf32>
// CHECK-DAG: %[[S:.*]] = octet.dim %[[X]][1] : tensor<?x?x64xf32>
// CHECK-NOT: octet.reshape
// CHECK-NOT: octet.transpose
// CHECK-NOT: octet.exp
// CHECK-NOT: octet.cast
// CHECK: return %[[B]], %[[S]], %[[C4]], %[[S]] : index, index, index, index
func.func @dim_folding(%x: tensor<?x?x64xf32>) -> (index, index, index, index) {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %r = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %t = octet.transpose %r permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %e = octet.exp %t : tensor<?x4x?x16xf32>
  %d0 = octet.dim %e[0] : tensor<?x4x?x16xf32>
  %d2 = octet.dim %e[2] : tensor<?x4x?x16xf32>
  %d1 = octet.dim %e[1] : tensor<?x4x?x16xf32>
  %c = octet.cast %x : tensor<?x?x64xf32> to tensor<?x?x64xi32>
  %dc = octet.dim %c[1] : tensor<?x?x64xi32>
  return %d0, %d2, %d1, %dc : index, index, index, index
}

// -----

// A broadcasting binary op may take a dim from either side: not folded.
// CHECK-LABEL: func.func @no_dim_folding_through_broadcast
// CHECK: %[[A:.*]] = octet.add %arg0, %arg1
// CHECK: %[[D:.*]] = octet.dim %[[A]][0]
// CHECK: return %[[D]]
func.func @no_dim_folding_through_broadcast(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> index {
  %a = octet.add %x, %y : tensor<?x64xf32>, tensor<?x64xf32>
  %d = octet.dim %a[0] : tensor<?x64xf32>
  return %d : index
}

// -----

// Small constants fold: add, mul of scalars, cast, concat of shape vectors,
// and size arithmetic.
// CHECK-LABEL: func.func @constant_folding
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[SUM:.*]] = octet.constant dense<[11, 22]> : tensor<2xi64>
// CHECK-DAG: %[[PROD:.*]] = octet.constant dense<2.500000e-01> : tensor<f32>
// CHECK-DAG: %[[CAT:.*]] = octet.constant dense<[11, 22, 7]> : tensor<3xi64>
// CHECK-DAG: %[[CAST:.*]] = octet.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NOT: octet.add
// CHECK-NOT: octet.mul
// CHECK-NOT: octet.concat
// CHECK-NOT: octet.cast
// CHECK-NOT: arith.muli
// CHECK: return %[[SUM]], %[[PROD]], %[[CAT]], %[[CAST]], %[[C6]]
func.func @constant_folding() -> (tensor<2xi64>, tensor<f32>, tensor<3xi64>, tensor<2xf32>, index) {
  %a = octet.constant dense<[1, 2]> : tensor<2xi64>
  %b = octet.constant dense<[10, 20]> : tensor<2xi64>
  %sum = octet.add %a, %b : tensor<2xi64>, tensor<2xi64>
  %h = octet.constant dense<0.5> : tensor<f32>
  %prod = octet.mul %h, %h : tensor<f32>, tensor<f32>
  %c = octet.constant dense<[7]> : tensor<1xi64>
  %cat = octet.concat %sum, %c axis = 0 : tensor<2xi64>, tensor<1xi64>
  %cast = octet.cast %a : tensor<2xi64> to tensor<2xf32>
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %six = arith.muli %c2, %c3 : index
  return %sum, %prod, %cat, %cast, %six : tensor<2xi64>, tensor<f32>, tensor<3xi64>, tensor<2xf32>, index
}

// -----

// Weights in resource blobs are never folded (that would copy the model),
// nor is arithmetic on run-time values.
// CHECK-LABEL: func.func @no_constant_folding
// CHECK: %[[W:.*]] = octet.constant dense_resource<weight> : tensor<2xf32>
// CHECK: octet.mul %[[W]]
// CHECK: octet.add %arg0
func.func @no_constant_folding(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %w = octet.constant dense_resource<weight> : tensor<2xf32>
  %h = octet.constant dense<0.5> : tensor<f32>
  %m = octet.mul %w, %h : tensor<2xf32>, tensor<f32>
  %one = octet.constant dense<1.0> : tensor<2xf32>
  %a = octet.add %x, %one : tensor<2xf32>, tensor<2xf32>
  return %m, %a : tensor<2xf32>, tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803F0000803F"
    }
  }
#-}

// -----

// reshape∘reshape keeps only the last shape.
// CHECK-LABEL: func.func @compose_reshapes
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[B:.*]]: index, %[[S:.*]]: index)
// CHECK: %[[N:.*]] = arith.muli %[[B]], %[[S]]
// CHECK: %[[R:.*]] = octet.reshape %[[X]](%[[N]]) : tensor<?x?x64xf32> -> tensor<?x64xf32>
// CHECK-NEXT: return %[[R]]
func.func @compose_reshapes(%x: tensor<?x?x64xf32>, %b: index, %s: index) -> tensor<?x64xf32> {
  %r1 = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x4x16xf32>
  %n = arith.muli %b, %s : index
  %r2 = octet.reshape %r1(%n) : tensor<?x?x4x16xf32> -> tensor<?x64xf32>
  return %r2 : tensor<?x64xf32>
}

// -----

// transpose∘transpose composes; when the composition is the identity, and
// for an identity permutation, the transpose disappears.
// CHECK-LABEL: func.func @compose_transposes
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x4x16xf32>)
// CHECK: %[[T:.*]] = octet.transpose %[[X]] permutation = [0, 2, 3, 1] : tensor<?x?x4x16xf32>
// CHECK-NOT: octet.transpose
// CHECK: return %[[T]], %[[X]], %[[X]]
func.func @compose_transposes(%x: tensor<?x?x4x16xf32>) -> (tensor<?x4x16x?xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>) {
  %t1 = octet.transpose %x permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %kt = octet.transpose %t1 permutation = [0, 1, 3, 2] : tensor<?x4x?x16xf32>
  %t2 = octet.transpose %x permutation = [0, 2, 1, 3] : tensor<?x?x4x16xf32>
  %back = octet.transpose %t2 permutation = [0, 2, 1, 3] : tensor<?x4x?x16xf32>
  %id = octet.transpose %x permutation = [0, 1, 2, 3] : tensor<?x?x4x16xf32>
  return %kt, %back, %id : tensor<?x4x16x?xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>
}

// -----

// A reshape to the input's own dims (static, or octet.dim of the input at
// the same place) is the input.
// CHECK-LABEL: func.func @identity_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[Y:.*]]: tensor<2x64xf32>)
// CHECK-NOT: octet.reshape
// CHECK: return %[[X]], %[[Y]]
func.func @identity_reshape(%x: tensor<?x?x64xf32>, %y: tensor<2x64xf32>) -> (tensor<?x?x64xf32>, tensor<2x64xf32>) {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %r = octet.reshape %x(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %r2 = octet.reshape %y : tensor<2x64xf32> -> tensor<2x64xf32>
  return %r, %r2 : tensor<?x?x64xf32>, tensor<2x64xf32>
}

// -----

// Same type but the sizes swapped ([B, S] → [S, B]): a real reshape. Stays.
// CHECK-LABEL: func.func @no_identity_reshape_swapped
// CHECK: %[[B:.*]] = octet.dim %arg0[0]
// CHECK: %[[S:.*]] = octet.dim %arg0[1]
// CHECK: %[[R:.*]] = octet.reshape %arg0(%[[S]], %[[B]])
// CHECK: return %[[R]]
func.func @no_identity_reshape_swapped(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %r = octet.reshape %x(%s, %b) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// -----

// The sizes of a reshape may be the input's by tracing: through shape-preserving
// ops, and through inputs that share a named dim (dim_params). Such a reshape
// is the input too.
// CHECK-LABEL: func.func @identity_reshape_traced
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x64xf32>
// CHECK-NOT: octet.reshape
// CHECK: %[[E:.*]] = octet.exp %[[X]]
// CHECK-NOT: octet.reshape
// CHECK: return %[[E]], %[[X]]
func.func @identity_reshape_traced(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]},
                                   %ids: tensor<?x?xi64> {octet.dim_params = ["batch", "sequence"]})
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %b = octet.dim %x[0] : tensor<?x?x64xf32>
  %s = octet.dim %x[1] : tensor<?x?x64xf32>
  %e = octet.exp %x : tensor<?x?x64xf32>
  %r = octet.reshape %e(%b, %s) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %ib = octet.dim %ids[0] : tensor<?x?xi64>
  %is = octet.dim %ids[1] : tensor<?x?xi64>
  %r2 = octet.reshape %x(%ib, %is) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %r, %r2 : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// Sizes from an input with unnamed (or differently named) dims may differ
// from the reshaped tensor's: the reshape stays.
// CHECK-LABEL: func.func @no_identity_reshape_other_input
// CHECK: octet.reshape %arg0
func.func @no_identity_reshape_other_input(%x: tensor<?x?x64xf32> {octet.dim_params = ["batch", "sequence", ""]},
                                           %ids: tensor<?x?xi64> {octet.dim_params = ["batch", "other"]})
    -> tensor<?x?x64xf32> {
  %ib = octet.dim %ids[0] : tensor<?x?xi64>
  %is = octet.dim %ids[1] : tensor<?x?xi64>
  %r = octet.reshape %x(%ib, %is) : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// -----

// torchlib's Kᵀ: [B, H, S, D] → [B·H, S, D] → transpose → [B·H, D, S] →
// [B, H, D, S] is one transpose of the last two dims. B·H is proven from the
// arith.muli that sizes the merge. A static case moves a run of two dims.
// CHECK-LABEL: func.func @reshape_transpose_reshape
// CHECK-SAME: (%[[K:.*]]: tensor<?x4x?x16xf32>, %[[X:.*]]: tensor<2x3x4x5xf32>)
// CHECK-NOT: octet.reshape
// CHECK-DAG: %[[KT:.*]] = octet.transpose %[[K]] permutation = [0, 1, 3, 2] : tensor<?x4x?x16xf32>
// CHECK-DAG: %[[XT:.*]] = octet.transpose %[[X]] permutation = [2, 3, 0, 1] : tensor<2x3x4x5xf32>
// CHECK-NOT: octet.reshape
// CHECK: return %[[KT]], %[[XT]]
func.func @reshape_transpose_reshape(%k: tensor<?x4x?x16xf32>, %x: tensor<2x3x4x5xf32>)
    -> (tensor<?x4x16x?xf32>, tensor<4x5x2x3xf32>) {
  %c4 = arith.constant 4 : index
  %b = octet.dim %k[0] : tensor<?x4x?x16xf32>
  %s = octet.dim %k[2] : tensor<?x4x?x16xf32>
  %bh = arith.muli %b, %c4 : index
  %m = octet.reshape %k(%bh, %s) : tensor<?x4x?x16xf32> -> tensor<?x?x16xf32>
  %t = octet.transpose %m permutation = [0, 2, 1] : tensor<?x?x16xf32>
  %kt = octet.reshape %t(%b, %s) : tensor<?x16x?xf32> -> tensor<?x4x16x?xf32>
  %m2 = octet.reshape %x : tensor<2x3x4x5xf32> -> tensor<6x20xf32>
  %t2 = octet.transpose %m2 permutation = [1, 0] : tensor<6x20xf32>
  %xt = octet.reshape %t2 : tensor<20x6xf32> -> tensor<4x5x2x3xf32>
  return %kt, %xt : tensor<?x4x16x?xf32>, tensor<4x5x2x3xf32>
}

// -----

// Not one transpose: the merged size is not provably B·H (%n), the outer
// reshape splits the runs in another order ([5, 4, 3, 2]), or it does not
// split them back ([20, 2, 3]).
// CHECK-LABEL: func.func @no_reshape_transpose_reshape
// CHECK: %[[T:.*]] = octet.transpose {{.*}} : tensor<?x?x16xf32>
// CHECK: %[[KT:.*]] = octet.reshape %[[T]]
// CHECK: %[[T2:.*]] = octet.transpose {{.*}} : tensor<6x20xf32>
// CHECK: %[[R1:.*]] = octet.reshape %[[T2]] : tensor<20x6xf32> -> tensor<5x4x3x2xf32>
// CHECK: %[[R2:.*]] = octet.reshape %[[T2]] : tensor<20x6xf32> -> tensor<20x2x3xf32>
// CHECK: return %[[KT]], %[[R1]], %[[R2]]
func.func @no_reshape_transpose_reshape(%k: tensor<?x4x?x16xf32>, %n: index, %x: tensor<2x3x4x5xf32>)
    -> (tensor<?x4x16x?xf32>, tensor<5x4x3x2xf32>, tensor<20x2x3xf32>) {
  %b = octet.dim %k[0] : tensor<?x4x?x16xf32>
  %s = octet.dim %k[2] : tensor<?x4x?x16xf32>
  %m = octet.reshape %k(%n, %s) : tensor<?x4x?x16xf32> -> tensor<?x?x16xf32>
  %t = octet.transpose %m permutation = [0, 2, 1] : tensor<?x?x16xf32>
  %kt = octet.reshape %t(%b, %s) : tensor<?x16x?xf32> -> tensor<?x4x16x?xf32>
  %m2 = octet.reshape %x : tensor<2x3x4x5xf32> -> tensor<6x20xf32>
  %t2 = octet.transpose %m2 permutation = [1, 0] : tensor<6x20xf32>
  %r1 = octet.reshape %t2 : tensor<20x6xf32> -> tensor<5x4x3x2xf32>
  %r2 = octet.reshape %t2 : tensor<20x6xf32> -> tensor<20x2x3xf32>
  return %kt, %r1, %r2 : tensor<?x4x16x?xf32>, tensor<5x4x3x2xf32>, tensor<20x2x3xf32>
}

// -----

// CSE merges identical ops and dead ops go; ops that differ in an attribute
// or an operand stay apart.
// CHECK-LABEL: func.func @cse
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK: %[[E:.*]] = octet.exp %[[X]]
// CHECK-NOT: octet.exp
// CHECK: %[[A:.*]] = octet.add %[[E]], %[[E]]
// CHECK: %[[S1:.*]] = octet.softmax %[[X]] axis = 1
// CHECK: %[[S0:.*]] = octet.softmax %[[X]] axis = 0
// CHECK-NOT: octet.tanh
// CHECK: return %[[A]], %[[E]], %[[S1]], %[[S0]]
func.func @cse(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %a = octet.exp %x : tensor<?x8xf32>
  %b = octet.exp %x : tensor<?x8xf32>
  %c = octet.add %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
  %d = octet.exp %x : tensor<?x8xf32>
  %unused = octet.tanh %x : tensor<?x8xf32>
  %s1 = octet.softmax %x axis = 1 : tensor<?x8xf32>
  %s0 = octet.softmax %x axis = 0 : tensor<?x8xf32>
  return %c, %d, %s1, %s0 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
