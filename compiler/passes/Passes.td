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

def OctetExplainFusion : Pass<"octet-explain-fusion", "::mlir::func::FuncOp"> {
  let summary = "report the attention, LayerNorm and GELU blocks that octet-recognize left unfused";
  let description = [{
    An analysis for after `octet-recognize`: it changes nothing. It counts
    the fused blocks (`octet.attention`, `octet.layer_norm` /
    `octet.add_layer_norm`, `octet.gelu`) and finds the candidates that were
    not fused — a softmax over the last axis of 4-D scores, a mean over the
    last axis subtracted from its input, an erf or a tanh of a cubic — and
    asks the recognizer's patterns rooted at (or, for LayerNorm and GELU,
    just after) each candidate why they do not match. It emits one remark
    per unfused block, naming the ONNX nodes and the reason, and a summary
    remark. The compiler driver runs the same analysis after recognition
    (`octetc run|compile --explain-fusion`, the warning line, the C API's
    fusion report).

    ```
    remark: attention not fused at node '/layer.0/Softmax', '/layer.0/Add_1':
            no (scaled, masked) Q·Kᵀ under the softmax
    remark: fusion: 1 of 2 attention blocks fused, 4 of 4 LayerNorm blocks fused, 2 of 2 GELU blocks fused
    ```
  }];
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

def OctetMergeLayerNorms : Pass<"octet-merge-layer-norms", "::mlir::func::FuncOp"> {
  let summary = "merge SmoothQuant's smoothed LayerNorm copy into the original";
  let description = [{
    SmoothQuant (`octet-smoothquant`, duplicate-norm) leaves post-LN BERT with
    two normalizations of each LayerNorm input: the original (`octet.layer_norm`
    or `octet.add_layer_norm`), whose f32 result feeds the residual, and a copy
    with the smoothed affine, fused with its quantize into an
    `octet.layer_norm_quantize` whose f32 result is dead. Both read the same
    rows and compute the same mean and variance. This pass makes them one
    `octet.layer_norm_quantize` with the original affine for `y` and the copy's
    as `quant_affine`, so one pass over the input writes both (docs/int8.md).

    Merged when: the same input (and residual, or neither), axis and epsilon;
    the copy quantizes per tensor, its `y` is unused and it has no
    `quant_affine` yet; both have a beta. The merged op sits where the earlier
    of the two was; every operand of the other must dominate that point.

    Before:
    ```mlir
    %y = octet.add_layer_norm %x, %r, %g, %b axis = 2 epsilon = 1.0e-12 : ...
    %dead, %q = octet.layer_norm_quantize %x residual(%r : ...), %g2, %b2 axis = 2
                  epsilon = 1.0e-12 scale(%s, %zp : tensor<f32>, tensor<ui8>) : ...
    ```
    After:
    ```mlir
    %y, %q = octet.layer_norm_quantize %x residual(%r : ...), %g, %b axis = 2
               epsilon = 1.0e-12 scale(%s, %zp : ...) quant_affine(%g2, %b2 : ...) : ...
    ```
  }];
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
    - LayerNorm + quantize (first): an `octet.quantize` (per tensor,
      constant scale and zero point) or `octet.quantize_per_row` of a
      `layer_norm` / `add_layer_norm` over the last dim becomes one
      `octet.layer_norm_quantize`; its f32 result replaces the LayerNorm's
      for any other reader (docs/int8-quantization.md).

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
  let options = [
    Option<"layerNormQuantize", "layer-norm-quantize", "bool", "true",
           "Fuse a LayerNorm with the quantize of its result (false: keep them apart, "
           "e.g. to compare the fused kernel with the unfused steps)">,
  ];
  let statistics = [
    Statistic<"numGroups", "groups", "octet.fused ops formed">,
    Statistic<"numFusedOps", "fused-ops", "Pointwise ops moved into them">,
    Statistic<"numLayerNormQuantize", "layer-norm-quantize",
              "LayerNorm + quantize pairs made one octet.layer_norm_quantize">,
  ];
}

