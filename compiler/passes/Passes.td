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
    Exporters (torch.onnx TorchScript and dynamo, Hugging Face Optimum)
    decompose the blocks of an encoder into elementwise ops. This pass
    matches the decomposed forms and replaces each with one op. A match
    needs every intermediate value to have no user outside it (else the
    rewrite would duplicate work), and each rewrite computes the same values
    up to float rounding. Works with or without `octet-cleanup` before it.

    - LayerNorm: mean over trailing axes (keepdims), x - mean, its square
      (pow 2 or a product with itself), mean, + ε (a positive scalar
      constant), then ÷ sqrt, · rsqrt or · reciprocal(sqrt), · γ, + β
      (optional), γ and β constants of the normalized shape (or with extra
      leading 1 dims) → `octet.layer_norm`.
    - GELU: 0.5·x·(1 + erf(x/√2)) and 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
      in any association and order of the products (constants within 1e-4
      relative) → `octet.gelu`. x·sigmoid(1.702·x) is not GELU and stays.
    - Attention, rooted at a softmax over the last axis of 4-D scores:
      transpose(reshape(q, [B, S, H, D]), [0, 2, 1, 3]) for Q and V, Kᵀ with
      [0, 2, 3, 1] (or two transposes), Q·Kᵀ, scalar factors on the scores or
      on Q/K before or after the split (folded into `scale`), an additive
      mask or a `where` with a fill ≤ -1e30 (rebuilt as an additive mask),
      softmax, ·V, transpose back and merge to [B, S, H·D] →
      `octet.attention`. q, k and v must provably have the same batch and
      sequence sizes (self-attention).
    - `add` of two values of the result's type feeding only a LayerNorm →
      `octet.add_layer_norm`.
    - `matmul` by a constant 2-D weight (input rank ≥ 2), or by the
      `[1, 0]` transpose of one (→ `transpose_weight`, the weight as stored),
      plus a constant 1-D bias → `octet.linear`. A linear of a reshape that
      merges leading dims and keeps rows (the dynamo exporter's
      `[B·S, K]` views) moves onto the unmerged input; the views around it
      then cancel (octet.reshape's canonicalization runs here too).

    Before:
    ```mlir
    %t = octet.div %x, %sqrt2 : tensor<?x?x3072xf32>, tensor<f32>
    %e = octet.erf %t : tensor<?x?x3072xf32>
    %a = octet.add %e, %one : tensor<?x?x3072xf32>, tensor<f32>
    %h = octet.mul %x, %half : tensor<?x?x3072xf32>, tensor<f32>
    %y = octet.mul %h, %a : tensor<?x?x3072xf32>, tensor<?x?x3072xf32>
    ```
    After:
    ```mlir
    %y = octet.gelu %x : tensor<?x?x3072xf32>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect", "::mlir::arith::ArithDialect"];
}

#endif // OCTET_PASSES_TD
