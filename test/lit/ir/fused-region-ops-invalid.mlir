// One table says what a fused region may hold (compiler/ir/ElementwiseOps.h):
// octet.fused's body, octet.fused_linear's and octet.qlinear's epilogues are
// checked against it, so an op the Plan builder cannot lower never verifies.
// The cases are the ops on which the three lists used to disagree.
// RUN: octet-opt %s -split-input-file -verify-diagnostics

// The epilogue verifier took any pure scalar arith/math op: math.sin passed it
// and failed only when the Plan was built.
func.func @fused_linear_sin(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    // expected-error @+1 {{'math.sin' op is not a scalar f32 op that the epilogue of octet.fused_linear allows (arith.constant, arith.addf}}
    %s = math.sin %acc : f32
    octet.yield %s : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

// ... and integer arithmetic: the program is f32 only.
func.func @qlinear_integer_op(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    // expected-error @+1 {{'arith.constant' op is not a scalar f32 op that the epilogue of octet.qlinear allows}}
    %one = arith.constant 1 : i32
    %two = arith.addi %one, %one : i32
    octet.yield %acc : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xf32>
  return
}

// -----

// ... and f64 math between f32 conversions.
func.func @fused_linear_f64(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  %y = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    // expected-error @+1 {{'arith.extf' op is not a scalar f32 op that the epilogue of octet.fused_linear allows}}
    %d = arith.extf %acc : f32 to f64
    %t = arith.truncf %d : f64 to f32
    octet.yield %t : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}

// -----

// The Plan builder lowered arith.maxnumf to the program's NaN-propagating Max,
// which maxnumf is not (it returns the other operand): no list has it now.
func.func @fused_maxnumf(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %y = octet.fused %a, %b {
  ^bb0(%a0: f32, %b0: f32):
    // expected-error @+1 {{'arith.maxnumf' op is not a scalar f32 op that octet.fused allows}}
    %m = arith.maxnumf %a0, %b0 : f32
    octet.yield %m : f32
  } : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @qlinear_minnumf(%x: tensor<?x4xui8>, %w: tensor<4x8xi8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %ws: tensor<8xf32>) {
  %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<8xf32>) {
  ^bb0(%acc: f32):
    %zero = arith.constant 0.0 : f32
    // expected-error @+1 {{'arith.minnumf' op is not a scalar f32 op that the epilogue of octet.qlinear allows}}
    %m = arith.minnumf %acc, %zero : f32
    octet.yield %m : f32
  } : tensor<?x4xui8>, tensor<4x8xi8> -> tensor<?x8xf32>
  return
}

// -----

// Every op of the table verifies in both kinds of region.
func.func @all_table_ops(%a: tensor<4xf32>, %x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  %y = octet.fused %a {
  ^bb0(%a0: f32):
    %c = arith.constant 2.0 : f32
    %0 = arith.addf %a0, %c : f32
    %1 = arith.subf %0, %c : f32
    %2 = arith.mulf %1, %c : f32
    %3 = arith.divf %2, %c : f32
    %4 = arith.maximumf %3, %c : f32
    %5 = arith.minimumf %4, %c : f32
    %6 = math.powf %5, %c : f32
    %7 = arith.negf %6 : f32
    %8 = math.absf %7 : f32
    %9 = math.exp %8 : f32
    %10 = math.log %9 : f32
    %11 = math.erf %10 : f32
    %12 = math.tanh %11 : f32
    %13 = math.sqrt %12 : f32
    %14 = math.rsqrt %13 : f32
    octet.yield %14 : f32
  } : tensor<4xf32> -> tensor<4xf32>
  %z = octet.fused_linear %x, %w {
  ^bb0(%acc: f32):
    %c = arith.constant 0.5 : f32
    %0 = math.tanh %acc : f32
    %1 = arith.mulf %0, %c : f32
    octet.yield %1 : f32
  } : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  return
}
