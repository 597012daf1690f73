//===- Passes.td - octet passes ---------------------------------*- tablegen -*-===//
#ifndef OCTET_PASSES_TD
#define OCTET_PASSES_TD

include "mlir/Pass/PassBase.td"

def OctetCleanup : Pass<"octet-cleanup", "::mlir::func::FuncOp"> {
  let summary = "canonicalize, fold constants and shape arithmetic, remove dead and duplicate ops";
  let description = [{
    Runs the canonicalization patterns and folders of the octet and arith
    dialects to a fixed point, then CSE. Shape arithmetic left by import
    (`octet.dim` of reshaped values, `arith` on sizes) folds to the function
    arguments' dims and constants.

    Before:
    ```mlir
    %r = octet.reshape %x(%b) : tensor<?x768xf32> -> tensor<?x12x64xf32>
    %d = octet.dim %r[0] : tensor<?x12x64xf32>
    ```
    After: uses of `%d` use `%b`.
  }];
  let dependentDialects = ["::octet::OctetDialect", "::mlir::arith::ArithDialect"];
}

def OctetRecognize : Pass<"octet-recognize", "::mlir::func::FuncOp"> {
  let summary = "rebuild LayerNorm, GELU, attention, residual+LayerNorm and linear layers";
  let description = [{
    Exporters decompose the blocks of an encoder into elementwise ops. This
    pass matches the decomposed forms and replaces them with one op each:

    - LayerNorm: reduce_mean, sub, pow 2 (or mul by itself), reduce_mean, add
      epsilon, sqrt, div (or rsqrt/reciprocal and mul), mul γ, add β →
      `octet.layer_norm`;
    - GELU, erf form 0.5·x·(1 + erf(x/√2)) and tanh form
      0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), any association of the
      products → `octet.gelu`;
    - attention: the head reshape/transpose of Q, K and V, Q·Kᵀ, the scale
      (on the scores or split over Q and K), an additive or `where`-based mask,
      softmax, ·V and the head merge → `octet.attention`;
    - `add` feeding only a LayerNorm → `octet.add_layer_norm`;
    - `matmul` with a constant 2-D weight (+ a constant bias) → `octet.linear`.

    Before:
    ```mlir
    %h = octet.mul %x, %half ...   // 0.5·x·(1 + erf(x/√2)) as 5 ops
    ```
    After:
    ```mlir
    %h = octet.gelu %x : tensor<?x?x3072xf32>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect", "::mlir::arith::ArithDialect"];
}

#endif // OCTET_PASSES_TD
