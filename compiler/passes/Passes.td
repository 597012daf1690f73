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

def OctetFuseGemmEpilogue : Pass<"octet-fuse-gemm-epilogue", "::mlir::func::FuncOp"> {
  let summary = "merge Q/K/V linears into one GEMM; fuse elementwise chains into the GEMM's epilogue";
  let description = [{
    Runs after `octet-recognize`; both rewrites compute the same float
    operations in the same order as the unfused graph.

    - Sibling linears: two or more `octet.linear` of the same input whose
      weights are constants of the same layout (`transpose_weight` or not,
      hence the same K) and whose biases are all constants or all absent
      become one linear over the concatenated output features (new
      constants; the old ones go away) and one `octet.slice` along the last
      axis per original linear. Each output column is the same dot product
      plus the same bias element, so `octet.attention` reads the same q, k
      and v.
    - Epilogues: an elementwise op on the result of a linear (or of a
      fused_linear) that has no other use, and keeps its type, joins it as
      scalar ops in an `octet.fused_linear` region, repeatedly, so a whole
      single-use chain becomes one op. The accumulator is x·W + b, rounded
      as the linear's result, and the chain follows in its order: `gelu`
      (0.5·x·(1 + erf(x·√½)) with `math.erf`, or the tanh form with
      `math.tanh`), `relu`, `sigmoid`, `neg`, `abs`, `exp`, `log`, `erf`,
      `tanh`, `sqrt`, `rsqrt`, `reciprocal`, and `add`/`sub`/`mul`/`div`/
      `max`/`min` with a splat constant (an `arith.constant` in the region)
      or with a tensor that broadcasts into the result without widening it
      (an `extra` operand; its `?` dims must provably equal the result's).
      Composite ops (gelu, sigmoid) round after each scalar step instead of
      once, which is what any kernel computing them in f32 does.

    Before:
    ```mlir
    %q = octet.linear %x, %wq, %bq : tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>
    %k = octet.linear %x, %wk, %bk : tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>
    %v = octet.linear %x, %wv, %bv : tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>
    %a = octet.attention %q, %k, %v, %mask num_heads = 12 scale = 0.125
           : tensor<?x?x768xf32>, tensor<?x1x1x?xf32>
    %h = octet.linear %a, %w1, %b1 : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>
    %g = octet.gelu %h : tensor<?x?x3072xf32>
    ```
    After:
    ```mlir
    %qkv = octet.linear %x, %wqkv, %bqkv : tensor<?x?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>
    %q = octet.slice %qkv axes = [2] starts = [0] ends = [768] steps = [1]
           : tensor<?x?x2304xf32> -> tensor<?x?x768xf32>
    %k = octet.slice %qkv axes = [2] starts = [768] ends = [1536] steps = [1] : …
    %v = octet.slice %qkv axes = [2] starts = [1536] ends = [2304] steps = [1] : …
    %a = octet.attention %q, %k, %v, %mask num_heads = 12 scale = 0.125 : …
    %g = octet.fused_linear %a, %w1, %b1 {
    ^bb0(%acc: f32):
      %c = arith.constant 0.707106769 : f32
      %s = arith.mulf %acc, %c : f32
      %e = math.erf %s : f32
      …
      octet.yield %y : f32
    } : tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32> -> tensor<?x?x3072xf32>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def OctetFuseElementwise : Pass<"octet-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "group connected f32 pointwise ops into one octet.fused";
  let description = [{
    Runs after `octet-fuse-gemm-epilogue`, on what no GEMM epilogue took:
    embedding sums, the attention mask's arithmetic, activations that
    `octet-recognize` left decomposed. Inductor's rule for pointwise ops: a
    group shares one iteration space, the result shape of its root, and
    its inputs broadcast into it.

    - Fusible: `add`, `sub`, `mul`, `div`, `pow`, `max`, `min`, `neg`,
      `abs`, `exp`, `log`, `erf`, `tanh`, `sqrt`, `rsqrt`, `reciprocal`,
      `relu`, `sigmoid` and `gelu` with f32 operands and result. Casts,
      integer and boolean ops, comparisons, `where`, ops with a region
      (`fused_linear`, `fused`) and reductions are never in a group:
      LayerNorm and softmax are recognized ops with kernels of their own,
      and last-axis reductions are not grouped yet.
    - Groups: ops are visited last to first; each one not yet in a group is
      a root, and the group grows backwards through fusible producers whose
      result has the root's shape (a smaller producer would be recomputed
      for every element it broadcasts to) and whose every use is in the
      group (else its tensor would still be needed). So only the root's
      result leaves the group, and a value used outside ends a group there.
    - A group of more than one op becomes one `octet.fused` at the root,
      with the root's result type (dynamic dims included). Its inputs are
      the group's other operands, each once; a splat f32 constant of one
      element becomes an `arith.constant` in the region. Each op becomes
      the scalar ops of its definition, as in `octet-fuse-gemm-epilogue`
      (`gelu` as 0.5·x·(1 + erf(x·√½)) or its tanh form, `sigmoid` as
      1 / (1 + e^-x), `pow` as `math.powf`): the same float operations in
      the same order, only composite ops round after each step. A lone op
      (a `gelu`, which has its own kernel, included) stays as it is.

    Before:
    ```mlir
    %m = octet.cast %mask : tensor<?x1x1x?xi64> to tensor<?x1x1x?xf32>
    %s = octet.sub %one, %m : tensor<f32>, tensor<?x1x1x?xf32>
    %a = octet.mul %s, %big : tensor<?x1x1x?xf32>, tensor<f32>
    ```
    After:
    ```mlir
    %m = octet.cast %mask : tensor<?x1x1x?xi64> to tensor<?x1x1x?xf32>
    %a = octet.fused %m {
    ^bb0(%m0: f32):
      %c1 = arith.constant 1.000000e+00 : f32
      %s = arith.subf %c1, %m0 : f32
      %c2 = arith.constant -3.40282347E+38 : f32
      %a = arith.mulf %s, %c2 : f32
      octet.yield %a : f32
    } : tensor<?x1x1x?xf32> -> tensor<?x1x1x?xf32>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
  let statistics = [
    Statistic<"numGroups", "groups", "octet.fused ops formed">,
    Statistic<"numFusedOps", "fused-ops", "Pointwise ops moved into them">,
  ];
}

def OctetPlanMemory : Pass<"octet-plan-memory", "::mlir::func::FuncOp"> {
  let summary = "assign every intermediate tensor a slot of one activation arena";
  let description = [{
    Runs last, on a function of one block. Only attributes change.

    - Buffers: tensor results of ops. Function arguments (inputs),
      `octet.constant` (weights) and returned values (outputs: the caller
      owns them) get none, and neither do views: an `octet.reshape` reads its
      input's bytes, and an `octet.slice` of a single `[start, end)` window
      with step 1 and static bounds on the last axis (static size) reads its
      input's bytes at offset `start` with the input's last dim as row
      stride. A slice that is returned, of a constant (whose bytes
      `octet-pack-weights` may repack), of another slice view, or of any
      other form is a copy with a buffer; so is a reshape of a slice view.
      A returned view makes its root an output.
    - Size: element bytes × dims, written as a constant times the
      `octet.dim_params` names of the function argument dims that
      `traceDimSource` finds for the `?` dims. Without such a name (e.g. a
      `min(sequence, 512)` prefix) the size is unknown, "?": the runtime
      takes it from the producing op's run-time shape.
    - Liveness: a buffer lives from its op to the last op reading it or one
      of its views.
    - Greedy, in program order: an op's results take the free slot whose
      size is the same expression, else the smallest free slot with the same
      names and a larger constant (provably large enough), else a new slot;
      only then are the buffers that the op reads for the last time freed.
      Hence a result never shares a slot with an operand (kernels do not
      work in place). An unknown size gets a slot of its own, never reused.

    Each op with a buffer gets `octet.slot = N : i64` (`octet.slots =
    array<i64: …>` when it has several results; -1 for a result without
    one). The function gets `octet.arena`, one size per slot in canonical
    form: the constant, then the names sorted, '*'-joined ("?" if unknown).
    The runtime evaluates the sizes once per input shape and lays the slots
    out by prefix sums (64-byte aligned).

    Before:
    ```mlir
    func.func @f(%x: tensor<?x?x768xf32> {octet.dim_params = ["batch", "sequence", ""]}) -> tensor<?x?x768xf32> {
      %a = octet.relu %x : tensor<?x?x768xf32>
      %b = octet.relu %a : tensor<?x?x768xf32>
      %c = octet.relu %b : tensor<?x?x768xf32>
      %d = octet.relu %c : tensor<?x?x768xf32>
      return %d : tensor<?x?x768xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(...) -> tensor<?x?x768xf32> attributes {octet.arena = ["3072*batch*sequence", "3072*batch*sequence"]} {
      %a = octet.relu %x {octet.slot = 0 : i64} : tensor<?x?x768xf32>
      %b = octet.relu %a {octet.slot = 1 : i64} : tensor<?x?x768xf32>
      %c = octet.relu %b {octet.slot = 0 : i64} : tensor<?x?x768xf32>
      %d = octet.relu %c : tensor<?x?x768xf32>
      return %d : tensor<?x?x768xf32>
    }
    ```
  }];
  let statistics = [
    Statistic<"numBuffers", "buffers", "Tensors given an arena slot">,
    Statistic<"numSlots", "slots", "Arena slots">,
  ];
}

#endif // OCTET_PASSES_TD