def OctetPackTokens : Pass<"octet-pack-tokens", "::mlir::func::FuncOp"> {
  let summary = "drop a batch's padding tokens at run time, around the token-wise layers";
  let description = [{
    Padding-free batches (docs/padding-free.md). The region: the
    `octet.attention` ops (each with a mask) and every op connected to them
    by token rows — values `[batch, seq, static…]` with the attention's batch
    and seq — whose rows are independent: linear / fused_linear / qlinear,
    layer_norm / add_layer_norm / layer_norm_quantize over the last axis,
    quantize_per_row, per-tensor (or feature-axis) quantize / dequantize,
    gelu, fused and pointwise ops, and slices of feature axes; every other
    operand must not depend on the inputs and must broadcast over batch and
    seq. The rewrite adds one `octet.token_layout` of the attentions' masks
    before the region (the masks' ops move there when they come later),
    `octet.pack_tokens` on each value entering it, `octet.unpack_tokens` on
    each value leaving it (to other ops or the outputs), and `tokens(%layout)`
    on each attention. Whether padding is dropped is decided per run from the
    masks. When a function has attention but cannot be packed (an attention
    without a mask, static batch and seq, a mask computed from the layers),
    it is left unchanged with a warning saying why.

    Before (one layer, abridged):
    ```mlir
    %h = octet.layer_norm %x, %g, %b axis = 2 epsilon = 1e-12 : ...
    %a = octet.attention %q, %k, %v, %mask num_heads = 12 scale = 0.125 : ...
    ```
    After:
    ```mlir
    %layout = octet.token_layout %mask (%batch, %seq) : tensor<?x1x1x?xf32> -> tensor<?xi64>
    %px = octet.pack_tokens %x, %layout : tensor<?x?x768xf32>, tensor<?xi64>
    %h = octet.layer_norm %px, %g, %b axis = 2 epsilon = 1e-12 : ...
    %a = octet.attention %q, %k, %v, %mask tokens(%layout : tensor<?xi64>) num_heads = 12 ...
    %y = octet.unpack_tokens %out, %layout (%batch, %seq) : tensor<?x?x768xf32>, tensor<?xi64>
    ```
  }];
  let statistics = [
    Statistic<"numRegionOps", "region-ops", "Ops that run on packed tokens">,
    Statistic<"numEntries", "packed-values", "Values packed on entering the region">,
    Statistic<"numExits", "unpacked-values", "Values unpacked on leaving it">,
  ];
}

def OctetLowerRuntimeLinear : Pass<"octet-lower-runtime-linear", "::mlir::func::FuncOp"> {
  let summary = "a linear whose weight or bias is computed at run time becomes matmul (+ add)";
  let description = [{
    The runtime's linear step packs (JIT) or reorders (oneDNN) its weight
    once, when the Plan is built, so it needs the weight and bias as
    constants. An `octet.linear` whose weight or bias is a run-time value
    (hand-written IR; the importer and octet-recognize make linears of
    constant weights only) becomes the generic ops that compute the same:
    `octet.matmul` of the input and the weight (transposed first with
    `octet.transpose` under `transpose_weight`), then `octet.add` of the bias
    when there is one. Runs before octet-plan-memory, so the new values get
    arena slots. A linear of constants, and an `octet.fused_linear` (whose
    epilogue has no generic form here), are left alone.

    Before:
    ```mlir
    %y = octet.linear %x, %w, %b transpose_weight : tensor<?x4xf32>, tensor<8x4xf32>, tensor<8xf32>
    ```
    After:
    ```mlir
    %t = octet.transpose %w permutation = [1, 0] : tensor<8x4xf32>
    %p = octet.matmul %x, %t : tensor<?x4xf32>, tensor<4x8xf32>
    %y = octet.add %p, %b : tensor<?x8xf32>, tensor<8xf32>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect"];
  let statistics = [
    Statistic<"numLowered", "lowered-linears", "Linears with a run-time weight or bias lowered">,
  ];
}

def OctetLowerGelu : Pass<"octet-lower-gelu", "::mlir::func::FuncOp"> {
  let summary = "a lone f32 octet.gelu becomes an octet.fused of one octet.scalar_gelu";
  let description = [{
    The runtime has no GELU step of its own: GELU runs as an elementwise
    program (the GeluErf / GeluTanh instruction of the fused-elementwise
    kernel). A GELU that octet-fuse-gemm-epilogue did not fold into its
    linear, and that octet-fuse-elementwise left alone, reaches the Plan
    builder as `octet.gelu`; this pass makes it the `octet.fused` whose body
    is that one instruction, so the lowering shows in the IR and the Plan
    builder reads one kind of op. The fused op keeps the gelu's location
    (the step's name). Runs after both fusion passes, before
    octet-plan-memory; a gelu of another element type stays as it is (the
    runtime's element-wise program is f32) and the Plan builder refuses it.

    Before:
    ```mlir
    %y = octet.gelu %x approximate = "tanh" : tensor<?x?x64xf32>
    ```
    After:
    ```mlir
    %y = octet.fused %x {
    ^bb0(%e: f32):
      %g = octet.scalar_gelu %e approximate = "tanh" : f32
      octet.yield %g : f32
    } : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect"];
  let statistics = [
    Statistic<"numLowered", "lowered-gelus", "GELUs that became a fused op">,
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

def OctetSmoothQuant : Pass<"octet-smoothquant", "::mlir::func::FuncOp"> {
  let summary = "SmoothQuant: move activation outliers into the weights of calibrated linears";
  let description = [{
    Runs after `octet-fuse-gemm-epilogue`, on `octet.linear` and
    `octet.fused_linear` ops that carry the calibration step's
    `octet.calib = {input_absmax = dense<…> : tensor<Kxf32>, input_min = …,
    input_max = …}` and a constant f32 weight. X·W = (X/s)·(s·W), so per
    input channel j, s_j = max|X_j|^α / max|W_j|^(1-α) (1 where either is 0,
    clamped to [1e-5, 1e5]); W's input channel j is multiplied by s_j (a new
    constant) and 1/s goes into what produces X:

    - `layer_norm` / `add_layer_norm`: γ/s, β/s. When its result has other
      uses too (post-LN BERT: the next residual), a copy of the LayerNorm
      feeds the linears and absorbs 1/s (option `duplicate-norm`, default on).
    - `attention`: V's projection columns and bias / s (the merged Q/K/V
      linear's V window), exact since attention is linear in V.
    - `linear`: its output columns and bias / s.
    - `fused_linear` (e.g. the FFN's GELU, not positively homogeneous): an
      extra [K] operand and a multiply by 1/s at the end of its epilogue.

    Linears sharing X share one s, from the channel-wise max of their
    statistics. Anything else (X also read by a residual add with duplicate-norm off, no producer
    to fold into, a non-constant weight) is skipped with a remark. The
    smoothed linears get their `input_absmax` (and a bound of the range)
    divided by s and a marker `octet.smoothquant = {alpha = …}`. See
    docs/int8.md.
  }];
  let options = [
    Option<"alpha", "alpha", "double", /*default=*/"0.5",
           "Migration strength α in [0, 1]: the share of X's range moved into W">,
    Option<"duplicateNorm", "duplicate-norm", "bool", /*default=*/"true",
           "When a LayerNorm's result also has other uses (post-LN BERT's residual), "
           "smooth through a copy of the LayerNorm that feeds only the linears">,
  ];
  let dependentDialects = ["::octet::OctetDialect", "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numSmoothed", "smoothed-linears", "Linears whose weight absorbed s">,
    Statistic<"numSkipped", "skipped-inputs", "Calibrated inputs left unsmoothed">,
    Statistic<"numDuplicated", "duplicated-norms", "LayerNorms copied for the smoothed linears">,
  ];
}

def OctetQuantize : Pass<"octet-quantize", "::mlir::func::FuncOp"> {
  let summary = "INT8 linears: per-channel i8 weights, u8 activations per tensor (static) or per row (dynamic)";
  let description = [{
    Each `octet.linear` / `octet.fused_linear` with a constant f32 weight
    becomes an `octet.qlinear` with the same bias, `transpose_weight`,
    `extra` operands and epilogue, and an f32 result:

    - Weight: symmetric per output channel n, `scale_n = max_k |W[k, n]| / 127`
      (1 for a zero column), `q = clamp(round_half_even(W / scale_n), -127, 127)`;
      new i8 constant (a resource blob `<name>.i8` when W was one) and `[N]`
      f32 scales.
    - `mode=static`: X → `octet.quantize` to u8 per tensor from the linear's
      `octet.calib` `input_min` / `input_max` with ONNX Runtime's formula
      (rmin = min(0, min), rmax = max(0, max), scale = (rmax − rmin) / 255,
      zero point = saturate(round(−rmin / scale)); scale 1 and zero point 0
      for an empty range). Linears reading the same X share one quantize,
      over the union of their ranges. A linear without `octet.calib` (or
      without `input_min` / `input_max`) stays FP32 with a remark.
    - `mode=dynamic`: X → `octet.quantize_per_row` (per-token scales at run
      time, zero point 128), shared by the linears reading X; no calibration
      needed.
    - Requantize: a qlinear whose f32 result only feeds a per-tensor
      `octet.quantize` (the next linear's input, in static mode) takes it as
      its requantize (u8 result), as `octet-eliminate-qdq` does.

    A weight that is not a constant f32 2-D tensor, or holds a non-finite
    value, keeps its linear FP32 with a remark. Attention, softmax,
    LayerNorm and elementwise ops are left alone
    (docs/int8-quantization.md says why).

    Before (static):
    ```mlir
    %y = octet.linear %x, %w, %b {octet.calib = {input_absmax = dense<[2.0, 1.0]> : tensor<2xf32>,
           input_min = -1.0 : f32, input_max = 2.0 : f32}}
         : tensor<?x2xf32>, tensor<2x3xf32>, tensor<3xf32>
    ```
    After:
    ```mlir
    %xs = octet.constant dense<0.0117647061> : tensor<f32>
    %xzp = octet.constant dense<85> : tensor<ui8>
    %xq = octet.quantize %x, %xs, %xzp : tensor<?x2xf32>, tensor<f32>, tensor<ui8> -> tensor<?x2xui8>
    %wq = octet.constant dense<...> : tensor<2x3xi8>  // W / scale per column, rounded
    %ws = octet.constant dense<...> : tensor<3xf32>   // max_k |W[k, n]| / 127
    %y = octet.qlinear %xq, %wq, %b scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
    ^bb0(%acc: f32):
      octet.yield %acc : f32
    } : tensor<?x2xui8>, tensor<2x3xi8>, tensor<3xf32> -> tensor<?x3xf32>
    ```
    With `mode=dynamic` the quantize is
    `%xq, %xs = octet.quantize_per_row %x : tensor<?x2xf32> -> tensor<?x2xui8>, tensor<?x1xf32>`
    and the zero point 128.
  }];
  let options = [
    Option<"mode", "mode", "::octet::QuantMode", /*default=*/"::octet::QuantMode::Static",
           "How activations are quantized",
           [{::llvm::cl::values(
               clEnumValN(::octet::QuantMode::Static, "static", "per tensor, from octet.calib"),
               clEnumValN(::octet::QuantMode::Dynamic, "dynamic", "per row, at run time"))}]>,
  ];
  let dependentDialects = ["::octet::OctetDialect"];
  let statistics = [
    Statistic<"numQuantized", "quantized-linears", "Linears turned into octet.qlinear">,
    Statistic<"numKeptFp32", "fp32-linears", "Linears left in FP32 (with a remark)">,
    Statistic<"numRequantized", "requantized", "Quantizes folded into the producing qlinear">,
  ];
}

def OctetEliminateQdq : Pass<"octet-eliminate-qdq", "::mlir::func::FuncOp"> {
  let summary = "turn ONNX Runtime's QDQ GEMMs into octet.qlinear; cancel Q∘DQ pairs";
  let description = [{
    ONNX Runtime's `quantize_static` (QDQ format) writes every quantized
    MatMul as float ops on dequantized operands: activations QUInt8 per
    tensor (QuantizeLinear → DequantizeLinear), weights QInt8 per output
    channel (DequantizeLinear of an int8 initializer), and a
    QuantizeLinear → DequantizeLinear pair on the result. Every rewrite
    keeps the values: only the rounding of the f32 accumulator moves (the
    integer sum is exact, then one f32 scale product), so a requantized
    result may differ by one quantization step where the float result sat
    on a rounding boundary.

    - GEMM: an f32 `octet.matmul` (2-D rhs) or `octet.linear` whose
      activation is `dequantize(q)` with `q` a `ui8` tensor and per-tensor
      scale (and zero point; absent is 0), and whose weight is
      `dequantize(c)` with `c` a 2-D `i8` constant, zero point absent or all
      zeros, and a scale per output channel (axis 1 of `[K, N]`, axis 0 of a
      `transpose_weight` `[N, K]`) or per tensor (a constant, splatted into
      one per channel) → `octet.qlinear` on `q` and `c` with an identity
      epilogue; the linear's bias carries over. Where `q` comes from does
      not matter (a quantize, a `ui8` argument, a dynamic_quantize): the
      rewrite is exact for any `q`. Not rewritten: an f32 activation with
      no dequantize, a signed (`i8`) activation, a weight that is not a
      constant (activation × activation matmuls of attention), not `i8`,
      with a non-zero zero point, or per input channel.
    - Requantize: when the GEMM's only use is a per-tensor `octet.quantize`,
      that quantize joins the qlinear (`requantize(scale, zero_point)`, a
      `ui8`/`i8` result).
    - A dequantize with several consumers: each GEMM consumer is rewritten
      on its own; the dequantize stays while another consumer reads its f32
      value, and goes (with constants only it read) once none does.
    - `quantize(dequantize(q))` with the same element type, axis, scale and
      zero point (the same value or equal constants; normal positive scales)
      → `q`: dequantize then quantize gives back every integer. With
      different parameters the pair stays as two ops (a requantize between
      two scales is `quantize(dequantize(q))`, and the runtime can run it
      as one elementwise step); no `octet.requantize` op exists.
    - `dequantize(quantize(x))` (fake quantization) between float ops is
      kept: it rounds `x` to the grid, so removing it would change values.

    Before:
    ```mlir
    %q = octet.quantize %x, %xs, %xzp : tensor<?x?x64xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x64xui8>
    %a = octet.dequantize %q, %xs, %xzp : tensor<?x?x64xui8>, tensor<f32>, tensor<ui8> -> tensor<?x?x64xf32>
    %w = octet.dequantize %wq, %ws, %wzp axis = 1 : tensor<64x256xi8>, tensor<256xf32>, tensor<256xi8> -> tensor<64x256xf32>
    %y = octet.matmul %a, %w : tensor<?x?x64xf32>, tensor<64x256xf32>
    %yq = octet.quantize %y, %ys, %yzp : tensor<?x?x256xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x256xui8>
    ```
    After:
    ```mlir
    %q = octet.quantize %x, %xs, %xzp : tensor<?x?x64xf32>, tensor<f32>, tensor<ui8> -> tensor<?x?x64xui8>
    %yq = octet.qlinear %q, %wq scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<256xf32>)
            requantize(%ys, %yzp : tensor<f32>, tensor<ui8>) {
    ^bb0(%acc: f32):
      octet.yield %acc : f32
    } : tensor<?x?x64xui8>, tensor<64x256xi8> -> tensor<?x?x256xui8>
    ```
  }];
  let dependentDialects = ["::octet::OctetDialect"];
  let statistics = [
    Statistic<"numGemms", "gemms", "GEMMs turned into octet.qlinear">,
    Statistic<"numCancelled", "cancelled", "quantize(dequantize) pairs cancelled">,
  ];
}

def OctetPackWeights : Pass<"octet-pack-weights", "::mlir::func::FuncOp"> {
  let summary = "INT8 weights into the GEMM kernel's blocked layout, with the u8·s8 column sums";
  let description = [{
    Each `octet.qlinear` whose weight is a constant 2-D `i8` tensor gets, in
    its place, a 1-D `i8` constant of the packed panels of the kernel named by
    `isa` (a resource blob `<name>.packed` when the weight was one) and the
    attribute `octet.packed = {isa, nr, k, n, colsum}` with the
    compensation `colsum[n] = Σ_k w[k, n]` (i32): the runtime uses both as
    they are, so no packing is left for plan build. `transpose_weight` goes
    (the packed layout says where each element is). Layouts
    (compiler/codegen/PackedWeights.h, shared with the kernels):
    `avx512_vnni` = GemmU8S8's `[N/nr][K/4][nr][4]` panels (nr 32 or 48 by
    GemmU8S8's rule), `amx` = GemmU8S8Amx's 32-column panels of 1 KiB B
    tiles. A weight shared by several qlinears is packed once. Left alone:
    a weight that is not a constant (the runtime refuses it), one already
    packed, and K past the s32 overflow bound of u8·s8 sums. An unknown
    `isa` fails the pass. docs/pack-weights.md.

    Before:
    ```mlir
    %w = octet.constant dense<[[1, -2, 3], [4, 5, -6]]> : tensor<2x3xi8>
    %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
    ^bb0(%acc: f32):
      octet.yield %acc : f32
    } : tensor<?x2xui8>, tensor<2x3xi8> -> tensor<?x3xf32>
    ```
    After (`isa=avx512_vnni`: one 32-column panel, K padded to 4):
    ```mlir
    %w = octet.constant dense<[1, 4, 0, 0, -2, 5, 0, 0, 3, -6, 0, 0, 0, ...]> : tensor<128xi8>
    %y = octet.qlinear %x, %w scales(%xs, %xzp, %ws : tensor<f32>, tensor<ui8>, tensor<3xf32>) {
    ^bb0(%acc: f32):
      octet.yield %acc : f32
    } {octet.packed = {colsum = dense<[5, 3, -3]> : tensor<3xi32>, isa = "avx512_vnni",
                       k = 2 : i64, n = 3 : i64, nr = 32 : i64}}
      : tensor<?x2xui8>, tensor<128xi8> -> tensor<?x3xf32>
    ```
  }];
  let options = [
    Option<"isa", "isa", "::octet::PackIsa", /*default=*/"::octet::PackIsa::Avx512Vnni",
           "The kernel whose layout to pack for",
           [{::llvm::cl::values(
               clEnumValN(::octet::PackIsa::Avx512Vnni, "avx512_vnni", "AVX-512 VNNI (vpdpbusd)"),
               clEnumValN(::octet::PackIsa::Amx, "amx", "AMX-INT8 (tdpbusd)"))}]>,
  ];
  let dependentDialects = ["::octet::OctetDialect"];
  let statistics = [
    Statistic<"numPacked", "packed-weights", "Weight constants packed">,
    Statistic<"numQLinears", "packed-qlinears", "octet.qlinear ops given a packed weight">,
  ];
}

#endif // OCTET_PASSES_TD
